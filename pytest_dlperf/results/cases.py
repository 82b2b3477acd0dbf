"""Results: one CaseResult per case (all its repeats), and the set that derives speedups."""
from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field

from .. import metrics
from ..node import paceprobe
from ..software import frameworks
from ..specs import SEQUENCE_MODELS, CaseSpec, Measurement, Topology
from .comm import Communication, communication
from .mfu import Utilisation
from .records import RunRecord, StepRecord
from .verdict import Verdict, verdict_from_dict

# results.json's contract ("schema"): 2 adds each case's "metrics" (every declared metric's figures, unit
# and direction, or why it was not measured); dlperf report, compare and history read 1 and 2
CONTRACT = 2
READS = (1, 2)


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
    # the other per-launch metrics (metrics.Kind.LAUNCH): name -> one figure per launch, where every launch has one
    figures: dict[str, list[float]] = field(default_factory=dict)
    absent: dict[str, str] = field(default_factory=dict)  # per-launch metric -> why the case has no figure of it
    scaling: dict[str, float | None] = field(default_factory=dict)  # scaling metric -> its figure (ResultSet)
    verdict: dict[str, Verdict] | None = None  # metric -> the baseline gate's verdict, filled when judged
    utilisation: Utilisation | None = None  # MFU, filled by the session where it knows the nodes' probes
    profile: str | None = None  # the baseline profile the gate judged it under (dlperf history groups by it)
    software: str | None = None  # its software identity's id (results.json's environment.software holds it)
    # a recording's profiled launch summarized (explain.summarize), kept with its baseline entry (--dlperf-explain always)
    trace_summary: dict | None = None

    def __post_init__(self) -> None:
        if self.verdict:  # a verdict given as results.json writes it (a plugin's or a test's result): the object
            self.verdict = {m: v if isinstance(v, Verdict) else verdict_from_dict(v) for m, v in self.verdict.items()}

    def values(self, metric: str) -> list[float]:
        """A per-launch metric's figures, one per launch ([]: not measured, or not a per-launch metric)."""
        if metric == metrics.PRIMARY.name:
            return list(self.throughputs)
        return list(self.figures.get(metric, []))

    def value(self, metric: str) -> float | None:
        """The case's figure of a metric: a per-launch one's median (a count's largest), a scaling one's, a
        case one's (``Metric.figure_of``); None: none."""
        return metrics.get(metric).figure_of(self)

    def metrics_dict(self) -> dict[str, dict]:
        """results.json's ``metrics`` (contract 2): every declared metric the case has, with its unit,
        direction and kind, its figure and, per launch, its figures; or why it was not measured."""
        out: dict[str, dict] = {}
        for m in metrics.declared():
            value = self.value(m.name)
            if value is None and m.name not in self.absent:
                continue
            d: dict = {"unit": m.raw_unit(self.case.unit), "better": m.direction.value, "kind": m.kind.value,
                       "gated": m.gated, "value": value, **({"rule": m.rule.value} if m.gated else {})}
            if m.per_run:
                d["values"] = self.values(m.name)
            if m.counted and value is not None:
                d["said"] = self.said(m.name)
            if value is None:
                d["not_measured"] = self.absent[m.name]
            if flag := m.flagged(value, self.case.unit):
                d["flag"] = flag
            out[m.name] = d
        return out

    def flags(self) -> dict[str, str]:
        """What the case's figures flag (``Metric.flag``): metric -> its line ("host-bound: this figure
        follows the CPU's dispatch speed (GPU busy share 62.0%, below 90.0%)")."""
        return {m.name: text for m in metrics.declared() if (text := m.flagged(self.value(m.name), self.case.unit))}

    def said(self, metric: str) -> list[str]:
        """What the tool said of the things a count metric counted, over every launch, each once."""
        m = metrics.get(metric)
        return list(dict.fromkeys(x for r in self.runs for x in (m.said(r) if m.said else [])))

    @property
    def speedup(self) -> float | None:
        return self.scaling.get(metrics.SPEEDUP.name)

    @property
    def efficiency(self) -> float | None:
        return self.scaling.get(metrics.EFFICIENCY.name)

    @property
    def multi_node_efficiency(self) -> float | None:
        return self.scaling.get(metrics.MULTI_NODE_EFFICIENCY.name)

    @property
    def paces(self) -> list[float]:
        """The pace probe's figure of every repeat, in the order of ``throughputs``; [] unless every
        repeat has one."""
        got = [r.pace for r in self.runs]
        return [float(p) for p in got] if got and all(p is not None for p in got) else []

    @property
    def pace_contract(self) -> int:
        """The probe contract of ``paces`` (stored with them: a pace of contract 1 was node 0's alone)."""
        return paceprobe.VERSION if self.paces else 0

    @property
    def pace_errors(self) -> list[str]:
        return [f"repeat {r.repeat}: {r.pace_error}" for r in self.runs if r.pace_error]

    @property
    def communication(self) -> Communication | None:
        """The all-reduce bandwidth the runs measured beside their window (multi-device cases)."""
        return communication([r.meta for r in self.runs], self.step_time.get("p50"))

    @property
    def compile_cache(self) -> dict:
        """A compiled case's caches as its launches had them: whose they were (the first cold launches'
        own, empty at their start, and the later launches' the first's; or a directory kept across
        launches and sessions) and which launches started from an empty one (a cold compile)."""
        caches = [(r.meta.get("compile") or {}).get("cache") or {} for r in self.runs]
        kept, cold = self.measurement.compile_cache, self.measurement.cold_launches
        return {"choice": f"kept in {kept} (--dlperf-compile-cache)" if kept else
                f"the first {cold} launch(es) each their own, empty at its start (--dlperf-cold-launches); "
                "the later ones the first's",
                "dirs": list(dict.fromkeys(c.get("dir") for c in caches if c.get("dir"))),
                "cold": [c.get("cold") for c in caches]}

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
            "metrics": self.metrics_dict(),
            "acspeed": self.acspeed_line,
            "verdict": {m: v.to_dict() for m, v in self.verdict.items()} if self.verdict is not None else None,
            "mfu": self.utilisation.to_dict() if self.utilisation is not None else None,
            "allreduce": comm.to_dict() if (comm := self.communication) is not None else None,
            "profile": self.profile,
            "software": self.software,
            **({"compile_cache": self.compile_cache} if self.case.compiled else {}),
        }
        if raw:
            d["runs"] = [
                {"repeat": r.repeat, "started_at": r.started_at, "wall_seconds": r.wall_seconds, "commands": r.commands,
                 "logs": r.logs, "meta": r.meta, "steps": [asdict(s) for s in r.steps],
                 **({"pace": r.pace, "node_paces": r.node_paces} if r.pace is not None else {}),
                 **({"pace_error": r.pace_error} if r.pace_error else {}), **({"gpu": r.gpu} if r.gpu else {})}
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
                      node_paces=r.get("node_paces", {}), gpu=r.get("gpu") or {})
            for r in d.get("runs", [])]
    declared = d.get("metrics") or {}  # contract 2; a contract-1 case has the primary metric's figures only
    launch = [m.name for m in metrics.of_kind(metrics.Kind.LAUNCH) if m is not metrics.PRIMARY]
    return CaseResult(
        case=case_from_dict(d["case"]), measurement=Measurement(**d["measurement"]), runs=runs,
        throughputs=d["throughputs"], mean=d["mean"], median=d["median"], step_time=d["step_time"],
        per_device=d["per_device_samples_per_s"], world_size_seen=d["world_size_seen"],
        figures={n: list(declared[n]["values"]) for n in launch if (declared.get(n) or {}).get("values")},
        absent={n: str(declared[n]["not_measured"]) for n in launch if (declared.get(n) or {}).get("not_measured")},
        verdict={m: verdict_from_dict(v) for m, v in d["verdict"].items()} if d.get("verdict") is not None else None,
        utilisation=Utilisation.from_dict(d["mfu"]) if d.get("mfu") else None,
        profile=d.get("profile") if isinstance(d.get("profile"), str) else None,
        software=d.get("software") if isinstance(d.get("software"), str) else None,
    )


def summarize(case: CaseSpec, measurement: Measurement, runs: list[RunRecord]) -> CaseResult:
    """Throughput per repeat, then mean and median over repeats; percentiles over all steps."""
    if not runs:
        raise ValueError(f"{case.id}: no runs to summarize")
    tputs = [metrics.PRIMARY.per_launch(r, case, measurement) for r in runs]
    times = [t for r in runs for t in _step_seconds(r, case, measurement)]
    printed = [r.meta["parsed"]["step_time"] for r in runs if (r.meta.get("parsed") or {}).get("step_time")]
    # percentiles over every step where steps are known; the tool's own where it printed them for a
    # single run (those of several runs cannot be pooled); else none: absent, never filled in
    pct = metrics.percentiles(times) if times else dict(printed[0]) if len(runs) == 1 and printed else {}
    mean, median = metrics.center(tputs)
    figures, absent = _other_figures(case, measurement, runs)
    return CaseResult(
        case=case, measurement=measurement, runs=runs, throughputs=tputs, mean=mean, median=median,
        step_time=pct, per_device={k: case.batch_size * case.items_per_sample / v for k, v in pct.items()},
        world_size_seen=int(runs[0].meta.get("world_size", 0)), figures=figures, absent=absent,
    )


def _step_seconds(r: RunRecord, case: CaseSpec, m: Measurement) -> list[float]:
    """A launch's step seconds: every rank's in the window from the step log, or, from a program's own
    output (``meta["parsed"]``), its rates' steps only where they are single steps'."""
    parsed = r.meta.get("parsed")
    if parsed is None:
        return metrics.step_times(r.steps, int(r.meta.get("warmup_iters", m.warmup_iters)),
                                  int(r.meta.get("iters", m.iters)))
    global_batch = case.batch_size * case.items_per_sample * case.topology.world_size
    return [global_batch / x for x in parsed["rates"] if x > 0] if parsed.get("per_step") else []


def _other_figures(case: CaseSpec, m: Measurement, runs: list[RunRecord]) -> tuple[dict[str, list[float]],
                                                                                  dict[str, str]]:
    """Each other per-launch metric's figures where every launch it is taken from has one (``taken_from``: a
    compiled case's start-up from its cold launches), else why the case has none (a launch without it is
    never left out to make a figure of the others)."""
    figures, absent = {}, {}
    for metric in metrics.of_kind(metrics.Kind.LAUNCH):
        if metric is metrics.PRIMARY or not metric.has(case):
            continue
        taken, none = metric.taken_from(runs, case)
        if not taken:
            absent[metric.name] = none
            continue
        got, why, cannot = [], [], 0
        for r in taken:
            try:
                got.append(metric.per_launch(r, case, m))
            except metrics.NotMeasured as exc:
                why.append(str(exc))
                cannot += isinstance(exc, metrics.NotApplicable)
        if cannot == len(taken):
            continue  # no launch could have it (a GPU metric on CPU nodes): the case leaves it out, unsaid
        if not why:
            figures[metric.name] = got
        else:
            absent[metric.name] = why[0] if len(why) == len(taken) else \
                f"{len(why)} of {len(taken)} launches have none ({why[0]})"
    return figures, absent


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
        """Each scaling metric of every case, in declaration order, from its group's medians."""
        for r in self.results:
            def median_at(topology: Topology, r: CaseResult = r) -> float | None:
                other = self.find(r.case, topology)
                return other.median if other is not None else None

            r.scaling = {}
            for m in metrics.of_kind(metrics.Kind.SCALING):
                r.scaling[m.name] = m.derive(metrics.ScalingInputs(r.median, r.case.topology, median_at, r.scaling,
                                                                   r.case, self.median_of))

    def median_of(self, case: CaseSpec) -> float | None:
        """The median throughput of ``case`` in this session (None: not measured)."""
        got = next((r for r in self.results if r.case == case), None)
        return got.median if got is not None else None

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
                   c.topology.nodes, c.topology.devices_per_node, c.data)
            rows.setdefault(key, {})[c.backend] = r
        out = []
        for key, by_engine in sorted(rows.items()):
            if len(by_engine) < 2:
                continue
            model, precision, batch, image, framework, variant, _, _, data = key
            present = [e for e in engines if e in by_engine]
            first = by_engine[present[0]]
            out.append({
                "model": model, "precision": precision, "batch_size": batch, "image_size": image,
                "framework": framework, "variant": variant, "topology": first.case.topology.name,
                **({"data": data} if first.case.real_data else {}),
                "engines": {e: {"samples_per_s": by_engine[e].median, "efficiency": by_engine[e].efficiency,
                                "multi_node_efficiency": by_engine[e].multi_node_efficiency,
                                **({"compiled_over_eager": by_engine[e].value(metrics.COMPILED_OVER_EAGER.name)}
                                   if by_engine[e].case.compiled else {})} for e in present},
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
            if c.real_data:  # a real-data case's row beside its synthetic twin's, not over it
                model = f"{model}-{c.data}"
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


def trained_with(result: CaseResult) -> str:
    """The framework that trained the case (from the workload's meta line), e.g. "torch"."""
    for run in result.runs:
        for name in (run.meta.get("frameworks") or {}):
            if frameworks.short(name) in frameworks.TRAINING:
                return frameworks.short(name)
    return "?"


def comparable_variant(case: CaseSpec) -> str:
    """The variant without the part that names the framework (``torch-cls4096`` -> ``cls4096``), so
    that ddp's and horovod's ArcFace rows meet."""
    return "-".join(p for p in case.variant.split("-") if p and p not in ("torch", "tf"))
