"""Import peers' benchmark logs into results (``dlperf import``): a directory laid out as
``<NnMg>/<name>_<run>.log`` (DLPerf's layout) becomes one case per name and topology, one repeat
per run, with the format's warm-up rule per run and the median over runs, as DLPerf's extract
scripts compute them; ``--record PROFILE`` stores them as a baseline profile. Every log is counted
in a case or refused by name: logs of two names that would make one case are kept apart as variants,
and two names that cannot be told apart are refused. What the import cannot vouch for (a log whose
end cannot be told, a flag used over a header) is said: ``warnings``, on the terminal and in
results.json. The import rules per format are in docs/import.md."""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from ..formats import FORMATS, Hints, Origin, ParsedRun
from ..formats.ddp_bench import NO_DDP
from ..results.cases import CaseResult, ResultSet, summarize
from ..results.records import RunRecord
from ..specs import CaseSpec, Measurement, Topology
from . import layout
from .fields import FORCE, Given, from_name, resolve
from .layout import LogFile

BACKEND_OF_FORMAT = {"dlperf-tf2": "tensorflow2", "tf_cnn": "tf_cnn", "horovod": "horovod",
                     "ddp-bench": "ddp", "dllogger": "dllogger", "plsc": "plsc"}


@dataclass
class Overrides:
    """What the command line says about the cases, over what the file names say; over what a log's
    header says only with ``force`` (--override-header)."""

    backend: str | None = None
    model: str | None = None
    precision: str | None = None
    batch_size: int | None = None
    image_size: int | None = None
    per_device_rates: bool = False  # the log's rates are per device (PaddleClas' ips): x devices
    row: str | None = None  # ddp-bench: the row's label to read ("no ddp", "1M/8G")
    force: bool = False  # --override-header: a flag that contradicts a log's header is used (and said)

    @property
    def given(self) -> Given:
        return Given(self.model, self.batch_size, self.precision, self.image_size, self.force)


Runs = list[tuple[LogFile, ParsedRun]]


def _parse(log: LogFile, fmt: str, warmup: int | None, over: Overrides) -> ParsedRun:
    t = log.topology
    hints = Hints(devices=t.world_size, nodes=t.nodes, model=over.model or from_name(log.name).get("model"),
                  row=over.row, name=log.name)
    try:
        parsed = FORMATS[fmt](layout.read(log), warmup, hints)
    except ValueError as exc:
        raise ValueError(str(exc) if str(exc).startswith(str(log.path)) else f"{log.path}: {exc}") from None
    if over.per_device_rates:
        n = t.world_size
        parsed = replace(parsed, throughput=parsed.throughput * n, rates=[r * n for r in parsed.rates],
                         notes=[*parsed.notes, f"per-device rates x {n}"], origin=Origin.DERIVED,
                         source=f"{parsed.source}, x {n} devices (--per-device-rates)")
    if parsed.devices is not None and parsed.devices != t.world_size:
        where = f" (its line {parsed.header['devices']})" if "devices" in parsed.header else ""
        raise ValueError(f"{log.path}: the log says {parsed.devices} devices, its directory {t.name}{where}: move it "
                         "to the directory of its topology")
    return parsed


def load(logdir: Path, fmt: str, warmup: int | None = None, over: Overrides | None = None,
         notes: list[str] | None = None, warnings: list[str] | None = None) -> ResultSet:
    """Every ``<NnMg>/<name>_<run>.log`` under logdir, parsed with ``fmt``; a case per name and
    topology. Raises ValueError naming the file, what is wrong and what to do; ``notes`` gets what was
    left out of the directory, the names kept apart as variants and what was assumed; ``warnings``
    what the import cannot vouch for, each naming its file (also in the runs' ``meta.parsed``)."""
    if fmt not in FORMATS:
        raise ValueError(f"--format {fmt!r}: one of {', '.join(FORMATS)}")
    if warmup is not None and warmup < 0:
        raise ValueError(f"--warmup-iters {warmup}: a count of steps or intervals, 0 or more")
    over, notes = over or Overrides(), notes if notes is not None else []
    warnings = warnings if warnings is not None else []
    found: dict[tuple[str, Topology], Runs] = {}
    fields: dict[tuple[str, Topology], dict] = {}
    for log in layout.find(logdir, notes):
        parsed = _parse(log, fmt, warmup, over)
        got = resolve(log, parsed, over.given)
        parsed.warnings += got.warnings
        key = (log.name, log.topology)
        if key not in fields:
            fields[key] = got.values
            notes += [f"{log.path.parent / log.name}_*.log: {n}" for n in got.notes]
        elif (diff := [k for k in got.values if got.values[k] != fields[key][k]]):
            raise ValueError(f"{log.path}: {diff[0].replace('_', ' ')} {got.values[diff[0]]} where the other runs of "
                             f"{log.name!r} in {log.topology.name} have {fields[key][diff[0]]}: give each its own name")
        found.setdefault(key, []).append((log, parsed))
    cases = _apart({key: _case(runs, fields[key], fmt, over) for key, runs in found.items()}, notes)
    _distinct(cases)
    results = ResultSet()
    for key, runs in found.items():
        _check_runs(runs)
        results.add(_result(cases[key], runs, fmt, warmup))
        warnings += [f"{log.path}: {w}" for log, p in runs for w in p.warnings]
    return results


def _case(runs: Runs, values: dict, fmt: str, over: Overrides) -> CaseSpec:
    """The case a name's runs in one topology make, from their resolved fields (``fields.resolve``)."""
    log = runs[0][0]
    if values["model"] is None or values["batch_size"] is None:
        missing = "model" if values["model"] is None else "batch size"
        raise ValueError(f"{log.path}: cannot tell the {missing} from the name {log.name!r} or the log: pass "
                         f"{'--model' if missing == 'model' else '--batch-size'}")
    return CaseSpec(model=str(values["model"]), precision=str(values["precision"]),
                    batch_size=int(values["batch_size"]), image_size=int(values["image_size"]), topology=log.topology,
                    backend=over.backend or BACKEND_OF_FORMAT[fmt],
                    variant="noddp" if fmt == "ddp-bench" and over.row == NO_DDP else "")


def _apart(cases: dict[tuple[str, Topology], CaseSpec], notes: list[str]) -> dict[tuple[str, Topology], CaseSpec]:
    """Names whose logs would make one case (a rerun named differently, one tool's runs of two
    models under one --model) are kept apart: each such name's cases get the name as their variant."""
    by_case: dict[CaseSpec, list[str]] = {}
    for (name, _), case in cases.items():
        by_case.setdefault(case, []).append(name)
    clash = {n for names in by_case.values() if len(names) > 1 for n in names}
    for case, names in by_case.items():
        if len(names) > 1:
            notes.append(f"logs named {', '.join(repr(n) for n in names)} in {case.topology.name} make one case "
                         f"({case.key}): kept apart as variants {', '.join(_variant(case, n) for n in names)}")
    return {key: replace(case, variant=_variant(case, key[0])) if key[0] in clash else case
            for key, case in cases.items()}


def _variant(case: CaseSpec, name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9.]+", "_", name).strip("_")
    return f"{case.variant}_{slug}" if case.variant else slug


def _distinct(cases: dict[tuple[str, Topology], CaseSpec]) -> None:
    """Refuses two names whose cases are one even as variants (``rn50-b128`` and ``rn50_b128``: a
    variant holds letters, digits, dots and ``_`` only): their runs would be merged into one case."""
    seen: dict[CaseSpec, str] = {}
    for (name, topology), case in cases.items():
        other = seen.setdefault(case, name)
        if other != name:
            raise ValueError(f"logs named {other!r} and {name!r} in {topology.name} would make one case ({case.key}): "
                             "their names differ only in characters a case name cannot hold ('-' against '_'); "
                             "rename one so that they differ in a letter or digit")


def _check_runs(runs: Runs) -> None:
    """The runs of one case agree: as many measured intervals (a log cut short has fewer, and its
    mean is another window's)."""
    most = max(len(p.rates) for _, p in runs)
    for log, p in runs:
        if len(p.rates) < most:
            raise ValueError(f"{log.path}: {len(p.rates)} measured interval(s) where the other runs of "
                             f"{log.name!r} have {most}: the log was cut short; re-run it or leave it out")


def _parsed_meta(fmt: str, log: LogFile, p: ParsedRun) -> dict:
    """What results.json keeps of a run: its figures, where the throughput comes from (read, the mean
    of read figures, or derived) and what the import cannot vouch for."""
    return {"format": fmt, "file": str(log.path), "throughput": p.throughput, "origin": p.origin.value,
            "source": p.source, "rates": p.rates, "per_step": p.per_step, "step_time": p.step_time,
            "per_device": p.per_device, "header": p.header, "notes": p.notes, "warnings": p.warnings}


def _result(case: CaseSpec, runs: Runs, fmt: str, warmup: int | None) -> CaseResult:
    t = case.topology
    records = [RunRecord(repeat=i, meta={"parsed": _parsed_meta(fmt, log, p), "world_size": t.world_size,
                                         "model": case.model, "gpus": p.gpus},
                         steps=[], commands=[], logs={"log": str(log.path)}, wall_seconds=0.0)
               for i, (log, p) in enumerate(runs)]
    result = summarize(case, Measurement(warmup_iters=warmup or 0, iters=0, repeats=len(runs), timeout=0), records)
    if len(runs) == 1 and runs[0][1].per_device and result.step_time == runs[0][1].step_time:
        result.per_device = dict(runs[0][1].per_device)  # the tool's own per-device figures, not recomputed
    return result


__all__ = ["BACKEND_OF_FORMAT", "FORCE", "Overrides", "load"]
