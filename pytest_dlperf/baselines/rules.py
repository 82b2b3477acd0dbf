"""The regression gate: direction-aware, noise-aware judgement of a case against its baseline.

Rule for throughput (the repeats of both sides are judged, not one number):

- ratio = median(measured) / median(baseline). Higher is better; a median at or above the
  baseline's never fails.
- Significance of a drop (``significance.py``): the exact one-sided Mann-Whitney U test on the
  per-repeat throughputs, with the distribution-free bounds of the ratio that invert it. At the
  suite's default of 3 repeats per side its smallest p-value is exactly 1/20 = 0.05: at alpha
  0.05 the drop is significant when every measured run is slower than every baseline run, whatever
  the shape of the noise, so one disturbed run can neither fake nor hide much. Where the rank test
  cannot reach alpha (2 vs 2, a single run against a few, a published baseline without per-run
  figures) a Student t on the log throughputs decides instead; the message names the test.
- REGRESSION when ratio < 1 - tolerance AND the drop is significant at alpha. A drop beyond the
  tolerance that is not significant passes, and says so.
- NOISY when this session's runs disagree more than the case's own runs did when it was recorded:
  the measured side's robust coefficient of variation (1.4826 x median absolute deviation /
  median, the usual CV for normal noise) is above ``cv_bound`` and its spread is significantly
  larger than the baseline runs' (one-sided F test on the variances of the log throughputs at
  alpha; without baseline runs the bound alone decides), the measured median is below the
  baseline's, and the bounds do not rule out a drop beyond the tolerance (the lower bound is
  below 1 - tolerance). The caller fails it in CI by default. The robust CV is used because the
  median and the rank test already discount a single disturbed run (another job on the core),
  which would blow up the plain CV; the message gives both.
- A baseline whose own runs are that noisy (robust CV above ``cv_bound``) is a fact about the case
  on the recording machine, not about this session: until 2026-11-23 it made nearly every later
  session whose median came out below the baseline's NOISY (3 of 8 cases of a quiet rerun of the
  default suite on the 2-core VM), so a session could not pass by being unchanged. Now the
  significance test, which already takes the baseline's spread into account, decides, and the
  verdict says that only drops beyond its bounds can be told from that noise.
- IMPROVEMENT when ratio > 1 + tolerance: passes, "faster than baseline by N%: consider
  --update-baselines".
- UNJUDGED when neither side has a spread (one launch against a baseline of one run or one
  figure): no test can tell the change from run-to-run noise, so a drop beyond the tolerance is not
  called a regression; the verdict says so and how many launches it needs (NEEDED_LAUNCHES). It
  does not fail. Until 2026-11-27 the tolerance alone decided, and sessions of one launch per case
  against one-launch baselines recorded minutes before on the same machine failed at -4% to -16%.
  (A published baseline without per-run figures judged against several runs keeps its test.)
- Pace (the pace probe, CPU nodes): where every run of both sides carries the probe's figure
  (``node/paceprobe.py``: the host's memory-system speed on each node's launch core) and this
  session's host ran slower than the recording's (median pace below the baseline runs'), both
  sides' throughputs are first brought to the baseline runs' median pace, t x (pace_ref / pace)^b,
  and the rule above judges those. b is the pooled within-side slope of log throughput on log pace
  (each side's runs about their own means, so a difference between the sides, which may be the
  software's, cannot set it; a baseline recorded over several sittings, --dlperf-record-sittings,
  counts each sitting as a side), clipped to 0..1. The pace only ever excuses: where the session's host
  ran faster, the throughputs are judged as measured, and the message says when at the baseline's
  pace they would have been a regression (a slow-down may hide there). Why one-sided: within a
  sitting the fit holds both ways, but across sittings the probe's level moves without the
  throughput following it, and a baseline recorded in a noisy hour made two-sided adjustment fail
  identical code in 27% of trials (three sittings of 2026-11-25, benchmarks/gate_power.py, README
  "Gate power"); credited one way only, identical code failed in at most 6% among those three (not
  against a fourth, quiet-hour recording: below). The message gives the pace, the slope and the
  figures as measured.
- Host slower (the pace): a drop that is still a regression at the baseline's pace, on a host whose
  paces lie below the recording runs' beyond the probe's own spread (median x0.90 or lower, and a
  one-sided rank test on the paces at PACE_HOST_ALPHA), stays a REGRESSION of the screen, and the
  verdict says the host ran slower (``pace["host_slower"]``): the slope fitted within sittings does
  not say how much of the drop that explains, so the attribution decides (``session.confirm``):
  nothing recorded differs, HOST; the software differs, side by side with the recorded software,
  which no host's speed moves. Until issue #63 this was a HARDWARE verdict that stopped the case
  before the attribution, so a software change on a slowed host was never confirmed (README "Gate
  power" has the 2026-11-25 figures of that rule).

Speedup and efficiency (``judge_scalar``) are ratios of medians, case / 1n1g, one number per side,
with their own tolerance in the same direction-aware way. Where both cases' runs are known on both
sides (``ScalingRuns``), a drop beyond the tolerance is a REGRESSION only when it is significant:
a t test on the change in log speedup, each case's spread taken from its runs
(``significance.scaling_test``). Until 2026-11-24 the tolerance alone decided, and a case whose
multi-node runs came out in two modes (bert-base 2n1g recorded at 2.1-2.2 and at 3.1-3.8 samples/s
on the 2-core VM) failed a quiet rerun at -25% whichever mode the session met. Without the runs
(a published baseline, a 1n1g measured on another xdist worker) the tolerance alone decides still,
and the message says so.
"""
from __future__ import annotations

import math
import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from .. import metrics
from ..metrics import Direction
from ..results.verdict import STATUSES, Verdict, VerdictStatus, verdict_from_dict  # noqa: F401 - the judge's verdicts
from .entry import Entry, run_groups
from .fingerprint import robust_cv
from .schema import Tolerances
from .significance import Significance, rank_test, scaling_test, scipy_stats, significant, t_test

DEFAULT_ALPHA = 0.05
DEFAULT_CV_BOUND = 0.10
# The pace says "this host ran slower than the recording's" (in a REGRESSION's message, for the attribution) only where the
# session's median pace is at most 1 - PACE_HOST_MARGIN of the baseline runs' and a one-sided rank test
# on the paces reaches PACE_HOST_ALPHA: 3 runs against 3 cannot (p >= 0.05), 3 against the 8 that
# --update-baselines records on CPU nodes only when every session run probed below every baseline run.
PACE_HOST_ALPHA = 0.01
PACE_HOST_MARGIN = 0.10


# Launches per case that give the gate a spread against a single baseline figure (the one-sample t
# test); 3, the default, on both sides lets the rank test decide alone.
NEEDED_LAUNCHES = 2


@dataclass(frozen=True)
class ScalingRuns:
    """Per-launch throughputs behind a speedup: the case and its 1n1g, in the session and the baseline."""

    case: Sequence[float]
    reference: Sequence[float]
    baseline_case: Sequence[float]
    baseline_reference: Sequence[float]


def _cv(xs: Sequence[float]) -> float | None:
    """Coefficient of variation (sample standard deviation / mean); None below two values."""
    if len(xs) < 2:
        return None
    return statistics.stdev(xs) / statistics.fmean(xs)


def _robust_cv(xs: Sequence[float]) -> float | None:
    """1.4826 x median absolute deviation / median (equals the CV for normal noise); None below two values."""
    return robust_cv(xs) if len(xs) >= 2 else None


def spread_test(measured: Sequence[float], baseline: Sequence[float]) -> float | None:
    """One-sided F test that the measured runs vary more than the baseline runs (variances of the
    log throughputs); None without two runs on each side."""
    if len(measured) < 2 or len(baseline) < 2:
        return None
    vm = statistics.variance([math.log(x) for x in measured])
    vb = statistics.variance([math.log(x) for x in baseline])
    if vb == 0:
        return 0.0 if vm > 0 else 1.0
    return float(scipy_stats().f.sf(vm / vb, len(measured) - 1, len(baseline) - 1))


_PACE_CONTRACTS = {1: "node 0's probe alone", 2: "every node's probe"}


def _nodes(entry: Entry) -> int:
    try:
        return entry.case.topology.nodes
    except ValueError:
        return 0


def pace_slope(sides: Sequence[Sequence[tuple[float, float]]]) -> float:
    """Pooled within-side slope of log throughput on log pace (analysis of covariance), clipped to
    [0, 1]: a faster host never makes a run slower, and a run cannot gain more than its host did."""
    sxx = sxy = 0.0
    for side in sides:
        if len(side) < 2:
            continue
        lt = [math.log(t) for t, _ in side]
        lp = [math.log(p) for _, p in side]
        mt, mp = statistics.fmean(lt), statistics.fmean(lp)
        sxx += sum((p - mp) ** 2 for p in lp)
        sxy += sum((p - mp) * (t - mt) for t, p in zip(lt, lp))
    return min(1.0, max(0.0, sxy / sxx)) if sxx > 0 else 0.0


def pace_adjust(measured: Sequence[float], measured_paces: Sequence[float], baseline: Sequence[float],
                baseline_paces: Sequence[float], baseline_groups: Sequence[range] = ()
                ) -> tuple[list[float], list[float], dict]:
    """Both sides' throughputs at the baseline runs' median pace, and what was done (for the verdict).
    ``baseline_groups``: the baseline runs by sitting (store.run_groups); the slope is fitted within each,
    as the probe's level moves between sittings without the throughput following it."""
    m, b = list(zip(measured, measured_paces)), list(zip(baseline, baseline_paces))
    slope = pace_slope([m, *([[b[i] for i in g] for g in baseline_groups] or [b])])
    ref = statistics.median(baseline_paces)
    def at_ref(side: list[tuple[float, float]]) -> list[float]:
        return [t * (ref / p) ** slope for t, p in side]
    info = {"slope": slope, "baseline_pace": ref, "measured_pace": statistics.median(measured_paces),
            "measured_as_run": statistics.median(measured), "baseline_as_run": statistics.median(baseline)}
    return at_ref(m), at_ref(b), info


def _credits(info: dict) -> bool:
    """The pace only ever excuses a drop: the session is brought to the baseline's pace only where its
    host ran slower than the recording's (``pace_adjust``'s info)."""
    return info["measured_pace"] <= info["baseline_pace"]


def host_slower(measured_paces: Sequence[float], baseline_paces: Sequence[float]) -> dict | None:
    """Whether this session's host ran slower than the recording's beyond the probe's own spread
    (see PACE_HOST_ALPHA): {"ratio": median pace ratio, "p": the rank test's p}, else None."""
    ratio = statistics.median(measured_paces) / statistics.median(baseline_paces)
    if ratio > 1 - PACE_HOST_MARGIN:
        return None
    test = rank_test(measured_paces, baseline_paces, PACE_HOST_ALPHA)
    if test is None or not significant(test, PACE_HOST_ALPHA):
        return None
    return {"ratio": ratio, "p": test.p}


def pace_hides(info: dict | None, status: str) -> bool:
    """A case that did not fail as measured on a host the probe found faster, though at the baseline's
    pace it would have been a regression: the verdict and the session's summary say a slow-down may hide."""
    return bool(info) and info.get("at_pace_status") == "regression" and status != "regression"


def _pace_text(info: dict, unit: str) -> str:
    """The verdict's sentence on the pace: what was done, both sides' paces, the slope."""
    paces = (f"{info['baseline_pace']:.4g} GB/s; this session's {info['measured_pace']:.4g}, "
             f"x{info['measured_pace'] / info['baseline_pace']:.3f}")
    if info["applied"]:
        return (f" Judged at the baseline runs' pace ({paces}), slope {info['slope']:.2f}; as measured "
                f"{info['measured_as_run']:.4g} vs {info['baseline_as_run']:.4g} {unit} "
                f"({info['measured_as_run'] / info['baseline_as_run'] - 1:+.1%}).")
    return (f" Judged as measured: this session's host ran faster by the pace probe than the recording's "
            f"({paces}), and the pace only excuses a drop, never makes one.")


def _hidden_text(info: dict | None, status: str) -> str:
    """Where a faster host was judged as measured and passed, what the baseline's pace would have said."""
    if not pace_hides(info, status):
        return ""
    return (f" At the baseline's pace (slope {info['slope']:.2f}) it would read {info['at_pace_change']:+.1%}, a "
            "regression: a slow-down may hide behind the faster host; run again, or record the baseline again "
            "to gate it closely.")


def _fmt(v: float, metric: str, unit: str | None = None) -> str:
    """A figure in its declared unit (``unit``: the case's throughput unit, tokens/s for a decoder)."""
    m = metrics.get(metric)
    shown = m.unit_for(unit or "samples/s")
    return f"{v / m.scale:.4g}{' ' + shown if shown else ''}"


def _side(label: str, median: float, cv: float | None, rcv: float | None, n: int, metric: str,
          extra: str = "", unit: str | None = None) -> str:
    spread = f"CV {cv:.1%}, robust CV {rcv:.1%}, " if cv is not None and rcv is not None else ""
    return f"{label} median {_fmt(median, metric, unit)} ({spread}n={n}{extra})"


def _provenance(baseline: Entry, has_runs: bool) -> str:
    """Where the baseline figure comes from, for the message."""
    if baseline.external:
        return f", {baseline.source}" + ("" if has_runs else "; no per-run figures, spread taken as zero")
    if baseline.recorded_at:
        vers = ", ".join(f"{k} {v}" for k, v in sorted(baseline.versions.items()))
        when = (f"in {len(baseline.sittings)} sittings from {baseline.sittings[0]['recorded_at']} to "
                f"{baseline.sittings[-1]['recorded_at']}" if len(baseline.sittings) > 1 else baseline.recorded_at)
        return f", recorded {when}" + (f" with {vers}" if vers else "")
    return ""


@dataclass
class _Sides:
    """Both sides' figures as judged: the runs (brought to one pace where that applies), medians, CVs."""

    measured: list[float]
    baseline: list[float]  # the baseline's per-run figures ([]: a published figure, or speedup/efficiency)
    m_med: float
    m_cv: float | None
    b_med: float

    def at_one_pace(self) -> None:
        """Medians and CV again, after ``pace_adjust`` replaced both sides' runs."""
        self.m_med, self.m_cv, self.b_med = statistics.median(self.measured), _cv(self.measured), \
            statistics.median(self.baseline)


@dataclass(frozen=True)
class _Spread:
    """The tests on both sides' runs: the drop's significance, and whether the measured side is noisy."""

    rank: Significance | None
    tt: Significance | None
    b_cv: float | None
    b_rcv: float | None
    m_rcv: float | None
    noisy: bool  # the measured runs disagree beyond cv_bound and more than the baseline's
    cvs: str  # that, in words ("" when not noisy)
    measured_n: int = 0  # the session's launches

    @property
    def test(self) -> Significance | None:
        return self.rank or self.tt


def _checked(measured: Sequence[float], tolerance: float | Tolerances, metric: str) -> tuple[float, list[float]]:
    """The metric's tolerance and the measured values, or ValueError naming what is wrong."""
    metrics.get(metric)  # ValueError naming the declared metrics
    tol = tolerance.get(metric) if isinstance(tolerance, Tolerances) else float(tolerance)
    if not 0 <= tol < 1:
        raise ValueError(f"tolerance {tol!r}: expected a fraction in [0, 1)")
    xs = [float(x) for x in measured]
    if not xs or any(not (x > 0 and math.isfinite(x)) for x in xs):
        raise ValueError(f"measured values must be positive numbers, got {xs!r}")
    return tol, xs


def _with_pace(sides: _Sides, baseline: Entry, mp: list[float], bp: list[float], contract: int | None,
               tol: float, cv_bound: float, alpha: float, case: str | None) -> tuple[dict | None, str]:
    """Bring both sides' throughputs to the baseline runs' pace where the pace probe allows it (module
    doc; ``sides`` changes in place): what was done (``pace_adjust``'s info), and the verdict's sentence."""
    contracts = (baseline.pace_contract, contract or baseline.pace_contract)
    if mp and bp and contracts[0] != contracts[1] and _nodes(baseline) > 1:
        return None, (f" Judged as measured: the baseline's paces were taken under pace probe contract "
                      f"{contracts[0]} ({_PACE_CONTRACTS.get(contracts[0], 'unknown')}), this session's under "
                      f"{contracts[1]} ({_PACE_CONTRACTS.get(contracts[1], 'unknown')}), which are not alike for "
                      "a case of several nodes: record the baseline again with --dlperf-pace-probe.")
    if not (len(mp) == len(sides.measured) and sides.baseline and len(bp) == len(sides.baseline)):
        have = "this session's runs" if mp else "the baseline's runs"
        return None, (f" Judged as measured: only {have} carry the pace probe's figure (--dlperf-pace-probe), "
                      "and the probe itself costs a launch about 3%: record the baseline and run the session "
                      "alike.")
    adj_m, adj_b, info = pace_adjust(sides.measured, mp, sides.baseline, bp, run_groups(baseline))
    info["applied"] = _credits(info)
    if info["applied"]:
        sides.measured, sides.baseline = adj_m, adj_b
        sides.at_one_pace()
    else:  # what the adjustment would have said, for the message
        at_one = replace(baseline, runs={**baseline.runs, "throughput": adj_b}, paces=[],
                         stated={k: v for k, v in baseline.stated.items() if k != "throughput"})
        at_pace = judge(adj_m, at_one, tol, metric="throughput", cv_bound=cv_bound, alpha=alpha, case=case)
        info["at_pace_status"], info["at_pace_change"] = at_pace.status.value, at_pace.change
    return info, _pace_text(info, baseline.case.unit)


def _as_measured(test: Significance | None, direction: Direction) -> Significance | None:
    """A test run on the figures oriented higher-is-better, with its bounds as measured / baseline of
    the figures as they are (a lower-is-better metric's bounds are the reciprocals, swapped)."""
    if test is None or direction is Direction.HIGHER:
        return test
    return replace(test, low=1.0 / test.high, high=1.0 / test.low)


def _spread(sides: _Sides, cv_bound: float, alpha: float, direction: Direction = Direction.HIGHER) -> _Spread:
    """Significance of a change for the worse (rank test, else t test; on the figures oriented so that
    higher is better) and the noisy check on the measured runs."""
    xs, b_raw = sides.measured, sides.baseline
    m_rcv = _robust_cv(xs)
    spread_p = spread_test(xs, b_raw)
    noisy = m_rcv is not None and m_rcv > cv_bound and (spread_p is None or spread_p <= alpha)
    wider = f" and wider than the baseline runs' (F test p={spread_p:.3g})" if spread_p is not None else ""
    cvs = f"measured robust CV {m_rcv:.1%} above the bound {cv_bound:.0%}{wider}" if noisy else ""
    ox, ob = [direction.orient(x) for x in xs], [direction.orient(x) for x in b_raw]
    rank = rank_test(ox, ob, alpha) if ob else None
    tt = t_test(ox, ob, direction.orient(sides.b_med), alpha)
    return _Spread(rank=_as_measured(rank, direction), tt=_as_measured(tt, direction),
                   b_cv=_cv(b_raw), b_rcv=_robust_cv(b_raw), m_rcv=m_rcv, noisy=noisy, cvs=cvs, measured_n=len(xs))


def _status(ratio: float, tol: float, spread: _Spread, alpha: float,
            direction: Direction = Direction.HIGHER) -> tuple[VerdictStatus, str]:
    """The rule of the module doc, either way round: the status, and the rule that decided it in words."""
    test, change, d = spread.test, ratio - 1, direction
    worst = (test.low if d is Direction.HIGHER else test.high) if test else None  # the bound on the worse side
    beyond, line, what = d.worse(ratio, tol), d.limit(tol), d.change_word
    if beyond and test is not None and significant(test, alpha):
        return VerdictStatus.REGRESSION, (f"median {d.beyond} {line} and the {what} is significant "
                                          f"({test.name} p={test.p:.3g} <= {alpha:g})")
    if beyond and test is None:
        return VerdictStatus.UNJUDGED, _unjudged_rule(change, spread.measured_n)
    if spread.noisy and d.worse_at_all(ratio) and (worst is None or d.worse(worst, tol)):
        return VerdictStatus.NOISY, (f"too noisy to judge: {spread.cvs}, and the bounds do not "
                                     f"rule out a {what} beyond {tol:.0%}")
    if beyond:
        return VerdictStatus.PASS, (f"median {d.beyond} {line} but the {what} is not significant given "
                                    f"the spread ({test.name} p={test.p:.3g} > {alpha:g}): not called a regression")
    if d.better(ratio, tol):
        return VerdictStatus.IMPROVEMENT, (f"{d.better_word} than baseline by {abs(change):.1%}: "
                                           "consider --update-baselines")
    return VerdictStatus.PASS, f"within tolerance: median {d.within} {line}"


def _host_check(status: VerdictStatus, rule: str, mp: list[float], bp: list[float],
                pace_info: dict | None) -> tuple[VerdictStatus, str]:
    """A regression at the baseline's pace on a host that ran slower than the recording's: still the screen's
    REGRESSION, saying so (``pace_info["host_slower"]``); the attribution tells the host from the software."""
    host = host_slower(mp, bp) if status is VerdictStatus.REGRESSION and pace_info and pace_info["applied"] else None
    if host is None:
        return status, rule
    pace_info["host_slower"] = host
    return status, (
        f"{rule}; this session's host ran slower than the recording's by the pace probe "
        f"(x{host['ratio']:.2f} at the median, one-sided Mann-Whitney p={host['p']:.2g} <= "
        f"{PACE_HOST_ALPHA:g}: beyond the probe's own spread), so the drop may be the host's: the attribution "
        "decides (HOST where nothing recorded differs, else side by side with the recorded software)")


def _rule_notes(status: VerdictStatus, spread: _Spread, cv_bound: float,
                direction: Direction = Direction.HIGHER) -> str:
    """What the rule adds on noise that did not decide the status."""
    out = ""
    if spread.noisy and status in (VerdictStatus.PASS, VerdictStatus.IMPROVEMENT):
        out += f" ({spread.cvs}, but a median not {direction.beyond} the baseline's never fails)"
    if spread.b_rcv is not None and spread.b_rcv > cv_bound:
        out += (f" (the baseline's own runs are noisy: robust CV {spread.b_rcv:.1%} above the bound {cv_bound:.0%}; "
                f"only {direction.change_word}s beyond the bounds can be told from that noise: record the case on a "
                "quieter machine or with more --dlperf-repeats to gate it closely)")
    return out


_HEADS = {VerdictStatus.PASS: "OK", VerdictStatus.REGRESSION: "REGRESSION", VerdictStatus.IMPROVEMENT: "IMPROVEMENT",
          VerdictStatus.NOISY: "NOISY", VerdictStatus.HARDWARE: "HARDWARE", VerdictStatus.UNJUDGED: "NOT JUDGED"}


def _unjudged_rule(change: float, launches: int) -> str:
    """Why a drop beyond the tolerance with no spread on either side is not judged, and what would judge it."""
    return (f"cannot judge: {change:+.1%} from {launches} launch(es) against a single baseline figure, and neither side "
            f"has a spread to tell it from run-to-run noise; not called a regression. It needs at least "
            f"{NEEDED_LAUNCHES} launches per case (--dlperf-repeats {NEEDED_LAUNCHES} or more; 3, the default, on both "
            "sides lets the rank test decide), or a baseline recorded from several runs (--update-baselines)")


def _message(name: str, metric: str, status: VerdictStatus, sides: _Sides, spread: _Spread, tol: float,
             baseline: Entry, rule: str, pace_txt: str, pace_info: dict | None) -> str:
    """The verdict's one message: both sides, the change, the tests, the rule and the pace."""
    ratio = sides.m_med / sides.b_med
    test = spread.test
    stats_txt = f"ratio {ratio:.3f}"
    if test is not None:
        stats_txt += (f", one-sided {test.confidence:.0%} bounds {test.low:.3f}..{test.high:.3f} ({test.name}); "
                      + ", ".join(f"{t.name} p={t.p:.3g}" for t in (spread.rank, spread.tt) if t is not None))
    b_extra = _provenance(baseline, bool(sides.baseline))
    unit = baseline.case.unit
    return (f"{_HEADS[status]} {name} {metric}: "
            f"{_side('measured', sides.m_med, sides.m_cv, spread.m_rcv, len(sides.measured), metric, '', unit)} vs "
            f"{_side('baseline', sides.b_med, spread.b_cv, spread.b_rcv, len(sides.baseline) or 1, metric, b_extra, unit)}: "
            f"{ratio - 1:+.1%} (tolerance {metrics.get(metric).direction.signed(tol)}); {stats_txt}. "
            f"Rule: {rule}.{pace_txt}"
            f"{_hidden_text(pace_info, status)}")


def judge(measured: Sequence[float], baseline: Entry | None, tolerance: float | Tolerances, *,
          metric: str = "throughput", cv_bound: float = DEFAULT_CV_BOUND, alpha: float = DEFAULT_ALPHA,
          case: str | None = None, missing_reason: str = "", measured_paces: Sequence[float] = (),
          measured_pace_contract: int | None = None) -> Verdict:
    """Judge per-repeat measurements against a baseline entry; see the module doc for the rule.
    ``measured_paces``: the pace probe's figure of each measured run (throughput only), or none;
    ``measured_pace_contract``: the probe contract they were taken under (None: the baseline's)."""
    tol, xs = _checked(measured, tolerance, metric)
    name = case or (baseline.key if baseline else "?")
    m_med, m_cv = statistics.median(xs), _cv(xs)
    if baseline is None:
        why = missing_reason or "no baseline; record one with --update-baselines"
        return Verdict(VerdictStatus.MISSING, name, metric, tol, f"{name} {metric}: {why}", "no baseline",
                       measured_median=m_med, measured_cv=m_cv, measured_n=len(xs))
    declared = metrics.get(metric)
    b_med = baseline.figure(metric)
    if b_med is None:
        later = (f" (recorded before pytest-dlperf measured its {declared.title}, or by an engine that does not: "
                 "record it again with --update-baselines to gate it)" if declared.per_run else "")
        return Verdict(VerdictStatus.MISSING, name, metric, tol,
                       f"{name} {metric}: the baseline entry has no {metric}{later}",
                       f"no baseline {metric}", measured_median=m_med, measured_cv=m_cv, measured_n=len(xs),
                       baseline_source=baseline.source)
    sides = _Sides(xs, baseline.values(metric), m_med, m_cv, b_med)
    pace_info, pace_txt = None, ""
    mp, bp = [float(p) for p in measured_paces], [float(p) for p in baseline.paces]
    if declared.paced and (mp or bp):
        pace_info, pace_txt = _with_pace(sides, baseline, mp, bp, measured_pace_contract, tol, cv_bound, alpha, case)
    direction = declared.direction
    cv_bound = declared.cv_bound if declared.cv_bound is not None else cv_bound
    spread = _spread(sides, cv_bound, alpha, direction)
    ratio = sides.m_med / sides.b_med
    status, rule = _host_check(*_status(ratio, tol, spread, alpha, direction), mp, bp, pace_info)
    rule += _rule_notes(status, spread, cv_bound, direction)
    test = spread.test
    return Verdict(status=status, case=name, metric=metric, tolerance=tol, rule=rule,
                   message=_message(name, metric, status, sides, spread, tol, baseline, rule, pace_txt, pace_info),
                   measured_median=sides.m_med, measured_cv=sides.m_cv, measured_robust_cv=spread.m_rcv,
                   measured_n=len(sides.measured), baseline_median=sides.b_med, baseline_cv=spread.b_cv,
                   baseline_robust_cv=spread.b_rcv, baseline_n=len(sides.baseline) or 1,
                   baseline_source=baseline.source, change=ratio - 1,
                   test=test.name if test else "", p_value=test.p if test else None,
                   mannwhitney_p=spread.rank.p if spread.rank else None, t_p=spread.tt.p if spread.tt else None,
                   interval=(test.low, test.high) if test else None, confidence=test.confidence if test else None,
                   pace=pace_info)


def catch_rate(baseline: Entry, drop: float, repeats: int, tolerance: float | Tolerances, *,
               trials: int = 200, seed: int = 0, cv_bound: float = DEFAULT_CV_BOUND,
               alpha: float = DEFAULT_ALPHA) -> float | None:
    """How often ``judge`` calls a session of ``repeats`` runs, ``drop`` slower than ``baseline``'s median and
    as spread as its runs (log-normal at their robust CV), a regression against ``baseline``'s own runs:
    what a later slow-down of that size can expect from this recording. None below three recorded runs."""
    runs = baseline.values(metrics.PRIMARY.name)
    if len(runs) < 3:
        return None
    sigma = math.log1p(_robust_cv(runs) or 0.0)
    plain = replace(baseline, paces=[])  # the model has no pace: judge the throughputs as measured
    centre = statistics.median(runs) * (1 - drop)
    rng = random.Random(seed)
    hits = sum(judge([centre * math.exp(rng.gauss(0.0, sigma)) for _ in range(repeats)], plain, tolerance,
                     cv_bound=cv_bound, alpha=alpha).status is VerdictStatus.REGRESSION for _ in range(trials))
    return hits / trials


def judge_scalar(measured: float | None, baseline: float | None, tolerance: float | Tolerances, *,
                 metric: str, case: str, baseline_source: str = "recorded", runs: ScalingRuns | None = None,
                 alpha: float = DEFAULT_ALPHA) -> Verdict:
    """A gated scaling metric (speedup, efficiency): a ratio of medians per side, judged on its own
    tolerance and, where ``runs`` are given, on the significance of the drop; higher never fails."""
    declared = metrics.get(metric)
    if declared.per_run or declared.direction is not Direction.HIGHER:
        raise ValueError(f"judge_scalar is for the higher-is-better scaling metrics, not {metric!r}")
    tol = tolerance.get(metric) if isinstance(tolerance, Tolerances) else float(tolerance)
    if measured is None or baseline is None:
        why = "not measured in this session" if measured is None else "no baseline value"
        return Verdict(VerdictStatus.MISSING, case, metric, tol, f"{case} {metric}: {why}", why,
                       measured_median=measured, baseline_median=baseline, baseline_source=baseline_source)
    ratio = measured / baseline
    change = ratio - 1
    test = (scaling_test(runs.case, runs.reference, runs.baseline_case, runs.baseline_reference, alpha)
            if runs is not None else None)
    if ratio < 1 - tol and test is None and runs is not None and all(
            (runs.case, runs.reference, runs.baseline_case, runs.baseline_reference)):
        status, rule = VerdictStatus.UNJUDGED, _unjudged_rule(change, len(runs.case))  # runs on every side, too few
    elif ratio < 1 - tol and test is None:
        status, rule = VerdictStatus.REGRESSION, (f"{metric} below baseline x (1 - {tol:g}); the runs behind it "
                                                  f"are not known on both sides: the tolerance alone decides")
    elif ratio < 1 - tol and significant(test, alpha):
        status, rule = VerdictStatus.REGRESSION, (f"{metric} below baseline x (1 - {tol:g}) and the drop is "
                                                  f"significant ({test.name} p={test.p:.3g} <= {alpha:g})")
    elif ratio < 1 - tol:
        status, rule = VerdictStatus.PASS, (f"{metric} below baseline x (1 - {tol:g}) but the drop is not significant "
                                            f"given the runs' spread ({test.name} p={test.p:.3g} > {alpha:g}): not "
                                            "called a regression")
    elif ratio > 1 + tol:
        status, rule = VerdictStatus.IMPROVEMENT, f"faster than baseline by {change:.1%}: consider --update-baselines"
    else:
        status, rule = VerdictStatus.PASS, f"within tolerance: {metric} at or above baseline x (1 - {tol:g})"
    head = _HEADS[status]
    if test is not None:
        spread = (f"case / 1n1g from {len(runs.case)} and {len(runs.reference)} runs vs "
                  f"{len(runs.baseline_case)} and {len(runs.baseline_reference)}; one-sided {test.confidence:.0%} "
                  f"bounds {test.low:.3f}..{test.high:.3f} ({test.name} p={test.p:.3g})")
    else:
        spread = "single values, no spread"
    message = (f"{head} {case} {metric}: measured {measured:.3g} vs baseline {baseline:.3g} "
               f"({baseline_source}): {change:+.1%} (tolerance -{tol:.0%}); {spread}. Rule: {rule}.")
    return Verdict(status=status, case=case, metric=metric, tolerance=tol, message=message, rule=rule,
                   measured_median=measured, measured_n=len(runs.case) if runs else 1, baseline_median=baseline,
                   baseline_n=len(runs.baseline_case) if runs else 1, baseline_source=baseline_source, change=change,
                   test=test.name if test else "", p_value=test.p if test else None, t_p=test.p if test else None,
                   interval=(test.low, test.high) if test else None, confidence=test.confidence if test else None)


def judge_count(measured: Sequence[float], baseline: Entry | None, *, metric: str, case: str,
                said: Sequence[str] = ()) -> Verdict:
    """A count (``metrics.Rule.COUNT``: graph breaks, recompilations): the most any of this session's
    launches counted against the most any baseline run did. More is a REGRESSION whatever the size (a
    count, not a tolerance: there is no noise in it), fewer an IMPROVEMENT; ``said``: what the tool said
    of the things it counted (a break's reason and place), which the message names."""
    declared = metrics.get(metric)
    if not declared.counted:
        raise ValueError(f"judge_count is for the count metrics, not {metric!r}")
    got = int(max(measured))
    runs = baseline.values(metric) if baseline is not None else []
    if not runs:
        why = ("no baseline; record one with --update-baselines" if baseline is None else
               f"the baseline entry has no {metric} (recorded before pytest-dlperf counted its {declared.title}: "
               "record it again with --update-baselines to gate it)")
        return Verdict(VerdictStatus.MISSING, case, metric, 0.0, f"{case} {metric}: {why}", f"no baseline {metric}",
                       measured_median=got, measured_n=len(measured),
                       baseline_source=baseline.source if baseline is not None else "")
    had = int(max(runs))
    if got > had:
        status, rule = VerdictStatus.REGRESSION, f"more {declared.title} than the baseline had: a count, not a tolerance"
    elif got < had:
        status, rule = VerdictStatus.IMPROVEMENT, f"fewer {declared.title} than the baseline had: consider --update-baselines"
    else:
        status, rule = VerdictStatus.PASS, f"as many {declared.title} as the baseline had"
    shown = "; ".join(said)
    message = (f"{_HEADS[status]} {case} {metric}: {got} where the baseline had {had or 'none'} (most in any launch: "
               f"{len(measured)} against {len(runs)}{_provenance(baseline, True)}). Rule: {rule}."
               + (f" Counted: {shown}" if shown else ""))
    return Verdict(status=status, case=case, metric=metric, tolerance=0.0, message=message, rule=rule,
                   measured_median=got, measured_n=len(measured), baseline_median=had, baseline_n=len(runs),
                   baseline_source=baseline.source, change=(got / had - 1) if had else None)


def resolve_tolerances(default: Tolerances, *layers: Mapping[str, float | None] | Tolerances | None) -> Tolerances:
    """Tolerances in force: ``default`` (file or profile), then each layer in rising priority.

    Typical order: entry's recorded tolerance, ``--dlperf-tolerance`` for the run, the test's
    ``@pytest.mark.dlperf(tolerance=...)``. A layer may give only some metrics.
    """
    out = default
    for layer in layers:
        if layer is None:
            continue
        values = layer.to_dict() if isinstance(layer, Tolerances) else dict(layer)
        known = metrics.names(metrics.tolerated())
        unknown = set(values) - set(known)
        if unknown:
            raise ValueError(f"unknown tolerance metric(s) {', '.join(sorted(unknown))}; expected {', '.join(known)}")
        out = out.override(values)
    return out
