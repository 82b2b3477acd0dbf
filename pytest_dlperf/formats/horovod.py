"""Horovod's synthetic benchmarks (examples/*_synthetic_benchmark.py)."""
from __future__ import annotations

import re

from .base import Hints, ParsedRun, checked, line_of, need, rate

NAME = "horovod"
_ITER = re.compile(r"Iter #(\d+): (\S+) img/sec per (GPU|CPU)")
_TOTAL = re.compile(r"Total img/sec on (\d+) (GPU|CPU)\(s\): (\S+) \+-(\S+)")
_BATCH = re.compile(r"(?:^|:)Batch size: (\d+)", re.MULTILINE)  # behind mpirun's [1,0]<stdout>: too
_MODEL = re.compile(r"(?:^|:)Model: (\S+)", re.MULTILINE)


def parse(text: str, warmup: int | None, hints: Hints = Hints()) -> ParsedRun:
    """``Total img/sec on N GPU(s): X +-Y`` (the script's mean over its measured iterations, times N);
    rates: ``Iter #i: R img/sec per GPU`` past --warmup-iters, times N. An iteration is several
    batches (the script's --num-batches-per-iter), so its rate is an interval's, not a step's."""
    totals = list(_TOTAL.finditer(text))
    need(totals, NAME, "'Total img/sec on N GPU(s): X +-Y'")
    last = totals[-1]
    devices, total = int(last[1]), rate(last[3], f"line {line_of(text, last.start())} (Total img/sec)")
    if devices < 1:
        raise ValueError(f"line {line_of(text, last.start())}: a total on {devices} devices measured nothing")
    rates = [rate(m[2], f"line {line_of(text, m.start())}") * devices for m in _ITER.finditer(text)
             if int(m[1]) >= (warmup or 0)]
    batch, model = _BATCH.search(text), _MODEL.search(text)
    return checked(ParsedRun(total, rates, devices=devices, batch_size=int(batch[1]) if batch else None,
                             model=model[1] if model else None, gpus=last[2] == "GPU"), NAME)
