#!/usr/bin/env python3
"""Kill every process whose environment carries ``DLPERF_RUN_TAG=<tag>``; print how many.

Plain Python over /proc so that it runs on any Linux node: the local cluster calls ``kill_tag``
directly, remote clusters send this file's source to ``python3 - TAG``. Processes get SIGTERM,
then SIGKILL after a grace period, so that launchers can still stop their workers cleanly.
"""
from __future__ import annotations

import os
import signal
import sys
import time

ENV_NAME = b"DLPERF_RUN_TAG"


def tagged_pids(tag: str) -> list[int]:
    """PIDs (other than ours) whose environment holds the tag."""
    want = ENV_NAME + b"=" + tag.encode()
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                if want in fh.read().split(b"\0"):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def kill_tag(tag: str, grace: float = 3.0) -> tuple[int, int]:
    """Terminate, then kill, every tagged process; return (how many were found, how many are left)."""
    if not tag:
        raise ValueError("empty run tag")
    pids = tagged_pids(tag)
    found = len(pids)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.05)
        pids = [p for p in pids if _alive(p)] + [p for p in tagged_pids(tag) if p not in pids]
        if not pids:
            break
    return found, len(pids)


if __name__ == "__main__":
    found, left = kill_tag(sys.argv[1])
    print(f"{found} {left}")
    sys.exit(0 if left == 0 else 1)
