"""Metrics: each declared once (``catalog``), with the field's formulas (``formulas``).

Read them through this module: ``declared()`` in report order, ``get(name)``, ``gated()``; a
declaration says its unit, direction, kind, default tolerances and how a case's figure is taken.
"""
from __future__ import annotations

from .catalog import (BUSBW, BUSY_SHARE, COMPILE_TIME, COMPILED_OVER_EAGER, DYNAMO_COMPILE_TIME, EFFICIENCY,
                      ENERGY_PER_SAMPLE, GRAPH_BREAKS, HOST_BOUND_BELOW, METRICS, MFU, MULTI_NODE_EFFICIENCY,
                      PEAK_MEMORY, PRIMARY, RECOMPILES, SPEEDUP, THROUGHPUT, TIME_TO_FIRST_STEP)
from .declaration import (CASE_UNIT, DeviceKind, Direction, Flag, Judging, Kind, Metric, NotApplicable, NotMeasured,
                          Rule, ScalingInputs, item_of)
from .formulas import (PERCENTILES, Step, acspeed_line, center, efficiency, multi_node_efficiency, percentiles,
                       speedup, steady_window, step_times, throughput)

__all__ = ["BUSBW", "BUSY_SHARE", "CASE_UNIT", "COMPILE_TIME", "COMPILED_OVER_EAGER", "DYNAMO_COMPILE_TIME",
           "EFFICIENCY", "ENERGY_PER_SAMPLE", "GRAPH_BREAKS", "HOST_BOUND_BELOW", "METRICS", "MFU",
           "MULTI_NODE_EFFICIENCY", "PEAK_MEMORY", "PERCENTILES", "PRIMARY", "RECOMPILES", "SPEEDUP", "THROUGHPUT",
           "TIME_TO_FIRST_STEP", "DeviceKind", "Direction", "Flag", "Judging", "Kind", "Metric", "NotApplicable", "NotMeasured",
           "Rule", "ScalingInputs", "Step", "acspeed_line", "center", "declared", "efficiency", "gated", "get",
           "item_of", "kept_as_figure", "kept_by_run", "multi_node_efficiency", "names", "of_kind", "percentiles",
           "speedup", "steady_window", "step_times", "throughput", "tolerated"]

def declared() -> tuple[Metric, ...]:
    """Every metric, in the order the reports show them."""
    return METRICS


def get(name: str) -> Metric:
    """The declaration of ``name``; ValueError naming the known ones."""
    for m in METRICS:
        if m.name == name:
            return m
    raise ValueError(f"unknown metric {name!r}; expected one of {', '.join(names())}")


def gated() -> tuple[Metric, ...]:
    """The metrics the gate judges, in report order."""
    return tuple(m for m in METRICS if m.gated)


def tolerated() -> tuple[Metric, ...]:
    """The gated metrics judged on a tolerance (each has its option, marker keyword and baseline
    field): every gated metric but a count (``Rule.COUNT``)."""
    return tuple(m for m in METRICS if m.tolerated)


def kept_by_run() -> tuple[Metric, ...]:
    """The gated metrics a baseline entry keeps run by run (throughput, peak memory, ...), in report order."""
    return tuple(m for m in METRICS if m.gated and m.per_run)


def kept_as_figure() -> tuple[Metric, ...]:
    """The gated metrics a baseline entry keeps as one figure a case (speedup, efficiency), in report order."""
    return tuple(m for m in METRICS if m.gated and not m.per_run)


def of_kind(kind: Kind, gated_only: bool = False) -> tuple[Metric, ...]:
    return tuple(m for m in METRICS if m.kind is kind and (m.gated or not gated_only))


def names(metrics: tuple[Metric, ...] | None = None) -> tuple[str, ...]:
    return tuple(m.name for m in (METRICS if metrics is None else metrics))
