"""Horovod's synthetic benchmarks (examples/*_synthetic_benchmark.py)."""
from __future__ import annotations

import re

from .base import Hints, LogText, ParsedRun, checked, count, decimal_bounds, need, rate

NAME = "horovod"
_ITER = re.compile(r"Iter #(\d+): (\S+) img/sec per (GPU|CPU)")
_TOTAL = re.compile(r"Total img/sec on (\d+) (GPU|CPU)\(s\): (\S+) \+-(\S+)")
_PER_DEVICE = re.compile(r"Img/sec per (?:GPU|CPU): (\S+) \+-")
_BATCH = re.compile(r"(?:^|:)Batch size: (\d+)", re.MULTILINE)  # behind mpirun's [1,0]<stdout>: too
_MODEL = re.compile(r"(?:^|:)Model: (\S+)", re.MULTILINE)
_DEVICES = re.compile(r"(?:^|:)Number of (?:GPU|CPU)s: (\d+)", re.MULTILINE)


def _iterations(log: LogText, text: str, devices: int, warmup: int | None, total_line: int) -> list[float]:
    """The rates of ``Iter #i`` past --warmup-iters, times the devices; iterations numbered one after
    another (a missing or repeated number is a damaged log), none after the total."""
    rates, expect = [], None
    for m in _ITER.finditer(text):
        line = log.figure(m, "Iter")
        where = f"line {line}"
        i = count(m[1], where, "an iteration")
        if expect is not None and i != expect:
            raise ValueError(f"{where}: Iter #{i} follows Iter #{expect - 1}: iteration lines are missing or damaged; "
                             "re-run it or leave the log out")
        if line > total_line:
            raise ValueError(f"{where}: an Iter line after the total (line {total_line}): a second run, cut short, "
                             "in this log; leave its lines out")
        expect = i + 1
        r = rate(m[2], where)
        if i >= (warmup or 0):
            rates.append(r * devices)
    return rates


def parse(text: str, warmup: int | None, hints: Hints = Hints()) -> ParsedRun:
    """``Total img/sec on N GPU(s): X +-Y`` (the script's mean over its measured iterations, times N);
    rates: ``Iter #i: R img/sec per GPU`` past --warmup-iters, times N. An iteration is several
    batches (the script's --num-batches-per-iter), so its rate is an interval's, not a step's. The
    total must be N x its ``Img/sec per GPU`` line (as rounded) and N the header's ``Number of GPUs``;
    a log with iterations and no total was cut short, one with two totals holds two runs."""
    log = LogText(text, ("img/sec", "Img/sec"))
    batch, model, number = _BATCH.search(text), _MODEL.search(text), _DEVICES.search(text)
    header = {k: log.line(m.start()) for k, m in (("model", model), ("batch_size", batch), ("devices", number)) if m}
    totals = [(m, log.figure(m, "Total img/sec")) for m in _TOTAL.finditer(text)]
    if not totals and (last := list(_ITER.finditer(text))[-1:]):
        raise ValueError(f"line {log.line(last[0].start())}: the log stops at Iter #{last[0][1]} without its "
                         "'Total img/sec on N GPU(s)' line: it was cut short; re-run it or leave the log out")
    need(totals, NAME, "'Total img/sec on N GPU(s): X +-Y'")
    if len(totals) > 1:
        raise ValueError(f"lines {totals[0][1]} and {totals[1][1]}: two 'Total img/sec' lines, one per run: this log "
                         "holds several runs; split them into a log each")
    (last, line), = totals
    where = f"line {line}"
    devices, total = count(last[1], where, "a device count"), rate(last[3], f"{where} (Total img/sec)")
    if devices < 1:
        raise ValueError(f"{where}: a total on {devices} devices measured nothing")
    if number and count(number[1], f"line {header['devices']}", "a device count") != devices:
        raise ValueError(f"{where}: a total on {devices} devices, the header's 'Number of GPUs' (line "
                         f"{header['devices']}) {number[1]}: the log contradicts itself; re-run it or leave it out")
    per = [m for m in _PER_DEVICE.finditer(text)]
    if per:
        lo, hi = decimal_bounds(per[-1][1]) if per[-1][1].replace(".", "", 1).isdigit() else (0.0, 0.0)
        t_lo, t_hi = decimal_bounds(last[3])
        if not (lo * devices <= t_hi * (1 + 1e-9) and t_lo <= hi * devices * (1 + 1e-9)):
            raise ValueError(f"{where}: a total of {last[3]} is not {devices} x the 'Img/sec per GPU' {per[-1][1]} "
                             f"(line {log.line(per[-1].start())}): the log contradicts itself; re-run it or leave "
                             "it out")
    rates = _iterations(log, text, devices, warmup, line)
    per_batch = count(batch[1], f"line {header['batch_size']}", "a batch size") if batch else None
    notes = [f"rates: each Iter line's per-{last[2]} figure x {devices} (derived)"] if rates else []
    return checked(ParsedRun(total, rates, devices=devices, batch_size=per_batch, model=model[1] if model else None,
                             gpus=last[2] == "GPU", header=header, notes=notes,
                             source=f"'Total img/sec on {devices} {last[2]}(s)' (line {line})"), NAME, log)
