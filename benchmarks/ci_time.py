#!/usr/bin/env python3
"""Where CI's minutes go: each test module's seconds in each phase of a `tests/run.sh --durations=0` log, and
each phase's wall time. (What bounds the tests is a count, the real-framework launches: tests/run.sh prints the
launch census, tests/census.py, and fails over the budget docs/testing.md sets; seconds depend on the host.)

The two phases are told apart by their `slowest durations` sections (the exclusive phase first, as
tests/run.sh runs them). The worker-seconds of the shared phase are two workers' together: its wall time is
about half.

Usage: python3 benchmarks/ci_time.py LOG
"""
from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

PHASES = ("exclusive", "shared")
DURATION = re.compile(r"^([\d.]+)s (?:call|setup|teardown)\s+(tests/[^:\s]+)", re.M)
WALL = re.compile(r"^=+ .*? in ([\d.]+)s(?: \([\d:]+\))? =+$", re.M)


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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("log", type=Path)
    args = p.parse_args(argv)
    log = args.log.read_text(errors="replace")
    got = per_module(log)
    for phase in PHASES:
        total = sum(got[phase].values())
        print(f"{phase}: {total:.0f} s of tests over {len(got[phase])} modules")
        for module, seconds in got[phase].most_common():
            print(f"  {seconds:7.0f} s  {module}")
    wall = walls(log)
    if len(wall) == len(PHASES):
        print(f"wall: exclusive {wall[0] / 60:.1f} min, shared {wall[1] / 60:.1f} min, "
              f"together {sum(wall) / 60:.1f} min (setup not counted)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
