"""How far the host's level moved between a recording's sittings (``--dlperf-record-sittings``): each
sitting's median of a metric, and the band within which a later change cannot be told from the host.

The band is chromeperf's rule for a step (a change must exceed 2.5 times the spread and 1% to count),
taken on the log medians of the sittings: ``max(SIGMAS x sd, FLOOR)``. Calibrated on this project's VM
(docs/measurements.md, "Side by side"): unchanged software's sessions against a recording of 3 sittings.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from .entry import Entry, run_groups

MIN_SITTINGS = 3  # fewer sittings give no spread worth stating
SIGMAS = 2.5  # chromeperf: a change >= 2.5 x the smaller side's standard deviation
FLOOR = 0.01  # chromeperf: and a median change >= 1%


@dataclass(frozen=True)
class Drift:
    """A metric's sitting medians in a recording: how far they moved, and the band within which a change
    cannot be told from the host."""

    sittings: int
    moved: float  # largest sitting median / smallest - 1
    sigma: float  # standard deviation of the log sitting medians
    band: float  # max(SIGMAS x sigma, FLOOR), as a fraction

    def within(self, change: float) -> bool:
        """Whether ``change`` (measured / baseline - 1) lies within the band, either way."""
        return abs(math.log1p(change)) <= math.log1p(self.band)

    def said(self, title: str, change: float) -> str:
        """The statement a verdict that cannot be confirmed carries."""
        head = (f"this host's {title} medians moved by up to {self.moved:.1%} between the recording's "
                f"{self.sittings} sittings (band {SIGMAS:g} sd = {self.band:.1%})")
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
    return Drift(len(medians), max(medians) / min(medians) - 1, sigma, max(math.expm1(SIGMAS * sigma), FLOOR))
