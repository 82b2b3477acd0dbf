"""The A/B session's mode (``session.mode.Mode``): the pairs order, both sides' commands in the dry-run,
the paired verdict in each case's test, the ``ab`` section of the report and its terminal table."""
from __future__ import annotations

import pytest

from ..envs import make as envs
from ..measure import Bench, Measured, MeasuringOrder
from ..measure.runner import SideLike
from ..options.core import RunOptions
from ..reporting import ab as report
from ..results.cases import CaseResult
from ..results.verdict import Judgement, Outcome
from ..software.identity import Software
from ..specs import Measurement
from .feature import ABSession
from .interpreter import SideNotReady
from .order import PairedOrder
from .sides import Side


class ABMode:
    """An A/B session: no pace probe unless asked (its pairs correct for the host, and the probe would
    share each launch's core: docs/ab.md); a missing baseline skips nothing."""

    probes_by_default = False
    records_modes = False  # its pairs are judged by their own sequential rule (ab/sequential.py)
    confirm_pairs = 0

    def __init__(self, ab: ABSession) -> None:
        self.ab = ab

    def order(self, bench: Bench, options: RunOptions) -> MeasuringOrder:
        return PairedOrder(bench, self.ab, options.order == "rounds", options.budget or 0.0)

    def settle(self, got: Measured, item: pytest.Item | None, result: CaseResult, judgement: Judgement,
               software: Software | None, m: Measurement) -> Judgement:
        return judgement  # its own pairs decide (``conclude``)

    def dry_run_sides(self, name: str) -> list[tuple[str, SideLike | None]]:
        try:
            return [(f"{name} [{side.label}{f' files at {side.commit[:12]}' if side.commit else ''}"
                     f"{self._made_first(side)}]", side) for side in self.ab.sides.values()]
        except SideNotReady as exc:
            pytest.fail(str(exc), pytrace=False)

    def _made_first(self, side: Side) -> str:
        """A pip= side's environment, made on each node before the first launch (its python then runs them)."""
        if side.spec.recorded:
            return ("; the case's recorded software, found from its baseline before its first launch (python=, pip=, "
                    "hide=, env=, unset= words), runs the commands below in its place")
        if not side.spec.makes_environment:
            return ""
        made = envs.dry_run(side.requirements, side.spec.hide, self.ab.options.env)
        return (f"; its environment made first on each node: {made}"
                ", whose python then runs the commands below")

    def launches_text(self) -> str | None:
        return self.ab.launches_text()

    def conclude(self, got: Measured, item: pytest.Item | None, result: CaseResult, judgement: Judgement) -> None:
        if item is not None:  # JUnit properties (--junitxml), as record_property writes them
            item.user_properties.extend(got.paired.junit_properties())
        fails, said = self.ab.judge(got.paired)
        if judgement.outcome is Outcome.FAIL:
            pytest.fail(f"{judgement.message}\n{said}", pytrace=False)
        if fails:
            pytest.fail(said, pytrace=False)

    def has_records(self) -> bool:
        return bool(self.ab.records)

    def section(self) -> dict | None:
        return self.ab.section()

    def terminal(self) -> str:
        return report.terminal(self.ab.section()) if self.ab.records else ""

    def close(self) -> None:
        self.ab.close()
