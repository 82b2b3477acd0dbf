"""Step changes in a line of figures: where its level moved and stayed moved, as asv's regressions
page finds them, so that the index can say what changed, where and since when without a reader
opening every case. Binary segmentation: the split that best parts a stretch into two levels (the
largest mean difference weighed by the two sides' sizes) is kept while it is at least ``Z`` times the
night-to-night noise and moves the level (median to median) by at least the threshold; each side is
then split again. A step needs ``MIN_RUNS`` runs on each side: one night off its line is its
verdict's business, not a step."""
from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

MIN_RUNS = 2
Z = 5.0
NORMAL_MEDIAN_ABS_DIFF = 0.6745 * math.sqrt(2)  # median |x - y| of two draws of N(0, 1)


@dataclass(frozen=True)
class Step:
    """The level moved at ``at`` (the first figure on the new level) from ``before`` to ``after``:
    the medians of the stretches either side, up to the steps next to it."""

    at: int
    before: float
    after: float
    pvalue: float | None = None  # a change point's p-value, where its finder tests one (Apache Otava's)

    @property
    def change(self) -> float:
        return self.after / self.before - 1


def noise(values: Sequence[float]) -> float:
    """The spread of one figure about its level, from the night-to-night differences (a step moves
    one difference only, so their median does not see it)."""
    if len(values) < 2:
        return 0.0
    return statistics.median(abs(b - a) for a, b in zip(values, values[1:])) / NORMAL_MEDIAN_ABS_DIFF


def _best_split(prefix: list[float], a: int, b: int) -> tuple[int, float]:
    """The split k of values[a:b] with the largest |mean(a:k) - mean(k:b)| * sqrt(n1 n2 / n)."""
    best, at = -1.0, -1
    for k in range(a + MIN_RUNS, b - MIN_RUNS + 1):
        n1, n2 = k - a, b - k
        diff = (prefix[k] - prefix[a]) / n1 - (prefix[b] - prefix[k]) / n2
        score = abs(diff) * math.sqrt(n1 * n2 / (b - a))
        if score > best:
            best, at = score, k
    return at, best


def find_steps(values: Sequence[float], threshold: float) -> list[Step]:
    """The step changes of a line's figures (in run order, none missing): each moves the level by at
    least ``threshold`` (a fraction) and by ``Z`` times the noise."""
    if len(values) < 2 * MIN_RUNS or any(v <= 0 for v in values):
        return []
    prefix = [0.0]
    for v in values:
        prefix.append(prefix[-1] + v)
    sigma = noise(values)
    splits, todo = [], [(0, len(values))]
    while todo:
        a, b = todo.pop()
        if b - a < 2 * MIN_RUNS:
            continue
        k, score = _best_split(prefix, a, b)
        left, right = statistics.median(values[a:k]), statistics.median(values[k:b])
        if score > Z * sigma and abs(right / left - 1) >= threshold:
            splits.append(k)
            todo += [(a, k), (k, b)]
    bounds = [0, *sorted(splits), len(values)]
    steps = [Step(k, statistics.median(values[lo:k]), statistics.median(values[k:hi]))
             for lo, k, hi in zip(bounds, bounds[1:], bounds[2:])]
    return [s for s in steps if abs(s.change) >= threshold]
