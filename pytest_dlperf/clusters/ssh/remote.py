"""Running commands on one SSH channel: short commands waited for, launchers streamed to a log.

Both kinds run under a guard on the node that stops their whole process group when the channel
goes away (the client died, sshd died) or when the client sends the line ``kill``: short
commands under a small sh wrapper (EXEC_SH, cheap enough for fan-out), launchers under the
Python watchdog node/sshwatch.py (process group, descendants and orphans, TERM then KILL).
"""
from __future__ import annotations

import contextlib
import json
import re
import shlex
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import paramiko

from ..base import Node, NodeCommand, NodeProcess

WATCH_SRC = (Path(__file__).resolve().parents[2] / "node" / "sshwatch.py").read_text()
LOST = 255  # the exit code of a node whose connection went away, as ssh(1) reports it
_CHANNEL_ERRORS = (OSError, EOFError, paramiko.SSHException)

# Runs "$@" (after cd "$1") in a process group of its own; the line "kill" or the end of stdin
# (the channel closed, sshd died) stops the group: SIGTERM, SIGKILL two seconds later.
EXEC_SH = r"""d=$1; shift
if [ -n "$d" ]; then cd -- "$d" || exit 125; fi
exec 3<&0
if command -v setsid >/dev/null 2>&1; then setsid "$@" </dev/null 3<&- & else "$@" </dev/null 3<&- & fi
p=$!
{ while IFS= read -r l; do [ "$l" = kill ] && break; done
  kill -s TERM -- "-$p" 2>/dev/null || kill -s TERM "$p" 2>/dev/null
  sleep 2
  kill -s KILL -- "-$p" 2>/dev/null || kill -s KILL "$p" 2>/dev/null
} <&3 >/dev/null 2>&1 &
w=$!
exec 3<&-
wait "$p"; rc=$?
kill "$w" 2>/dev/null
exit "$rc"
"""


class CommandTimeout(Exception):
    """A short command ran past its time; it was told to stop."""


def exec_line(argv: Sequence[str], env: Mapping[str, str] | None = None, cwd: str | None = None,
              guard: bool = True) -> str:
    """The remote shell line for a short command, every argument quoted with shlex."""
    if not guard:
        return NodeCommand(Node("", "", 1, 1), list(argv), dict(env or {}), cwd).shell()
    prefix = ["env", *[f"{k}={v}" for k, v in sorted(env.items())]] if env else []
    return shlex.join(["sh", "-c", EXEC_SH, "dlperf", cwd or "", *prefix, *argv])


def watch_line(cmd: NodeCommand, grace: float) -> str:
    """The remote shell line that starts cmd under the watchdog."""
    spec = {"argv": list(cmd.argv), "env": dict(cmd.env), "cwd": cmd.cwd, "grace": grace}
    return shlex.join([cmd.node.python, "-c", WATCH_SRC, json.dumps(spec)])


def no_status(name: str, channel: paramiko.Channel, killed: bool) -> str:
    """Why a command ended without an exit status, for the node's log."""
    if killed:
        return f"{name}: stopped by dlperf"
    transport = channel.get_transport()
    for _ in range(20):  # the transport marks itself dead just after closing its channels
        if not transport.is_active():
            break
        time.sleep(0.05)
    if transport.is_active():
        return f"{name}: the remote command ended without an exit status (killed by a signal?)"
    return (f"{name}: lost the SSH connection with no exit status: sshd died there, the node went down "
            "or the network dropped")


def run_channel(chan: paramiko.Channel, line: str, name: str, timeout: float,
                stdin: bytes | None = None) -> tuple[int, str, str]:
    """Run the line on a fresh channel and wait: (exit code, stdout, stderr); LOST without a status."""
    deadline = time.monotonic() + timeout
    out: list[bytes] = []
    err: list[bytes] = []
    try:
        chan.settimeout(0.05)
        chan.exec_command(line)
        if stdin is not None:
            chan.sendall(stdin)
            chan.shutdown_write()
        while True:  # stdout until end of file; stderr as it comes, so the window never fills
            if chan.recv_stderr_ready():
                err.append(chan.recv_stderr(65536))
                continue
            try:
                data = chan.recv(65536)
            except socket.timeout:
                if time.monotonic() < deadline:
                    continue
                if stdin is None:
                    with contextlib.suppress(Exception):
                        chan.sendall(b"kill\n")
                raise CommandTimeout(f"did not finish within {timeout:g}s; it was stopped") from None
            except _CHANNEL_ERRORS:
                data = b""
            if not data:
                break
            out.append(data)
        while True:
            try:
                data = chan.recv_stderr(65536)
            except _CHANNEL_ERRORS:
                break
            if not data:
                break
            err.append(data)
        chan.status_event.wait(max(0.5, min(10.0, deadline - time.monotonic())))
        code = chan.exit_status if chan.status_event.is_set() else -1
        text_err = b"".join(err).decode(errors="replace")
        if code == -1:
            code = LOST
            text_err += f"\n[dlperf] {no_status(name, chan, False)}"
        return code, b"".join(out).decode(errors="replace"), text_err
    finally:
        with contextlib.suppress(Exception):
            chan.close()


class SSHProcess(NodeProcess):
    """A launcher on a remote node under the watchdog; a thread streams its output to the log file."""

    def __init__(self, node: Node, channel: paramiko.Channel, log_path: Path, grace: float,
                 kill_group: Callable[[int], None]) -> None:
        """kill_group(pid) kills the node's process group pid over another channel (the last resort)."""
        self.node, self.channel, self.log_path, self.grace = node, channel, log_path, grace
        self._kill_group = kill_group
        self._log = open(log_path, "ab")  # noqa: SIM115 - closed by the pump thread
        self.pid: int | None = None  # the launcher's pid (and process group) on the node
        self._code: int | None = None
        self._killing = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._pump, name=f"dlperf-ssh-{node.name}", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        head = b""
        with self._log as log:
            while True:
                try:
                    data = self.channel.recv(65536)
                except _CHANNEL_ERRORS:
                    data = b""
                if not data:
                    break
                if self.pid is None and len(head) < 4096:
                    head += data
                    m = re.match(rb"dlperf-watch pid=(\d+)", head)
                    if m:
                        self.pid = int(m.group(1))
                log.write(data)
                log.flush()
            self.channel.status_event.wait(10)  # the exit status follows the output
            code = self.channel.exit_status if self.channel.status_event.is_set() else -1
            if code == -1:
                log.write(f"\n[dlperf] {no_status(self.node.name, self.channel, self._killing)}\n".encode())
                code = LOST
        self._code = code
        self._done.set()
        with contextlib.suppress(Exception):
            self.channel.close()

    def poll(self) -> int | None:
        return self._code if self._done.is_set() else None

    def wait(self, timeout: float | None = None) -> int | None:
        self._done.wait(timeout)
        return self.poll()

    def kill(self) -> None:
        """Tell the watchdog to stop the run; if it does not answer, kill the group over another channel."""
        if self._done.is_set():
            return
        self._killing = True
        with contextlib.suppress(Exception):
            self.channel.sendall(b"kill\n")
            self.channel.shutdown_write()
        if self._done.wait(self.grace + 10):
            return
        if self.pid:
            with contextlib.suppress(Exception):
                self._kill_group(self.pid)
        with contextlib.suppress(Exception):
            self.channel.close()
        self._done.wait(10)
