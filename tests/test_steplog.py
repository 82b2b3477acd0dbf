"""The step-log contract (``node/workloads/steplog.py``): what a workload writes is what the harness reads,
and a truncated, garbled, foreign or out-of-sync log is an error naming the file and line."""
from __future__ import annotations

import json

import pytest

from pytest_dlperf.node.workloads import steplog
from pytest_dlperf.node.workloads.steplog import StepLogError, Writer

META = {"model": "resnet50", "precision": "fp32", "batch_size": 2, "world_size": 2, "warmup_iters": 1,
        "iters": 2, "window": {"start": 1.0, "end": 3.0}, "frameworks": {"torch": "2.13.0"}}


def write(path, monkeypatch=None, fault: str = "", digests=((1.0, 2.0), (1.0, 2.0))) -> str:
    if monkeypatch is not None:
        monkeypatch.setenv(steplog.FAULT_ENV, fault)
    with Writer(str(path)) as w:
        w.meta(**META)
        for i in range(3):
            w.step(step=i, warmup=i == 0, start=float(i), end=i + 1.0, rank_times=[1.0, 1.1], samples=4,
                   loss=2.5)
        w.end([list(d) for d in digests])
    return path.read_text()


def test_round_trip(tmp_path):
    log = steplog.parse(write(tmp_path / "s.jsonl"), "node0:s.jsonl")
    assert log.meta["contract"] == steplog.VERSION and log.meta["frameworks"] == {"torch": "2.13.0"}
    assert [s["step"] for s in log.steps] == [0, 1, 2] and log.steps[0]["warmup"] is True
    assert log.end["steps"] == 3
    steplog.check_in_sync(log, "node0:s.jsonl")


def test_the_meta_line_says_when_it_was_written_and_rank_0s_launch_start(tmp_path):
    """What the launch's phases take (results/phases.py): rank 0's launch start beside the slowest rank's start-up,
    and the time the result was written; an older StartClock's figures (no launch start) still read."""
    import time

    before = time.time()
    log = steplog.parse(write(tmp_path / "s.jsonl"), "node0:s.jsonl")
    assert before <= log.meta["written"] <= time.time()
    clock = steplog.StartClock()
    mine = clock.figures(clock.launched + 2.0)
    assert len(mine) == 2 + len(steplog.START_PHASES) and mine[-1] == clock.launched and mine[0] == pytest.approx(2.0)
    slower = [3.0, 1.0, 1.0, 0.5, 0.3, 0.2, clock.launched + 0.01]
    got = steplog.first_step([mine, slower])
    assert got["rank"] == 1 and got["seconds"] == 3.0 and got["launched"] == clock.launched
    assert got["parts"] == dict(zip(steplog.START_PHASES, [1.0, 1.0, 0.5, 0.3, 0.2]))
    assert "launched" not in steplog.first_step([mine[:-1], slower[:-1]])


def test_first_step_says_when_the_direct_start_started_the_ranks(monkeypatch):
    """The local cluster's direct start (rankstart.py) marks its ranks; under a launcher's agent nothing is said."""
    figures = [[3.0, 1.0, 1.0, 0.5, 0.3, 0.2, 100.0]]
    monkeypatch.delenv(steplog.RANK_START_ENV, raising=False)
    assert "start" not in steplog.first_step(figures)
    monkeypatch.setenv(steplog.RANK_START_ENV, "direct")
    assert steplog.first_step(figures)["start"] == "direct"


@pytest.mark.parametrize("fault, message", [
    ("truncate", r"node0:s.jsonl: line 3 is cut off \(no newline\): the step log is truncated"),
    ("garble", r"node0:s.jsonl: line 3 is not JSON .*garbled"),
])
def test_fault_hooks_make_logs_the_parser_refuses(tmp_path, monkeypatch, fault, message):
    text = write(tmp_path / "s.jsonl", monkeypatch, fault)
    with pytest.raises(StepLogError, match=message):
        steplog.parse(text, "node0:s.jsonl")


def test_missing_end_line_is_truncation(tmp_path):
    text = "".join(ln + "\n" for ln in write(tmp_path / "s.jsonl").splitlines()[:-1])
    with pytest.raises(StepLogError, match=r"no 'end' line after 3 step\(s\): the step log is truncated"):
        steplog.parse(text, "f")


@pytest.mark.parametrize("edit, message", [
    (lambda ls: ls[1:], r"line 1 is 'step'; the first line must be 'meta'"),
    (lambda ls: [ls[0].replace('"contract": 1', '"contract": 99')] + ls[1:], r"contract version 99"),
    (lambda ls: [ls[0], ls[2], ls[1]] + ls[3:], r"line 2 is step 1; expected step 0"),
    (lambda ls: ls[:1] + [json.dumps({"kind": "step", "step": 0})] + ls[2:], r"line 2 \(step\) lacks warmup"),
    (lambda ls: [], r"empty"),
    (lambda ls: ls + [ls[1]], r"'step' after the 'end' line"),
])
def test_malformed_logs_name_the_line(tmp_path, edit, message):
    lines = edit(write(tmp_path / "s.jsonl").splitlines())
    with pytest.raises(StepLogError, match=message):
        steplog.parse("".join(ln + "\n" for ln in lines), "f")


def test_ranks_that_drifted_apart_fail(tmp_path):
    log = steplog.parse(write(tmp_path / "s.jsonl", digests=((10.0, 5.0), (10.5, 5.0))), "node0:s.jsonl")
    with pytest.raises(StepLogError, match=r"parameters disagree.*rank 1: sum 10.5.*not synchronised"):
        steplog.check_in_sync(log, "node0:s.jsonl")
    # summation order alone (relative 1e-9) is agreement
    log = steplog.parse(write(tmp_path / "t.jsonl", digests=((1e3, 5.0), (1e3 * (1 + 1e-9), 5.0))), "f")
    steplog.check_in_sync(log, "f")


def test_writer_refuses_a_meta_line_without_the_contract_fields(tmp_path):
    with Writer(str(tmp_path / "s.jsonl")) as w, pytest.raises(ValueError, match="lacks frameworks"):
        w.meta(**{k: v for k, v in META.items() if k != "frameworks"})
