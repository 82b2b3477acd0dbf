"""Metrics against hand-computed cases."""
from __future__ import annotations

import pytest

from pytest_dlperf import metrics
from pytest_dlperf.metrics import Step


def _steps(durations, samples=8, gap=0.0, ranks=1):
    out, t = [], 100.0
    for d in durations:
        out.append(Step(start=t, end=t + d, samples=samples, rank_times=[d] * ranks))
        t += d + gap
    return out


def test_throughput_is_samples_over_wall_time_of_the_window():
    # warmup step of 5 s is excluded; window = 3 steps of 1, 2, 1 s, 8 samples each -> 24 / 4 s.
    steps = _steps([5.0, 1.0, 2.0, 1.0])
    assert metrics.throughput(steps, warmup=1, iters=3) == pytest.approx(6.0)


def test_throughput_is_not_the_mean_of_per_step_rates():
    steps = _steps([1.0, 3.0])  # rates 8/s and 2.667/s: their mean 5.33 overstates 16/4 = 4
    assert metrics.throughput(steps, 0, 2) == pytest.approx(4.0)


def test_throughput_counts_gaps_between_steps_as_wall_time():
    steps = _steps([1.0, 1.0], gap=2.0)  # 16 samples from t=100 to t=104
    assert metrics.throughput(steps, 0, 2) == pytest.approx(4.0)


def test_window_longer_than_run_is_an_error():
    with pytest.raises(ValueError, match="window needs 5"):
        metrics.throughput(_steps([1.0, 1.0]), warmup=2, iters=3)


def test_step_times_gather_every_rank():
    steps = [Step(0, 1, 16, [0.5, 0.7]), Step(1, 2, 16, [0.6, 0.9]), Step(2, 3, 16, [0.4, 0.8])]
    assert metrics.step_times(steps, 1, 2) == [0.6, 0.9, 0.4, 0.8]


def test_percentiles_linear_interpolation():
    p = metrics.percentiles([1.0, 2.0, 3.0, 4.0, 5.0])
    assert p == {"p50": 3.0, "p75": 4.0, "p90": pytest.approx(4.6), "p95": pytest.approx(4.8)}


def test_speedup_and_efficiency_match_dlperf_published_table():
    # DLPerf NGC TF ResNet50 FP32 bs128: 1n1g 362.44, 1n8g 2721.98 -> 7.51; 4n8g 9514.64 -> 26.25
    assert round(metrics.speedup(2721.98, 362.44), 2) == 7.51
    assert round(metrics.speedup(9514.64, 362.44), 2) == 26.25
    assert metrics.efficiency(7.51, 8) == pytest.approx(0.93875)
    assert metrics.speedup(100.0, None) is None and metrics.efficiency(None, 2) is None


def test_multi_node_efficiency_matches_aiacc_table():
    # AIACC Perseus ResNet50 bs256: 1n8g 11328.8, 2n8g 20316.8 -> 0.90, 4n8g 38160.6 -> 0.84
    assert round(metrics.multi_node_efficiency(20316.8, 2, 11328.8), 2) == 0.90
    assert round(metrics.multi_node_efficiency(38160.6, 4, 11328.8), 2) == 0.84
    assert metrics.multi_node_efficiency(100.0, 1, 100.0) is None


def test_mean_and_median_over_repeats():
    # DLPerf 1n1g TF1 runs: mean 362.41, median 362.44
    runs = [362.05, 362.43, 362.28, 362.78, 362.45, 362.45]
    mean, median = metrics.center(runs)
    assert round(mean, 2) == 362.41 and round(median, 2) == 362.44


def test_acspeed_line_format():
    pct = {"p50": 0.073, "p75": 0.073, "p90": 0.073, "p95": 0.073}
    line = metrics.acspeed_line(8, 1, 32, pct)
    assert line == "8 GPUs -- 1M/8G: p50: 0.073s 438/s p75: 0.073s 438/s p90: 0.073s 438/s p95: 0.073s 438/s"


def test_a_metric_is_its_declaration_every_part_reads_it(monkeypatch):
    """What docs/metrics.md promises: a new metric declared (here one computed from a launch's own
    records, lower is better) is measured, shown, kept and judged with nothing else changed."""
    import json

    from pytest_dlperf.baselines import Entry, judge
    from pytest_dlperf.baselines.profile import default_tolerances
    from pytest_dlperf.metrics import DeviceKind, Direction, Kind, Metric
    from pytest_dlperf.reporting import junit, markdown, summary_tables
    from pytest_dlperf.results.cases import ResultSet, result_from_dict, summarize

    from .suite import ROOT

    warmups = Metric("warmup_steps", "warm-up steps", "warm-ups", "steps", Direction.LOWER, Kind.LAUNCH, gated=True,
                     description="steps the launch warmed up for", tolerances={DeviceKind.CPU: 0.5, DeviceKind.GPU: 0.5},
                     per_launch=lambda run, case, m: float(run.meta["warmup_iters"]))
    monkeypatch.setattr(metrics, "METRICS", (*metrics.METRICS, warmups))
    doc = json.loads((ROOT / "tests" / "data" / "history" / "results.json").read_text())
    old = result_from_dict(doc["cases"][0])
    result = ResultSet().add(summarize(old.case, old.measurement, old.runs))
    runs = [float(r.meta["warmup_iters"]) for r in old.runs]
    assert result.values("warmup_steps") == runs and result.value("warmup_steps") == sorted(runs)[len(runs) // 2]
    assert result.metrics_dict()["warmup_steps"] == {"unit": "steps", "better": "lower", "kind": "launch",
                                                     "gated": True, "rule": "tolerance",
                                                     "value": result.value("warmup_steps"), "values": runs}
    assert "warm-ups" in summary_tables(ResultSet([result])) and "warm-ups" in markdown.render(ResultSet([result]))
    assert ("dlperf_warmup_steps", result.value("warmup_steps")) in junit.junit_properties(result)
    # recorded into the baseline entry, and judged against it: twice the warm-up is a regression
    tol = default_tolerances("cpu-x-1c")
    assert tol.get("warmup_steps") == 0.5
    entry = Entry.from_result(result, tol, {})
    assert entry.runs["warmup_steps"] == runs and entry.values("warmup_steps") == runs
    same = judge(runs, entry, tol, metric="warmup_steps", case=old.case.id)
    worse = judge([2.5 * x for x in runs], entry, tol, metric="warmup_steps", case=old.case.id)
    assert same.status == "pass" and worse.status == "regression", (same.message, worse.message)
    assert "median above baseline x (1 + 0.5)" in worse.message
