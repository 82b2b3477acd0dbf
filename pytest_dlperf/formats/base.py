"""What every peer format's parser shares: the parsed run, the layout's hints, the log's text with its
line numbers, and the checks that keep a figure that is not a throughput (NaN, inf, zero, negative,
implausibly large, a damaged or cut line) out of a result."""
from __future__ import annotations

import enum
import math
import re
from dataclasses import dataclass, field

PERCENTILE_KEYS = ("p50", "p75", "p90", "p95")
# Model names in peers' log names and headers -> ours.
MODEL_ALIASES = {"rn50": "resnet50", "resnet50": "resnet50", "resnet50_v1.5": "resnet50", "resnet": "resnet50",
                 "vgg16": "vgg16", "vgg": "vgg16", "bert": "bert-base", "bert-base": "bert-base",
                 "bert_base": "bert-base", "arcface": "arcface"}
# No training run comes near a billion samples/s in all (the fastest published ResNet-50 figures are
# some 30 thousand per 8-GPU node): a larger figure is a damaged line, and it would overflow the means.
MAX_SAMPLES_PER_S = 1e9
MAX_STEP_SECONDS = 86_400.0  # a step of more than a day is not a benchmark's
_DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


class Origin(str, enum.Enum):
    """Where a run's throughput comes from: printed by the tool, the mean of figures it printed (the
    field's rule), or derived from figures of another kind (a per-device rate times the devices)."""

    READ = "read"
    MEAN = "mean"
    DERIVED = "derived"


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
    precision: str | None = None  # "fp32" or "amp", where the log's header says
    image_size: int | None = None  # where the log's header says
    origin: Origin = Origin.READ
    source: str = ""  # how the throughput was obtained, in words with its line(s): shown beside the figure
    per_device: dict[str, float] = field(default_factory=dict)  # samples/s per device per percentile, as printed
    header: dict[str, int] = field(default_factory=dict)  # field (model, batch_size, ...) -> the line that says it
    warnings: list[str] = field(default_factory=list)  # facts the user must see: the terminal and results.json


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


def _short(token: str) -> str:
    return token if len(token) <= 24 else token[:20] + "..."


class LogText:
    """A log's text as a parser reads it: the line of a position, counted on from the last position
    asked (so a parse that asks in order counts every newline once: linear), and the start of a last
    line the file ends inside (no newline after it: the log was cut mid-line). A last line cut short
    that holds one of ``figures`` (the format's marks of a figure line, ``TimeHistory:``) is refused:
    its figure, or the line's whole match, is lost."""

    def __init__(self, text: str, figures: tuple[str, ...] = ()) -> None:
        self.text = text
        self._pos, self._line = 0, 1
        self.cut_from = None if not text or text.endswith("\n") else text.rfind("\n") + 1
        if self.cut_from is not None and any(f in text[self.cut_from:] for f in figures):
            raise ValueError(f"line {self.line(self.cut_from)}: the log ends inside this line "
                             f"({_short(text[self.cut_from:])!r}, no newline after it), a line it takes figures from: "
                             "it was cut short; re-run it or leave the log out")

    def line(self, pos: int) -> int:
        """The 1-based line number of a position in the text."""
        if pos < self._pos:
            self._pos, self._line = 0, 1
        self._line += self.text.count("\n", self._pos, pos)
        self._pos = pos
        return self._line

    def figure(self, m: re.Match, what: str) -> int:
        """The line of a figure's match; refuses a figure on a last line the log ends inside: its
        number may have lost digits (``total images/sec: 21`` of 2165.08)."""
        n = self.line(m.start())
        if self.cut_from is not None and m.end() > self.cut_from:
            raise ValueError(f"line {n}: the log ends inside this {what} line ({_short(self.text[self.cut_from:])!r}, "
                             "no newline after it): it was cut short; re-run it or leave the log out")
        return n

    def tail_warning(self) -> str | None:
        """What to say of a last line cut short that holds no figure line's mark."""
        if self.cut_from is None:
            return None
        return (f"the log ends inside line {self.line(self.cut_from)} ({_short(self.text[self.cut_from:])!r}, no "
                "newline after it): it was cut short there")


def need(found: list, fmt: str, what: str) -> None:
    """Refuse a log without the lines its format needs, saying which lines were expected."""
    if not found:
        raise ValueError(f"no {what} lines: not a {fmt} log")


def rate(token: str, where: str) -> float:
    """A printed throughput as a number: positive, finite and plausible, else a ValueError naming the line."""
    try:
        value = float(token)
    except ValueError:
        raise ValueError(f"{where}: {_short(token)!r} is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{where}: {_short(token)!r} is not a throughput (a positive finite number); "
                         "the run did not measure: re-run it or leave the log out")
    if not _DECIMAL.fullmatch(token):
        raise ValueError(f"{where}: {_short(token)!r} is not a number as the tool prints one: the line is damaged; "
                         "re-run it or leave the log out")
    return plausible(value, where)


def count(token: str, where: str, what: str) -> int:
    """A printed whole number (a step, a device count, a batch size); a damaged one is refused by where."""
    if not (token.isascii() and token.isdigit()) or len(token) > 15:
        raise ValueError(f"{where}: {what} {_short(token)!r} is not a whole number as the tool prints one: the line "
                         "is damaged; re-run it or leave the log out")
    return int(token)


def seconds(token: str, where: str, what: str) -> float:
    """A printed duration: a positive decimal, else a ValueError naming where."""
    if not _DECIMAL.fullmatch(token) or not 0 < float(token) <= MAX_STEP_SECONDS * 1e3:
        raise ValueError(f"{where}: {what} of {_short(token)!r} seconds is not a duration: the line is damaged; "
                         "re-run it or leave the log out")
    return float(token)


def plausible(value: float, where: str) -> float:
    """A throughput no larger than any training run reaches, else a ValueError naming where."""
    if value > MAX_SAMPLES_PER_S:
        raise ValueError(f"{where}: {value:.4g} samples/s is not a plausible throughput (more than "
                         f"{MAX_SAMPLES_PER_S:.0e}, beyond any training run): the line is damaged; re-run it or "
                         "leave the log out")
    return value


def decimal_bounds(token: str) -> tuple[float, float]:
    """The interval a printed decimal stands for: ``123.45`` is 123.445..123.455."""
    mantissa, exponent = (token, 0) if "e" not in token and "E" not in token else \
        (token.lower().partition("e")[0], int(token.lower().partition("e")[2]))
    dot = mantissa.find(".")
    half = 0.5 * 10.0 ** (exponent - (len(mantissa) - dot - 1 if dot >= 0 else 0))
    value = float(token)
    return value - half, value + half


def common_product(rows: list[tuple[str, str, float, int]], what: str) -> tuple[float, float]:
    """The range one quantity can have for every row of ``(a, b, per, line)``: a x b / per, each token
    as printed (rounded). A tool that prints an interval's seconds and its rate, or a step's cost and
    its ips, prints two faces of one batch: rows that no single batch fits are a damaged line, and
    the first such row is refused by its line."""
    lo, hi = 0.0, math.inf
    for a, b, per, line in rows:
        (a0, a1), (b0, b1) = decimal_bounds(a), decimal_bounds(b)
        r0, r1 = a0 * b0 / per * (1 - 1e-9), a1 * b1 / per * (1 + 1e-9)
        if r1 < lo or r0 > hi:
            raise ValueError(f"line {line}: {a} x {b} is not the {what} of the lines before it "
                             f"({lo:.6g}..{hi:.6g}): the line is damaged; re-run it or leave the log out")
        lo, hi = max(lo, r0), min(hi, r1)
    return lo, hi


def checked(run: ParsedRun, fmt: str, log: LogText | None = None) -> ParsedRun:
    """The run, once its figures are throughputs and step times (positive, finite, plausible); a last
    line cut short that held no figure is said in its warnings (a parser's last word)."""
    figures = [run.throughput, *run.rates, *run.per_device.values()]
    bad = [x for x in figures if not (isinstance(x, (int, float)) and math.isfinite(x) and 0 < x <= MAX_SAMPLES_PER_S)]
    bad += [x for x in run.step_time.values()
            if not (isinstance(x, (int, float)) and math.isfinite(x) and 0 < x <= MAX_STEP_SECONDS)]
    if bad:
        raise ValueError(f"a {fmt} figure of {bad[0]!r} is not a throughput or a step time (a positive finite "
                         "number, at most a billion samples/s or a day a step): the run did not measure or the log "
                         "is damaged; re-run it or leave the log out")
    if log is not None and (tail := log.tail_warning()):
        run.warnings.append(tail)
    return run
