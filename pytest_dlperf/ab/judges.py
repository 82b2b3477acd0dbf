"""An A/B session's paired judges, one tiny class per way a metric is judged (``metrics.Judging``, which
each declaration owns): the session asks each gated metric's judge for its verdict from the pairs,
never its kind. The primary metric's verdict is the pairs' own (``sequential.decide`` on throughput);
a ratio's comes from both ladders, once per case (``ABSession.scaling``)."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from ..metrics import Direction, Judging, Metric
from . import sequential
from .pairs import PairedCase

# another metric's paired verdict says how the candidate's figure compares, whichever way is better
OTHER_VERDICTS = {"slower": "worse", "faster": "better"}


# the paired test at a metric's own tolerance: asked only by a judge that tests (a count has no tolerance)
MethodFor = Callable[[Metric], sequential.Method]


class PairedJudge(Protocol):
    def verdict(self, metric: Metric, rec: PairedCase, method: MethodFor, final: bool) -> dict | None: ...


class PairedRuns:
    """Both sides' figure in every pair: the sequential paired test at the metric's tolerance, worse or
    better whichever way the metric is better."""

    def verdict(self, metric: Metric, rec: PairedCase, method: MethodFor, final: bool) -> dict | None:
        data = rec.figures(metric.name)
        if not data:
            return None
        lower = metric.direction is Direction.LOWER
        got = assessment_dict(sequential.decide(data, method(metric), final=final, lower_is_better=lower,
                                                subject=f"candidate {metric.title}",
                                                words=("lower", "higher") if lower else ("slower", "faster")))
        got["verdict"] = OTHER_VERDICTS.get(got["verdict"], got["verdict"])
        return got


class PairedCount:
    """The most either side counted in any launch: more is worse, whatever the size (``count_verdict``)."""

    def verdict(self, metric: Metric, rec: PairedCase, method: MethodFor, final: bool) -> dict | None:
        data = rec.figures(metric.name)
        return count_verdict(metric, data, rec.runs("candidate")) if data else None


class PairedRatio:
    """A ratio within the case's group is judged from both sides' ladders, once per case: not per pair."""

    def verdict(self, metric: Metric, rec: PairedCase, method: MethodFor, final: bool) -> dict | None:
        return None


JUDGES: Mapping[Judging, PairedJudge] = {Judging.RUNS: PairedRuns(), Judging.COUNT: PairedCount(),
                                         Judging.RATIO: PairedRatio()}


def count_verdict(metric: Metric, data: list[tuple[float, float]], candidate: list) -> dict:
    """A count's verdict between the sides (``Rule.COUNT``): the most the candidate counted in any launch
    against the most the reference did; more is WORSE whatever the size (a count, not a tolerance), and
    the reason names what the tool said of the candidate's (a graph break's reason and place)."""
    ref, cand = int(max(r for r, _ in data)), int(max(c for _, c in data))
    verdict = "worse" if cand > ref else "better" if cand < ref else "same"
    said = list(dict.fromkeys(x for run in candidate for x in (metric.said(run) if metric.said else [])))
    reason = (f"candidate {cand} {metric.title} where the reference had {ref or 'none'} (the most in any launch of "
              f"{len(data)} pair(s); a count, not a tolerance)")
    if said and verdict == "worse":
        reason += ": " + "; ".join(said)
    return {"verdict": verdict, "ratio": None, "low": None, "high": None, "pairs": len(data), "nominal_level": None,
            "reason": reason, "reference": ref, "candidate": cand, "said": said}


def assessment_dict(got: sequential.Assessment) -> dict:
    """An assessment as results.json shows it."""
    return {"verdict": got.status.value, "ratio": got.ratio, "low": got.low, "high": got.high,
            "pairs": got.pairs, "nominal_level": got.gamma, "reason": got.reason}
