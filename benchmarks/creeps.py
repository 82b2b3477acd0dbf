"""How well dlperf history finds slow creeps (issue #67): simulated nightly histories of one case's throughput
with this VM's measured session-to-session spread, judged by the finders `dlperf history` uses
(``history.changepoints``: Apache Otava at its defaults, and the history's own segmentation at the 5% tolerance).

    python3 benchmarks/creeps.py --sessions /tmp/noise/s*/results.json    # the spread measured from sessions
    python3 benchmarks/creeps.py --cv 0.01 0.02 0.04                      # or given

For each spread it prints, over --histories simulated 40-night histories each:
- unchanged: the share with no change point at all (target: >= 9 in 10), and false change points per 100 nights;
- a creep of four 1.5% steps (nights 8, 16, 24, 32): the share with at least one and at least two change points
  (target: at least two in >= 9 of 10);
- one 2% step and one 5% step at night 20: the share found within 2 nights of it by night 40, and the median
  number of nights after the step until it is first found (a nightly's --check sees it then).
The noise is multiplicative, log-normal with the spread as its sigma; a session's figure is one draw.
"""
from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_dlperf.history.changepoints import Finder, Segmentation, Thresholds, make  # noqa: E402

NIGHTS = 40
CREEP = ((8, 0.015), (16, 0.015), (24, 0.015), (32, 0.015))
TOLERANCE = 0.05  # the gate's CPU default: the segmentation's least step


def session_spread(paths: Sequence[Path]) -> dict[str, float]:
    """Each case's spread between sessions: the robust CV (1.4826 MAD / median) of its session medians."""
    by_case: dict[str, list[float]] = {}
    for p in paths:
        for c in json.loads(p.read_text())["cases"]:
            if c.get("median"):
                by_case.setdefault(c["case"]["id"], []).append(float(c["median"]))
    out = {}
    for case, xs in by_case.items():
        if len(xs) >= 3:
            med = statistics.median(xs)
            out[case] = 1.4826 * statistics.median(abs(x - med) for x in xs) / med
            print(f"{case}: {len(xs)} sessions, medians {', '.join(f'{x:.3g}' for x in xs)}: robust CV {out[case]:.1%}, "
                  f"CV {statistics.stdev(xs) / statistics.fmean(xs):.1%}")
    return out


def history(rng: random.Random, cv: float, steps: Sequence[tuple[int, float]], nights: int = NIGHTS) -> list[float]:
    level, out = 100.0, []
    for night in range(nights):
        for at, drop in steps:
            if night == at:
                level *= 1 - drop
        out.append(level * math.exp(rng.gauss(0, cv)))
    return out


def first_found(finder: Finder, values: list[float], at: int) -> int | None:
    """The nights after ``at`` (the step's first night) until a change point within 2 nights of it is found."""
    for end in range(at + 1, len(values) + 1):
        if any(abs(s.at - at) <= 2 for s in finder.find(values[:end], TOLERANCE)):
            return end - at
    return None


def rate(hits: int, n: int) -> str:
    return f"{hits}/{n} ({hits / n:.0%})"


def judge(name: str, finder: Finder, cv: float, n: int, seed: int) -> None:
    rng = random.Random(seed)
    flat = [finder.find(history(rng, cv, ()), TOLERANCE) for _ in range(n)]
    clean = sum(1 for f in flat if not f)
    false = sum(len(f) for f in flat) / (n * NIGHTS) * 100
    creep = [finder.find(history(rng, cv, CREEP), TOLERANCE) for _ in range(n)]
    one = sum(1 for f in creep if len(f) >= 1)
    two = sum(1 for f in creep if len(f) >= 2)
    print(f"  {name}: unchanged: none found in {rate(clean, n)}, {false:.2f} false change points per 100 nights; "
          f"creep 4x1.5%: >=1 found in {rate(one, n)}, >=2 in {rate(two, n)}")
    for size in (0.02, 0.05):
        delays = [first_found(finder, history(rng, cv, ((20, size),)), 20) for _ in range(n)]
        got = [d for d in delays if d is not None]
        print(f"  {name}: one {size:.0%} step at night 20: found by night 40 in {rate(len(got), n)}"
              + (f", after a median of {statistics.median(got):.0f} nights (range {min(got)}-{max(got)})" if got else ""))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", nargs="*", type=Path, default=[], help="results.json of sessions of the same cases")
    ap.add_argument("--cv", nargs="*", type=float, default=[], help="spreads to simulate (fractions)")
    ap.add_argument("--histories", type=int, default=100, help="simulated histories per scenario (default 100)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pvalue", type=float, default=Thresholds().pvalue, help="Otava's (default: dlperf history's)")
    ap.add_argument("--min-segment", type=int, default=Thresholds().min_segment, help="Otava's (default: dlperf history's)")
    ap.add_argument("--only-otava", action="store_true", help="leave the segmentation out")
    args = ap.parse_args(argv)
    spreads = list(args.cv)
    if args.sessions:
        measured = session_spread(args.sessions)
        spreads += sorted(set(round(v, 4) for v in measured.values()))
    if not spreads:
        spreads = [0.01, 0.02, 0.04]
    t = Thresholds(pvalue=args.pvalue, min_segment=args.min_segment)
    finders: list[tuple[str, Finder]] = [("otava", make("otava", t)), *([] if args.only_otava else [("steps", Segmentation())])]
    print(f"{args.histories} histories of {NIGHTS} nights per scenario; otava at p {t.pvalue}, change {t.min_change:.0%}, "
          f"window {t.window}, segment {t.min_segment}; steps at the {TOLERANCE:.0%} tolerance")
    for cv in spreads:
        print(f"spread (sigma of the log) {cv:.1%}:")
        for name, finder in finders:
            judge(name, finder, cv, args.histories, args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
