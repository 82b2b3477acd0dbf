"""Significance of a drop between two small sets of runs: exact Mann-Whitney and a t fallback.

Both give a one-sided p-value that the measured runs are slower than the baseline runs, and
one-sided (1 - alpha) lower and upper bounds for the ratio measured / baseline.

- ``rank_test``: exact one-sided Mann-Whitney U (scipy) with the distribution-free bounds that
  invert it (from the sorted run-by-run log ratios, as Hodges-Lehmann intervals are built). It
  assumes nothing about the shape of the noise, so a single disturbed run cannot fake a drop.
  It can only decide when its smallest attainable p-value, 1 / C(n_m + n_b, n_m), is at most
  alpha: 3 vs 3 gives exactly 1/20 = 0.05, reached only when every measured run is slower than
  every baseline run; 2 vs 2 (1/6) never reaches 0.05.
- ``t_test``: Student t on the logarithms (pooled two-sample; one-sample against a baseline
  median known without runs; a prediction for a single measured run), for the cases the rank
  test cannot decide.
- ``scaling_test``: the same t for a ratio of throughputs (speedup, efficiency): the change in
  log(case / 1n1g) between baseline and session, with each case's spread from its runs on both
  sides (Welch-Satterthwaite degrees of freedom), so a speedup is judged with its noise too.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from types import ModuleType

_EPS = 1e-12


def scipy_stats() -> ModuleType:
    """scipy.stats, imported when a verdict first needs it: the import takes about a second, which
    a dry-run, a usage error or a session whose runs fail never has to pay."""
    from scipy import stats

    return stats


@dataclass(frozen=True)
class Significance:
    """One test's answer: p (one-sided, H1: measured slower) and bounds of measured / baseline."""

    name: str
    p: float
    low: float
    high: float
    confidence: float


@lru_cache(maxsize=256)
def u_counts(m: int, n: int) -> tuple[int, ...]:
    """How many orderings of m measured and n baseline runs give U = 0 .. m*n (U counts pairs
    where the measured run is the faster one; no ties)."""
    if m == 0 or n == 0:
        return (1,)
    out = [0] * (m * n + 1)
    for u, c in enumerate(u_counts(m - 1, n)):  # the fastest run is a measured one: beats all n
        out[u + n] += c
    for u, c in enumerate(u_counts(m, n - 1)):  # the fastest run is a baseline one
        out[u] += c
    return tuple(out)


def u_critical(m: int, n: int, alpha: float) -> int | None:
    """Largest u with P(U <= u) <= alpha under no difference; None when U = 0 is already too likely."""
    counts = u_counts(m, n)
    total = sum(counts)
    crit, cum = None, 0
    for u, c in enumerate(counts):
        cum += c
        if cum / total > alpha + _EPS:
            break
        crit = u
    return crit


def rank_test(measured: Sequence[float], baseline: Sequence[float], alpha: float) -> Significance | None:
    """Exact one-sided Mann-Whitney U and its bounds; None when it cannot reach alpha."""
    k = u_critical(len(measured), len(baseline), alpha)
    if k is None:
        return None
    p = float(scipy_stats().mannwhitneyu(measured, baseline, alternative="less").pvalue)
    d = sorted(math.log(x) - math.log(y) for x in measured for y in baseline)
    return Significance("Mann-Whitney U", p, math.exp(d[k]), math.exp(d[len(d) - 1 - k]), 1 - alpha)


def _pooled(measured: Sequence[float], baseline: Sequence[float]) -> tuple[float, float, int] | None:
    """(mean log measured - mean log baseline, its variance, degrees of freedom) with the variance
    pooled over both sides' runs; None below three runs in all or one on a side. With one measured
    run this is the prediction of that run from the baseline's spread."""
    nm, nb = len(measured), len(baseline)
    if nm < 1 or nb < 1 or nm + nb < 3:
        return None
    lm, lb = [math.log(x) for x in measured], [math.log(x) for x in baseline]
    mm, mb = statistics.fmean(lm), statistics.fmean(lb)
    df = nm + nb - 2
    s2 = (sum((x - mm) ** 2 for x in lm) + sum((x - mb) ** 2 for x in lb)) / df
    return mm - mb, s2 * (1 / nm + 1 / nb), df


def _one_sided(name: str, d: float, var: float, df: float, alpha: float) -> Significance:
    """p that a log change d with variance var (df degrees of freedom) is a drop, and its bounds."""
    if var == 0:
        p = 0.0 if d < 0 else (0.5 if d == 0 else 1.0)
        return Significance(name, p, math.exp(d), math.exp(d), 1 - alpha)
    se = math.sqrt(var)
    t = scipy_stats().t
    p = float(t.cdf(d / se, df))
    half = float(t.ppf(1 - alpha, df)) * se
    return Significance(name, p, math.exp(d - half), math.exp(d + half), 1 - alpha)


def t_test(measured: Sequence[float], baseline: Sequence[float], baseline_median: float,
           alpha: float) -> Significance | None:
    """Student t on log throughputs (pooled, one-sample or prediction); None without any spread."""
    nm = len(measured)
    pooled = _pooled(measured, baseline) if len(baseline) >= 2 else None
    if pooled is not None:  # two samples; one measured run is predicted from the baseline's spread
        d, var, df = pooled
    elif nm >= 2:  # a baseline without runs (a published median): taken as exact
        lm = [math.log(x) for x in measured]
        d = statistics.fmean(lm) - math.log(baseline_median)
        df = nm - 1
        var = statistics.variance(lm) / nm
    else:
        return None
    return _one_sided("t-test", d, var, df, alpha)


def scaling_test(case_measured: Sequence[float], ref_measured: Sequence[float], case_baseline: Sequence[float],
                 ref_baseline: Sequence[float], alpha: float) -> Significance | None:
    """One-sided t that the session's case / reference ratio (speedup) fell against the baseline's.

    The change in log speedup is the case's log change minus the reference's (1n1g); each part's
    variance comes from that case's runs, pooled over session and baseline; their sum's degrees of
    freedom from Welch-Satterthwaite. None when a side of either case has no run or a case has
    fewer than three in all.
    """
    a, b = _pooled(case_measured, case_baseline), _pooled(ref_measured, ref_baseline)
    if a is None or b is None:
        return None
    var = a[1] + b[1]
    df = var ** 2 / sum(v ** 2 / k for v, k in ((a[1], a[2]), (b[1], b[2])) if v > 0) if var > 0 else 1.0
    return _one_sided("t-test on log speedup", a[0] - b[0], var, df, alpha)


def significant(test: Significance, alpha: float) -> bool:
    """p at most alpha (with a hair of slack: 3 vs 3 Mann-Whitney gives exactly 0.05)."""
    return test.p <= alpha + _EPS
