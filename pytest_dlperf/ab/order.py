"""``--dlperf-candidate``: the A/B measuring order. Rounds over the cases as the rounds order
takes them (so a session's cases share the host's hour); in each round every case not yet decided
takes one pair, its two launches adjacent in time, reference-first and candidate-first in a balanced
order (ABBA BAAB ...); after each pair the sequential test looks (``sequential``), and a decided
case leaves the rounds. A test that builds a case of its own takes its pairs back to back."""
from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

import pytest

from ..clusters.base import ClusterError
from ..measure import Bench, Measured, Unit, cases_from, launch, own_case, ready_first, take_rounds
from ..measure.budget import Budget
from ..measure.runner import RunFailed
from ..results.cases import summarize
from ..specs import CaseSpec, Measurement
from . import sequential
from .interpreter import SideNotReady
from .pairs import Launch, Pair, PairedCase

if TYPE_CHECKING:
    from .feature import ABSession


class PairedOrder:
    """Takes each case's pairs until its sequential test decides, the cap, or the budget."""

    def __init__(self, bench: Bench, ab: ABSession, rounds: bool, budget_seconds: float) -> None:
        self.bench, self.ab, self.rounds = bench, ab, rounds
        self._measured: dict[str, Measured] = {}
        self._rounds_taken = False
        self.budget = Budget(budget_seconds)  # none unless --dlperf-budget: the cap bounds it

    def measure(self, case: CaseSpec, item: pytest.Item | None, m: Measurement) -> Measured:
        name = self.bench.name(case)
        own = own_case(item, case)
        if own and not self._rounds_taken and self.rounds and item in item.session.items:
            self._rounds_taken = True
            self._take(cases_from(item, self.bench.name), m)
        got = self._measured.pop(name, None) if own else None
        if got is None:
            self._take([case], m)
            got = self._measured.pop(name)
        return got

    def unjudged(self) -> dict[str, Measured]:
        out, self._measured = self._measured, {}
        return out

    def _take(self, cases: list[CaseSpec], m: Measurement) -> None:
        """Rounds of one pair per undecided case, until each is decided, capped or out of budget."""
        method, name = self.ab.method, self.bench.name
        state = {name(c): Measured(c, paired=self.ab.record(c, name(c))) for c in cases}
        finished = False
        try:
            why = take_rounds(self.bench, self.budget, state, method.max_pairs, method.min_pairs,
                              Unit(lambda got, k: self._pair(got, m), launches=2, going=_going))
            finished = True
        finally:  # an interrupt leaves the cases still measuring incomplete, with the pairs they have
            for got in state.values():
                got.runs = got.paired.runs("candidate")
                if got.error and not got.paired.error:  # the lease's error, given every case still going
                    got.paired.error = got.error
                if finished and _going(got):
                    self.ab.conclude(got.paired, final=True, why=why or "the cap")
            self._measured.update(state)
        for got in state.values():  # decided: what got slower, from one profiled launch a side (ab.explain)
            self.ab.explain(got.paired, m)

    def _pair(self, got: Measured, m: Measurement) -> None:
        """One pair of the case (its readiness checks before the first); what goes wrong stops the case."""
        rec, case = got.paired, got.case
        if not rec.pairs and rec.half is None and not self._ready(got):
            return
        cm = self.bench.measurement(case, m)
        k = len(rec.pairs)
        turn = sequential.order(k)
        launches: dict[str, Launch] = {}
        seconds: list[float] = []
        try:
            for role in turn:
                run = launch(self.bench, case, m, f"p{k}-{role}", k, self.ab.method.max_pairs, seconds,
                             side=self.ab.sides[role], name=rec.name)
                if "frameworks" not in run.meta:  # a program the project did not write: its side's versions
                    run.meta["frameworks"] = self.ab.frameworks_of(role, case)
                one = summarize(case, cm, [run])
                launches[role] = rec.half = Launch(role, one.throughputs[0], run,
                                                   {metric: v[0] for metric, v in one.figures.items()})
            rec.half = None
            rec.pairs.append(Pair(k, turn[0], launches["reference"], launches["candidate"]))
            self.ab.conclude(rec, final=False)
            self.bench.live.said(pair_line(rec, self.ab.method.max_pairs))
        except (RunFailed, ClusterError) as exc:
            got.error = rec.error = str(exc)
        except (ValueError, KeyError) as exc:  # a run with no figure: summarize could not read one
            got.error = rec.error = f"{case.id}: a launch gave no throughput: {exc}"
        except Exception as exc:  # noqa: BLE001 - anything else stops this case alone, as in the rounds order
            got.error = rec.error = f"{case.id}: the launch raised {type(exc).__name__}: {exc}"
        finally:
            got.taken.append(statistics.fmean(seconds) if seconds else 0.0)  # a pair's launch, on average

    def _ready(self, got: Measured) -> bool:
        """The session's readiness check of the case, then each side's; False when the case cannot run."""
        if not ready_first(self.bench, got):
            got.paired.error = str(got.outcome or got.error)
            return False
        try:
            self.ab.check_sides(got.case)
        except (SideNotReady, ClusterError) as exc:
            got.error = got.paired.error = str(exc)
            return False
        return True


def _going(got: Measured) -> bool:
    return not got.stopped and got.paired.status in (None, "continue")


def pair_line(rec: PairedCase, cap: int) -> str:
    """A pair's line in a log: the case, the pair of the cap, the ratio so far and its interval, the verdict."""
    v = rec.verdict or {}
    ratio = f"candidate/reference {v['ratio']:.3f}" if v.get("ratio") is not None else "no ratio yet"
    interval = f", interval {v['low']:.3f}-{v['high']:.3f}" if v.get("low") is not None else ""
    return f"dlperf A/B {rec.name} pair {len(rec.pairs)} of at most {cap}: {ratio}{interval} ({v.get('verdict', '-')})"
