"""Finding processes a test run left behind, by the run tag and a path in their command line."""
from __future__ import annotations

import os


def tagged_pids(tag: str) -> list[int]:
    """Live processes whose environment holds DLPERF_RUN_TAG=tag (independent of the sweeper)."""
    want = f"DLPERF_RUN_TAG={tag}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                env = fh.read().split(b"\0")
            with open(f"/proc/{entry}/stat", "rb") as fh:
                zombie = fh.read().rsplit(b")", 1)[1].split()[0] == b"Z"
        except OSError:
            continue
        if want in env and not zombie:
            found.append(int(entry))
    return found


def tagged_processes(marker: str) -> list[tuple[int, str]]:
    """(pid, cmdline) of live processes carrying DLPERF_RUN_TAG whose command line mentions marker."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                env = fh.read()
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat", "rb") as fh:
                zombie = fh.read().rsplit(b")", 1)[1].split()[0] == b"Z"
        except OSError:
            continue
        if b"DLPERF_RUN_TAG=" in env and marker in cmd and not zombie:
            found.append((int(entry), cmd))
    return found
