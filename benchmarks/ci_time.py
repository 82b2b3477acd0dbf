#!/usr/bin/env python3
"""Where CI's minutes go: each test module's seconds in each phase of a `tests/run.sh --durations=0` log,
against the budgets of docs/testing.md ("Time budget per test module").

The two phases are told apart by their `slowest durations` sections (the exclusive phase first, as
tests/run.sh runs them). A module over its budget, or with none, is listed last; the exit status is 1 when
one is. The worker-seconds of the shared phase are two workers' together: its wall time is about half.

Usage: python3 benchmarks/ci_time.py LOG [--budgets docs/testing.md]
"""
from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PHASES = ("exclusive", "shared")
DURATION = re.compile(r"^([\d.]+)s (?:call|setup|teardown)\s+(tests/[^:\s]+)", re.M)
WALL = re.compile(r"^=+ .*? in ([\d.]+)s(?: \([\d:]+\))? =+$", re.M)
BUDGET_ROW = re.compile(r"^\| `(tests/[\w/]+\.py)` \| (\w+) \| (\d+) \|", re.M)


def per_module(log: str) -> dict[str, Counter]:
    """Seconds per test module in each phase (setup, call and teardown together)."""
    sections = log.split("slowest durations")[1:]
    if len(sections) != len(PHASES):
        raise SystemExit(f"ci_time: {len(sections)} durations section(s) in the log, expected {len(PHASES)}: "
                         "run both phases with --durations=0 (bash tests/run.sh --durations=0)")
    out = {}
    for phase, text in zip(PHASES, sections):
        seconds: Counter = Counter()
        for m in DURATION.finditer(text):
            seconds[m.group(2)] += float(m.group(1))
        out[phase] = seconds
    return out


def walls(log: str) -> list[float]:
    """Each phase's wall seconds, from pytest's last line."""
    return [float(s) for s in WALL.findall(log)]


def budgets(doc: str) -> dict[tuple[str, str], int]:
    """(module, phase) -> budgeted seconds, from the budget table's rows."""
    return {(m, phase): int(s) for m, phase, s in BUDGET_ROW.findall(doc)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("log", type=Path)
    p.add_argument("--budgets", type=Path, default=ROOT / "docs" / "testing.md")
    args = p.parse_args(argv)
    log = args.log.read_text(errors="replace")
    got, allowed = per_module(log), budgets(args.budgets.read_text())
    over = []
    for phase in PHASES:
        total = sum(got[phase].values())
        print(f"{phase}: {total:.0f} s of tests over {len(got[phase])} modules")
        for module, seconds in got[phase].most_common():
            budget = allowed.get((module, phase))
            flag = "" if budget is not None and seconds <= budget else "  OVER" if budget is not None else "  no budget"
            print(f"  {seconds:7.0f} s  budget {budget if budget is not None else '-':>5}  {module}{flag}")
            if flag and seconds >= 1:
                over.append(f"{module} ({phase}): {seconds:.0f} s against {budget if budget is not None else 'none'}")
    wall = walls(log)
    if len(wall) == len(PHASES):
        print(f"wall: exclusive {wall[0] / 60:.1f} min, shared {wall[1] / 60:.1f} min, "
              f"together {sum(wall) / 60:.1f} min (setup not counted)")
    for line in over:
        print(f"over budget: {line}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
