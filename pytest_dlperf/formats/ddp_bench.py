"""PyTorch's DDP benchmark (benchmarks/distributed/ddp/benchmark.py), as ACSpeed's seed prints it."""
from __future__ import annotations

import re
from dataclasses import dataclass

from .base import (MAX_SAMPLES_PER_S, MAX_STEP_SECONDS, PERCENTILE_KEYS, Hints, LogText, Origin, ParsedRun, checked,
                   count, need, rate, same_model, seconds)

NAME = "ddp-bench"
NO_DDP = "no ddp"
_HEADER = re.compile(r"^Benchmark: (\S+) with batch size (\d+)", re.MULTILINE)
# [ \t], not \s: a \s* at a line's start spans the blank lines after it (quadratic on blank lines)
_ROW = re.compile(r"^[ \t]*(\d+) GPUs --[ \t]*([^:\n]*?):[ \t]*(p50:[^\n]*)", re.MULTILINE)
_CELL = re.compile(r"(p\d+):[ \t]+(\S+?)s[ \t]+(\S+?)/s")
# the four cells as the benchmark prints them (``p50:  0.073s     440/s``): read at once; anything else
# cell by cell, for a message naming what is wrong
_CELLS = re.compile("".join(rf"{p}:[ \t]+([0-9]+\.[0-9]+)s[ \t]+([0-9]+)/s[ \t]*"
                            for p in ("p50", "p75", "p90", "p95")))
_LABEL = re.compile(r"^(\d+)M/(\d+)G$")
_SLACK = 0.01


@dataclass(frozen=True)
class Row:
    """One row of a block: its GPUs, its label ("1M/8G", "no ddp"), its line and its cells' text (read
    for the row picked: ``_cells``)."""

    gpus: int
    label: str
    line: int
    text: str

    @property
    def machines(self) -> int | None:
        m = _LABEL.match(self.label)
        return int(m[1]) if m else None


def _block(log: LogText, hints: Hints) -> tuple[str | None, int | None, int, int, int | None]:
    """(model, batch, start, end, the header's line) of the block of the model asked for; refuses a
    model the log lacks, two blocks of it (two runs in one log) and, without a model, several blocks."""
    text = log.text
    heads = list(_HEADER.finditer(text))
    if not heads:
        return None, None, 0, len(text), None
    names = ", ".join(h[1] for h in heads)
    if hints.model:
        chosen = [h for h in heads if same_model(h[1], hints.model)]
        if not chosen:
            raise ValueError(f"no 'Benchmark: {hints.model} with batch size B' block; the log has {names}: "
                             "pass --model (or name the log's file) after one of those")
    elif len(heads) > 1 and hints.name:  # a block whose model the log's file name names
        tokens = re.split(r"[_\-.]", hints.name)
        chosen = [h for h in heads if any(same_model(h[1], t) for t in tokens)]
        if len(chosen) != 1:
            raise ValueError(f"the log has blocks for {names}: name one model in the log's file name or pass --model")
    elif len(heads) > 1:
        raise ValueError(f"the log has blocks for {names}: name the model in the log's file name or pass --model")
    else:
        chosen = heads
    if len(chosen) > 1:
        raise ValueError(f"{len(chosen)} 'Benchmark: {chosen[0][1]} with batch size B' blocks (lines "
                         f"{', '.join(str(log.line(h.start())) for h in chosen)}): one run per log; split them into a "
                         "log each")
    h = chosen[0]
    end = next((n.start() for n in heads if n.start() > h.start()), len(text))
    line = log.line(h.start())
    return h[1], count(h[2], f"line {line}", "a batch size"), h.end(), end, line


def _rows(log: LogText, start: int, end: int) -> list[Row]:
    """The block's rows, by GPUs and label (a row cut short where the log ends is refused by its line)."""
    rows = []
    for m in _ROW.finditer(log.text, start, end):
        line = log.figure(m, "row")
        rows.append(Row(count(m[1], f"line {line}", "a GPU count"), m[2].strip(), line, m[3]))
    return rows


def _cells(row: Row) -> dict[str, tuple[float, float]]:
    """The row's cells, percentile -> (seconds per iteration, samples/s per GPU); a row without all
    four (cut short or damaged) or with a figure that is not one is refused by its line."""
    where = f"line {row.line}"
    fast = _CELLS.match(row.text)
    v = [float(x) for x in fast.groups()] if fast else []
    if v and min(v) > 0 and max(v[1::2]) <= MAX_SAMPLES_PER_S and max(v[::2]) <= MAX_STEP_SECONDS:
        return {p: (v[2 * i], v[2 * i + 1]) for i, p in enumerate(PERCENTILE_KEYS)}
    cells = {c[1]: (seconds(c[2], where, f"{c[1]}'s step"), rate(c[3], where)) for c in _CELL.finditer(row.text)}
    missing = [p for p in PERCENTILE_KEYS if p not in cells]
    if missing:
        raise ValueError(f"{where}: the row has no {', '.join(missing)} cell ('pN: Ts R/s'): it is cut short or "
                         "damaged; re-run it or leave the log out")
    return cells


def _off(batch: int | None, cells: dict[str, tuple[float, float]], where: str) -> str | None:
    """The benchmark prints ``int(batch / t)`` beside ``t`` rounded to 3 decimals: a /s figure more
    than ``_SLACK`` beyond what the batch over the rounded seconds allows contradicts the block's
    batch (refused); one just beyond it (a published log has a cell 0.4% off) is said, not refused."""
    said = None
    for p, (sec, per_gpu) in cells.items() if batch else ():
        lo, hi = batch / (sec + 0.0005) - 1, batch / max(sec - 0.0005, 1e-12)
        if lo <= per_gpu <= hi:
            continue
        off = (per_gpu - hi) / max(hi, 1.0) if per_gpu > hi else (per_gpu - lo) / max(lo, 1.0)
        text = (f"{where}: {p}'s {per_gpu:.0f}/s is not the batch of {batch} over {sec:.3f}s "
                f"({off:+.1%} beyond rounding)")
        if abs(off) > _SLACK:
            raise ValueError(f"{text}: the row contradicts its block's batch size; re-run it or leave the log out")
        said = said or f"{text}: the row does not quite agree with itself"
    return said


def _pick(rows: list[Row], hints: Hints) -> Row:
    """The row asked for by label (``hints.row``), else the DDP row of the directory's GPUs; where two
    have them (a 4-GPU machine's "1M/4G" and "1M/8G"), the one whose label is the topology's."""
    labels = ", ".join(f"'{r.label}' ({r.gpus} GPUs)" for r in rows)
    if hints.row is not None:
        cand = [r for r in rows if r.label == hints.row and (hints.devices is None or r.gpus == hints.devices)]
        if not cand:
            raise ValueError(f"no row labelled {hints.row!r}" + (f" for {hints.devices} GPUs" if hints.devices else "")
                             + f"; the block has {labels}: pass --row one of those")
        if len(cand) > 1:
            raise ValueError(f"rows at lines {', '.join(str(r.line) for r in cand)} are all labelled {hints.row!r}: "
                             "the block is damaged; re-run it or leave the log out")
        return cand[0]
    cand = [r for r in rows if r.label != NO_DDP]
    if hints.devices is not None:
        cand = [r for r in cand if r.gpus == hints.devices]
        if not cand:
            raise ValueError(f"no DDP row for {hints.devices} GPUs (the directory's topology); the block has {labels}")
    if len(cand) > 1 and hints.nodes and hints.devices:
        exact = f"{hints.nodes}M/{hints.devices // hints.nodes}G"
        cand = [r for r in cand if r.label == exact] or [r for r in cand if r.machines == hints.nodes] or cand
    if len(cand) > 1:
        raise ValueError(f"rows {', '.join(repr(r.label) for r in cand)} all fit: pass --row with one of those labels")
    return cand[0]


def parse(text: str, warmup: int | None, hints: Hints = Hints()) -> ParsedRun:
    """``   8 GPUs --    1M/8G:  p50:  0.073s     440/s  p75: ...``: the /s figure is samples/s per GPU
    (batch / the percentile's step time over every rank's measured iterations); throughput = p50's x the
    GPUs, derived (the benchmark prints no total); the step-time percentiles and per-GPU figures are
    the row's own, each /s checked against the block's batch over its step time. The block is the
    model's asked for (``Benchmark: <model> with batch size B``), the row the directory's (see
    ``_pick``). --warmup-iters does not apply: the benchmark drops its own warm-up iterations."""
    log = LogText(text, (" GPUs --",))
    model, batch, start, end, head = _block(log, hints)
    rows = _rows(log, start, end)
    need(rows, NAME, "'N GPUs -- kM/NG:  p50:  Ts  R/s ...'")
    row = _pick(rows, hints)
    cells = _cells(row)
    off = _off(batch, cells, f"line {row.line}")
    per_gpu = cells["p50"][1]
    return checked(ParsedRun(per_gpu * row.gpus, [], devices=row.gpus, batch_size=batch, model=model, gpus=True,
                             step_time={p: sec for p, (sec, _) in cells.items()},
                             per_device={p: r for p, (_, r) in cells.items()},
                             header={"model": head, "batch_size": head} if head else {},
                             warnings=[off] if off else [],
                             origin=Origin.DERIVED,
                             source=f"p50's {per_gpu:.0f}/s per GPU x {row.gpus} GPUs, row '{row.label}' "
                                    f"(line {row.line}); the benchmark prints no total",
                             notes=[f"row '{row.label}' (line {row.line}): throughput from the p50 per-GPU rate "
                                    "(the benchmark prints no wall-time total)"]), NAME, log)
