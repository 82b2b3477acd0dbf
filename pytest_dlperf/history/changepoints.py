"""Where a case's line of figures changed level, by one of two finders behind one protocol: Apache Otava's
change points (E-Divisive means with a t-test: results that repeat, each with its p-value), where Otava is
installed, else the history's own binary segmentation (``steps``: a move of at least the tolerance and five
times the night-to-night noise). Which one ran, and with what thresholds, is said on the site and by --check."""
from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from .steps import Step, find_steps

FINDERS = ("auto", "otava", "steps")
OTAVA_INSTALL = "pip install --no-deps apache-otava==0.8.0"  # its analysis needs only numpy and scipy


class FinderError(RuntimeError):
    """The finder asked for cannot run here: one line naming the fix."""


@dataclass(frozen=True)
class Thresholds:
    """Otava's thresholds (docs/history.md, "Change points"; calibrated in docs/measurements.md)."""

    pvalue: float = 0.001  # a change point's most p-value (Otava's t-test between the segments either side)
    min_change: float = 0.01  # its least size, relative to the level before
    window: int = 50  # the sliding window Otava's split step searches in
    min_segment: int = 3  # the fewest runs on each side: one night off its line is its verdict's business


class Finder(Protocol):
    """Finds the level changes of one line (run order, none missing, every figure > 0)."""

    name: str

    def describe(self) -> str:
        """One line for the site and --check: the method and its thresholds."""
        ...

    def find(self, values: Sequence[float], tolerance: float) -> list[Step]:
        """The changes; ``tolerance``: the gate's for the line (the segmentation's least step)."""
        ...


@dataclass(frozen=True)
class Segmentation:
    """The history's own step finder (``steps.find_steps``): moves of at least the line's tolerance."""

    why: str = ""  # why it stands in for Otava, where it does
    name: str = "steps"

    def describe(self) -> str:
        return ("steps by binary segmentation (a level move of at least the line's tolerance and 5x its "
                "night-to-night noise)" + (f"; {self.why}" if self.why else ""))

    def find(self, values: Sequence[float], tolerance: float) -> list[Step]:
        return find_steps(values, tolerance)


@dataclass(frozen=True)
class Otava:
    """Apache Otava's change points (``otava.analysis.compute_change_points``), then those whose segments are
    shorter than ``min_segment`` merged away. Each Step carries the segments' means and Otava's p-value."""

    thresholds: Thresholds = Thresholds()
    name: str = "otava"

    def describe(self) -> str:
        t = self.thresholds
        return (f"change points by Apache Otava (p <= {t.pvalue:g}, change >= {t.min_change:.1%}, window {t.window}, "
                f"at least {t.min_segment} runs on each side)")

    def find(self, values: Sequence[float], tolerance: float) -> list[Step]:
        from otava.analysis import compute_change_points

        t = self.thresholds
        if len(values) < 2 * t.min_segment:
            return []
        found, _ = compute_change_points(list(values), window_len=t.window, max_pvalue=t.pvalue,
                                         min_magnitude=t.min_change)
        cuts = [(cp.index, float(cp.stats.pvalue)) for cp in found]
        while True:  # drop the weakest cut of a segment too short, until none is
            bounds = [0, *(i for i, _ in cuts), len(values)]
            short = [k for k in range(len(cuts)) if bounds[k + 1] - bounds[k] < t.min_segment
                     or bounds[k + 2] - bounds[k + 1] < t.min_segment]
            if not short:
                break
            del cuts[max(short, key=lambda k: cuts[k][1])]
        bounds = [0, *(i for i, _ in cuts), len(values)]
        steps = [Step(i, statistics.fmean(values[lo:i]), statistics.fmean(values[i:hi]), p)
                 for (i, p), lo, hi in zip(cuts, bounds, bounds[2:])]
        return [s for s in steps if abs(s.change) >= t.min_change]


def make(choice: str = "auto", thresholds: Thresholds = Thresholds()) -> Finder:
    """The finder ``choice`` names: auto is Otava where it is installed, else the segmentation (which says
    so); otava where it is not installed is FinderError."""
    if choice not in FINDERS:
        raise FinderError(f"--change-points {choice}: choose one of {', '.join(FINDERS)}")
    if choice == "steps":
        return Segmentation()
    try:
        import otava.analysis  # noqa: F401 - only whether it imports
    except ImportError as exc:
        if choice == "otava":
            raise FinderError(f"--change-points otava: Apache Otava is not installed ({exc}): {OTAVA_INSTALL}") from None
        return Segmentation(f"Apache Otava is not installed, so no move below the tolerance is found ({OTAVA_INSTALL})")
    return Otava(thresholds)
