#!/usr/bin/env python3
"""The local cluster's two starts side by side (issue #77): torchrun's agent (the harness before) against the direct
start (``--dlperf-local-start direct``, node/workloads/rankstart.py), on the same cases in alternating sessions.

Per case and start it prints the median seconds of a launch (results/phases.py: its fixed cost, every second but
the warm-up and the window; the launcher's start; the exit) and per case an A/B of the window: each round's
throughput of the direct start over torchrun's, its mean ratio and 95% interval (a t interval of the log ratios,
as ``dlperf`` A/B judges pairs), with what the A/B's rule makes of it at its default 2% tolerance, and the same
for the step time's median.

    python3 benchmarks/local_start.py                     # resnet50 1n1g and 2n1g, 6 rounds (about 8 minutes)
    python3 benchmarks/local_start.py --rounds 4 -k "vgg16 and fp32"

Each round runs one session per start, one launch a case, the order flipped every round. Run it on an otherwise
idle machine; docs/measurements.md keeps its figures."""
from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pytest_dlperf.ab.sequential import Interval, classify, t_interval  # noqa: E402
from pytest_dlperf.measure import launchlog  # noqa: E402
from pytest_dlperf.results.file import load  # noqa: E402
from pytest_dlperf.results.phases import launch_phases  # noqa: E402

STARTS = ("torchrun", "direct")
TOLERANCE = 0.02  # --dlperf-ab-tolerance's default


def session(report: Path, start: str, select: str) -> None:
    """One session of the default suite's selected cases, one launch each, with ``start``."""
    cmd = [sys.executable, "-m", "pytest", str(ROOT / "suites"), "-q", "-p", "no:cacheprovider", "--rootdir",
           str(ROOT), f"--dlperf-report={report}", "--dlperf-repeats=1", f"--dlperf-local-start={start}",
           f"--dlperf-launch-log={report / 'launches.jsonl'}", "--dlperf-plots=off", "-k", select]
    report.mkdir(parents=True, exist_ok=True)
    print(f"$ {' '.join(cmd[3:])}", flush=True)
    subprocess.run(cmd, cwd=ROOT, check=False, stdout=subprocess.DEVNULL)


def launches(report: Path) -> dict[str, dict]:
    """Per case id, its one launch: throughput, step time median, and the phases' seconds."""
    results, _ = load(report / "results.json")
    totals = {line.case: line.seconds for line in launchlog.read(report / "launches.jsonl") if line.ok}
    got = {}
    for r in results.results:
        if not r.runs:
            continue
        p = launch_phases(r.runs[0], same_clock=True, total=totals.get(r.case.id))
        if p is None:
            continue
        s = p.seconds
        got[r.case.id] = {"throughput": r.throughputs[0], "p50": r.step_time["p50"], "total": p.wall,
                          "fixed": p.wall - s.get("warmup", 0.0) - s.get("window", 0.0),
                          "launcher": s.get("launcher", 0.0), "exit": s.get("exit", 0.0)}
    return got


def ab_line(pairs: list[tuple[float, float]], higher_better: bool) -> str:
    """The direct start over torchrun's, paired by round: mean ratio, 95% interval, and the A/B rule's word."""
    logs = [math.log(new / old) for old, new in pairs]
    if len(logs) < 2:
        return f"{len(logs)} pair(s): too few for an interval"
    iv = t_interval(logs, 0.05)
    decided = classify(iv if higher_better else Interval(-iv.mean, -iv.high, -iv.low), TOLERANCE)
    word = decided.value.upper() if decided else "UNDECIDED"
    return f"{math.exp(iv.mean):.3f} ({math.exp(iv.low):.3f}-{math.exp(iv.high):.3f}), {len(logs)} pairs: {word}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("-k", dest="select", default="resnet50 and fp32 and not compiled")
    args = ap.parse_args()
    if args.rounds < 2:
        raise SystemExit("local_start.py: --rounds must be 2 or more (an interval needs two pairs)")
    root = Path(tempfile.mkdtemp(prefix="dlperf-local-start-"))
    rows: dict[tuple[str, str], list[dict]] = defaultdict(list)  # (case, start) -> its launches, by round
    pairs: dict[str, list[tuple[dict, dict]]] = defaultdict(list)
    for i in range(args.rounds):
        got = {}
        for start in (STARTS if i % 2 == 0 else STARTS[::-1]):
            report = root / f"r{i}-{start}"
            session(report, start, args.select)
            try:
                got[start] = launches(report)
            except (OSError, ValueError) as exc:  # no results.json (a failed session), a line that is not one
                raise SystemExit(f"local_start.py: round {i}, {start}: {exc} (its report: {report})") from None
        for case in sorted(set(got["torchrun"]) & set(got["direct"])):
            for start in STARTS:
                rows[(case, start)].append(got[start][case])
            pairs[case].append((got["torchrun"][case], got["direct"][case]))
    if not pairs:
        raise SystemExit(f"local_start.py: no case measured with both starts (reports under {root})")
    print(f"\nmedian seconds a launch ({args.rounds} rounds; reports under {root})")
    print(f"{'case':34s} {'start':9s} {'total':>6s} {'fixed':>6s} {'launcher':>8s} {'exit':>5s}")
    for case in sorted(pairs):
        fixed = {}
        for start in STARTS:
            runs = rows[(case, start)]
            med = {k: statistics.median(r[k] for r in runs) for k in ("total", "fixed", "launcher", "exit")}
            fixed[start] = med["fixed"]
            print(f"{case:34s} {start:9s} {med['total']:6.2f} {med['fixed']:6.2f} {med['launcher']:8.2f} "
                  f"{med['exit']:5.2f}")
        print(f"{'':34s} fixed cost direct/torchrun: {fixed['direct'] / fixed['torchrun']:.2f}")
    print("\nthe window, direct over torchrun (throughput higher is better; step time lower is better):")
    for case, got in sorted(pairs.items()):
        print(f"  {case}")
        print(f"    throughput  {ab_line([(a['throughput'], b['throughput']) for a, b in got], True)}")
        print(f"    step p50    {ab_line([(a['p50'], b['p50']) for a, b in got], False)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
