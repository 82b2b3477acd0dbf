"""The baseline gate inside a pytest session: its options, the profile, judging and recording.

The statistics live in ``baselines.gate`` and the files in ``baselines.store``; this module
resolves each case's baseline context once and decides, per case, what a verdict means for the
test (pass, fail, skip) and which measurements ``--update-baselines`` keeps (``recording``: only
cases whose test passed are written, at the end, under the file lock).
"""
from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from importlib import metadata
from pathlib import Path

import pytest

from .baselines import (BaselineError, BaselineFile, BaselineStore, Entry, ScalingRuns, Tolerances, Verdict,
                        VerdictStatus, detect_profile, judge, judge_scalar, resolve_tolerances)
from .baselines import verdict_from_dict  # noqa: F401 - importable from here as before
from .baselines.fingerprint import FingerprintComparison, compare
from .baselines.gate import DEFAULT_ALPHA, DEFAULT_CV_BOUND, pace_hides
from .baselines.store import SittingsError, check_software
from . import metrics
from .metrics import PRIMARY, Kind
from .clusters.base import Node
from .comm import network_said
from .preflight.hardware import Fingerprints
from .recording import BaselineRecorder
from .results import CaseResult, ResultSet
from .specs import CaseSpec



def in_ci() -> bool:
    """The same test pytest uses for CI runs: CI or BUILD_NUMBER set."""
    return bool(os.environ.get("CI") or os.environ.get("BUILD_NUMBER"))


@dataclass(frozen=True)
class GateOptions:
    update: bool
    profile: str | None
    directory: Path
    tolerance: dict[str, float | None]
    missing: str
    noisy_fails: bool
    hardware_fails: bool = False
    cv_bound: float = DEFAULT_CV_BOUND
    alpha: float = DEFAULT_ALPHA
    root: Path | None = None  # the repository under test: its git commit is recorded and compared
    sittings: int = 1  # --dlperf-record-sittings: the sittings an entry keeps when recorded (1: replace)

    @classmethod
    def from_config(cls, config: pytest.Config) -> GateOptions:
        get = config.getoption
        d = get("dlperf_baseline_dir")
        directory = Path(d).expanduser().resolve() if d else Path(config.rootpath) / "baselines"
        if directory.exists() and not directory.is_dir():
            raise pytest.UsageError(f"--dlperf-baseline-dir: {directory} exists and is not a directory")
        if get("dlperf_record_sittings") and not get("dlperf_update_baselines"):
            raise pytest.UsageError("--dlperf-record-sittings K says how many sittings --update-baselines keeps: "
                                    "give it with --update-baselines, or leave it out to gate")
        return cls(update=get("dlperf_update_baselines"), profile=get("dlperf_baseline_profile"), directory=directory,
                   tolerance={m.name: get(m.option_dest) for m in metrics.gated()},
                   missing=get("dlperf_baseline_missing"), noisy_fails=get("dlperf_noisy") == "fail",
                   hardware_fails=(get("dlperf_hardware") or ("fail" if in_ci() else "skip")) == "fail",
                   root=Path(config.rootpath), sittings=get("dlperf_record_sittings") or 1)


def marker_tolerances(item: pytest.Item | None) -> dict[str, float]:
    """``@pytest.mark.dlperf(tolerance=0.03, speedup_tolerance=.., peak_memory_tolerance=..)``: each gated
    metric's tolerance under its declared keyword."""
    if item is None:
        return {}
    marker = item.get_closest_marker("dlperf")
    if marker is None:
        return {}
    names = {m.marker_key: m.name for m in metrics.gated()}
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


def _version_key(frameworks: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(frameworks.items()))


@dataclass(frozen=True)
class BaselineContext:
    """A case's baseline as resolved once, before its first launch: the profile its nodes and
    framework versions name, that profile's file, the case's entry (None: not recorded) and the
    tolerances the file keeps for it (the command line's and the test marker's are laid over them
    when judging). ``versions``: the framework versions that named the profile."""

    profile: str
    file: BaselineFile
    entry: Entry | None
    tolerances: Tolerances
    versions: tuple[tuple[str, str], ...]

    def named_by(self, frameworks: Mapping[str, str]) -> bool:
        """Whether these framework versions are the ones the context was resolved from."""
        return self.versions == _version_key(frameworks)


def _versions(result: CaseResult, git: str | None = None) -> dict[str, str]:
    """What the case's first run ran on (``run_versions``): stored with a recording, and compared on
    a regression ("what changed since the baseline")."""
    return run_versions(result.runs[0].meta if result.runs else {}, git)


def run_versions(meta: dict, git: str | None = None) -> dict[str, str]:
    """What a run ran on, as the workload's meta line says (frameworks, Python, CUDA, NCCL, the
    engine's communication backend, the device model), pytest-dlperf's version and the repository's
    commit: compared between baselines and sessions, and between an A/B session's sides."""
    out = {k: str(meta[k]) for k in ("python", "backend", "cuda", "nccl", "driver") if meta.get(k)}
    out.update({k: str(v) for k, v in (meta.get("frameworks") or {}).items()})
    ranks = [r for r in meta.get("ranks") or [] if isinstance(r, dict) and r.get("device")]
    if ranks:
        out["device"] = str(ranks[0]["device"])
    own = _own_version()
    if own:
        out["pytest_dlperf"] = own
    if git:
        out["git"] = git
    return out


@functools.lru_cache(maxsize=1)
def _own_version() -> str | None:
    """The installed pytest-dlperf's version, read once (a metadata lookup costs about 1 ms)."""
    try:
        return metadata.version("pytest-dlperf")
    except metadata.PackageNotFoundError:
        return None


def git_commit(root: Path | None) -> str | None:
    """The repository's commit (12 hex digits, "+dirty" with uncommitted changes), None outside git."""
    import subprocess

    if root is None:
        return None
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def changes(before: dict[str, str], now: dict[str, str]) -> list[str]:
    """``name before -> now`` for every fact that differs or appeared (pytest-dlperf's own version last)."""
    keys = sorted(set(before) | set(now), key=lambda k: (k == "pytest_dlperf", k))
    return [f"{k} {before.get(k, '(not recorded)')} -> {now.get(k, '(none)')}"
            for k in keys if before.get(k) != now.get(k) and k in now]


def _frameworks(result: CaseResult) -> dict[str, str]:
    meta = result.runs[0].meta if result.runs else {}
    return meta.get("frameworks") or {}


class Gate:
    """Judges each measured case against the store and collects what --update-baselines writes."""

    def __init__(self, options: GateOptions) -> None:
        self.options = options
        self.store = BaselineStore(options.directory)
        self.notes: list[str] = []
        self.recorder = BaselineRecorder(self.store, options.sittings, options.cv_bound, self.note)
        self._files: dict[str, BaselineFile] = {}
        self._contexts: dict[tuple, BaselineContext] = {}  # (backend, case key, versions, nodes) -> context
        self._git: str | None = None
        self._git_read = False

    @property
    def pending(self) -> dict[str, tuple[str, str, Entry, Fingerprints | None]]:
        """nodeid -> (profile, key, entry, the session's fingerprints): what --update-baselines will write."""
        return self.recorder.pending

    @property
    def recorded(self) -> dict[str, Entry]:
        return self.recorder.recorded

    @property
    def written(self) -> dict[str, int]:
        return self.recorder.written

    def test_finished(self, nodeid: str, passed: bool) -> None:
        self.recorder.test_finished(nodeid, passed)

    def flush(self) -> None:
        self.recorder.flush()

    def fill_scaling(self, results: ResultSet) -> int:
        return self.recorder.fill_scaling(results)

    def _add_sitting(self, old: Entry, new: Entry, comp: FingerprintComparison | None,
                     reference: CaseResult | None) -> Entry:
        return self.recorder.add_sitting(old, new, comp, reference)

    @property
    def git(self) -> str | None:
        """The repository's commit, read once per session."""
        if not self._git_read:
            self._git, self._git_read = git_commit(self.options.root), True
        return self._git

    def profile(self, nodes: list[Node], backend: str, result: CaseResult) -> str:
        """The named profile, else the detected one; a mismatch is said plainly once."""
        return self.profile_for(nodes, backend, _frameworks(result))

    def profile_for(self, nodes: list[Node], backend: str, frameworks: Mapping[str, str]) -> str:
        """As ``profile``, from framework versions (``{'torch': '2.13.0'}``) known before any run."""
        detected = detect_profile(nodes, backend, [f"{name} {version}" for name, version in sorted(frameworks.items())])
        if self.options.profile is None:
            return detected
        if self.options.profile != detected:
            note = (f"gating against profile {self.options.profile!r} (named with --dlperf-baseline-profile); "
                    f"this machine's profile is {detected!r}, so differences may be the hardware's")
            self.note(note)
        return self.options.profile

    def _file(self, profile: str) -> BaselineFile:
        if profile not in self._files:
            self._files[profile] = self.store.load(profile)  # BaselineError: named file, never written
        return self._files[profile]

    def context(self, nodes: list[Node], backend: str, case: CaseSpec,
                frameworks: Mapping[str, str]) -> BaselineContext:
        """The case's baseline context for these framework versions, resolved once per session:
        ValueError where the versions name no profile, BaselineError where its file is broken."""
        key = (backend, case.key, _version_key(frameworks), tuple(n.name for n in nodes))
        if key not in self._contexts:
            profile = self.profile_for(nodes, backend, frameworks)
            bfile = self._file(profile)
            self._contexts[key] = BaselineContext(profile, bfile, bfile.get(case.key), bfile.tolerances_for(case.key),
                                                  key[2])
        return self._contexts[key]

    def context_of(self, result: CaseResult, nodes: list[Node], backend: str,
                   context: BaselineContext | None) -> BaselineContext:
        """The context the runs are judged by: the one resolved before the first launch, unless the runs
        report other framework versions than it was resolved from (a plugin's engine reports its own):
        then the profile the runs' versions name, as the judge always used."""
        frameworks = _frameworks(result)
        if context is not None and context.named_by(frameworks):
            return context
        return self.context(nodes, backend, result.case, frameworks)

    def check_file(self, nodes: list[Node], case: CaseSpec, frameworks: Mapping[str, str]) -> BaselineContext | None:
        """Read the file a case will be judged against (or recorded into) before it is measured:
        a broken file (a merge's conflict markers, a hand edit) raises BaselineError now, not after
        minutes of launches whose measurements it would then throw away. Versions that name no
        profile (a framework without a version) leave the check to the judging, as before.
        With --dlperf-record-sittings, what is known before a launch (the repository's commit,
        pytest-dlperf's version, a published entry) is refused now too (SittingsError); the rest
        (frameworks as the workload reports them, the machine) when the runs are added.
        Returns the case's baseline context for the later steps (None: no profile named yet)."""
        try:
            context = self.context(nodes, case.backend, case, frameworks)
        except ValueError:
            return None
        entry = context.entry
        if entry is not None and self.options.update and self.options.sittings > 1:
            check_software(entry, {"git": self.git, "pytest_dlperf": _own_version()}, keys=("git", "pytest_dlperf"))
        return context

    def paced_baseline(self, nodes: list[Node], case: CaseSpec, frameworks: Mapping[str, str]) -> bool:
        """Whether the case's baseline was recorded with the pace probe, or it has none to judge
        against: what ``--dlperf-pace-probe``'s default (auto) probes by. A baseline recorded without
        it is met without it, so that both sides are measured alike (the probe costs about 3%)."""
        if self.options.update:
            return True
        try:
            entry = self.context(nodes, case.backend, case, frameworks).entry
        except (ValueError, BaselineError):  # no versions to name a profile; a broken file fails the case anyway
            return True
        return entry is None or bool(entry.paces)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def probe_again(self, result: CaseResult, nodes: list[Node], backend: str,
                    fingerprints: Fingerprints | None, context: BaselineContext | None = None) -> bool:
        """True when only probe figures set this machine apart from the entry's recording machine
        (a host's slow seconds do that): the session probes again before judging, or before a sitting
        is added (--dlperf-record-sittings refuses one of another machine). Notes nothing."""
        if fingerprints is None or (self.options.update and self.options.sittings <= 1):
            return False
        try:
            ctx = self.context_of(result, nodes, backend, context)
        except BaselineError:
            return False
        if ctx.entry is None:
            return False
        comp = compare(ctx.file.fingerprint_for(ctx.entry), fingerprints.nodes)
        # the session keeps each node's best probe: another look can lift a slow figure, never lower one
        return comp.performance_only and not comp.faster_only

    def hardware(self, bfile: BaselineFile, entry: Entry, fingerprints: Fingerprints | None) -> FingerprintComparison:
        """Compare the machine that recorded the entry with this one; session notes say what could not be."""
        comp = compare(bfile.fingerprint_for(entry), fingerprints.nodes if fingerprints else None)
        for err in fingerprints.errors if fingerprints else []:
            self.note(f"hardware fingerprint: {err}")
        if comp.status == "unknown" and not entry.external:
            self.note(f"{bfile.path.name}: {comp.summary()}; throughput judged without that check")
        elif comp.status == "busy":
            self.note(f"hardware fingerprint: {comp.summary()}")
        elif comp.status == "differs":
            mode = "fail" if self.options.hardware_fails else "skip"
            if comp.faster_only:
                self.note(f"hardware probes FASTER than the machine that recorded {bfile.path} ({comp.summary()}): "
                          f"a throughput drop beyond the tolerance is still a REGRESSION (faster hardware cannot "
                          f"cause it); any other result is NOT JUDGED, since it could hide a slow-down. If this "
                          f"is the recording machine, its probe ran at a slow moment: record again "
                          f"(--update-baselines). The cases not judged {mode} (--dlperf-hardware {mode}).")
                return comp
            self.note(f"NOT JUDGED (hardware differs from the machine that recorded {bfile.path}): "
                      f"{comp.summary()}. Record this machine's own baseline (--update-baselines; with "
                      f"--dlperf-baseline-profile NAME to keep the committed file), or gate against a profile "
                      f"recorded on the same hardware. These cases {mode} (--dlperf-hardware {mode}).")
        return comp

    def judge(self, result: CaseResult, nodes: list[Node], backend: str, item: pytest.Item | None,
              fingerprints: Fingerprints | None = None, reference: CaseResult | None = None,
              context: BaselineContext | None = None) -> Judgement:
        """Verdicts for throughput (and speedup, efficiency where both sides have them).

        ``reference`` is this session's 1n1g of the case's group: with the baseline's 1n1g runs it
        lets a speedup's drop be judged on its spread, not on the tolerance alone. ``context``: the
        case's baseline as its preflight resolved it (see ``context_of``).

        The machines are compared first: when the fingerprints stored with the entry and this
        session's differ beyond the probes' noise, the verdict is "hardware", not a regression.
        """
        case = result.case
        try:
            ctx = self.context_of(result, nodes, backend, context)
        except BaselineError as exc:
            return Judgement(Outcome.FAIL, f"{case.id}: {exc}")
        result.profile = ctx.profile
        tol = resolve_tolerances(ctx.tolerances, self.options.tolerance, marker_tolerances(item))
        record = self.options.update or (ctx.entry is None and self.options.missing == "record")
        comp = self.hardware(ctx.file, ctx.entry, fingerprints) if ctx.entry is not None else None
        if record and item is not None:
            refused = self._record(result, ctx, tol, item.nodeid, comp, reference, fingerprints, nodes)
            if refused is not None:
                return refused
        if comp is not None and comp.status == "differs":
            return self._judge_other_hardware(result, ctx, tol, comp, reference, record)
        return self._judge_entry(result, ctx, tol, reference, record)

    def _record(self, result: CaseResult, ctx: BaselineContext, tol: Tolerances, nodeid: str,
                comp: FingerprintComparison | None, reference: CaseResult | None,
                fingerprints: Fingerprints | None, nodes: list[Node]) -> Judgement | None:
        """Keep the entry this session records for the case (written at the end if its test passes);
        a sitting that cannot be added fails the case (the Judgement returned)."""
        new = Entry.from_result(result, tol, _versions(result, self.git))
        try:
            self.recorder.keep(nodeid, ctx.profile, result, new, ctx.entry, comp, reference, fingerprints, tol, nodes)
        except SittingsError as exc:
            return Judgement(Outcome.FAIL, f"{result.case.id}: not recorded: {exc}")
        return None

    def _judge_other_hardware(self, result: CaseResult, ctx: BaselineContext, tol: Tolerances,
                              comp: FingerprintComparison, reference: CaseResult | None, record: bool) -> Judgement:
        """The entry was recorded on other hardware: not judged (HARDWARE), except that on a machine
        that probes faster a throughput drop beyond the tolerance is still a regression."""
        if comp.faster_only and not self.options.update:
            # this machine probes faster than the recording one: a drop is not the hardware's
            judged = self._judge_entry(result, ctx, tol, reference, record)
            if any(v.metric == PRIMARY.name and v.status is VerdictStatus.REGRESSION for v in judged.verdicts):
                judged.message += (f"\nthe hardware cannot explain this drop: this machine probes faster than "
                                   f"the recording one ({comp.summary()})")
                return judged
        v = hardware_verdict(result, ctx.entry, tol.get(PRIMARY.name), comp)
        result.verdict = {v.metric: v}
        if self.options.update:
            return Judgement(Outcome.PASS, v.message, [v])
        return Judgement(Outcome.FAIL if self.options.hardware_fails else Outcome.SKIP, v.message, [v])

    def _judge_entry(self, result: CaseResult, ctx: BaselineContext, tol: Tolerances,
                     reference: CaseResult | None, record: bool) -> Judgement:
        """Verdicts of the case's runs against its entry (or the lack of one), machines set aside."""
        case = result.case
        verdicts = self._verdicts(result, ctx, tol, reference)
        result.verdict = {v.metric: v for v in verdicts}
        self._pace_notes(result, verdicts[0])
        if ctx.entry is None:
            if record:
                return Judgement(Outcome.PASS, f"{case.id}: recorded as the baseline of profile {ctx.profile!r}",
                                 verdicts)
            return Judgement(Outcome.FAIL if self.options.missing == "fail" else Outcome.SKIP, verdicts[0].message,
                             verdicts)
        return self._outcome(result, ctx.entry, verdicts)

    def _verdicts(self, result: CaseResult, ctx: BaselineContext, tol: Tolerances,
                  reference: CaseResult | None) -> list[Verdict]:
        """A verdict per gated metric the case has (declaration order: the primary metric's first); a
        metric the session did not measure has none (results.json says why), one the entry lacks is MISSING."""
        case, entry = result.case, ctx.entry
        if entry is None:
            reason = self.store.describe_missing(ctx.profile, case.key, named=self.options.profile is not None)
            return [judge(result.throughputs, None, tol, case=case.id, missing_reason=reason)]
        verdicts, runs = [], None
        for m in metrics.gated():
            if not m.applies(case.topology.world_size):
                continue
            if m.kind is Kind.LAUNCH and result.values(m.name):
                verdicts.append(judge(result.values(m.name), entry, tol, metric=m.name, cv_bound=self.options.cv_bound,
                                      alpha=self.options.alpha, case=case.id,
                                      measured_paces=result.paces if m.paced else (),
                                      measured_pace_contract=(result.pace_contract or None) if m.paced else None))
            elif m.kind is Kind.SCALING and result.value(m.name) is not None and entry.figure(m.name) is not None:
                runs = runs or _scaling_runs(result, entry, reference, ctx.file)
                verdicts.append(judge_scalar(result.value(m.name), entry.figure(m.name), tol, metric=m.name,
                                             case=case.id, baseline_source=entry.source, runs=runs,
                                             alpha=self.options.alpha))
        return verdicts

    def _pace_notes(self, result: CaseResult, throughput: Verdict) -> None:
        """The session's notes on the pace probe: a slow-down that may hide on a faster host, a probe that gave no figure."""
        hidden = throughput.pace
        if pace_hides(hidden, throughput.status):
            self.note(f"{result.case.id}: passed as measured on a host the pace probe found faster than the "
                      f"recording's (x{hidden['measured_pace'] / hidden['baseline_pace']:.2f}); at the baseline's "
                      f"pace it reads {hidden['at_pace_change']:+.1%}, a regression: a slow-down may hide there. "
                      "Run again, or record the baseline again to gate it closely.")
        if result.pace_errors:
            self.note(f"{result.case.id}: the pace probe gave no figure ({'; '.join(result.pace_errors)}): "
                      "its throughputs are judged as measured")

    def _outcome(self, result: CaseResult, entry: Entry, verdicts: list[Verdict]) -> Judgement:
        """What the verdicts against a recorded entry do to the test, with what changed since it was recorded."""
        case = result.case
        failing = [v for v in verdicts if v.fails(self.options.noisy_fails)]
        if failing:
            changed = changes(entry.versions, _versions(result, self.git))
            said = ("changed since the baseline was recorded: " + "; ".join(changed)) if changed else \
                "nothing recorded changed since the baseline (versions, device, commit): look at the machine and the code"
            for v in failing:
                v.changes = changed
            network = network_said(result.communication, entry.busbw)
            if network:
                said += f"\n{network}"
            if not self.options.update:
                return Judgement(Outcome.FAIL, "\n".join(v.message for v in failing) + "\n" + said, verdicts)
        first = verdicts[0]
        if first.status is VerdictStatus.HARDWARE and not self.options.update:  # judge's only HARDWARE: host_slower
            slower = first.pace["host_slower"]
            mode = "fail" if self.options.hardware_fails else "skip"
            self.note(f"{case.id}: NOT JUDGED (this session's host ran slower than the recording's by the pace "
                      f"probe, x{slower['ratio']:.2f}, beyond the probe's own spread): a drop there may be the "
                      f"host's. Run again at a quieter moment, or record the baseline again on this host. "
                      f"The case {mode}s (--dlperf-hardware {mode}).")
            return Judgement(Outcome(mode), first.message, verdicts)
        return Judgement(Outcome.PASS, "\n".join(v.message for v in verdicts), verdicts)

def _scaling_runs(result: CaseResult, entry: Entry, reference: CaseResult | None,
                  bfile: BaselineFile) -> ScalingRuns | None:
    """The runs behind the session's and the baseline's speedup, where all four are known."""
    if reference is None or not entry.throughputs:
        return None
    ref_entry = bfile.get(reference.case.key)
    if ref_entry is None or not ref_entry.throughputs:
        return None
    return ScalingRuns(result.throughputs, reference.throughputs, entry.throughputs, ref_entry.throughputs)


def hardware_verdict(result: CaseResult, entry: Entry, tolerance: float, comp: FingerprintComparison) -> Verdict:
    """The verdict for a case whose baseline was recorded on other hardware: not judged, and why."""
    case, m_med, b_med = result.case.id, result.median, entry.median
    change = m_med / b_med - 1
    rule = ("hardware differs from the recording machine beyond the probes' noise: "
            "a throughput difference it explains is not called a regression")
    hidden = (" A machine that probes faster can hide a slow-down behind that figure; only a drop beyond the "
              "tolerance is judged on it." if comp.faster_only else "")
    message = (f"HARDWARE {case} {PRIMARY.name}: not judged: this machine is not the one that recorded the baseline "
               f"({comp.summary()}). Measured median {m_med:.4g} {result.case.unit} vs baseline {b_med:.4g} "
               f"({change:+.1%}).{hidden} Record this machine's own baseline with --update-baselines (with "
               f"--dlperf-baseline-profile NAME to keep the committed file), or gate against a profile recorded on "
               f"the same hardware.")
    return Verdict(status=VerdictStatus.HARDWARE, case=case, metric=PRIMARY.name, tolerance=tolerance, message=message,
                   rule=rule, measured_median=m_med, measured_n=len(result.throughputs), baseline_median=b_med,
                   baseline_n=len(entry.throughputs) or 1, baseline_source=entry.source, change=change)
