#!/usr/bin/env python3
"""What does the workload's per-step timing cost? Harness-timed steps vs a window timed from outside.

The suite's workload (``pytest_dlperf/node/workloads/torch_ddp.py``) times each step between two
barriers with a host sync (``float(loss)``) inside every step, while the seeds' benchmarks time a
window of steps from outside. This script runs both in ONE launch of the same model, batch and
threads, in alternating blocks of steps (A B A B ...), so that launch-to-launch noise (whole
launches faster or slower) cancels out of the ratio:

- ``barriers``: every step as the workload runs it: barrier, step, ``float(loss)``, barrier;
- ``outside``: the steps back to back with a timestamp per rank after each (no barrier, no host
  sync), one barrier at each end of the block, as the seeds' benchmarks time a window.

Each block is timed from its first barrier to its last; the ratio barriers / outside per block
pair is averaged on the log scale with a t interval over the pairs.

    python3 benchmarks/step_timing.py --ranks 2 --pairs 12 --block 4
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKLOAD = ROOT / "pytest_dlperf" / "node" / "workloads" / "torch_ddp.py"


def worker(a: argparse.Namespace) -> None:
    """One rank (started by torchrun): alternate blocks of the two timing modes, rank 0 writes JSON."""
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F

    spec = importlib.util.spec_from_file_location("torch_ddp", WORKLOAD)
    wl = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(wl)
    dist.init_process_group("gloo")
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = wl.build_model(a.model, 1000)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(a.batch_size, 3, a.image_size, a.image_size)
    y = torch.randint(0, 1000, (a.batch_size,))

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(a.warmup):
        step()
    out = {"barriers": [], "outside": []}
    for i in range(2 * a.pairs):
        mode = ("barriers", "outside")[(i + i // 2) % 2]  # A B B A A B ...: neither mode always first
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(a.block):
            if mode == "barriers":
                dist.barrier()
                float(step().detach())
                dist.barrier()
            else:
                step()
                time.perf_counter()  # the per-rank timestamp the window mode keeps
        dist.barrier()
        out[mode].append((time.perf_counter() - t0) / a.block)
    if dist.get_rank() == 0:
        Path(a.output).write_text(json.dumps(out))
    dist.destroy_process_group()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--model", default="resnet50")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--image-size", type=int, default=64)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--pairs", type=int, default=12)
    p.add_argument("--block", type=int, default=4)
    p.add_argument("--output", default="")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        worker(a)
        sys.stdout.flush()
        os._exit(0)  # no finalization: it can abort under Gloo's threads, as the workload notes
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "timing.json"
        argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(a.ranks),
                "--log-dir", str(Path(tmp) / "torchelastic"), __file__, "--worker", "--output", str(out)] + [
            f"--{k.replace('_', '-')}={v}" for k, v in vars(a).items() if k not in ("worker", "output", "ranks")]
        t0 = time.monotonic()
        subprocess.run(argv, check=True, env={**os.environ, "OMP_NUM_THREADS": str(a.threads)})
        doc = json.loads(out.read_text())
    bar, outside = doc["barriers"], doc["outside"]
    logs = [math.log(b / o) for b, o in zip(bar, outside)]
    mean = statistics.fmean(logs)
    se = statistics.stdev(logs) / math.sqrt(len(logs))
    from scipy import stats

    half = float(stats.t.ppf(0.975, len(logs) - 1)) * se
    print(f"{a.model} bs{a.batch_size} {a.image_size}px, {a.ranks} ranks x {a.threads} thread(s), "
          f"{a.pairs} block pairs of {a.block} steps, {time.monotonic() - t0:.0f}s")
    print(f"seconds per step, barriers + float(loss) every step: median {statistics.median(bar):.4f}")
    print(f"seconds per step, window timed from outside:          median {statistics.median(outside):.4f}")
    print(f"ratio barriers / outside: {math.exp(mean):.4f} (95% CI {math.exp(mean - half):.4f}-"
          f"{math.exp(mean + half):.4f}): the per-step timing costs {(math.exp(mean) - 1) * 100:+.2f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
