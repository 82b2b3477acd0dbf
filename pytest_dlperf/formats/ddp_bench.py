"""PyTorch's DDP benchmark (benchmarks/distributed/ddp/benchmark.py), as ACSpeed's seed prints it."""
from __future__ import annotations

import re
from dataclasses import dataclass

from .base import Hints, ParsedRun, checked, line_of, need, rate, same_model

NAME = "ddp-bench"
NO_DDP = "no ddp"
_HEADER = re.compile(r"^Benchmark: (\S+) with batch size (\d+)", re.MULTILINE)
# [ \t], not \s: a \s* at a line's start spans the blank lines after it (quadratic on blank lines)
_ROW = re.compile(r"^[ \t]*(\d+) GPUs --[ \t]*([^:\n]*?):[ \t]*(p50:[^\n]*)", re.MULTILINE)
_CELL = re.compile(r"(p\d+):[ \t]+(\S+?)s[ \t]+(\S+?)/s")
_LABEL = re.compile(r"^(\d+)M/(\d+)G$")


@dataclass(frozen=True)
class Row:
    """One row of a block: its GPUs, its label ("1M/8G", "no ddp") and per percentile (seconds per
    iteration, samples/s per GPU)."""

    gpus: int
    label: str
    cells: dict[str, tuple[float, float]]
    line: int

    @property
    def machines(self) -> int | None:
        m = _LABEL.match(self.label)
        return int(m[1]) if m else None


def _block(text: str, hints: Hints) -> tuple[str | None, int | None, int, int]:
    """(model, batch, start, end) of the block of the model asked for; refuses a model the log lacks
    and, without a model, a log of several blocks."""
    heads = list(_HEADER.finditer(text))
    if not heads:
        return None, None, 0, len(text)
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
    h = chosen[0]
    end = next((n.start() for n in heads if n.start() > h.start()), len(text))
    return h[1], int(h[2]), h.end(), end


def _rows(text: str, start: int, end: int) -> list[Row]:
    rows = []
    for m in _ROW.finditer(text, start, end):
        where = f"line {line_of(text, m.start())}"
        cells = {c[1]: (rate(c[2], where), rate(c[3], where)) for c in _CELL.finditer(m[3])}
        if "p50" not in cells:
            raise ValueError(f"{where}: no 'p50: Ts R/s' cell")
        rows.append(Row(int(m[1]), m[2].strip(), cells, line_of(text, m.start())))
    return rows


def _pick(rows: list[Row], hints: Hints) -> Row:
    """The row asked for by label (``hints.row``), else the DDP row of the directory's GPUs; where two
    have them (a 4-GPU machine's "1M/4G" and "1M/8G"), the one whose label is the topology's."""
    labels = ", ".join(f"'{r.label}' ({r.gpus} GPUs)" for r in rows)
    if hints.row is not None:
        cand = [r for r in rows if r.label == hints.row and (hints.devices is None or r.gpus == hints.devices)]
        if not cand:
            raise ValueError(f"no row labelled {hints.row!r}" + (f" for {hints.devices} GPUs" if hints.devices else "")
                             + f"; the block has {labels}: pass --row one of those")
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
    GPUs; the step-time percentiles are the row's own. The block is the model's asked for (``Benchmark:
    <model> with batch size B``), the row the directory's (see ``_pick``). --warmup-iters does not apply:
    the benchmark drops its own warm-up iterations."""
    model, batch, start, end = _block(text, hints)
    rows = _rows(text, start, end)
    need(rows, NAME, "'N GPUs -- kM/NG:  p50:  Ts  R/s ...'")
    row = _pick(rows, hints)
    per_gpu = row.cells["p50"][1]
    return checked(ParsedRun(per_gpu * row.gpus, [], devices=row.gpus, batch_size=batch, model=model, gpus=True,
                             step_time={p: sec for p, (sec, _) in row.cells.items()},
                             notes=[f"row '{row.label}' (line {row.line}): throughput from the p50 step time "
                                    "(the benchmark prints no wall-time total)"]), NAME)
