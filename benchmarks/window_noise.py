#!/usr/bin/env python3
"""Is the run-to-run noise in the launches or in time? Long windows cut into short ones.

Launches the suite's workload (torch_ddp.py, one rank pinned to core 0, one thread, the launchers'
CPU malloc settings) L times with a long fixed window of S measured steps, then cuts each window
into consecutive sub-windows of K steps. If whole launches were faster or slower, the sub-windows of
one launch would agree with each other and the launches would differ; if the noise is in time (the
host), the sub-windows of one launch differ as much as launches do, and a launch's mean over its S
steps is steadier by about sqrt(S / K). Prints both CVs, that ratio, and the lag-1 autocorrelation
of sub-windows within a launch.

With ``--probe``, the harness's hardware probe (node/hwprobe.py: a numpy SGEMM, no framework) runs
on the same core just before and just after each launch, and the script prints how well the probe's
median tracks the launch's throughput (correlation of logs; the CV of throughput / probe): a probe
that tracked the host's speed well could be used to model the host's drift out of the gate.

    python3 benchmarks/window_noise.py --launches 6 --steps 39 --sub 3     # resnet50 fp32 bs8 64px
    python3 benchmarks/window_noise.py --launches 12 --steps 3 --sub 3 --probe
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_dlperf.launchers.base import CPU_MALLOC_ENV  # noqa: E402

WORKLOAD = ROOT / "pytest_dlperf" / "node" / "workloads" / "torch_ddp.py"
PROBE = ROOT / "pytest_dlperf" / "node" / "hwprobe.py"


def probe(seconds: float = 1.5) -> float:
    """The hardware probe's median SGEMM GFLOP/s on core 0."""
    with tempfile.TemporaryDirectory(prefix="window-noise-probe-") as tmp:
        out = Path(tmp) / "hw.json"
        subprocess.run(["taskset", "-c", "0", sys.executable, str(PROBE), "--seconds", str(seconds), "--output",
                        str(out)], check=True, capture_output=True, timeout=120)
        return float(json.loads(out.read_text())["compute"]["median"])


def launch_records(model: str, bs: int, px: int, steps: int, port: int, warmup: int = 3) -> list[dict]:
    """One launch of the workload, rank 0 pinned to core 0; its step log's records."""
    with tempfile.TemporaryDirectory(prefix="window-noise-") as tmp:
        out = Path(tmp) / "steps.jsonl"
        env = {**os.environ, "OMP_NUM_THREADS": "1", "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0",
               "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), **CPU_MALLOC_ENV}
        argv = ["taskset", "-c", "0", sys.executable, str(WORKLOAD), "--model", model, "--precision", "fp32",
                "--batch-size", str(bs), "--image-size", str(px), "--warmup-iters", str(warmup), "--iters", str(steps),
                "--threads", "1", "--output", str(out)]
        p = subprocess.run(argv, env=env, cwd=tmp, capture_output=True, text=True, timeout=900)
        if p.returncode:
            raise SystemExit(f"launch failed (exit {p.returncode}):\n{p.stderr[-2000:]}")
        return [json.loads(line) for line in out.read_text().splitlines()]


def launch(model: str, bs: int, px: int, steps: int, port: int) -> np.ndarray:
    """One launch; the measured steps' times in seconds."""
    recs = launch_records(model, bs, px, steps, port)
    return np.array([r["end"] - r["start"] for r in recs if r.get("kind") == "step" and not r["warmup"]])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--launches", type=int, default=6)
    p.add_argument("--steps", type=int, default=39, help="measured steps per launch")
    p.add_argument("--sub", type=int, default=3, help="steps per sub-window (the default suite's window holds 3-4)")
    p.add_argument("--model", default="resnet50")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--image-size", type=int, default=64)
    p.add_argument("--probe", action="store_true", help="run the hardware probe before and after each launch")
    a = p.parse_args()
    k = a.steps // a.sub
    rows, probes = [], []
    for i in range(a.launches):
        before = probe() if a.probe else None
        st = launch(a.model, a.batch_size, a.image_size, a.steps, 29700 + i)
        if a.probe:
            probes.append((before, probe()))
        w = st[: k * a.sub].reshape(k, a.sub).mean(axis=1)
        rows.append(w)
        print(f"launch {i}: mean step {st.mean() * 1e3:.0f} ms; {a.sub}-step sub-windows (ms) "
              f"{[round(x * 1e3) for x in w]}" + (f"; probe {probes[-1][0]:.1f}, {probes[-1][1]:.1f} GFLOP/s"
                                                  if a.probe else ""), flush=True)
    A = np.array(rows)
    means = A.mean(axis=1)
    between = means.std(ddof=1) / means.mean()
    if k > 1:
        within = np.sqrt(((A - means[:, None]) ** 2).sum() / (A.size - len(means))) / means.mean()
        lag1 = [float(np.corrcoef(r[:-1], r[1:])[0, 1]) for r in A]
        print(f"\nsub-windows of {a.sub} steps (~{A.mean() * a.sub:.1f} s): CV within a launch {within:.1%}")
        print(f"launch means over {k * a.sub} steps: CV between launches {between:.1%} "
              f"(if all the noise were in time, about {within / np.sqrt(k):.1%})")
        print(f"lag-1 autocorrelation of sub-windows within each launch: {np.round(lag1, 2).tolist()}")
    else:
        print(f"\nlaunch means over {a.steps} steps: CV between launches {between:.1%}")
    if probes:
        tput = np.log(1.0 / means)
        for name, col in (("before", 0), ("after", 1)):
            x = np.log([pr[col] for pr in probes])
            print(f"probe {name} the launch: CV {np.exp(x).std(ddof=1) / np.exp(x).mean():.1%}, "
                  f"correlation with the launch's log throughput {np.corrcoef(x, tput)[0, 1]:+.2f}")
        mid = np.log([np.sqrt(b * e) for b, e in probes])
        norm = np.exp(tput - mid)
        print(f"throughput CV {np.exp(tput).std(ddof=1) / np.exp(tput).mean():.1%}; divided by the probes' geometric "
              f"mean: CV {norm.std(ddof=1) / norm.mean():.1%} (correlation {np.corrcoef(mid, tput)[0, 1]:+.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
