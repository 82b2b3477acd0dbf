"""NVIDIA DLLogger (DeepLearningExamples): ``DLLL {json}`` records, the ``"step": "PARAMETER"`` header
and the run's summary (``"step": []``), which DLLogger writes when the run ends."""
from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field

from .base import Hints, LogText, Origin, ParsedRun, checked, plausible

NAME = "dllogger"
_PRECISIONS = {"amp": "amp", "fp16": "amp", "bf16": "amp", "tf32": "fp32", "fp32": "fp32"}


@dataclass
class Records:
    """A log's LOG records by step (a step's records merged: DLLogger may split one step over two),
    the line of each step's first record, and the header's data and line."""

    by_step: dict[tuple, dict] = field(default_factory=dict)
    line: dict[tuple, int] = field(default_factory=dict)
    header: dict = field(default_factory=dict)
    header_line: int | None = None
    last_line: int = 0


def _records(text: str) -> Records:
    """Every ``DLLL`` line as a record; a line that is not one (damaged, or cut where the log ends) is
    refused by its number, and so are two records of one step that disagree (two runs in one log)."""
    out = Records()
    lines = text.split("\n")
    for n, line in enumerate(lines, 1):
        i = line.find("DLLL ")
        if i < 0:
            continue
        if n == len(lines) and not text.endswith("\n"):
            raise ValueError(f"line {n}: the log ends inside this DLLL record (no newline after it): it was cut short; "
                             "re-run it or leave the log out")
        try:
            rec = json.loads(line[i + 5:])
        except (ValueError, RecursionError) as exc:  # JSONDecodeError, an integer of too many digits, deep nesting
            raise ValueError(f"line {n}: a DLLL record that is not JSON ({type(exc).__name__}): the log is damaged; "
                             "re-run it or leave the log out") from None
        if not isinstance(rec, dict):
            raise ValueError(f"line {n}: a DLLL record that is not a JSON object: the log is damaged")
        step, data = rec.get("step"), rec.get("data")
        if step == "PARAMETER" and isinstance(data, dict):
            if out.header_line is not None and data != out.header:
                raise ValueError(f"lines {out.header_line} and {n}: two PARAMETER headers that differ: this log holds "
                                 "several runs; split them into a log each")
            out.header, out.header_line = data, out.header_line or n
        elif isinstance(step, list) and rec.get("type", "LOG") == "LOG" and isinstance(data, dict):
            key = tuple(str(s) for s in step)
            merged = out.by_step.get(key)
            if merged is None:
                out.by_step[key], out.line[key] = dict(data), n
            else:
                for k, v in data.items():
                    if k in merged and merged[k] != v:
                        raise ValueError(f"lines {out.line[key]} and {n}: two records of step {list(step)} give {k} "
                                         f"{merged[k]!r} and {v!r}: this log holds several runs; split them into a "
                                         "log each")
                    merged[k] = v
            out.last_line = n
    return out


def _ips(step: tuple, data: dict, line: int | None) -> float | None:
    """The record's training throughput (``train.total_ips``, else another ``*total_ips`` or ``*.ips``
    that is not validation's); refuses one that is not a throughput."""
    keys = ["train.total_ips"] if "train.total_ips" in data else \
        [k for k in data if k.endswith("total_ips") and not k.startswith(("val", "eval"))] \
        or [k for k in data if k.endswith(".ips") and not k.startswith(("val", "eval"))]
    if not keys:
        return None
    v = data[keys[0]]
    where = f"line {line}: the record of step {list(step)}"
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and v > 0):
        raise ValueError(f"{where} has {keys[0]} {v!r}, not a throughput (a positive finite number): the run did not "
                         "measure; re-run it or leave the log out")
    return plausible(float(v), where)


def _header(rec: Records, run: ParsedRun) -> None:
    """The PARAMETER record's arch, batch_size (per GPU), precision (amp / fp16 flags or a precision
    name) and world_size, each where it has one."""
    h, found = rec.header, {}
    if isinstance(h.get("arch"), str):
        run.model, found["model"] = h["arch"], True
    if isinstance(h.get("batch_size"), int) and not isinstance(h["batch_size"], bool) and h["batch_size"] > 0:
        run.batch_size, found["batch_size"] = h["batch_size"], True
    if isinstance(h.get("world_size"), int) and not isinstance(h["world_size"], bool) and h["world_size"] > 0:
        run.devices, found["devices"] = h["world_size"], True
    flags = [h[k] for k in ("amp", "fp16") if isinstance(h.get(k), bool)]
    if isinstance(h.get("precision"), str) and h["precision"].lower() in _PRECISIONS:
        run.precision = _PRECISIONS[h["precision"].lower()]
    elif flags:
        run.precision = "amp" if any(flags) else "fp32"
    if run.precision:
        found["precision"] = True
    run.header = {k: rec.header_line for k in found if rec.header_line is not None}


def _consecutive(keys: list[tuple]) -> bool:
    """Whether per-iteration records are every iteration's (``[e, i]``, ``[e, i+1]``): else each is
    a logging interval's figure, not a step's."""
    try:
        steps = [(int(e), int(i)) for e, i in keys]
    except ValueError:
        return False
    return len(steps) > 1 and all(b == (e, i + 1) for (e, i), b in zip(steps, steps[1:]) if b[0] == e)


def parse(text: str, warmup: int | None, hints: Hints = Hints()) -> ParsedRun:
    """The run's figure is DLLogger's own summary (``"step": []``) ``train.total_ips`` (all GPUs: world
    size x batch / step time); with --warmup-iters, the mean of the per-iteration records (``"step":
    [e, i]``) after that many. A log without its summary was cut short: refused, unless --warmup-iters
    asks for the per-iteration records' mean, which is then imported with that said. The records are
    steps (with step times) only where they are every iteration's, not one every N iterations."""
    rec = _records(text)
    iters = [(k, v) for k, d in rec.by_step.items() if len(k) == 2 and (v := _ips(k, d, rec.line[k])) is not None]
    epochs = [v for k, d in rec.by_step.items() if len(k) == 1 and (v := _ips(k, d, rec.line[k])) is not None]
    summary = _ips((), rec.by_step.get((), {}), rec.line.get(()))
    warnings: list[str] = []
    if not iters and not epochs and summary is None:
        raise ValueError("no 'DLLL {json}' records with a total_ips figure: not a dllogger log")
    if warmup is not None and iters[warmup:]:
        kept = iters[warmup:]
        every = _consecutive([k for k, _ in iters])
        rates = [v for _, v in kept]
        run = ParsedRun(statistics.fmean(rates), rates, per_step=every, origin=Origin.MEAN,
                        source=f"the mean of {len(kept)} per-iteration records after the first {warmup} (lines "
                               f"{rec.line[kept[0][0]]}-{rec.line[kept[-1][0]]})")
        if not every:
            run.notes.append("the per-iteration records are one every few iterations (interval figures): no step times")
        if summary is None:
            warnings.append(f"no run summary record (\"step\": []) after line {rec.last_line}: DLLogger writes it when "
                            "the run ends, so the log may be cut short; the figure is the mean of the records it has")
    elif summary is not None:
        run = ParsedRun(summary, epochs or [summary], notes=["DLLogger's run summary"],
                        source=f"DLLogger's run summary (\"step\": [], line {rec.line[()]})")
    else:
        raise ValueError(f"line {rec.last_line}: no run summary record (\"step\": []) after the last record: DLLogger "
                         "writes it when the run ends, so the log was cut short; re-run it, or pass --warmup-iters N "
                         "to import the mean of its per-iteration records after N (said as such)")
    run.warnings += warnings
    _header(rec, run)
    return checked(run, NAME, LogText(text, ("DLLL ",)))
