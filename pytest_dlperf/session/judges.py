"""The stored gate's judges, one tiny class per way a metric is judged (``metrics.Judging``, which each
declaration owns): the gate loops over the declarations and asks each metric's judge, never its kind.
Each says None where the case has no figure of the metric to judge (results.json says why)."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from ..baselines import Entry, ScalingRuns, Tolerances, judge, judge_scalar
from ..baselines.rules import judge_count
from ..metrics import Judging, Metric
from ..results.cases import CaseResult
from ..results.verdict import Verdict


@dataclass(frozen=True)
class Screened:
    """A case as the judges see it: its result, its baseline entry and tolerances, the gate's bounds, and the
    runs behind both sides' scaling figures (asked for only by a ratio's judge)."""

    result: CaseResult
    entry: Entry
    tolerances: Tolerances
    cv_bound: float
    alpha: float
    scaling_runs: Callable[[], ScalingRuns | None]


class StoredJudge(Protocol):
    def verdict(self, metric: Metric, case: Screened) -> Verdict | None: ...


class RunsJudge:
    """Per-launch figures against the recorded runs (``baselines.rules.judge``), the primary metric at the
    baseline's pace where both sides were probed."""

    def verdict(self, metric: Metric, case: Screened) -> Verdict | None:
        r = case.result
        values = r.values(metric.name)
        if not values:
            return None
        return judge(values, case.entry, case.tolerances, metric=metric.name, cv_bound=case.cv_bound,
                     alpha=case.alpha, case=r.case.id, measured_paces=r.paces if metric.paced else (),
                     measured_pace_contract=(r.pace_contract or None) if metric.paced else None)


class CountJudge:
    """A count: more than the most any recorded run counted is a regression (``judge_count``)."""

    def verdict(self, metric: Metric, case: Screened) -> Verdict | None:
        r = case.result
        values = r.values(metric.name)
        if not values:
            return None
        return judge_count(values, case.entry, metric=metric.name, case=r.case.id, said=r.said(metric.name))


class RatioJudge:
    """A ratio within the case's group on its tolerance, and on the runs behind both sides where known
    (``judge_scalar``)."""

    def verdict(self, metric: Metric, case: Screened) -> Verdict | None:
        now, then = case.result.value(metric.name), case.entry.figure(metric.name)
        if now is None or then is None:
            return None
        return judge_scalar(now, then, case.tolerances, metric=metric.name, case=case.result.case.id,
                            baseline_source=case.entry.source, runs=case.scaling_runs(), alpha=case.alpha)


JUDGES: Mapping[Judging, StoredJudge] = {Judging.RUNS: RunsJudge(), Judging.COUNT: CountJudge(),
                                         Judging.RATIO: RatioJudge()}
