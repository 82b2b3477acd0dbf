"""``dlperf history --since REF``: how far each case's figures moved since a pinned run (a release tag, a commit or
a run id), with an interval, and the level changes between: "6% slower since v1.2, in four steps" in one line.
The pinned level is the pinned run and the next runs of its line (``WINDOW``), the level now the line's last
``WINDOW`` runs; the interval is Welch's on the logs of the two."""
from __future__ import annotations

import math
import statistics
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import metrics
from ..metrics import Direction
from . import charts
from .model import History
from .overview import Change, figures
from .runs import Run
from .sources import HistoryError
from .steps import Step

WINDOW = 3  # runs either end: one night off its line does not set the drift
LEVEL = 0.95  # the interval's confidence


@dataclass(frozen=True)
class Drift:
    """One line's move in one figure from the pinned level to the level now, and the changes between."""

    key: str
    label: str
    metric: str
    since: Run
    now: Run
    change: float
    low: float | None
    high: float | None
    steps: tuple[tuple[Run, Step], ...]

    def text(self, ref: str) -> str:
        worse = self.change < 0 if metrics.get(self.metric).direction is Direction.HIGHER else self.change > 0
        word = ("worse" if worse else "better") if abs(self.change) >= 0.0005 else "the same"
        interval = f" [{self.low:+.1%}, {self.high:+.1%}]" if self.low is not None else " (no interval: one run)"
        steps = "; ".join(f"{s.change:+.1%} at {run.when}" + (f" ({run.commit})" if run.commit else "")
                          for run, s in self.steps)
        how = f"in {len(self.steps)} change(s): {steps}" if self.steps else "no change point between"
        return (f"{self.key} [{self.label}] {charts.METRICS[self.metric].lower()}: {self.change:+.1%}{interval} "
                f"({word}) since {ref} ({self.since.when}) to {self.now.when}, {how}")


def pinned(history: History, ref: str, repo: Path | None) -> Run:
    """The run ``ref`` names: a run id, a commit a run ran at (its first 7 hex at least), or a tag or branch
    the repository at ``repo`` resolves to such a commit; the first such run in the history's order. HistoryError
    says why none."""
    runs = [r for r in history.runs if not r.ab]
    by_id = [r for r in runs if r.id == ref]
    if by_id:
        return by_id[0]
    commits = [ref.lower()] if len(ref) >= 7 and all(c in "0123456789abcdef" for c in ref.lower()) else []
    if repo is not None:
        try:
            got = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
                                 capture_output=True, text=True, timeout=60)
            if got.returncode == 0:
                commits.append(got.stdout.strip())
        except (OSError, subprocess.TimeoutExpired):
            pass
    for commit in commits:
        hits = [r for r in runs if r.commit and (commit.startswith(r.commit.removesuffix("+dirty"))
                                                  or r.commit.startswith(commit))]
        if hits:
            return hits[0]  # the first in the history's order
    where = f", nor at what the repository {repo} resolves it to" if repo is not None else ""
    raise HistoryError(f"--since {ref}: no run of the history has that id or ran at that commit{where}: give a run "
                       "id, or a commit or tag (with --repo PATH) of a run in it")


def _interval(a: Sequence[float], b: Sequence[float]) -> tuple[float | None, float | None]:
    """Welch's interval of the ratio of b's level to a's (geometric), as a relative change."""
    if len(a) < 2 or len(b) < 2:
        return None, None
    from scipy.stats import t

    la, lb = [math.log(x) for x in a], [math.log(x) for x in b]
    va, vb = statistics.variance(la) / len(la), statistics.variance(lb) / len(lb)
    se = math.sqrt(va + vb)
    if se == 0:
        d = statistics.fmean(lb) - statistics.fmean(la)
        return math.exp(d) - 1, math.exp(d) - 1
    df = (va + vb) ** 2 / (va ** 2 / (len(la) - 1) + vb ** 2 / (len(lb) - 1))
    d, q = statistics.fmean(lb) - statistics.fmean(la), t.ppf(0.5 + LEVEL / 2, df) * se
    return math.exp(d - q) - 1, math.exp(d + q) - 1


def drifts(history: History, found: list[Change], since: Run) -> list[Drift]:
    """Every line's move since ``since`` in each figure it has, and the changes found between."""
    out = []
    at = {run.id: i for i, run in enumerate(history.runs)}  # the lines' order: commits' where known, else time
    found = sorted(found, key=lambda c: at[c.after.run.id])
    for key, groups in history.cases.items():
        for g, points in groups.items():
            for metric in charts.METRICS:
                line = [(points[i].run, y) for i, y in figures(points, metric) if y > 0]
                if len({y for _, y in line}) < 2:  # one figure throughout (a one-device case's speedup): nothing moved
                    continue
                start = next((i for i, (run, _) in enumerate(line) if at[run.id] >= at[since.id]), None)
                if start is None or start == len(line) - 1:
                    continue
                first = line[start:start + WINDOW]
                last = line[max(start + WINDOW, len(line) - WINDOW):] or line[-1:]  # apart where the line allows
                a, b = [y for _, y in first], [y for _, y in last]
                change = math.exp(statistics.fmean(map(math.log, b)) - statistics.fmean(map(math.log, a))) - 1
                low, high = _interval(a, b)
                steps = tuple((c.after.run, dict(c.moves)[metric]) for c in found
                              if c.key == key and c.group == g and metric in dict(c.moves)
                              and at[c.after.run.id] > at[since.id])
                out.append(Drift(key, history.labels[g], metric, line[start][0], line[-1][0], change, low, high, steps))
    return out
