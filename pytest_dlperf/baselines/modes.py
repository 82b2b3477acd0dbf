"""Whether a case's launches fall into separate modes: the widest gap between sorted launches against
the spread within the two sides of it. A recording that saw one mode of a case with two gates it on
the wrong spread (issue #48: vgg16 2n1g recorded at 7.2-7.9 samples/s, gated minutes later at 5.6-5.9
and 7.6-8.6 on the same software); a recording that notices takes more launches, later.

The gap and the spread within the modes are compared on one scale, the logarithm: a launch's noise is a
share of its own mode's level, so a slow mode's spread is not measured against the fast mode's median."""
from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from .fingerprint import robust_sd

# A gap is a split into modes where it is at least this share of the median (launches of one mode on
# this VM's quiet cases agree within 1-3%) ...
GAP_FLOOR = 0.08
# ... and, in logs, at least this many times the spread within the modes (the robust SD of each side's
# logs, about its robust CV, for each side of two or more).
GAP_OVER_SPREAD = 4.0


@dataclass(frozen=True)
class Modes:
    """The launches split at their widest gap: the slower and the faster mode, and the gap's share of the median."""

    slow: tuple[float, ...]
    fast: tuple[float, ...]
    gap: float

    def said(self, unit: str) -> str:
        return (f"{len(self.slow)} launch(es) at {_span(self.slow)} and {len(self.fast)} at {_span(self.fast)} "
                f"{unit} (a gap of {self.gap:.0%})")


def _span(xs: Sequence[float]) -> str:
    return f"{min(xs):.4g}" if min(xs) == max(xs) else f"{min(xs):.4g}-{max(xs):.4g}"


def split_modes(xs: Sequence[float], floor: float = GAP_FLOOR, over_spread: float = GAP_OVER_SPREAD) -> Modes | None:
    """The two modes of ``xs`` where its widest gap sets them apart (``floor`` of the median, and, in logs,
    ``over_spread`` times the spread within each side); None where the launches are one mode, fewer than
    three, or not all positive."""
    if len(xs) < 3 or min(xs) <= 0:
        return None
    s = sorted(xs)
    median = statistics.median(s)
    i = max(range(len(s) - 1), key=lambda j: s[j + 1] - s[j])
    gap = (s[i + 1] - s[i]) / median
    slow, fast = tuple(s[:i + 1]), tuple(s[i + 1:])
    within = max((_log_spread(side) for side in (slow, fast) if len(side) >= 2), default=0.0)
    if gap < floor or math.log(s[i + 1] / s[i]) < over_spread * within:
        return None
    return Modes(slow, fast, gap)


def _log_spread(side: Sequence[float]) -> float:
    """The robust SD of a mode's logs: its launches' spread as a share of its own level."""
    return robust_sd([math.log(x) for x in side])


def tightest_drop(xs: Sequence[float]) -> float:
    """The drop below the median that a baseline of ``xs`` can call at its tightest: a session whose
    launches all sit in its slowest mode is not told from it (1 - slowest / median)."""
    return 1 - min(xs) / statistics.median(xs)
