"""tf_cnn_benchmarks: its ``total images/sec`` over the measured steps, and the header."""
from __future__ import annotations

import re

from .base import Hints, LogText, ParsedRun, checked, count, need, rate

NAME = "tf_cnn"
_TOTAL = re.compile(r"total images/sec: (\S+)")
# [ \t], not \s: a \s* at a line's start spans the blank lines after it (quadratic on blank lines)
_BATCH = re.compile(r"^Batch size:[ \t]+(\d+) global[ \t]*\r?\n[ \t]*(\d+)(?:\.\d+)? per device", re.MULTILINE)
_DEVICES = re.compile(r"^Devices:[ \t]+\[(.*)\]", re.MULTILINE)
_MODEL = re.compile(r"^Model:[ \t]+(\S+)", re.MULTILINE)
_NUM_BATCHES = re.compile(r"^Num batches:[ \t]+(\d+)", re.MULTILINE)
_STEP = re.compile(r"^(\d+)\timages/sec: (\S+) \+/- ", re.MULTILINE)
# The total is its measured steps' samples over their wall time, the step lines' figure the running
# mean of the steps' rates: the two differ by the steps' spread, never by a factor of two.
_AGREE = 2.0


def _devices(log: LogText, text: str) -> tuple[int | None, bool | None, dict[str, int], int | None]:
    """(devices in all, whether GPUs, header field -> line, batch per device) from the header: the
    global batch over the per-device one (every worker's devices; the device list is this worker's)."""
    batch, devices = _BATCH.search(text), _DEVICES.search(text)
    names = re.findall(r"'([^']+)'", devices[1]) if devices else []
    gpus = any("gpu" in n.lower() for n in names) if names else None
    lines: dict[str, int] = {}
    if batch is None:
        return len(names) or None, gpus, lines, None
    where = f"line {log.line(batch.start())}"
    total, per = count(batch[1], where, "a batch size"), count(batch[2], where, "a batch size")
    lines["batch_size"] = log.line(batch.start())
    if per == 0 or total % per or (names and (total // per) % len(names)):
        raise ValueError(f"{where}: a global batch of {total} is not {per} per device on a whole number of workers of "
                         f"{len(names) or '?'} device(s) (the 'Devices' line): the header is damaged; re-run it or "
                         "leave the log out")
    lines["devices"] = lines["batch_size"]
    return total // per, gpus, lines, per


def parse(text: str, warmup: int | None, hints: Hints = Hints()) -> ParsedRun:
    """``total images/sec: X``: tf_cnn_benchmarks' own figure over its measured steps, after its own
    warm-up batches (--warmup-iters does not apply). Its ``N\\timages/sec: R +/- ...`` lines are running
    means since the first step, not per-step figures: neither rates nor step times are taken from them;
    but the last must be the header's ``Num batches`` and agree with the total within a factor of two
    (a total cut to ``21`` of 2165.08 does not). One run per log: a second total is refused."""
    log = LogText(text, ("images/sec",))
    devices, gpus, header, batch = _devices(log, text)
    model, planned = _MODEL.search(text), _NUM_BATCHES.search(text)
    if model:
        header["model"] = log.line(model.start())
    last_step = None
    for last_step in _STEP.finditer(text):  # noqa: B007 - the last one is what is read
        pass
    steps = [(last_step, log.figure(last_step, "step"))] if last_step else []
    totals = [(m, log.figure(m, "total images/sec")) for m in _TOTAL.finditer(text)]
    if not totals and steps:
        m, line = steps[-1]
        raise ValueError(f"line {line}: the log stops at step {m[1]}"
                         + (f" of {planned[1]}" if planned else "") + " without its 'total images/sec' line: it was "
                         "cut short; re-run it or leave the log out")
    need(totals, NAME, "'total images/sec: X'")
    if len(totals) > 1:
        raise ValueError(f"lines {totals[0][1]} and {totals[1][1]}: {len(totals)} 'total images/sec' lines, one per "
                         "run: this log holds several runs; split them into a log each")
    (m, line), = totals
    total = rate(m[1], f"line {line} (total images/sec)")
    if steps:
        last, last_line = steps[-1]
        if planned and count(last[1], f"line {last_line}", "a step") != count(planned[1], "Num batches", "a count"):
            raise ValueError(f"line {last_line}: the last step line is step {last[1]}, the header's 'Num batches' "
                             f"{planned[1]}: step lines are missing; re-run it or leave the log out")
        mean = rate(last[2], f"line {last_line}")
        if not 1 / _AGREE <= total / mean <= _AGREE:
            raise ValueError(f"line {line}: total images/sec {m[1]} against the running mean {last[2]} of the last "
                             f"step line ({last_line}): the total is damaged or cut; re-run it or leave the log out")
    return checked(ParsedRun(total, [], devices=devices, batch_size=batch, model=model[1] if model else None, gpus=gpus,
                             header=header, source=f"'total images/sec' (line {line})",
                             notes=["total images/sec (the step lines are running means, not per-step times)"]),
                   NAME, log)
