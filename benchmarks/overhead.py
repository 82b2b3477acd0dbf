#!/usr/bin/env python3
"""Does the harness change what it measures? Plugin run vs the same commands pasted by hand.

Alternates, in one sitting, K pairs of runs of one case: one through ``pytest suites/`` and one
of the exact per-node commands the dry-run prints, started as a user would from shells
(``bash -c``), the order flipped every pair. Prints each side's median throughput and the ratio
plugin / by hand as the geometric mean of the K paired ratios with a 95% t interval (target:
within 1%, which the interval must be narrow enough to show).

The plugin runs gate against an empty baseline store (``--dlperf-baseline-dir`` in the run's temporary
directory): whatever baselines the repository ships, the benchmark measures and never aborts on
a verdict.

    python benchmarks/overhead.py --runs 10 --case resnet50-fp32-bs8-64px-2n1g
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pytest_dlperf import metrics  # noqa: E402
from pytest_dlperf.clusters.local import LocalCluster  # noqa: E402
from pytest_dlperf.launchers.torchrun import TorchrunLauncher  # noqa: E402
from pytest_dlperf.measure.runner import parse_steps, plan_run  # noqa: E402
from pytest_dlperf.specs import CPU_PROFILE, CaseSpec, Measurement, Topology  # noqa: E402


def parse_case(text: str) -> CaseSpec:
    model, precision, bs, px, topo = text.split("-")
    return CaseSpec(model, precision, int(bs[2:]), int(px[:-2]), Topology.parse(topo))


def by_hand(case: CaseSpec, m: Measurement, work: Path) -> float:
    """Start each node's rendered command line in its own shell, wait, read rank 0's step log."""
    cluster = LocalCluster(nodes=case.topology.nodes, slots=case.topology.devices_per_node,
                           base_dir=work / "hand")
    plan, cmds = plan_run(cluster, TorchrunLauncher(), case, m)
    lines = [cluster.render(c) for c in cmds]
    shells = [subprocess.Popen(["bash", "-c", line], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
              for line in lines]
    codes = [s.wait(timeout=m.timeout) for s in shells]
    if any(codes):
        raise SystemExit(f"a pasted command failed: {codes}\n" + "\n".join(lines))
    meta, steps = parse_steps(Path(plan.output_path(plan.nodes[0])))
    return metrics.throughput(steps, meta["warmup_iters"], meta["iters"])  # what the workload ran


def through_plugin(case: CaseSpec, m: Measurement, work: Path, i: int) -> float:
    report = work / f"plugin{i}"
    cmd = [sys.executable, "-m", "pytest", str(ROOT / "suites"), "-q", "-p", "no:cacheprovider",
           "-k", case.id, "--dlperf-model", case.model, "--dlperf-precision", case.precision,
           "--dlperf-batch-size", str(case.batch_size), "--dlperf-image-size", str(case.image_size),
           "--nodes", str(case.topology.nodes), "--dlperf-gpus-per-node", str(case.topology.devices_per_node),
           "--dlperf-repeats", "1", f"--dlperf-report={report}", f"--dlperf-baseline-dir={work / 'no-baselines'}"]
    if not m.window_seconds:  # explicit lengths; else the CPU profile's, as the by-hand commands
        cmd += ["--dlperf-warmup-iters", str(m.warmup_iters), "--dlperf-iters", str(m.iters)]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(r.stdout + r.stderr)
    (case_doc,) = json.loads((report / "results.json").read_text())["cases"]
    return case_doc["throughputs"][0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", default="resnet50-fp32-bs8-64px-2n1g")
    ap.add_argument("--runs", type=int, default=10, help="pairs of runs")
    ap.add_argument("--warmup-iters", type=int, default=None, help="exact warm-up (default: the CPU profile's)")
    ap.add_argument("--iters", type=int, default=None, help="exact window steps (default: the CPU profile's "
                    "time-based window)")
    args = ap.parse_args()
    case = parse_case(args.case)
    p = CPU_PROFILE
    if args.warmup_iters is None and args.iters is None:
        m = Measurement(p.warmup_iters, p.iters, 1, 600.0, p.max_warmup_iters, p.window_seconds, p.max_iters)
    else:
        w = p.warmup_iters if args.warmup_iters is None else args.warmup_iters
        m = Measurement(w, args.iters or p.iters, 1, 600.0)
    plugin, hand = [], []
    with tempfile.TemporaryDirectory(prefix="dlperf-overhead-") as tmp:
        work = Path(tmp)
        t0 = time.monotonic()
        for i in range(args.runs):  # alternate, so drift on a shared machine hits both alike
            first, second = (through_plugin, by_hand) if i % 2 == 0 else (by_hand, through_plugin)
            for fn in (first, second):
                v = fn(case, m, work, i) if fn is through_plugin else fn(case, m, work)
                (plugin if fn is through_plugin else hand).append(v)
                print(f"run {i} {'plugin ' if fn is through_plugin else 'by hand'} {v:8.2f} samples/s",
                      flush=True)
    from scipy import stats

    mp, mh = statistics.median(plugin), statistics.median(hand)
    logs = [math.log(p / h) for p, h in zip(plugin, hand)]
    mean = statistics.fmean(logs)
    half = float(stats.t.ppf(0.975, len(logs) - 1)) * statistics.stdev(logs) / math.sqrt(len(logs))
    print(f"case {case.id}, {args.runs} pairs, {time.monotonic() - t0:.0f}s")
    print(f"median throughput through the plugin: {mp:.2f} samples/s (runs {min(plugin):.2f}-{max(plugin):.2f})")
    print(f"median throughput by hand:            {mh:.2f} samples/s (runs {min(hand):.2f}-{max(hand):.2f})")
    print(f"ratio plugin / by hand (geometric mean of paired ratios): {math.exp(mean):.4f} "
          f"({(math.exp(mean) - 1) * 100:+.2f}%), 95% CI {math.exp(mean - half):.4f}-{math.exp(mean + half):.4f}")


if __name__ == "__main__":
    main()
