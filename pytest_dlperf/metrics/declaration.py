"""What a metric is, declared once: its name, unit, which way is better, how a case's figure is taken
from its launches, which cases have it, its default tolerances per device kind (or a count's rule) and
whether the gate judges it. The gate,
the A/B verdicts, the baseline files, results.json and every report read these declarations
(``catalog``), so a new metric is its declaration plus its computation."""
from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..results.records import RunRecord
    from ..specs import CaseSpec, Measurement, Topology


class Direction(str, Enum):
    """Which way a metric is better. The statistics test for "worse" on the figures oriented so that
    higher is better (``orient``); messages show the figures as measured."""

    HIGHER = "higher"
    LOWER = "lower"

    def __str__(self) -> str:
        return self.value

    def orient(self, x: float) -> float:
        """The figure with higher always better (its reciprocal for a lower-is-better metric)."""
        return x if self is Direction.HIGHER else 1.0 / x

    def worse(self, ratio: float, tolerance: float) -> bool:
        """measured / baseline beyond the tolerance the wrong way: below 1 - tol, or above 1 + tol."""
        return ratio < 1 - tolerance if self is Direction.HIGHER else ratio > 1 + tolerance

    def better(self, ratio: float, tolerance: float) -> bool:
        """measured / baseline beyond the tolerance the right way."""
        return ratio > 1 + tolerance if self is Direction.HIGHER else ratio < 1 - tolerance

    def worse_at_all(self, ratio: float) -> bool:
        return ratio < 1 if self is Direction.HIGHER else ratio > 1

    def limit(self, tolerance: float) -> str:
        """The gate's line in words: ``baseline x (1 - 0.05)``."""
        return f"baseline x (1 {'-' if self is Direction.HIGHER else '+'} {tolerance:g})"

    def signed(self, tolerance: float) -> str:
        """The tolerance as a message shows it: ``-5%`` (a drop allowed) or ``+10%`` (a rise allowed)."""
        return f"{'-' if self is Direction.HIGHER else '+'}{tolerance:.0%}"

    @property
    def beyond(self) -> str:
        """Where a worse median lies: "below" or "above"."""
        return "below" if self is Direction.HIGHER else "above"

    @property
    def within(self) -> str:
        """Where a median within the tolerance lies: "at or above" or "at or below"."""
        return "at or above" if self is Direction.HIGHER else "at or below"

    @property
    def change_word(self) -> str:
        """What a worse change is called: a "drop" or a "rise"."""
        return "drop" if self is Direction.HIGHER else "rise"

    @property
    def better_word(self) -> str:
        """How a better figure compares: "faster" (throughput, scaling) or "lower" (memory, time)."""
        return "faster" if self is Direction.HIGHER else "lower"


class Kind(str, Enum):
    """How a case's figure comes about, which decides how it is judged."""

    LAUNCH = "launch"  # one figure per launch; the case's is their median; judged on the launches (rank test)
    SCALING = "scaling"  # a ratio within the case's group (case / 1n1g): one figure per case and session
    CASE = "case"  # one figure per case from what its launches measured together (reported only)

    def __str__(self) -> str:
        return self.value


class Rule(str, Enum):
    """How the gate and an A/B session judge a gated per-launch metric against its reference."""

    # a change beyond the metric's tolerance that is significant given both sides' runs (baselines/rules.py)
    TOLERANCE = "tolerance"
    # a whole number per launch, the case's the most any launch counted (graph breaks): more than the
    # reference had is worse, fewer better, whatever the size; no tolerance, no noise
    COUNT = "count"

    def __str__(self) -> str:
        return self.value


class Judging(str, Enum):
    """How a gated metric is judged against its reference, stored (the gate) or paired (an A/B session, a
    confirmation side by side): what its declaration owns, and what the judges are registered under
    (``session/judges.py``, ``ab/judges.py``), so that neither loop branches on a metric's kind."""

    RUNS = "runs"  # per-launch figures: the rank test against the recorded runs; paired: the sequential test
    COUNT = "count"  # a count per launch: more than the reference had is worse, whatever the size
    RATIO = "ratio"  # a ratio within the case's group (case / 1n1g): its tolerance, and the runs behind it

    def __str__(self) -> str:
        return self.value


class DeviceKind(str, Enum):
    """The device kind a default tolerance is for."""

    CPU = "cpu"
    GPU = "gpu"

    def __str__(self) -> str:
        return self.value


class NotMeasured(Exception):
    """A launch (or case) has no figure for the metric: the message says why (the engine does not
    measure it, the workload is older). Never a zero or a guess in its place."""


class NotApplicable(NotMeasured):
    """A launch cannot have the metric at all (a CPU node has no GPU busy share): a case none of whose
    launches can have it leaves the metric out, unsaid, where a NotMeasured is said with its reason."""


CASE_UNIT = "<case>"  # the unit is the case's own throughput unit: samples/s, tokens/s for a decoder
ITEM = "{item}"  # in a unit or column: what one sample is for the case ("sample", "token" for a decoder)


def item_of(case_unit: str) -> str:
    """What the case's throughput counts one of: "samples/s" -> "sample", "tokens/s" -> "token"."""
    return case_unit.removesuffix("/s").removesuffix("s")


@dataclass(frozen=True)
class Flag:
    """What a case's figure of a metric says of the case's other figures where it lies on the worse
    side of ``limit`` (by the metric's direction): a GPU busy share under 0.90 says the case is
    host-bound. The reports give the flag beside the figure; it judges nothing."""

    limit: float
    label: str  # a word or two: "host-bound"
    meaning: str  # what it says of the case's figures: "this figure follows the CPU's dispatch speed"

    def __post_init__(self) -> None:
        if not self.limit > 0:
            raise ValueError(f"flag {self.label!r}: its limit must be above 0, got {self.limit!r}")

    @property
    def text(self) -> str:
        return f"{self.label}: {self.meaning}"


@dataclass(frozen=True)
class ScalingInputs:
    """What a scaling metric is derived from: the case's median throughput, its topology, the median
    of another topology of its group (None where the group has none) and the scaling figures derived
    before it (in catalog order); the case, and the median of another case of the session (a compiled
    case's eager twin: None where the session has none)."""

    median: float
    topology: Topology
    median_at: Callable[[Topology], float | None]
    derived: Mapping[str, float | None]
    case: CaseSpec | None = None
    median_of: Callable[[CaseSpec], float | None] | None = None


@dataclass(frozen=True)
class Metric:
    """One metric, declared once (see the module doc)."""

    name: str  # the key everywhere: verdicts, baseline entries, tolerances, results.json ("peak_memory")
    title: str  # in sentences and chart titles: "peak memory"
    column: str  # a table's header, with the unit of its cells: "peak GiB" (CASE_UNIT: the case's throughput unit)
    unit: str  # shown after a figure: "GiB", "s", "x", "" (CASE_UNIT: the case's throughput unit)
    direction: Direction
    kind: Kind
    gated: bool  # judged against baselines and between A/B sides; else reported only
    description: str  # one line for docs and --help
    tolerances: Mapping[DeviceKind, float] = field(default_factory=dict)  # default per device kind (gated)
    per_launch: Callable[[RunRecord, CaseSpec, Measurement], float] | None = None  # LAUNCH; NotMeasured
    derive: Callable[[ScalingInputs], float | None] | None = None  # SCALING
    per_case: Callable[[Any], float | None] | None = None  # CASE: from the CaseResult
    scale: float = 1.0  # shown as value / scale in ``unit`` (bytes as GiB)
    stored_unit: str = ""  # the unit of the figures results.json and baselines keep ("": ``unit``): "bytes"
    digits: str = ".4g"  # format of a shown figure
    paced: bool = False  # the pace probe may bring both sides to one host pace before judging (throughput)
    option: str = ""  # the command-line option of its tolerance ("" : --dlperf-<name>-tolerance)
    marker: str = ""  # its tolerance's keyword in @pytest.mark.dlperf ("" : <name>_tolerance)
    junit: str = ""  # its JUnit property ("" : dlperf_<name>)
    min_devices: int = 1  # judged only for cases over at least this many devices
    in_table: bool = True  # a column of the terminal's and summary.md's case tables (else a line below them)
    # the robust CV of a session's runs above which the gate calls them NOISY (None: the session's bound,
    # --dlperf-noisy's 10%): a start-up on a shared CPU host spreads far more than its steps do
    cv_bound: float | None = None
    flag: Flag | None = None  # what a case's figure beyond a limit says of the case (reported beside it)
    # the device kinds whose nodes it is gated on by default; on the others it is reported, and judged
    # only where the session or the test gives its tolerance (a start-up on a shared CPU host follows
    # the host's load: it doubled there on unchanged software)
    gated_on: frozenset[DeviceKind] = frozenset(DeviceKind)
    rule: Rule = Rule.TOLERANCE  # how it is judged (gated per-launch metrics)
    # COUNT: what the tool said of each thing a launch counted (a graph break's reason and place)
    said: Callable[[RunRecord], list[str]] | None = None
    # which cases have it at all (None: every case): a compiled case's compile time; another case has no
    # figure and no "not measured" line
    applies_to: Callable[[CaseSpec], bool] | None = None
    # which of a case's launches it is taken from, and why the others are not (None: every launch): a
    # compiled case's start-up figures come from its launches that compiled cold
    launches: Callable[[Sequence[RunRecord], CaseSpec], tuple[list[RunRecord], str]] | None = None

    def __post_init__(self) -> None:
        if self.rule is Rule.COUNT and (self.kind is not Kind.LAUNCH or self.tolerances):
            raise ValueError(f"metric {self.name}: a count is a per-launch metric with no tolerance")
        if self.tolerated and set(self.tolerances) != set(DeviceKind):
            raise ValueError(f"metric {self.name}: a gated metric declares a default tolerance per device kind")
        wanted = {Kind.LAUNCH: self.per_launch, Kind.SCALING: self.derive, Kind.CASE: self.per_case}[self.kind]
        if wanted is None:
            raise ValueError(f"metric {self.name}: a {self.kind} metric declares how it is computed")

    def judged_on(self, kind: DeviceKind, asked: bool = False) -> bool:
        """Whether the gate judges it on nodes of ``kind``: gated there by default, or its tolerance given
        (``asked``: on the command line or in the test's marker)."""
        return self.gated and (kind in self.gated_on or asked)

    @property
    def tolerated(self) -> bool:
        """Gated with a tolerance (its option, marker keyword and baseline field): every gated metric but a count."""
        return self.gated and self.rule is Rule.TOLERANCE

    @property
    def counted(self) -> bool:
        return self.rule is Rule.COUNT

    @property
    def per_run(self) -> bool:
        """A figure per launch, which a baseline keeps run by run; else one figure a case (a scaling ratio)."""
        return self.kind is Kind.LAUNCH

    @property
    def judging(self) -> Judging | None:
        """How it is judged (None: reported, not gated)."""
        if not self.gated or self.kind is Kind.CASE:
            return None
        if self.counted:
            return Judging.COUNT
        return Judging.RATIO if self.kind is Kind.SCALING else Judging.RUNS

    def figure_of(self, result: Any) -> float | None:
        """A case's figure from its result (``CaseResult``): a per-launch metric's from its runs (``of_runs``), a
        scaling one's as its result set derived it, a case one's from the result (``per_case``); None: none."""
        if self.per_run:
            return self.of_runs(result.values(self.name))
        if self.kind is Kind.SCALING:
            return result.scaling.get(self.name)
        return self.per_case(result) if self.per_case is not None else None

    def of_runs(self, values: list[float]) -> float | None:
        """The case's figure from its launches' figures: their median, a count's largest; None: none."""
        if not values:
            return None
        return max(values) if self.counted else statistics.median(values)

    @property
    def option_name(self) -> str:
        return self.option or f"--dlperf-{self.name.replace('_', '-')}-tolerance"

    @property
    def option_dest(self) -> str:
        return self.option_name.lstrip("-").replace("-", "_")

    @property
    def marker_key(self) -> str:
        return self.marker or f"{self.name}_tolerance"

    @property
    def junit_name(self) -> str:
        return self.junit or f"dlperf_{self.name}"

    def unit_for(self, case_unit: str) -> str:
        """The unit shown after a figure; a throughput's is the case's (tokens/s for a decoder), and a
        unit per sample is per token for a decoder (``mJ/{item}``)."""
        return case_unit if self.unit == CASE_UNIT else self.unit.replace(ITEM, item_of(case_unit))

    def raw_unit(self, case_unit: str) -> str:
        """The unit of the figures as kept (results.json, baselines): bytes where the reports show GiB."""
        return self.stored_unit.replace(ITEM, item_of(case_unit)) if self.stored_unit else self.unit_for(case_unit)

    def header(self, case_unit: str) -> str:
        """A table's header: the case's throughput unit, or the declared column name (with its unit)."""
        return case_unit if self.column == CASE_UNIT else self.column.replace(ITEM, item_of(case_unit))

    def flagged(self, value: float | None, case_unit: str = "samples/s") -> str | None:
        """What the case's figure flags, with the figure and the limit ("host-bound: this figure follows
        the CPU's dispatch speed (GPU busy share 62.0%, below 90.0%)"); None where it flags nothing."""
        if self.flag is None or value is None or not self.direction.worse_at_all(value / self.flag.limit):
            return None
        return (f"{self.flag.text} ({self.title} {self.show(value, case_unit)}, {self.direction.beyond} "
                f"{self.show(self.flag.limit, case_unit)})")

    def show(self, value: float | None, case_unit: str = "samples/s", unit: bool = True) -> str:
        """A figure as the reports show it ("-" where there is none, never a filled-in 0)."""
        if value is None:
            return "-"
        text = format(value / self.scale, self.digits)
        u = self.unit_for(case_unit)
        return f"{text} {u}" if unit and u else text

    def applies(self, devices: int) -> bool:
        """Whether a case over ``devices`` devices has this metric (speedup needs more than one)."""
        return devices >= self.min_devices

    def has(self, case: CaseSpec) -> bool:
        """Whether the case has this metric at all (``applies_to``; its devices: ``applies``)."""
        return self.applies(case.topology.world_size) and (self.applies_to is None or self.applies_to(case))

    def taken_from(self, runs: Sequence[RunRecord], case: CaseSpec) -> tuple[list[RunRecord], str]:
        """The launches of ``case`` it is taken from (``launches``; default every one), and where none is,
        why."""
        return self.launches(runs, case) if self.launches is not None else (list(runs), "")

    def default_tolerance(self, kind: DeviceKind) -> float:
        return float(self.tolerances[kind])
