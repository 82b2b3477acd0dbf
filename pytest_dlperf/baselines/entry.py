"""A baseline entry: one case's recorded figures (the runs of every gated per-launch metric), its
tolerances and provenance, validated field by field; and the sittings an entry's runs come from
(``--dlperf-record-sittings``). Plain data and rules: the files are ``store``'s."""
from __future__ import annotations

import datetime as _dt
import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import metrics
from ..metrics import Kind
from ..specs import CaseSpec, Topology
from .schema import BaselineError, Tolerances, _Reader, is_number, positive_number

PROFILE_KEY = "trace_summary"  # an entry's recorded profile summary (explain.summary; --dlperf-explain always)


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


@dataclass
class Entry:
    """One case's baseline: its figures, raw per-repeat throughputs, tolerance and provenance."""

    model: str
    precision: str
    batch_size: int
    image_size: int
    backend: str
    topology: str
    median: float
    variant: str = ""
    mean: float | None = None
    throughputs: list[float] = field(default_factory=list)  # raw per repeat; empty when unpublished
    paces: list[float] = field(default_factory=list)  # the pace probe's GB/s per repeat (pace.py); [] unprobed
    pace_contract: int = 0  # the probe contract of the paces (1: node 0's alone, also when unnamed; 2: every node's)
    speedup: float | None = None
    efficiency: float | None = None
    tolerance: Tolerances | None = None
    recorded_at: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    source: str = "recorded"  # or "published: <citation>"
    machine: str = ""  # id of the recording machine's fingerprints in the file's "machines"
    software: str = ""  # id of the recorded software identity in the file's "software" ("": not recorded)
    # the sittings the runs come from, oldest first: [{"recorded_at": ..., "runs": n}]; [] for one sitting
    # (--dlperf-record-sittings K keeps the last K, so the baseline holds the host's level over hours)
    sittings: list[dict[str, Any]] = field(default_factory=list)
    busbw: float | None = None  # a multi-device case's all-reduce busbw at the bucket size, bytes/s (comm.py)
    # the runs of the gated per-launch metrics kept nowhere else (metric name -> one figure per run, in
    # the order taken): peak memory, time to first step; a metric absent here has no baseline yet
    figures: dict[str, list[float]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # other fields, kept as they are

    @property
    def case(self) -> CaseSpec:
        return CaseSpec(model=self.model, precision=self.precision, batch_size=self.batch_size,
                        image_size=self.image_size, topology=Topology.parse(self.topology),
                        backend=self.backend, variant=self.variant)

    @property
    def key(self) -> str:
        """The same key as CaseSpec.key, e.g. ``ddp/resnet50-fp32-bs8-64px-2n1g``."""
        return self.case.key

    def values(self, metric: str) -> list[float]:
        """The recorded runs' figures of a per-launch metric ([] : none recorded, or a published median)."""
        m = metrics.get(metric)
        if m.kind is not Kind.LAUNCH:
            return []
        return list(getattr(self, m.stored_as)) if m.stored_as else list(self.figures.get(m.name, []))

    def figure(self, metric: str) -> float | None:
        """The entry's figure of a metric: a per-launch metric's median (the stored median for the primary
        one, which a published entry gives without runs), a scaling metric's stored value; None: none."""
        m = metrics.get(metric)
        if m is metrics.PRIMARY:
            return self.median
        if m.kind is Kind.LAUNCH:
            return m.of_runs(self.values(metric))
        return getattr(self, m.stored_as, None) if m.stored_as else None

    @property
    def published(self) -> bool:
        return self.source.startswith("published")

    @property
    def external(self) -> bool:
        """Not measured by this suite: a published figure, or imported from a peer's logs
        (``dlperf import --record``); no hardware fingerprint comes with it."""
        return self.source.startswith(("published", "imported"))

    @classmethod
    def from_samples(cls, *, model: str, precision: str, batch_size: int, image_size: int, backend: str,
                     topology: str, throughputs: Sequence[float], tolerance: Tolerances | float | None,
                     versions: Mapping[str, str], source: str = "recorded", speedup: float | None = None,
                     efficiency: float | None = None, recorded_at: str | None = None,
                     variant: str = "") -> Entry:
        """An entry from raw per-repeat throughputs: median and mean computed here."""
        xs = [float(x) for x in throughputs]
        if not xs:
            raise ValueError("an entry needs at least one throughput")
        if isinstance(tolerance, (int, float)):
            tolerance = Tolerances(throughput=float(tolerance))
        return cls(model=model, precision=precision, batch_size=batch_size, image_size=image_size,
                   backend=backend, topology=topology, median=statistics.median(xs),
                   mean=statistics.fmean(xs), throughputs=xs, speedup=speedup, efficiency=efficiency,
                   tolerance=tolerance, recorded_at=recorded_at or _now(), versions=dict(versions),
                   source=source, variant=variant)

    @classmethod
    def from_result(cls, result: Any, tolerance: Tolerances | None, versions: Mapping[str, str]) -> Entry:
        """An entry recording a CaseResult (pytest_dlperf.results.cases) as --update-baselines does."""
        c = result.case
        entry = cls.from_samples(model=c.model, precision=c.precision, batch_size=c.batch_size,
                                 image_size=c.image_size, backend=c.backend, topology=c.topology.name,
                                 throughputs=result.throughputs, tolerance=tolerance, versions=versions,
                                 variant=c.variant)
        for m in metrics.gated():  # the gated scaling figures, each in the field schema 1 gave it
            if m.kind is Kind.SCALING and m.stored_as:
                setattr(entry, m.stored_as, result.value(m.name))
        entry.paces = list(getattr(result, "paces", []))
        entry.pace_contract = int(getattr(result, "pace_contract", 0)) if entry.paces else 0
        comm = getattr(result, "communication", None)
        entry.busbw = comm.busbw if comm is not None else None
        entry.figures = {m.name: [float(x) for x in result.values(m.name)] for m in metrics.gated()
                         if m.kind is Kind.LAUNCH and not m.stored_as and result.values(m.name)}
        summary = getattr(result, "trace_summary", None)
        if summary:  # the recording's profile, for explaining a later regression without the recorded software
            entry.extra[PROFILE_KEY] = summary
        return entry

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "model": self.model, "precision": self.precision, "batch_size": self.batch_size,
            "image_size": self.image_size, "backend": self.backend, "topology": self.topology,
            "median": self.median, "mean": self.mean, "throughputs": list(self.throughputs),
            "speedup": self.speedup, "efficiency": self.efficiency,
            "tolerance": self.tolerance.to_dict() if self.tolerance else None,
            "recorded_at": self.recorded_at, "versions": dict(self.versions), "source": self.source,
        }
        if self.paces:
            d["paces"] = list(self.paces)
            if self.pace_contract:
                d["pace_contract"] = self.pace_contract
        if self.machine:
            d["machine"] = self.machine
        if self.software:
            d["software"] = self.software
        if self.variant:
            d["variant"] = self.variant
        if self.sittings:
            d["sittings"] = [dict(x) for x in self.sittings]
        if self.busbw:
            d["busbw"] = self.busbw
        if self.figures:
            d["figures"] = {k: list(v) for k, v in self.figures.items()}
        d.update({k: v for k, v in self.extra.items() if k not in d})
        return d

    @classmethod
    def from_dict(cls, key: str, d: Any, path: Path) -> Entry:
        """Validate one entry of a file; BaselineError names the entry and the field."""
        where = f"entries[{key!r}]."
        if not isinstance(d, dict):
            raise BaselineError(path, f"entries[{key!r}] must be an object")
        r = _Reader(path, d, where)
        def positives(name: str, required: bool) -> list:
            values = r.get(name, "list", required=required) or []
            for i, x in enumerate(values):
                if not positive_number(x):
                    raise r.fail(name, f"item {i} must be a number > 0, not {json.dumps(x)}")
            return values

        tputs, paces = positives("throughputs", True), positives("paces", False)
        if paces and len(paces) != len(tputs):
            raise r.fail("paces", f"has {len(paces)} items for {len(tputs)} throughputs: one per run, in their "
                                  "order (record the case again with --update-baselines)")
        versions = r.get("versions", "dict")
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in versions.items()):
            raise r.fail("versions", "must map names to version strings")
        source = r.get("source", "str")
        if source != "recorded" and not source.startswith(("published:", "imported:")):
            raise r.fail("source", f"must be 'recorded', 'published: <citation>' or 'imported: <logs>', not {source!r}")
        known = {"model", "precision", "batch_size", "image_size", "backend", "topology", "median", "mean",
                 "throughputs", "speedup", "efficiency", "tolerance", "recorded_at", "versions", "source",
                 "machine", "software", "variant", "paces", "pace_contract", "sittings", "busbw", "figures"}
        entry = cls(
            model=r.get("model", "str"), precision=r.get("precision", "str"),
            batch_size=r.get("batch_size", "int"), image_size=r.get("image_size", "int"),
            backend=r.get("backend", "str"), topology=r.get("topology", "str"),
            median=float(r.get("median", "number")), mean=r.get("mean", "number", required=False),
            throughputs=[float(x) for x in tputs], paces=[float(x) for x in paces],
            pace_contract=(r.get("pace_contract", "int", required=False) or 1) if paces else 0,
            speedup=r.get("speedup", "number", required=False),
            efficiency=r.get("efficiency", "number", required=False),
            tolerance=Tolerances.read(r, "tolerance", required=False),
            recorded_at=r.get("recorded_at", "str"), versions=dict(versions), source=source,
            machine=r.get("machine", "str", required=False) or "",
            software=r.get("software", "str", required=False) or "",
            variant=r.get("variant", "str", required=False) or "",
            sittings=_sittings(r, len(tputs)),
            busbw=r.get("busbw", "number", required=False),
            figures=_figures(r),
            extra={k: v for k, v in d.items() if k not in known},
        )
        try:
            real_key = entry.key
        except ValueError as exc:
            raise r.fail("topology", str(exc)) from None
        if real_key != key:
            raise BaselineError(path, f"entry key {key!r} does not match its fields, which make {real_key!r}")
        return entry


def _figures(r: _Reader) -> dict[str, list[float]]:
    """The entry's ``figures``, checked: each a gated per-launch metric kept nowhere else, with its runs'
    positive figures."""
    d = r.get("figures", "dict", required=False) or {}
    sub = _Reader(r.path, d, f"{r.where}figures.")
    known = [m.name for m in metrics.gated() if m.kind is Kind.LAUNCH and not m.stored_as]
    out = {}
    for name, values in d.items():
        if name not in known:
            raise sub.fail(name, f"is not a gated per-launch metric kept here; expected {', '.join(known)}")
        counted = metrics.get(name).counted  # a count may be 0
        if not (isinstance(values, list) and values and all(
                (is_number(x) and x >= 0) if counted else positive_number(x) for x in values)):
            want = "counts (>= 0)" if counted else "numbers > 0"
            raise sub.fail(name, f"must be a non-empty list of {want}, not {json.dumps(values)[:60]}")
        out[name] = [float(x) for x in values]
    return out


def _sittings(r: _Reader, runs: int) -> list[dict[str, Any]]:
    """The entry's ``sittings``, checked: each {"recorded_at": str, "runs": int > 0}, counts adding up to the runs."""
    items = r.get("sittings", "list", required=False) or []
    for i, x in enumerate(items):
        if not (isinstance(x, dict) and isinstance(x.get("recorded_at"), str) and type(x.get("runs")) is int
                and x["runs"] > 0):
            raise r.fail("sittings", f'item {i} must be {{"recorded_at": "<time>", "runs": <count > 0>}}, '
                                     f"not {json.dumps(x)}")
    if items and sum(x["runs"] for x in items) != runs:
        raise r.fail("sittings", f"counts {sum(x['runs'] for x in items)} runs for {runs} throughputs: one count per "
                                 "sitting, adding up to the runs (record the case again with --update-baselines)")
    return [dict(x) for x in items]


def run_groups(entry: Entry) -> list[range]:
    """The index ranges of the entry's runs by sitting (one range for an entry of one sitting)."""
    out, start = [], 0
    for s in entry.sittings or [{"runs": len(entry.throughputs)}]:
        out.append(range(start, start + s["runs"]))
        start += s["runs"]
    return out


class SittingsError(ValueError):
    """This session's runs cannot be added to the recorded ones: the message says why and what to do
    (the caller names the case)."""


def check_software(old: Entry, versions: Mapping[str, str | None], keys: Sequence[str] | None = None) -> None:
    """SittingsError where runs taken with ``versions`` cannot join ``old``'s: it is not this suite's runs,
    or the software differs (in ``keys`` only, where given: what is known before a launch)."""
    if old.external:
        raise SittingsError(f"its baseline is {old.source}, not runs of this suite: record it once "
                            "without --dlperf-record-sittings to start from this machine's runs")
    names = sorted(set(old.versions) | set(versions)) if keys is None else list(keys)
    differ = [f"{k} {old.versions.get(k) or '(none)'} -> {versions.get(k) or '(none)'}"
              for k in names if old.versions.get(k) != versions.get(k)]
    if differ:
        raise SittingsError(f"the recorded runs were taken with other software ({'; '.join(differ)}): "
                            "adding this session's would mix two versions in one baseline. Record it without "
                            "--dlperf-record-sittings to start over with this software's runs")


def add_sitting(old: Entry, new: Entry, keep: int) -> Entry:
    """``new`` (one sitting, this session's) with the runs of ``old``'s last ``keep - 1`` sittings before
    its own, medians over all of them; speedup and efficiency are left for the caller (they need the
    group's 1n1g entry). Refuses (SittingsError) where the runs would not be of one software and probe."""
    if keep < 2:
        raise ValueError("add_sitting keeps at least two sittings")
    check_software(old, new.versions)
    if bool(old.paces) != bool(new.paces) or (old.paces and old.pace_contract != new.pace_contract):
        what = (f"pace probe contract {old.pace_contract} vs {new.pace_contract}" if old.paces and new.paces
                else "the recorded runs " + ("carry" if old.paces else "lack") + " the pace probe's figures, this "
                "session's " + ("lack" if old.paces else "carry") + " them")
        raise SittingsError(f"{what}: run this session as the recorded one was (--dlperf-pace-probe), "
                            "or record it without --dlperf-record-sittings to start over")
    old_sittings = old.sittings or [{"recorded_at": old.recorded_at, "runs": len(old.throughputs)}]
    kept = old_sittings[-(keep - 1):]
    cut = sum(s["runs"] for s in old_sittings) - sum(s["runs"] for s in kept)
    tputs = list(old.throughputs[cut:]) + list(new.throughputs)
    merged = Entry.from_samples(model=new.model, precision=new.precision, batch_size=new.batch_size,
                                image_size=new.image_size, backend=new.backend, topology=new.topology,
                                throughputs=tputs, tolerance=new.tolerance, versions=new.versions,
                                recorded_at=new.recorded_at, variant=new.variant)
    merged.paces = list(old.paces[cut:]) + list(new.paces) if new.paces else []
    merged.pace_contract = new.pace_contract
    merged.sittings = [dict(s) for s in kept] + [{"recorded_at": new.recorded_at, "runs": len(new.throughputs)}]
    merged.machine, merged.extra, merged.busbw = new.machine, dict(new.extra), new.busbw
    # another metric's runs join where the recorded ones have one figure per run; else this sitting's alone
    merged.figures = {name: (list(old.figures[name][cut:]) if len(old.figures.get(name, [])) == len(old.throughputs)
                             else []) + list(values) for name, values in new.figures.items()}
    return merged
