"""Confirm before failing, and recordings that see every mode (issue #48).

A case whose first look against its stored baseline is a regression (or NOISY) takes ``--dlperf-confirm``
more launches in its own test, after the rounds of every case, and those launches are judged alone
against the baseline, with the same rule and alpha: the test fails only where they call it a regression
too. Unchanged software then fails only where fresh launches, taken minutes later, are significantly
slower on their own: at most alpha on a host as fast as at the recording, whatever the first look did
(it only decides whether to look again). A host that has slowed since the recording fails it too, and
every CONFIRMED verdict says so (``DRIFT``). Judged together with the first launches instead, a slow
spell that covered all three of them still carried the pooled test against a tight baseline (a planted
half-speed spell over three launches and three at full speed: p=0.002, REGRESSION, in
tests/test_gate_plugin.py's tiny-engine case).

A recording whose launches fall into separate modes (``baselines.modes``) takes the same number more,
so that the baseline holds every mode it can see; where they still split, the session says that the
case cannot be gated tightly here, and from what drop on it can.
"""
from __future__ import annotations

from collections.abc import Sequence

from .. import metrics
from ..baselines.fingerprint import robust_cv
from ..baselines.modes import Modes, split_modes, tightest_drop
from ..results import CaseResult
from ..verdict import Judgement, Outcome, Verdict, VerdictStatus


def suspects(judgement: Judgement, noisy_fails: bool) -> list[Verdict]:
    """The failing verdicts that more launches can confirm or clear: a tolerance's, not a count's (a
    graph break is counted the same in every launch)."""
    if judgement.outcome is not Outcome.FAIL:
        return []
    counted = {m.name for m in metrics.gated() if m.counted}
    return [v for v in judgement.verdicts if v.fails(noisy_fails) and v.metric not in counted]


def first_look(verdicts: Sequence[Verdict]) -> str:
    """The first look's suspects in a line: each metric, its change and status."""
    return ", ".join(f"{v.metric} {v.change:+.1%} ({v.status}{_p(v)})" if v.change is not None else
                     f"{v.metric} ({v.status})" for v in verdicts)


def _p(v: Verdict) -> str:
    return f", p={v.p_value:.3f}" if v.p_value is not None else ""


def holds_up(first: Verdict, now: Verdict | None, noisy_fails: bool) -> bool:
    """Whether the second look keeps a first look's failure: a regression must be a regression again;
    a first look's regression that all the launches call NOISY was a spell the later launches left (it
    fails no more: failing less can only lower the false-alarm rate); a NOISY first look stays NOISY."""
    if now is None or not now.fails(noisy_fails):
        return False
    return now.status is VerdictStatus.REGRESSION or first.status is VerdictStatus.NOISY


def second_look(first: Sequence[Verdict], before: int, added: int, seconds: float, judgement: Judgement,
                noisy_fails: bool) -> tuple[str, bool]:
    """What the confirming launches, judged alone (``judgement``), said of the first look (for the
    verdicts, the test's message and the session's notes), and whether the case still fails; marks each
    of the second look's verdicts of the first's metrics with it."""
    now = {v.metric: v for v in judgement.verdicts}
    still = [now[v.metric] for v in first if holds_up(v, now.get(v.metric), noisy_fails)]
    head = (f"after {before} launch(es) it looked like a regression: {first_look(first)}; the {added} launch(es) "
            f"taken to confirm it ({seconds:.0f} s, after the session's other cases), judged alone,")
    if still:
        text = f"CONFIRMED: {head} agree: {first_look(still)}. {DRIFT}"
    else:
        cleared = [now[v.metric] for v in first if v.metric in now]
        text = f"NOT CONFIRMED: {head} do not: {first_look(cleared) or 'no verdict'}. {_why_cleared(cleared)}"
    for v in judgement.verdicts:
        if v.metric in {f.metric for f in first}:
            v.confirmation = text
    looked = {v.metric: v for v in first}
    fails = [v for v in judgement.verdicts if v.fails(noisy_fails)
             and (v.metric not in looked or holds_up(looked[v.metric], v, noisy_fails))]
    return text, judgement.outcome is Outcome.FAIL and bool(fails)


# What a confirmation cannot tell apart, said with every CONFIRMED verdict: both looks meet the host as it is
# now, so a host slower than at the recording fails unchanged software too (docs/gate.md, "Confirm before failing").
DRIFT = ("The test fails only where both looks do: on a host as fast as at the recording, unchanged software "
         "fails it at most at the gate's alpha; a host that has slowed since the recording fails it too. To tell "
         "the two apart, judge the software side by side with the baseline's: --dlperf-reference "
         "rev=<the baseline's commit, above> (A/B, docs/ab.md)")


def _why_cleared(cleared: Sequence[Verdict]) -> str:
    """What a second look that cleared the first says: its launches disagree among themselves (NOISY), or
    show no significant drop beyond the tolerance: the first launches most likely met a slow spell."""
    if any(v.status is VerdictStatus.NOISY for v in cleared):
        return "They disagree among themselves: this host's speed moved under the case; run it again to judge it"
    return ("The later launches do not show it: the first most likely met a slow spell of this host (a real "
            "drop beyond the tolerance shows in both looks)")


def unsettled(result: CaseResult, cv_bound: float) -> Modes | str | None:
    """Why a recording's launches cannot be trusted yet: their modes, or a spread above the gate's
    bound; None where they can."""
    xs = result.throughputs
    modes = split_modes(xs)
    if modes is not None:
        return modes
    if len(xs) >= 2 and robust_cv(xs) > cv_bound:
        return f"a robust CV of {robust_cv(xs):.1%}, above the bound {cv_bound:.0%}"
    return None


def recorded_in_modes(case_id: str, unit: str, why: Modes | str, result: CaseResult, added: int,
                      cv_bound: float) -> str:
    """The session's note on a recording that took more launches: what they found."""
    said = why.said(unit) if isinstance(why, Modes) else why
    head = f"{case_id}: its recording's launches fell into {said}; {added} more launch(es) taken"
    left = unsettled(result, cv_bound)
    xs = result.throughputs
    if left is None:
        return f"{head}, and all {len(xs)} agree: the baseline holds them all"
    now = left.said(unit) if isinstance(left, Modes) else left
    return (f"{head}, and all {len(xs)} still split ({now}): this case cannot be gated tightly on this "
            f"host. The baseline keeps every launch, so a session in its slower mode passes; a drop is called "
            f"only from about {tightest_drop(xs):.0%} below its median on. Record it on a quieter host, or "
            "with more --dlperf-repeats, to gate it closer")
