"""The workload's own timing rules: when warm-up ends and how long the measured window is.

They run on the nodes (the workload imports nothing from the harness), so they are tested here by
loading the workload file itself.
"""
from __future__ import annotations

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
    return mod


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
