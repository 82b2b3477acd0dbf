"""Recordings that see every mode (issue #48): a recording whose launches fall into separate modes
(``baselines.modes``) takes ``--dlperf-confirm`` more launches, so that the baseline holds every mode it
can see; where they still split, the session says that the case cannot be gated tightly here, and from
what drop on it can. Launches of one mode spread beyond the gate's bound take none (issue #66): that is
the host's noise between launches, which more of them do not narrow (three of four such cases of the
default suite's recording still disagreed after three more, 2026-11-30), and the session says so."""
from __future__ import annotations

from ..baselines.fingerprint import robust_cv
from ..baselines.modes import Modes, split_modes, tightest_drop
from ..results.cases import CaseResult


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


def host_spread(case_id: str, why: str) -> str:
    """The session's note on a recording whose launches are one mode spread beyond the bound: none more."""
    return (f"{case_id}: its recording's launches are one mode with {why}: that is this host's noise between "
            "launches, which more launches do not narrow, so none were taken. A slow-down within that spread "
            "is told side by side: --dlperf-confirm-when weak, or an A/B session (docs/ab.md)")


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
