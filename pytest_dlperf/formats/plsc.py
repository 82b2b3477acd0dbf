"""PaddlePaddle PLSC (and PaddleClas, whose lines have the same shape): ``ips:`` per logged interval."""
from __future__ import annotations

import re
import statistics

from .base import Hints, ParsedRun, checked, line_of, need, rate

NAME = "plsc"
_IPS = re.compile(r"ips: (\S+) (?:images|samples)/s(?:ec)?")


def parse(text: str, warmup: int | None, hints: Hints = Hints()) -> ParsedRun:
    """``... batch_cost: 0.32s, reader_cost: ..., ips: R images/sec, eta: ...`` per logged interval:
    PLSC's ips is global (batch x world size / batch cost); throughput = the mean over the intervals
    after --warmup-iters of them. PaddleClas prints the same line per GPU: pass --per-device-rates for
    its logs."""
    rates = [rate(m[1], f"line {line_of(text, m.start())}") for m in _IPS.finditer(text)]
    need(rates, NAME, "'ips: R images/sec'")
    kept = rates[warmup or 0:]
    if not kept:
        raise ValueError(f"every ips line falls in the warm-up ({warmup} intervals, --warmup-iters)")
    return checked(ParsedRun(statistics.fmean(kept), kept), NAME)
