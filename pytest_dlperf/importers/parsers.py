"""Parsers of peers' benchmark output: one function per format, text of one run -> ParsedRun.

Each takes the figures the tool itself prints and applies the field's rule (DLPerf's): the
intervals or steps of the warm-up are dropped, the run's throughput is the mean of the remaining
rates (or the tool's own total where it prints one over its measured steps), and the case's
figure is the median over runs (``importers.load``). A log without the lines a format needs raises
``ValueError`` saying which lines were expected.
"""
from __future__ import annotations

import json
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class ParsedRun:
    """What one log says: the run's global samples/s and the measured rates it came from."""

    throughput: float  # global samples/s
    rates: list[float] = field(default_factory=list)  # global samples/s per measured interval or step
    devices: int | None = None
    batch_size: int | None = None  # per device
    model: str | None = None
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Hints:
    """What the layout says about a log: its directory's device count, the model asked for."""

    devices: int | None = None
    model: str | None = None


def _need(found: list, fmt: str, what: str) -> None:
    if not found:
        raise ValueError(f"no {what} lines: not a {fmt} log")


# -- DLPerf's TensorFlow 2 runs (TF official models' keras_utils.TimeHistory)
_TIME_HISTORY = re.compile(r"TimeHistory: ([\d.]+) seconds, ([\d.]+) examples/second between steps (\d+) and (\d+)")


def dlperf_tf2(text: str, warmup: int | None, hints: Hints = Hints()) -> ParsedRun:
    """``TimeHistory: S seconds, R examples/second between steps A and B``: intervals that start
    before the warm-up (default 100 steps, DLPerf's) are dropped; throughput = their mean."""
    warmup = 100 if warmup is None else warmup
    rows = [(float(m[2]), int(m[3])) for m in _TIME_HISTORY.finditer(text)]
    _need(rows, "dlperf-tf2", "'TimeHistory: ... examples/second between steps A and B'")
    rates = [r for r, start in rows if start >= warmup]
    if not rates:
        raise ValueError(f"every TimeHistory interval starts before step {warmup} (--warmup-iters)")
    return ParsedRun(statistics.fmean(rates), rates)


# -- tf_cnn_benchmarks
_TF_CNN_STEP = re.compile(r"^\s*(\d+)\timages/sec: ([\d.]+) \+/- [\d.]+", re.MULTILINE)
_TF_CNN_TOTAL = re.compile(r"total images/sec: ([\d.]+)")
_TF_CNN_BATCH = re.compile(r"^Batch size:\s+(\d+) global\s*\n\s*(\d+)(?:\.\d+)? per device", re.MULTILINE)
_TF_CNN_DEVICES = re.compile(r"^Devices:\s+\[(.*)\]", re.MULTILINE)
_TF_CNN_MODEL = re.compile(r"^Model:\s+(\S+)", re.MULTILINE)


def tf_cnn(text: str, warmup: int | None, hints: Hints = Hints()) -> ParsedRun:
    """``total images/sec: X`` (tf_cnn_benchmarks' own figure over its measured steps, after its
    warm-up batches); the per-step ``N\\timages/sec: R +/- ...`` lines past --warmup-iters are the rates."""
    totals = [float(m[1]) for m in _TF_CNN_TOTAL.finditer(text)]
    _need(totals, "tf_cnn", "'total images/sec: X'")
    steps = [(int(m[1]), float(m[2])) for m in _TF_CNN_STEP.finditer(text)]
    rates = [r for s, r in steps if s > (warmup or 0)]
    batch = _TF_CNN_BATCH.search(text)
    devices = _TF_CNN_DEVICES.search(text)
    model = _TF_CNN_MODEL.search(text)
    n = len(re.findall(r"'[^']+'", devices[1])) if devices else None
    return ParsedRun(totals[-1], rates, devices=n or None,
                     batch_size=int(batch[2]) if batch else None, model=model[1] if model else None)


# -- Horovod's synthetic benchmarks (examples/*_synthetic_benchmark.py)
_HVD_ITER = re.compile(r"Iter #(\d+): ([\d.]+) img/sec per GPU")
_HVD_TOTAL = re.compile(r"Total img/sec on (\d+) GPU\(s\): ([\d.]+) \+-([\d.]+)")
_HVD_BATCH = re.compile(r"(?:^|:)Batch size: (\d+)", re.MULTILINE)  # behind mpirun's [1,0]<stdout>: too
_HVD_MODEL = re.compile(r"(?:^|:)Model: (\S+)", re.MULTILINE)


def horovod(text: str, warmup: int | None, hints: Hints = Hints()) -> ParsedRun:
    """``Total img/sec on N GPU(s): X +-Y`` (the script's mean over its measured iterations, times
    N); rates: ``Iter #i: R img/sec per GPU`` past --warmup-iters, times N."""
    totals = [(int(m[1]), float(m[2])) for m in _HVD_TOTAL.finditer(text)]
    _need(totals, "horovod", "'Total img/sec on N GPU(s): X +-Y'")
    devices, total = totals[-1]
    rates = [float(m[2]) * devices for m in _HVD_ITER.finditer(text) if int(m[1]) >= (warmup or 0)]
    batch = _HVD_BATCH.search(text)
    model = _HVD_MODEL.search(text)
    return ParsedRun(total, rates, devices=devices, batch_size=int(batch[1]) if batch else None,
                     model=model[1] if model else None)


# -- PyTorch's DDP benchmark (benchmarks/distributed/ddp/benchmark.py), as ACSpeed's seed prints it
_DDP_HEADER = re.compile(r"^Benchmark: (\S+) with batch size (\d+)", re.MULTILINE)
_DDP_ROW = re.compile(r"^\s*(\d+) GPUs --\s+([^:]+):\s+p50:\s+([\d.]+)s\s+(\d+)/s", re.MULTILINE)


def ddp_bench(text: str, warmup: int | None, hints: Hints = Hints()) -> ParsedRun:
    """``   8 GPUs --    1M/8G:  p50:  0.073s     440/s  p75: ...``: the /s figure is samples/s per
    GPU (batch / the p50 step time over every rank's measured iterations); throughput = it x the
    GPUs. The row is the one whose GPU count is the directory's (DDP rows, not "no ddp"), in the
    block of the model asked for (``Benchmark: <model> with batch size B``), else the first block."""
    blocks = [(m.group(1), int(m.group(2)), m.end()) for m in _DDP_HEADER.finditer(text)] or [(None, None, 0)]
    chosen = next((b for b in blocks if hints.model and b[0] and hints.model.replace("-", "") in b[0].lower()), blocks[0])
    start = chosen[2]
    end = next((b[2] for b in blocks if b[2] > start), len(text))
    rows = [m for m in _DDP_ROW.finditer(text, start, end) if "no ddp" not in m.group(2)]
    _need(rows, "ddp-bench", "'N GPUs -- kM/NG:  p50:  Ts  R/s ...'")
    if hints.devices is not None:
        rows = [m for m in rows if int(m.group(1)) == hints.devices]
        if not rows:
            raise ValueError(f"no row for {hints.devices} GPUs (the directory's topology)")
    m = rows[-1]
    devices, per_gpu = int(m.group(1)), float(m.group(4))
    return ParsedRun(per_gpu * devices, [per_gpu * devices], devices=devices, batch_size=chosen[1], model=chosen[0],
                     notes=["throughput from the p50 step time (the benchmark prints no wall-time total)"])


# -- NVIDIA DLLogger (DeepLearningExamples)
def dllogger(text: str, warmup: int | None, hints: Hints = Hints()) -> ParsedRun:
    """``DLLL {json}`` records (a step's figures may be split over two records). The run's figure is
    DLLogger's own summary (``"step": []``) ``train.total_ips`` (all GPUs: world size x batch / step
    time), else the mean of the per-epoch records (``"step": [e]``); with --warmup-iters, the mean of
    the per-iteration records (``"step": [e, i]``) after that many."""
    by_step: dict[tuple, dict] = {}
    for line in text.splitlines():
        i = line.find("DLLL ")
        if i < 0:
            continue
        try:
            rec = json.loads(line[i + 5:])
        except json.JSONDecodeError:
            continue
        if not isinstance(rec, dict):
            continue
        step, data = rec.get("step"), rec.get("data")
        if isinstance(step, list) and rec.get("type", "LOG") == "LOG" and isinstance(data, dict):
            by_step.setdefault(tuple(str(s) for s in step), {}).update(data)

    def ips(data: dict) -> float | None:
        keys = [k for k in data if k.endswith("total_ips")] or [k for k in data if k.endswith(".ips")]
        v = data.get(keys[0]) if keys else None
        return float(v) if isinstance(v, (int, float)) else None

    iters = [v for k, d in by_step.items() if len(k) == 2 and (v := ips(d)) is not None]
    epochs = [v for k, d in by_step.items() if len(k) == 1 and (v := ips(d)) is not None]
    summary = ips(by_step.get((), {}))
    if warmup is not None and iters[warmup:]:
        return ParsedRun(statistics.fmean(iters[warmup:]), iters[warmup:])
    if summary is not None:
        return ParsedRun(summary, epochs or [summary], notes=["DLLogger's run summary"])
    if epochs:
        return ParsedRun(statistics.fmean(epochs), epochs)
    if iters:
        return ParsedRun(statistics.fmean(iters), iters)
    raise ValueError("no 'DLLL {json}' records with a total_ips figure: not a dllogger log")


# -- PaddlePaddle PLSC (and PaddleClas, whose lines have the same shape)
_PLSC_IPS = re.compile(r"ips: ([\d.]+) (?:images|samples)/s(?:ec)?")


def plsc(text: str, warmup: int | None, hints: Hints = Hints()) -> ParsedRun:
    """``... batch_cost: 0.32s, reader_cost: ..., ips: R images/sec, eta: ...`` per logged interval:
    PLSC's ips is global (batch x world size / batch cost); throughput = the mean over the
    intervals after --warmup-iters of them. PaddleClas prints the same line per GPU: pass
    --per-device-rates for its logs."""
    rates = [float(m[1]) for m in _PLSC_IPS.finditer(text)]
    _need(rates, "plsc", "'ips: R images/sec'")
    kept = rates[warmup or 0:]
    if not kept:
        raise ValueError(f"every ips line falls in the warm-up ({warmup} intervals, --warmup-iters)")
    return ParsedRun(statistics.fmean(kept), kept)


FORMATS: dict[str, Callable[..., ParsedRun]] = {
    "dlperf-tf2": dlperf_tf2, "tf_cnn": tf_cnn, "horovod": horovod, "ddp-bench": ddp_bench,
    "dllogger": dllogger, "plsc": plsc,
}
