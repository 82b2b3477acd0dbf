"""Real distributed training on the local cluster: results, failures, timeouts, Ctrl-C, no orphans."""
from __future__ import annotations

import json
import math
import os
import re
import shlex
import signal
import subprocess
from pathlib import Path

import pytest

from . import census, suite
from .procs import signal_once_running, tagged_processes

ROOT = Path(__file__).resolve().parent.parent
SMALL = ["--dlperf-model", "resnet50", "--dlperf-precision", "fp32", "--dlperf-batch-size", "2", "--dlperf-image-size", "32",
         "--dlperf-warmup-iters", "1", "--dlperf-iters", "3", "--dlperf-repeats", "2"]
TINY = [*suite.TINY_ENGINE, *suite.QUICK_PROBES]


def run_suite(report: Path, *args: str, env: dict | None = None, timeout: float = 300,
              tiny: bool = False) -> subprocess.CompletedProcess:
    """The suite on SMALL; ``tiny``: on the tiny engine (tests/tiny), for the harness's mechanisms."""
    return suite.run_suite(f"--dlperf-report={report}", *SMALL, *(TINY if tiny else ()), *args, env=env,
                           timeout=timeout)


@pytest.mark.real  # trains with torch
def test_two_nodes_really_train_and_leave_nothing(tmp_path):
    report = tmp_path / "report"
    r = run_suite(report, "-k", "2n1g", "--dlperf-repeats", "1")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((report / "results.json").read_text())
    (case,) = doc["cases"]
    assert case["case"]["id"] == "resnet50-fp32-bs2-32px-2n1g"
    assert case["world_size_seen"] == 2
    assert len(case["throughputs"]) == 1 and all(t > 0 for t in case["throughputs"])
    for run in case["runs"]:
        assert len(run["steps"]) == 4  # warmup 1 + iters 3
        assert all(len(s["rank_times"]) == 2 and s["samples"] == 4 for s in run["steps"])
        assert run["meta"]["nnodes"] == 2 and run["meta"]["backend"] == "gloo"
        assert run["meta"]["wrapper"] == "DistributedDataParallel"
        assert run["meta"]["host_malloc"].startswith("glibc: ")  # freed memory kept for the next step
        assert run["meta"]["first_step"]["start"] == "direct"  # time to first step holds no agent's start
        # two direct starts (the local cluster's default), node ranks 0 and 1, meeting on 127.0.0.1 at one port
        assert len(run["commands"]) == 2 and all("/rankstart.py --nnodes 2 " in c for c in run["commands"])
        assert "--node-rank 0" in run["commands"][0] and "--node-rank 1" in run["commands"][1]
        assert all("--master-addr 127.0.0.1" in c for c in run["commands"])
        assert set(run["logs"]) == {"local0", "local1"}
        # after the window, a DCP checkpoint of the model and its optimizer in node 0's run directory (the local
        # cluster's nodes share a filesystem), every rank timed, sized (parameters and momentum: twice their bytes)
        ck = run["meta"]["checkpoint"]
        assert ck["format"] == "torch.distributed.checkpoint" and len(ck["ranks"]) == 2, ck
        assert 2 * 4 * run["meta"]["parameters"] < ck["bytes"] < 2.1 * 4 * run["meta"]["parameters"], ck
        assert ck["save_seconds"] > 0 and ck["load_seconds"] > 0 and not Path(ck["dir"]).exists()
        assert all(f"--checkpoint-dir {ck['dir']} " in c for c in run["commands"]) and "/local0/" in ck["dir"]
    assert case["metrics"]["checkpoint_save"]["value"] == ck["save_seconds"]  # one launch: every launch took one
    # DLPerf's shape, per precision
    entry = doc["summary"]["fp32"]["resnet50"]["2n1g"]
    assert set(entry) >= {"average_speed", "median_speed", "speedup", "batch_size_per_device"}
    assert doc["environment"]["frameworks"] == ["torch 2.13.0+cpu"]
    assert "dlperf results" in r.stdout and "2n1g" in r.stdout
    # MFU: the workload's FLOP count agrees with one by hand; against the probe's sgemm rate of 2 threads
    fps = resnet50_train_flops(32, batch=2) / 2
    assert all(run["meta"]["flops_per_sample"] == pytest.approx(fps, rel=0.01) for run in case["runs"])
    mfu = case["mfu"]
    assert mfu["peak"]["label"] == "probed sgemm x 2 threads" and 0 < mfu["mfu"] < 1
    probes = [doc["environment"]["hardware_fingerprints"]["nodes"][n]["compute"]["best"] for n in ("local0", "local1")]
    assert mfu["peak"]["flops"] == pytest.approx(sum(probes) * 1e9)
    assert mfu["mfu"] == pytest.approx(case["median"] * fps / mfu["peak"]["flops"], rel=0.01)
    assert re.search(r"2n1g: MFU \d+\.\d%: .* GFLOP/s of .* GFLOP/s, probed sgemm x 2 threads; 0\.50\d GFLOP/sample", r.stdout)
    assert tagged_processes(str(report)) == []


def resnet50_train_flops(side: int, batch: int, classes: int = 1000) -> float:
    """ResNet-50 v1.5's forward and backward FLOPs by hand (2 per multiply-add): each convolution and
    the classifier three times (forward, input and weight gradients) but the stem's input gradient."""
    fwd = 0.0
    size = -(-side // 2)  # stem: 7x7/2, 3 -> 64
    stem = 2 * 3 * 64 * 49 * size * size
    size = -(-size // 2)  # max pool /2
    inplanes = 64
    for planes, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            s = stride if i == 0 else 1
            out = -(-size // s)
            fwd += 2 * inplanes * planes * size * size  # 1x1
            fwd += 2 * planes * planes * 9 * out * out  # 3x3, stride s
            fwd += 2 * planes * planes * 4 * out * out  # 1x1 up
            if s != 1 or inplanes != planes * 4:
                fwd += 2 * inplanes * planes * 4 * out * out  # downsample 1x1
            inplanes, size = planes * 4, out
    fwd += 2 * 2048 * classes
    return batch * (3 * fwd + 2 * stem)


def test_time_based_window_is_sized_by_the_workload_and_measured_as_it_ran(tmp_path):
    """The window's size follows the warm-up's pace (steplog.time_steps, the loop every workload shares; here the
    tiny engine's): checked against the steps it measured, whatever the host's speed."""
    report = tmp_path / "report"
    r = run_suite(report, "-k", "1n1g", "--dlperf-repeats", "1", "--dlperf-window-seconds", "1.5", tiny=True)
    assert r.returncode == 0, r.stdout + r.stderr
    (case,) = json.loads((report / "results.json").read_text())["cases"]
    (run,) = case["runs"]
    meta, steps = run["meta"], run["steps"]
    warmup, iters = meta["warmup_iters"], meta["iters"]
    assert warmup == 1 and meta["window_seconds"] == 1.5
    assert meta["wrapper"] == "none"  # one rank: nothing to synchronise
    assert len(steps) == warmup + iters and sum(not s["warmup"] for s in steps) == iters
    # sized at the pace of the last warm-up steps (here the only one): enough steps to fill 1.5 s, and never
    # fewer than --dlperf-iters 3.
    pace = min(s["end"] - s["start"] for s in steps[:warmup][-2:])
    assert 0 < pace and iters == max(3, math.ceil(1.5 / pace)), (pace, iters)
    window = meta["window"]["end"] - meta["window"]["start"]
    assert window > 0
    # the first window step starts at the start barrier, the last ends at the end barrier
    assert steps[warmup]["start"] == meta["window"]["start"] and steps[-1]["end"] == meta["window"]["end"]
    assert case["throughputs"][0] == pytest.approx(iters * 2 / window)  # 1 rank x batch 2
    assert all(len(s["rank_times"]) == 1 and s["rank_times"][0] > 0 for s in steps)


def test_a_budget_too_small_keeps_one_launch_and_says_which_cases(tmp_path):
    report = tmp_path / "report"
    r = run_suite(report, "-k", "1n1g", "--dlperf-repeats", "3", "--dlperf-budget", "1", tiny=True)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((report / "results.json").read_text())
    (case,) = doc["cases"]
    assert case["measurement"]["budget"] == 1 and case["measurement"]["min_repeats"] == 1
    assert len(case["runs"]) == 1 and len(case["throughputs"]) == 1  # 1 of 3: the least under a budget
    name = "resnet50-fp32-bs2-32px-1n1g"
    assert doc["environment"]["budget"]["cut"] == {name: {"repeats": 1, "planned": 3}}
    assert f"ran fewer repeats: {name} (1 of 3)" in r.stdout and "over it even so" in r.stdout
    assert f"1 case(s) ran fewer repeats: `{name}` (1 of 3)." in (report / "summary.md").read_text()


def launch_order(report: Path) -> list[str]:
    """Each launch of the session as "topology/repeat", in the order they began."""
    doc = json.loads((report / "results.json").read_text())
    runs = [(r["started_at"], f"{c['case']['topology']}/{r['repeat']}") for c in doc["cases"] for r in c["runs"]]
    return [name for _, name in sorted(runs)]


@pytest.mark.slow
def test_cases_launch_in_rounds_by_default_and_back_to_back_when_asked(tmp_path):
    """Rounds: a case's repeats fall apart in time, so a slow spell of the host is not one case's alone."""
    r = run_suite(tmp_path / "rounds", "--dlperf-iters", "2", tiny=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert launch_order(tmp_path / "rounds") == ["1n1g/0", "2n1g/0", "1n1g/1", "2n1g/1"]
    r = run_suite(tmp_path / "case", "--dlperf-iters", "2", "--dlperf-order", "case", tiny=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert launch_order(tmp_path / "case") == ["1n1g/0", "1n1g/1", "2n1g/0", "2n1g/1"]


def test_in_rounds_a_failing_case_stops_alone_and_fails_in_its_own_test(tmp_path):
    report = tmp_path / "report"
    r = run_suite(report, "--dlperf-iters", "2", "-rA", env={"DLPERF_FAULT": "1:1"}, tiny=True)  # rank 1: 2n1g only
    assert r.returncode == 1, r.stdout + r.stderr
    assert "1 failed, 1 skipped" in r.stdout, r.stdout  # 1n1g: no baseline here
    assert "FAILED suites/test_train.py::test_train[resnet50-fp32-bs2-32px-2n1g]" in r.stdout, r.stdout
    assert launch_order(report) == ["1n1g/0", "1n1g/1"]  # the 2n1g case was not launched again ...
    failed = report / "runs" / "resnet50-fp32-bs2-32px-2n1g"
    assert sorted(p.name for p in failed.iterdir()) == ["r0"]
    doc = json.loads((report / "results.json").read_text())
    (one,) = doc["cases"]  # ... after its one launch, which came between the 1n1g case's two
    starts = sorted(r["started_at"] for r in one["runs"])
    assert starts[0] < (failed / "r0" / "commands.sh").stat().st_mtime < starts[1]
    assert "injected fault on rank 1 at step 1" in r.stdout
    assert tagged_processes(str(report)) == []


def test_cases_measured_in_rounds_but_never_judged_are_reported_so(tmp_path):
    """-x stops the session at the first test's failure: the 2n1g case, measured in the rounds, is in
    the report with its runs and no verdict, and the summary says it was not judged."""
    report, none = tmp_path / "report", tmp_path / "no-baselines"
    none.mkdir()
    r = run_suite(report, "--dlperf-iters", "2", "--dlperf-repeats", "1", "-x", "--dlperf-baseline-missing", "fail",
                  f"--dlperf-baseline-dir={none}", tiny=True)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "1 failed" in r.stdout and "passed" not in r.stdout, r.stdout
    cases = {c["case"]["topology"]: c for c in json.loads((report / "results.json").read_text())["cases"]}
    assert sorted(cases) == ["1n1g", "2n1g"] and len(cases["2n1g"]["throughputs"]) == 1
    assert not cases["2n1g"].get("verdict") and cases["1n1g"]["verdict"]["throughput"]["status"] == "missing"
    assert "1 case(s) measured in rounds were not judged" in r.stdout and "resnet50-fp32-bs2-32px-2n1g" in r.stdout


def test_rank_crash_fails_with_that_ranks_output_and_kills_everything(tmp_path):
    """The tiny engine's rank 1 stops at step 2 (DLPERF_FAULT, as every workload's); torchrun's own process tree
    is stopped whole in the Ctrl-C test below, on torch (the direct start's: tests/test_rankstart.py)."""
    report = tmp_path / "report"
    r = run_suite(report, "-k", "2n1g", "--dlperf-repeats", "1", env={"DLPERF_FAULT": "1:2"}, tiny=True)
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout
    assert "injected fault on rank 1 at step 2" in out
    assert "local1 (exit" in out  # the failing node is named
    assert tagged_processes(str(report)) == []
    assert "resnet50-fp32-bs2-32px-2n1g" in json.loads((report / "results.json").read_text())["failures"]


@pytest.mark.parametrize("fault, why", [("truncate", "is cut off (no newline): the step log is truncated"),
                                        ("garble", "is not JSON")])
def test_a_broken_step_log_fails_the_case_naming_node_and_file(tmp_path, fault, why):
    report = tmp_path / "report"
    r = run_suite(report, "-k", "1n1g", "--dlperf-repeats", "1", env={"DLPERF_STEPLOG_FAULT": fault}, tiny=True)
    assert r.returncode == 1, r.stdout + r.stderr
    failure = json.loads((report / "results.json").read_text())["failures"]["resnet50-fp32-bs2-32px-1n1g"]
    assert "no usable step log from node local0" in failure and "steps.jsonl" in failure, failure
    assert "line 3 " in failure and why in failure, failure  # meta, step 0, then the broken step 1
    assert tagged_processes(str(report)) == []


def test_ranks_that_stop_synchronising_fail_instead_of_scaling_perfectly(tmp_path):
    """DLPERF_FAULT=nosync trains each rank on its own: drift, caught by the digests (the tiny engine keeps each
    rank's gradient to itself; TensorFlow's workers and Horovod's ranks drift for real in their own tests)."""
    report = tmp_path / "report"
    r = run_suite(report, "-k", "2n1g", "--dlperf-repeats", "1", env={"DLPERF_FAULT": "nosync"}, tiny=True)
    assert r.returncode == 1, r.stdout + r.stderr
    failure = json.loads((report / "results.json").read_text())["failures"]["resnet50-fp32-bs2-32px-2n1g"]
    assert "the ranks' parameters disagree after the last step" in failure and "local0" in failure, failure


@pytest.mark.slow
def test_timeout_kills_every_process(tmp_path):
    report = tmp_path / "report"
    r = run_suite(report, "-k", "2n1g", "--dlperf-repeats", "1", "--dlperf-iters", "500", "--dlperf-timeout", "8",
                  tiny=True)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "timed out after 8s (--dlperf-timeout)" in r.stdout
    assert tagged_processes(str(report)) == []


@pytest.mark.parametrize("sig, tiny", [pytest.param(signal.SIGINT, False, marks=pytest.mark.real),
                                       (signal.SIGTERM, True)], ids=["ctrl-c", "sigterm"])
def test_interrupt_leaves_no_process(tmp_path, sig, tiny):
    """Ctrl-C while torchrun's agents (the local cluster's start when asked: --dlperf-local-start torchrun) and their
    workers train; SIGTERM (a CI runner's) on the tiny engine's ranks."""
    report, tmp = tmp_path / "report", tmp_path / "tmp"
    tmp.mkdir()
    cmd = suite.command(f"--dlperf-report={report}", *SMALL, *(TINY if tiny else ("--dlperf-local-start", "torchrun")),
                        "--dlperf-iters", "500", "-k", "2n1g")
    # once both nodes train: on each, torchrun and its worker name the script (four processes); the
    # tiny engine's node process starts one rank process per node, each with --local-rank
    code, out = signal_once_running(cmd, ROOT, str(report), "--local-rank" if tiny else "torch_ddp.py",
                                    2 if tiny else 4, sig, start_timeout=120, stop_timeout=60,
                                    env={**os.environ, "TMPDIR": str(tmp)})
    assert code == pytest.ExitCode.INTERRUPTED, out
    assert tagged_processes(str(report)) == []
    assert sorted(p.name for p in tmp.glob("torchelastic_*")) == []  # torchrun's logs: in the run directory


def test_xdist_workers_report_into_one_results_file(tmp_path):
    report = tmp_path / "report"
    r = run_suite(report, "-n", "2", "--dlperf-repeats", "1", tiny=True)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((report / "results.json").read_text())
    ids = sorted(c["case"]["id"] for c in doc["cases"])
    assert ids == ["resnet50-fp32-bs2-32px-1n1g", "resnet50-fp32-bs2-32px-2n1g"]
    speedups = {c["case"]["id"]: c["speedup"] for c in doc["cases"]}
    assert speedups["resnet50-fp32-bs2-32px-1n1g"] == 1.0
    assert speedups["resnet50-fp32-bs2-32px-2n1g"] > 0  # derived across workers by the controller
    assert doc["options"]["order"] == "case"  # a worker cannot know its tests ahead: no rounds under xdist
    assert "dlperf results" in r.stdout
    assert tagged_processes(str(report)) == []


HOLD_THE_MACHINE = """
import sys
from pytest_dlperf.clusters.local import LocalCluster
with LocalCluster(nodes=1, base_dir=sys.argv[1]).lease(what=sys.argv[2]):
    print("held", flush=True)
    sys.stdin.readline()
"""


def test_a_session_waiting_for_another_sessions_nodes_says_whose_they_are_then_trains(tmp_path):
    """Issue #80: another session holds this machine's local nodes (the default machine lease); this one says whose
    they are (pid, case, since when) and that it starts when they are free, on stderr past pytest's capture, then
    runs its case once they are."""
    import os
    import sys
    import threading

    report, tmp = tmp_path / "report", tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}  # the machine lease's lock lies in TMPDIR: these two sessions' own
    holder = subprocess.Popen([sys.executable, "-c", HOLD_THE_MACHINE, str(tmp_path / "nodes"), "bert-other-case-1n1g"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    session = None
    try:
        assert holder.stdout.readline() == "held\n"
        session = subprocess.Popen(suite.command(f"--dlperf-report={report}", *SMALL, *TINY, "-k", "1n1g",
                                                 "--dlperf-repeats", "1", "--dlperf-local-lease", "machine"),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
        err: list[str] = []
        waiting = threading.Event()

        def read() -> None:
            for line in session.stderr:
                err.append(line)
                if line.startswith("dlperf: waiting"):
                    waiting.set()
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        assert waiting.wait(120), "".join(err)
    finally:
        holder.communicate("\n", timeout=30)
    out = session.stdout.read()  # stderr is the reader's alone (communicate() would take lines from it)
    session.wait(timeout=300)
    reader.join(30)
    assert session.returncode == 0, out + "".join(err)
    said = [line.strip() for line in err if line.startswith("dlperf: ")]
    assert re.fullmatch(rf"dlperf: waiting \d+ s for this machine's local nodes: held by pid {holder.pid} "
                        r"\(bert-other-case-1n1g\) since \d\d:\d\d:\d\d, \d+ s ago; this session starts when they "
                        r"are free", said[0]), said
    assert re.fullmatch(r"dlperf: this machine's local nodes free after \d+ s of waiting: this session starts",
                        said[-1]), said
    (case,) = json.loads((report / "results.json").read_text())["cases"]
    assert case["case"]["id"].endswith("1n1g") and len(case["throughputs"]) == 1


def test_dryrun_says_how_many_launches_a_session_and_a_recording_take(tmp_path):
    """A baseline is recorded with more launches than a session takes (the CPU profile: 8 vs 3), so
    that sessions are judged against a well-known median and spread; the dry-run says which."""
    base = suite.command("-k", "resnet50 and 1n1g", "--dlperf-dryrun", f"--dlperf-report={tmp_path / 'report'}",
                         f"--dlperf-baseline-dir={tmp_path / 'store'}")
    outs = {}
    for name, extra in (("session", []), ("recording", ["--update-baselines"]),
                        ("explicit", ["--update-baselines", "--dlperf-repeats", "2"])):
        r = subprocess.run(base + extra, cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        outs[name] = r.stdout
    assert "each case runs 1-3 times: further launches while the 330 s budget affords them" in outs["session"]
    assert "each case runs 8 times: recording a baseline" in outs["recording"]
    assert "each case runs 2 times: recording a baseline" in outs["explicit"]
    assert not list((tmp_path / "store").glob("*.json"))  # a dry-run records nothing


@pytest.mark.real  # trains with torch
def test_dryrun_commands_pasted_into_shells_run_the_case(tmp_path):
    report = tmp_path / "report"
    r = run_suite(report, "-k", "2n1g", "--dlperf-dryrun")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [ln.split(": ", 1)[1] for ln in r.stdout.splitlines() if ln.startswith(("local0: ", "local1: "))]
    assert len(lines) == 2
    with census.shell_launch("resnet50-2n1g", "ddp", ("torch",), 2):
        shells = [subprocess.Popen(["bash", "-c", line], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True) for line in lines]
        outs = [s.communicate(timeout=240)[0] for s in shells]
    assert [s.returncode for s in shells] == [0, 0], outs
    out_arg = shlex.split(lines[0])
    # the workload's --output is the last: the pace probe's wrapper (the default with no baseline) comes first
    steps = Path(out_arg[len(out_arg) - 1 - out_arg[::-1].index("--output") + 1])
    assert out_arg.count("--output") == 2 and (steps.parent / "pace.log").read_text().startswith("# dlperf-pace 2 ")
    records = [json.loads(x) for x in steps.read_text().splitlines()]
    assert records[0]["kind"] == "meta" and records[0]["world_size"] == 2
    assert records[0]["model"] == "resnet50" and records[0]["batch_size"] == 2
    assert sum(1 for x in records if x["kind"] == "step") == 4


@pytest.mark.slow  # the planted host is x4 faster by the pace probe, x8 by throughput: no host's move hides it
def test_the_pace_probe_runs_beside_every_node_and_the_gate_judges_at_the_baselines_pace(tmp_path):
    """--dlperf-pace-probe: each node's launch behind node/paceprobe.py, a pace per node and per run
    (their geometric mean) in results.json and the recorded entry, and the next session's throughput
    judged at the baseline's pace."""
    store = tmp_path / "store"
    args = ["-k", "2n1g", "--dlperf-window-seconds", "1", "--dlperf-pace-probe", f"--dlperf-baseline-dir={store}", *TINY]
    r = run_suite(tmp_path / "dry", *args, "--dlperf-dryrun")
    lines = [line for line in r.stdout.splitlines() if line.startswith(("local0:", "local1:"))]
    assert r.returncode == 0 and len(lines) == 2, r.stdout + r.stderr
    assert all("paceprobe.py --output" in line and " -- " in line for line in lines)

    r = run_suite(tmp_path / "rec", *args, "--update-baselines")
    assert r.returncode == 0, r.stdout + r.stderr
    (case,) = json.loads((tmp_path / "rec" / "results.json").read_text())["cases"]
    paces = [run["pace"] for run in case["runs"]]
    assert len(paces) == 2 and all(p > 0.1 for p in paces) and case["paces"] == paces
    for run in case["runs"]:
        assert all("paceprobe.py" in c for c in run["commands"])
        nodes = run["node_paces"]
        assert sorted(nodes) == ["local0", "local1"] and all(v > 0.1 for v in nodes.values())
        assert run["pace"] == pytest.approx(math.sqrt(nodes["local0"] * nodes["local1"]))
        assert sorted(p.name for p in Path(run["logs"]["local0"]).parent.glob("*pace.log")) == [
            "local0.pace.log", "local1.pace.log"]
    (path,) = store.glob("*.json")
    (entry,) = json.loads(path.read_text())["entries"].values()
    assert entry["paces"] == paces and entry["runs"]["throughput"] == case["throughputs"]
    assert entry["pace_contract"] == 2

    r = run_suite(tmp_path / "gate", *args)
    (case,) = json.loads((tmp_path / "gate" / "results.json").read_text())["cases"]
    verdict = case["verdict"]["throughput"]
    assert verdict["pace"]["baseline_pace"] == pytest.approx(sorted(paces)[0] / 2 + sorted(paces)[1] / 2)
    assert 0 <= verdict["pace"]["slope"] <= 1
    # credited where this session's host ran slower than the recording's, else judged as measured
    slower = verdict["pace"]["measured_pace"] <= verdict["pace"]["baseline_pace"]
    assert verdict["pace"]["applied"] is slower
    assert ("Judged at the baseline runs' pace" if slower else "host ran faster by the pace probe") in verdict["message"]

    # the same entry as if recorded in an hour whose host ran 4x as fast by the pace probe, with 8x the
    # throughput, from the 8 runs --update-baselines takes on CPU nodes: whatever this host's speed did since
    # the recording (a shared VM's moves by half between minutes) and whatever slope the runs fit, this
    # session's 3 runs all probe below all 8 and their drop is a regression at the baseline's pace too. The
    # screen says REGRESSION with the pace's host_slower; the entry keeps the recorded software, so nothing
    # recorded differs and the attribution calls it HOST (issue #63; until then HARDWARE, not judged): here
    # failing, as in CI (--dlperf-hardware fail)
    doc = json.loads(path.read_text())
    (key,) = doc["entries"]
    e = doc["entries"][key]
    assert e["software"] in doc["software"]  # the recorded software, which this session runs again
    t0, p0 = max(e["runs"]["throughput"]), max(e["paces"])
    e["runs"]["throughput"] = [8 * t0 * (1 + 0.004 * (k % 3)) for k in range(8)]
    e["paces"] = [4 * p0 * (1 + 0.03 * k) for k in range(8)]
    path.write_text(json.dumps(doc, indent=1))
    r = run_suite(tmp_path / "hw", *args, "--dlperf-repeats", "3", "--dlperf-hardware", "fail")
    assert r.returncode == 1, r.stdout + r.stderr
    (case,) = json.loads((tmp_path / "hw" / "results.json").read_text())["cases"]
    verdict = case["verdict"]["throughput"]
    slower = verdict["pace"]["host_slower"]
    assert verdict["status"] == "host" and slower["ratio"] < 0.9 and slower["p"] <= 0.01, verdict["message"]
    assert verdict["confirmation"]["outcome"] == "host" and verdict["confirmation"]["screen"] == "regression"
    probes = f"the pace probe: x{slower['ratio']:.2f} of the recording's"
    assert probes in verdict["message"] and probes in verdict["confirmation"]["probes"], verdict["message"]
    assert verdict["message"].startswith(f"HOST {case['case']['id']} throughput: nothing recorded differs")
    assert "host ran slower than the recording's by the pace probe" in verdict["message"]  # the screen's rule
    assert "not the one that recorded" not in verdict["message"]
    assert f"HOST {case['case']['id']} throughput: nothing recorded differs" in r.stdout, r.stdout
    assert "The case fails (--dlperf-hardware fail)." in r.stdout, r.stdout
    assert "REGRESSION" not in r.stdout.split("gating summary")[-1], r.stdout
    assert tagged_processes(str(tmp_path)) == []
