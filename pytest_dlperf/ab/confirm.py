"""A case that failed its stored baseline, run side by side with the recorded software: a paired,
interleaved A/B of one case (the reference: the recorded software; the candidate: this session's own),
on the session's nodes, right after its screen, until the sequential test decides or the cap. One A/B
feature per reference and tolerances, so a rev's worktree is made once; removed when the session ends."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from .. import metrics
from ..measure import Bench
from ..metrics import Judging, Metric
from ..specs import CaseSpec, Measurement, Topology
from .explain import against_recorded
from .feature import ABSession
from .options import ABOptions, ConfirmOptions
from .order import PairedOrder
from .pairs import PairedCase
from .sides import SideSpec

RUNS = "side-by-side"  # the confirmation's runs go under runs/<case>/side-by-side/


@dataclass
class SideBySideResult:
    """A confirmation's pairs: the case's record, its 1n1g's where scaling was in question, the A/B feature
    that took them (for its scaling verdict and messages), and the error that stopped them."""

    record: PairedCase
    ab: ABSession
    error: str | None = None

    def verdict_of(self, metric: Metric) -> dict | None:
        """The metric's paired verdict: the primary metric's the pairs' own; a ratio's from both ladders, where
        the case's 1n1g was paired too; another's from the same pairs (None: the pairs gave it none)."""
        if metric is metrics.PRIMARY:
            return self.record.verdict
        if metric.judging is Judging.RATIO:
            return self.ab.scaling(self.record)
        return self.record.metrics.get(metric.name)


class SideBySide:
    """``bench``: the session's (its readiness check already ran for the case); ``workload_files``: each engine's
    entry script (a rev= reference checks them out); ``probed(case)``: its framework versions on node 0."""

    def __init__(self, bench: Bench, workload_files: list[Path], probed: Callable[[CaseSpec], dict[str, str]],
                 options: ConfirmOptions) -> None:
        self.bench = replace(bench, name=lambda case: f"{bench.name(case)}/{RUNS}", ready=lambda case: None,
                             # the pairs correct for the host; the pace probe would share each launch's core
                             measurement=lambda case, m: replace(bench.measurement(case, m), pace_probe=False))
        self.workload_files, self.probed, self.options = workload_files, probed, options
        self._features: dict[tuple, ABSession] = {}

    def feature(self, reference: SideSpec, tolerance: float, tolerances: Mapping[str, float | None]) -> ABSession:
        """The A/B feature of this reference and tolerances (made once)."""
        key = (reference.text, tolerance, tuple(sorted(tolerances.items())))
        if key not in self._features:
            o = self.options
            ab = ABOptions(reference=reference, candidate=SideSpec("candidate", name="this session"),
                           tolerance=tolerance, alpha=o.alpha, min_pairs=o.min_pairs, max_pairs=o.max_pairs,
                           undecided_fails=o.undecided_fails, explain=o.explain, env=o.env)
            self._features[key] = ABSession(ab, self.bench, self.workload_files, self.probed, tolerances)
        return self._features[key]

    def run(self, case: CaseSpec, m: Measurement, reference: SideSpec, tolerance: float,
            tolerances: Mapping[str, float | None], scaling: bool = False) -> SideBySideResult:
        """Pairs of ``case`` until decided (with ``scaling``, of its 1n1g first, for the scaling verdict)."""
        ab = self.feature(reference, tolerance, tolerances)
        order = PairedOrder(self.bench, ab, rounds=False, budget_seconds=0.0)
        error = None
        if scaling and case.topology.world_size > 1:
            single = order.measure(replace(case, topology=Topology(1, 1)), None, m)
            error = single.error
        got = order.measure(case, None, m)
        return SideBySideResult(got.paired, ab, got.error or (str(got.outcome) if got.outcome else None) or error)

    def against_recorded(self, case: CaseSpec, m: Measurement, summary: object, noise: float,
                         throughput_ratio: float | None) -> dict:
        """A regression no reference can confirm, explained against its baseline's recorded profile (ab.explain)."""
        return against_recorded(self.bench, case, m, self.options.explain, summary, noise, throughput_ratio)

    def close(self) -> None:
        """Remove every reference's worktree."""
        for ab in self._features.values():
            ab.close()
