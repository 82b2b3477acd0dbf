"""The paired, sequential verdict of an A/B comparison: is the candidate slower than the reference?

Per pair i the reference and the candidate run back to back (``order`` says which goes first) and
x_i = log(c_i / r_i) is the log ratio of their throughputs. After every pair from ``min_pairs`` to
``max_pairs`` (a *look*) the mean log ratio gets a Student t interval

    mean +- q_{n-1}(1 - gamma/2) * s / sqrt(n)

at one nominal level gamma common to every look. gamma is the repeated-significance (Pocock-type)
boundary for a t statistic: it is chosen so that, for x_i iid normal with any mean and sd, the
probability that *any* look's interval misses the true mean is alpha. The intervals thus form a
confidence sequence, and stopping at the first look whose interval settles the question keeps the
error rate at alpha, where a fixed-n t test repeated after every pair (gamma = alpha) would not.
Because (mean - mu) / (s / sqrt n) is pivotal, gamma is calibrated exactly up to Monte Carlo error
by simulating standard normal sequences (``nominal_level``).

Verdicts at a look (docs/ab.md): SLOWER when the interval lies below 1 and the ratio is below
1 - tolerance, FASTER the mirror image, SAME when the interval lies inside 1 +- tolerance;
otherwise CONTINUE, or UNDECIDED at ``max_pairs`` or when the caller says the pairs are final.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from numbers import Integral, Real
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

# The calibration's simulation: fixed, so a session's boundary is the same in every run. 40,000
# sequences put the achieved error rate within about +-0.0011 (one standard error) of alpha = 0.05.
SEQUENCES = 40_000
SEED = 20_261_127
CHUNK = 5_000  # sequences simulated at a time: bounds the temporaries at max_pairs = 200
LARGEST_MAX_PAIRS = 200

REFERENCE = "reference"
CANDIDATE = "candidate"
ROOM = "more pairs would narrow it (--dlperf-ab-max-pairs)"


def _special() -> ModuleType:
    """scipy.special, imported when a session first decides a pair: numpy and scipy take most of a second
    to import, which every pytest session would pay where no A/B runs."""
    from scipy import special
    return special


def _is_real(value: object) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)


def _is_whole(value: object) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool)


def _shown(value: object) -> str:
    """A value for a one-line message: numbers as Python prints them (0.0, not np.float64(0.0))."""
    if _is_whole(value):
        return repr(int(value))  # type: ignore[call-overload]
    if isinstance(value, Real) and not isinstance(value, bool):
        return repr(float(value))
    text = " ".join(repr(value).split())
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True)
class Method:
    """The options of the verdict: error rate, tolerance (a fraction) and the looks' range."""

    alpha: float = 0.05
    tolerance: float = 0.02
    min_pairs: int = 3
    max_pairs: int = 20

    def __post_init__(self) -> None:
        if not _is_real(self.alpha) or not 0 < self.alpha < 0.5:
            raise ValueError(f"--dlperf-ab-alpha {_shown(self.alpha)}: the error rate must lie strictly between 0 and "
                             "0.5; give e.g. 0.05")
        if not _is_real(self.tolerance) or not 0 <= self.tolerance < 1:
            raise ValueError(f"--dlperf-ab-tolerance {_shown(self.tolerance)}: give a fraction from 0 up to (not "
                             "including) 1, e.g. 0.02 for 2%")
        if not _is_whole(self.min_pairs) or self.min_pairs < 3:
            raise ValueError(f"--dlperf-ab-min-pairs {_shown(self.min_pairs)}: a paired t interval with a spread needs "
                             "at least 3 pairs; give a whole number of 3 or more")
        if not _is_whole(self.max_pairs) or not self.min_pairs <= self.max_pairs <= LARGEST_MAX_PAIRS:
            raise ValueError(f"--dlperf-ab-max-pairs {_shown(self.max_pairs)}: give a whole number from "
                             f"--dlperf-ab-min-pairs ({self.min_pairs}) to {LARGEST_MAX_PAIRS}, or lower "
                             "--dlperf-ab-min-pairs")

    @property
    def looks(self) -> int:
        return self.max_pairs - self.min_pairs + 1

    @property
    def gamma(self) -> float:
        """The nominal level of every look's interval (``nominal_level``)."""
        return nominal_level(self.alpha, self.min_pairs, self.max_pairs)

    @property
    def bonferroni(self) -> float:
        """alpha / looks: the level the union bound would give; gamma is never below it."""
        return bonferroni_level(self.alpha, self.min_pairs, self.max_pairs)


def bonferroni_level(alpha: float, min_pairs: int, max_pairs: int) -> float:
    """alpha / looks, a lower bound of the calibrated level: P(any miss) <= the sum of the looks' levels."""
    return alpha / (max_pairs - min_pairs + 1)


def _null_t_squared(min_pairs: int, max_pairs: int) -> np.ndarray:
    """t^2 at every look of SEQUENCES standard normal sequences, one row each.

    float32 throughout (half the time of float64): its rounding is far below the Monte Carlo error.
    With S1, S2 the running sums of x and x^2, t^2 = S1^2 (n - 1) / (n S2 - S1^2).
    """
    import numpy as np  # here: see _special

    rng = np.random.default_rng(SEED)
    n = np.arange(min_pairs, max_pairs + 1, dtype=np.float32)
    out = np.empty((SEQUENCES, n.size), dtype=np.float32)
    for start in range(0, SEQUENCES, CHUNK):
        z = rng.standard_normal((CHUNK, max_pairs), dtype=np.float32)
        s1 = np.cumsum(z, axis=1)[:, min_pairs - 1:]
        s2 = np.cumsum(np.square(z, out=z), axis=1)[:, min_pairs - 1:]
        np.square(s1, out=s1)
        s2 *= n
        s2 -= s1
        s1 *= n - 1
        np.divide(s1, s2, out=out[start:start + CHUNK])
    return out


@lru_cache(maxsize=32)
def nominal_level(alpha: float, min_pairs: int, max_pairs: int) -> float:
    """The repeated-significance (Pocock-type) level gamma of a t confidence sequence.

    gamma is the alpha-quantile, over SEQUENCES simulated standard normal sequences, of each
    sequence's smallest two-sided t p-value over the looks min_pairs..max_pairs (the k-th smallest,
    k = floor(alpha * SEQUENCES)), so that a fraction alpha of null sequences has some look whose
    interval at level gamma misses the mean. A single look needs no calibration: gamma = alpha.

    The p-values are not all computed (8 M of them at max_pairs 200 cost seconds): a bisection on
    gamma compares t^2 with each look's squared critical value until a few dozen sequences are
    left in the bracket, and only their p-values are computed exactly: the result is the same
    order statistic. Well under a second at max_pairs 200 (about 0.35 s on a 2-core VM).
    """
    Method(alpha, 0.0, min_pairs, max_pairs)  # the same checks and messages as the options'
    if min_pairs == max_pairs:
        return float(alpha)
    import numpy as np  # here: see _special

    special = _special()
    t2 = _null_t_squared(min_pairs, max_pairs)
    df = np.arange(min_pairs - 1, max_pairs, dtype=float)
    k = max(1, math.floor(alpha * SEQUENCES + 1e-9))

    def missing(level: float) -> np.ndarray:  # sequences whose smallest p-value is at most level
        return (t2 >= np.square(special.stdtrit(df, 1 - level / 2)).astype(np.float32)).any(axis=1)

    lo, hi = bonferroni_level(alpha, min_pairs, max_pairs) / 2, float(alpha)
    n_lo, n_hi = int(missing(lo).sum()), int(missing(hi).sum())
    while n_lo >= k:
        lo /= 2
        n_lo = int(missing(lo).sum())
    while n_hi < k:
        hi = min(1.0, hi * 2)
        n_hi = int(missing(hi).sum())
    for _ in range(200):  # ~12 halvings do; the cap only guards against ties in |t|
        if n_hi - n_lo <= 64:
            break
        mid = math.sqrt(lo * hi)
        n_mid = int(missing(mid).sum())
        if n_mid >= k:
            hi, n_hi = mid, n_mid
        else:
            lo, n_lo = mid, n_mid
    rows = missing(hi) & ~missing(lo)
    p = np.sort((2 * special.stdtr(df, -np.sqrt(t2[rows].astype(float)))).min(axis=1))
    return float(p[min(max(k - n_lo - 1, 0), p.size - 1)])


class Decision(str, Enum):
    """A look's outcome; the value is what results.json says (``continue`` never reaches it)."""

    SLOWER = "slower"
    FASTER = "faster"
    SAME = "same"
    UNDECIDED = "undecided"
    CONTINUE = "continue"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Interval:
    """An interval for a mean log ratio (log space: exp() of each end is a ratio)."""

    mean: float
    low: float
    high: float


def t_quantile(level: float, df: float) -> float:
    """q_df(1 - level/2): the two-sided Student t critical value (df may be fractional: Welch)."""
    return float(_special().stdtrit(df, 1 - level / 2))


def _moments(x: Sequence[float]) -> tuple[int, float, float]:
    """n, mean and sample variance (n - 1 divisor); plain Python: for a few pairs it beats numpy's overhead."""
    values = [float(v) for v in x]
    n = len(values)
    mean = math.fsum(values) / n
    return n, mean, math.fsum((v - mean) ** 2 for v in values) / (n - 1)


def t_interval(x: Sequence[float], level: float) -> Interval:
    """mean +- q_{n-1}(1 - level/2) * s / sqrt(n); with no spread it collapses to the mean."""
    if len(x) < 2:
        raise ValueError(f"a t interval needs 2 values or more, got {len(x)}")
    n, mean, var = _moments(x)
    half = t_quantile(level, n - 1) * math.sqrt(var / n)
    return Interval(mean, mean - half, mean + half)


def welch_interval(a: Sequence[float], b: Sequence[float], level: float) -> Interval:
    """Welch's interval for mean(a) - mean(b) of two independent samples (2 values or more each)."""
    if len(a) < 2 or len(b) < 2:
        raise ValueError(f"a Welch interval needs 2 values or more on each side, got {len(a)} and {len(b)}")
    (na, mean_a, var_a), (nb, mean_b, var_b) = _moments(a), _moments(b)
    va, vb, diff = var_a / na, var_b / nb, mean_a - mean_b
    if va + vb == 0:
        return Interval(diff, diff, diff)
    df = (va + vb) ** 2 / (va ** 2 / (na - 1) + vb ** 2 / (nb - 1))
    half = t_quantile(level, df) * math.sqrt(va + vb)
    return Interval(diff, diff - half, diff + half)


def classify(interval: Interval, tolerance: float) -> Decision | None:
    """The verdict rules of docs/ab.md on an interval of the log ratio; None: the interval settles nothing."""
    ratio, low, high = math.exp(interval.mean), math.exp(interval.low), math.exp(interval.high)
    if high < 1 and ratio < 1 - tolerance:
        return Decision.SLOWER
    if low > 1 and ratio > 1 + tolerance:
        return Decision.FASTER
    if low >= 1 - tolerance and high <= 1 + tolerance:
        return Decision.SAME
    return None


@dataclass(frozen=True)
class Assessment:
    """A verdict with its figures: ratio, low and high are candidate/reference (exp of the log-space
    interval's middle and ends); low and high are None before the first look."""

    status: Decision
    pairs: int
    ratio: float | None
    low: float | None
    high: float | None
    gamma: float  # the nominal level of the interval
    reason: str

    def as_dict(self) -> dict[str, object]:
        """The verdict's keys of a case in results.json's ``ab`` section (docs/ab.md)."""
        return {"verdict": self.status.value, "ratio": self.ratio, "low": self.low, "high": self.high,
                "pairs": self.pairs, "reason": self.reason}


def _change(ratio: float, words: tuple[str, str]) -> str:
    if ratio < 1:
        return f"{(1 - ratio) * 100:.1f}% {words[0]}"
    if ratio > 1:
        return f"{(ratio - 1) * 100:.1f}% {words[1]}"
    return "unchanged"


def _span(low: float, high: float, words: tuple[str, str]) -> str:
    if low == high:
        return _change(low, words)
    if high < 1:
        return f"{(1 - high) * 100:.1f}%-{(1 - low) * 100:.1f}% {words[0]}"
    if low > 1:
        return f"{(low - 1) * 100:.1f}%-{(high - 1) * 100:.1f}% {words[1]}"
    return f"{_change(low, words)} to {_change(high, words)}"


def _reason(status: Decision, interval: Interval, tolerance: float, counted: str,
            subject: str = "candidate", words: tuple[str, str] = ("slower", "faster")) -> str:
    """One line: the change, its interval and what they mean against the tolerance."""
    ratio, low, high = math.exp(interval.mean), math.exp(interval.low), math.exp(interval.high)
    head = f"{subject} {_change(ratio, words)} (interval {_span(low, high, words)}, {counted})"
    tol = f"{tolerance * 100:g}%"
    if status in (Decision.SLOWER, Decision.FASTER):
        return f"{head}: beyond the {tol} tolerance"
    if status is Decision.SAME:
        return f"{head}: within the {tol} tolerance"
    if status is Decision.CONTINUE:
        return f"{head}: not settled yet, taking more pairs"
    if low <= 1 <= high:
        return f"{head}: the interval allows no change and a change beyond the {tol} tolerance alike; {ROOM}"
    return f"{head}: the interval allows a change within the {tol} tolerance and one beyond it alike; {ROOM}"


def _pair_log_ratio(index: int, item: object) -> float:
    try:
        reference, candidate = item  # type: ignore[misc]
    except (TypeError, ValueError):
        raise ValueError(f"pair {index}: {_shown(item)} is neither a (reference, candidate) throughput pair nor a "
                         "log ratio; give one or the other for every pair") from None
    for side, value in ((REFERENCE, reference), (CANDIDATE, candidate)):
        if not _is_real(value) or value <= 0:
            raise ValueError(f"pair {index}: the {side}'s throughput {_shown(value)} is not a positive finite number; "
                             "a pair is judged only when both launches measured one: take the pair again")
    return math.log(candidate) - math.log(reference)


def log_ratios(data: Sequence[tuple[float, float]] | Sequence[float]) -> list[float]:
    """log(c_i / r_i) of (reference, candidate) throughput pairs, or log ratios checked as given.

    Pairs are numbered from 0, as results.json's ``pairs_taken`` numbers them.
    """
    out: list[float] = []
    given_logs: bool | None = None
    for index, item in enumerate(data):
        is_log = isinstance(item, Real) and not isinstance(item, bool)
        if given_logs is not None and is_log != given_logs:
            raise ValueError(f"pair {index}: a {'log ratio' if is_log else 'throughput pair'} after "
                             f"{'log ratios' if given_logs else 'throughput pairs'}; give one kind for every pair")
        given_logs = is_log
        if is_log and not math.isfinite(item):  # type: ignore[arg-type]
            raise ValueError(f"pair {index}: the log ratio {_shown(item)} is not a finite number; take the pair again")
        out.append(float(item) if is_log else _pair_log_ratio(index, item))  # type: ignore[arg-type]
    return out


def decide(data: Sequence[tuple[float, float]] | Sequence[float], method: Method = Method(),
           final: bool = False, lower_is_better: bool = False, subject: str = "candidate",
           words: tuple[str, str] = ("slower", "faster")) -> Assessment:
    """The verdict after the pairs so far: (reference, candidate) figures or their log ratios.

    final: no more pairs will come (the budget ran out, the session is ending): an open interval is
    UNDECIDED rather than CONTINUE, as it is at max_pairs. ``lower_is_better`` (peak memory, time to
    first step): SLOWER means the candidate's figure is higher, worse; the rules are applied to the
    reciprocal ratios and the reason and figures give the ratios as measured, in ``words``.
    """
    x = log_ratios(data)
    n, gamma = len(x), method.gamma
    if n > method.max_pairs:
        raise ValueError(f"{n} pairs given, more than --dlperf-ab-max-pairs ({method.max_pairs}): the boundary "
                         "covers looks up to it; stop taking pairs there")
    if n < method.min_pairs:
        ratio = math.exp(math.fsum(x) / n) if n else None
        if final:
            reason = (f"{n} pair{'s' if n != 1 else ''} taken, {method.min_pairs} needed for a verdict "
                      "(--dlperf-ab-min-pairs): no verdict")
            return Assessment(Decision.UNDECIDED, n, ratio, None, None, gamma, reason)
        return Assessment(Decision.CONTINUE, n, ratio, None, None, gamma,
                          f"{n} of the {method.min_pairs} pairs needed for a first look")
    interval = t_interval(x, gamma)
    status = classify(_flipped(interval) if lower_is_better else interval, method.tolerance)
    if status is None:
        status = Decision.UNDECIDED if final or n >= method.max_pairs else Decision.CONTINUE
    return Assessment(status, n, math.exp(interval.mean), math.exp(interval.low), math.exp(interval.high), gamma,
                      _reason(status, interval, method.tolerance, f"{n} pairs", subject, words))


def _flipped(interval: Interval) -> Interval:
    """The interval of the reciprocal ratio (reference / candidate): a lower-is-better figure's, oriented."""
    return Interval(-interval.mean, -interval.high, -interval.low)


def _scaling_logs(ratios: Sequence[float], case: str) -> list[float]:
    for index, value in enumerate(ratios):
        if not _is_real(value) or value <= 0:
            raise ValueError(f"scaling: the {case} case's pair {index} has ratio {_shown(value)}, not a positive finite "
                             "number; each is a pair's candidate/reference throughput")
    return [math.log(value) for value in ratios]


def compare_scaling(ratios_multi: Sequence[float], ratios_single: Sequence[float],
                    method: Method = Method()) -> Assessment:
    """Candidate/reference of a kNmG case's scaling efficiency, from both cases' pairs' ratios.

    efficiency ratio = exp(mean log ratio of the multi-device case - that of the single-device case).
    The two cases' pairs are independent, so Welch's interval on the difference of the two means is
    used, at the nominal level gamma common to every look of the boundary, i.e. the level the
    longer case's last look used. This is an approximation, not the boundary's exact guarantee:
    each case stopped on its own data and Welch's degrees of freedom are approximate. The verdict
    rules are the cases', with final semantics (no CONTINUE). ``pairs`` is the smaller of the two
    counts; the reason gives both.
    """
    multi, single = _scaling_logs(ratios_multi, "multi-device"), _scaling_logs(ratios_single, "single-device")
    gamma = method.gamma
    counted = f"{len(multi)} and {len(single)} pairs"
    words = ("lower", "higher")
    if len(multi) < 2 or len(single) < 2:
        ratio = math.exp(math.fsum(multi) / len(multi) - math.fsum(single) / len(single)) if multi and single else None
        return Assessment(Decision.UNDECIDED, min(len(multi), len(single)), ratio, None, None, gamma,
                          f"scaling efficiency needs 2 pairs or more of each case, got {counted} of the multi- "
                          "and single-device cases: no verdict")
    interval = welch_interval(multi, single, gamma)
    status = classify(interval, method.tolerance) or Decision.UNDECIDED
    return Assessment(status, min(len(multi), len(single)), math.exp(interval.mean), math.exp(interval.low),
                      math.exp(interval.high), gamma,
                      _reason(status, interval, method.tolerance, counted, "candidate's scaling efficiency", words))


def order(index: int) -> tuple[str, str]:
    """Which side runs first in pair ``index`` (from 0): ABBA BAAB, repeated, A the reference.

    Each block of 4 mirrors its neighbours, so within every 8 pairs each side goes first 4 times and
    a drift in time (a warming node, a neighbour job starting) weighs on both sides alike.
    """
    if not _is_whole(index) or index < 0:
        raise ValueError(f"pair index {_shown(index)}: give a whole number from 0")
    block, position = divmod(index % 8, 4)
    reference_first = (position in (0, 3)) != (block == 1)
    return (REFERENCE, CANDIDATE) if reference_first else (CANDIDATE, REFERENCE)
