"""The baseline gate inside a pytest session: judging each case against its resolved baseline
(``contexts``) and deciding what the verdicts do to its test (pass, fail, skip); what
``--update-baselines`` keeps is the recorder's (``recording``: only cases whose test passed are written,
at the end, under the file lock). The statistics live in ``baselines.rules``, the files in
``baselines.store``."""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import replace

import pytest

from .. import metrics
from ..baselines import BaselineError, BaselineFile, BaselineStore, Entry, ScalingRuns, Tolerances, judge
from ..baselines.fingerprint import FingerprintComparison, compare
from ..baselines.profile import device_kind
from ..baselines.rules import pace_hides, resolve_tolerances
from ..baselines.store import SittingsError
from ..clusters.base import Node
from ..metrics import PRIMARY
from ..nodechecks.hardware import Fingerprints
from ..results.cases import CaseResult
from ..results.comm import network_said
from ..results.verdict import Judgement, Outcome, Verdict, VerdictStatus  # noqa: F401 - the gate's answers
from ..software.identity import Software
from ..software.provenance import changes, git_commit, run_versions
from ..specs import CaseSpec
from .contexts import BaselineContext, BaselineContexts, Recorded
from .gate_options import GateOptions, marker_tolerances
from .judges import JUDGES, Screened
from .recording import BaselineRecorder


def _versions(result: CaseResult, git: str | None = None) -> dict[str, str]:
    """What the case's first run ran on (``run_versions``): stored with a recording, and compared on
    a regression ("what changed since the baseline")."""
    return run_versions(result.runs[0].meta if result.runs else {}, git)


class Gate:
    """Judges each measured case against its baseline and collects what --update-baselines writes.
    ``wanted(case)``: the frameworks whose major versions name a case's profile (its launcher's)."""

    def __init__(self, options: GateOptions, wanted: Callable[[CaseSpec], Sequence[str]]) -> None:
        self.options = options
        self.store = BaselineStore(options.directory)
        self.notes: list[str] = []
        self.recorder = BaselineRecorder(self.store, options.sittings, options.cv_bound, self.note)
        self.contexts = BaselineContexts(options, self.store, wanted, lambda: self.git, self.note)
        self._git: str | None = None
        self._git_read = False

    @property
    def git(self) -> str | None:
        """The repository's commit, read once per session."""
        if not self._git_read:
            self._git, self._git_read = git_commit(self.options.root), True
        return self._git

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def _with_entry(self, result: CaseResult, nodes: list[Node], context: BaselineContext | None
                    ) -> BaselineContext | None:
        """The case's baseline context where its file reads (None: a broken file, which ``judge`` names)."""
        try:
            return self.contexts.context_of(result, nodes, context)
        except BaselineError:
            return None

    def hardware(self, bfile: BaselineFile, entry: Entry, fingerprints: Fingerprints | None) -> FingerprintComparison:
        """Compare the machine that recorded the entry with this one; session notes say what could not be,
        and where another machine recorded it."""
        comp = compare(bfile.fingerprint_for(entry), fingerprints.nodes if fingerprints else None)
        for err in fingerprints.errors if fingerprints else []:
            self.note(f"hardware fingerprint: {err}")
        if comp.status == "unknown" and not entry.external:
            self.note(f"{bfile.path.name}: {comp.summary()}; throughput judged without that check")
        elif comp.status == "busy":
            self.note(f"hardware fingerprint: {comp.summary()}")
        elif comp.status == "differs":
            mode = "fail" if self.options.hardware_fails else "skip"
            self.note(f"NOT JUDGED (hardware differs from the machine that recorded {bfile.path}): "
                      f"{comp.summary()}. Record this machine's own baseline (--update-baselines; with "
                      f"--dlperf-baseline-profile NAME to keep the committed file), or gate against a profile "
                      f"recorded on the same hardware. These cases {mode} (--dlperf-hardware {mode}).")
        return comp

    def judge(self, result: CaseResult, nodes: list[Node], item: pytest.Item | None,
              fingerprints: Fingerprints | None = None, reference: CaseResult | None = None,
              context: BaselineContext | None = None, software: Software | None = None) -> Judgement:
        """Verdicts for throughput (and speedup, efficiency where both sides have them).

        ``reference`` is this session's 1n1g of the case's group: with the baseline's 1n1g runs it
        lets a speedup's drop be judged on its spread, not on the tolerance alone. ``context``: the
        case's baseline as its readiness check resolved it (see ``context_of``). ``software``: what the case ran
        (recorded with its entry; None: not known).

        The machines are compared first: where an identity fact stored with the entry differs from this
        session's (another CPU, GPU, core count, quota), the verdict is "hardware", not a regression. The
        same machine at another speed (its probe moved) is judged; the primary verdict carries the probe's
        figures (``host_speed``) for the failure's attribution (HOST says them).
        """
        case = result.case
        try:
            ctx = self.contexts.context_of(result, nodes, context)
        except BaselineError as exc:
            return Judgement(Outcome.FAIL, f"{case.id}: {exc}")
        result.profile = ctx.profile
        result.software = software.id if software is not None else None
        tol, asked = self.tolerances(ctx, item)
        record = self.options.update or (ctx.entry is None and self.options.missing == "record")
        comp = self.hardware(ctx.file, ctx.entry, fingerprints) if ctx.entry is not None else None
        if record and item is not None:
            refused = self._record(result, ctx, tol, item.nodeid, comp, reference, fingerprints, nodes, software)
            if refused is not None:
                return refused
        if comp is not None and comp.status == "differs":
            return self._judge_other_hardware(result, ctx, tol, comp, reference, record, asked)
        judged = self._judge_entry(result, ctx, tol, reference, record, asked)
        if comp is not None and comp.speed and judged.verdicts:
            judged.verdicts[0].host_speed = list(comp.speed)
        return judged

    def tolerances(self, ctx: BaselineContext, item: pytest.Item | None) -> tuple[Tolerances, set[str]]:
        """The case's tolerances in force (its file's, the command line's, its test marker's) and the metrics
        whose tolerance the command line or the marker gave (judged even where not gated by default)."""
        marked = marker_tolerances(item)
        tol = resolve_tolerances(ctx.tolerances, self.options.tolerance, marked)
        return tol, {name for name, v in {**self.options.tolerance, **marked}.items() if v is not None}

    def recorded(self, result: CaseResult, nodes: list[Node], item: pytest.Item | None,
                 context: BaselineContext | None) -> Recorded | None:
        """What the case's baseline recorded, for the attribution of a screen failure (None: no entry)."""
        ctx = self._with_entry(result, nodes, context)
        if ctx is None or ctx.entry is None:
            return None
        tol, asked = self.tolerances(ctx, item)
        return Recorded(ctx.entry, ctx.file.software_for(ctx.entry), tol, frozenset(asked), device_kind(ctx.profile))

    def _record(self, result: CaseResult, ctx: BaselineContext, tol: Tolerances, nodeid: str,
                comp: FingerprintComparison | None, reference: CaseResult | None,
                fingerprints: Fingerprints | None, nodes: list[Node], software: Software | None) -> Judgement | None:
        """Keep the entry this session records for the case (written at the end if its test passes), with
        its software; a sitting that cannot be added fails the case (the Judgement returned)."""
        new = Entry.from_result(result, tol, _versions(result, self.git))
        old_software = ctx.file.software_for(ctx.entry) if ctx.entry is not None else None
        try:
            self.recorder.keep(nodeid, ctx.profile, result, new, ctx.entry, comp, reference, fingerprints, tol, nodes,
                               software, old_software)
        except SittingsError as exc:
            return Judgement(Outcome.FAIL, f"{result.case.id}: not recorded: {exc}")
        return None

    def _judge_other_hardware(self, result: CaseResult, ctx: BaselineContext, tol: Tolerances,
                              comp: FingerprintComparison, reference: CaseResult | None, record: bool,
                              asked: set[str]) -> Judgement:
        """The entry was recorded on other hardware: not judged (HARDWARE). Every metric the case measured
        keeps its figures, change and spread in its verdict (results.json, the tables): only its status
        says it was not judged."""
        screened = self._verdicts(result, ctx, tol, reference, asked)
        v = hardware_verdict(result, ctx.entry, tol.get(PRIMARY.name), comp, screened[0] if screened else None)
        others = [not_judged_here(s, comp) for s in screened[1:]]
        result.verdict = {x.metric: x for x in (v, *others)}
        if self.options.update:
            return Judgement(Outcome.PASS, v.message, [v, *others])
        return Judgement(Outcome.FAIL if self.options.hardware_fails else Outcome.SKIP, v.message, [v, *others])

    def _judge_entry(self, result: CaseResult, ctx: BaselineContext, tol: Tolerances,
                     reference: CaseResult | None, record: bool, asked: set[str]) -> Judgement:
        """Verdicts of the case's runs against its entry (or the lack of one), machines set aside."""
        case = result.case
        verdicts = self._verdicts(result, ctx, tol, reference, asked)
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
                  reference: CaseResult | None, asked: set[str]) -> list[Verdict]:
        """A verdict per metric gated on the case's nodes (or whose tolerance ``asked`` gives) that the case
        has (declaration order: the primary metric's first); a metric the session did not measure has none
        (results.json says why), one the entry lacks is MISSING."""
        case, entry = result.case, ctx.entry
        kind = device_kind(ctx.profile)
        if entry is None:
            reason = self.store.describe_missing(ctx.profile, case.key, named=self.options.profile is not None)
            return [judge(result.throughputs, None, tol, case=case.id, missing_reason=reason)]
        scaling_runs = functools.cache(lambda: _scaling_runs(result, entry, reference, ctx.file))  # once, if asked
        screened = Screened(result, entry, tol, self.options.cv_bound, self.options.alpha, scaling_runs)
        judged = (JUDGES[m.judging].verdict(m, screened) for m in metrics.gated()
                  if m.judging is not None and m.has(case) and m.judged_on(kind, m.name in asked))
        return [v for v in judged if v is not None]

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
        return Judgement(Outcome.PASS, "\n".join(v.message for v in verdicts), verdicts)

def _scaling_runs(result: CaseResult, entry: Entry, reference: CaseResult | None,
                  bfile: BaselineFile) -> ScalingRuns | None:
    """The runs behind the session's and the baseline's speedup, where all four are known."""
    if reference is None or not entry.run_count:
        return None
    ref_entry = bfile.get(reference.case.key)
    if ref_entry is None or not ref_entry.run_count:
        return None
    return ScalingRuns(result.throughputs, reference.throughputs, entry.values(PRIMARY.name),
                       ref_entry.values(PRIMARY.name))


def hardware_verdict(result: CaseResult, entry: Entry, tolerance: float, comp: FingerprintComparison,
                     screened: Verdict | None = None) -> Verdict:
    """The verdict for a case whose baseline was recorded on other hardware: not judged, and why, with the
    figures the screen measured (``screened``: the primary metric's verdict as if judged; its spread,
    tests and pace are kept)."""
    case, m_med, b_med = result.case.id, result.median, entry.figure(PRIMARY.name)
    change = m_med / b_med - 1
    rule = "hardware differs from the recording machine: a throughput difference it explains is not called a regression"
    message = (f"HARDWARE {case} {PRIMARY.name}: not judged: this machine is not the one that recorded the baseline "
               f"({comp.summary()}). Measured median {m_med:.4g} {result.case.unit} vs baseline {b_med:.4g} "
               f"({change:+.1%}). Record this machine's own baseline with --update-baselines (with "
               f"--dlperf-baseline-profile NAME to keep the committed file), or gate against a profile recorded on "
               f"the same hardware.")
    if screened is not None:
        return replace(screened, status=VerdictStatus.HARDWARE, message=message, rule=rule, changes=[])
    return Verdict(status=VerdictStatus.HARDWARE, case=case, metric=PRIMARY.name, tolerance=tolerance, message=message,
                   rule=rule, measured_median=m_med, measured_n=len(result.throughputs), baseline_median=b_med,
                   baseline_n=entry.run_count or 1, baseline_source=entry.source, change=change)


def not_judged_here(screened: Verdict, comp: FingerprintComparison) -> Verdict:
    """Another metric of a case recorded on other hardware: its figures as measured, not judged (a MISSING
    one stays MISSING: there was nothing to judge it against)."""
    if screened.status is VerdictStatus.MISSING:
        return screened
    def fig(x: float | None) -> str:
        return f"{x:.4g}" if x is not None else "none"
    change = f" ({screened.change:+.1%})" if screened.change is not None else ""
    message = (f"HARDWARE {screened.case} {screened.metric}: not judged: this machine is not the one that recorded "
               f"the baseline ({comp.summary()}). Measured {fig(screened.measured_median)} vs baseline "
               f"{fig(screened.baseline_median)}{change}.")
    return replace(screened, status=VerdictStatus.HARDWARE, message=message,
                   rule="hardware differs from the recording machine", changes=[])
