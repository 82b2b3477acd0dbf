"""The stored gate's verdict on a case in three steps: screen, attribution, confirmation (issue #55;
docs/gate.md, "Screen, then confirm side by side").

1. **Screen.** The case's launches against its stored baseline (``Gate.judge``). Most cases pass here,
   and then nothing more is run.
2. **Attribution.** For each failure of a metric that a host can move (throughput, the scaling figures,
   time to first step, compile time, peak memory): what differs between the software the baseline
   recorded and this session's (``software.differences``). Nothing: the verdict is HOST, a statement
   about the machine, whose test follows ``--dlperf-hardware`` (skipped on a terminal, failed under CI).
   Software not recorded (a baseline older than this): nothing can be proven equal.
3. **Confirmation.** With a difference, the case runs again in the same session, on the same nodes,
   side by side with the recorded software (``ab.confirm``: paired, interleaved launches; the reference
   found by ``ab.recorded`` or named with ``--dlperf-confirm-reference``), and the paired verdict decides:
   SLOWER (WORSE) is a REGRESSION confirmed, SAME or FASTER passes (the host drifted since the
   recording), UNDECIDED follows ``--dlperf-undecided``. Where no reference can run the recorded
   software, the failure stays a REGRESSION marked "not confirmed", with what differs, the option that
   would confirm it and, for a recording of several sittings, how far its host drifted between them.

A count (graph breaks, recompilations) is the same in every launch of a software: it is final at the screen.
"""
from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import Enum

import pytest

from .. import explain, metrics
from ..ab.confirm import SideBySide, SideBySideResult
from ..ab.explain import DEFAULT_LAUNCH_NOISE, LEAST_LAUNCH_NOISE
from ..ab.options import ConfirmOptions
from ..ab.recorded import Found, find
from ..baselines.drift import sitting_drift
from ..baselines.entry import PROFILE_KEY
from ..baselines.rules import catch_rate
from ..measure import Measured
from ..metrics import Direction, Judging
from ..results.cases import CaseResult
from ..results.verdict import Judgement, Outcome, Verdict, VerdictStatus
from ..software.identity import Difference, NodeSoftware, Software, differences
from ..specs import CaseSpec, Measurement
from .contexts import Recorded
from .recording import CATCH_DROP

WEAK_POWER = 0.5  # --dlperf-confirm-when weak: a recording whose screen catches a 10% drop less often than this


class Settled(str, Enum):
    """What the attribution and confirmation made of a screen's failure (results.json's
    ``verdict.<metric>.confirmation.outcome``)."""

    HOST = "host"  # nothing recorded differs: the host
    CONFIRMED = "confirmed"  # side by side with the recorded software: slower (worse)
    CLEARED = "cleared"  # side by side: the same, or better
    UNDECIDED = "undecided"  # side by side: the pairs did not decide
    NOT_CONFIRMED = "not confirmed"  # a difference, and no reference could run the recorded software

    def __str__(self) -> str:
        return self.value


# a paired verdict's word -> what it makes of the screen's failure
_PAIRED = {"slower": Settled.CONFIRMED, "worse": Settled.CONFIRMED, "same": Settled.CLEARED,
           "faster": Settled.CLEARED, "better": Settled.CLEARED}


@dataclass(frozen=True)
class Lookups:
    """What the attribution asks of the session: the case's baseline as the gate resolved it
    (``recorded(result, item)``), whether the repository holds a commit (``reachable``) and whether two
    commits hold the same files outside the baseline store (``same_tree``), and an interpreter's software
    on the case's first nodes, or why it cannot run there (``interpreter(path, nodes)``)."""

    recorded: Callable[[CaseResult, pytest.Item | None], Recorded | None]
    reachable: Callable[[str], bool]
    same_tree: Callable[[str, str], bool]
    interpreter: Callable[[str, int], Mapping[int, NodeSoftware] | str]


class Confirmation:
    """Attribution and confirmation of the stored gate's screen failures (see the module doc). ``say``: a
    line for the live log; ``note``: the session's notes (a screen failure that passes side by side is said
    there, as its test passes in silence)."""

    def __init__(self, options: ConfirmOptions, side_by_side: SideBySide, lookups: Lookups, hardware_fails: bool,
                 noisy_fails: bool, say: Callable[[str], None], note: Callable[[str], None]) -> None:
        self.options, self.side_by_side, self.lookups = options, side_by_side, lookups
        self.hardware_fails, self.noisy_fails, self.say, self.note = hardware_fails, noisy_fails, say, note

    def settle(self, got: Measured, item: pytest.Item | None, result: CaseResult, judgement: Judgement,
               software: Software | None, m: Measurement) -> Judgement:
        """The case's judgement after attribution and, where the software differs, confirmation."""
        suspects = [v for v in judgement.verdicts if v.fails(self.noisy_fails) and not metrics.get(v.metric).counted]
        if judgement.outcome is not Outcome.FAIL or not suspects:
            return self._look_anyway(got, item, result, judgement, software, m)
        base = self.lookups.recorded(result, item)
        if base is None:  # no entry: the screen had nothing to fail against (cannot happen with suspects)
            return judgement
        diffs = differences(base.software, software, self.lookups.same_tree) if base.software and software else None
        if diffs == []:
            settled = {v.metric: host(v, base) for v in suspects}
        else:
            settled = self._confirm(got, result, suspects, base, software, diffs, m)
        return self._judgement(result, judgement, settled)

    def _look_anyway(self, got: Measured, item: pytest.Item | None, result: CaseResult, judgement: Judgement,
                     software: Software | None, m: Measurement) -> Judgement:
        """A case that passed its screen, confirmed side by side all the same where ``--dlperf-confirm-when``
        asks (its software differs from the recording's: every such case, or one whose recording is too
        spread for its screen to catch a 10% slow-down in half of sessions)."""
        primary = next((v for v in judgement.verdicts if v.metric == metrics.PRIMARY.name), None)
        if self.options.when == "flagged" or not self.options.on or primary is None or primary.status not in (
                VerdictStatus.PASS, VerdictStatus.IMPROVEMENT) or judgement.outcome is not Outcome.PASS:
            return judgement
        base = self.lookups.recorded(result, item)
        diffs = differences(base.software, software, self.lookups.same_tree) if base and base.software and software \
            else None
        if not diffs:  # the same software (or not known): the screen's pass stands
            return judgement
        why = f"its software differs from the recording's (--dlperf-confirm-when {self.options.when})"
        if self.options.when == "weak":
            rate = catch_rate(base.entry, CATCH_DROP, max(3, len(result.throughputs)),
                              base.tolerances.get(metrics.PRIMARY.name))
            if rate is None or rate >= WEAK_POWER:
                return judgement
            why = (f"its software differs from the recording's, whose runs let this screen catch a {CATCH_DROP:.0%} "
                   f"slow-down in about {rate:.0%} of sessions (--dlperf-confirm-when weak)")
        settled = self._confirm(got, result, [primary], base, software, diffs, m, looked=why)
        return self._judgement(result, judgement, settled) if settled else judgement

    def _confirm(self, got: Measured, result: CaseResult, suspects: Sequence[Verdict], base: Recorded,
                 software: Software | None, diffs: list[Difference] | None, m: Measurement,
                 looked: str | None = None) -> dict[str, Verdict]:
        """The suspects confirmed side by side, or not confirmed where no reference runs the recorded software."""
        case = result.case
        said = [d.text for d in diffs or []]
        if not self.options.on:
            found = Found(None, "confirmation is off (--dlperf-confirm-pairs 0)", "--dlperf-confirm-pairs 20")
        elif self.options.reference is not None:
            found = Found(self.options.reference)
        elif software is None:
            found = Found(None, "this session's software is not known (a node's software probe failed: see the notes)",
                          "--dlperf-confirm-reference SPEC")
        else:
            found = find(base.software, software, diffs or [], reachable=self.lookups.reachable,
                         interpreter=lambda path: self.lookups.interpreter(path, case.topology.nodes),
                         recorded_commit=base.entry.versions.get("git", "").removesuffix("+dirty") or None)
        if found.spec is None and looked:  # a screen that passed stays passed: said, not failed
            self.note(f"{case.id}: {looked}, but no reference runs the recorded software: {found.why}")
            return {}
        if found.spec is None:
            out = {v.metric: not_confirmed(v, base, said, found) for v in suspects}
            recorded = base.entry.figure(metrics.PRIMARY.name)
            self._explain_against_recording(case, m, base, out, result.median / recorded if recorded else None)
            return out
        first = ", ".join(f"{v.metric} {v.change:+.1%}" for v in suspects if v.change is not None)
        why = looked or f"failed its stored baseline ({first}) and the software differs ({len(said) or 'not recorded'})"
        self.say(f"dlperf {got.case.id}: {why}: side by side with the recorded software ({found.spec.text})")
        t0 = time.monotonic()
        scaling = any(metrics.get(v.metric).judging is Judging.RATIO for v in suspects)
        tols = {mm.name: (base.tolerances.get(mm.name) if mm.judged_on(base.device, mm.name in base.asked) else None)
                for mm in metrics.tolerated() if mm is not metrics.PRIMARY}
        run = self.side_by_side.run(case, m, found.spec, base.tolerances.get(metrics.PRIMARY.name), tols, scaling)
        seconds = time.monotonic() - t0
        out = {v.metric: confirmed(v, base, said, found, run, seconds, looked) for v in suspects}
        self.say(f"dlperf {got.case.id}: side by side: " + ", ".join(f"{k} {str(v.status).upper()}" for k, v in out.items())
                 + f" ({len(run.record.pairs)} pairs, {seconds:.0f} s)")
        return out

    def _explain_against_recording(self, case: CaseSpec, m: Measurement, base: Recorded, out: dict[str, Verdict],
                                   ratio: float | None) -> None:
        """A regression not confirmed, explained against the profile its baseline recorded (``--dlperf-explain``
        not never; a baseline recorded with --dlperf-explain always keeps one): one profiled launch of this
        session's software, never counted. The launch-to-launch spread is the recording's: its launches'
        relative spread, as a difference of two launches."""
        summary = base.entry.extra.get(PROFILE_KEY)
        if self.options.explain.mode == "never" or summary is None or not out:
            return
        runs = base.entry.values(metrics.PRIMARY.name)
        cv = statistics.stdev(runs) / statistics.fmean(runs) if len(runs) > 1 else DEFAULT_LAUNCH_NOISE / math.sqrt(2)
        first = next(iter(out))
        try:
            found = self.side_by_side.against_recorded(case, m, summary, max(LEAST_LAUNCH_NOISE, cv * math.sqrt(2)),
                                                       ratio)
        except Exception as exc:  # noqa: BLE001 - the verdict is settled: an explanation that breaks says so
            found = {"what": "against the recording's profile", "problems": [],
                     "why": f"explaining raised {type(exc).__name__}: {exc}".splitlines()[0]}
        out[first] = replace(out[first], confirmation={**(out[first].confirmation or {}), "explanation": found})

    def _judgement(self, result: CaseResult, judgement: Judgement, settled: dict[str, Verdict]) -> Judgement:
        """The test's outcome from the settled verdicts and the rest: a REGRESSION fails; an UNDECIDED with
        --dlperf-undecided fail fails; HOST follows --dlperf-hardware; else the case passes."""
        verdicts = [settled.get(v.metric, v) for v in judgement.verdicts]
        result.verdict = {v.metric: v for v in verdicts}
        failing = [v for v in verdicts if v.fails(self.noisy_fails)
                   or (v.status is VerdictStatus.UNDECIDED and self.options.undecided_fails)]
        hosts = [v for v in verdicts if v.status is VerdictStatus.HOST]
        shown = [v for v in verdicts if v.metric in settled or v in failing]
        message = "\n".join([v.message for v in shown] + _screen_notes(judgement) + _explained(settled.values()))
        for v in settled.values():
            if v not in failing and v.status is not VerdictStatus.HOST:
                self.note(v.message.split(". The stored baseline's screen:")[0])
        if failing:
            return Judgement(Outcome.FAIL, message, verdicts)
        if hosts:
            mode = "fail" if self.hardware_fails else "skip"
            return Judgement(Outcome(mode), f"{message}\nThe case {mode}s (--dlperf-hardware {mode}).", verdicts)
        return Judgement(Outcome.PASS, message, verdicts)


# the screen's own line on what changed (from the versions alone): the attribution's differences replace it
_SCREEN_CHANGES = ("changed since the baseline was recorded: ", "nothing recorded changed since the baseline")


def _screen_notes(judgement: Judgement) -> list[str]:
    """The screen's lines that are not a verdict's message (the hardware, the network), but its own line
    on what changed."""
    said = {v.message for v in judgement.verdicts}
    return [ln for ln in judgement.message.split("\n") if ln and ln not in said and not ln.startswith(_SCREEN_CHANGES)]


def _explained(settled: Iterable[Verdict]) -> list[str]:
    """The "what got slower" block of the confirmation's pairs (ab.explain), once for the case."""
    found = explain.of_regression(settled)
    return explain.lines(found) if found is not None else []


def _change(v: Verdict) -> str:
    return f"{v.change:+.1%}" if v.change is not None else "a change"


def _screen(v: Verdict) -> str:
    """The screen's message without its first word (the status it no longer has)."""
    return v.message.split(" ", 1)[1] if " " in v.message else v.message


def _drift(v: Verdict, base: Recorded) -> str:
    """How far the recording's sittings moved, for a verdict that cannot be confirmed ("" : not 3 sittings)."""
    m = metrics.get(v.metric)
    if m.judging is not Judging.RUNS or v.change is None:
        return ""
    d = sitting_drift(base.entry, v.metric)
    if d is None:
        return ""
    said = d.said(m.title, v.change)
    return f" {said[:1].upper()}{said[1:]}."


def _probes(v: Verdict) -> str:
    """What the probes said of this host against the recording, beside the metric's change ("" : nothing moved
    beyond its noise, or nothing was compared): the hardware probe's figures (the machine's identity matched),
    the pace probe's ratio where it found the host slower."""
    said = []
    if v.host_speed:
        said.append("the hardware probe: " + "; ".join(v.host_speed))
    slower = (v.pace or {}).get("host_slower")
    if slower:
        said.append(f"the pace probe: x{slower['ratio']:.2f} of the recording's")
    return f" The same machine (its identity as recorded) at another speed: {'; '.join(said)}." if said else ""


def host(v: Verdict, base: Recorded) -> Verdict:
    """A screen failure where nothing recorded differs: HOST, with the probes' figures beside the metric's."""
    sw = base.software
    assert sw is not None
    m = metrics.get(v.metric)
    if v.status is VerdictStatus.NOISY:  # the screen could not judge: its reason leads, not a speed it did not find
        ran = (f"this session's launches disagreed more than the recording's did, so its screen could not judge "
               f"{m.title} ({_change(v)} at the median): this host ran unsteadily")
    elif m.direction is Direction.HIGHER and v.change is not None and v.change < 0:
        ran = f"this host ran {-v.change:.1%} slower than when it recorded ({m.title} {_change(v)})"
    else:
        ran = f"this host measured {m.title} {_change(v)} against its recording"
    message = (f"HOST {v.case} {v.metric}: nothing recorded differs from the recording ({sw.summary()}): {ran}, or "
               f"something the harness does not record changed (data, firmware, another tenant).{_probes(v)}"
               f"{_drift(v, base)} The stored baseline's screen: {_screen(v)}")
    return replace(v, status=VerdictStatus.HOST, message=message, changes=[],
                   confirmation={"outcome": str(Settled.HOST), "screen": str(v.status), "screen_change": v.change,
                                 "software": sw.id, "probes": _probes(v).strip() or None})


def not_confirmed(v: Verdict, base: Recorded, said: list[str], found: Found) -> Verdict:
    """A screen failure with a software difference (or software not recorded) that no reference confirms."""
    what = ("changed since the recording: " + "; ".join(said)) if said else "what changed since the recording is not known"
    message = (f"REGRESSION {v.case} {v.metric} (not confirmed side by side: {found.why}): {_change(v)} against the "
               f"stored baseline; {what}.{_drift(v, base)} To confirm it side by side with the recorded software: "
               f"{found.option}. The stored baseline's screen: {_screen(v)}")
    return replace(v, status=VerdictStatus.REGRESSION, message=message, changes=said,
                   confirmation={"outcome": str(Settled.NOT_CONFIRMED), "screen": str(v.status),
                                 "screen_change": v.change, "why": found.why, "option": found.option,
                                 "drift": _drift(v, base).strip() or None})


def confirmed(v: Verdict, base: Recorded, said: list[str], found: Found, run: SideBySideResult,
              seconds: float, looked: str | None = None) -> Verdict:
    """A screen failure settled side by side with the recorded software (``run``); ``looked``: why a case
    that passed its screen was confirmed all the same."""
    assert found.spec is not None
    paired = run.verdict_of(metrics.get(v.metric))
    if paired is not None and "reason" in paired:  # the cap of a confirmation is its own option
        paired = {**paired, "reason": paired["reason"].replace("--dlperf-ab-max-pairs", "--dlperf-confirm-pairs")}
    word = (paired or {}).get("verdict") or "undecided"
    outcome = _PAIRED.get(word, Settled.UNDECIDED)
    pairs = len(run.record.pairs)
    changed = ("; changed since the recording: " + "; ".join(said)) if said else ""
    record = {"outcome": str(outcome), "screen": str(v.status), "screen_change": v.change, "reference": found.spec.text,
              **({"looked": looked} if looked else {}),
              "side_by_side": paired, "seconds": round(seconds, 1), "pairs": run.record.to_dict()}
    if run.error and outcome is not Settled.CONFIRMED:
        why = f"the side-by-side launches stopped: {run.error}"
        return replace(not_confirmed(v, base, said, Found(None, why, found.option)),
                       confirmation={**record, "outcome": str(Settled.NOT_CONFIRMED), "why": why})
    shown = _interval(paired, pairs)
    if outcome is Settled.CONFIRMED:
        head = f"REGRESSION {v.case} {v.metric}: confirmed side by side: {shown} against the recorded software"
        status = VerdictStatus.REGRESSION
    elif outcome is Settled.CLEARED and looked:
        head = (f"OK {v.case} {v.metric}: the screen passed ({_change(v)}); {looked}; side by side with the recorded "
                f"software: {word.upper()} {shown}")
    elif outcome is Settled.CLEARED:
        head = (f"OK {v.case} {v.metric}: the screen saw {_change(v)} against the stored baseline; side by side with the "
                f"recorded software: {word.upper()} {shown}: the host drifted since the recording")
        status = VerdictStatus.PASS
    else:
        head = (f"UNDECIDED {v.case} {v.metric}: the screen saw {_change(v)} against the stored baseline; side by side "
                f"with the recorded software: UNDECIDED {shown} ({(paired or {}).get('reason', 'no paired verdict')})")
        status = VerdictStatus.UNDECIDED
    message = (f"{head} ({found.spec.text}; {seconds:.0f} s){changed}. The stored baseline's screen: {_screen(v)}")
    return replace(v, status=status, message=message, changes=said, confirmation=record)


def _interval(paired: dict | None, pairs: int) -> str:
    """``-9.8% [-13.1%, -6.4%] in 8 pairs`` (the candidate against the reference)."""
    if not paired or paired.get("ratio") is None:
        return f"in {pairs} pairs"
    ratio = paired["ratio"] - 1
    if paired.get("low") is None:
        return f"{ratio:+.1%} in {pairs} pairs"
    return f"{ratio:+.1%} [{paired['low'] - 1:+.1%}, {paired['high'] - 1:+.1%}] in {pairs} pairs"
