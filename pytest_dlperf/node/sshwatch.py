#!/usr/bin/env python3
"""Runs a launcher on a node for the SSH cluster and stops all of it when the connection goes.

Sent as source: ``python3 -c SRC SPEC_JSON`` where SPEC is ``{"argv", "env", "cwd", "grace"}``.
The command starts in a session (process group) of its own with stdout and stderr merged. The
first line printed is ``dlperf-watch pid=P pgid=G host=H``. stdin is the control line: ``kill``
or end of file (the client closed the channel, or sshd died and the pipe closed) stops the run:
SIGTERM to the launcher's process group and every descendant, then SIGKILL after the grace
period. The watchdog is a child subreaper, so workers whose parent died are still its
descendants. (It does not sweep by the run tag: several nodes of one run may share a machine.) Standard library only, as on any Linux node with Python 3.
Exit code: the command's, 128+N when it died of signal N, 125 when it could not start.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Orphans of the run are re-parented to us, not to init: they stay findable as descendants."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _table() -> dict[int, tuple[int, int, bool]]:
    """pid -> (ppid, pgid, alive) for every process."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        table[int(entry)] = (int(fields[1]), int(fields[2]), fields[0] not in (b"Z", b"X"))
    return table


def members(pgid: int) -> set[int]:
    """Live processes of the run on this node: our descendants and the launcher's process group."""
    me = os.getpid()
    table = _table()
    found = {pid for pid, (_, group, alive) in table.items() if alive and group == pgid and pid != me}
    parents = {me} | found
    grew = True
    while grew:
        new = {pid for pid, (ppid, _, alive) in table.items() if alive and ppid in parents and pid not in found}
        found |= new
        parents |= new
        grew = bool(new)
    return found


def reap(child: int) -> None:
    """Collect exited orphans that were re-parented to us (never the launcher: Popen waits for it)."""
    me = os.getpid()
    for pid, (ppid, _, alive) in _table().items():
        if ppid == me and pid != child and not alive:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def stop(pgid: int, grace: float) -> int:
    """SIGTERM, then SIGKILL after grace, everything of the run; return how many were left."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        pids = members(pgid)
        for pid in pids:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + wait
        while pids and time.monotonic() < deadline:
            time.sleep(0.05)
            reap(pgid)
            pids = members(pgid)
        if not pids:
            return 0
    return len(members(pgid))


def main() -> int:
    spec = json.loads(sys.argv[1])
    env = dict(os.environ)
    env.update(spec.get("env") or {})
    grace = float(spec.get("grace", 5.0))
    host = socket.gethostname()
    become_subreaper()
    try:
        child = subprocess.Popen(spec["argv"], env=env, cwd=spec.get("cwd") or None,
                                 stdin=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                                 start_new_session=True)
    except OSError as exc:
        print(f"dlperf-watch: cannot start {spec['argv'][0]!r} on {host}: {exc}", flush=True)
        return 125
    print(f"dlperf-watch pid={child.pid} pgid={child.pid} host={host}", flush=True)
    stopping = threading.Event()
    stopped = threading.Event()

    def halt(*_: object) -> None:
        if not stopping.is_set():
            stopping.set()
            left = stop(child.pid, grace)
            if left:
                print(f"dlperf-watch: {left} process(es) survived SIGKILL on {host}", flush=True)
            stopped.set()

    def control() -> None:
        try:
            for line in sys.stdin.buffer:
                if line.strip() == b"kill":
                    break
        except OSError:
            pass
        halt()

    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, lambda *_: threading.Thread(target=halt, daemon=True).start())
    threading.Thread(target=control, daemon=True).start()
    while True:
        try:
            rc = child.wait()
            break
        except InterruptedError:
            continue
    if stopping.is_set():
        stopped.wait(grace + 10)
    elif members(child.pid):  # the launcher ended but left workers behind
        stop(child.pid, grace)
    return rc if rc >= 0 else 128 - rc


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # not sys.exit: the stdin thread may hold stdin's lock at interpreter shutdown
