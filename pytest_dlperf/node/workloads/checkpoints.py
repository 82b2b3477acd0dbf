"""A checkpoint after the window, timed on every rank (standard library only; copied beside every workload,
as ``steplog.py`` is). The workload says how its engine saves and loads (a ``Checkpointer``: torch DCP,
tf.train.Checkpoint, paddle.save); this module times both between barriers, sizes what was written, removes
it, and returns the meta line's ``checkpoint`` record (``steplog.checkpoint_figures``). Nothing here runs
inside the window, so the throughput does not carry it. Imports nothing from the harness."""
from __future__ import annotations

import os
import shutil
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import steplog
import workloadkit

# DLPERF_PLANT_SAVE=x (x >= 1): every rank's save takes x times as long (a sleep of (x - 1) times its own save
# after it): a slower checkpoint write, planted for the harness's tests and benchmarks/checkpoint_gate.py.
PLANT_SAVE_ENV = "DLPERF_PLANT_SAVE"


class Checkpointer(Protocol):
    """How an engine writes its model's and optimizer's state to a directory and reads it back into them."""

    format: str  # what wrote it, as the report names it ("torch.distributed.checkpoint")
    # besides Exception, what a failed save or load raises (DCP's CheckpointException is a BaseException); optional

    def save(self, path: str) -> None: ...

    def load(self, path: str) -> None: ...


def planted_save() -> float:
    """The factor DLPERF_PLANT_SAVE asks for (1: none)."""
    raw = os.environ.get(PLANT_SAVE_ENV, "") or "1"
    try:
        x = float(raw)
    except ValueError:
        x = 0.0
    if x < 1:
        raise SystemExit(f"{PLANT_SAVE_ENV}={raw}: expected a factor of 1 or more (2: every save takes twice as long)")
    return x


def directory_bytes(path: str) -> int:
    """The bytes of every file under ``path``."""
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def _failing(done: str, path: str, rank: int, ckpt: Checkpointer):  # noqa: ANN202 - workloadkit.failing's context
    """A save or load that fails stops the rank with one line naming the directory, the error's last line (DCP's
    carries every rank's traceback before its own) and what to give instead."""
    return workloadkit.failing((Exception, *getattr(ckpt, "errors", ())), lambda why: steplog.fail(
        f"the checkpoint could not be {done} at {path} on {socket.gethostname()} (rank {rank}): "
        f"{(why.strip().splitlines() or [''])[-1]}; give --dlperf-checkpoint-dir a directory every node can write, "
        "or --dlperf-checkpoint off"))


def time_checkpoint(path: str, ckpt: Checkpointer, rank: int, barrier: Callable[[], None],
                    gather: Callable[[list[float]], list[list[float]]]) -> dict:
    """Every rank (a collective): save to ``path`` (a directory every rank reaches: one node's, or a shared
    one), then load it back, each timed on this rank from a barrier to its own end; rank 0 sizes and then
    removes the directory. The meta line's ``checkpoint`` record: the slowest rank's save and load."""
    factor = planted_save()
    barrier()
    t0 = time.perf_counter()
    with _failing("written", path, rank, ckpt):
        ckpt.save(path)
    own = time.perf_counter() - t0
    if factor > 1:
        time.sleep((factor - 1) * own)
    save = time.perf_counter() - t0
    barrier()  # every rank's part is written before any rank reads
    size = directory_bytes(path) if rank == 0 else 0
    t1 = time.perf_counter()
    with _failing("read back", path, rank, ckpt):
        ckpt.load(path)
    load = time.perf_counter() - t1
    barrier()  # every rank has read before rank 0 removes it
    if rank == 0:
        shutil.rmtree(path, ignore_errors=True)
    return steplog.checkpoint_figures(gather([save, load]), ckpt.format, size, path)
