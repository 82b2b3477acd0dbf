"""Import peers' benchmark logs into results (``dlperf import``): a directory laid out as
``<NnMg>/<name>_<run>.log`` (DLPerf's layout) becomes one case per name and topology, one repeat
per run, with the parsers' warm-up rule per run and the median over runs, as DLPerf's extract
scripts compute them; ``--record PROFILE`` stores them as a baseline profile."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..results import CaseResult, ResultSet, summarize
from ..records import RunRecord
from ..specs import SEQUENCE_MODELS, CaseSpec, Measurement, Topology
from .parsers import FORMATS, Hints, ParsedRun

TOPOLOGY_DIR = re.compile(r"^(\d+)n(\d+)g$")
RUN_FILE = re.compile(r"^(?P<name>.+?)_(?P<run>\d+)\.log$")
# Model names in peers' log names and headers -> ours.
MODEL_ALIASES = {"rn50": "resnet50", "resnet50": "resnet50", "resnet50_v1.5": "resnet50", "resnet": "resnet50",
                 "vgg16": "vgg16", "vgg": "vgg16", "bert": "bert-base", "bert-base": "bert-base",
                 "bert_base": "bert-base", "arcface": "arcface"}
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


def _from_name(name: str) -> dict:
    """``rn50_b128_fp32`` -> model resnet50, batch 128, precision fp32 (what can be read)."""
    out: dict = {}
    for tok in re.split(r"[_\-.]", name.lower()):
        if tok in MODEL_ALIASES and "model" not in out:
            out["model"] = MODEL_ALIASES[tok]
        elif tok in PRECISIONS and "precision" not in out:
            out["precision"] = PRECISIONS[tok]
        elif (m := re.fullmatch(r"b(?:s)?(\d+)", tok)) and "batch_size" not in out:
            out["batch_size"] = int(m[1])
    return out


def load(logdir: Path, fmt: str, warmup: int | None = None, over: Overrides | None = None) -> ResultSet:
    """Every ``<NnMg>/<name>_<run>.log`` under logdir, parsed with ``fmt``; a case per name and
    topology. Raises ValueError naming the file and what is missing."""
    if fmt not in FORMATS:
        raise ValueError(f"--format {fmt!r}: one of {', '.join(FORMATS)}")
    if not logdir.is_dir():
        raise ValueError(f"{logdir}: not a directory (expected <NnMg>/<name>_<run>.log files under it)")
    over = over or Overrides()
    parse = FORMATS[fmt]
    found: dict[tuple[str, Topology], list[tuple[Path, ParsedRun]]] = {}
    for topo_dir in sorted(p for p in logdir.iterdir() if p.is_dir()):
        m = TOPOLOGY_DIR.match(topo_dir.name)
        if not m:
            continue
        topology = Topology(int(m[1]), int(m[2]))
        for log in sorted(topo_dir.glob("*.log"), key=lambda p: (len(p.name), p.name)):
            f = RUN_FILE.match(log.name)
            if not f:
                raise ValueError(f"{log}: expected <name>_<run>.log")
            hints = Hints(devices=topology.world_size, model=over.model or _from_name(f["name"]).get("model"))
            try:
                parsed = parse(log.read_text(errors="replace"), warmup, hints)
            except ValueError as exc:
                raise ValueError(f"{log}: {exc}") from None
            if over.per_device_rates:
                n = topology.world_size
                parsed = ParsedRun(parsed.throughput * n, [r * n for r in parsed.rates], parsed.devices,
                                   parsed.batch_size, parsed.model, [*parsed.notes, f"per-device rates x {n}"])
            if parsed.devices is not None and parsed.devices != topology.world_size:
                raise ValueError(f"{log}: the log says {parsed.devices} devices, its directory {topology.name}")
            found.setdefault((f["name"], topology), []).append((log, parsed))
    if not found:
        raise ValueError(f"{logdir}: no <NnMg>/<name>_<run>.log files")
    results = ResultSet()
    for (name, topology), runs in found.items():
        results.add(_result(name, topology, runs, fmt, warmup, over))
    return results


def _result(name: str, topology: Topology, runs: list[tuple[Path, ParsedRun]], fmt: str, warmup: int | None,
            over: Overrides) -> CaseResult:
    guess = _from_name(name)
    first = runs[0][1]
    model = over.model or (MODEL_ALIASES.get(first.model.lower()) if first.model else None) or guess.get("model")
    batch = over.batch_size or first.batch_size or guess.get("batch_size")
    if model is None or batch is None:
        raise ValueError(f"{runs[0][0]}: cannot tell the {'model' if model is None else 'batch size'} from the "
                         f"name {name!r} or the log: pass --model / --batch-size")
    image = over.image_size or (128 if model in SEQUENCE_MODELS else 224)
    case = CaseSpec(model=model, precision=over.precision or guess.get("precision", "fp32"), batch_size=batch,
                    image_size=image, topology=topology, backend=over.backend or BACKEND_OF_FORMAT[fmt])
    records = [RunRecord(repeat=i, meta={"parsed": {"format": fmt, "file": str(path), "throughput": parsed.throughput,
                                                    "rates": parsed.rates, "notes": parsed.notes},
                                         "world_size": topology.world_size, "model": model},
                         steps=[], commands=[], logs={"log": str(path)}, wall_seconds=0.0)
               for i, (path, parsed) in enumerate(runs)]
    return summarize(case, Measurement(warmup_iters=warmup or 0, iters=0, repeats=len(runs), timeout=0), records)
