"""Finding processes a test run left behind, by the run tag (independent of the harness's sweeper)."""
from __future__ import annotations

import os
from collections.abc import Iterator


def _live_tagged() -> Iterator[tuple[int, list[bytes], str]]:
    """(pid, environment entries, command line) of every live process that carries DLPERF_RUN_TAG."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                env = fh.read().split(b"\0")
            with open(f"/proc/{entry}/stat", "rb") as fh:
                zombie = fh.read().rsplit(b")", 1)[1].split()[0] == b"Z"
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if not zombie and any(e.startswith(b"DLPERF_RUN_TAG=") for e in env):
            yield int(entry), env, cmd


def tagged_pids(tag: str) -> list[int]:
    """Live processes whose environment holds DLPERF_RUN_TAG=tag."""
    want = f"DLPERF_RUN_TAG={tag}".encode()
    return [pid for pid, env, _ in _live_tagged() if want in env]


def default_ctrl_c() -> None:
    """Popen's preexec_fn for a run a test will Ctrl-C: SIGINT back to its default, as at a terminal.

    A shell starts background jobs with SIGINT ignored (``nohup cmd &``, a CI runner's script), the
    ignored state passes to every child, and Python then raises no KeyboardInterrupt: a Ctrl-C test
    run from such a job would test nothing the user does and fail."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def tagged_processes(marker: str) -> list[tuple[int, str]]:
    """(pid, cmdline) of live tagged processes whose command line mentions marker (a report dir)."""
    return [(pid, cmd) for pid, _, cmd in _live_tagged() if marker in cmd]


def signal_once_running(cmd: list[str], cwd, marker: str, script: str, count: int, sig: int,
                        start_timeout: float = 180, stop_timeout: float = 120,
                        env: dict | None = None) -> tuple[int, str]:
    """Start cmd (a pytest run); once ``count`` tagged processes running ``script`` under ``marker``
    exist, send it ``sig``; return (exit code, output). Fails the test if they never start."""
    return signal_when(cmd, cwd, lambda: len([p for p in tagged_processes(marker) if script in p[1]]) >= count,
                       sig, start_timeout, env=env, stop_timeout=stop_timeout)


def signal_when(cmd: list[str], cwd, ready, sig: int, start_timeout: float = 180, env: dict | None = None,
                settle: float = 0.0, stop_timeout: float = 120) -> tuple[int, str]:
    """Start cmd; once ``ready()`` is true (and ``settle`` seconds later) send it ``sig``; return
    (exit code, output), waiting ``stop_timeout`` s for it to end. Fails the test, with what cmd printed, if
    cmd ends or the time runs out first. Its sessions take turns on a lease of their own (DLPERF_LOCAL_LEASE=session
    unless ``env`` says otherwise)."""
    import signal
    import subprocess
    import time

    import pytest

    # A run on this machine's local nodes takes no turn on the machine's one lease: its start is timed here, and
    # waiting for the other xdist worker's launches (a compiled case's, minutes long) is not its start (CI, #66).
    env = {**(os.environ if env is None else env)}
    env.setdefault("DLPERF_LOCAL_LEASE", "session")
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            preexec_fn=default_ctrl_c)
    try:
        deadline = time.monotonic() + start_timeout
        while not ready():
            if proc.poll() is not None:
                pytest.fail(f"ended (exit {proc.returncode}) before it was ready to be signalled:\n"
                            f"{proc.communicate()[0][-4000:]}")
            if time.monotonic() > deadline:
                proc.send_signal(signal.SIGINT)  # the harness stops what it started, as on a Ctrl-C
                try:
                    out = proc.communicate(timeout=stop_timeout)[0]
                except subprocess.TimeoutExpired:
                    proc.kill()
                    out = proc.communicate()[0]
                pytest.fail(f"not ready to be signalled within {start_timeout:.0f} s; what it printed:\n{out[-4000:]}")
            time.sleep(0.2)
        time.sleep(settle)
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=stop_timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out
