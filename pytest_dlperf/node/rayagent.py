"""The Ray cluster's agent on one node: an actor (one per node, in the session's placement group) that
makes run directories, holds files, runs short commands and starts launchers there.

Standard library only: the harness does not send this file as a file. It registers the module for
pickling by value, so Ray ships the class's code to a node that has nothing of pytest-dlperf installed
(a KubeRay pod, an Anyscale node); the Ray worker that runs it imports nothing of ours.

A launcher runs under the SSH kind's watchdog (``sshwatch.py``, sent as source): a process group of
its own, its output in a log file on the node that the harness pulls from an offset, stopped by the
line ``kill`` on its stdin or when that pipe closes, i.e. when this agent's process dies (the actor
killed, the placement group removed, the harness gone): no launcher outlives its agent.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading

# Variables a Ray worker carries that a launcher must not inherit: Ray's own, and the OpenMP thread
# count Ray sets to the actor's CPUs (a launcher gets the count the case wants, or none).
DROPPED = ("OMP_NUM_THREADS",)
WATCH_HEAD = b"dlperf-watch pid="
CHUNK = 1 << 20  # the most a poll returns; the harness asks again while there is more


def node_env() -> dict[str, str]:
    """This worker's environment without Ray's variables: what a launcher starts from."""
    return {k: v for k, v in os.environ.items() if not k.startswith("RAY_") and k not in DROPPED}


def run(argv: list[str], timeout: float = 60.0) -> tuple[int, str, str]:
    """A short command on this node: (exit code, stdout, stderr); 124 on the timeout, 127 when it cannot start."""
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, env=node_env())
    except subprocess.TimeoutExpired:
        return 124, "", f"{argv[0]}: still running after {timeout:g}s (stopped)"
    except OSError as exc:
        return 127, "", f"cannot run {argv[0]!r}: {exc}"
    return done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")


def probe(python: str, src: str, args: list[str]) -> tuple[str, int, str, str]:
    """``python -c src args`` on this node (the preflight's facts); python "" is this worker's own.
    Returns (the interpreter used, exit code, stdout, stderr)."""
    python = python or sys.executable
    return (python, *run([python, "-c", src, *args], timeout=120.0))


def whereabouts() -> dict:
    """Where this process runs: Ray's node id (ray is there: a Ray worker runs this), host, interpreter."""
    node_id = ""
    try:
        import ray  # the Ray worker's own, on the node

        node_id = ray.get_runtime_context().get_node_id()
    except Exception:  # noqa: BLE001 - a fact for a message, never a failure
        pass
    return {"node_id": node_id, "hostname": socket.gethostname(), "python": sys.executable, "pid": os.getpid()}


class Agent:
    """One node's agent. ``watch_src``: the watchdog's source; ``root``: this session's directory on the node."""

    def __init__(self, watch_src: str, root: str) -> None:
        self.watch_src, self.root = watch_src, root
        self.logs = os.path.join(root, "logs")
        self.procs: dict[str, tuple[subprocess.Popen, str, list[int]]] = {}  # key -> (watchdog, log, [header])
        self.lock = threading.Lock()

    def ping(self) -> dict:
        return whereabouts()

    def make_dir(self, path: str) -> str:
        """Create a fresh directory; "" or why not."""
        try:
            os.makedirs(path, exist_ok=False)
        except OSError as exc:
            return f"cannot make {path}: {exc}"
        return ""

    def write(self, path: str, data: bytes, mode: int) -> str:
        """Write a file whole (a temporary file renamed over it); "" or why not."""
        try:
            folder = os.path.dirname(path) or "."
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".dlperf-")
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                os.chmod(tmp, mode & 0o7777)
                os.replace(tmp, path)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError as exc:
            return f"cannot write {path}: {exc}"
        return ""

    def read(self, path: str) -> tuple[bytes | None, str]:
        """A file's bytes, or (None, why not)."""
        try:
            with open(path, "rb") as fh:
                return fh.read(), ""
        except OSError as exc:
            return None, f"cannot read {path}: {exc}"

    def free_ports(self, n: int) -> list[int]:
        """``n`` distinct TCP ports free on this node (held together while chosen)."""
        socks = [socket.socket() for _ in range(n)]
        try:
            for s in socks:
                s.bind(("", 0))
            return [int(s.getsockname()[1]) for s in socks]
        finally:
            for s in socks:
                s.close()

    def run(self, argv: list[str], timeout: float = 60.0) -> tuple[int, str, str]:
        return run(argv, timeout)

    def start(self, key: str, argv: list[str], env: dict[str, str], cwd: str | None, grace: float = 5.0) -> str:
        """Start a launcher under the watchdog, its output in a log here; "" or why not."""
        try:
            os.makedirs(self.logs, exist_ok=True)
            log = os.path.join(self.logs, f"{key}.log")
            spec = json.dumps({"argv": list(argv), "env": dict(env), "cwd": cwd, "grace": grace})
            with open(log, "wb") as out:
                proc = subprocess.Popen([sys.executable, "-c", self.watch_src, spec], stdin=subprocess.PIPE,
                                        stdout=out, stderr=subprocess.STDOUT, env=node_env(), start_new_session=True)
        except OSError as exc:
            return f"cannot start {argv[0]!r}: {exc}"
        with self.lock:
            self.procs[key] = (proc, log, [-1])
        return ""

    def poll(self, key: str, offset: int) -> tuple[int | None, bytes, int, bool]:
        """(exit code or None, the log's bytes from ``offset`` (the watchdog's first line left out), the
        offset to ask from next, whether more is there). The exit code is read before the bytes, so
        an exit code comes with the whole output."""
        proc, log, header = self.procs[key]
        code = proc.poll()
        with open(log, "rb") as fh:
            if header[0] < 0:  # the watchdog's own first line is not the launcher's output
                first = fh.readline()
                if not first.endswith(b"\n") and code is None:
                    return None, b"", offset, False
                header[0] = len(first) if first.startswith(WATCH_HEAD) else 0
            offset = max(offset, header[0])
            fh.seek(offset)
            data = fh.read(CHUNK)
            more = bool(fh.read(1))
        return code, data, offset + len(data), more

    def kill(self, key: str, wait: float = 20.0) -> int | None:
        """Stop a launcher and everything it started (the watchdog's ``kill``); its exit code."""
        proc = self.procs[key][0]
        if proc.poll() is None:
            try:
                proc.stdin.write(b"kill\n")
                proc.stdin.flush()
                proc.stdin.close()
            except OSError:
                pass
            try:
                proc.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return proc.returncode

    def stop(self, remove: bool = True) -> int:
        """Stop every launcher still running and, with ``remove``, delete this session's directory; how many ran."""
        with self.lock:
            keys = [k for k, (p, _, _) in self.procs.items() if p.poll() is None]
        for key in keys:
            self.kill(key)
        if remove:
            shutil.rmtree(self.root, ignore_errors=True)
        return len(keys)
