"""``dlperf history --check``: a nightly's alarm. A level change in the slower (worse) direction that is new
tonight fails the check, once: its first run on the new level is among the line's last N runs, and no history
up to an earlier run found a worse change within ``MOVE`` runs of it (a change point becomes significant some
nights after it happened, and its place moves as nights are added). Each alarm names the case, the figure, its
size, the commit range it fell between and the bisect command that would find the commit."""
from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .. import metrics
from ..metrics import Direction
from . import charts
from .changepoints import Finder
from .charts import Point
from .model import History
from .overview import Change, line_steps
from .steps import Step

DEFAULT_LAST = 10  # a change is new-found some nights after it happened (docs/measurements.md, "Nightly alerts")
MOVE = 5  # runs a change point's place may move between nights and still be the same change
NIGHTS_FOUND = 2  # a change alerts once found this many nights running: one night's find alone is often noise


def worse(metric: str, step: Step) -> bool:
    """Whether ``step`` moved ``metric`` the bad way (lower throughput, higher time or memory)."""
    return step.change < 0 if metrics.get(metric).direction is Direction.HIGHER else step.change > 0


@dataclass
class LineFinds:
    """One line's steps in one metric as the history up to each of its runs found them (each end asked once)."""

    find: Callable[[int], dict[int, Step]]  # the last index (inclusive) -> steps keyed by their index
    cache: dict[int, dict[int, Step]] = field(default_factory=dict)

    def upto(self, end: int) -> dict[int, Step]:
        if end not in self.cache:
            self.cache[end] = self.find(end)
        return self.cache[end]


def new_worse(finds: LineFinds, n: int, last: int, is_worse: Callable[[Step], bool],
              nights: int = NIGHTS_FOUND) -> dict[int, Step]:
    """The worse steps the history of ``n`` runs finds among its last ``last`` runs that the histories up to
    each of the ``nights`` - 1 runs before also found (near it: within MOVE runs), and that were not so
    established at any earlier run: the changes new tonight. One night's find alone is often noise."""

    def near(end: int, at: int) -> bool:
        return any(abs(i - at) <= MOVE and is_worse(s) for i, s in finds.upto(end).items())

    def established(end: int, at: int) -> bool:
        return all(near(e, at) for e in range(end, end - nights, -1)) if end - nights + 1 >= 0 else False

    out = {}
    for at, step in finds.upto(n - 1).items():
        if at < n - last or not is_worse(step) or not established(n - 1, at):
            continue
        if not any(established(end, at) for end in range(max(at - MOVE, 1), n - 1)):
            out[at] = step
    return out


@dataclass(frozen=True)
class Alarm:
    """A worse level change new tonight."""

    change: Change
    metric: str
    step: Step
    case_id: str
    line_label: str

    def bisect(self, good: str, bad: str) -> str:
        """The command that finds the commit, as the runs were made: their repository and test paths."""
        place = self.change.after.run.place or self.change.before.run.place
        if place is None:
            return ("dlperf bisect --repo REPO --good {} --bad {} -- SUITE -k {} (the runs recorded no repository: "
                    "give its path and the suite's)").format(good, bad, shlex.quote(self.case_id))
        top, paths = place
        return shlex.join(["dlperf", "bisect", "--repo", top, "--good", good, "--bad", bad, "--",
                           *(os.path.join(top, p) if p != "." else top for p in paths or ["."]), "-k", self.case_id])

    def text(self) -> str:
        """One line: what, how much, where, and the command that finds the commit."""
        b, a, s = self.change.before.run, self.change.after.run, self.step
        p = f", p {s.pvalue:.1e}" if s.pvalue is not None else ""
        where = f"between run {b.when} and run {a.when}"
        good, bad = (b.commit or "").removesuffix("+dirty"), (a.commit or "").removesuffix("+dirty")
        if good and bad and good != bad:
            then = f"commits {good}..{bad}: " + self.bisect(good, bad)
        else:
            then = ("no commit range (the same commit, or none recorded): the host, the data or the stack changed, "
                    "not the repository")
        return (f"WORSE {self.change.key} [{self.line_label}] {charts.METRICS[self.metric].lower()} {s.change:+.1%} "
                f"({s.before:.4g} -> {s.after:.4g}{p}) {where}; {then}")


def _finds(points: Sequence[Point], metric: str, finder: Finder) -> LineFinds:
    return LineFinds(lambda end: line_steps(points[:end + 1], metric, finder))


def alarms(history: History, found: list[Change], last: int, nights: int = NIGHTS_FOUND) -> list[Alarm]:
    """The worse changes new tonight (``new_worse``) among ``found``, the full history's changes."""
    out = []
    lines: dict[tuple, LineFinds] = {}
    for c in found:
        points = history.cases[c.key][c.group]
        at = next(i for i, p in enumerate(points) if p.run.id == c.after.run.id)
        for metric, step in c.moves:
            if not worse(metric, step):
                continue
            finds = lines.setdefault((c.key, c.group, metric), _finds(points, metric, history.finder))
            if at in new_worse(finds, len(points), last, lambda s, m=metric: worse(m, s), nights):
                out.append(Alarm(c, metric, step, history.specs[c.key].id, history.labels[c.group]))
    return out
