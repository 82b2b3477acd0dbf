#!/usr/bin/env python3
"""Can a probe on the idle core, running *during* a launch, model the host's drift?

The probes tried before ran before and after a launch on its own core (window_noise.py --probe:
correlation 0.53-0.80 with the launch's throughput). A 1n1g case on the local default leaves the
second core idle, so a probe can run there through the whole window. If the host slows both vCPUs
together, the probe's mean rate over the window tracks the launch closely; if the probe competes
with the launch (shared FMA units of SMT siblings, cache, memory), it adds noise of its own.

Launches the suite's workload (torch_ddp.py, rank pinned to core 0, one thread, the launchers' CPU
malloc settings) in rounds of three: alone, beside a scalar spin probe on core 1 (a Python loop:
CPU time only), beside a numpy SGEMM probe on core 1 (the hardware probe's kernel, 384x384). The
probes log one rate per ~50 ms trial. Prints per condition the throughput's median and CV, and for
the probed ones the correlation of log throughput with the log of the probe's mean rate over the
window and the CV of throughput / probe rate.

    python3 benchmarks/sibling_probe.py --rounds 12 --steps 12     # 36 launches, about 6.5 minutes on 2 cores
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from window_noise import launch_records  # noqa: E402  (the same launch: core 0, one thread, CPU malloc settings)

PROBE_CODE = r"""
import os, sys, time
kind, out = sys.argv[1], sys.argv[2]
os.sched_setaffinity(0, {1})
if kind == "sgemm":
    import numpy as np
    a = np.random.default_rng(0).standard_normal((384, 384), dtype=np.float32); b = a.copy()
    def step(): np.dot(a, b)
    work = 2 * 384 ** 3 / 1e9
else:
    def step():
        x = 0
        for i in range(20000): x += i
    work = 20000 / 1e9
n, t = 1, time.perf_counter()
while time.perf_counter() - t < 0.05: step(); n += 1
with open(out, "w", buffering=1) as f:
    while True:
        t0 = time.perf_counter()
        for _ in range(n): step()
        t1 = time.perf_counter()
        f.write(f"{t0} {t1} {n * work / (t1 - t0)}\n")
"""


def launch(model: str, bs: int, px: int, steps: int, port: int) -> tuple[float, float, float]:
    """One launch: (throughput in samples/s over its window, window start, window end)."""
    (meta,) = [r for r in launch_records(model, bs, px, steps, port, warmup=2) if r.get("kind") == "meta"]
    w0, w1 = meta["window"]["start"], meta["window"]["end"]
    return bs * steps / (w1 - w0), w0, w1


def probe_rate(log: Path, w0: float, w1: float) -> float:
    """The probe's mean rate over its trials inside [w0, w1]."""
    rows = [tuple(map(float, line.split())) for line in log.read_text().splitlines() if line.count(" ") == 2]
    inside = [r for t0, t1, r in rows if t0 >= w0 and t1 <= w1]
    return float(np.mean(inside)) if inside else float("nan")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--steps", type=int, default=12, help="measured steps per launch")
    p.add_argument("--model", default="resnet50")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--image-size", type=int, default=64)
    a = p.parse_args()
    if a.rounds < 2:
        p.error(f"--rounds {a.rounds}: a CV and a correlation need at least 2 rounds")
    if not {0, 1} <= os.sched_getaffinity(0):
        raise SystemExit("sibling_probe.py launches on core 0 and probes on core 1: this process may not use both "
                         f"(allowed CPUs {sorted(os.sched_getaffinity(0))}); run it on a machine with 2 or more cores")
    kinds = ("alone", "spin", "sgemm")
    got: dict[str, list[tuple[float, float]]] = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory(prefix="sibling-probe-") as td:
        tmp = Path(td)
        for r in range(a.rounds):
            order = kinds[r % 3:] + kinds[:r % 3]  # each condition in each place equally often
            for kind in order:
                proc, log = None, tmp / f"probe-{r}-{kind}.log"
                if kind != "alone":
                    proc = subprocess.Popen([sys.executable, "-c", PROBE_CODE, kind, str(log)])
                    time.sleep(0.5)
                try:
                    tput, w0, w1 = launch(a.model, a.batch_size, a.image_size, a.steps, 29800 + 3 * r + kinds.index(kind))
                finally:
                    if proc:
                        proc.kill()
                        proc.wait()
                rate = probe_rate(log, w0, w1) if proc else float("nan")
                got[kind].append((tput, rate))
                print(f"round {r} {kind:5}: {tput:6.2f} samples/s" + (f", probe {rate:8.3f}" if proc else ""),
                      flush=True)
    alone = np.median([t for t, _ in got["alone"]])
    print()
    for kind in kinds:
        t = np.array([x for x, _ in got[kind]])
        line = f"{kind:5}: median {np.median(t):.2f} samples/s ({np.median(t) / alone:.3f} of alone), CV {t.std(ddof=1) / t.mean():.1%}"
        if kind != "alone":
            q = np.array([y for _, y in got[kind]])
            ok = np.isfinite(q)
            c = np.corrcoef(np.log(t[ok]), np.log(q[ok]))[0, 1]
            n = t[ok] / q[ok]
            line += (f"; probe CV {q[ok].std(ddof=1) / q[ok].mean():.1%}, correlation of logs {c:+.2f}, "
                     f"throughput / probe CV {n.std(ddof=1) / n.mean():.1%}")
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
