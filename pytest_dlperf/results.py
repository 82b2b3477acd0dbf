"""Results: one CaseResult per case (all its repeats), and the set that derives speedups."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from . import metrics, pace
from .baselines.gate import Verdict, verdict_from_dict
from .comm import Communication, communication
from .mfu import Utilisation
from .records import RunRecord, StepRecord
from .specs import SEQUENCE_MODELS, CaseSpec, Measurement, Topology


@dataclass
class CaseResult:
    """A case measured over its repeats, with the derived scaling figures."""

    case: CaseSpec
    measurement: Measurement
    runs: list[RunRecord]
    throughputs: list[float]  # global samples/s (tokens/s for a decoder: case.unit), one per repeat
    mean: float
    median: float
    step_time: dict[str, float]  # p50..p95 seconds over every rank's steps of every repeat
    per_device: dict[str, float]  # p50..p95 samples/s per device (batch / step time)
    world_size_seen: int
    speedup: float | None = None
    efficiency: float | None = None
    multi_node_efficiency: float | None = None
    verdict: dict[str, Verdict] | None = None  # metric -> the baseline gate's verdict, filled when judged
    utilisation: Utilisation | None = None  # MFU, filled by the session where it knows the nodes' probes
    profile: str | None = None  # the baseline profile the gate judged it under (dlperf history groups by it)

    def __post_init__(self) -> None:
        if self.verdict:  # a verdict given as results.json writes it (a plugin's or a test's result): the object
            self.verdict = {m: v if isinstance(v, Verdict) else verdict_from_dict(v) for m, v in self.verdict.items()}

    @property
    def paces(self) -> list[float]:
        """The pace probe's figure of every repeat, in the order of ``throughputs``; [] unless every
        repeat has one."""
        got = [r.pace for r in self.runs]
        return [float(p) for p in got] if got and all(p is not None for p in got) else []

    @property
    def pace_contract(self) -> int:
        """The probe contract of ``paces`` (stored with them: a pace of contract 1 was node 0's alone)."""
        return pace.CONTRACT if self.paces else 0

    @property
    def pace_errors(self) -> list[str]:
        return [f"repeat {r.repeat}: {r.pace_error}" for r in self.runs if r.pace_error]

    @property
    def communication(self) -> Communication | None:
        """The all-reduce bandwidth the runs measured beside their window (multi-device cases)."""
        return communication([r.meta for r in self.runs], self.step_time.get("p50"))

    @property
    def acspeed_line(self) -> str:
        t = self.case.topology
        return metrics.acspeed_line(t.world_size, t.nodes, self.case.batch_size * self.case.items_per_sample, self.step_time,
                                    unit=device_unit(self.runs), per_node=t.devices_per_node, per_device=self.per_device)

    def to_dict(self, raw: bool = True) -> dict:
        d = {
            "case": self.case.to_dict(),
            "measurement": self.measurement.to_dict(),
            "throughputs": self.throughputs,
            "paces": self.paces,
            "mean": self.mean,
            "median": self.median,
            "step_time": self.step_time,
            "per_device_samples_per_s": self.per_device,
            "world_size_seen": self.world_size_seen,
            "speedup": self.speedup,
            "efficiency": self.efficiency,
            "multi_node_efficiency": self.multi_node_efficiency,
            "acspeed": self.acspeed_line,
            "verdict": {m: v.to_dict() for m, v in self.verdict.items()} if self.verdict is not None else None,
            "mfu": self.utilisation.to_dict() if self.utilisation is not None else None,
            "allreduce": comm.to_dict() if (comm := self.communication) is not None else None,
            "profile": self.profile,
        }
        if raw:
            d["runs"] = [
                {"repeat": r.repeat, "started_at": r.started_at, "wall_seconds": r.wall_seconds, "commands": r.commands,
                 "logs": r.logs, "meta": r.meta, "steps": [asdict(s) for s in r.steps],
                 **({"pace": r.pace, "node_paces": r.node_paces} if r.pace is not None else {}),
                 **({"pace_error": r.pace_error} if r.pace_error else {})}
                for r in self.runs
            ]
        return d


def case_from_dict(d: dict) -> CaseSpec:
    c = dict(d)
    c.pop("id", None)
    c.pop("unit", None)
    c["topology"] = Topology.parse(c["topology"])
    return CaseSpec(**c)


def result_from_dict(d: dict) -> CaseResult:
    """Rebuild a CaseResult from CaseResult.to_dict(raw=True) (xdist workers' reports)."""
    runs = [RunRecord(repeat=r["repeat"], meta=r["meta"], steps=[StepRecord(**s) for s in r["steps"]],
                      commands=r["commands"], logs=r["logs"], wall_seconds=r["wall_seconds"],
                      started_at=r.get("started_at", 0.0), pace=r.get("pace"), pace_error=r.get("pace_error", ""),
                      node_paces=r.get("node_paces", {}))
            for r in d.get("runs", [])]
    return CaseResult(
        case=case_from_dict(d["case"]), measurement=Measurement(**d["measurement"]), runs=runs,
        throughputs=d["throughputs"], mean=d["mean"], median=d["median"], step_time=d["step_time"],
        per_device=d["per_device_samples_per_s"], world_size_seen=d["world_size_seen"],
        verdict={m: verdict_from_dict(v) for m, v in d["verdict"].items()} if d.get("verdict") is not None else None,
        utilisation=Utilisation.from_dict(d["mfu"]) if d.get("mfu") else None,
        profile=d.get("profile") if isinstance(d.get("profile"), str) else None,
    )


def summarize(case: CaseSpec, measurement: Measurement, runs: list[RunRecord]) -> CaseResult:
    """Throughput per repeat, then mean and median over repeats; percentiles over all steps."""
    if not runs:
        raise ValueError(f"{case.id}: no runs to summarize")
    def lengths(r: RunRecord) -> tuple[int, int]:  # what the workload ran (it sizes the window)
        return int(r.meta.get("warmup_iters", measurement.warmup_iters)), int(r.meta.get("iters", measurement.iters))

    def figures(r: RunRecord) -> tuple[float, list[float]]:
        """(samples/s, step seconds): from the step log, or what a parser read in the program's output
        (``meta["parsed"]``: its throughput, and step times only where its rates are single steps')."""
        parsed = r.meta.get("parsed")
        if parsed is None:
            return metrics.throughput(r.steps, *lengths(r)), metrics.step_times(r.steps, *lengths(r))
        global_batch = case.batch_size * case.items_per_sample * case.topology.world_size
        return parsed["throughput"], [global_batch / x for x in parsed["rates"] if x > 0] if parsed.get("per_step") else []

    figs = [figures(r) for r in runs]
    tputs = [tput for tput, _ in figs]
    times = [t for _, ts in figs for t in ts]
    printed = [r.meta["parsed"]["step_time"] for r in runs if (r.meta.get("parsed") or {}).get("step_time")]
    # percentiles over every step where steps are known; the tool's own where it printed them for a
    # single run (those of several runs cannot be pooled); else none: absent, never filled in
    pct = metrics.percentiles(times) if times else dict(printed[0]) if len(runs) == 1 and printed else {}
    mean, median = metrics.center(tputs)
    return CaseResult(
        case=case, measurement=measurement, runs=runs, throughputs=tputs, mean=mean, median=median,
        step_time=pct, per_device={k: case.batch_size * case.items_per_sample / v for k, v in pct.items()},
        world_size_seen=int(runs[0].meta.get("world_size", 0)),
    )


@dataclass
class ResultSet:
    """Every case measured in a session; derives speedup and efficiency within each group."""

    results: list[CaseResult] = field(default_factory=list)

    def add(self, result: CaseResult) -> CaseResult:
        self.results = [r for r in self.results if r.case != result.case] + [result]
        self._derive()
        return result

    def find(self, case: CaseSpec, topology: Topology) -> CaseResult | None:
        for r in self.results:
            if r.case.group == case.group and r.case.topology == topology:
                return r
        return None

    def _derive(self) -> None:
        for r in self.results:
            t = r.case.topology
            base = self.find(r.case, Topology(1, 1))
            r.speedup = metrics.speedup(r.median, base.median if base else None)
            r.efficiency = metrics.efficiency(r.speedup, t.world_size)
            full = self.find(r.case, Topology(1, t.devices_per_node))
            r.multi_node_efficiency = metrics.multi_node_efficiency(
                r.median, t.nodes, full.median if full else None)

    def groups(self) -> dict[tuple, list[CaseResult]]:
        out: dict[tuple, list[CaseResult]] = {}
        for r in sorted(self.results, key=lambda r: (r.case.group, r.case.topology)):
            out.setdefault(r.case.group, []).append(r)
        return out

    def engine_comparison(self) -> list[dict]:
        """The AIACC table: per model, precision, sizes, training framework and topology, each engine's
        samples/s, efficiency and multi-node efficiency side by side, and the first engine's ratio to
        each other one (``ddp/horovod``). Only rows that two or more engines measured."""
        engines = list(dict.fromkeys(r.case.backend for r in self.results))
        rows: dict[tuple, dict] = {}
        for r in self.results:
            c = r.case
            key = (c.model, c.precision, c.batch_size, c.image_size, trained_with(r), comparable_variant(c),
                   c.topology.nodes, c.topology.devices_per_node)
            rows.setdefault(key, {})[c.backend] = r
        out = []
        for key, by_engine in sorted(rows.items()):
            if len(by_engine) < 2:
                continue
            model, precision, batch, image, framework, variant, _, _ = key
            present = [e for e in engines if e in by_engine]
            first = by_engine[present[0]]
            out.append({
                "model": model, "precision": precision, "batch_size": batch, "image_size": image,
                "framework": framework, "variant": variant, "topology": first.case.topology.name,
                "engines": {e: {"samples_per_s": by_engine[e].median, "efficiency": by_engine[e].efficiency,
                                "multi_node_efficiency": by_engine[e].multi_node_efficiency} for e in present},
                "ratios": {f"{present[0]}/{e}": first.median / by_engine[e].median
                           for e in present[1:] if by_engine[e].median > 0},
            })
        return out

    def dlperf_summary(self) -> dict[str, dict[str, dict[str, dict]]]:
        """DLPerf's result shape, one per precision: {precision: {model: {topology: {...}}}}."""
        out: dict[str, dict[str, dict[str, dict]]] = {}
        several = len({r.case.backend for r in self.results}) > 1
        for r in self.results:
            c = r.case
            model = f"{c.model}-{c.variant}" if c.variant else c.model
            if several:  # one engine's row must not overwrite another's
                model = f"{c.backend}:{model}"
            out.setdefault(c.precision, {}).setdefault(model, {})[c.topology.name] = {
                "average_speed": round(r.mean, 2),
                "median_speed": round(r.median, 2),
                "speedup": round(r.speedup, 2) if r.speedup is not None else None,
                "batch_size_per_device": c.batch_size,
                ("seq_length" if c.model in SEQUENCE_MODELS else "image_size"): c.image_size,
            }
        return out


def device_unit(runs: list[RunRecord]) -> str:
    """What the case's devices are, as its runs say: "GPUs" (a CUDA version in the workload's meta, or
    an imported or external run whose output says GPUs), "CPU workers" (a workload without CUDA, or an
    output that says CPU), else "devices" (an output that does not say)."""
    metas = [r.meta for r in runs]
    if any(m.get("cuda") or m.get("gpus") is True for m in metas):
        return "GPUs"
    if any("cuda" in m or m.get("gpus") is False for m in metas):
        return "CPU workers"
    return "devices"


# Names a workload's meta line gives its training framework under ("frameworks": {...}).
TRAINING_FRAMEWORKS = {"torch": "torch", "tensorflow": "tf", "paddle": "paddle", "paddlepaddle": "paddle"}


def trained_with(result: CaseResult) -> str:
    """The framework that trained the case (from the workload's meta line), e.g. "torch"."""
    for run in result.runs:
        for name in (run.meta.get("frameworks") or {}):
            if name in TRAINING_FRAMEWORKS:
                return TRAINING_FRAMEWORKS[name]
    return "?"


def comparable_variant(case: CaseSpec) -> str:
    """The variant without the part that names the framework (``torch-cls4096`` -> ``cls4096``), so
    that ddp's and horovod's ArcFace rows meet."""
    return "-".join(p for p in case.variant.split("-") if p and p not in ("torch", "tf"))
