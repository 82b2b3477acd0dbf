"""PaddlePaddle PLSC (and PaddleClas, whose lines have the same shape): ``ips:`` per logged interval."""
from __future__ import annotations

import re
import statistics

from .base import Hints, LogText, Origin, ParsedRun, checked, common_product, need, rate, seconds

NAME = "plsc"
_IPS = re.compile(r"ips: (\S+) (?:images|samples)/s(?:ec)?")
_COST = re.compile(r"batch_cost: (\S+?)s?,")


def parse(text: str, warmup: int | None, hints: Hints = Hints()) -> ParsedRun:
    """``... batch_cost: 0.32s, reader_cost: ..., ips: R images/sec, eta: ...`` per logged interval:
    PLSC's ips is global (batch x world size / batch cost); throughput = the mean over the intervals
    after --warmup-iters of them. PaddleClas prints the same line per GPU: pass --per-device-rates for
    its logs. Each line's batch_cost x ips is its batch: one batch must fit every line (a damaged
    figure is refused). The tool prints no end-of-run line, so whether a log was cut short after a
    whole line cannot be told: that is said with the figure."""
    log = LogText(text, ("ips:",))
    rows = []
    for m in _IPS.finditer(text):
        line = log.figure(m, "ips")
        where = f"line {line}"
        cost = _COST.search(text, text.rfind("\n", 0, m.start()) + 1, m.start())
        if cost is not None:
            seconds(cost[1], where, "a batch_cost")
        rows.append((rate(m[1], where), line, cost[1] if cost else None, m[1]))
    need(rows, NAME, "'ips: R images/sec'")
    common_product([(cost, ips, 1, line) for _, line, cost, ips in rows if cost], "batch (batch_cost x ips)")
    kept = rows[warmup or 0:]
    if not kept:
        raise ValueError(f"every ips line falls in the warm-up ({warmup} intervals, --warmup-iters)")
    rates = [r for r, _, _, _ in kept]
    return checked(ParsedRun(statistics.fmean(rates), rates, origin=Origin.MEAN,
                             source=f"the mean of {len(rates)} ips lines (lines {kept[0][1]}-{kept[-1][1]})",
                             warnings=[f"PLSC and PaddleClas print no end-of-run line: whether the run ended after "
                                       f"line {rows[-1][1]} cannot be told"]), NAME, log)
