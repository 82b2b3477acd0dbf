"""How far the host's level moved between a recording's sittings (``--dlperf-record-sittings``): each
sitting's median of a metric, and the band within which a later change cannot be told from the host.

The band is where a next sitting's median would fall: the 95% prediction interval from the K sittings'
log medians, ``t(0.975, K-1) x sd x sqrt(1 + 1/K)``, with chromeperf's 1% floor. At K = 3 that is 4.97
sd (Conbench's 5 residual sigmas), at K = 10 2.37 sd (near chromeperf's 2.5): with few sittings the sd
is itself uncertain, which a fixed multiple ignores. How often unchanged software's changes fell within
each band on this project's VM: docs/measurements.md.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from .entry import Entry, run_groups
from .significance import scipy_stats

MIN_SITTINGS = 3  # fewer sittings give no spread worth stating
LEVEL = 0.95  # the prediction interval's coverage, two-sided
FLOOR = 0.01  # chromeperf: a median change under 1% is never a step


def sigmas(sittings: int) -> float:
    """The band's half-width in standard deviations of the sittings' log medians: a 95% prediction
    interval for one more sitting (Student's t with K-1 degrees of freedom)."""
    return float(scipy_stats().t.ppf(0.5 + LEVEL / 2, sittings - 1)) * math.sqrt(1 + 1 / sittings)


@dataclass(frozen=True)
class Drift:
    """A metric's sitting medians in a recording: how far they moved, and the band within which a change
    cannot be told from the host."""

    sittings: int
    moved: float  # largest sitting median / smallest - 1
    sigma: float  # standard deviation of the log sitting medians
    band: float  # max(sigmas(sittings) x sigma, FLOOR), as a fraction

    def within(self, change: float) -> bool:
        """Whether ``change`` (measured / baseline - 1) lies within the band, either way."""
        return abs(math.log1p(change)) <= math.log1p(self.band)

    def said(self, title: str, change: float) -> str:
        """The statement a verdict that cannot be confirmed carries."""
        head = (f"this host's {title} medians moved by up to {self.moved:.1%} between the recording's "
                f"{self.sittings} sittings (band {sigmas(self.sittings):.1f} sd = {self.band:.1%}, where a next "
                "sitting's median falls 95 times in 100)")
        if self.within(change):
            return f"{head}: a change of {change:+.1%} lies within it and cannot be told from the host"
        return f"{head}: a change of {change:+.1%} lies beyond it"


def sitting_drift(entry: Entry, metric: str) -> Drift | None:
    """The drift of ``metric`` between the entry's sittings (None: fewer than MIN_SITTINGS, or the metric's
    runs are not kept for every sitting)."""
    values = entry.values(metric)
    groups = run_groups(entry)
    if len(groups) < MIN_SITTINGS or len(values) != sum(len(g) for g in groups):
        return None
    medians = [statistics.median(values[i] for i in g) for g in groups]
    if min(medians) <= 0:
        return None
    sigma = statistics.stdev(math.log(x) for x in medians)
    k = len(medians)
    return Drift(k, max(medians) / min(medians) - 1, sigma, max(math.expm1(sigmas(k) * sigma), FLOOR))
