"""How a nightly's ``dlperf history --check`` alerts (issue #78): modelled histories replayed night by night, as
a nightly runs the check after each run, with Apache Otava's change points at dlperf history's defaults.

    python3 benchmarks/nightly_alerts.py                          # 100 histories, 1% noise, --last 10
    python3 benchmarks/nightly_alerts.py --cv 0.005 0.01 0.02 --last 10

Per noise level it prints, over --histories histories of --lines lines each (40 nights; in each line four 1.5%
drops at nights 8, 16, 24, 32, the creep of benchmarks/creeps.py):
- the site's recall: the planted drops the full history's change points name (within 2 nights), as the
  index would at night 40;
- the alerts' recall: of those named drops, the share the replay alerted on within 8 nights of the drop, and
  the nights from drop to alert (median, worst);
- alerts twice for one drop (target: none), and alerts near no drop;
- over the flat twins (no drop): the histories with any alert (target: at most 5 in 100).
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.creeps import CREEP, NIGHTS, TOLERANCE, history  # noqa: E402
from pytest_dlperf.history.changepoints import make  # noqa: E402
from pytest_dlperf.history.check import DEFAULT_LAST, NIGHTS_FOUND, LineFinds, new_worse  # noqa: E402

NAMED_WITHIN = 2  # a planted drop the site names: a change point within 2 nights of it
ALERT_WITHIN = 8  # an alert counts for a drop from its night to 8 nights after


def replay(values: list[float], last: int, finder, nights: int = NIGHTS_FOUND) -> list[tuple[int, int]]:  # noqa: ANN001
    """(night, place) of each alert: the check after each night's run over the history so far."""
    finds = LineFinds(lambda end: {s.at: s for s in finder.find(values[:end + 1], TOLERANCE)})
    out = []
    for n in range(2, len(values) + 1):
        out.extend((n - 1, at) for at in new_worse(finds, n, last, lambda s: s.change < 0, nights))
    return out


def judge(cv: float, histories: int, lines: int, last: int, seed: int, nights: int) -> dict[str, float]:
    finder = make("otava")
    rng = random.Random(seed)
    named = alerted = twice = stray = flat_alerting = 0
    delays: list[int] = []
    for _ in range(histories):
        for _ in range(lines):
            values = history(rng, cv, CREEP)
            found = [s.at for s in finder.find(values, TOLERANCE)]
            alerts = replay(values, last, finder, nights)
            per_drop: dict[int, list[int]] = {at: [] for at, _ in CREEP}
            for night, place in alerts:
                drop = min(per_drop, key=lambda a: abs(a - place))
                if abs(drop - place) <= ALERT_WITHIN and night >= drop:
                    per_drop[drop].append(night)
                else:
                    stray += 1
            for drop, when in per_drop.items():
                twice += len(when) > 1
                if not any(abs(f - drop) <= NAMED_WITHIN for f in found):
                    continue
                named += 1
                if when and when[0] - drop <= ALERT_WITHIN:
                    alerted += 1
                    delays.append(when[0] - drop)
        flat_alerting += any([replay(history(rng, cv, ()), last, finder, nights) for _ in range(lines)])
    planted = histories * lines * len(CREEP)
    print(f"noise {cv:.1%}, --last {last}, found {nights} night(s) running, {histories} histories x {lines} lines x {len(CREEP)} drops of 1.5% "
          f"({NIGHTS} nights):")
    print(f"  the site names {named} of {planted} drops ({named / planted:.0%})")
    print(f"  alerted on {alerted} of those {named} ({alerted / max(named, 1):.0%}) within {ALERT_WITHIN} nights; "
          f"nights from drop to alert: median {statistics.median(delays) if delays else '-'}, worst "
          f"{max(delays) if delays else '-'}")
    print(f"  alerted twice for one drop: {twice}; alerts near no drop: {stray}")
    print(f"  flat twins with any alert: {flat_alerting} of {histories}")
    return {"site": named / planted, "alerts": alerted / max(named, 1), "twice": twice, "stray": stray,
            "flat": flat_alerting / histories}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cv", type=float, nargs="+", default=[0.01], help="night-to-night noise (log-normal sigma)")
    ap.add_argument("--histories", type=int, default=100)
    ap.add_argument("--lines", type=int, default=2, help="lines (cases) per history")
    ap.add_argument("--last", type=int, default=DEFAULT_LAST, help="dlperf history --check --last")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--nights", type=int, nargs="+", default=[NIGHTS_FOUND],
                    help="the nights running a change must be found before it alerts (the check's NIGHTS_FOUND)")
    args = ap.parse_args(argv)
    for cv in args.cv:
        for nights in args.nights:
            judge(cv, args.histories, args.lines, args.last, args.seed, nights)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
