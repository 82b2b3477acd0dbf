"""What differs between a session gated against stored baselines and an A/B session (``--dlperf-candidate``,
``ab.mode``): the measuring order, the dry-run's sides, what a judged case's test does, and what the
report and terminal get. The session asks its mode, and never which kind it is."""
from __future__ import annotations

from typing import Protocol

import pytest

from ..measure import Bench, Measured, MeasuringOrder, make_order
from ..measure.runner import SideLike
from ..options.core import RunOptions
from ..results.cases import CaseResult
from ..results.verdict import Judgement, Outcome
from ..software.identity import Software
from ..specs import Measurement
from .confirm import Confirmation


class Mode(Protocol):
    """A session's mode (``Stored``, or ``ab.mode.ABMode``)."""

    probes_by_default: bool  # --dlperf-pace-probe's default (auto) probes a case as its baseline was recorded
    records_modes: bool  # a recording whose launches fall into modes takes more (--dlperf-confirm)
    confirm_pairs: int  # the most pairs a screen failure takes side by side (0: none; A/B: its own pairs)

    def order(self, bench: Bench, options: RunOptions) -> MeasuringOrder: ...

    def settle(self, got: Measured, item: pytest.Item | None, result: CaseResult, judgement: Judgement,
               software: Software | None, m: Measurement) -> Judgement: ...

    def dry_run_sides(self, name: str) -> list[tuple[str, SideLike | None]]: ...

    def launches_text(self) -> str | None: ...

    def conclude(self, got: Measured, item: pytest.Item | None, result: CaseResult, judgement: Judgement) -> None: ...

    def has_records(self) -> bool: ...

    def section(self) -> dict | None: ...

    def terminal(self) -> str: ...

    def close(self) -> None: ...


class Stored:
    """Gated against the stored baselines: the session's order; the gate screens, a screen failure is
    attributed and confirmed side by side (``confirm``), and the outcome is the test's."""

    probes_by_default = True
    records_modes = True

    def __init__(self, confirmation: Confirmation) -> None:
        self.confirmation = confirmation
        self.confirm_pairs = confirmation.options.max_pairs

    def order(self, bench: Bench, options: RunOptions) -> MeasuringOrder:
        return make_order(bench, options.order)

    def settle(self, got: Measured, item: pytest.Item | None, result: CaseResult, judgement: Judgement,
               software: Software | None, m: Measurement) -> Judgement:
        return self.confirmation.settle(got, item, result, judgement, software, m)

    def dry_run_sides(self, name: str) -> list[tuple[str, SideLike | None]]:
        return [(name, None)]

    def launches_text(self) -> str | None:
        return None  # the session's own

    def conclude(self, got: Measured, item: pytest.Item | None, result: CaseResult, judgement: Judgement) -> None:
        if judgement.outcome is Outcome.FAIL:
            pytest.fail(judgement.message, pytrace=False)
        if judgement.outcome is Outcome.SKIP:
            pytest.skip(judgement.message)

    def has_records(self) -> bool:
        return False

    def section(self) -> dict | None:
        return None

    def terminal(self) -> str:
        return ""

    def close(self) -> None:
        self.confirmation.side_by_side.close()
