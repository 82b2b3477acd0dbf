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

On a GPU (``--device cuda``) both loops run the model on GPU 0 and the workload's step is timed as
a 1n1g launch times it there (a device sync at each end of the window, a CUDA event after every
step); the plain loop's window is a sync, its steps and a sync, timed from outside. ``--json PATH``
also writes the ratio, its interval and the pairs (benchmarks/gpu_check.py reads it).

    python3 benchmarks/llm_plain_loop.py --pairs 12 --steps 10
    python3 benchmarks/llm_plain_loop.py --compile --pairs 40 --steps 10
    python3 benchmarks/llm_plain_loop.py --device cuda --precision amp --dim 2048 --layers 16 \
        --batch-size 4 --seq 2048 --pairs 10 --steps 10
"""
from __future__ import annotations

import argparse
import contextlib
import json
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


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--batch-size", type=int, default=2)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--steps", type=int, default=10, help="steps per window")
    p.add_argument("--pairs", type=int, default=12)
    p.add_argument("--core", type=int, default=0, help="the core to pin to, as the local cluster's node 0 (CPU)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--precision", choices=("fp32", "amp"), default="fp32", help="amp: bf16 autocast, as the suite")
    p.add_argument("--compile", action="store_true", help="both loops step the model through torch.compile")
    p.add_argument("--json", default="", help="also write the figures here")
    a = p.parse_args()
    if a.pairs < 2 or a.steps < 1:
        p.error(f"--pairs must be at least 2 and --steps at least 1, got {a.pairs} and {a.steps}")
    if a.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda: torch sees no CUDA GPU (torch.cuda.is_available() is False)")
    return a


def loops(a: argparse.Namespace) -> tuple[object, object, object, str | None]:
    """(the workload's window, the plain loop's window): each returns tokens/s; whether a step still
    compiles (None uncompiled); and the host memory policy. Both warmed (and compiled) already."""
    cuda = a.device == "cuda"
    if cuda:
        device = torch.device("cuda", 0)
        torch.cuda.set_device(device)
        malloc = None
    else:
        os.sched_setaffinity(0, {a.core})
        torch.set_num_threads(1)
        device, malloc = torch.device("cpu"), torch_ddp.keep_freed_memory()  # the workload's CPU policy, both loops
    args = argparse.Namespace(model="llama", precision=a.precision, batch_size=a.batch_size, image_size=a.seq,
                              num_classes=0, vocab=a.vocab, llm_dim=a.dim, llm_layers=a.layers,
                              warmup_iters=0, max_warmup_iters=0, iters=a.steps, window_seconds=0.0, max_iters=0,
                              compile=a.compile)
    # One model, one optimizer, one batch for both: two instances measured 5-8% apart in either order
    # (2026-11-27: AdamW's sqrt and div ran slower on one instance's state than on the other's, so
    # where a tensor lies in memory, not the step's code, made the difference)
    torch.manual_seed(0)
    model, bare = torch_ddp.build_model("llama", 0, a.seq, (a.dim, a.layers, a.vocab)).to(device), Bare()
    step = torch_ddp.make_step(args, model, bare, device, cuda)
    opt, net = bare.optimizer, bare.net
    ids, labels = torch_ddp.synthetic_batch(args, device, cuda)
    sync = (lambda: torch.cuda.synchronize(device)) if cuda else (lambda: None)
    amp = a.precision == "amp"
    compiled = torch_ddp.Dynamo({}).compiled if a.compile else None

    def plain_step() -> None:
        net.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16) if amp else contextlib.nullcontext():
            logits = net(ids)
        F.cross_entropy(logits.float().flatten(0, -2), labels.flatten()).backward()
        opt.step()

    tokens = a.batch_size * a.seq * a.steps

    def workload() -> float:
        # rank 1: the same code path without rank 0's live progress lines
        t = steplog.time_steps(step, args, 1, a.batch_size * a.seq, agree=lambda d, i: (d, i), barrier=lambda: None,
                               sync=sync, device_clock=torch_ddp.CudaClock if cuda else None, compiled=compiled)
        return tokens / (t.window[1] - t.window[0])

    def plain() -> float:
        sync()
        t0 = time.perf_counter()
        for _ in range(a.steps):
            plain_step()
        sync()
        return tokens / (time.perf_counter() - t0)

    t0 = time.perf_counter()
    for _ in range(3):  # warm both: first-touch memory, the allocator's caches, the GPU's kernels (the compile)
        step()
        plain_step()
    sync()
    if compiled is not None:
        compiled()  # what compiled is behind: a compilation in a window would show in the pairs
        print(f"compiled and warmed up in {time.perf_counter() - t0:.1f} s", flush=True)
    return workload, plain, compiled, malloc


def main() -> int:
    a = parse_args()
    cache = tempfile.mkdtemp(prefix="dlperf-bench-inductor-")  # an empty cache of its own, as a launch's
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
    try:
        workload, plain, compiled, malloc = loops(a)
        logs, pairs = [], []
        for i in range(a.pairs):
            w, q = (workload(), plain()) if i % 2 == 0 else tuple(reversed((plain(), workload())))
            logs.append(math.log(w / q))
            pairs.append({"workload": w, "plain": q})
            print(f"pair {i + 1:2d}: workload {w:8.1f} tokens/s  plain {q:8.1f} tokens/s  ratio {w / q:.4f}",
                  flush=True)
        if compiled is not None and compiled():
            print("a step compiled during the pairs: the ratio is not of compiled steps alone", flush=True)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    summary(a, logs, pairs, malloc)
    return 0


def summary(a: argparse.Namespace, logs: list[float], pairs: list[dict], malloc: str | None) -> None:
    """The ratio workload / plain over the pairs: its geometric mean and 95% t interval (and the JSON)."""
    mean, sd = statistics.fmean(logs), statistics.stdev(logs)
    half = stats.t.ppf(0.975, len(logs) - 1) * sd / math.sqrt(len(logs))
    where = torch.cuda.get_device_name(0) if a.device == "cuda" else f"core {a.core}"
    print(f"\nllama d{a.dim}l{a.layers} vocab {a.vocab}{' compiled' if a.compile else ''}, bs{a.batch_size} "
          f"seq{a.seq}, {a.precision}, {a.steps} steps a window, {a.pairs} pairs on {where}, "
          f"host malloc: {malloc or 'as the environment has it'}:")
    print(f"ratio workload / plain: {math.exp(mean):.4f} (95% interval {math.exp(mean - half):.4f} .. "
          f"{math.exp(mean + half):.4f}); spread of the pairs' log ratios {sd:.2%}")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as fh:
            json.dump({"ratio": math.exp(mean), "low": math.exp(mean - half), "high": math.exp(mean + half),
                       "spread": sd, "device": where, "precision": a.precision, "steps": a.steps,
                       "compiled": a.compile, "model": f"llama d{a.dim}l{a.layers} bs{a.batch_size} seq{a.seq}",
                       "pairs": pairs}, fh, indent=1)


if __name__ == "__main__":
    sys.exit(main())
