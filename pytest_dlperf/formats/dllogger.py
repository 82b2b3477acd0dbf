"""NVIDIA DLLogger (DeepLearningExamples): ``DLLL {json}`` records."""
from __future__ import annotations

import json
import math
import statistics

from .base import Hints, ParsedRun, checked

NAME = "dllogger"


def _records(text: str) -> dict[tuple, dict]:
    """LOG records by step, a step's records merged (DLLogger may split one step over two)."""
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
    return by_step


def _ips(step: tuple, data: dict) -> float | None:
    """The record's throughput (``*total_ips``, else ``*.ips``); refuses one that is not a throughput."""
    keys = [k for k in data if k.endswith("total_ips")] or [k for k in data if k.endswith(".ips")]
    if not keys:
        return None
    v = data[keys[0]]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and v > 0):
        raise ValueError(f"the record of step {list(step)} has {keys[0]} {v!r}, not a throughput (a positive "
                         "finite number): the run did not measure; re-run it or leave the log out")
    return float(v)


def parse(text: str, warmup: int | None, hints: Hints = Hints()) -> ParsedRun:
    """The run's figure is DLLogger's own summary (``"step": []``) ``train.total_ips`` (all GPUs: world
    size x batch / step time), else the mean of the per-epoch records (``"step": [e]``); with
    --warmup-iters, the mean of the per-iteration records (``"step": [e, i]``, each one step's) after
    that many."""
    by_step = _records(text)
    iters = [v for k, d in by_step.items() if len(k) == 2 and (v := _ips(k, d)) is not None]
    epochs = [v for k, d in by_step.items() if len(k) == 1 and (v := _ips(k, d)) is not None]
    summary = _ips((), by_step.get((), {}))
    if warmup is not None and iters[warmup:]:
        run = ParsedRun(statistics.fmean(iters[warmup:]), iters[warmup:], per_step=True)
    elif summary is not None:
        run = ParsedRun(summary, epochs or [summary], notes=["DLLogger's run summary"])
    elif epochs:
        run = ParsedRun(statistics.fmean(epochs), epochs)
    elif iters:
        run = ParsedRun(statistics.fmean(iters), iters, per_step=True)
    else:
        raise ValueError("no 'DLLL {json}' records with a total_ips figure: not a dllogger log")
    return checked(run, NAME)
