#!/usr/bin/env python3
"""How fast this host is right now, per core, on five kinds of work: a memory copy (what the pace
probe measures), a single-thread matrix multiply (numpy's BLAS), a convolution's forward and backward
in torch, fresh memory (an anonymous mapping touched page by page: the page faults a training step's
new buffers take) and the interpreter itself.

Run between sessions (never beside one) to see which kind of work a host's slow spell touches: the
pace probe's copy missed a compute slow-down of 2-13% an hour after a recording (docs/measurements.md,
"Confirm before failing"). Prints one JSON object: per core, each kernel's median rate over its calls.

    python3 benchmarks/host_check.py [--seconds 1.5]
"""
from __future__ import annotations

import argparse
import json
import mmap
import os
import statistics
import subprocess
import sys
import time

KERNELS = ("copy_gbs", "gemm_gflops", "conv_per_s", "fault_gbs", "py_mops")
FRESH_BYTES = 8 << 20


def _median_rate(call, work: float, seconds: float) -> float:
    """The median of work / seconds over the calls made in ``seconds`` of wall time (at least 5)."""
    rates, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end or len(rates) < 5:
        t0 = time.perf_counter()
        call()
        rates.append(work / (time.perf_counter() - t0))
    return statistics.median(rates)


def on_this_core(seconds: float) -> dict[str, float]:
    """Each kernel's median rate (``KERNELS``), on the one core this process is pinned to."""
    import numpy as np
    import torch

    torch.set_num_threads(1)
    src = np.ones(1 << 21, dtype=np.float32)
    dst = np.empty_like(src)
    a = np.random.default_rng(0).random((384, 384), dtype=np.float32)
    b = a.copy()
    conv = torch.nn.Conv2d(64, 64, 3, padding=1)
    x = torch.randn(1, 64, 28, 28)

    def conv_step() -> None:
        conv(x).sum().backward()

    def fresh_memory() -> None:
        with mmap.mmap(-1, FRESH_BYTES) as m:
            np.frombuffer(m, dtype=np.uint8)[::4096] = 1  # one write a page: every page faults in

    def interpreter() -> None:
        total = 0
        for i in range(100_000):
            total += i

    conv_step()
    return {
        "copy_gbs": _median_rate(lambda: np.copyto(dst, src), 2 * src.nbytes / 1e9, seconds),
        "gemm_gflops": _median_rate(lambda: a @ b, 2 * 384 ** 3 / 1e9, seconds),
        "conv_per_s": _median_rate(conv_step, 1.0, seconds),
        "fault_gbs": _median_rate(fresh_memory, FRESH_BYTES / 1e9, seconds),
        "py_mops": _median_rate(interpreter, 0.1, seconds),
    }


def check(seconds: float = 1.5) -> dict[str, dict[str, float]]:
    """Every core's rates, each measured in a child pinned to that core with one thread."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    out = {}
    for core in sorted(os.sched_getaffinity(0)):
        r = subprocess.run(["taskset", "-c", str(core), sys.executable, __file__, "--one", "--seconds", str(seconds)],
                           capture_output=True, text=True, env=env, check=True)
        out[str(core)] = json.loads(r.stdout)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=1.5, help="wall seconds per kernel per core")
    p.add_argument("--one", action="store_true", help="measure this process's core only (the children)")
    a = p.parse_args()
    print(json.dumps(on_this_core(a.seconds) if a.one else check(a.seconds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
