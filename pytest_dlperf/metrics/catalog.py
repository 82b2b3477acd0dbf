"""The metrics pytest-dlperf measures, one declaration each (``declaration.Metric``), in the order the
reports show them. Adding one: its declaration here and its computation (a node workload's meta
field, or a function of the case's runs); docs/metrics.md walks through peak memory as the example."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from . import formulas
from .declaration import (CASE_UNIT, ITEM, DeviceKind, Direction, Flag, Kind, Metric, NotApplicable, NotMeasured,
                          Rule, ScalingInputs)

if TYPE_CHECKING:
    from ..results.records import RunRecord
    from ..specs import CaseSpec, Measurement

CPU, GPU = DeviceKind.CPU, DeviceKind.GPU


def launch_throughput(run: RunRecord, case: CaseSpec, m: Measurement) -> float:
    """Global samples/s (tokens/s for a decoder) over the launch's steady window, from its step log, or
    what a parser read in a program's own output (``meta["parsed"]``)."""
    parsed = run.meta.get("parsed")
    if parsed is not None:
        return parsed["throughput"]
    return formulas.throughput(run.steps, *_window_lengths(run, m))


def _window_lengths(run: RunRecord, m: Measurement) -> tuple[int, int]:
    """(warm-up steps, window steps) as the workload ran them (its meta line), else as asked."""
    return int(run.meta.get("warmup_iters", m.warmup_iters)), int(run.meta.get("iters", m.iters))


def _figure_in(got: object, key: str) -> float | None:
    """``got[key]`` where it is a positive number; NotMeasured where ``got`` says why there is none
    (``{"not_measured": why}``); else None."""
    if isinstance(got, Mapping) and isinstance(got.get(key), (int, float)) and got[key] > 0:
        return float(got[key])
    if isinstance(got, Mapping) and got.get("not_measured"):
        raise NotMeasured(str(got["not_measured"]))
    return None


def _node_figure(field: str, key: str, what: str, absent: str = "") -> Any:
    """A figure the workload wrote in its meta line under ``field`` (``{key: value}``, or
    ``{"not_measured": why}``); NotMeasured says why there is none (``absent``: what a launch without the
    record did, where that is more than "reports no <what>")."""

    def of(run: RunRecord, case: CaseSpec, m: Measurement) -> float:
        got = _figure_in(run.meta.get(field), key)
        if got is not None:
            return got
        source = "a program's own output" if run.meta.get("parsed") is not None else "its workload"
        raise NotMeasured(f"{source} {absent or f'reports no {what}'}")

    return of


def _watched(part: str, key: str) -> Any:
    """A figure of the GPU watcher's over the window (``RunRecord.gpu[part][key]``, gpuwatch.py);
    NotMeasured says why there is none, NotApplicable where no GPU was there to watch."""

    def of(run: RunRecord, case: CaseSpec, m: Measurement) -> float:
        if not run.gpu:
            raise NotApplicable("no GPU beside the launch")
        got = _figure_in(run.gpu.get(part), key)
        if got is None:
            raise NotMeasured(f"the GPU watcher reports no {part}")
        return got

    return of


# Why a launch has no checkpoint figures, where its workload wrote none: the harness asks for one unless told not to.
_NO_CHECKPOINT = ("took no checkpoint (--dlperf-checkpoint off; a profiled launch; a multi-node case on nodes that "
                  "share no filesystem, without --dlperf-checkpoint-dir; or an engine that does not checkpoint)")


def _checkpointed(runs: Sequence[RunRecord], case: CaseSpec) -> tuple[list[RunRecord], str]:
    """A case's checkpoint figures come from its launches where every one took a checkpoint (or none did: each then
    says why); where ``--dlperf-checkpoint auto`` stopped after the first, from none."""
    took = [r for r in runs if isinstance(r.meta.get("checkpoint"), Mapping)]
    if not took or len(took) == len(runs):
        return list(runs), ""
    return [], (f"{len(took)} of {len(runs)} launches took a checkpoint: --dlperf-checkpoint auto took none after the "
                "first, whose checkpoint cost over a tenth of its launch (--dlperf-checkpoint on: every launch)")


def _compiled(case: CaseSpec) -> bool:
    return case.compiled


def _record(run: RunRecord, field: str, what: str) -> Mapping:
    """The launch's ``field`` meta record (its workload writes it); NotMeasured where it has none, or says why."""
    got = run.meta.get(field)
    if not isinstance(got, Mapping):
        raise NotMeasured(f"its workload reports nothing of {what}")
    if got.get("not_measured"):
        raise NotMeasured(str(got["not_measured"]))
    return got


def _compile_record(run: RunRecord) -> Mapping:
    """The launch's ``compile`` meta (a compiled case's workload writes it)."""
    return _record(run, "compile", "torch.compile")


def _cold_launches(runs: Sequence[RunRecord], case: CaseSpec) -> tuple[list[RunRecord], str]:
    """A compiled case's launches that compiled from an empty cache (an eager case's: every one): one that
    started from a filled cache did not compile, so its start-up and the memory it left are not the case's
    (``measure.compile_caches``); where none did, why."""
    if not case.compiled:
        return list(runs), ""
    records = [r.meta.get("compile") for r in runs]
    caches = [(got.get("cache") or {}) if isinstance(got, Mapping) else {} for got in records]
    cold = [r for r, c in zip(runs, caches) if c.get("cold", True)]
    filled = next((c.get("dir") for c in caches if c.get("dir")), "")
    return cold, "" if cold else (f"every launch compiled from a filled cache ({filled}): it is taken from the "
                                  "launches that compile from an empty one")


def _compile_time(run: RunRecord, case: CaseSpec, m: Measurement) -> float:
    """The slowest rank's first steps up to the last compilation, in a launch that compiled cold: a
    launch that found its cache filled (--dlperf-compile-cache) compiled from it, which is another figure."""
    got = _compile_record(run)
    if not (got.get("cache") or {}).get("cold", True):
        raise NotMeasured(f"compiled from a filled cache ({got['cache'].get('dir')}): compile time is measured "
                          "from an empty one")
    if got.get("window_compiles"):
        raise NotMeasured("a step of the measured window compiled: its throughput carries a compile; "
                          "give the warm-up more steps (--dlperf-warmup-iters)")
    if not isinstance(got.get("seconds"), (int, float)) or got["seconds"] <= 0:
        raise NotMeasured("no step compiled")
    return float(got["seconds"])


def _dynamo_time(run: RunRecord, case: CaseSpec, m: Measurement) -> float:
    got = _compile_record(run)
    if not isinstance(got.get("dynamo_seconds"), (int, float)) or got["dynamo_seconds"] <= 0:
        raise NotMeasured("dynamo accounted no compile time")
    return float(got["dynamo_seconds"])


def _count(key: str) -> Any:
    """A count in the launch's compile record (the most any rank counted); 0 is a figure."""

    def of(run: RunRecord, case: CaseSpec, m: Measurement) -> float:
        got = _compile_record(run).get(key)
        if not isinstance(got, int) or got < 0:
            raise NotMeasured(f"its workload counts no {key.replace('_', ' ')}")
        return float(got)

    return of


def _energy_per_sample(run: RunRecord, case: CaseSpec, m: Measurement) -> float:
    """The GPUs' energy over the window / the samples (tokens for a decoder) the window trained, in J."""
    joules = _watched("energy", "joules")(run, case, m)
    if run.meta.get("parsed") is not None:
        raise NotMeasured("a program's own output has no window of steps to count samples over")
    return joules / sum(s.samples for s in formulas.steady_window(run.steps, *_window_lengths(run, m)))


def _said(key: str) -> Any:
    """What dynamo said of each counted thing, from the launch's compile record."""

    def of(run: RunRecord) -> list[str]:
        got = run.meta.get("compile")
        return [str(x) for x in (got.get(key) or [])] if isinstance(got, Mapping) else []

    return of


def _real_data(case: CaseSpec) -> bool:
    return case.real_data


def _input(run: RunRecord) -> Mapping:
    """The launch's ``input`` meta (a real-data case's workload writes it)."""
    return _record(run, "input", "its input pipeline")


def _rank_waits(run: RunRecord) -> list[list[float]]:
    waits = _input(run).get("wait_seconds")
    if not isinstance(waits, list) or not waits or not all(isinstance(w, list) and w for w in waits):
        raise NotMeasured("its workload reports no input wait per step")
    return waits


def _input_wait(q: int) -> Any:
    """The window's input wait per step at percentile ``q`` on the rank that waited most (the collectives
    make every rank wait for the slowest one's batch)."""

    def of(run: RunRecord, case: CaseSpec, m: Measurement) -> float:
        return max(formulas.percentiles(w, (q,))[f"p{q}"] for w in _rank_waits(run))

    return of


def _input_share(run: RunRecord, case: CaseSpec, m: Measurement) -> float:
    """The share of the window the rank that waited most spent waiting for its batches."""
    window = run.meta.get("window") or {}
    seconds = (window.get("end") or 0) - (window.get("start") or 0)
    if seconds <= 0:
        raise NotMeasured("its workload reports no window to take the input wait's share of")
    return max(sum(w) for w in _rank_waits(run)) / seconds


def _loader_throughput(run: RunRecord, case: CaseSpec, m: Measurement) -> float:
    """The loaders alone before training (every rank's at once): decoded samples/s, summed over the ranks."""
    rates = _input(run).get("loader_samples_per_s")
    if not isinstance(rates, list) or not rates or not all(isinstance(r, (int, float)) and r > 0 for r in rates):
        raise NotMeasured("its workload did not time its loader alone")
    return float(sum(rates))


def _compiled_over_eager(s: ScalingInputs) -> float | None:
    if s.case is None or not s.case.compiled or s.median_of is None:
        return None
    eager = s.median_of(s.case.as_mode("eager"))
    return s.median / eager if eager else None


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
    tolerances={CPU: 0.05, GPU: 0.03}, per_launch=launch_throughput, paced=True,
    option="--dlperf-tolerance", marker="tolerance", junit="dlperf_samples_per_s", digits=".2f")
SPEEDUP = Metric(
    "speedup", "speedup", "speedup", "x", Direction.HIGHER, Kind.SCALING, gated=True,
    description="median throughput / its group's 1n1g median",
    tolerances={CPU: 0.15, GPU: 0.03}, derive=_speedup, digits=".2f", min_devices=2)
EFFICIENCY = Metric(
    "efficiency", "scaling efficiency", "efficiency", "", Direction.HIGHER, Kind.SCALING, gated=True,
    description="speedup / devices (AIACC's 并行效率)",
    tolerances={CPU: 0.15, GPU: 0.03}, derive=_efficiency, digits=".2f", min_devices=2)
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
    scale=2 ** 30, digits=".3g", stored_unit="bytes", launches=_cold_launches)
TIME_TO_FIRST_STEP = Metric(
    "time_to_first_step", "time to first step", "1st step s", "s", Direction.LOWER, Kind.LAUNCH, gated=True,
    description="from the node's launch command (torchrun; on the local cluster by default its direct start) to "
                "the end of the first training step on the slowest rank",
    tolerances={CPU: 0.90, GPU: 0.20}, per_launch=_node_figure("first_step", "seconds", "time to first step"),
    digits=".3g", cv_bound=0.60, gated_on=frozenset({GPU}), launches=_cold_launches)
# A checkpoint after the window (--dlperf-checkpoint): torchtitan's users saw minutes for an 8B model's, and a new
# filesystem, torch's DCP or a sharding change can double it without touching throughput. A write or read of a few
# hundred MB on a shared VM moves by tens of percent between launches (docs/measurements.md): its own tolerance, and
# a NOISY bound of half on CPU nodes. (A/B calls a lower-is-better figure WORSE past 1 / (1 - tolerance): 1.43x at 30%.)
CHECKPOINT_SAVE = Metric(
    "checkpoint_save", "checkpoint save time", "save s", "s", Direction.LOWER, Kind.LAUNCH, gated=True,
    description="after the window, saving the model's and optimizer's state in the engine's way (torch DCP, "
                "torch.save under Horovod, tf.train.Checkpoint, paddle.save), from a barrier to the slowest rank's end",
    tolerances={CPU: 0.30, GPU: 0.20}, digits=".3g", cv_bound=0.50, launches=_checkpointed,
    per_launch=_node_figure("checkpoint", "save_seconds", "checkpoint save time", absent=_NO_CHECKPOINT))
CHECKPOINT_LOAD = Metric(
    "checkpoint_load", "checkpoint load time", "load s", "s", Direction.LOWER, Kind.LAUNCH, gated=True,
    description="reading that checkpoint back into the model and optimizer, from a barrier to the slowest "
                "rank's end", tolerances={CPU: 0.30, GPU: 0.20}, digits=".3g", cv_bound=0.50, launches=_checkpointed,
    per_launch=_node_figure("checkpoint", "load_seconds", "checkpoint load time", absent=_NO_CHECKPOINT))
CHECKPOINT_SIZE = Metric(
    "checkpoint_size", "checkpoint size", "ckpt MiB", "MiB", Direction.LOWER, Kind.LAUNCH, gated=False,
    description="the bytes that checkpoint took on disk", scale=2 ** 20, digits=".4g", stored_unit="bytes",
    launches=_checkpointed, per_launch=_node_figure("checkpoint", "bytes", "checkpoint size", absent=_NO_CHECKPOINT))

# Under 0.90 a case is host-bound: a tenth of its window or more the GPUs waited for the host's
# dispatch, and the host's speed moved by the 25-32% seen on the lent GPU machines (bert-base 887 and
# 1173 samples/s in two launches; resnet50 AMP's plain loop 3150-3950 between rounds) moves such a
# figure by 0.10 x 0.30 = 3% or more: the GPU tolerance, on the host alone (docs/metrics.md).
HOST_BOUND_BELOW = 0.90
BUSY_SHARE = Metric(
    "busy_share", "GPU busy share", "GPU busy", "", Direction.HIGHER, Kind.LAUNCH, gated=False,
    description="the share of the window in which the case's GPUs ran a kernel (NVML, read beside the launch)",
    per_launch=_watched("busy", "share"), digits=".1%",
    flag=Flag(HOST_BOUND_BELOW, "host-bound", "this figure follows the CPU's dispatch speed"))
ENERGY_PER_SAMPLE = Metric(
    "energy_per_sample", "energy per sample", f"mJ/{ITEM}", f"mJ/{ITEM}", Direction.LOWER, Kind.LAUNCH, gated=False,
    description="the case's GPUs' energy over the window (NVML's total-energy counters) / the samples it trained",
    per_launch=_energy_per_sample, scale=1e-3, stored_unit=f"J/{ITEM}", digits=".4g")

COMPILED_OVER_EAGER = Metric(
    "compiled_over_eager", "compiled over eager", "compiled/eager", "x", Direction.HIGHER, Kind.SCALING,
    gated=False, description="a compiled case's median throughput / its eager twin's (the HUD's speed-up over eager)",
    derive=_compiled_over_eager, digits=".2f", applies_to=_compiled)
COMPILE_TIME = Metric(
    "compile_time", "compile time", "compile s", "s", Direction.LOWER, Kind.LAUNCH, gated=True,
    description="torch.compile: from the first step to the end of the last warm-up step that compiled, on the "
                "slowest rank, from an empty cache",
    tolerances={CPU: 0.30, GPU: 0.20}, per_launch=_compile_time, digits=".3g", cv_bound=0.30, applies_to=_compiled,
    launches=_cold_launches)
DYNAMO_COMPILE_TIME = Metric(
    "dynamo_compile_time", "dynamo's compile time", "dynamo s", "s", Direction.LOWER, Kind.LAUNCH, gated=False,
    description="dynamo's own accounting of its compiling (frames and backward graphs), the slowest rank's",
    per_launch=_dynamo_time, digits=".3g", in_table=False, applies_to=_compiled, launches=_cold_launches)
GRAPH_BREAKS = Metric(
    "graph_breaks", "graph breaks", "breaks", "", Direction.LOWER, Kind.LAUNCH, gated=True, rule=Rule.COUNT,
    description="dynamo's count of graph breaks (counters['graph_break']), the most any rank counted: one more "
                "than the reference had fails, naming it",
    per_launch=_count("graph_breaks"), said=_said("breaks"), digits=".0f", applies_to=_compiled)
RECOMPILES = Metric(
    "recompiles", "recompilations", "recompiles", "", Direction.LOWER, Kind.LAUNCH, gated=True, rule=Rule.COUNT,
    description="dynamo's recompilations (a guard failed on a compiled frame), the most any rank counted: one more "
                "than the reference had fails, naming the guard",
    per_launch=_count("recompiles"), said=_said("recompile_reasons"), digits=".0f", applies_to=_compiled)

# Over a tenth of the window waiting for batches, a case is data-bound: its throughput follows the input
# pipeline (decode, augmentation, the loader's workers), not the model's step.
DATA_BOUND_ABOVE = 0.10
# Reported, not gated: where a case is not data-bound its wait is a few microseconds to milliseconds (a
# batch already in the queue), which moves by tens of percent between launches of unchanged software, and a
# relative tolerance on it would fail them; whether the devices now wait for data is gated instead (DATA_BOUND).
INPUT_WAIT = Metric(
    "input_wait", "input wait", "input wait ms", "ms", Direction.LOWER, Kind.LAUNCH, gated=False,
    description="a real-data case's wait for its next batch per step, the median of the window's steps on the rank "
                "that waited most", per_launch=_input_wait(50), scale=1e-3, stored_unit="s", digits=".3g",
    applies_to=_real_data)
INPUT_WAIT_P95 = Metric(
    "input_wait_p95", "input wait p95", "wait p95 ms", "ms", Direction.LOWER, Kind.LAUNCH, gated=False,
    description="a real-data case's wait for its next batch per step, the window's 95th percentile on the rank "
                "that waited most", per_launch=_input_wait(95), scale=1e-3, stored_unit="s", digits=".3g",
    in_table=False, applies_to=_real_data)
INPUT_SHARE = Metric(
    "input_share", "input wait share", "input wait", "", Direction.LOWER, Kind.LAUNCH, gated=False,
    description="the share of the window the rank that waited most spent waiting for its batches",
    per_launch=_input_share, digits=".1%", applies_to=_real_data,
    flag=Flag(DATA_BOUND_ABOVE, "data-bound", "this figure follows the input pipeline, not the model's step"))
# Gated: a slower decoder or augmentation shows here on real-data cases however much of it the training step
# hides, and a verdict on it says "the loader got slower" apart from "training got slower".
LOADER_THROUGHPUT = Metric(
    "loader_throughput", "loader throughput", f"loader {ITEM}s/s", f"{ITEM}s/s", Direction.HIGHER, Kind.LAUNCH,
    gated=True, description="the data loaders alone before training, every rank's at once: decoded samples/s "
                            "summed over the ranks", tolerances={CPU: 0.10, GPU: 0.05}, per_launch=_loader_throughput,
    digits=".4g", applies_to=_real_data)



def _data_bound(run: RunRecord, case: CaseSpec, m: Measurement) -> float:
    """1 where the launch spent more than DATA_BOUND_ABOVE of its window waiting for batches, else 0."""
    return float(_input_share(run, case, m) > DATA_BOUND_ABOVE)


def _waited(run: RunRecord) -> list[str]:
    """What a data-bound launch's count stands for: its share of the window waiting for batches."""
    try:
        share = _input_share(run, None, None)  # type: ignore[arg-type] - neither is read
    except NotMeasured:
        return []
    return [f"waited for its batches {share:.1%} of the window"] if share > DATA_BOUND_ABOVE else []


DATA_BOUND = Metric(
    "data_bound", "data-bound launches", "data-bound", "", Direction.LOWER, Kind.LAUNCH, gated=True, rule=Rule.COUNT,
    description=f"whether a real-data launch waited for its batches more than {DATA_BOUND_ABOVE:.0%} of its window "
                "(1) or not (0), the most any launch counted: a case that becomes data-bound where its reference "
                "was not fails, whatever its throughput did",
    per_launch=_data_bound, said=_waited, digits=".0f", applies_to=_real_data)

METRICS: tuple[Metric, ...] = (THROUGHPUT, SPEEDUP, EFFICIENCY, MULTI_NODE_EFFICIENCY, COMPILED_OVER_EAGER, MFU, BUSBW,
                               PEAK_MEMORY, TIME_TO_FIRST_STEP, CHECKPOINT_SAVE, CHECKPOINT_LOAD, CHECKPOINT_SIZE,
                               COMPILE_TIME, DYNAMO_COMPILE_TIME, GRAPH_BREAKS,
                               RECOMPILES, BUSY_SHARE, ENERGY_PER_SAMPLE, INPUT_WAIT, INPUT_WAIT_P95, INPUT_SHARE,
                               LOADER_THROUGHPUT, DATA_BOUND)
PRIMARY = THROUGHPUT  # what speedup, MFU, the pace probe and A/B's stopping rule are taken from

__all__ = ["METRICS", "PRIMARY", "NotApplicable", "NotMeasured"]
