"""DLPerf's TensorFlow 2 runs: TF official models' ``keras_utils.TimeHistory`` lines, the
``Final model parameters: {...}`` header classifier_trainer prints first and its ``Run stats:`` last."""
from __future__ import annotations

import ast
import math
import re
import statistics
from dataclasses import dataclass

from .base import Hints, LogText, Origin, ParsedRun, checked, common_product, count, need, rate, seconds

NAME = "dlperf-tf2"
DEFAULT_WARMUP = 100  # steps, DLPerf's
_TIME_HISTORY = re.compile(r"TimeHistory: (\S+) seconds, (\S+) examples/second between steps (\d+) and (\d+)")
_PARAMS = re.compile(r"Final model parameters: (\{[^\n]*)")
_RUN_STATS = re.compile(r"\bRun stats:")
_HEADER_LINES = 2000  # the dict's repr spans about a hundred lines
PRECISIONS = {"float32": "fp32", "float16": "amp", "bfloat16": "amp"}


@dataclass(frozen=True)
class Header:
    """What the ``Final model parameters`` dict says of the run, and its line."""

    line: int
    model: str | None
    batch_size: int | None  # per device
    devices: int | None
    precision: str | None
    image_size: int | None
    steps: int | None  # train.steps x train.epochs: the last step the run means to reach
    log_steps: int | None  # TimeHistory's interval


def _get(d: object, *keys: str) -> object:
    for k in keys:
        d = d.get(k) if isinstance(d, dict) else None
    return d


def _count(x: object) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) and x > 0 else None


def _header(log: LogText) -> Header | None:
    """The header's fields, or None where the log has none (an excerpt of its TimeHistory lines);
    a header that cannot be read as the dict it prints is refused by its line."""
    m = _PARAMS.search(log.text)
    if m is None:
        return None
    line = log.line(m.start())
    src, depth, pos = [], 0, m.start(1)
    for _ in range(_HEADER_LINES):
        end = log.text.find("\n", pos)
        chunk = log.text[pos:] if end < 0 else log.text[pos:end]
        src.append(chunk)
        depth += chunk.count("{") - chunk.count("}")
        if depth <= 0 or end < 0:
            break
        pos = end + 1
    try:
        params = ast.literal_eval("\n".join(src))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        raise ValueError(f"line {line}: the 'Final model parameters' header cannot be read ({type(exc).__name__}): "
                         "the log is damaged or cut inside its header; re-run it or leave the log out") from None
    if not isinstance(params, dict):
        raise ValueError(f"line {line}: the 'Final model parameters' header is not a dict: the log is damaged")
    gpus, hosts = _count(_get(params, "runtime", "num_gpus")), _get(params, "runtime", "worker_hosts")
    workers = len([h for h in hosts.split(",") if h.strip()]) if isinstance(hosts, str) and hosts.strip() else 1
    devices = gpus * workers if gpus else None
    batch = _count(_get(params, "train_dataset", "batch_size"))
    if batch and devices and _get(params, "train_dataset", "use_per_replica_batch_size") is False:
        batch = batch // devices if batch % devices == 0 else None
    steps, epochs = _count(_get(params, "train", "steps")), _count(_get(params, "train", "epochs"))
    name, dtype = _get(params, "model", "name"), _get(params, "train_dataset", "dtype")
    return Header(line=line, model=name if isinstance(name, str) else None, batch_size=batch, devices=devices,
                  precision=PRECISIONS.get(dtype) if isinstance(dtype, str) else None,
                  image_size=_count(_get(params, "train_dataset", "image_size")),
                  steps=steps * epochs if steps and epochs else None,
                  log_steps=_count(_get(params, "train", "time_history", "log_steps")))


def _ended(log: LogText, head: Header | None, last: tuple[int, int], warnings: list[str]) -> None:
    """Refuses a log with a header that stops before its ``Run stats:`` line or before the steps the
    header plans (the run was cut short); says of an excerpt without either that it cannot be told."""
    last_end, last_line = last
    stats = _RUN_STATS.search(log.text)
    if head is None:
        if stats is None:
            warnings.append(f"no 'Final model parameters' header and no 'Run stats:' line (an excerpt of the log?): "
                            f"whether the run ended after step {last_end} (line {last_line}) cannot be told")
        return
    if stats is None:
        raise ValueError(f"line {last_line}: the last TimeHistory interval ends at step {last_end} and no 'Run stats:' "
                         "line follows (classifier_trainer prints it when the run ends): the log was cut short; "
                         "re-run it or leave the log out")
    if head.steps and head.log_steps and last_end + head.log_steps <= head.steps:
        raise ValueError(f"line {last_line}: the last TimeHistory interval ends at step {last_end}, the header "
                         f"(line {head.line}) plans {head.steps} steps logged every {head.log_steps}: intervals are "
                         "missing; re-run it or leave the log out")


def parse(text: str, warmup: int | None, hints: Hints = Hints()) -> ParsedRun:
    """``TimeHistory: S seconds, R examples/second between steps A and B``: intervals that start
    before the warm-up (default 100 steps, DLPerf's) are dropped; throughput = their mean. Every
    interval line must carry a throughput, the intervals must follow each other without a gap, and
    S x R / (B - A) must be one global batch throughout (the header's batch x devices where it has
    one): a damaged or missing line is refused, not averaged around. A log with its header must
    reach the header's last step and its ``Run stats:`` line."""
    warmup = DEFAULT_WARMUP if warmup is None else warmup
    log = LogText(text, ("TimeHistory:",))
    head = _header(log)
    rows = []
    for m in _TIME_HISTORY.finditer(text):
        line = log.figure(m, "TimeHistory")
        where = f"line {line}"
        seconds(m[1], where, "an interval")
        rows.append((rate(m[2], where), count(m[3], where, "step"), count(m[4], where, "step"), line, m[1], m[2]))
    need(rows, NAME, "'TimeHistory: ... examples/second between steps A and B'")
    for (_, _, end, _, _, _), (_, start, _, line, _, _) in zip(rows, rows[1:]):
        if start != end:
            raise ValueError(f"line {line}: the TimeHistory intervals jump from step {end} to step {start}: interval "
                             "lines are missing or damaged; re-run it or leave the log out")
    for _, start, end, line, _, _ in rows:
        if end <= start:
            raise ValueError(f"line {line}: an interval between steps {start} and {end} is damaged; re-run it or "
                             "leave the log out")
    lo, hi = common_product([(secs, r, end - start, line) for _, start, end, line, secs, r in rows],
                            "samples per step (seconds x examples/second / steps)")
    if head is not None and head.batch_size and head.devices:
        batch = head.batch_size * head.devices
        if not lo <= batch <= hi:
            raise ValueError(f"line {rows[0][3]}: the intervals' seconds x examples/second make {lo:.2f}..{hi:.2f} "
                             f"samples a step, the header (line {head.line}) {head.batch_size} x {head.devices} "
                             f"devices = {batch}: the log contradicts its header; re-run it or leave the log out")
    elif math.ceil(lo) > math.floor(hi):
        raise ValueError(f"line {rows[0][3]}: the intervals' seconds x examples/second make {lo:.3f}..{hi:.3f} "
                         "samples a step, not a whole batch: the lines are damaged; re-run it or leave the log out")
    warnings: list[str] = []
    _ended(log, head, (rows[-1][2], rows[-1][3]), warnings)
    kept = [(r, line) for r, start, _, line, _, _ in rows if start >= warmup]
    if not kept:
        raise ValueError(f"every TimeHistory interval starts before step {warmup} (--warmup-iters)")
    rates = [r for r, _ in kept]
    run = ParsedRun(statistics.fmean(rates), rates, origin=Origin.MEAN, warnings=warnings,
                    source=f"the mean of {len(rates)} TimeHistory intervals from step {warmup} "
                           f"(lines {kept[0][1]}-{kept[-1][1]})")
    if head is not None:
        run.model, run.batch_size, run.devices = head.model, head.batch_size, head.devices
        run.precision, run.image_size, run.gpus = head.precision, head.image_size, True if head.devices else None
        run.header = {k: head.line for k in ("model", "batch_size", "devices", "precision", "image_size")
                      if getattr(head, k) is not None}
    return checked(run, NAME, log)
