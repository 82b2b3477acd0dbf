"""A case's key figures as JUnit properties (``--junitxml``), as ``record_property`` writes them: one
per declared metric the case has (under the declaration's property name), what its figures flag, and its
verdicts."""
from __future__ import annotations

from .. import metrics
from ..results.cases import CaseResult


def junit_properties(result: CaseResult) -> list[tuple[str, object]]:
    """The case's key figures, one JUnit property each."""
    c = result.case
    props: list[tuple[str, object]] = [
        ("dlperf_backend", c.backend), ("dlperf_case", c.id), ("dlperf_topology", c.topology.name),
        ("dlperf_repeats", len(result.throughputs)),
    ] + [(f"dlperf_step_{p}_s", round(result.step_time[p], 6)) for p in ("p50", "p95") if p in result.step_time]
    for m in metrics.declared():
        value = result.value(m.name)
        if value is not None:
            props.append((m.junit_name, round(value, 6) if abs(value) < 1e6 else round(value)))
    for name in result.flags():  # what a figure flags: dlperf_busy_share_flag = host-bound
        m = metrics.get(name)
        props.append((f"{m.junit_name}_flag", m.flag.label if m.flag else ""))
    for metric, v in (result.verdict or {}).items():
        props.append((f"dlperf_verdict_{metric}", v.status.value))
    return props
