"""A slower machine of the same kind for tests: a cgroup CPU quota (v1 cpu controller or v2 cpu.max).

The CPU model, core count and flags stay the same, as on two cloud machines that share a name;
only the CPU time the processes may take per period shrinks.
"""
from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

PERIOD_US = 100_000


def _controller() -> Path | None:
    v1 = Path("/sys/fs/cgroup/cpu")
    if (v1 / "cpu.cfs_quota_us").is_file() and os.access(v1, os.W_OK):
        return v1
    v2 = Path("/sys/fs/cgroup")
    if "cpu" in (v2 / "cgroup.controllers").read_text(errors="replace").split() if \
            (v2 / "cgroup.controllers").is_file() else False:
        return v2 if os.access(v2, os.W_OK) else None
    return None


def available() -> bool:
    return _controller() is not None


@contextlib.contextmanager
def cpu_quota(cores: float) -> Iterator[list[str]]:
    """Yield an argv prefix that runs a command inside a new cgroup limited to ``cores`` CPUs."""
    root = _controller()
    if root is None:
        raise RuntimeError("no writable cgroup cpu controller")
    cg = root / f"dlperf-test-{uuid.uuid4().hex[:8]}"
    cg.mkdir()
    quota = int(cores * PERIOD_US)
    if (cg / "cpu.cfs_quota_us").exists():
        (cg / "cpu.cfs_period_us").write_text(str(PERIOD_US))
        (cg / "cpu.cfs_quota_us").write_text(str(quota))
    else:
        (cg / "cpu.max").write_text(f"{quota} {PERIOD_US}")
    try:
        yield ["sh", "-c", f'echo $$ > {cg}/cgroup.procs && exec "$@"', "cpu-quota"]
    finally:
        for pid in (cg / "cgroup.procs").read_text().split():  # anything left goes back to the root
            with contextlib.suppress(OSError):
                (root / "cgroup.procs").write_text(pid)
        with contextlib.suppress(OSError):
            cg.rmdir()
