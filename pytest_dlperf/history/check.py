"""``dlperf history --check``: a nightly's alarm. A level change in the slower (worse) direction whose first run
on the new level is among each line's last N runs fails the check, naming the case, the figure, its size, the
commit range it fell between and the bisect command that would find the commit."""
from __future__ import annotations

import shlex
from dataclasses import dataclass

from .. import metrics
from ..metrics import Direction
from . import charts
from .model import History
from .overview import Change
from .steps import Step

DEFAULT_LAST = 3  # a nightly looks at its own run and the two before (a change needs runs after it to be seen)


@dataclass(frozen=True)
class Alarm:
    """A worse level change among a line's last runs."""

    change: Change
    metric: str
    step: Step
    case_id: str
    line_label: str

    def text(self) -> str:
        """One line: what, how much, where, and the command that finds the commit."""
        b, a, s = self.change.before.run, self.change.after.run, self.step
        p = f", p {s.pvalue:.1e}" if s.pvalue is not None else ""
        where = f"between run {b.when} and run {a.when}"
        good, bad = (b.commit or "").removesuffix("+dirty"), (a.commit or "").removesuffix("+dirty")
        if good and bad and good != bad:
            then = (f"commits {good}..{bad}: "
                    + shlex.join(["dlperf", "bisect", "--good", good, "--bad", bad, "--", "-k", self.case_id]))
        else:
            then = ("no commit range (the same commit, or none recorded): the host, the data or the stack changed, "
                    "not the repository")
        return (f"WORSE {self.change.key} [{self.line_label}] {charts.METRICS[self.metric].lower()} {s.change:+.1%} "
                f"({s.before:.4g} -> {s.after:.4g}{p}) {where}; {then}")


def alarms(history: History, found: list[Change], last: int) -> list[Alarm]:
    """The worse changes whose first run on the new level is among its line's ``last`` runs."""
    out = []
    for c in found:
        points = history.cases[c.key][c.group]
        ids = [p.run.id for p in points]
        if c.after.run.id not in ids[-last:]:
            continue
        for metric, step in c.moves:
            worse = step.change < 0 if metrics.get(metric).direction is Direction.HIGHER else step.change > 0
            if worse:
                out.append(Alarm(c, metric, step, history.specs[c.key].id, history.labels[c.group]))
    return out
