"""What a measuring order hands a test (``Measured``: a case's runs, or what stopped them), and which
tests take their case from the matrix."""
from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from .. import metrics
from ..specs import COMPILED, CaseSpec, Measurement


@dataclass
class Measured:
    """One case's launches: its runs and the error that stopped them, or the skip or fail its
    readiness check raised in rounds (raised again in its own test)."""

    case: CaseSpec
    runs: list = field(default_factory=list)
    taken: list[float] = field(default_factory=list)  # seconds of each launch
    error: str | None = None
    outcome: BaseException | None = None
    paired: Any = None  # an A/B session's pairs of the case (ab.pairs.PairedCase)

    @property
    def stopped(self) -> bool:
        """A launch or its readiness check stopped the case: it takes no more launches."""
        return self.error is not None or self.outcome is not None


def settled(got: Measured, m: Measurement) -> bool:
    """Whether a case's launches agree closely enough to stop (``Measurement.settle_launches``): that
    many ran and their throughputs' CV (the plain one: a single disturbed launch raises it, and the
    case goes on) is at most ``settle_cv``. A launch without a throughput settles nothing."""
    if not m.settle_launches or len(got.runs) < max(m.settle_launches, 2):
        return False
    try:
        xs = [metrics.PRIMARY.per_launch(r, got.case, m) for r in got.runs]
    except (ValueError, KeyError, TypeError):
        return False
    return statistics.stdev(xs) / statistics.fmean(xs) <= m.settle_cv


def going(got: Measured, m: Measurement) -> bool:
    """Whether a case takes another launch as far as its own launches say (the budget has its say
    besides): not stopped by an error, and not settled."""
    return not got.stopped and not settled(got, m)


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


def own_case(item: pytest.Item | None, case: CaseSpec) -> bool:
    """Whether the test measures its own matrix case (a test that builds another is measured on its own)."""
    return item is not None and matrix_case(item) == case


def cases_after(item: pytest.Item | None) -> list[str]:
    """The topologies of the dlperf tests the session runs after this one (what the budget keeps
    time for; "" for a test that does not take its case from the matrix)."""
    items = item.session.items if item is not None else []
    if item not in items:
        return []
    after = [it for it in items[items.index(item) + 1:] if "dlperf" in getattr(it, "fixturenames", ())]
    cases = [getattr(it, "callspec", None) and it.callspec.params.get("dlperf_case") for it in after]
    return [launch_class(c) if isinstance(c, CaseSpec) else "" for c in cases]


def launch_class(case: CaseSpec) -> str:
    """The launches the budget estimates a case's by: its topology's (``1n1g``), a compiled case's apart
    (``1n1g-compiled``): each of its launches compiles for tens of seconds on a CPU node, which would
    make every eager case of its topology look that dear."""
    return f"{case.topology.name}-{COMPILED}" if case.compiled else case.topology.name
