"""A verdict of the gate: one case and metric judged against its baseline, with every figure a reviewer
needs, and its status; and what the verdicts do to the case's test (``Judgement``). Plain data, below
everything that judges, stores or shows verdicts."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum


class VerdictStatus(str, Enum):
    """A verdict's status; its value is what results.json, the JUnit properties and the tables say."""

    PASS = "pass"
    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    NOISY = "noisy"
    MISSING = "missing"
    # not judged: the baseline was recorded on other hardware, an identity fact of the machine differs
    # (session.gate.hardware_verdict); the same machine at another speed is judged (issue #63)
    HARDWARE = "hardware"
    # not judged: a drop with no spread on either side to tell it from noise (NEEDED_LAUNCHES)
    UNJUDGED = "unjudged"
    # the screen failed and nothing recorded differs from the recording's software: a statement about the
    # host, not the software (session.confirm); its test follows --dlperf-hardware
    HOST = "host"
    # the screen failed, and side by side with the recorded software the pairs did not decide
    UNDECIDED = "undecided"

    def __str__(self) -> str:  # "pass", not "VerdictStatus.PASS", in messages and f-strings
        return self.value


STATUSES = tuple(s.value for s in VerdictStatus)


@dataclass
class Verdict:
    """The gate's judgement of one case and metric, with every number a reviewer needs."""

    status: VerdictStatus
    case: str
    metric: str
    tolerance: float
    message: str
    rule: str
    measured_median: float | None = None
    measured_cv: float | None = None  # standard deviation / mean
    measured_robust_cv: float | None = None  # 1.4826 x MAD / median: decides "noisy"
    measured_n: int = 0
    baseline_median: float | None = None
    baseline_cv: float | None = None
    baseline_robust_cv: float | None = None
    baseline_n: int = 0
    baseline_source: str = ""
    change: float | None = None  # measured / baseline - 1
    test: str = ""  # the test that decided significance
    p_value: float | None = None  # its one-sided p, H1: measured is slower
    mannwhitney_p: float | None = None
    t_p: float | None = None
    interval: tuple[float, float] | None = None  # one-sided bounds of measured / baseline
    confidence: float | None = None  # of each one-sided bound
    changes: list[str] = field(default_factory=list)  # "name before -> now" since the baseline was recorded
    pace: dict | None = None  # how the throughputs were brought to one pace (pace_adjust), if they were
    # the screen's failure attributed and confirmed (session.confirm): "outcome" (confirmed, cleared, undecided,
    # not confirmed, host), "screen" (the stored baseline's status), the reference and the side-by-side verdict
    confirmation: dict | None = None
    # the hardware probe's figures that moved since the recording on a machine of the same identity
    # (fingerprint.compare's ``speed``), for the attribution's HOST message; [] where none moved or none compared
    host_speed: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.status = VerdictStatus(self.status)  # a plain string ("pass") names its status too

    def fails(self, noisy_fails: bool = True) -> bool:
        """Whether this verdict fails its test: a regression, and by default a noisy case."""
        return self.status is VerdictStatus.REGRESSION or (noisy_fails and self.status is VerdictStatus.NOISY)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["status"] = self.status.value
        d["interval"] = list(self.interval) if self.interval else None
        return d


def verdict_from_dict(d: dict) -> Verdict:
    """Rebuild a Verdict from its to_dict() (xdist workers' parts, a saved results.json)."""
    d = dict(d)
    if d.get("interval") is not None:
        d["interval"] = tuple(d["interval"])
    if not isinstance(d.get("confirmation"), dict):  # contract 2 before issue #55 kept a line of text, or ""
        d["confirmation"] = None
    return Verdict(**d)


class Outcome(str, Enum):
    """What a judgement does to the case's test."""

    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"

    def __str__(self) -> str:
        return self.value


@dataclass
class Judgement:
    """What the gate decided for one case's test."""

    outcome: Outcome
    message: str
    verdicts: list[Verdict] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.outcome = Outcome(self.outcome)
