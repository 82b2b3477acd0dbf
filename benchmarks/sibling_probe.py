#!/usr/bin/env python3
"""Can a probe running *during* a launch, on the idle core or on the launch's own, model the host's drift?

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

A probe on core 1 cannot see what slows core 0 alone (the host's other tenants on that vCPU's
physical core or its SMT sibling). The ``same-*`` conditions probe the launch's own core at a low
duty cycle instead: every ``--period`` seconds the probe wakes (it has slept, so the scheduler lets
it in at once), runs a short fixed kernel and sleeps again. Each kernel call is timed in the
probe's own CPU time (``time.thread_time``: the worker's turns on the core are not counted, time
the host takes from the vCPU without the guest seeing it is), and a wake-up's rate is the best of
its calls (the first runs with a cache the worker has just filled). ``same-sgemm`` is a 128x128
SGEMM (in the L2 cache: the core's compute), ``same-copy`` an 8 MiB copy (the L3 and memory).
The ``alone`` condition in the same rounds shows what the probe costs the launch.

    python3 benchmarks/sibling_probe.py --rounds 12 --steps 12 --conditions alone,same-sgemm,same-copy
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
kind, out, core, period = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
os.sched_setaffinity(0, {core})
if kind in ("sgemm", "same-sgemm"):
    import numpy as np
    side = 384 if kind == "sgemm" else 128
    a = np.random.default_rng(0).standard_normal((side, side), dtype=np.float32); b = a.copy()
    def step(): np.dot(a, b)
    work = 2 * side ** 3 / 1e9
elif kind == "same-copy":
    import numpy as np
    src = np.ones(1 << 21, dtype=np.float32); dst = np.empty_like(src)
    def step(): np.copyto(dst, src)
    work = 2 * src.nbytes / 1e9
else:
    def step():
        x = 0
        for i in range(20000): x += i
    work = 20000 / 1e9
if kind.startswith("same-"):
    # a few calls per wake-up, ~2 ms together at full speed; each timed in this thread's CPU time
    n, t = 0, time.thread_time()
    while time.thread_time() - t < 0.002: step(); n += 1
    calls = max(3, n)
    with open(out, "w", buffering=1) as f:
        while True:
            time.sleep(period)
            t0, best = time.perf_counter(), float("inf")
            for _ in range(calls):
                c0 = time.thread_time(); step(); best = min(best, time.thread_time() - c0)
            f.write(f"{t0} {time.perf_counter()} {work / best}\n")
n, t = 1, time.perf_counter()
while time.perf_counter() - t < 0.05: step(); n += 1
with open(out, "w", buffering=1) as f:
    while True:
        t0 = time.perf_counter()
        for _ in range(n): step()
        t1 = time.perf_counter()
        f.write(f"{t0} {t1} {n * work / (t1 - t0)}\n")
"""
KINDS = ("alone", "spin", "sgemm", "same-sgemm", "same-copy")


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
    p.add_argument("--conditions", default="alone,spin,sgemm",
                   help=f"comma-separated, of {','.join(KINDS)}: alone, or beside a probe (same-*: on the launch's core)")
    p.add_argument("--period", type=float, default=0.1, help="same-* probes: seconds asleep between wake-ups")
    p.add_argument("--plant", type=float, default=0.1,
                   help="a condition ending in @plant (e.g. same-copy@plant) runs with DLPERF_PLANT_SLOWDOWN at this "
                        "fraction: does the probe see the workload's slow-down (it must not, to model the host)?")
    a = p.parse_args()
    if a.rounds < 2:
        p.error(f"--rounds {a.rounds}: a CV and a correlation need at least 2 rounds")
    if not {0, 1} <= os.sched_getaffinity(0):
        raise SystemExit("sibling_probe.py launches on core 0 and probes on core 1: this process may not use both "
                         f"(allowed CPUs {sorted(os.sched_getaffinity(0))}); run it on a machine with 2 or more cores")
    kinds = tuple(k.strip() for k in a.conditions.split(",") if k.strip())
    bad = [k for k in kinds if k.removesuffix("@plant") not in KINDS]
    if bad or not kinds:
        p.error(f"--conditions {a.conditions!r}: unknown {', '.join(bad) or 'none given'}; expected some of {', '.join(KINDS)}")
    got: dict[str, list[tuple[float, float]]] = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory(prefix="sibling-probe-") as td:
        tmp = Path(td)
        for r in range(a.rounds):
            order = kinds[r % len(kinds):] + kinds[:r % len(kinds)]  # each condition in each place equally often
            for kind in order:
                proc, log = None, tmp / f"probe-{r}-{kind}.log"
                probe, planted = kind.removesuffix("@plant"), kind.endswith("@plant")
                if probe != "alone":
                    core = "0" if probe.startswith("same-") else "1"
                    proc = subprocess.Popen([sys.executable, "-c", PROBE_CODE, probe, str(log), core, str(a.period)])
                    time.sleep(0.5)
                os.environ.pop("DLPERF_PLANT_SLOWDOWN", None)
                if planted:
                    os.environ["DLPERF_PLANT_SLOWDOWN"] = str(a.plant)  # the workload's planted slow-down
                try:
                    tput, w0, w1 = launch(a.model, a.batch_size, a.image_size, a.steps, 29800 + len(kinds) * r + kinds.index(kind))
                finally:
                    if proc:
                        proc.kill()
                        proc.wait()
                rate = probe_rate(log, w0, w1) if proc else float("nan")
                got[kind].append((tput, rate))
                print(f"round {r} {kind:10}: {tput:6.2f} samples/s" + (f", probe {rate:8.3f}" if proc else ""),
                      flush=True)
    alone = np.median([t for t, _ in got["alone"]]) if got.get("alone") else float("nan")
    os.environ.pop("DLPERF_PLANT_SLOWDOWN", None)
    print()
    for kind in kinds:
        t = np.array([x for x, _ in got[kind]])
        line = f"{kind:10}: median {np.median(t):.2f} samples/s ({np.median(t) / alone:.3f} of alone), CV {t.std(ddof=1) / t.mean():.1%}"
        if not kind.startswith("alone"):
            q = np.array([y for _, y in got[kind]])
            ok = np.isfinite(q)
            c = np.corrcoef(np.log(t[ok]), np.log(q[ok]))[0, 1]
            n = t[ok] / q[ok]
            slope = np.polyfit(np.log(q[ok]), np.log(t[ok]), 1)[0]  # in-sample: what a fitted model would take out
            resid = np.log(t[ok]) - slope * np.log(q[ok])
            line += (f"; probe CV {q[ok].std(ddof=1) / q[ok].mean():.1%}, correlation of logs {c:+.2f}, "
                     f"throughput / probe CV {n.std(ddof=1) / n.mean():.1%}, fitted slope {slope:.2f} "
                     f"leaves {resid.std(ddof=1):.1%}")
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
