#!/usr/bin/env python3
"""Where a launch's seconds go (issue #77), per default case and topology: runs the default suite (or reads a
run's results.json and launch log) and prints, per case, the median seconds of each phase of its launches
(``pytest_dlperf/results/phases.py``: the harness's own work, the launcher's start, the rank's imports, its
process group, model build and first touch, the first step, the rest of the warm-up, the measured window, the
gathers after it up to the result written, the exit), then every launch's seconds summed by phase.

    python3 benchmarks/launch_phases.py                       # the default suite, 2 launches a case (~6 min)
    python3 benchmarks/launch_phases.py --repeats 3 -k resnet50
    python3 benchmarks/launch_phases.py --report DIR          # a run made with --dlperf-launch-log DIR/launches.jsonl

Run it on an otherwise idle machine; docs/measurements.md keeps its figures."""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pytest_dlperf.measure import launchlog  # noqa: E402
from pytest_dlperf.results.file import load  # noqa: E402
from pytest_dlperf.results.phases import NAMES, launch_phases  # noqa: E402


def record(report: Path, repeats: int, select: str) -> None:
    """The default suite on the local cluster, ``repeats`` launches a case, into ``report``."""
    cmd = [sys.executable, "-m", "pytest", str(ROOT / "suites"), "-q", "-p", "no:cacheprovider", "--rootdir",
           str(ROOT), f"--dlperf-report={report}", f"--dlperf-repeats={repeats}",
           f"--dlperf-launch-log={report / 'launches.jsonl'}", "--dlperf-plots=off", *(["-k", select] if select else [])]
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=ROOT, check=False)


def totals(report: Path) -> dict[tuple[str, str], float]:
    """Each launch's seconds as the harness counted them (the launch log), by (case, run directory label)."""
    path = report / "launches.jsonl"
    if not path.is_file():
        return {}
    return {(line.case, line.label): line.seconds for line in launchlog.read(path) if line.ok}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("-k", dest="select", default="")
    ap.add_argument("--report", type=Path, help="read this report directory instead of running the suite")
    args = ap.parse_args()
    report = args.report or Path(tempfile.mkdtemp(prefix="dlperf-launch-phases-"))
    if args.report is None:
        record(report, args.repeats, args.select)
    try:
        results, doc = load(report / "results.json")
        seconds = totals(report)
    except ValueError as exc:  # a results.json that is not one (ResultsFileError), a launch log line that is not one
        raise SystemExit(f"launch_phases.py: {exc}") from None
    kind = ((doc.get("environment") or {}).get("cluster") or {}).get("kind", "")
    shown = [k for k in NAMES if k not in ("before", "outside")] + ["before", "outside"]
    rows, summed, cases = [], defaultdict(float), 0
    for r in sorted(results.results, key=lambda r: r.case.id):
        got = []
        for run in r.runs:
            label = Path(run.run_dir).name if run.run_dir else f"r{run.repeat}"  # results.json keeps no run dir
            p = launch_phases(run, same_clock=kind == "local", total=seconds.get((r.case.id, label)))
            if p is not None:
                got.append(p)
        if not got:
            print(f"{r.case.id}: its launches wrote no phases (a workload of an older contract?)")
            continue
        cases += 1
        for p in got:
            for k, v in p.seconds.items():
                summed[k] += v
            summed["total"] += p.wall
        cols = {k: statistics.median(p.seconds.get(k, 0.0) for p in got) for k in shown}
        rows.append((r.case.id, len(got), statistics.median(p.wall for p in got), cols))
    keep = [k for k in shown if any(c[k] > 0 for *_, c in rows)]
    print(f"\nmedian seconds a launch, per phase ({kind} cluster; {report})")
    print(f"{'case':44s} {'n':>2s} {'total':>6s} " + " ".join(f"{NAMES[k][:10]:>10s}" for k in keep))
    for case, n, wall, cols in rows:
        print(f"{case:44s} {n:2d} {wall:6.1f} " + " ".join(f"{cols[k]:10.2f}" for k in keep))
    total = summed.pop("total", 0.0)
    if total:
        print(f"\nevery launch of {cases} cases: {total:.0f} s; by phase:")
        for k in keep:
            print(f"  {NAMES[k]:12s} {summed[k]:7.1f} s  {100 * summed[k] / total:5.1f}%")
        steps = summed["first_step"] + summed["warmup"] + summed["window"]
        print(f"  {'(steps)':12s} {steps:7.1f} s  {100 * steps / total:5.1f}%  first step, warm-up and window")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
