"""The measuring orders: how a session takes its cases' launches, behind one small interface.

``rounds`` (the default): the first matrix test launches every case still to run once a round, and
each test judges its own case's runs. ``case``: each test launches its case back to back. A case's
readiness check runs just before its first launch in either order. Each order is given a ``Bench``.
"""
from __future__ import annotations

from typing import Protocol

import pytest

from ..clusters.base import ClusterError
from ..specs import CaseSpec, Measurement
from .bench import Bench
from .launch import launch
from .measured import Measured, cases_after, cases_from, going, launch_class, own_case
from .rounds import Unit, take_rounds
from .runner import RunFailed


class MeasuringOrder(Protocol):
    """Takes a case's launches for the test that asks (``DLPerfSession.run``)."""

    def measure(self, case: CaseSpec, item: pytest.Item | None, m: Measurement) -> Measured:
        """The case's runs for this test (a readiness check's skip or fail may be raised, or returned as
        ``Measured.outcome`` to be raised in the case's own test)."""
        ...

    def unjudged(self) -> dict[str, Measured]:
        """Launches taken ahead for tests that never came to judge them (handed over once)."""
        ...


class CaseOrder:
    """``--dlperf-order case``: each test takes its case's launches back to back, while the budget
    keeps time for the cases after it (``Budget.another``)."""

    def __init__(self, bench: Bench) -> None:
        self.bench = bench

    def measure(self, case: CaseSpec, item: pytest.Item | None, m: Measurement) -> Measured:
        """The case's launches back to back: its runs, or the error that stopped them."""
        b = self.bench
        got = Measured(case)
        budget, after = b.budget(m), cases_after(item)
        started = budget.begin_case()
        try:
            with b.cluster().lease(what=case.id):
                b.ready(case)
                while going(got, m) and budget.another(got.taken, m.repeats, m.min_repeats, after,
                                                        launch_class(case)):
                    k = len(got.taken)
                    got.runs.append(launch(b, case, m, f"r{k}", k, m.repeats, got.taken))
        except (RunFailed, ClusterError) as exc:
            got.error = str(exc)
        finally:
            if got.runs:
                budget.end_case(b.name(case), started, got.taken, m.repeats, launch_class(case))
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

    def __init__(self, bench: Bench) -> None:
        self.bench = bench
        self.back_to_back = CaseOrder(bench)
        self._measured: dict[str, Measured] = {}  # case name -> launches taken in rounds, until its test runs
        self._rounds_taken = False  # rounds run once a session, from the first matrix test on

    def measure(self, case: CaseSpec, item: pytest.Item | None, m: Measurement) -> Measured:
        name = self.bench.name(case)
        if not self._rounds_taken and own_case(item, case) and item in item.session.items:
            self._rounds_taken = True
            self._measured = {self.bench.name(c): Measured(c) for c in cases_from(item, self.bench.name)}
            take_rounds(self.bench, self.bench.budget(m), self._measured, m.repeats, m.min_repeats,
                        Unit(lambda got, k: self._launch(got, k, m), going=lambda got: going(got, m)))
        got = self._measured.pop(name, None) if own_case(item, case) else None  # another test's run() measures anew
        return got if got is not None else self.back_to_back.measure(case, item, m)

    def unjudged(self) -> dict[str, Measured]:
        out, self._measured = self._measured, {}
        return out

    def _launch(self, got: Measured, k: int, m: Measurement) -> None:
        """One launch of a case in a round (its readiness check before the first); what went wrong stops it."""
        case = got.case
        if k == 0 and not ready_first(self.bench, got):
            return
        try:
            got.runs.append(launch(self.bench, case, m, f"r{k}", k, m.repeats, got.taken))
        except (RunFailed, ClusterError) as exc:
            got.error = str(exc)
        except Exception as exc:  # noqa: BLE001 - anything else stops this case alone, in its own test
            got.error = f"{case.id}: the launch raised {type(exc).__name__}: {exc}"


def ready_first(bench: Bench, got: Measured) -> bool:
    """The case's readiness check before its first unit in rounds: a skip or fail is kept for its own test
    (``Measured.outcome``), a cluster's error stops it; False where the case cannot run."""
    try:
        bench.ready(got.case)
    except (pytest.skip.Exception, pytest.fail.Exception) as exc:
        got.outcome = exc
        return False
    except ClusterError as exc:
        got.error = str(exc)
        return False
    return True


def make_order(bench: Bench, order: str) -> MeasuringOrder:
    """The session's measuring order, chosen once from ``--dlperf-order``."""
    return RoundsOrder(bench) if order == "rounds" else CaseOrder(bench)
