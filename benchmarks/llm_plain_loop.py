#!/usr/bin/env python3
"""The decoder's step as the suite measures it, against a plain loop of the same model timed from
outside (issue #38: ratio at least 0.99 on CPU). One process, one pinned core, one thread.

- ``workload``: the workload's own step (``torch_ddp.make_step``: autocast context, the loss
  scaler's pass-through, the engine's no-sync context) measured by the workload's own timing
  (``steplog.time_steps``: a host sync and a timestamp after every step, the window from its first
  start to its last end), as a 1n1g launch measures it;
- ``plain``: a hand-written loop stepping the same model with the same optimizer on the same batch,
  the window timed from outside: one clock reading before the first step and one after the last.

With ``--compile`` (issue #49) both step the model compiled as a compiled 1n1g case trains it
(``torch.compile(model)``, inductor's C++ kernels on CPU): the workload's step and the plain loop call
the same compiled module, so the ratio is what the suite's step and timing cost around compiled code;
the compile itself (into an empty cache of its own, removed at the end) happens before the pairs, and
the workload's warm-up runs until no step compiles, as in a launch.

Both under the workload's memory policy on CPU nodes (``torch_ddp.keep_freed_memory``; set
DLPERF_HOST_MALLOC=default for glibc's own). The two alternate in pairs (ABBA order), so the host's
drift falls on both; the ratio workload /
plain of tokens/s is taken per pair and summarised on the log scale with a 95% t interval.

    python3 benchmarks/llm_plain_loop.py --pairs 12 --steps 10
    python3 benchmarks/llm_plain_loop.py --compile --pairs 40 --steps 10
"""
from __future__ import annotations

import argparse
import contextlib
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

WORKLOADS = Path(__file__).resolve().parent.parent / "pytest_dlperf" / "node" / "workloads"
sys.path.insert(0, str(WORKLOADS))  # the workload imports steplog and nodefacts as its neighbours

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import steplog  # noqa: E402
import torch_ddp  # noqa: E402
from scipy import stats  # noqa: E402


class Bare:
    """The 1n1g launch's wrap (torch_ddp's wrap signature): no engine around the model at world size 1,
    compiled as a compiled case's (``torch.compile(model)``). Keeps the module it returns and the
    optimizer it makes, so that the plain loop calls and steps the very same ones."""

    def __init__(self) -> None:
        self.optimizer, self.net = None, None

    def __call__(self, model, nosync, optimizer, mixed=None, compiled=False):  # noqa: ANN001, ANN204
        self.optimizer = optimizer(model.parameters())
        self.net = torch.compile(model) if compiled else model
        return self.net, self.optimizer, contextlib.nullcontext


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--batch-size", type=int, default=2)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--steps", type=int, default=10, help="steps per window")
    p.add_argument("--pairs", type=int, default=12)
    p.add_argument("--core", type=int, default=0, help="the core to pin to, as the local cluster's node 0")
    p.add_argument("--compile", action="store_true", help="both loops step the model through torch.compile")
    a = p.parse_args()
    cache = tempfile.mkdtemp(prefix="dlperf-bench-inductor-")  # an empty cache of its own, as a launch's
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
    try:
        return measure(a)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def measure(a: argparse.Namespace) -> int:
    """Build the model and both loops, warm them (and compile), then the pairs."""
    os.sched_setaffinity(0, {a.core})
    torch.set_num_threads(1)
    malloc = torch_ddp.keep_freed_memory()  # the workload's memory policy on CPU nodes, for both loops
    args = argparse.Namespace(model="llama", precision="fp32", batch_size=a.batch_size, image_size=a.seq,
                              num_classes=0, vocab=a.vocab, llm_dim=a.dim, llm_layers=a.layers,
                              warmup_iters=0, max_warmup_iters=0, iters=a.steps, window_seconds=0.0, max_iters=0,
                              compile=a.compile)
    cpu = torch.device("cpu")
    size = (a.dim, a.layers, a.vocab)
    # One model, one optimizer, one batch for both: two instances measured 5-8% apart in either order
    # (2026-11-27: AdamW's sqrt and div ran slower on one instance's state than on the other's, so
    # where a tensor lies in memory, not the step's code, made the difference)
    torch.manual_seed(0)
    model, bare = torch_ddp.build_model("llama", 0, a.seq, size), Bare()
    step = torch_ddp.make_step(args, model, bare, cpu, False)
    opt, net = bare.optimizer, bare.net
    ids, labels = torch_ddp.synthetic_batch(args, cpu, False)
    compiled = torch_ddp.Dynamo({}).compiled if a.compile else None

    def plain_step() -> None:
        net.zero_grad(set_to_none=True)
        F.cross_entropy(net(ids).float().flatten(0, -2), labels.flatten()).backward()
        opt.step()

    tokens = a.batch_size * a.seq * a.steps

    def workload() -> float:
        # rank 1: the same code path without rank 0's live progress lines
        t = steplog.time_steps(step, args, 1, a.batch_size * a.seq, agree=lambda d, i: (d, i), barrier=lambda: None,
                               compiled=compiled)
        return tokens / (t.window[1] - t.window[0])

    def plain() -> float:
        t0 = time.perf_counter()
        for _ in range(a.steps):
            plain_step()
        return tokens / (time.perf_counter() - t0)

    t0 = time.perf_counter()
    for _ in range(3):  # warm both: first-touch memory, the allocator's caches (and the compile)
        step()
        plain_step()
    if compiled is not None:
        compiled()  # what compiled is behind: a compilation in a window would show in the pairs
        print(f"compiled and warmed up in {time.perf_counter() - t0:.1f} s", flush=True)
    logs = []
    for i in range(a.pairs):
        w, q = (workload(), plain()) if i % 2 == 0 else tuple(reversed((plain(), workload())))
        logs.append(math.log(w / q))
        print(f"pair {i + 1:2d}: workload {w:8.1f} tokens/s  plain {q:8.1f} tokens/s  ratio {w / q:.4f}", flush=True)
    if compiled is not None and compiled():
        print("a step compiled during the pairs: the ratio is not of compiled steps alone", flush=True)
    summary(a, logs, malloc)
    return 0


def summary(a: argparse.Namespace, logs: list[float], malloc: str | None) -> None:
    """The ratio workload / plain over the pairs: its geometric mean and 95% t interval."""
    mean, sd = statistics.fmean(logs), statistics.stdev(logs)
    half = stats.t.ppf(0.975, len(logs) - 1) * sd / math.sqrt(len(logs))
    print(f"\nllama d{a.dim}l{a.layers} vocab {a.vocab}{' compiled' if a.compile else ''}, bs{a.batch_size} "
          f"seq{a.seq}, {a.steps} steps a window, "
          f"{a.pairs} pairs on core {a.core}, host malloc: {malloc or 'as the environment has it'}:")
    print(f"ratio workload / plain: {math.exp(mean):.4f} (95% interval {math.exp(mean - half):.4f} .. "
          f"{math.exp(mean + half):.4f}); spread of the pairs' log ratios {sd:.2%}")


if __name__ == "__main__":
    sys.exit(main())
