"""What every peer format's parser shares: the parsed run, the layout's hints, and the checks that
keep a figure that is not a throughput (NaN, inf, zero, negative, a damaged line) out of a result."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

PERCENTILE_KEYS = ("p50", "p75", "p90", "p95")
# Model names in peers' log names and headers -> ours.
MODEL_ALIASES = {"rn50": "resnet50", "resnet50": "resnet50", "resnet50_v1.5": "resnet50", "resnet": "resnet50",
                 "vgg16": "vgg16", "vgg": "vgg16", "bert": "bert-base", "bert-base": "bert-base",
                 "bert_base": "bert-base", "arcface": "arcface"}


@dataclass
class ParsedRun:
    """What one log says: the run's global samples/s and the figures it came from; nothing filled in."""

    throughput: float  # global samples/s
    rates: list[float] = field(default_factory=list)  # global samples/s per measured interval or step
    devices: int | None = None
    batch_size: int | None = None  # per device
    model: str | None = None
    notes: list[str] = field(default_factory=list)
    per_step: bool = False  # each of ``rates`` is one step's (else an interval's mean or a running mean)
    step_time: dict[str, float] = field(default_factory=dict)  # the percentiles (s) the tool itself prints
    gpus: bool | None = None  # whether the log says it ran on GPUs (None: it does not say)


@dataclass(frozen=True)
class Hints:
    """What the layout says about a log: its directory's device count and nodes, the model asked for,
    the row asked for (ddp-bench: a row's label such as "no ddp" or "1M/8G"), the log's case name."""

    devices: int | None = None
    model: str | None = None
    nodes: int | None = None
    row: str | None = None
    name: str | None = None  # "resnet101" of resnet101_1.log


def our_model(name: str) -> str:
    """A peer's model name as ours where we know it (``ResNet50`` -> resnet50), else lower-cased."""
    return MODEL_ALIASES.get(name.lower(), name.lower())


def same_model(a: str, b: str) -> bool:
    """Whether two model names (ours or a peer's) name one model: ``resnet50`` and ``ResNet-50``."""
    def norm(x: str) -> str:
        return re.sub(r"[-_.]", "", our_model(x))
    return norm(a) == norm(b)


def need(found: list, fmt: str, what: str) -> None:
    """Refuse a log without the lines its format needs, saying which lines were expected."""
    if not found:
        raise ValueError(f"no {what} lines: not a {fmt} log")


def line_of(text: str, pos: int) -> int:
    """The 1-based line number of a position in the text (for messages only)."""
    return text.count("\n", 0, pos) + 1


def rate(token: str, where: str) -> float:
    """A printed throughput as a number: positive and finite, else a ValueError naming the line."""
    try:
        value = float(token)
    except ValueError:
        raise ValueError(f"{where}: {token!r} is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{where}: {token!r} is not a throughput (a positive finite number); "
                         "the run did not measure: re-run it or leave the log out") from None
    return value


def checked(run: ParsedRun, fmt: str) -> ParsedRun:
    """The run, once its figures are throughputs: finite and positive (a parser's last word)."""
    figures = [run.throughput, *run.rates, *run.step_time.values()]
    bad = [x for x in figures if not (isinstance(x, (int, float)) and math.isfinite(x) and x > 0)]
    if bad:
        raise ValueError(f"a {fmt} figure of {bad[0]!r} is not a throughput or a step time (a positive finite "
                         "number): the run did not measure; re-run it or leave the log out")
    return run
