"""Every backend behind one seam trains for real on the local cluster: TensorFlow (MultiWorkerMirrored,
a TF_CONFIG per worker), PaddlePaddle (paddle.distributed.launch), and DDP's BERT and ArcFace rows.
A backend whose framework a node lacks is skipped with the install line; one whose versions differ fails."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from pytest_dlperf.nodechecks.frameworks import FrameworkCheck

from . import census, suite
from .frameworks import ensure
from .procs import tagged_processes

# trains TensorFlow, Paddle, Horovod and DDP for real: not in the quick tier (tests/quick.sh; docs/testing.md)
pytestmark = pytest.mark.real

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
TINY = ["--dlperf-precision", "fp32", "--dlperf-batch-size", "2", "--dlperf-image-size", "32",
        "--dlperf-warmup-iters", "1", "--dlperf-iters", "2", "--dlperf-repeats", "1", "--dlperf-timeout", "300",
        *suite.QUICK_PROBES]  # no test here judges the hardware probe


def run_suite(report: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return suite.run_suite(f"--dlperf-report={report}", f"--dlperf-baseline-dir={report.parent / 'no-baselines'}",
                           "--dlperf-baseline-missing", "skip", *TINY, *args, env=env, timeout=900)


def cases(report: Path) -> dict[str, dict]:
    return {c["case"]["id"]: c for c in json.loads((report / "results.json").read_text())["cases"]}


def recorded_into(store: Path) -> tuple[str, ...]:
    """A training test's session records its cases (no launch more): each backend's own profile is checked."""
    return (f"--dlperf-baseline-dir={store}", "--update-baselines")


def recorded_as(store: Path, profile_part: str, keys: list[str]) -> None:
    """The recording is the backend's own profile (``cpu-...<profile_part>``: its framework's major version), one
    entry per case under the backend's name; a later session is judged against it as every engine's is (the gate
    reads the step log's figures alike: tests/test_gate_plugin.py on the tiny engine)."""
    (path,) = store.glob("*.json")
    assert path.name.startswith("cpu-") and path.name.endswith(f"{profile_part}.json"), path.name
    doc = json.loads(path.read_text())
    assert sorted(doc["entries"]) == keys and all(len(e["runs"]["throughput"]) == 1 for e in doc["entries"].values())


def test_tf_trains_two_workers_each_with_its_tf_config(tmp_path):
    ensure("tensorflow", "tf")
    report, tmp = tmp_path / "report", tmp_path / "tmp"
    tmp.mkdir()
    # one launch: the TFRecord shards of a dataset --dlperf-data-make builds, read through tf.data, which trains as
    # the synthetic case does and more (that case trains in the dry-run's lines pasted into shells, below, and over
    # SSH; the synthetic/real table is the engines' own: tests/test_real_data.py)
    r = run_suite(report, "--backend", "tf", "--dlperf-model", "resnet50", "-k", "2n1g", "--dlperf-data", "real",
                  f"--dlperf-data-dir={tmp_path / 'imagenet'}", "--dlperf-data-make", *recorded_into(tmp_path / "store"),
                  env={"TMPDIR": str(tmp)})
    assert r.returncode == 0, r.stdout + r.stderr
    recorded_as(tmp_path / "store", "-tf2", ["tf/resnet50-fp32-bs2-32px-noxla-real-2n1g"])
    (case,) = cases(report).values()
    assert case["case"]["id"] == "resnet50-fp32-bs2-32px-noxla-real-2n1g"
    (run,) = case["runs"]
    got = run["meta"]["input"]
    assert got["format"] == "tfrecord" and got["shards"] == 4 and len(got["wait_seconds"]) == 2
    assert len(got["loader_samples_per_s"]) == 2 and case["metrics"]["loader_throughput"]["value"] > 0
    # autograph's generated modules (removed only at an exit the workload skips) go to each worker's
    # own temporary directory, which the worker removes: none are left in the node's /tmp
    assert sorted(p.name for p in tmp.rglob("__autograph_generated_file*")) == []
    assert sorted(p.name for p in tmp_path.rglob("tmp-*") if p.is_dir()) == []
    assert case["world_size_seen"] == 2
    assert run["meta"]["frameworks"]["tensorflow"].startswith("2.") and run["meta"]["xla"] == "off"
    # tf.train.Checkpoint after the window: the chief's in node 0's run directory, the other worker's removed
    ck = run["meta"]["checkpoint"]
    assert ck["format"] == "tf.train.Checkpoint" and len(ck["ranks"]) == 2 and ck["bytes"] > 4 * run["meta"]["parameters"]
    assert not Path(ck["dir"]).exists() and not Path(ck["dir"] + ".worker1").exists()
    assert len(run["commands"]) == 2 and all('"127.0.0.2:' in c and "TF_CONFIG" in c for c in run["commands"])
    env = json.loads((report / "results.json").read_text())["environment"]
    assert set(env["node_frameworks"]) == {"local0", "local1"}
    assert env["node_frameworks"]["local0"]["tensorflow"] == run["meta"]["frameworks"]["tensorflow"]
    assert "resnet50 fp32 bs2/device 32px noxla real data (tf)" in r.stdout
    assert tagged_processes(str(report)) == []


def test_tf_workers_that_stop_synchronising_fail(tmp_path):
    ensure("tensorflow", "tf")
    report = tmp_path / "report"
    r = run_suite(report, "--backend", "tf", "--dlperf-model", "resnet50", "-k", "2n1g", env={"DLPERF_FAULT": "nosync"})
    assert r.returncode == 1, r.stdout + r.stderr
    (failure,) = json.loads((report / "results.json").read_text())["failures"].values()
    assert "the ranks' parameters disagree after the last step" in failure, failure


def test_paddle_trains_resnet50_and_plsc_arcface_over_two_nodes(tmp_path):
    ensure("paddle", "paddle")
    report = tmp_path / "report"
    # ResNet-50 on real data (PaddleClas' list of the dataset --dlperf-data-make builds, a paddle.io.DataLoader), which
    # trains as its synthetic case does and more (that case trains in the dry-run's lines pasted into shells, below,
    # and over SSH), and PLSC's ArcFace: two launches
    r = run_suite(report, "--backend", "paddle", "--dlperf-model", "resnet50,arcface", "-k",
                  "2n1g and not arcface-fp32-bs2-32px-cls4096-real and not resnet50-fp32-bs2-32px-2n1g",
                  "--dlperf-data", "synthetic,real", f"--dlperf-data-dir={tmp_path / 'imagenet'}", "--dlperf-data-make",
                  *recorded_into(tmp_path / "store"))
    assert r.returncode == 0, r.stdout + r.stderr
    recorded_as(tmp_path / "store", "-paddle3", ["paddle/arcface-fp32-bs2-32px-cls4096-2n1g",
                                                 "paddle/resnet50-fp32-bs2-32px-real-2n1g"])
    found = cases(report)
    assert set(found) == {"resnet50-fp32-bs2-32px-real-2n1g", "arcface-fp32-bs2-32px-cls4096-2n1g"}
    real = found["resnet50-fp32-bs2-32px-real-2n1g"]
    got = real["runs"][0]["meta"]["input"]
    assert got["format"] == "jpeg" and got["workers"] == 1 and got["samples"] == 512 and len(got["wait_seconds"]) == 2
    assert real["metrics"]["input_wait"]["value"] > 0
    for case in found.values():
        (run,) = case["runs"]
        assert case["world_size_seen"] == 2 and run["meta"]["frameworks"]["paddle"].startswith("3.")
        ck = run["meta"]["checkpoint"]  # paddle.save on rank 0, paddle.load on both
        assert ck["format"] == "paddle.save" and len(ck["ranks"]) == 2 and ck["bytes"] > 4 * run["meta"]["parameters"]
        assert all("paddle.distributed.launch" in c and "--master 127.0.0.1:" in c for c in run["commands"])
    assert found["arcface-fp32-bs2-32px-cls4096-2n1g"]["runs"][0]["meta"]["num_classes"] == 4096
    assert tagged_processes(str(report)) == []


def test_ddp_has_bert_and_arcface_rows(tmp_path):
    report = tmp_path / "report"
    r = run_suite(report, "--dlperf-model", "bert-base,arcface", "-k", "1n1g")
    assert r.returncode == 0, r.stdout + r.stderr
    found = cases(report)
    assert set(found) == {"bert-base-fp32-bs2-seq32-1n1g", "arcface-fp32-bs2-32px-cls4096-1n1g"}
    assert found["bert-base-fp32-bs2-seq32-1n1g"]["runs"][0]["meta"]["parameters"] > 100_000_000  # BERT-base


MISSING = """
import pytest
from pytest_dlperf.launchers.torchrun import TorchrunLauncher


class Elsewhere(TorchrunLauncher):
    name = "elsewhere"
    framework = "dlperf_no_such_framework"

    def install_hint(self):
        return "pip install dlperf-no-such-framework"


@pytest.hookimpl
def pytest_dlperf_make_launcher(config, backend):
    return Elsewhere() if backend == "elsewhere" else None


@pytest.hookimpl
def pytest_dlperf_backends(config):
    return ["elsewhere"]
"""


def test_a_node_without_the_framework_skips_with_the_install_line(pytester: pytest.Pytester):
    pytester.makeconftest(MISSING)
    pytester.makepyfile(test_suite="def test_train(dlperf_case, dlperf):\n    dlperf.run(dlperf_case)\n")
    r = pytester.runpytest_subprocess("-q", "-rs", "-p", "no:cacheprovider", "--backend", "elsewhere",
                                      "--dlperf-model", "resnet50", "-k", "2n1g",
                                      f"--dlperf-report={pytester.path / 'rep'}")
    assert r.ret == 0, r.stdout.str()
    r.assert_outcomes(skipped=1)
    assert ("--backend elsewhere: dlperf_no_such_framework is not installed on local0, local1: install it "
            "there with pip install dlperf-no-such-framework") in r.stdout.str()
    assert not list((pytester.path / "rep").glob("runs/*"))  # nothing started


def test_versions_that_differ_between_nodes_fail_naming_them():
    check = FrameworkCheck("paddle", found={"n0": {"dist": "paddlepaddle", "version": "3.3.1"},
                                            "n1": {"dist": "paddlepaddle-gpu", "version": "3.2.0"}})
    outcome, why = check.problem("pip install x")
    assert outcome == "fail"
    assert "paddle differs between nodes (n0 paddlepaddle 3.3.1, n1 paddlepaddle-gpu 3.2.0)" in why
    assert FrameworkCheck("paddle", found={"n0": check.found["n0"], "n1": check.found["n0"]}).problem("x") is None


@pytest.mark.parametrize("backend, module", [("tf", "tensorflow"), ("paddle", "paddle")])
def test_dryrun_lines_pasted_into_shells_train_the_case(tmp_path, backend, module):
    ensure(module, "tf" if backend == "tf" else "paddle")
    report = tmp_path / "report"
    r = run_suite(report, "--backend", backend, "--dlperf-model", "resnet50", "-k", "2n1g", "--dlperf-dryrun")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [ln.split(": ", 1)[1] for ln in r.stdout.splitlines() if ln.startswith(("local0: ", "local1: "))]
    assert len(lines) == 2
    with census.shell_launch("resnet50-2n1g", backend, (module,), 2):
        shells = [subprocess.Popen(["bash", "-c", line], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                  for line in lines]
        outs = [s.communicate(timeout=600)[0] for s in shells]
    assert [s.returncode for s in shells] == [0, 0], outs
    steps = next((report / "nodes").glob("*/local0/steps.jsonl"))
    records = [json.loads(x) for x in steps.read_text().splitlines()]
    assert records[0]["world_size"] == 2 and records[0]["model"] == "resnet50"
    assert records[-1]["kind"] == "end" and len(records[-1]["param_digests"]) == 2
