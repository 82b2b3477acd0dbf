"""The workload's own timing rules: when warm-up ends and how long the measured window is, and the
one warm-up/window loop every workload runs them in (``steplog.time_steps``).

They run on the nodes (the workload imports nothing from the harness), so they are tested here by
loading the workload file itself.
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import pytest

WORKLOAD = Path(__file__).resolve().parents[1] / "pytest_dlperf" / "node" / "workloads" / "torch_ddp.py"


@pytest.fixture(scope="module")
def wl():
    spec = importlib.util.spec_from_file_location("torch_ddp_under_test", WORKLOAD)
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(WORKLOAD.parent))  # on the nodes steplog.py sits beside the workload
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(WORKLOAD.parent))
    return mod.steplog  # the rules it runs by: steplog.time_steps applies them for every workload


def test_warmup_runs_until_two_steps_agree_within_its_bounds(wl):
    done = wl.warmup_done
    # VGG's first steps pay for first-touch memory: 5 s, 1.8 s, then 0.6 s steps
    times = [5.0, 1.8, 0.66, 0.62]
    assert [done(times[:k], 2, 6) for k in range(1, 5)] == [False, False, False, True]
    assert not done([0.65], 2, 6)  # never before the least
    assert done([0.65, 0.60], 2, 6)  # 0.05 <= 10% of 0.60
    assert done([9, 7, 5, 3, 2, 1], 2, 6)  # at the most, settled or not
    assert done([9, 1], 2, 2) and done([9, 1], 2, 0)  # most <= least: exactly least steps


def test_window_fills_the_seconds_at_the_warmup_pace_between_its_bounds(wl):
    n = wl.window_iters
    assert n(0.5, 4, 0.0, 40) == 4  # no window seconds: exactly iters
    assert n(0.5, 4, 3.0, 40) == 6
    assert n(0.7, 4, 3.0, 40) == 5  # ceil(4.29)
    assert n(2.0, 4, 3.0, 40) == 4  # a slow machine still measures iters steps
    assert n(0.01, 4, 3.0, 40) == 40  # capped
    assert n(0.01, 4, 3.0, 0) == 300  # no cap


class FakeClock:
    """perf_counter and sleep for steplog.time_steps: each step takes the next of ``step_seconds``."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def perf_counter(self) -> float:
        return self.now

    def time(self) -> float:  # the wall clock the loop stamps its first step's end with (time to first step)
        return 1.7e9 + self.now

    def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.now += s


def run_loop(monkeypatch, step_seconds, rank=0, compiled=None, **flags):
    from pytest_dlperf.node.workloads import steplog

    clock = FakeClock()
    monkeypatch.setattr(steplog, "time", clock)
    seconds = iter(step_seconds)
    calls = []

    def step():
        clock.now += next(seconds)
        return 2.5

    def agree(done, iters):
        calls.append(("agree", done, iters))
        return done, iters

    args = argparse.Namespace(**{"warmup_iters": 2, "max_warmup_iters": 6, "iters": 3, "window_seconds": 0.0,
                                 "max_iters": 0, **flags})
    timed = steplog.time_steps(step, args, rank, 8, agree=agree, barrier=lambda: calls.append(("barrier",)),
                               sync=lambda: calls.append(("sync",)), compiled=compiled)
    return timed, calls, clock


def test_the_loop_warms_up_until_two_steps_agree_then_times_the_window(monkeypatch):
    # VGG-like first steps (5 s, 1.8 s), then 0.66 and 0.62 agree: four warm-up steps, three measured
    timed, calls, _ = run_loop(monkeypatch, [5.0, 1.8, 0.66, 0.62, 0.6, 0.5, 0.4])
    assert (timed.warmup, timed.iters) == (4, 3)
    assert timed.seconds == pytest.approx([5.0, 1.8, 0.66, 0.62, 0.6, 0.5, 0.4])
    assert timed.starts[0] == 100.0 and timed.ends[3] == pytest.approx(100 + 5 + 1.8 + 0.66 + 0.62)
    w0, w1 = timed.window
    assert timed.starts[4] == w0 and timed.ends[-1] == w1 and w1 - w0 == pytest.approx(1.5)
    assert timed.starts[5:] == timed.ends[4:-1]  # inside the window one stamp ends a step and starts the next
    assert timed.losses == [2.5] * 7
    assert [c for c in calls if c[0] == "agree"] == [("agree", False, 3), ("agree", False, 3),
                                                      ("agree", False, 3), ("agree", True, 3)]
    after_warmup = calls[calls.index(("agree", True, 3)) + 1:]
    assert after_warmup == [("sync",), ("barrier",), ("sync",), ("barrier",)]  # no sync inside the window


def test_the_loop_sizes_the_window_in_seconds_at_the_warmup_pace(monkeypatch):
    timed, calls, _ = run_loop(monkeypatch, [0.5] * 12, warmup_iters=0, max_warmup_iters=0, window_seconds=3.0,
                               max_iters=40)
    assert (timed.warmup, timed.iters) == (1, 6)  # one step for the pace, then 3 s / 0.5 s
    no_warmup, _, _ = run_loop(monkeypatch, [0.5] * 3, warmup_iters=0, max_warmup_iters=0)
    assert (no_warmup.warmup, no_warmup.iters) == (0, 3) and len(no_warmup.ends) == 3


def test_the_loop_writes_the_step_lines_the_workloads_wrote(monkeypatch, tmp_path):
    from pytest_dlperf.node.workloads import steplog

    timed, _, _ = run_loop(monkeypatch, [1.0, 1.0, 0.5, 0.5, 0.5])
    with steplog.Writer(str(tmp_path / "s.jsonl")) as log:
        log.meta(model="m", precision="fp32", batch_size=4, world_size=2, warmup_iters=timed.warmup,
                 iters=timed.iters, window={"start": timed.window[0], "end": timed.window[1]}, frameworks={})
        log.steps(timed, [timed.seconds, [2 * s for s in timed.seconds]], 8)
        log.end([[1.0, 1.0], [1.0, 1.0]])
    steps = steplog.parse((tmp_path / "s.jsonl").read_text(), "s").steps
    assert [(s["step"], s["warmup"]) for s in steps] == [(0, True), (1, True), (2, False), (3, False), (4, False)]
    assert steps[3]["rank_times"] == [0.5, 1.0] and steps[3]["samples"] == 8 and steps[3]["loss"] == 2.5
    assert steps[2]["start"] == timed.window[0] and steps[4]["end"] == timed.window[1]


def test_the_loop_keeps_the_fault_and_slowdown_hooks(monkeypatch):
    monkeypatch.setenv("DLPERF_PLANT_SLOWDOWN", "0.2")
    timed, _, clock = run_loop(monkeypatch, [1.0, 1.0, 1.0, 1.0, 1.0])
    assert clock.slept == pytest.approx([0.25] * 3)  # d/(1-d) x each window step: throughput x 0.8
    assert timed.seconds[2:] == pytest.approx([1.25] * 3)
    monkeypatch.delenv("DLPERF_PLANT_SLOWDOWN")
    monkeypatch.setenv("DLPERF_FAULT", "1:3")
    with pytest.raises(RuntimeError, match="injected fault on rank 1 at step 3"):
        run_loop(monkeypatch, [1.0] * 5, rank=1)
    run_loop(monkeypatch, [1.0] * 5, rank=0)  # another rank's fault is not this one's


def test_a_compiled_models_warmup_does_not_end_on_a_step_that_compiled(monkeypatch):
    """torch.compile compiles in the first step and, on a recompilation, in a later one: the window starts
    only after a step that compiled nothing, and the compile time runs from the first step's start to the
    end of the last step that compiled (at most the warm-up's most)."""
    compiling = iter([True, False, True, False, False, False, False, False, False])
    # steps 1 and 2 agree (0.5, 0.5), but step 2 recompiled: the warm-up goes on to steps 3 and 4
    timed, _, _ = run_loop(monkeypatch, [20.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5], compiled=lambda: next(compiling))
    assert (timed.warmup, timed.compile_steps) == (4, 3)
    assert timed.compile_seconds == pytest.approx(21.0) and timed.compile_seconds == timed.ends[2] - timed.starts[0]
    # an exact warm-up (no most) ends where it was asked to, compiled or not; nothing compiled: no compile time
    always = run_loop(monkeypatch, [20.0, 0.5, 0.5, 0.5, 0.5], compiled=lambda: True, max_warmup_iters=0)[0]
    assert (always.warmup, always.compile_steps) == (2, 2)
    eager = run_loop(monkeypatch, [1.0, 0.5, 0.5, 0.5, 0.5, 0.5], compiled=lambda: False)[0]
    assert (eager.warmup, eager.compile_steps, eager.compile_seconds) == (3, 0, 0.0)
