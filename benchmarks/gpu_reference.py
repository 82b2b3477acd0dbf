#!/usr/bin/env python3
"""What does the suite's GPU step cost against a plain training loop? One process, one GPU.

The suite's workload (``pytest_dlperf/node/workloads/torch_ddp.py``) wraps the model in DDP
(above world size 1), keeps every step's loss, records a CUDA event after every step and uses
channels_last (and cudnn.benchmark unless DLPERF_CUDNN_BENCHMARK=0). NVIDIA's DeepLearningExamples time a window of steps from outside. This script
trains the workload's own model (imported from the workload file) in one process, in variants
that differ in one thing each, in alternating rounds (so a clock or thermal drift of the GPU is
spread over all of them), each window timed from outside (synchronise, N steps, synchronise):

- ``plain``: a hand-written loop: channels_last, GradScaler for AMP, nothing else;
- ``nchw``: ``plain`` without channels_last (what the memory format is worth);
- ``timed``: ``plain`` with a CUDA event, a host timestamp and the kept loss after every step:
  the workload's step in a 1n1g launch (what the timing costs);
- ``ddp``, ``ddp-view``, ``ddp-nobuf``: ``plain`` in DDP (NCCL, world 1) with its defaults, with
  ``gradient_as_bucket_view=True``, with ``broadcast_buffers=False`` (what DDP's reducer costs);
- ``ddp-timed``: ``timed`` in DDP with its defaults: the workload's step at world sizes above 1,
  and its 1n1g step before 2026-11-25.

Prints samples/s per variant (median over the rounds, with min..max) and the ratio to ``plain``.

    python3 benchmarks/gpu_reference.py --precision amp,fp32 --rounds 3 --iters 100
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import socket
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKLOAD = ROOT / "pytest_dlperf" / "node" / "workloads" / "torch_ddp.py"
VARIANTS = ("plain", "nchw", "timed", "ddp", "ddp-view", "ddp-nobuf", "ddp-timed")
DDP_KWARGS = {"ddp-timed": {}, "ddp": {}, "ddp-view": {"gradient_as_bucket_view": True},
              "ddp-nobuf": {"broadcast_buffers": False}}
TIMED = ("ddp-timed", "timed")


def load_workload():
    """The workload module, imported from its file (it imports its steplog from beside it)."""
    sys.path.insert(0, str(WORKLOAD.parent))
    spec = importlib.util.spec_from_file_location("torch_ddp", WORKLOAD)
    wl = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(wl)
    return wl


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_runner(wl, variant: str, a: argparse.Namespace, precision: str):
    """A function running n steps of one variant (nothing synchronised inside)."""
    import torch
    import torch.nn.functional as F

    device = torch.device("cuda", 0)
    torch.manual_seed(0)
    model = wl.build_model(a.model, 1000, a.image_size).to(device)
    cl = variant != "nchw"
    if cl:
        model = model.to(memory_format=torch.channels_last)
    net = model
    if variant in DDP_KWARGS:
        net = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0], **DDP_KWARGS[variant])
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    amp = precision == "amp"
    scaler = torch.amp.GradScaler("cuda", enabled=amp)
    x = torch.randn(a.batch_size, 3, a.image_size, a.image_size, device=device)
    if cl:
        x = x.contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (a.batch_size,), device=device)
    kept: list = []

    def run(n: int) -> None:
        events = [torch.cuda.Event(enable_timing=True) for _ in range(n)] if variant in TIMED else []
        kept.clear()
        for k in range(n):
            net.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
                loss = F.cross_entropy(net(x).float(), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            if variant in TIMED:
                kept.append(loss.detach())
                events[k].record()
                time.perf_counter()  # the per-step host timestamp the workload keeps

    return run


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="resnet50", choices=("resnet50", "vgg16"))
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--precision", default="amp,fp32")
    p.add_argument("--variants", default="plain,nchw,timed,ddp,ddp-timed")
    p.add_argument("--warmup", type=int, default=20, help="steps before a variant's first window")
    p.add_argument("--iters", type=int, default=100, help="steps in each timed window")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--output", default="", help="also write the figures as JSON here")
    a = p.parse_args()

    import torch
    import torch.distributed as dist

    if not torch.cuda.is_available():
        raise SystemExit("gpu_reference.py needs a CUDA GPU (torch.cuda.is_available() is False)")
    variants = [v for v in a.variants.split(",") if v]
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        raise SystemExit(f"unknown variant(s) {sorted(unknown)}; choose from {', '.join(VARIANTS)}")
    torch.cuda.set_device(0)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), RANK="0", WORLD_SIZE="1")
    dist.init_process_group("nccl")
    wl = load_workload()
    torch.backends.cudnn.benchmark = wl.cudnn_benchmark()  # as the workload sets it (DLPERF_CUDNN_BENCHMARK)
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}, "
          f"{a.model} bs{a.batch_size} {a.image_size}px, {a.rounds} rounds x {a.iters} steps per variant")
    results: dict = {}
    for precision in [q for q in a.precision.split(",") if q]:
        runners = {}
        for v in variants:
            runners[v] = make_runner(wl, v, a, precision)
            runners[v](a.warmup)
        torch.cuda.synchronize()
        rates: dict[str, list[float]] = {v: [] for v in variants}
        for r in range(a.rounds):
            order = variants[r % len(variants):] + variants[:r % len(variants)]
            for v in order:
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                runners[v](a.iters)
                torch.cuda.synchronize()
                rates[v].append(a.batch_size * a.iters / (time.perf_counter() - t0))
        del runners
        torch.cuda.empty_cache()
        results[precision] = rates
        ref = statistics.median(rates["plain"]) if "plain" in rates else None
        print(f"\n{a.model} {precision} bs{a.batch_size} {a.image_size}px")
        print(f"{'variant':8} {'samples/s':>10} {'min..max':>17} {'vs plain':>9}")
        for v in variants:
            med = statistics.median(rates[v])
            ratio = f"{med / ref:9.4f}" if ref else ""
            print(f"{v:8} {med:10.1f} {min(rates[v]):8.1f}..{max(rates[v]):<8.1f} {ratio}")
    if a.output:
        Path(a.output).write_text(json.dumps({"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                                              "args": vars(a), "rates": results}, indent=1))
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
