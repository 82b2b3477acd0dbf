"""What an A/B session measured of a case: its pairs of launches (reference and candidate, adjacent
in time), a half pair an interrupt cut short, and the paired verdict; as results.json writes them."""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import metrics
from ..results.records import RunRecord
from ..specs import CaseSpec


@dataclass
class Launch:
    """One side's launch in a pair: its throughput (global samples/s) and its run."""

    role: str
    throughput: float
    run: RunRecord
    figures: dict[str, float] = field(default_factory=dict)  # the launch's other gated per-launch metrics

    def to_dict(self) -> dict:
        return {"throughput": self.throughput, "started_at": self.run.started_at,
                "wall_seconds": round(self.run.wall_seconds, 3), "run_dir": self.run.run_dir,
                **({"figures": dict(self.figures)} if self.figures else {})}


@dataclass
class Pair:
    """Two launches adjacent in time; ``first`` says which side went first (ABBA BAAB ...)."""

    index: int
    first: str
    reference: Launch
    candidate: Launch

    @property
    def ratio(self) -> float:
        """Candidate / reference throughput."""
        return self.candidate.throughput / self.reference.throughput

    def to_dict(self) -> dict:
        return {"index": self.index, "first": self.first, "ratio": self.ratio,
                "reference": self.reference.to_dict(), "candidate": self.candidate.to_dict()}


@dataclass
class PairedCase:
    """A case's pairs so far and, once decided (or stopped), its verdict."""

    case: CaseSpec
    name: str
    pairs: list[Pair] = field(default_factory=list)
    half: Launch | None = None  # the first launch of a pair the session did not finish
    verdict: dict | None = None  # the assessment as results.json shows it (status, ratio, low, high, ...)
    complete: bool = False  # its verdict is final (decided, capped or stopped by the budget)
    error: str | None = None  # a launch or readiness check that failed stopped the case
    differences: list[str] = field(default_factory=list)  # what differs between the sides
    # the other gated per-launch metrics' paired verdicts (peak memory, ...): name -> as results.json shows it
    metrics: dict[str, dict] = field(default_factory=dict)
    explanation: dict | None = None  # what got slower: both sides' profiled launches diffed (ab.explain)

    @property
    def status(self) -> str | None:
        return self.verdict["verdict"] if self.verdict else None

    def throughputs(self) -> list[tuple[float, float]]:
        """(reference, candidate) samples/s per pair, in the order taken."""
        return [(p.reference.throughput, p.candidate.throughput) for p in self.pairs]

    def figures(self, metric: str) -> list[tuple[float, float]]:
        """(reference, candidate) figures of another metric per pair; [] unless every pair has both. A pair
        neither of whose launches the metric is taken from (``Metric.taken_from``: a compiled case's warm
        launches have no start-up figures) is left out by design; a launch it is taken from never is."""
        declared = metrics.get(metric)
        taken = [p for p in self.pairs if any(declared.taken_from([launch.run], self.case)[0]
                                              for launch in (p.reference, p.candidate))]
        got = [(p.reference.figures.get(metric), p.candidate.figures.get(metric)) for p in taken]
        return [(r, c) for r, c in got] if got and all(r is not None and c is not None for r, c in got) else []

    def runs(self, role: str) -> list[RunRecord]:
        """One side's runs, in the order taken (the half pair's too)."""
        got = [getattr(p, role).run for p in self.pairs]
        if self.half is not None and self.half.role == role:
            got.append(self.half.run)
        return got

    def to_dict(self) -> dict:
        d = dict(self.verdict or {"verdict": None})
        if d["verdict"] == "continue":  # cut short (an interrupt): not decided, and said so
            d["verdict"] = "undecided"
            d["reason"] = f"the session stopped after {len(self.pairs)} pair(s): {d.get('reason', '')}"
        d.update(pairs=len(self.pairs), complete=self.complete, differences=self.differences,
                 pairs_taken=[p.to_dict() for p in self.pairs])
        if self.half is not None:
            d["unpaired"] = {"role": self.half.role, **self.half.to_dict()}
        if self.metrics:
            d["metrics"] = {name: dict(v) for name, v in self.metrics.items()}
        if self.error:
            d["error"] = self.error
        if self.explanation is not None:
            d["explanation"] = self.explanation
        return d

    def junit_properties(self) -> list[tuple[str, object]]:
        """The case's paired verdicts as JUnit properties (--junitxml)."""
        v = self.verdict or {}
        props: list[tuple[str, object]] = [("dlperf_ab_verdict", v.get("verdict") or "none"),
                                           ("dlperf_ab_pairs", len(self.pairs))]
        for key in ("ratio", "low", "high"):
            if v.get(key) is not None:
                props.append((f"dlperf_ab_{key}", round(v[key], 5)))
        for metric, other in self.metrics.items():
            props.append((f"dlperf_ab_{metric}_verdict", other.get("verdict") or "none"))
            if other.get("ratio") is not None:
                props.append((f"dlperf_ab_{metric}_ratio", round(other["ratio"], 5)))
        return props
