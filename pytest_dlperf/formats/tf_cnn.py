"""tf_cnn_benchmarks: its ``total images/sec`` over the measured steps, and the header."""
from __future__ import annotations

import re

from .base import Hints, ParsedRun, checked, line_of, need, rate

NAME = "tf_cnn"
_TOTAL = re.compile(r"total images/sec: (\S+)")
# [ \t], not \s: a \s* at a line's start spans the blank lines after it (quadratic on blank lines)
_BATCH = re.compile(r"^Batch size:[ \t]+(\d+) global[ \t]*\r?\n[ \t]*(\d+)(?:\.\d+)? per device", re.MULTILINE)
_DEVICES = re.compile(r"^Devices:[ \t]+\[(.*)\]", re.MULTILINE)
_MODEL = re.compile(r"^Model:[ \t]+(\S+)", re.MULTILINE)


def parse(text: str, warmup: int | None, hints: Hints = Hints()) -> ParsedRun:
    """``total images/sec: X``: tf_cnn_benchmarks' own figure over its measured steps, after its own
    warm-up batches (--warmup-iters does not apply). Its ``N\\timages/sec: R +/- ...`` lines are running
    means since the first step, not per-step figures: neither rates nor step times are taken from them."""
    totals = [(m[1], m.start()) for m in _TOTAL.finditer(text)]
    need(totals, NAME, "'total images/sec: X'")
    token, pos = totals[-1]
    total = rate(token, f"line {line_of(text, pos)} (total images/sec)")
    batch, devices, model = _BATCH.search(text), _DEVICES.search(text), _MODEL.search(text)
    names = re.findall(r"'([^']+)'", devices[1]) if devices else []
    gpus = any("gpu" in n.lower() for n in names) if names else None
    return checked(ParsedRun(total, [], devices=len(names) or None, batch_size=int(batch[2]) if batch else None,
                             model=model[1] if model else None, gpus=gpus,
                             notes=["total images/sec (the step lines are running means, not per-step times)"]),
                   NAME)
