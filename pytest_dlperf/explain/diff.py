"""Two sides' profiles diffed operator by operator (GPU: kernel by kernel) and rank by rank: what changed
per step, by how much, and whether beyond the noise the diff states.

An operator's figure is its time per step, the mean over every profiled step of every rank. Its noise
has two parts: the steps' own spread (the standard error of the difference of the two means), and the
launch-to-launch spread, a fraction of the operator's time. Each side here is one launch, so a host that ran
one launch slower moves the operators by about that fraction: the fraction is the pairs' spread
(``launch_noise``), or where larger, how far the two profiled launches' steps moved apart beyond what the
pairs measured between the sides (``drift``: a host busier during one profiled launch than during the pairs).
Where larger still, how differently the operators moved from one another between the two launches
(``dispersion``: a neighbour slows some operators and not others). A change is beyond the noise when it
exceeds ``Z`` times both together and ``FLOOR`` of the step; a change in
an operator's calls per step (added, removed, more or fewer) is exact and always named."""
from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

from ..baselines.fingerprint import robust_sd
from .profile import BETWEEN, RankProfile

Z = 3.0  # standard errors: a few hundred operators are compared at once
FLOOR = 0.005  # of the reference step: below this no operator's change is named
TOP = 10
DISPERSION_OPS = 8  # operators the dispersion needs
CALLS = 0.5  # calls per step: an operator on another thread can start on either side of a step's edge
STRAGGLER_SHARE = 0.05  # of the step: a rank whose collective wait is this much below the others' is named


@dataclass(frozen=True)
class OpChange:
    """One operator's (kernel's) time and calls per step on both sides."""

    name: str
    reference_ms: float
    candidate_ms: float
    reference_count: float
    candidate_count: float
    noise_ms: float

    @property
    def change_ms(self) -> float:
        return self.candidate_ms - self.reference_ms

    @property
    def calls(self) -> str:
        """added, removed, more, fewer or '' (the same calls per step)."""
        r, c = self.reference_count, self.candidate_count
        if r == 0 and c > 0:
            return "added"
        if c == 0 and r > 0:
            return "removed"
        if abs(c - r) >= CALLS:
            return "more" if c > r else "fewer"
        return ""

    @property
    def surely_ms(self) -> float:
        """How much at least it changed (the order of the operators beyond the noise): an operator whose calls
        changed, its change (the calls are certain, and so is the time they took); another, its change less its
        noise (a large change in a noisy operator does not hide a certain one)."""
        return abs(self.change_ms) - (0.0 if self.calls else self.noise_ms)

    def beyond(self, step_ms: float) -> bool:
        return bool(self.calls) or (abs(self.change_ms) > self.noise_ms and abs(self.change_ms) > FLOOR * step_ms)

    def to_dict(self, step_ms: float) -> dict:
        return {**asdict(self), "change_ms": self.change_ms, "calls": self.calls, "beyond_noise": self.beyond(step_ms)}


@dataclass(frozen=True)
class RankShare:
    """A rank's step on both sides: its time, the share inside collectives and, on GPUs, the breakdown."""

    rank: int
    reference_ms: float
    candidate_ms: float
    reference_collective: float
    candidate_collective: float
    reference_breakdown: dict[str, float] = field(default_factory=dict)
    candidate_breakdown: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Diff:
    """The diff of two sides' profiles: the operators whose time per step changed most (the ones beyond the
    noise first), every operator added or removed, each rank's shares, and a straggler where one stands out."""

    unit: str  # "operators" (CPU self time) or "kernels" (GPU)
    reference_step_ms: float
    candidate_step_ms: float
    top: list[OpChange]
    added: list[str]
    removed: list[str]
    beyond: int  # operators beyond the noise
    compared: int
    launch_noise: float
    ranks: list[RankShare]
    straggler: dict | None
    steps: dict[str, int]  # profiled steps per side (every rank's together)
    drift: float | None = None  # how far the profiled launches moved apart beyond the pairs (None: not known)
    dispersion: float | None = None  # how differently the operators moved between the launches (``dispersion``)

    def to_dict(self) -> dict:
        return {"unit": self.unit, "reference_step_ms": self.reference_step_ms,
                "candidate_step_ms": self.candidate_step_ms,
                "top": [c.to_dict(self.reference_step_ms) for c in self.top], "added": self.added,
                "removed": self.removed, "beyond_noise": self.beyond, "compared": self.compared,
                "launch_noise": self.launch_noise, "noise": NOISE_TEXT,
                "ranks": [asdict(r) for r in self.ranks], "straggler": self.straggler, "steps": self.steps,
                "drift": self.drift, "dispersion": self.dispersion,
                "noise_used": max(self.launch_noise, self.drift or 0.0, self.dispersion or 0.0)}


NOISE_TEXT = (f"{Z:g} x the standard error of the step-to-step spread together with the launch-to-launch "
              f"spread, and at least {FLOOR:.1%} of the step")


def diff(reference: Mapping, candidate: Mapping, launch_noise: float, candidate_ranks: Sequence[RankProfile] = (),
         throughput_ratio: float | None = None) -> Diff:
    """The diff of two sides' summaries (``summary.summarize``: each side one profiled launch, or the reference a
    baseline's); the straggler from the candidate's ranks where they are given. ``throughput_ratio``: candidate
    over reference as the measured launches found it (the pairs', the screen's), against which the profiled
    launches' own step ratio shows how far the host moved them apart (None: not known)."""
    ref_step, cand_step = reference["step_ms"], candidate["step_ms"]
    drift = abs(math.log(cand_step / ref_step * throughput_ratio)) \
        if throughput_ratio and ref_step > 0 and cand_step > 0 else None
    names = sorted(set(reference["ops"]) | set(candidate["ops"]))
    spread = dispersion([_change(name, reference, candidate, 0.0) for name in names], ref_step)
    noise = max(launch_noise, drift or 0.0, spread or 0.0)
    changes = [_change(name, reference, candidate, noise) for name in names]
    beyond = [c for c in changes if c.beyond(ref_step)]
    inside = [c for c in changes if not c.beyond(ref_step)]
    # slower before faster (the block says what got slower), each by how much at least it changed
    order = sorted(beyond, key=lambda c: (c.change_ms < 0, -c.surely_ms)) + \
        sorted(inside, key=lambda c: -abs(c.change_ms))
    return Diff(unit=candidate["unit"], reference_step_ms=ref_step, candidate_step_ms=cand_step, top=order[:TOP],
                added=sorted(c.name for c in changes if c.calls == "added"),
                removed=sorted(c.name for c in changes if c.calls == "removed"),
                beyond=len(beyond), compared=len(changes), launch_noise=launch_noise,
                ranks=_ranks(reference, candidate), straggler=_straggler(candidate_ranks),
                steps={"reference": reference["steps"], "candidate": candidate["steps"]}, drift=drift,
                dispersion=spread)


def dispersion(changes: Sequence[OpChange], step_ms: float) -> float | None:
    """How differently the operators moved between the two launches: 1.4826 x the median absolute deviation of
    the log ratios (``robust_sd``; candidate over reference) of the operators that take ``FLOOR`` of the step on both sides
    with the same calls (``DISPERSION_OPS`` at least, else None). On a shared host one launch's neighbours
    slow some operators and not others (memory-bound ones, multi-threaded ones): this is that noise, measured
    in the diff itself; an operator that changed alone stands out of it, and one that moved with the others
    is not blamed for the host."""
    logs = [math.log(c.candidate_ms / c.reference_ms) for c in changes
            if not c.calls and c.name != BETWEEN and min(c.reference_ms, c.candidate_ms) >= FLOOR * step_ms]
    return robust_sd(logs) if len(logs) >= DISPERSION_OPS else None


def _change(name: str, ref: Mapping, cand: Mapping, launch_noise: float) -> OpChange:
    none = {"ms": 0.0, "var": 0.0, "calls": 0.0}
    a, b = ref["ops"].get(name, none), cand["ops"].get(name, none)
    se2 = a["var"] / ref["steps"] + b["var"] / cand["steps"]
    launch = launch_noise * (a["ms"] + b["ms"]) / 2
    calls = (0.0, 0.0) if name == BETWEEN else (a["calls"], b["calls"])  # not an operator: no calls
    return OpChange(name, a["ms"], b["ms"], *calls, Z * math.sqrt(se2 + launch * launch))


def _ranks(reference: Mapping, candidate: Mapping) -> list[RankShare]:
    by_rank = {r["rank"]: r for r in reference["ranks"]}
    return [RankShare(c["rank"], r["step_ms"], c["step_ms"], r["collective"], c["collective"],
                      dict(r.get("breakdown") or {}), dict(c.get("breakdown") or {}))
            for c in candidate["ranks"] if (r := by_rank.get(c["rank"])) is not None]


def _step_ms(r: RankProfile) -> float:
    return 1e3 * statistics.fmean(s.seconds for s in r.steps)


def _straggler(ranks: Sequence[RankProfile]) -> dict | None:
    """The rank the others wait for at the collectives: its own time inside them is the least, below the
    others' by more than ``STRAGGLER_SHARE`` of the step and more than their steps' spread. The rank that waits
    most is named beside it."""
    if len(ranks) < 2:
        return None
    waits = {r.rank: [1e3 * s.collective for s in r.steps] for r in ranks}
    mean = {k: statistics.fmean(v) for k, v in waits.items()}
    least, most = min(mean, key=mean.get), max(mean, key=mean.get)
    others = [v for k, v in mean.items() if k != least]
    gap = statistics.fmean(others) - mean[least]
    step = statistics.fmean(_step_ms(r) for r in ranks)
    spread = max((statistics.stdev(v) for v in waits.values() if len(v) > 1), default=0.0)
    if gap <= STRAGGLER_SHARE * step or gap <= Z * spread / math.sqrt(max(1, min(len(v) for v in waits.values()))):
        return None
    return {"rank": least, "wait_ms": mean[least], "others_wait_ms": statistics.fmean(others),
            "waits_most": most, "most_wait_ms": mean[most]}
