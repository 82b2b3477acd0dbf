"""The measuring orders: how a session takes its cases' launches, behind one small interface.

``rounds`` (the default): the first matrix test launches every case still to run once a round, and
each test judges its own case's runs. ``case``: each test launches its case back to back. A case's
preflight (``CasePreflight``) runs just before its first launch in either order.
"""
from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from ..clusters.base import ClusterError
from ..runner import RunFailed, run_case
from ..specs import CaseSpec, Measurement

if TYPE_CHECKING:
    from .hub import DLPerfSession


@dataclass
class Measured:
    """One case's launches: its runs and the error that stopped them, or the skip or fail its
    preflight raised in rounds (raised again in its own test)."""

    case: CaseSpec
    runs: list = field(default_factory=list)
    taken: list[float] = field(default_factory=list)  # seconds of each launch
    error: str | None = None
    outcome: BaseException | None = None
    paired: Any = None  # an A/B session's pairs of the case (ab.pairs.PairedCase)


class MeasuringOrder(Protocol):
    """Takes a case's launches for the test that asks (``DLPerfSession.run``)."""

    def measure(self, case: CaseSpec, item: pytest.Item | None, m: Measurement) -> Measured:
        """The case's runs for this test (a preflight's skip or fail may be raised, or returned as
        ``Measured.outcome`` to be raised in the case's own test)."""
        ...

    def unjudged(self) -> dict[str, Measured]:
        """Launches taken ahead for tests that never came to judge them (handed over once)."""
        ...


def matrix_case(item: pytest.Item) -> CaseSpec | None:
    """The case a test takes from the matrix (its ``dlperf_case`` parameter), if it is a dlperf test."""
    if "dlperf" not in getattr(item, "fixturenames", ()):
        return None
    case = getattr(item, "callspec", None) and item.callspec.params.get("dlperf_case")
    return case if isinstance(case, CaseSpec) else None


def skipped(item: pytest.Item) -> bool:
    """A test marked skip, or skipif on a plain true condition: the rounds do not measure its case."""
    if item.get_closest_marker("skip") is not None:
        return True
    return any(m.args and all(isinstance(a, bool) and a for a in m.args) for m in item.iter_markers("skipif"))


def cases_from(item: pytest.Item, name: Callable[[CaseSpec], str]) -> list[CaseSpec]:
    """The matrix cases of the session's tests from ``item`` on (not skipped), each once, in order."""
    items = item.session.items
    found = (matrix_case(it) for it in items[items.index(item):] if not skipped(it))
    return list({name(c): c for c in found if c is not None}.values())


class CaseOrder:
    """``--dlperf-order case``: each test takes its case's launches back to back."""

    def __init__(self, session: DLPerfSession) -> None:
        self.session = session

    def measure(self, case: CaseSpec, item: pytest.Item | None, m: Measurement) -> Measured:
        """The case's launches back to back: its runs, or the error that stopped them."""
        s = self.session
        name = s.case_name(case)
        case_dir = s.options.report_dir / "runs" / name
        got = Measured(case)
        budget, after = s.budget(m), s.cases_after(item)
        started = budget.begin_case()
        try:
            with s.cluster.lease():
                s.preflight.run(case)
                while budget.another(got.taken, m.repeats, m.min_repeats, after, case.topology.name):
                    rep, t0 = len(got.taken), budget.clock()
                    show = ((lambda info, rep=rep: s.live.update(name, rep, m.repeats, info, case.unit))
                            if s.live.enabled else None)
                    try:
                        got.runs.append(run_case(s.cluster, s.launcher(case), case, s.case_measurement(case, m),
                                                 case_dir / f"r{rep}", rep, on_progress=show))
                    finally:
                        s.live.clear()
                        got.taken.append(budget.clock() - t0)
        except (RunFailed, ClusterError) as exc:
            got.error = str(exc)
        finally:
            if got.runs:
                budget.end_case(name, started, got.taken, m.repeats, case.topology.name)
        return got

    def unjudged(self) -> dict[str, Measured]:
        return {}


class RoundsOrder:
    """``--dlperf-order rounds``: the first matrix test launches every matrix case still to run in
    this session once per round, this test's first, for as many rounds as the repeats (or the
    budget) allow, and keeps each case's runs for its own test to judge.

    Why: on a shared VM the host's speed drifts over minutes, and a case's launches back to back
    share one spell, so their agreement says nothing about the next sitting; measured on
    gate_power's pools (README), sessions and baselines spread in time raised fewer false alarms.
    A test that builds a case of its own, or comes after the rounds, is measured back to back."""

    def __init__(self, session: DLPerfSession) -> None:
        self.session = session
        self.back_to_back = CaseOrder(session)
        self._measured: dict[str, Measured] = {}  # case name -> launches taken in rounds, until its test runs
        self._rounds_taken = False  # rounds run once a session, from the first matrix test on

    def measure(self, case: CaseSpec, item: pytest.Item | None, m: Measurement) -> Measured:
        name = self.session.case_name(case)
        if self._starts_rounds(case, item) and name not in self._measured:
            self._take_rounds(item, m)
        own = item is not None and matrix_case(item) == case  # another test's run() measures anew
        got = self._measured.pop(name, None) if own else None
        return got if got is not None else self.back_to_back.measure(case, item, m)

    def unjudged(self) -> dict[str, Measured]:
        out, self._measured = self._measured, {}
        return out

    def _starts_rounds(self, case: CaseSpec, item: pytest.Item | None) -> bool:
        """Whether this test starts the session's rounds: none ran yet, and the test measures its
        own matrix case (a test that builds another case is measured on its own)."""
        return (not self._rounds_taken and item is not None
                and item in item.session.items and matrix_case(item) == case)

    def _take_rounds(self, item: pytest.Item, m: Measurement) -> None:
        """Launch every matrix case from this test on once a round, while the budget allows."""
        s = self.session
        self._rounds_taken = True
        cases = cases_from(item, s.case_name)
        budget = s.budget(m)
        started = budget.begin_case()
        state = {s.case_name(c): Measured(c) for c in cases}
        done = 0
        try:
            with s.cluster.lease():
                while True:
                    going = [c for c in cases if state[s.case_name(c)].error is None
                             and state[s.case_name(c)].outcome is None]
                    costs = [statistics.fmean(state[s.case_name(c)].taken) for c in going
                             if state[s.case_name(c)].taken]
                    if not going or not budget.another_round(done, m.repeats, m.min_repeats, costs):
                        break
                    short = False  # a case that did not fit: this round is the last
                    for case in going:
                        got = state[s.case_name(case)]
                        if got.taken and not budget.launch_in_round(done, m.min_repeats, statistics.fmean(got.taken)):
                            short = True
                            continue
                        self._launch(case, got, done, m, first=done == 0)
                    done += 1
                    if short:
                        break
        except ClusterError as exc:  # the lease itself: every case not yet stopped says why
            for got in state.values():
                if got.error is None and got.outcome is None:
                    got.error = str(exc)
        finally:
            ran = [(name, got.taken, c.topology.name) for (name, got), c in zip(state.items(), cases) if got.runs]
            if ran:
                budget.end_rounds(started, ran, m.repeats)
            self._measured.update(state)

    def _launch(self, case: CaseSpec, got: Measured, rep: int, m: Measurement, first: bool) -> None:
        """One launch of a case in a round (its preflight before the first); what went wrong stops it."""
        s = self.session
        name = s.case_name(case)
        if first:
            try:
                s.preflight.run(case)
            except (pytest.skip.Exception, pytest.fail.Exception) as exc:
                got.outcome = exc
                return
            except ClusterError as exc:
                got.error = str(exc)
                return
        show = (lambda info: s.live.update(name, rep, m.repeats, info, case.unit)) if s.live.enabled else None
        t0 = s.budget(m).clock()
        try:
            got.runs.append(run_case(s.cluster, s.launcher(case), case, s.case_measurement(case, m),
                                     s.options.report_dir / "runs" / name / f"r{rep}", rep, on_progress=show))
        except (RunFailed, ClusterError) as exc:
            got.error = str(exc)
        except Exception as exc:  # noqa: BLE001 - anything else stops this case alone, in its own test
            got.error = f"{case.id}: the launch raised {type(exc).__name__}: {exc}"
        finally:
            s.live.clear()
            got.taken.append(s.budget(m).clock() - t0)


def make_order(session: DLPerfSession, order: str) -> MeasuringOrder:
    """The session's measuring order, chosen once from ``--dlperf-order``."""
    return RoundsOrder(session) if order == "rounds" else CaseOrder(session)
