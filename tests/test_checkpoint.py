"""The checkpoint after the window (issue #80): the node's timing (checkpoints.py), the meta record, where it goes,
auto's decision per case, the metrics, and a slower save planted on one side of an A/B session on the tiny engine.
Each real engine's checkpoint is checked in its own real launch (test_local_training, test_llm, test_backends,
test_horovod)."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from pytest_dlperf import metrics
from pytest_dlperf.launchers.base import WORKLOADS, checkpoint_dir
from pytest_dlperf.measure.checkpoints import AUTO_SHARE, Checkpoints
from pytest_dlperf.metrics import NotMeasured
from pytest_dlperf.results.records import RunRecord
from pytest_dlperf.specs import CaseSpec, Measurement, Topology
from tests.suite import QUICK_PROBES, SMALL_CASE, TINY_ENGINE, run_suite


@pytest.fixture()
def node_checkpoints():
    """The node's checkpoints.py as a workload imports it (steplog.py beside it)."""
    sys.path.insert(0, str(WORKLOADS))
    try:
        import checkpoints

        yield checkpoints
    finally:
        sys.path.remove(str(WORKLOADS))


class Files:
    """A Checkpointer writing one file of ``size`` bytes, taking ``seconds`` at least to save."""

    format = "files"

    def __init__(self, size: int, seconds: float = 0.0) -> None:
        self.size, self.seconds, self.loaded = size, seconds, 0

    def save(self, path: str) -> None:
        Path(path).mkdir(parents=True)
        (Path(path) / "state.bin").write_bytes(bytes(self.size))
        time.sleep(self.seconds)

    def load(self, path: str) -> None:
        self.loaded = len((Path(path) / "state.bin").read_bytes())


def test_a_checkpoint_is_timed_sized_and_removed(node_checkpoints, tmp_path, monkeypatch):
    monkeypatch.delenv("DLPERF_PLANT_SAVE", raising=False)
    where, ckpt, barriers = tmp_path / "ckpt", Files(4096, 0.05), []
    got = node_checkpoints.time_checkpoint(str(where), ckpt, 0, lambda: barriers.append(1), lambda xs: [xs, [0.01, 0.0]])
    assert got["save_seconds"] >= 0.05 and got["save_rank"] == 0 and got["load_rank"] in (0, 1)
    assert got["bytes"] == 4096 and got["format"] == "files" and got["dir"] == str(where) and len(got["ranks"]) == 2
    assert ckpt.loaded == 4096 and not where.exists() and len(barriers) == 3  # before, between, after


def test_a_planted_factor_makes_every_save_that_much_longer(node_checkpoints, tmp_path, monkeypatch):
    monkeypatch.setenv("DLPERF_PLANT_SAVE", "3")
    got = node_checkpoints.time_checkpoint(str(tmp_path / "c"), Files(10, 0.1), 0, lambda: None, lambda xs: [xs])
    assert got["save_seconds"] == pytest.approx(0.3, abs=0.08)
    monkeypatch.setenv("DLPERF_PLANT_SAVE", "0.5")
    with pytest.raises(SystemExit, match="DLPERF_PLANT_SAVE=0.5: expected a factor of 1 or more"):
        node_checkpoints.time_checkpoint(str(tmp_path / "d"), Files(10), 0, lambda: None, lambda xs: [xs])


def test_the_slowest_rank_gives_the_figures(node_checkpoints):
    from pytest_dlperf.node.workloads import steplog

    got = steplog.checkpoint_figures([[0.5, 0.2], [0.7, 0.1], [0.6, 0.4]], "torch.distributed.checkpoint", 100, "/c")
    assert (got["save_seconds"], got["save_rank"], got["load_seconds"], got["load_rank"]) == (0.7, 1, 0.4, 2)


@pytest.mark.parametrize("mode, given, dirs, shared, want", [
    ("on", "", ["/r/n0"], False, "/r/n0/checkpoint"),  # one node: its run directory
    ("on", "", ["/r/n0", "/r/n1"], True, "/r/n0/checkpoint"),  # nodes that share a filesystem: node 0's
    ("on", "", ["/r/n0", "/r/n1"], False, ""),  # nodes that share none, no directory given: no checkpoint
    ("on", "/shared", ["/r/n0", "/r/n1"], False, "/shared/dlperf-t"),  # the user's shared directory, the launch's own
    ("off", "/shared", ["/r/n0"], True, ""),
])
def test_where_a_launch_saves(mode, given, dirs, shared, want):
    m = Measurement(2, 3, 1, 60, checkpoint=mode, checkpoint_dir=given)
    assert checkpoint_dir(m, dirs, "dlperf-t", shared) == want


def run_with(seconds: float | None) -> RunRecord:
    meta = {} if seconds is None else {"checkpoint": {"save_seconds": seconds / 2, "load_seconds": seconds / 2,
                                                      "bytes": 10, "format": "f"}}
    return RunRecord(0, meta, [], [], {}, 10.0)


def test_auto_keeps_a_cheap_checkpoint_and_stops_a_dear_one_saying_so():
    said: list[str] = []
    cps, m = Checkpoints(said=said.append), Measurement(2, 3, 1, 60, checkpoint="auto")
    assert cps.measurement("cheap", m).checkpoint == "on" and cps.measurement("dear", m).checkpoint == "on"
    cps.took("cheap", m, run_with(AUTO_SHARE * 10 - 0.01), 10.0)
    cps.took("dear", m, run_with(3.0), 10.0)
    assert cps.measurement("cheap", m).checkpoint == "on" and cps.measurement("dear", m).checkpoint == "off"
    assert len(said) == 1 and "dlperf dear: its checkpoint took 3.0 s of the 10.0 s launch (30.0%, over 10%)" in said[0]
    cps.took("none", m, run_with(None), 10.0)  # took none (an engine that does not): the next launch asks again
    assert "none" not in cps.later and cps.measurement("none", m).checkpoint == "on"
    assert Checkpoints().measurement("x", Measurement(2, 3, 1, 60, checkpoint="off")).checkpoint == "off"


def test_a_case_has_checkpoint_figures_only_where_every_launch_took_one():
    case = CaseSpec("resnet50", "fp32", 2, 32, "tiny", Topology(1, 1))
    m = Measurement(2, 3, 1, 60)
    save = metrics.get("checkpoint_save")
    both = [run_with(1.0), run_with(2.0)]
    assert save.taken_from(both, case) == (both, "")
    assert [save.per_launch(r, case, m) for r in both] == [0.5, 1.0]
    kept, why = save.taken_from([run_with(1.0), run_with(None)], case)
    assert kept == [] and "1 of 2 launches took a checkpoint" in why and "--dlperf-checkpoint on" in why
    with pytest.raises(NotMeasured, match="took no checkpoint"):
        save.per_launch(run_with(None), case, m)
    assert metrics.get("checkpoint_size").per_launch(run_with(1.0), case, m) == 10


def test_a_relative_checkpoint_dir_is_a_usage_error(tmp_path):
    r = run_suite(*TINY_ENGINE, *SMALL_CASE, "--dlperf-checkpoint-dir", "ckpts", f"--dlperf-report={tmp_path}")
    assert r.returncode == pytest.ExitCode.USAGE_ERROR, r.stdout + r.stderr
    assert "--dlperf-checkpoint-dir ckpts: give an absolute path" in r.stderr and "Traceback" not in r.stderr


def test_a_directory_that_cannot_be_written_fails_the_case_in_one_line(tmp_path):
    r = run_suite(*TINY_ENGINE, *SMALL_CASE, *QUICK_PROBES, "--dlperf-nodes", "1", "--dlperf-iters", "2",
                  "--dlperf-repeats", "1", f"--dlperf-report={tmp_path / 'report'}", "--dlperf-checkpoint-dir=/proc/nope")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "the checkpoint could not be written at /proc/nope/dlperf-" in r.stdout, r.stdout
    assert "No such file or directory: '/proc/nope'; give --dlperf-checkpoint-dir a directory every node can write" in r.stdout
    assert "Traceback" not in r.stdout + r.stderr


@pytest.mark.slow  # a 3x slower save: no host's move reaches it; 10 s or more alone
def test_a_slower_save_is_worse_on_checkpoint_save_and_not_on_throughput(tmp_path):
    """A/B on the tiny engine: the candidate's every save planted 3x longer (a sleep in the save, DLPERF_PLANT_SAVE).
    Its checkpoint save time is WORSE, failing the session; throughput and the load are not."""
    report = tmp_path / "report"
    r = run_suite(*TINY_ENGINE, *SMALL_CASE, *QUICK_PROBES, "--dlperf-nodes", "1", "--dlperf-iters", "4",
                  f"--dlperf-report={report}", f"--dlperf-baseline-dir={tmp_path / 'b'}",
                  "--dlperf-candidate", "env=DLPERF_PLANT_SAVE=3", "--dlperf-ab-max-pairs", "6",
                  "--dlperf-checkpoint", "on", env={"TINY_STEP_SECONDS": "0.05", "TINY_CHECKPOINT_SECONDS": "0.05"})
    assert r.returncode == 1, r.stdout + r.stderr
    doc = json.loads((report / "results.json").read_text())
    (case,) = doc["ab"]["cases"].values()
    save, load = case["metrics"]["checkpoint_save"], case["metrics"]["checkpoint_load"]
    assert save["verdict"] == "worse" and save["pairs"] <= 6 and 2.5 < save["ratio"] < 3.5, save
    assert case["verdict"] != "slower" and load["verdict"] != "worse", case
    assert "checkpoint save time WORSE" in r.stdout, r.stdout
    (result,) = doc["cases"]
    assert result["runs"][0]["meta"]["checkpoint"]["format"] == "tiny"
