"""What got slower in a paired case: once its verdict is final, one profiled launch of each side (never
counted toward any figure), their traces diffed (``explain``), kept on the case's record. With
``--dlperf-explain auto`` a case is explained when its verdict is SLOWER or another metric's WORSE; with
``always`` every case; with ``never`` none. A case whose engine cannot be profiled, or whose profiled
launch fails, says why in its block, and its verdict stands."""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from .. import explain
from ..baselines.fingerprint import robust_sd
from ..clusters.base import ClusterError
from ..explain import RankProfile
from ..measure import Bench, launch
from ..measure.runner import RunFailed
from ..specs import CaseSpec, Measurement
from .options import ExplainOptions
from .pairs import PairedCase
from .sides import ROLES, Side

DEFAULT_LAUNCH_NOISE = 0.02  # with fewer than three pairs: the pairs' spread is not known
LEAST_LAUNCH_NOISE = 0.01  # three pairs whose ratios happen to agree do not make a launch exact
LABEL = "explain-{role}"  # a side's profiled launch: runs/<case>/explain-<role>/


def wanted(rec: PairedCase, mode: str) -> bool:
    """Whether the case is explained: ``always``; ``auto`` on SLOWER or any metric WORSE; never ``never``, nor a
    case that stopped on an error or has no pair."""
    if mode == "never" or rec.error or not rec.pairs:
        return False
    if mode == "always":
        return True
    return rec.status == "slower" or any(v.get("verdict") == "worse" for v in rec.metrics.values())


def launch_noise(rec: PairedCase) -> float:
    """The launch-to-launch spread of one side's launch against the other's: the pairs' log ratios' spread, as a
    standard deviation estimated robustly (1.4826 x their median absolute deviation: one pair a busy host
    disturbed does not make every operator noisy), at least LEAST_LAUNCH_NOISE; with fewer than three pairs
    DEFAULT_LAUNCH_NOISE."""
    logs = [math.log(p.ratio) for p in rec.pairs if p.ratio > 0]
    return max(LEAST_LAUNCH_NOISE, robust_sd(logs)) if len(logs) >= 3 else DEFAULT_LAUNCH_NOISE


def what_of(options: ExplainOptions) -> str:
    return f"one profiled launch a side, {options.steps} steps after the window on every rank, never counted"


@dataclass
class Profiled:
    """One profiled launch: its ranks read back, the problems met, its trace directory; or why there is none."""

    ranks: list[RankProfile]
    problems: list[str]
    traces: str = ""
    launch: str = ""
    why: str | None = None


def profile_once(bench: Bench, case: CaseSpec, m: Measurement, steps: int, role: str, side: Side | None = None,
                 name: str | None = None, seconds: list[float] | None = None) -> Profiled:
    """One profiled launch of the case (on ``side``; None: the session's own), never counted; its traces read."""
    launcher = bench.launcher(case)
    if launcher.unprofiled is not None:
        return Profiled([], [], why=f"--backend {launcher.name}: {launcher.unprofiled}")
    try:
        run = launch(bench, case, replace(m, profile_steps=steps, pace_probe=False), LABEL.format(role=role), 0, 1,
                     seconds if seconds is not None else [], side=side, name=name)
    except (RunFailed, ClusterError) as exc:
        return Profiled([], [], why=f"a profiled launch failed: {exc}".splitlines()[0])
    except Exception as exc:  # noqa: BLE001 - the verdict is decided: nothing here may stop the session
        return Profiled([], [], why=f"the profiled launch raised {type(exc).__name__}: {exc}".splitlines()[0])
    try:
        ranks, problems = explain.from_meta(run.meta, role)
    except Exception as exc:  # noqa: BLE001 - a trace the reader did not foresee: said, the verdict stands
        return Profiled([], [], f"{run.run_dir}/trace", run.run_dir,
                        why=f"its traces could not be read: {type(exc).__name__}: {exc}".splitlines()[0])
    return Profiled(ranks, problems, f"{run.run_dir}/trace", run.run_dir)


def against_recorded(bench: Bench, case: CaseSpec, m: Measurement, options: ExplainOptions, summary: object,
                     noise: float, throughput_ratio: float | None = None, name: str | None = None) -> dict:
    """A regression no reference can confirm, explained against the profile its baseline recorded
    (``explain.summary``): one profiled launch of this session's software, diffed against that summary."""
    what = f"this session's profiled launch ({options.steps} steps, never counted) against the recording's profile"
    bad = explain.problem(summary)
    if bad is not None:
        return {"what": what, "why": f"the baseline's recorded profile cannot be read: {bad}", "problems": []}
    got = profile_once(bench, case, m, options.steps, "candidate", name=name)
    if got.why is not None or not got.ranks:
        return {"what": what, "why": got.why or "no trace of this session could be read", "problems": got.problems}
    assert isinstance(summary, dict)
    return explain.compared({"what": what, "problems": got.problems, "traces": {"candidate": got.traces}}, summary,
                            explain.summarize(got.ranks), noise, got.ranks, throughput_ratio)


class Explainer:
    """Explains the paired cases its options want, with the bench's launches on each side."""

    def __init__(self, bench: Bench, options: ExplainOptions, sides: Callable[[], Mapping[str, Side]]) -> None:
        self.bench, self.options, self.sides = bench, options, sides

    def __call__(self, rec: PairedCase, m: Measurement) -> None:
        if not wanted(rec, self.options.mode):
            return
        try:
            self._explain(rec, m)
        except Exception as exc:  # noqa: BLE001 - the verdict is decided: an explanation that breaks says so
            rec.explanation = {"what": what_of(self.options), "problems": [],
                               "why": f"explaining raised {type(exc).__name__}: {exc}".splitlines()[0]}

    def _explain(self, rec: PairedCase, m: Measurement) -> None:
        what, got, seconds = what_of(self.options), {}, []
        for role in ROLES:
            got[role] = profile_once(self.bench, rec.case, m, self.options.steps, role, self.sides()[role], rec.name,
                                     seconds)
            if got[role].why is not None:
                rec.explanation = {"what": what, "why": got[role].why, "problems": []}
                return
        rec.explanation = explain.explanation(
            *((got[role].ranks, got[role].problems) for role in ROLES), launch_noise(rec),
            (rec.verdict or {}).get("ratio"), what=what,
            traces={role: got[role].traces for role in ROLES}, launches={role: got[role].launch for role in ROLES},
            seconds=round(sum(seconds), 1))
