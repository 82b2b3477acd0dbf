"""The baseline gate inside a pytest session: its options, the profile, judging and recording.

The statistics live in ``baselines.gate`` and the files in ``baselines.store``; this module
decides, per case, what a verdict means for the test (pass, fail, skip) and which measurements
``--update-baselines`` writes (only cases whose test passed; at the end, under the file lock).
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import pytest

from .baselines import (BaselineError, BaselineFile, BaselineStore, Entry, Tolerances, Verdict, detect_profile,
                        judge, judge_scalar, resolve_tolerances)
from .baselines.gate import DEFAULT_ALPHA, DEFAULT_CV_BOUND
from .baselines.profile import check_profile_name
from .clusters.base import Node
from .results import CaseResult

MISSING = ("skip", "fail", "record")
NOISY = ("fail", "warn")


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction such as 0.05, got {text!r}") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"expected a fraction in [0, 1) such as 0.05 for 5%, got {text!r}")
    return value


def _profile_name(text: str) -> str:
    try:
        return check_profile_name(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_gate_options(parser: pytest.Parser) -> None:
    g = parser.getgroup("dlperf")
    g.addoption("--update-baselines", action="store_true", default=False, dest="update_baselines",
                help="record the cases that ran and passed as the profile's baseline (other entries are kept)")
    g.addoption("--baseline-profile", type=_profile_name, default=None, dest="baseline_profile",
                help="gate against this profile's file instead of the detected one (e.g. ecs.ebmgn6v.24xlarge)")
    g.addoption("--baseline-dir", default=None, dest="baseline_dir", metavar="DIR",
                help="the baseline store (default: <rootdir>/baselines)")
    g.addoption("--tolerance", type=_fraction, default=None,
                help="allowed throughput drop for this run, e.g. 0.05 (default: the profile file's)")
    g.addoption("--speedup-tolerance", type=_fraction, default=None, dest="speedup_tolerance",
                help="allowed speedup drop for this run (default: the profile file's)")
    g.addoption("--efficiency-tolerance", type=_fraction, default=None, dest="efficiency_tolerance",
                help="allowed scaling-efficiency drop for this run (default: the profile file's)")
    g.addoption("--baseline-missing", choices=MISSING, default="skip", dest="baseline_missing",
                help="a case without a baseline: skip (default, says how to record), fail, or record it")
    g.addoption("--dlperf-noisy", choices=NOISY, default="fail", dest="dlperf_noisy",
                help="a case too noisy to judge: fail (default) or warn and pass")


@dataclass(frozen=True)
class GateOptions:
    update: bool
    profile: str | None
    directory: Path
    tolerance: dict[str, float | None]
    missing: str
    noisy_fails: bool
    cv_bound: float = DEFAULT_CV_BOUND
    alpha: float = DEFAULT_ALPHA

    @classmethod
    def from_config(cls, config: pytest.Config) -> GateOptions:
        get = config.getoption
        d = get("baseline_dir")
        directory = Path(d).expanduser().resolve() if d else Path(config.rootpath) / "baselines"
        if directory.exists() and not directory.is_dir():
            raise pytest.UsageError(f"--baseline-dir: {directory} exists and is not a directory")
        return cls(update=get("update_baselines"), profile=get("baseline_profile"), directory=directory,
                   tolerance={"throughput": get("tolerance"), "speedup": get("speedup_tolerance"),
                              "efficiency": get("efficiency_tolerance")},
                   missing=get("baseline_missing"), noisy_fails=get("dlperf_noisy") == "fail")


def marker_tolerances(item: pytest.Item | None) -> dict[str, float]:
    """``@pytest.mark.dlperf(tolerance=0.03, speedup_tolerance=.., efficiency_tolerance=..)``."""
    if item is None:
        return {}
    marker = item.get_closest_marker("dlperf")
    if marker is None:
        return {}
    names = {"tolerance": "throughput", "speedup_tolerance": "speedup", "efficiency_tolerance": "efficiency"}
    unknown = sorted(set(marker.kwargs) - set(names))
    if unknown or marker.args:
        raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.dlperf takes only "
                                f"{', '.join(names)} (got {', '.join(unknown) or marker.args})")
    out = {}
    for k, metric in names.items():
        if k in marker.kwargs:
            v = marker.kwargs[k]
            if not isinstance(v, (int, float)) or not 0 <= v < 1:
                raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.dlperf({k}={v!r}): expected a fraction in [0, 1)")
            out[metric] = float(v)
    return out


@dataclass
class Judgement:
    """What the gate decided for one case's test."""

    outcome: str  # "pass", "fail" or "skip"
    message: str
    verdicts: list[Verdict] = field(default_factory=list)


def _versions(result: CaseResult) -> dict[str, str]:
    meta = result.runs[0].meta if result.runs else {}
    out = {k: str(meta[k]) for k in ("torch", "python", "backend", "cuda") if meta.get(k)}
    try:
        out["pytest_dlperf"] = metadata.version("pytest-dlperf")
    except metadata.PackageNotFoundError:
        pass
    return out


def _frameworks(result: CaseResult) -> list[str]:
    meta = result.runs[0].meta if result.runs else {}
    return [f"torch {meta['torch']}"] if meta.get("torch") else []


class Gate:
    """Judges each measured case against the store and collects what --update-baselines writes."""

    def __init__(self, options: GateOptions) -> None:
        self.options = options
        self.store = BaselineStore(options.directory)
        self.notes: list[str] = []
        self.pending: dict[str, tuple[str, str, Entry]] = {}  # nodeid -> (profile, key, entry)
        self.written: dict[str, int] = {}
        self._files: dict[str, BaselineFile] = {}

    def profile(self, nodes: list[Node], backend: str, result: CaseResult) -> str:
        """The named profile, else the detected one; a mismatch is said plainly once."""
        detected = detect_profile(nodes, backend, _frameworks(result))
        if self.options.profile is None:
            return detected
        if self.options.profile != detected:
            note = (f"gating against profile {self.options.profile!r} (named with --baseline-profile); "
                    f"this machine's profile is {detected!r}, so differences may be the hardware's")
            if note not in self.notes:
                self.notes.append(note)
        return self.options.profile

    def _file(self, profile: str) -> BaselineFile:
        if profile not in self._files:
            self._files[profile] = self.store.load(profile)  # BaselineError: named file, never written
        return self._files[profile]

    def judge(self, result: CaseResult, nodes: list[Node], backend: str, item: pytest.Item | None) -> Judgement:
        """Verdicts for throughput (and speedup, efficiency where both sides have them)."""
        case = result.case
        profile = self.profile(nodes, backend, result)
        try:
            bfile = self._file(profile)
        except BaselineError as exc:
            return Judgement("fail", f"{case.id}: {exc}")
        key = case.key
        entry = bfile.get(key)
        tol = resolve_tolerances(bfile.tolerances_for(key), self.options.tolerance, marker_tolerances(item))
        if entry is None:
            reason = self.store.describe_missing(profile, key, named=self.options.profile is not None)
            v = judge(result.throughputs, None, tol, case=case.id, missing_reason=reason)
            verdicts = [v]
        else:
            verdicts = [judge(result.throughputs, entry, tol, metric="throughput", cv_bound=self.options.cv_bound,
                              alpha=self.options.alpha, case=case.id)]
            if case.topology.world_size > 1:
                for metric, measured in (("speedup", result.speedup), ("efficiency", result.efficiency)):
                    base = getattr(entry, metric)
                    if measured is not None and base is not None:
                        verdicts.append(judge_scalar(measured, base, tol, metric=metric, case=case.id,
                                                     baseline_source=entry.source))
        result.verdict = {v.metric: v.to_dict() for v in verdicts}
        record = self.options.update or (entry is None and self.options.missing == "record")
        if record and item is not None:
            self.pending[item.nodeid] = (profile, key, Entry.from_result(result, tol, _versions(result)))
        if entry is None:
            if record:
                return Judgement("pass", f"{case.id}: recorded as the baseline of profile {profile!r}", verdicts)
            return Judgement("fail" if self.options.missing == "fail" else "skip", verdicts[0].message, verdicts)
        failing = [v for v in verdicts if v.fails(self.options.noisy_fails)]
        if failing and not self.options.update:
            return Judgement("fail", "\n".join(v.message for v in failing), verdicts)
        return Judgement("pass", "\n".join(v.message for v in verdicts), verdicts)

    def test_finished(self, nodeid: str, passed: bool) -> None:
        """Only a case whose test passed is recorded."""
        if not passed:
            self.pending.pop(nodeid, None)

    def flush(self) -> None:
        """Write what --update-baselines collected, one locked atomic update per profile."""
        by_profile: dict[str, dict[str, Entry]] = {}
        for profile, key, entry in self.pending.values():
            by_profile.setdefault(profile, {})[key] = entry
        self.pending.clear()
        for profile, entries in by_profile.items():
            self.store.update(profile, entries, description=None if self.store.exists(profile) else
                              f"recorded with pytest-dlperf on profile {profile}")
            self.written[profile] = len(entries)


def verdict_from_dict(d: dict) -> Verdict:
    """Rebuild a Verdict from its to_dict() (xdist workers' parts)."""
    d = dict(d)
    if d.get("interval") is not None:
        d["interval"] = tuple(d["interval"])
    return Verdict(**d)
