"""Import peers' benchmark logs into results (``dlperf import``): a directory laid out as
``<NnMg>/<name>_<run>.log`` (DLPerf's layout) becomes one case per name and topology, one repeat
per run, with the format's warm-up rule per run and the median over runs, as DLPerf's extract
scripts compute them; ``--record PROFILE`` stores them as a baseline profile. Every log is counted
in a case or refused by name: logs of two names that would make one case are kept apart as variants.
The import rules per format are in docs/import.md."""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from ..formats import FORMATS, MODEL_ALIASES, Hints, ParsedRun, our_model
from ..formats.ddp_bench import NO_DDP
from ..results import CaseResult, ResultSet, summarize
from ..records import RunRecord
from ..specs import SEQUENCE_MODELS, CaseSpec, Measurement, Topology
from . import layout
from .layout import LogFile

PRECISIONS = {"fp32": "fp32", "tf32": "fp32", "fp16": "amp", "amp": "amp", "mixed": "amp", "bf16": "amp"}
BACKEND_OF_FORMAT = {"dlperf-tf2": "tensorflow2", "tf_cnn": "tf_cnn", "horovod": "horovod",
                     "ddp-bench": "ddp", "dllogger": "dllogger", "plsc": "plsc"}


@dataclass
class Overrides:
    """What the command line says about the cases, over what the file names and logs say."""

    backend: str | None = None
    model: str | None = None
    precision: str | None = None
    batch_size: int | None = None
    image_size: int | None = None
    per_device_rates: bool = False  # the log's rates are per device (PaddleClas' ips): x devices
    row: str | None = None  # ddp-bench: the row's label to read ("no ddp", "1M/8G")


Runs = list[tuple[LogFile, ParsedRun]]


def _from_name(name: str) -> dict:
    """``rn50_b128_fp32`` -> model resnet50, batch 128, precision fp32 (what can be read)."""
    out: dict = {}
    for tok in re.split(r"[_\-.]", name.lower()):
        if tok in MODEL_ALIASES and "model" not in out:
            out["model"] = our_model(tok)
        elif tok in PRECISIONS and "precision" not in out:
            out["precision"] = PRECISIONS[tok]
        elif (m := re.fullmatch(r"b(?:s)?(\d+)", tok)) and "batch_size" not in out:
            out["batch_size"] = int(m[1])
    return out


def _parse(log: LogFile, fmt: str, warmup: int | None, over: Overrides) -> ParsedRun:
    t = log.topology
    hints = Hints(devices=t.world_size, nodes=t.nodes, model=over.model or _from_name(log.name).get("model"),
                  row=over.row, name=log.name)
    try:
        parsed = FORMATS[fmt](layout.read(log), warmup, hints)
    except ValueError as exc:
        raise ValueError(str(exc) if str(exc).startswith(str(log.path)) else f"{log.path}: {exc}") from None
    if over.per_device_rates:
        n = t.world_size
        parsed = replace(parsed, throughput=parsed.throughput * n, rates=[r * n for r in parsed.rates],
                         notes=[*parsed.notes, f"per-device rates x {n}"])
    if parsed.devices is not None and parsed.devices != t.world_size:
        raise ValueError(f"{log.path}: the log says {parsed.devices} devices, its directory {t.name}")
    return parsed


def load(logdir: Path, fmt: str, warmup: int | None = None, over: Overrides | None = None,
         notes: list[str] | None = None) -> ResultSet:
    """Every ``<NnMg>/<name>_<run>.log`` under logdir, parsed with ``fmt``; a case per name and
    topology. Raises ValueError naming the file, what is wrong and what to do; ``notes`` gets what was
    left out of the directory and the names kept apart as variants."""
    if fmt not in FORMATS:
        raise ValueError(f"--format {fmt!r}: one of {', '.join(FORMATS)}")
    if warmup is not None and warmup < 0:
        raise ValueError(f"--warmup-iters {warmup}: a count of steps or intervals, 0 or more")
    over, notes = over or Overrides(), notes if notes is not None else []
    found: dict[tuple[str, Topology], Runs] = {}
    for log in layout.find(logdir, notes):
        found.setdefault((log.name, log.topology), []).append((log, _parse(log, fmt, warmup, over)))
    cases = {key: _case(runs, fmt, over) for key, runs in found.items()}
    cases = _apart(cases, notes)
    results = ResultSet()
    for key, runs in found.items():
        _check_runs(runs)
        results.add(_result(cases[key], runs, fmt, warmup))
    return results


def _case(runs: Runs, fmt: str, over: Overrides) -> CaseSpec:
    """The case a name's runs in one topology make: the command line, else the log, else the name."""
    log, first = runs[0]
    guess = _from_name(log.name)
    model = over.model or (our_model(first.model) if first.model else None) or guess.get("model")
    batch = over.batch_size or first.batch_size or guess.get("batch_size")
    if model is None or batch is None:
        raise ValueError(f"{log.path}: cannot tell the {'model' if model is None else 'batch size'} from the "
                         f"name {log.name!r} or the log: pass --model / --batch-size")
    image = over.image_size or (128 if model in SEQUENCE_MODELS else 224)
    return CaseSpec(model=model, precision=over.precision or guess.get("precision", "fp32"), batch_size=batch,
                    image_size=image, topology=log.topology, backend=over.backend or BACKEND_OF_FORMAT[fmt],
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


def _check_runs(runs: Runs) -> None:
    """The runs of one case agree: one batch size, and as many measured intervals (a log cut short
    has fewer, and its mean is another window's)."""
    batches = {p.batch_size for _, p in runs if p.batch_size is not None}
    if len(batches) > 1:
        raise ValueError(f"{runs[0][0].path.parent}: the runs of {runs[0][0].name!r} ran batch sizes "
                         f"{sorted(batches)}: give each batch size its own name")
    most = max(len(p.rates) for _, p in runs)
    for log, p in runs:
        if len(p.rates) < most:
            raise ValueError(f"{log.path}: {len(p.rates)} measured interval(s) where the other runs of "
                             f"{log.name!r} have {most}: the log was cut short; re-run it or leave it out")


def _result(case: CaseSpec, runs: Runs, fmt: str, warmup: int | None) -> CaseResult:
    t = case.topology
    records = [RunRecord(repeat=i, meta={"parsed": {"format": fmt, "file": str(log.path), "throughput": p.throughput,
                                                    "rates": p.rates, "per_step": p.per_step,
                                                    "step_time": p.step_time, "notes": p.notes},
                                         "world_size": t.world_size, "model": case.model, "gpus": p.gpus},
                         steps=[], commands=[], logs={"log": str(log.path)}, wall_seconds=0.0)
               for i, (log, p) in enumerate(runs)]
    return summarize(case, Measurement(warmup_iters=warmup or 0, iters=0, repeats=len(runs), timeout=0), records)
