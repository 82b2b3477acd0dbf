#!/usr/bin/env python3
"""What the stored gate catches against a baseline of fewer launches (issue #66, item 8): a model, not a
measurement of this machine.

Each trial draws a baseline of B launches and a session of S launches, log-normal at the given launch-to-launch
CV, the session's centre moved by a change (worse by the metric's direction), and judges them with the gate's
own rule (``baselines.rules.judge``, the metric's default CPU tolerance and NOISY bound). It prints, per baseline
size and change, how often the gate called a REGRESSION (the change worse than the tolerance: the catch rate;
the change 0: the false-alarm rate), with Wilson 95% intervals.

Two uses:
  compile time from a compiled case's 3 cold launches instead of 8 (--dlperf-cold-launches):
    python3 benchmarks/baseline_size_power.py --metric compile_time --cv 0.05 --baseline-runs 3 8
  a recording of one spread mode that no longer takes 3 more launches (8 instead of 11):
    python3 benchmarks/baseline_size_power.py --metric throughput --cv 0.128 --baseline-runs 8 11
--from-baseline FILE KEY takes the CV from a baseline entry's recorded figures of the metric instead.
"""
from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

from scipy import stats

from pytest_dlperf import metrics
from pytest_dlperf.baselines import BaselineError, Entry
from pytest_dlperf.baselines.fingerprint import robust_cv
from pytest_dlperf.baselines.rules import judge
from pytest_dlperf.baselines.store import parse
from pytest_dlperf.metrics import DeviceKind, Direction


def wilson(hits: int, n: int) -> tuple[float, float]:
    """Wilson score 95% interval for ``hits`` in ``n`` trials (scipy's binomtest, as gate_power.py takes it)."""
    ci = stats.binomtest(hits, n).proportion_ci(confidence_level=0.95, method="wilson")
    return ci.low, ci.high


def entry_of(metric: metrics.Metric, runs: list[float]) -> Entry:
    """A baseline entry holding ``runs`` as the metric's recorded launches."""
    e = Entry.from_samples(model="m", precision="fp32", batch_size=1, image_size=1, backend="b", topology="1n1g",
                           throughputs=[1.0] * len(runs), tolerance=None, versions={},
                           recorded_at="2026-11-30T00:00:00+00:00")
    e.runs[metric.name] = list(runs)
    return e


def rate(metric: metrics.Metric, cv: float, b: int, s: int, change: float, trials: int, rng: random.Random) -> int:
    """How many of ``trials`` sessions ``change`` worse than the baseline's centre the gate called a regression."""
    sigma, worse = math.log1p(cv), (1 - change if metric.direction is Direction.HIGHER else 1 + change)
    tol = metric.default_tolerance(DeviceKind.CPU)
    hits = 0
    for _ in range(trials):
        base = [100.0 * math.exp(rng.gauss(0, sigma)) for _ in range(b)]
        session = [100.0 * worse * math.exp(rng.gauss(0, sigma)) for _ in range(s)]
        hits += judge(session, entry_of(metric, base), tol, metric=metric.name).status.value == "regression"
    return hits


def recorded_cv(path: Path, key: str, metric: metrics.Metric) -> float:
    try:
        entry = parse(path, path.read_text()).entries[key]
    except (OSError, BaselineError, KeyError) as exc:
        sys.exit(f"baseline_size_power: cannot read entry {key!r} of {path}: {exc}")
    runs = entry.values(metric.name)
    if not runs or len(runs) < 2:
        sys.exit(f"baseline_size_power: {key} in {path} has fewer than two recorded {metric.name} figures")
    return robust_cv(runs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--metric", default="throughput", help="a gated metric's name (default: %(default)s)")
    ap.add_argument("--cv", type=float, help="launch-to-launch CV of the model (0.05: 5%%)")
    ap.add_argument("--from-baseline", nargs=2, metavar=("FILE", "KEY"), help="the CV of a recorded entry's figures")
    ap.add_argument("--baseline-runs", type=int, nargs="+", default=[3, 8])
    ap.add_argument("--session-runs", type=int, default=3)
    ap.add_argument("--changes", type=float, nargs="+", default=None,
                    help="how much worse the sessions are (default: 0, the tolerance, 1.5 and 2 times it)")
    ap.add_argument("--trials", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    try:
        metric = metrics.get(args.metric)
    except ValueError as exc:
        sys.exit(f"baseline_size_power: {exc}")
    if not metric.tolerated:
        sys.exit(f"baseline_size_power: {metric.name} is not judged with a tolerance")
    if (args.cv is None) == (args.from_baseline is None):
        sys.exit("baseline_size_power: give --cv C or --from-baseline FILE KEY")
    cv = args.cv if args.cv is not None else recorded_cv(Path(args.from_baseline[0]), args.from_baseline[1], metric)
    tol = metric.default_tolerance(DeviceKind.CPU)
    changes = args.changes or [0.0, tol, round(1.5 * tol, 3), round(2 * tol, 3)]
    print(f"MODEL (log-normal launches, CV {cv:.1%}), not a measurement: {metric.name}, CPU tolerance {tol:.0%}, "
          f"sessions of {args.session_runs}, {args.trials} trials each")
    print(f"{'baseline runs':>13}  " + "  ".join(f"{'worse ' + format(c, '.0%'):>22}" for c in changes))
    for b in args.baseline_runs:
        cells = []
        for c in changes:
            hits = rate(metric, cv, b, args.session_runs, c, args.trials, random.Random(args.seed))
            lo, hi = wilson(hits, args.trials)
            cells.append(f"{hits / args.trials:6.1%} [{lo:5.1%}, {hi:5.1%}]")
        print(f"{b:>13}  " + "  ".join(f"{c:>22}" for c in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
