"""The case tables' metric columns, read from the metric declarations: which metrics a group's rows
show, a row's cell, and the lines under a table saying what a row did not measure and why, and what
a row's figures flag (host-bound)."""
from __future__ import annotations

from collections.abc import Sequence

from .. import metrics
from ..metrics import Metric
from ..results.cases import CaseResult


def shown(rows: Sequence[CaseResult]) -> list[Metric]:
    """The declared table metrics that some row has a figure of, or says it did not measure."""
    return [m for m in metrics.declared()
            if m.in_table and any(r.value(m.name) is not None or m.name in r.absent for r in rows)]


def cell(r: CaseResult, m: Metric) -> str:
    """The row's figure without its unit (the header has it); "-" where there is none."""
    return m.show(r.value(m.name), r.case.unit, unit=False)


def not_measured(rows: Sequence[CaseResult]) -> list[str]:
    """``peak memory not measured (1n1g, 2n1g): <why>``: each metric and reason once, with its rows."""
    said: dict[tuple[str, str], list[str]] = {}
    for r in rows:
        for name, why in r.absent.items():
            said.setdefault((name, why), []).append(r.case.topology.name)
    return [f"{metrics.get(name).title} not measured ({', '.join(where)}): {why}" for (name, why), where in said.items()]


def flagged(rows: Sequence[CaseResult]) -> list[str]:
    """``1n1g: host-bound: this figure follows the CPU's dispatch speed (GPU busy share 62.0%, below 90.0%)``:
    what each row's figures flag (the metric declarations' ``flag``)."""
    return [f"{r.case.topology.name}: {text}" for r in rows for text in r.flags().values()]
