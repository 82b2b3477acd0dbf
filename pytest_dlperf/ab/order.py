"""``--dlperf-candidate``: the A/B measuring order. Rounds over the cases as the rounds order
takes them (so a session's cases share the host's hour); in each round every case not yet decided
takes one pair, its two launches adjacent in time, reference-first and candidate-first in a balanced
order (ABBA BAAB ...); after each pair the sequential test looks (``sequential``), and a decided
case leaves the rounds. A test that builds a case of its own takes its pairs back to back."""
from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

import pytest

from ..budget import Budget
from ..clusters.base import ClusterError
from ..results import summarize
from ..runner import RunFailed, run_case
from ..session.orders import Measured, cases_from, matrix_case
from ..specs import CaseSpec, Measurement
from . import sequential
from .pairs import Launch, Pair
from .preflight import SideNotReady

if TYPE_CHECKING:
    from ..session.hub import DLPerfSession
    from .feature import ABSession


class PairedOrder:
    """Takes each case's pairs until its sequential test decides, the cap, or the budget."""

    def __init__(self, session: DLPerfSession, ab: ABSession) -> None:
        self.session, self.ab = session, ab
        self._measured: dict[str, Measured] = {}
        self._rounds_taken = False
        self.budget = Budget(session.options.budget or 0.0)  # none unless --dlperf-budget: the cap bounds it

    def measure(self, case: CaseSpec, item: pytest.Item | None, m: Measurement) -> Measured:
        s = self.session
        name = s.case_name(case)
        own = item is not None and matrix_case(item) == case
        if own and not self._rounds_taken and s.options.order == "rounds" and item in item.session.items:
            self._rounds_taken = True
            self._take(cases_from(item, s.case_name), m)
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
        s, method = self.session, self.ab.method
        state = {s.case_name(c): Measured(c, paired=self.ab.record(c, s.case_name(c))) for c in cases}
        started = self.budget.begin_case()
        done, why_stopped, finished = 0, "the cap", False
        try:
            with s.cluster.lease():
                while True:
                    going = [g for g in state.values() if _going(g)]
                    costs = [statistics.fmean(g.taken) * 2 for g in going if g.taken]
                    if not going or done >= method.max_pairs:
                        break
                    if not self.budget.another_round(done, method.max_pairs, method.min_pairs, costs):
                        why_stopped = "the budget"
                        break
                    for got in going:
                        if got.taken and not self.budget.launch_in_round(done, method.min_pairs,
                                                                         2 * statistics.fmean(got.taken)):
                            why_stopped = "the budget"
                            continue
                        self._pair(got, m, first=not got.paired.pairs and got.paired.half is None)
                    done += 1
            finished = True
        except ClusterError as exc:
            finished = True
            for got in state.values():
                if _going(got):
                    got.error = got.paired.error = str(exc)
        finally:  # an interrupt leaves the cases still measuring incomplete, with the pairs they have
            for got in state.values():
                got.runs = got.paired.runs("candidate")
                if finished and _going(got):
                    self.ab.conclude(got.paired, final=True, why=why_stopped)
            self.budget.end_rounds(started, [(n, g.taken, g.case.topology.name) for n, g in state.items() if g.taken],
                                   method.max_pairs)
            self._measured.update(state)

    def _pair(self, got: Measured, m: Measurement, first: bool) -> None:
        """One pair of the case (its preflights before the first); what goes wrong stops the case."""
        s, rec = self.session, got.paired
        case = got.case
        if first and not self._preflight(got):
            return
        cm = s.case_measurement(case, m)
        k = len(rec.pairs)
        turn = sequential.order(k)
        launches: dict[str, Launch] = {}
        t0 = self.budget.clock()
        try:
            for role in turn:
                show = (lambda info, k=k: s.live.update(rec.name, k, self.ab.method.max_pairs, info, case.unit)) \
                    if s.live.enabled else None
                run = run_case(s.cluster, s.launcher(case), case, cm,
                               s.options.report_dir / "runs" / rec.name / f"p{k}-{role}", k, on_progress=show,
                               side=self.ab.sides[role])
                if "frameworks" not in run.meta:  # a program the project did not write: its side's versions
                    run.meta["frameworks"] = self.ab.frameworks_of(role, case)
                got_one = summarize(case, cm, [run])
                launches[role] = rec.half = Launch(role, got_one.throughputs[0], run,
                                                   {name: v[0] for name, v in got_one.figures.items()})
            rec.half = None
            rec.pairs.append(Pair(k, turn[0], launches["reference"], launches["candidate"]))
            self.ab.conclude(rec, final=False)
        except (RunFailed, ClusterError) as exc:
            got.error = rec.error = str(exc)
        except (ValueError, KeyError) as exc:  # a run with no figure: summarize could not read one
            got.error = rec.error = f"{case.id}: a launch gave no throughput: {exc}"
        except Exception as exc:  # noqa: BLE001 - anything else stops this case alone, as in the rounds order
            got.error = rec.error = f"{case.id}: the launch raised {type(exc).__name__}: {exc}"
        finally:
            s.live.clear()
            got.taken.append((self.budget.clock() - t0) / 2)

    def _preflight(self, got: Measured) -> bool:
        """The session's preflight of the case, then each side's; False when the case cannot run."""
        s = self.session
        try:
            s.preflight.run(got.case)
            self.ab.check_sides(got.case)
        except (pytest.skip.Exception, pytest.fail.Exception) as exc:
            got.outcome = exc
            got.paired.error = str(exc)
            return False
        except (ClusterError, SideNotReady) as exc:
            got.error = got.paired.error = str(exc)
            return False
        return True


def _going(got: Measured) -> bool:
    return got.error is None and got.outcome is None and got.paired.status in (None, "continue")
