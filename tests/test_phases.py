"""Where a launch's seconds went (results/phases.py), on a real launch's record: resnet50 2n1g under torchrun on
the local cluster, 2026-12-07 (tests/data/phases/resnet50-2n1g-run.json: the first run of
``python3 benchmarks/launch_phases.py -k "resnet50 and 2n1g" --repeats 1``'s results.json, its meta cut to the
fields the phases take)."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from pytest_dlperf.results.phases import NAMES, launch_phases
from pytest_dlperf.results.records import RunRecord, StepRecord

DATA = Path(__file__).resolve().parent / "data" / "phases" / "resnet50-2n1g-run.json"


def recorded(**meta) -> RunRecord:
    d = json.loads(DATA.read_text())
    return RunRecord(repeat=d["repeat"], meta={**d["meta"], **meta}, steps=[StepRecord(**s) for s in d["steps"]],
                     commands=[], logs={}, wall_seconds=d["wall_seconds"], started_at=d["started_at"])


def test_the_phases_of_a_local_launch_add_up_to_its_seconds_in_a_launchs_order():
    run = recorded()
    got = launch_phases(run, same_clock=True, total=run.wall_seconds + 0.4)
    assert list(got.seconds) == ["harness", "before", "launcher", "imports", "process_group", "model", "first_step",
                                 "warmup", "window", "after", "exit"]
    assert got.seconds["harness"] == pytest.approx(0.4, abs=1e-3)
    assert sum(got.seconds.values()) == pytest.approx(got.wall, abs=0.05)
    first = run.meta["first_step"]
    assert sum(got.seconds[k] for k in first["parts"]) == pytest.approx(first["seconds"], abs=0.01)
    window = run.meta["window"]
    assert got.seconds["window"] == pytest.approx(window["end"] - window["start"], abs=1e-3)
    assert got.seconds["warmup"] == pytest.approx(window["start"] - run.steps[0].end, abs=1e-3)
    assert got.line().startswith("harness 0.4, before 0.0, start 18.7 (launcher 7.1, imports 5.2, group 0.0, "
                                 "model 5.1, first step 1.3), warm-up ")
    assert got.line().endswith(f"exit {got.seconds['exit']:.1f}")


def test_a_checkpoint_after_the_window_is_its_own_phase_taken_from_after():
    plain = launch_phases(recorded(), same_clock=True)
    got = launch_phases(recorded(checkpoint={"save_seconds": 0.3, "load_seconds": 0.1}), same_clock=True)
    assert list(got.seconds).index("checkpoint") == list(got.seconds).index("window") + 1
    assert got.seconds["checkpoint"] == pytest.approx(0.4)
    assert got.seconds["after"] == pytest.approx(max(0.0, plain.seconds["after"] - 0.4), abs=1e-3)
    assert ", checkpoint 0.4, after " in got.line()


def test_nodes_on_another_clock_give_before_and_exit_as_one_figure():
    """A node's clock may be set apart from this machine's: only durations are mixed."""
    run = recorded()
    shifted = copy.deepcopy(run)
    shifted.meta["first_step"]["launched"] += 3600.0  # an hour ahead
    shifted.meta["written"] += 3600.0
    here, there = launch_phases(run, same_clock=False), launch_phases(shifted, same_clock=False)
    assert "before" not in there.seconds and "exit" not in there.seconds
    assert there.seconds == here.seconds
    near = launch_phases(run, same_clock=True)
    assert there.seconds["outside"] == pytest.approx(near.seconds["before"] + near.seconds["exit"], abs=1e-3)
    assert f"{NAMES['outside']} {there.seconds['outside']:.1f}" in there.line()


def test_a_workload_that_wrote_no_launch_start_or_no_time_written_has_no_phases():
    run = recorded()
    older = copy.deepcopy(run)
    del older.meta["first_step"]["launched"]
    assert launch_phases(older, same_clock=True) is None
    unwritten = copy.deepcopy(run)
    del unwritten.meta["written"]
    assert launch_phases(unwritten, same_clock=True) is None
    parsed = RunRecord(repeat=0, meta={"parsed": {"throughput": 5.0}}, steps=[], commands=[], logs={},
                       wall_seconds=9.0)
    assert launch_phases(parsed, same_clock=True) is None
