#!/usr/bin/env python3
"""What the default suite's compiled cases cost it (issue #49): the default CPU suite as a user runs it
(``pytest suites/``, every case eager and the decoder compiled at 1n1g), against the same suite eager
only (``--dlperf-compile eager``), each against an empty baseline store (every case measured, none
judged) and its own report directory, one after the other in the order given.

Per session it prints the wall time, the budget's measuring seconds, each case's launches (the budget
gives up repeats where time runs short) and, for the compiled cases, their launches' seconds and
compile times: the suite's extra time shows as wall time beyond the budget and as launches the other
cases gave up.

    python3 benchmarks/compiled_suite_time.py            # default, then eager only
    python3 benchmarks/compiled_suite_time.py --first eager
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SESSIONS = {"default": (), "eager": ("--dlperf-compile", "eager")}


def session(name: str, tmp: Path) -> dict:
    """One session of the suite: its wall seconds and results.json."""
    report = tmp / name
    cmd = [sys.executable, "-m", "pytest", str(ROOT / "suites"), "-q", "-p", "no:cacheprovider",
           f"--dlperf-report={report}", f"--dlperf-baseline-dir={tmp / 'empty-store'}", *SESSIONS[name]]
    t0 = time.monotonic()
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if r.returncode not in (0, 1):  # 1: a case failed; it is reported below
        raise SystemExit(f"{name}: pytest exited {r.returncode}:\n{r.stdout[-3000:]}{r.stderr[-2000:]}")
    return {"wall": wall, "doc": json.loads((report / "results.json").read_text())}


def show(name: str, got: dict) -> None:
    doc = got["doc"]
    budget = doc["environment"].get("budget") or {}
    print(f"\n{name}: {got['wall']:.0f} s wall; measuring {budget.get('used', 0):.0f} s of the "
          f"{budget.get('seconds', 0):g} s budget; {len(doc['cases'])} cases, {len(doc['failures'])} failed")
    for c in doc["cases"]:
        runs = c["runs"]
        line = f"  {c['case']['id']:45s} {len(runs)} launch(es), {sum(r['wall_seconds'] for r in runs):6.1f} s"
        compile_time = (c.get("metrics") or {}).get("compile_time") or {}
        if compile_time.get("values"):
            line += (f"; compile time {statistics.median(compile_time['values']):.1f} s (median), "
                     f"compiled/eager {(c['metrics'].get('compiled_over_eager') or {}).get('value') or 0:.2f}")
        print(line)
    launches = sum(len(c["runs"]) for c in doc["cases"])
    compiled = [r["wall_seconds"] for c in doc["cases"] if c["case"]["variant"].endswith("compiled") for r in c["runs"]]
    print(f"  launches: {launches}; the compiled cases' {len(compiled)}: {sum(compiled):.1f} s")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--first", choices=tuple(SESSIONS), default="default", help="the session to run first")
    first = p.parse_args().first
    order = [first, *(n for n in SESSIONS if n != first)]
    with tempfile.TemporaryDirectory(prefix="dlperf-compiled-suite-") as tmp:
        got = {name: session(name, Path(tmp)) for name in order}
    for name in order:
        show(name, got[name])
    d, e = got["default"], got["eager"]
    print(f"\nthe default suite's compiled cases: {d['wall'] - e['wall']:+.0f} s wall, "
          f"{sum(len(c['runs']) for c in d['doc']['cases']) - sum(len(c['runs']) for c in e['doc']['cases']):+d} "
          "launches in all against the eager-only suite")
    return 0


if __name__ == "__main__":
    sys.exit(main())
