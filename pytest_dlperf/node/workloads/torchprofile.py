"""A profiled launch's extra steps (``--profile-steps N --profile-dir DIR``): after the measured window,
N more steps under the PyTorch profiler on every rank (one step of warm-up first, as its schedule
wants), written as a Chrome trace, ``DIR/rank<R>.json`` (Kineto's format: ``ProfilerStep#k`` around
each step, every operator and, on GPUs, every kernel). What happened goes into the meta line's
``profile`` (the step-log contract): per rank its file, or the error that stopped it.

Copied beside the torch workload; imports nothing of the harness. A trace that cannot be written
(disk full, a profiler error) is said there and the launch still ends well: the window was measured
before, and a profiled launch's figures are never counted anyway."""
from __future__ import annotations

import os
import socket
from collections.abc import Callable

import torch

TRACE_NAME = "rank{rank}.json"


def trace_path(directory: str, rank: int) -> str:
    return os.path.join(directory, TRACE_NAME.format(rank=rank))


def profile_steps(step: Callable[[], object], steps: int, directory: str, rank: int, cuda: bool,
                  sync: Callable[[], None]) -> dict:
    """Run ``steps`` profiled steps (after one unprofiled warm-up step of the profiler's schedule) and
    write this rank's trace; every rank runs the same steps (the collectives in them). What it did:
    ``{"rank", "host", "steps", "file"}`` or with ``"error"`` instead of ``"file"``."""
    path = trace_path(directory, rank)
    said: dict = {"rank": rank, "host": socket.gethostname(), "steps": steps}

    def write(prof: torch.profiler.profile) -> None:
        try:
            os.makedirs(directory, exist_ok=True)
            prof.export_chrome_trace(path)
            said["file"] = path
        except Exception as exc:  # noqa: BLE001 - any failure to write is said, the launch goes on
            said["error"] = f"could not write {path}: {type(exc).__name__}: {exc}"
            try:
                os.remove(path)  # never a half-written trace
            except OSError:
                pass

    activities = [torch.profiler.ProfilerActivity.CPU]
    if cuda:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    prof = None
    try:
        prof = torch.profiler.profile(activities=activities,
                                      schedule=torch.profiler.schedule(wait=0, warmup=1, active=steps, repeat=1),
                                      on_trace_ready=write)
        prof.start()
    except Exception as exc:  # noqa: BLE001 - the profiler (Kineto) could not start: the steps run all the same
        said["error"], prof = f"the profiler did not start: {exc}".splitlines()[0], None
    # Every rank runs every step, profiled or not: the steps hold collectives, and a rank that left them would
    # leave the others waiting. A step's own failure is the training's, raised as in the window.
    for _ in range(steps + 1):
        float(step())  # the loss on the host: the step ends before the profiler's next
        sync()
        if prof is not None:
            try:
                prof.step()
            except Exception as exc:  # noqa: BLE001
                said["error"], prof = f"the profiler failed: {exc}".splitlines()[0], _stopped(prof)
    if prof is not None:
        try:
            prof.stop()
        except Exception as exc:  # noqa: BLE001
            said.setdefault("error", f"the profiler failed to stop: {exc}".splitlines()[0])
    if "file" not in said and "error" not in said:
        said["error"] = "the profiler wrote no trace"
    if "file" in said and "error" in said:
        del said["file"]  # a trace from a profiler that failed is not kept as one
    return said


def _stopped(prof: torch.profiler.profile) -> None:
    """Stop a profiler that failed, quietly (what it said is already kept)."""
    try:
        prof.stop()
    except Exception:  # noqa: BLE001
        pass
