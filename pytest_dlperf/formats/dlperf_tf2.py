"""DLPerf's TensorFlow 2 runs: TF official models' ``keras_utils.TimeHistory`` lines."""
from __future__ import annotations

import re
import statistics

from .base import Hints, ParsedRun, checked, line_of, need, rate

NAME = "dlperf-tf2"
DEFAULT_WARMUP = 100  # steps, DLPerf's
_TIME_HISTORY = re.compile(r"TimeHistory: (\S+) seconds, (\S+) examples/second between steps (\d+) and (\d+)")


def parse(text: str, warmup: int | None, hints: Hints = Hints()) -> ParsedRun:
    """``TimeHistory: S seconds, R examples/second between steps A and B``: intervals that start
    before the warm-up (default 100 steps, DLPerf's) are dropped; throughput = their mean. Every
    interval line must carry a throughput and the intervals must follow each other without a gap
    (a damaged or missing line is refused, not averaged around)."""
    warmup = DEFAULT_WARMUP if warmup is None else warmup
    rows = [(rate(m[2], f"line {line_of(text, m.start())}"), int(m[3]), int(m[4]))
            for m in _TIME_HISTORY.finditer(text)]
    need(rows, NAME, "'TimeHistory: ... examples/second between steps A and B'")
    for (_, _, end), (_, start, _) in zip(rows, rows[1:]):
        if start != end:
            raise ValueError(f"the TimeHistory intervals jump from step {end} to step {start}: interval lines are "
                             "missing or damaged; re-run it or leave the log out")
    rates = [r for r, start, _ in rows if start >= warmup]
    if not rates:
        raise ValueError(f"every TimeHistory interval starts before step {warmup} (--warmup-iters)")
    return checked(ParsedRun(statistics.fmean(rates), rates), NAME)
