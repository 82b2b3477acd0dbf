"""A baseline entry: one case's recorded figures (the runs of every gated per-launch metric), its
tolerances and provenance, validated field by field; and the sittings an entry's runs come from
(``--dlperf-record-sittings``). Plain data and rules: the files are ``store``'s."""
from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import metrics
from ..datasources import DATA_SOURCES, SYNTHETIC
from ..specs import CaseSpec, Topology
from .schema import BaselineError, Tolerances, _Reader, entry_as_schema_3, is_number, positive_number

PROFILE_KEY = "trace_summary"  # an entry's recorded profile summary (explain.summary; --dlperf-explain always)


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


@dataclass
class Entry:
    """One case's baseline: every gated metric's runs or its one figure, alike (schema 3), its tolerances
    and provenance."""

    model: str
    precision: str
    batch_size: int
    image_size: int
    backend: str
    topology: str
    variant: str = ""
    data: str = SYNTHETIC  # what the case trained on (datasources.py): a real-data case is a case of its own
    # the runs of each gated per-launch metric (``metrics.kept_by_run``): name -> one figure per run, in the
    # order taken; a metric absent here has no runs (none recorded yet, or a published figure without them)
    runs: dict[str, list[float]] = field(default_factory=dict)
    # a figure kept as one number: a gated scaling metric's (``metrics.kept_as_figure``), or a per-launch
    # metric's where its source stated it rather than the runs making it (a published table's median)
    stated: dict[str, float] = field(default_factory=dict)
    paces: list[float] = field(default_factory=list)  # the pace probe's GB/s per repeat (pace.py); [] unprobed
    pace_contract: int = 0  # the probe contract of the paces (1: node 0's alone, also when unnamed; 2: every node's)
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
    extra: dict[str, Any] = field(default_factory=dict)  # other fields, kept as they are

    @property
    def case(self) -> CaseSpec:
        return CaseSpec(model=self.model, precision=self.precision, batch_size=self.batch_size,
                        image_size=self.image_size, topology=Topology.parse(self.topology),
                        backend=self.backend, variant=self.variant, data=self.data)

    @property
    def key(self) -> str:
        """The same key as CaseSpec.key, e.g. ``ddp/resnet50-fp32-bs8-64px-2n1g``."""
        return self.case.key

    def values(self, metric: str) -> list[float]:
        """The recorded runs' figures of a metric ([]: none recorded, a published figure, a scaling metric)."""
        return list(self.runs.get(metrics.get(metric).name, []))

    def figure(self, metric: str) -> float | None:
        """The entry's figure of a metric: the one stated where there is one (a published median, a scaling
        figure), else its runs' (``Metric.of_runs``); None: none."""
        m = metrics.get(metric)
        return self.stated[m.name] if m.name in self.stated else m.of_runs(self.values(m.name))

    @property
    def run_count(self) -> int:
        """How many launches the entry's runs come from (its primary metric's runs; 0: a published figure)."""
        return len(self.runs.get(metrics.PRIMARY.name, []))

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
                     variant: str = "", data: str = SYNTHETIC) -> Entry:
        """An entry from raw per-repeat throughputs (and its scaling figures, where known)."""
        xs = [float(x) for x in throughputs]
        if not xs:
            raise ValueError("an entry needs at least one throughput")
        if isinstance(tolerance, (int, float)):
            tolerance = Tolerances(throughput=float(tolerance))
        scaling = {metrics.SPEEDUP.name: speedup, metrics.EFFICIENCY.name: efficiency}
        return cls(model=model, precision=precision, batch_size=batch_size, image_size=image_size,
                   backend=backend, topology=topology, runs={metrics.PRIMARY.name: xs},
                   stated={k: float(v) for k, v in scaling.items() if v is not None},
                   tolerance=tolerance, recorded_at=recorded_at or _now(), versions=dict(versions),
                   source=source, variant=variant, data=data)

    @classmethod
    def from_result(cls, result: Any, tolerance: Tolerances | None, versions: Mapping[str, str]) -> Entry:
        """An entry recording a CaseResult (pytest_dlperf.results.cases) as --update-baselines does: every
        gated metric's runs, or its figure."""
        c = result.case
        entry = cls.from_samples(model=c.model, precision=c.precision, batch_size=c.batch_size,
                                 image_size=c.image_size, backend=c.backend, topology=c.topology.name,
                                 throughputs=result.throughputs, tolerance=tolerance, versions=versions,
                                 variant=c.variant, data=c.data)
        entry.runs = {m.name: [float(x) for x in result.values(m.name)] for m in metrics.kept_by_run()
                      if result.values(m.name)}
        entry.stated = {m.name: float(v) for m in metrics.kept_as_figure() if (v := result.value(m.name)) is not None}
        entry.paces = list(getattr(result, "paces", []))
        entry.pace_contract = int(getattr(result, "pace_contract", 0)) if entry.paces else 0
        comm = getattr(result, "communication", None)
        entry.busbw = comm.busbw if comm is not None else None
        summary = getattr(result, "trace_summary", None)
        if summary:  # the recording's profile, for explaining a later regression without the recorded software
            entry.extra[PROFILE_KEY] = summary
        return entry

    def to_dict(self) -> dict[str, Any]:
        """The entry as schema 3 writes it."""
        d: dict[str, Any] = {
            "model": self.model, "precision": self.precision, "batch_size": self.batch_size,
            "image_size": self.image_size, "backend": self.backend, "topology": self.topology,
            "runs": {k: list(v) for k, v in self.runs.items()}, "stated": dict(self.stated),
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
        if self.data != SYNTHETIC:  # a synthetic case's entry names no data, as its id does
            d["data"] = self.data
        if self.sittings:
            d["sittings"] = [dict(x) for x in self.sittings]
        if self.busbw:
            d["busbw"] = self.busbw
        d.update({k: v for k, v in self.extra.items() if k not in d})
        return d

    @classmethod
    def from_dict(cls, key: str, d: Any, path: Path, schema: int = 3) -> Entry:
        """Validate one entry of a file (a schema 1 or 2 entry read through ``schema.entry_as_schema_3``);
        BaselineError names the entry and the field."""
        if schema < 3:
            d = entry_as_schema_3(path, key, d)
        where = f"entries[{key!r}]."
        if not isinstance(d, dict):
            raise BaselineError(path, f"entries[{key!r}] must be an object")
        r = _Reader(path, d, where)
        runs, stated = _runs(r), _stated(r)
        if metrics.PRIMARY.name not in runs and metrics.PRIMARY.name not in stated:
            raise r.fail("runs", f"has no {metrics.PRIMARY.name} runs, and 'stated' no {metrics.PRIMARY.name} figure: "
                                 "an entry needs one or the other")
        count = len(runs.get(metrics.PRIMARY.name, []))
        paces = r.positives("paces", required=False)
        if paces and len(paces) != count:
            raise r.fail("paces", f"has {len(paces)} items for {count} throughputs: one per run, in their "
                                  "order (record the case again with --update-baselines)")
        versions = r.get("versions", "dict")
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in versions.items()):
            raise r.fail("versions", "must map names to version strings")
        source = r.get("source", "str")
        if source != "recorded" and not source.startswith(("published:", "imported:")):
            raise r.fail("source", f"must be 'recorded', 'published: <citation>' or 'imported: <logs>', not {source!r}")
        known = {"model", "precision", "batch_size", "image_size", "backend", "topology", "runs", "stated",
                 "tolerance", "recorded_at", "versions", "source", "machine", "software", "variant", "data",
                 "paces", "pace_contract", "sittings", "busbw"}
        data = r.get("data", "str", required=False) or SYNTHETIC
        if data not in DATA_SOURCES:
            raise r.fail("data", f"is {data!r}, not one of the data sources ({', '.join(DATA_SOURCES)})")
        entry = cls(
            model=r.get("model", "str"), precision=r.get("precision", "str"),
            batch_size=r.get("batch_size", "int"), image_size=r.get("image_size", "int"),
            backend=r.get("backend", "str"), topology=r.get("topology", "str"),
            runs=runs, stated=stated, paces=paces,
            pace_contract=(r.get("pace_contract", "int", required=False) or 1) if paces else 0,
            tolerance=Tolerances.read(r, "tolerance", required=False),
            recorded_at=r.get("recorded_at", "str"), versions=dict(versions), source=source,
            machine=r.get("machine", "str", required=False) or "",
            software=r.get("software", "str", required=False) or "",
            variant=r.get("variant", "str", required=False) or "", data=data,
            sittings=_sittings(r, count),
            busbw=r.get("busbw", "number", required=False),
            extra={k: v for k, v in d.items() if k not in known},
        )
        try:
            real_key = entry.key
        except ValueError as exc:
            raise r.fail("topology", str(exc)) from None
        if real_key != key:
            raise BaselineError(path, f"entry key {key!r} does not match its fields, which make {real_key!r}")
        return entry


def _runs(r: _Reader) -> dict[str, list[float]]:
    """The entry's ``runs``, checked: each a gated per-launch metric, with its runs' figures (> 0; a count >= 0)."""
    d = r.get("runs", "dict")
    sub = _Reader(r.path, d, f"{r.where}runs.")
    known = metrics.names(metrics.kept_by_run())
    out = {}
    for name, values in d.items():
        if name not in known:
            raise sub.fail(name, f"is not a gated per-launch metric; expected {', '.join(known)}")
        counted = metrics.get(name).counted  # a count may be 0
        if not (isinstance(values, list) and values and all(
                (is_number(x) and x >= 0) if counted else positive_number(x) for x in values)):
            want = "counts (>= 0)" if counted else "numbers > 0"
            raise sub.fail(name, f"must be a non-empty list of {want}, not {json.dumps(values)[:60]}")
        out[name] = [float(x) for x in values]
    return out


def _stated(r: _Reader) -> dict[str, float]:
    """The entry's ``stated`` figures, checked: each a gated metric's, a number > 0."""
    d = r.get("stated", "dict", required=False) or {}
    sub = _Reader(r.path, d, f"{r.where}stated.")
    known = metrics.names(metrics.gated())
    for name in d:
        if name not in known:
            raise sub.fail(name, f"is not a gated metric; expected {', '.join(known)}")
    return {name: float(sub.get(name, "number")) for name in d}


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
    for s in entry.sittings or [{"runs": entry.run_count}]:
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
    count = old.run_count
    old_sittings = old.sittings or [{"recorded_at": old.recorded_at, "runs": count}]
    kept = old_sittings[-(keep - 1):]
    cut = sum(s["runs"] for s in old_sittings) - sum(s["runs"] for s in kept)
    # a metric's recorded runs join where they have one figure per run (throughput's always); else this
    # sitting's alone
    runs = {name: (list(old.runs[name][cut:]) if len(old.runs.get(name, [])) == count else []) + list(values)
            for name, values in new.runs.items()}
    return Entry(model=new.model, precision=new.precision, batch_size=new.batch_size, image_size=new.image_size,
                 backend=new.backend, topology=new.topology, variant=new.variant, data=new.data, runs=runs,
                 paces=list(old.paces[cut:]) + list(new.paces) if new.paces else [], pace_contract=new.pace_contract,
                 tolerance=new.tolerance, recorded_at=new.recorded_at, versions=dict(new.versions),
                 machine=new.machine,
                 sittings=[dict(s) for s in kept] + [{"recorded_at": new.recorded_at, "runs": new.run_count}],
                 busbw=new.busbw, extra=dict(new.extra))
