"""External benchmarks (launchers/external.py): a program the project did not write, launched over
the cluster with torchrun or horovodrun, its output read by an importer's parser, then measured
and gated as the built-in workloads are. The program is examples/external/user_train.py, a user's
own DDP/Horovod training script that prints DLLogger or Horovod-benchmark lines, on real torch; the gate's
and the parser's mechanisms on a standard-library user's script of the tiny engine (tests/tiny/user_train.py),
launched on each node as it is."""
from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from pytest_dlperf.launchers.external import ExternalBenchmark

from . import suite
from .frameworks import ensure, ensure_horovod
from .procs import tagged_processes

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "external"
SCRIPT = EXAMPLE / "user_train.py"
TINY_SCRIPT = ROOT / "tests" / "tiny" / "user_train.py"


def tiny_suite(directory: Path, script: Path = TINY_SCRIPT, fmt: str = "dllogger") -> Path:
    """A suite of the user's standard-library script (``user-train``), its output read as ``fmt``; the example's
    test module. Its "framework" is a module of the standard library every node has (json)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "conftest.py").write_text(textwrap.dedent(f"""
        from pytest_dlperf.launchers.external import ExternalBenchmark, hookimpls
        USER_TRAIN = ExternalBenchmark(name="user-train", launch="per-node", framework="json", files=({str(script)!r},),
                                       models=("resnet18",), sizes={{"cpu": {{"resnet18": (8, 32)}}}}, format={fmt!r},
                                       warmup_iters=5, program=("{{script}}", "--arch", "{{model_name}}", "--batch-size",
                                                                "{{batch_size}}", "--warmup", "5", "--iters", "30"))
        pytest_dlperf_backends, pytest_dlperf_make_launcher = hookimpls(USER_TRAIN)
    """))
    (directory / "test_it.py").write_text((EXAMPLE / "test_user_train.py").read_text())
    return directory


def run(suite_dir: Path, report: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return suite.run_suite(f"--dlperf-report={report}", "--dlperf-timeout", "300", *args, suite=suite_dir, env=env,
                           timeout=900)


def cases(report: Path) -> dict[str, dict]:
    return {c["case"]["id"]: c for c in json.loads((report / "results.json").read_text())["cases"]}


@pytest.mark.parametrize("change, words", [
    (dict(format="nvidia-smi"), "format 'nvidia-smi' has no parser; one of dlperf-tf2, tf_cnn"),
    (dict(launch="mpirun"), "launch 'mpirun'; one of torchrun, horovodrun, per-node"),
    (dict(program=("{script}", "--bs", "{batchsize}")), "{batchsize} in '{batchsize}' is not a placeholder"),
    (dict(files=("/nonexistent/train.py",)), "file /nonexistent/train.py does not exist"),
    (dict(files=()), "the program names {script} but files is empty"),
    (dict(precision_args={"fp16": ("--fp16",)}), "precision_args for fp16: precisions are fp32, amp"),
    (dict(sizes={"cpu": {"resnet50": (8, 32)}}), "sizes['cpu'] must be 'cpu' or 'gpu' with models of ('resnet18',)"),
])
def test_a_spec_that_cannot_work_is_refused_saying_what_to_change(change, words):
    spec = dict(name="x", program=("{script}", "--batch-size", "{batch_size}"), format="dllogger",
                files=(SCRIPT,), models=("resnet18",), sizes={"cpu": {"resnet18": (8, 32)}})
    with pytest.raises(ValueError) as err:
        ExternalBenchmark(**{**spec, **change})
    assert words in str(err.value)


def test_dryrun_shows_the_program_under_torchrun_per_node_and_under_horovodrun_on_node_0(tmp_path):
    r = run(EXAMPLE, tmp_path / "report", "--backend", "user-train,user-train-hvd", "--dlperf-dryrun",
            "--dlperf-precision", "amp")
    assert r.returncode == 0, r.stdout + r.stderr
    out = " ".join(r.stdout.split())
    assert ("--nnodes 2 --node_rank 1 --nproc_per_node 1 --master_addr 127.0.0.1 --master_port" in out)
    torch_line = next(line for line in r.stdout.splitlines() if line.startswith("local1:"))
    assert torch_line.endswith("user_train.py --arch resnet18 --batch-size 8 --image-size 32 --warmup 5 --iters 30 "
                               "--amp --dist torch --print dllogger")
    hvd = [line for line in r.stdout.splitlines() if "horovod.runner.launch -np 2 -H 127.0.0.1:1,127.0.0.2:1" in line]
    assert len(hvd) == 1 and hvd[0].startswith("local0:") and "--dist horovod --print horovod" in hvd[0]


@pytest.mark.slow  # a version twice as slow: no host's move hides it
def test_a_users_training_script_is_launched_measured_recorded_and_a_slower_version_fails(tmp_path):
    """Record the user's script at 1n1g, then gate a version of it that is twice as slow (two launches a
    side: a t test has a spread on each side, and a halving stands far outside it), its changed file named.
    On the tiny engine's script: torch trains under torchrun in the next test."""
    store = tmp_path / "baselines"
    rec = run(tiny_suite(tmp_path / "suite"), tmp_path / "rec", "--backend", "user-train", *suite.QUICK_PROBES,
              f"--dlperf-baseline-dir={store}", "--update-baselines", "--dlperf-repeats", "2", "-k", "1n1g")
    assert rec.returncode == 0, rec.stdout + rec.stderr
    found = cases(tmp_path / "rec")
    assert set(found) == {"resnet18-fp32-bs8-32px-1n1g"}
    for case in found.values():
        assert len(case["runs"]) == 2 and case["median"] > 0
        for r in case["runs"]:
            meta = r["meta"]
            assert meta["parsed"]["format"] == "dllogger" and len(meta["parsed"]["rates"]) == 30
            assert "json" in meta["frameworks"]  # the preflight probe's version of the declared framework
            assert "user_train.py --arch resnet18" in r["commands"][0]
    (written,) = [p.name for p in store.glob("*.json")]
    entries = json.loads((store / written).read_text())["entries"]
    assert set(entries) == {"user-train/resnet18-fp32-bs8-32px-1n1g"}

    # a slower release of the script: its file changed, which the recording's software identity names
    script = tmp_path / "slower" / "user_train.py"
    script.parent.mkdir()
    script.write_text(TINY_SCRIPT.read_text().replace('os.environ.get("USER_TRAIN_SLOWDOWN", "0")',
                                                      'os.environ.get("USER_TRAIN_SLOWDOWN", "0.5")'))
    slow = run(tiny_suite(tmp_path / "slower", script), tmp_path / "slow", "--backend", "user-train",
               *suite.QUICK_PROBES, f"--dlperf-baseline-dir={store}", "--dlperf-repeats", "2", "-k", "1n1g")
    assert slow.returncode == 1, slow.stdout + slow.stderr
    (case,) = cases(tmp_path / "slow").values()
    assert case["verdict"]["throughput"]["status"] == "regression", case["verdict"]
    assert "REGRESSION" in slow.stdout and "file workload:user_train.py " in slow.stdout
    assert tagged_processes(str(tmp_path)) == []


@pytest.mark.real  # torch under torchrun
def test_a_users_training_script_trains_two_nodes_under_torchrun_and_is_recorded(tmp_path):
    """The script's 2n1g case on real torch: torchrun on each node, the program's DLLogger lines read from node
    0's output, the case recorded under the framework's profile (no speed is judged)."""
    store = tmp_path / "baselines"
    r = run(EXAMPLE, tmp_path / "rec", "--backend", "user-train", f"--dlperf-baseline-dir={store}",
            "--update-baselines", "--dlperf-repeats", "1", "-k", "2n1g")
    assert r.returncode == 0, r.stdout + r.stderr
    (case,) = cases(tmp_path / "rec").values()
    assert case["case"]["id"] == "resnet18-fp32-bs8-32px-2n1g" and case["median"] > 0
    (launch,) = case["runs"]
    assert launch["meta"]["parsed"]["format"] == "dllogger" and len(launch["meta"]["parsed"]["rates"]) == 30
    assert launch["meta"]["frameworks"]["torch"].startswith("2.")  # the preflight probe's version
    assert len(launch["commands"]) == 2, launch["commands"]
    assert all("torch.distributed.run" in c and "user_train.py --arch resnet18" in c for c in launch["commands"])
    (written,) = [p.name for p in store.glob("*.json")]
    assert written.startswith("cpu-") and written.endswith("-torch2.json"), written
    entries = json.loads((store / written).read_text())["entries"]
    assert set(entries) == {"user-train/resnet18-fp32-bs8-32px-2n1g"}
    assert tagged_processes(str(tmp_path)) == []


def test_output_the_parser_cannot_read_fails_the_case_naming_the_node_and_the_format(tmp_path):
    r = run(tiny_suite(tmp_path / "suite", fmt="tf_cnn"), tmp_path / "report", "--backend", "user-train",
            *suite.QUICK_PROBES, "--dlperf-repeats", "1", "-k", "1n1g", f"--dlperf-baseline-dir={tmp_path / 'none'}")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "resnet18-fp32-bs8-32px-1n1g: node local0's output (" in r.stdout
    assert "is not tf_cnn output: no 'total images/sec: X' lines: not a tf_cnn log" in r.stdout
    assert tagged_processes(str(tmp_path)) == []


def test_an_unknown_external_backend_is_a_usage_error_listing_the_suites_own(tmp_path):
    r = run(EXAMPLE, tmp_path / "report", "--backend", "user-trian", "--dlperf-dryrun")
    assert r.returncode == 4, r.stdout + r.stderr
    assert "unknown 'user-trian'" in r.stderr and "user-train, user-train-hvd" in r.stderr


@pytest.fixture(scope="module")
def horovod():
    ensure("tensorflow", "tf")
    ensure_horovod()


@pytest.mark.real  # torch under horovodrun
def test_a_horovod_script_runs_under_horovodrun_and_its_benchmark_lines_are_read(horovod, tmp_path):
    r = run(EXAMPLE, tmp_path / "report", "--backend", "user-train-hvd", "--dlperf-repeats", "1", "-k", "2n1g",
            f"--dlperf-baseline-dir={tmp_path / 'none'}")
    assert r.returncode == 0, r.stdout + r.stderr
    found = cases(tmp_path / "report")
    two = found["resnet18-fp32-bs8-32px-2n1g"]
    assert two["world_size_seen"] == 2  # "Total img/sec on 2 GPU(s)": the program saw both ranks
    (run_,) = two["runs"]
    assert run_["meta"]["parsed"]["format"] == "horovod" and run_["meta"]["frameworks"]["horovod"] == "0.28.1"
    (command,) = run_["commands"]
    assert "horovod.runner.launch -np 2 -H 127.0.0.1:1,127.0.0.2:1 --gloo" in command
    assert two["median"] > 0


def test_per_node_launch_runs_the_program_on_every_node_told_its_place(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(textwrap.dedent(f"""
        from pytest_dlperf.launchers.external import ExternalBenchmark, hookimpls
        PER_NODE = ExternalBenchmark(name="per-node", launch="per-node", files=({str(SCRIPT)!r},), models=("resnet18",),
                                     sizes={{"cpu": {{"resnet18": (4, 32)}}}}, format="tf_cnn",
                                     program=("{{script}}", "--worker", "{{node_rank}}/{{nnodes}}",
                                              "--ps", "{{master_addr}}:{{master_port}}"))
        pytest_dlperf_backends, pytest_dlperf_make_launcher = hookimpls(PER_NODE)
    """))
    (suite / "test_it.py").write_text((EXAMPLE / "test_user_train.py").read_text())
    r = run(suite, tmp_path / "report", "--backend", "per-node", "-k", "2n1g", "--dlperf-dryrun")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = {line.split(":", 1)[0]: line for line in r.stdout.splitlines() if line.startswith("local")}
    assert set(lines) == {"local0", "local1"}
    for rank, name in enumerate(("local0", "local1")):
        assert f"user_train.py --worker {rank}/2 --ps 127.0.0.1:" in lines[name]
        assert "torch.distributed.run" not in lines[name] and "DLPERF_RUN_TAG=" in lines[name]


def test_only_the_precisions_a_program_declares_run():
    bench = ExternalBenchmark(name="x", program=("{script}",), format="dllogger", files=(SCRIPT,),
                              models=("resnet18",), sizes={"gpu": {"resnet18": (8, 32)}})
    assert bench.launcher().precisions == ("fp32",)  # no amp case that would run the fp32 command


def test_a_report_directory_used_again_holds_each_launchs_own_output(tmp_path):
    """The same --dlperf-report a second time (a self-hosted runner's workspace, a user's command run again): each
    launch's node log is its own, not appended to the last session's at the same path, which read as one log of
    two runs and failed the case."""
    report = tmp_path / "report"
    for _ in range(2):
        r = run(tiny_suite(tmp_path / "suite"), report, "--backend", "user-train", *suite.QUICK_PROBES,
                "--dlperf-repeats", "1", "-k", "1n1g")
        assert r.returncode == 0, r.stdout + r.stderr
        (case,) = cases(report).values()
        (launch,) = case["runs"]
        (log,) = launch["logs"].values()
        assert Path(log).read_text().count('"step": []') == 1, log  # the script's one summary record
