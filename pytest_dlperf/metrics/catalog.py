"""The metrics pytest-dlperf measures, one declaration each (``declaration.Metric``), in the order the
reports show them. Adding one: its declaration here and its computation (a node workload's meta
field, or a function of the case's runs); docs/metrics.md walks through peak memory as the example."""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from . import formulas
from .declaration import CASE_UNIT, DeviceKind, Direction, Kind, Metric, NotMeasured, ScalingInputs

if TYPE_CHECKING:
    from ..records import RunRecord
    from ..specs import CaseSpec, Measurement

CPU, GPU = DeviceKind.CPU, DeviceKind.GPU


def launch_throughput(run: RunRecord, case: CaseSpec, m: Measurement) -> float:
    """Global samples/s (tokens/s for a decoder) over the launch's steady window, from its step log, or
    what a parser read in a program's own output (``meta["parsed"]``)."""
    parsed = run.meta.get("parsed")
    if parsed is not None:
        return parsed["throughput"]
    warmup, iters = int(run.meta.get("warmup_iters", m.warmup_iters)), int(run.meta.get("iters", m.iters))
    return formulas.throughput(run.steps, warmup, iters)


def _node_figure(field: str, key: str, what: str) -> Any:
    """A figure the workload wrote in its meta line under ``field`` (``{key: value}``, or
    ``{"not_measured": why}``); NotMeasured says why there is none."""

    def of(run: RunRecord, case: CaseSpec, m: Measurement) -> float:
        got = run.meta.get(field)
        if isinstance(got, Mapping) and isinstance(got.get(key), (int, float)) and got[key] > 0:
            return float(got[key])
        if isinstance(got, Mapping) and got.get("not_measured"):
            raise NotMeasured(str(got["not_measured"]))
        source = "a program's own output" if run.meta.get("parsed") is not None else "its workload"
        raise NotMeasured(f"{source} reports no {what}")

    return of


def _speedup(s: ScalingInputs) -> float | None:
    from ..specs import Topology

    return formulas.speedup(s.median, s.median_at(Topology(1, 1)))


def _efficiency(s: ScalingInputs) -> float | None:
    return formulas.efficiency(s.derived.get("speedup"), s.topology.world_size)


def _multi_node(s: ScalingInputs) -> float | None:
    from ..specs import Topology

    return formulas.multi_node_efficiency(s.median, s.topology.nodes,
                                          s.median_at(Topology(1, s.topology.devices_per_node)))


def _mfu(result: Any) -> float | None:
    return result.utilisation.mfu if result.utilisation is not None else None


def _busbw(result: Any) -> float | None:
    comm = result.communication
    return comm.busbw if comm is not None else None


THROUGHPUT = Metric(
    "throughput", "throughput", CASE_UNIT, CASE_UNIT, Direction.HIGHER, Kind.LAUNCH, gated=True,
    description="global samples per second over the steady window (tokens per second for a decoder)",
    tolerances={CPU: 0.05, GPU: 0.03}, per_launch=launch_throughput, paced=True, stored_as="throughputs",
    option="--dlperf-tolerance", marker="tolerance", junit="dlperf_samples_per_s", digits=".2f")
SPEEDUP = Metric(
    "speedup", "speedup", "speedup", "x", Direction.HIGHER, Kind.SCALING, gated=True,
    description="median throughput / its group's 1n1g median",
    tolerances={CPU: 0.15, GPU: 0.03}, derive=_speedup, stored_as="speedup", digits=".2f", min_devices=2)
EFFICIENCY = Metric(
    "efficiency", "scaling efficiency", "efficiency", "", Direction.HIGHER, Kind.SCALING, gated=True,
    description="speedup / devices (AIACC's 并行效率)",
    tolerances={CPU: 0.15, GPU: 0.03}, derive=_efficiency, stored_as="efficiency", digits=".2f", min_devices=2)
MULTI_NODE_EFFICIENCY = Metric(
    "multi_node_efficiency", "multi-node efficiency", "multi-node", "", Direction.HIGHER, Kind.SCALING,
    gated=False, description="throughput of k nodes / (k x one full node's)", derive=_multi_node, digits=".2f",
    min_devices=2)
MFU = Metric(
    "mfu", "model FLOPs utilisation", "MFU", "", Direction.HIGHER, Kind.CASE, gated=False,
    description="FLOPs done per second / the devices' peak (docs/metrics.md, MFU)", per_case=_mfu, digits=".1%")
BUSBW = Metric(
    "busbw", "all-reduce bus bandwidth", "all-reduce busbw", "GB/s", Direction.HIGHER, Kind.CASE, gated=False,
    description="nccl-tests' bus bandwidth of an all-reduce at the gradient bucket size", per_case=_busbw,
    scale=1e9, digits=".3g", min_devices=2, in_table=False, stored_unit="bytes/s")
PEAK_MEMORY = Metric(
    "peak_memory", "peak memory", "peak GiB", "GiB", Direction.LOWER, Kind.LAUNCH, gated=True,
    description="the largest rank's peak memory over the window: GPU allocated by torch, CPU resident",
    tolerances={CPU: 0.10, GPU: 0.02}, per_launch=_node_figure("memory", "peak_bytes", "peak memory"),
    scale=2 ** 30, digits=".3g", stored_unit="bytes")
TIME_TO_FIRST_STEP = Metric(
    "time_to_first_step", "time to first step", "1st step s", "s", Direction.LOWER, Kind.LAUNCH, gated=True,
    description="from the launch to the end of the first training step on the slowest rank",
    tolerances={CPU: 0.90, GPU: 0.20}, per_launch=_node_figure("first_step", "seconds", "time to first step"),
    digits=".3g", cv_bound=0.60)

METRICS: tuple[Metric, ...] = (THROUGHPUT, SPEEDUP, EFFICIENCY, MULTI_NODE_EFFICIENCY, MFU, BUSBW, PEAK_MEMORY,
                               TIME_TO_FIRST_STEP)
PRIMARY = THROUGHPUT  # what speedup, MFU, the pace probe and A/B's stopping rule are taken from

__all__ = ["METRICS", "PRIMARY", "NotMeasured"]
