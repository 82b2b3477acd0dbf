"""The A/B verdict's statistics (pytest_dlperf/ab/sequential.py): the calibrated boundary keeps the
error rate of looking after every pair at alpha, detects a real slow-down, and says SAME for equal
sides; the pair order is balanced; bad input is a one-line ValueError."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from pytest_dlperf.ab.sequential import (CANDIDATE, REFERENCE, Assessment, Decision, Method, bonferroni_level,
                                         classify, compare_scaling, decide, log_ratios, nominal_level, order,
                                         t_interval)

SEED = 7_001  # not the calibration's seed: the error rates below are judged on fresh data


def sequential(x: np.ndarray, method: Method) -> Assessment:
    """The whole procedure on one sequence: a look after every pair, final at max_pairs."""
    for n in range(method.min_pairs, method.max_pairs + 1):
        assessment = decide(x[:n], method, final=n == method.max_pairs)
        if assessment.status is not Decision.CONTINUE:
            return assessment
    raise AssertionError("decide() gave CONTINUE at max_pairs")


def running_fixed_n_errors(data: np.ndarray, method: Method) -> int:
    """The naive procedure: a fixed-n t interval at level alpha after every pair, the same rules."""
    errors = 0
    for x in data:
        for n in range(method.min_pairs, method.max_pairs + 1):
            status = classify(t_interval(x[:n], method.alpha), method.tolerance)
            if status is not None:
                errors += status in (Decision.SLOWER, Decision.FASTER)
                break
    return errors


def one_line_value_error(excinfo: pytest.ExceptionInfo[ValueError], *words: str) -> str:
    message = str(excinfo.value)
    assert "\n" not in message
    for word in words:
        assert word in message
    return message


# --- the boundary -----------------------------------------------------------------------------------

@pytest.mark.parametrize("min_pairs,max_pairs", [(3, 20), (3, 40), (5, 12), (3, 200)])
def test_the_calibrated_level_lies_between_the_bonferroni_bound_and_alpha(min_pairs, max_pairs):
    gamma = nominal_level(0.05, min_pairs, max_pairs)
    assert bonferroni_level(0.05, min_pairs, max_pairs) <= gamma < 0.05
    assert Method(0.05, 0.02, min_pairs, max_pairs).gamma == gamma  # cached: the same figure each time


def test_one_look_needs_no_calibration_and_more_looks_a_smaller_level():
    assert nominal_level(0.05, 5, 5) == 0.05
    assert nominal_level(0.05, 3, 10) > nominal_level(0.05, 3, 20) > nominal_level(0.05, 3, 40)
    assert nominal_level(0.10, 3, 20) > nominal_level(0.05, 3, 20) > nominal_level(0.01, 3, 20)



def test_every_looks_interval_is_the_t_interval_at_the_common_level():
    method = Method()
    x = np.random.default_rng(SEED).normal(-0.01, 0.03, method.max_pairs)
    for n in (3, 7, 20):
        a = decide(x[:n], method)
        half = stats.t.ppf(1 - method.gamma / 2, n - 1) * x[:n].std(ddof=1) / math.sqrt(n)
        assert a.pairs == n and a.gamma == method.gamma
        assert a.ratio == pytest.approx(math.exp(x[:n].mean()), rel=1e-12)
        assert a.low == pytest.approx(math.exp(x[:n].mean() - half), rel=1e-9)
        assert a.high == pytest.approx(math.exp(x[:n].mean() + half), rel=1e-9)


def test_the_intervals_cover_any_mean_at_every_look_with_probability_one_minus_alpha():
    """The confidence sequence on its own: a mean and sd far from the calibration's 0 and 1."""
    method = Method()
    mu, data = 0.3, np.random.default_rng(SEED + 1).normal(0.3, 0.2, (1000, method.max_pairs))
    missed = 0
    for x in data:
        for n in range(method.min_pairs, method.max_pairs + 1):
            interval = t_interval(x[:n], method.gamma)
            if not interval.low <= mu <= interval.high:
                missed += 1
                break
    assert 0.02 * 1000 <= missed <= 0.075 * 1000  # alpha 0.05 +- 3.5 standard errors of 1000 sequences


# --- the whole procedure's error rate and power -------------------------------------------------------

def test_the_aa_error_rate_of_looking_after_every_pair_is_alpha_and_not_vacuous():
    """Identical sides, tolerance 0 (the strictest: every interval that misses 1 is an error)."""
    method = Method(alpha=0.05, tolerance=0.0, min_pairs=3, max_pairs=20)
    data = np.random.default_rng(SEED + 2).normal(0.0, 0.035, (2000, method.max_pairs))
    errors = sum(sequential(x, method).status in (Decision.SLOWER, Decision.FASTER) for x in data)
    # alpha 0.05 +- 3 standard errors of 2000 sequences: a boundary as conservative as Bonferroni's
    # (0.023 on these data) fails the lower bound, a fixed-n level after every pair (0.23) the upper
    assert 0.035 <= errors / len(data) <= 0.065


def test_a_fixed_n_t_test_after_every_pair_would_inflate_the_error_rate():
    method = Method(alpha=0.05, tolerance=0.0, min_pairs=3, max_pairs=20)
    data = np.random.default_rng(SEED + 3).normal(0.0, 0.035, (1000, method.max_pairs))
    assert running_fixed_n_errors(data, method) / len(data) > 0.1


def test_a_5_percent_slowdown_with_3_5_percent_noise_is_found_slower_by_20_pairs():
    method = Method()
    data = np.random.default_rng(SEED + 4).normal(math.log(0.95), 0.035, (500, method.max_pairs))
    outcomes = [sequential(x, method) for x in data]
    assert sum(a.status is Decision.SLOWER for a in outcomes) / len(outcomes) >= 0.90
    assert not any(a.status is Decision.FASTER for a in outcomes)


def test_equal_sides_with_little_noise_are_the_same_within_a_few_pairs():
    method = Method()
    rng = np.random.default_rng(SEED + 5)
    for _ in range(50):
        reference = rng.normal(100.0, 0.2, method.max_pairs)
        pairs = list(zip(reference, reference * np.exp(rng.normal(0.0, 0.002, method.max_pairs))))
        a = sequential_pairs(pairs, method)
        assert a.status is Decision.SAME and a.pairs <= 5, a.reason
        assert 0.98 <= a.low <= a.ratio <= a.high <= 1.02
        assert "within the 2% tolerance" in a.reason


def sequential_pairs(pairs: list[tuple[float, float]], method: Method) -> Assessment:
    for n in range(method.min_pairs, method.max_pairs + 1):
        a = decide(pairs[:n], method, final=n == method.max_pairs)
        if a.status is not Decision.CONTINUE:
            return a
    raise AssertionError("decide() gave CONTINUE at max_pairs")


# --- decide(): statuses and reasons -------------------------------------------------------------------

def test_before_min_pairs_the_verdict_waits_and_when_final_is_undecided():
    method = Method()
    waiting = decide([(10.0, 9.0), (10.0, 9.1)], method)
    assert waiting.status is Decision.CONTINUE and waiting.pairs == 2
    assert waiting.low is None and waiting.high is None
    assert waiting.ratio == pytest.approx(math.sqrt(0.9 * 0.91))
    final = decide([(10.0, 9.0)], method, final=True)
    assert final.status is Decision.UNDECIDED and "--dlperf-ab-min-pairs" in final.reason
    assert decide([], method, final=True).ratio is None


def test_an_open_interval_is_undecided_at_max_pairs_or_when_final_and_says_what_it_allows():
    method = Method(max_pairs=6)
    x = [0.03, -0.04, 0.01, -0.02, 0.04, -0.03]
    assert decide(x[:5], method).status is Decision.CONTINUE
    for a in (decide(x, method), decide(x[:5], method, final=True)):
        assert a.status is Decision.UNDECIDED
        assert "allows no change and a change beyond the 2% tolerance" in a.reason
        assert "--dlperf-ab-max-pairs" in a.reason


def test_a_significant_change_within_the_tolerance_but_reaching_beyond_it_is_undecided():
    method = Method(max_pairs=5)
    x = [-0.006, -0.018, -0.012, -0.007, -0.017]  # ratio 0.988, interval 0.979-0.997: below 1, across 0.98
    a = decide(x, method)
    assert a.status is Decision.UNDECIDED and a.high < 1 and a.low < 0.98
    assert "a change within the 2% tolerance and one beyond it" in a.reason


def test_the_slower_and_faster_verdicts_and_their_reasons():
    slower = decide([math.log(0.95)] * 2 + [math.log(0.951), math.log(0.949)] * 2, Method())
    assert slower.status is Decision.SLOWER
    assert slower.reason.startswith("candidate 5.0% slower (interval ") and slower.reason.endswith(
        "slower, 6 pairs): beyond the 2% tolerance")
    faster = decide([(100.0, 110.0), (100.0, 111.0), (101.0, 110.0)], Method())
    assert faster.status is Decision.FASTER and faster.low > 1 and "faster" in faster.reason


def test_zero_variance_collapses_the_interval_to_the_point():
    same = decide([(12.5, 12.5)] * 3, Method())
    assert same.status is Decision.SAME and same.low == same.high == same.ratio == 1.0
    slower = decide([math.log(0.9)] * 4, Method())
    assert slower.status is Decision.SLOWER
    assert slower.low == pytest.approx(0.9) and slower.high == pytest.approx(0.9)
    assert decide([0.0] * 3, Method(tolerance=0.0)).status is Decision.SAME


def test_as_dict_gives_the_contracts_keys():
    d = decide([0.0, 0.001, -0.001], Method()).as_dict()
    assert d["verdict"] == "same" and d["pairs"] == 3 and set(d) == {"verdict", "ratio", "low", "high", "pairs",
                                                                      "reason"}


def test_log_ratios_of_pairs_and_as_given():
    assert log_ratios([(10.0, 5.0), (2.0, 4.0)]) == pytest.approx([math.log(0.5), math.log(2.0)])
    assert log_ratios([0.1, -0.2]) == [0.1, -0.2]
    assert log_ratios(np.array([[10.0, 11.0]])) == pytest.approx([math.log(1.1)])


# --- compare_scaling() --------------------------------------------------------------------------------

def test_the_scaling_efficiency_ratio_and_its_welch_interval():
    method = Method()
    multi, single = [0.90, 0.93, 0.91, 0.92], [1.00, 0.98, 1.01]
    a = compare_scaling(multi, single, method)
    lm, ls = np.log(multi), np.log(single)
    assert a.ratio == pytest.approx(math.exp(lm.mean() - ls.mean()))
    welch = stats.ttest_ind(lm, ls, equal_var=False).confidence_interval(1 - method.gamma)
    assert a.low == pytest.approx(math.exp(welch.low)) and a.high == pytest.approx(math.exp(welch.high))
    assert a.status is Decision.SLOWER and a.pairs == 3
    assert a.reason.startswith("candidate's scaling efficiency 8.2% lower") and "4 and 3 pairs" in a.reason


def test_scaling_verdicts_same_faster_undecided():
    method = Method()
    assert compare_scaling([1.001, 0.999, 1.0], [1.0, 1.001, 0.999], method).status is Decision.SAME
    assert compare_scaling([1.10, 1.11, 1.12], [1.0, 1.001, 0.999], method).status is Decision.FASTER
    wide = compare_scaling([0.9, 1.1, 0.95], [1.0, 1.05, 0.97], method)
    assert wide.status is Decision.UNDECIDED and "alike" in wide.reason  # final: never CONTINUE
    short = compare_scaling([0.9], [1.0, 1.01], method)
    assert short.status is Decision.UNDECIDED and short.low is None and "2 pairs or more" in short.reason
    assert short.ratio == pytest.approx(math.exp(math.log(0.9) - (math.log(1.0) + math.log(1.01)) / 2))


# --- order() ------------------------------------------------------------------------------------------

def test_the_order_is_abba_baab_and_balanced():
    ref, cand = (REFERENCE, CANDIDATE), (CANDIDATE, REFERENCE)
    assert [order(i) for i in range(8)] == [ref, cand, cand, ref, cand, ref, ref, cand]
    firsts = [order(i)[0] for i in range(4000)]
    assert firsts.count(REFERENCE) == firsts.count(CANDIDATE) == 2000
    for block in range(999):  # every block of 4 is its neighbour's mirror image
        assert all(order(4 * block + j) == order(4 * block + 4 + j)[::-1] for j in range(4))


# --- bad input ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,option", [
    ({"alpha": 0.0}, "--dlperf-ab-alpha"), ({"alpha": 0.5}, "--dlperf-ab-alpha"),
    ({"alpha": float("nan")}, "--dlperf-ab-alpha"), ({"alpha": "0.05"}, "--dlperf-ab-alpha"),
    ({"tolerance": -0.01}, "--dlperf-ab-tolerance"), ({"tolerance": 1.0}, "--dlperf-ab-tolerance"),
    ({"min_pairs": 2}, "--dlperf-ab-min-pairs"), ({"min_pairs": 3.0}, "--dlperf-ab-min-pairs"),
    ({"min_pairs": 10, "max_pairs": 5}, "--dlperf-ab-max-pairs"), ({"max_pairs": 201}, "--dlperf-ab-max-pairs"),
    ({"max_pairs": True}, "--dlperf-ab-max-pairs"),
])
def test_a_bad_method_is_a_one_line_error_naming_the_option_and_the_fix(kwargs, option):
    with pytest.raises(ValueError) as excinfo:
        Method(**kwargs)
    assert one_line_value_error(excinfo, option).startswith(option)
    assert "give" in str(excinfo.value)


@pytest.mark.parametrize("data,words", [
    ([(10.0, 9.0), (10.0, 0.0), (10.0, 9.0)], ("pair 1", "candidate's throughput 0.0", "take the pair again")),
    ([(10.0, 9.0), (-1.0, 9.0)], ("pair 1", "reference's throughput -1.0")),
    ([(float("inf"), 9.0)], ("pair 0", "reference's throughput inf")),
    ([(10.0, float("nan"))], ("pair 0", "candidate's throughput nan")),
    ([0.1, float("nan")], ("pair 1", "log ratio nan")),
    ([0.1, (10.0, 9.0)], ("pair 1", "one kind")),
    ([(10.0, 9.0, 8.0)], ("pair 0", "(reference, candidate)")),
    ([(np.float64(10.0), np.float64(0.0))], ("pair 0", "candidate's throughput 0.0 is")),
    ([np.zeros((50, 3))], ("pair 0", "(reference, candidate)")),  # a long repr, still one line
    ([0.0] * 21, ("21 pairs", "--dlperf-ab-max-pairs (20)")),
])
def test_bad_pairs_are_a_one_line_error_naming_the_pair(data, words):
    with pytest.raises(ValueError) as excinfo:
        decide(data, Method())
    one_line_value_error(excinfo, *words)


def test_bad_scaling_ratios_and_pair_indexes_are_one_line_errors():
    with pytest.raises(ValueError) as excinfo:
        compare_scaling([1.0, 0.0], [1.0, 1.0], Method())
    one_line_value_error(excinfo, "multi-device case's pair 1", "0.0")
    with pytest.raises(ValueError) as excinfo:
        order(-1)
    one_line_value_error(excinfo, "pair index -1")
