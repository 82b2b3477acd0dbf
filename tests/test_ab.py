"""A/B sessions (--dlperf-candidate): sides, interleaved pairs, the paired verdict and its reports,
on the tiny engine (the mechanisms; resnet50 on torch trains in benchmarks/ab_power.py)."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_dlperf import cli
from pytest_dlperf.ab.sides import SpecError, parse_side

from tests import suite
from tests.procs import signal_when, tagged_processes
from tests.suite import QUICK_PROBES, ROOT, SMALL_CASE, TINY_ENGINE, run_suite

CASE = "resnet50-fp32-bs2-32px-1n1g"
TINY = [*TINY_ENGINE, *SMALL_CASE, *QUICK_PROBES, "--dlperf-nodes", "1", "--dlperf-iters", "4",
        "--dlperf-timeout", "120"]
PLANT = "env=DLPERF_PLANT_SLOWDOWN=0.5"


def session(tmp: Path, *args: str, env: dict | None = None) -> tuple[subprocess.CompletedProcess, dict]:
    report = tmp / "report"
    r = run_suite(f"--dlperf-report={report}", f"--dlperf-baseline-dir={tmp / 'baselines'}", *TINY, *args, env=env)
    path = report / "results.json"
    return r, (json.loads(path.read_text()) if path.exists() else {})


# ---------------------------------------------------------------- the spec
def test_a_spec_names_python_env_rev_and_label():
    s = parse_side("python=/opt/new/bin/python env=NCCL_ALGO=Tree env='X=a b' rev=main name=new", "candidate")
    assert (s.python, s.env, s.rev, s.label) == ("/opt/new/bin/python", {"NCCL_ALGO": "Tree", "X": "a b"}, "main", "new")
    assert parse_side("current", "reference").python is None and parse_side("", "reference").env == {}


@pytest.mark.parametrize("text, said", [
    ("pyhton=/x", "'pyhton=/x' is not a spec word"), ("env=NOVALUE", "expected env=NAME=VALUE"),
    ("rev=a rev=b", "rev= given twice"), ("repo=/x", "repo=/x without rev=REF"), ("python=", "gives no value"),
    ("name=reference", "the other side's role"), ("env='unclosed", "quote it as a shell would")])
def test_a_bad_spec_is_one_line_naming_the_word(text, said):
    with pytest.raises(SpecError) as info:
        parse_side(text, "candidate")
    assert said in str(info.value) and "\n" not in str(info.value) and "--dlperf-candidate" in str(info.value)


def test_a_program_that_reports_no_versions_gets_each_sides_own_in_what_differs():
    """An external program writes no meta line: a side with its own python stands in with the versions
    its probe found there, the session's side with the preflight's; the differences name the change."""
    from types import SimpleNamespace

    from pytest_dlperf.ab.feature import ABSession
    from pytest_dlperf.ab.pairs import Launch, Pair, PairedCase
    from pytest_dlperf.ab.sides import Side, SideSpec
    from pytest_dlperf.results.records import RunRecord

    launcher = SimpleNamespace(frameworks_for=lambda case: ("torch",))
    ab = ABSession(SimpleNamespace(alpha=0.05, tolerance=0.02, min_pairs=3, max_pairs=20, explain=None),
                   SimpleNamespace(launcher=lambda case: launcher), [], lambda case: {"torch": "2.13.0"}, {})
    ab._sides = {"reference": Side(SideSpec("reference")),
                 "candidate": Side(SideSpec("candidate", "python=/opt/new/bin/python", python="/opt/new/bin/python"),
                                   frameworks={"torch": "2.14.0", "tensorflow": "2.20.0"})}  # tf: another case's
    meta = {role: {"frameworks": ab.frameworks_of(role, None)} for role in ("reference", "candidate")}
    assert meta == {"reference": {"frameworks": {"torch": "2.13.0"}}, "candidate": {"frameworks": {"torch": "2.14.0"}}}
    launch = {role: Launch(role, 1.0, RunRecord(0, meta[role], [], [], {}, 1.0)) for role in meta}
    rec = PairedCase(None, "x", pairs=[Pair(0, "reference", launch["reference"], launch["candidate"])])
    said = ab.differences(rec)
    assert "python (the nodes' own) -> /opt/new/bin/python" in said and "torch 2.13.0 -> 2.14.0" in said, said


@pytest.mark.parametrize("args, said", [
    (["--dlperf-reference", "python=/x"], "--dlperf-reference without --dlperf-candidate"),
    (["--dlperf-candidate", "bogus"], "'bogus' is not a spec word"),
    (["--dlperf-candidate", "current", "-n", "2"], "with pytest-xdist (-n)"),
    (["--dlperf-candidate", "name=x", "--dlperf-reference", "name=x"], "both named 'x'"),
    (["--dlperf-candidate", "current", "--dlperf-ab-min-pairs", "2"], "need 3 <= min <= max <= 200")])
def test_bad_ab_options_are_usage_errors(tmp_path, args, said):
    r, _ = session(tmp_path, *args)
    assert r.returncode == pytest.ExitCode.USAGE_ERROR, r.stdout + r.stderr
    assert said in r.stderr and "Traceback" not in r.stderr


# ---------------------------------------------------------------- sessions
@pytest.mark.slow  # a planted slow-down of half or more: no host's speed hides it; 10 s or more alone
def test_a_planted_slowdown_is_slower_with_its_pairs_reported(tmp_path):
    junit = tmp_path / "junit.xml"
    r, doc = session(tmp_path, "--dlperf-candidate", PLANT, f"--junitxml={junit}", "--dlperf-plots=on")
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"{CASE}: A/B SLOWER: candidate" in r.stdout and "env DLPERF_PLANT_SLOWDOWN: (unset) -> 0.5" in r.stdout
    ab = doc["ab"]
    case = ab["cases"][CASE]
    assert case["verdict"] == "slower" and case["complete"] and 0.3 < case["ratio"] < 0.7, case
    assert case["high"] < 1 and case["pairs"] == len(case["pairs_taken"]) >= 3
    # pairs adjacent in time, reference or candidate first as ABBA BAAB
    for p, first in zip(case["pairs_taken"], ["reference", "candidate", "candidate", "reference"]):
        assert p["first"] == first
        a, b = (p[first], p["candidate" if first == "reference" else "reference"])
        assert a["started_at"] < b["started_at"] <= a["started_at"] + a["wall_seconds"] + 30
        assert p["ratio"] == pytest.approx(p["candidate"]["throughput"] / p["reference"]["throughput"])
    assert ab["sides"]["candidate"]["env"] == {"DLPERF_PLANT_SLOWDOWN": "0.5"}
    # SLOWER is explained (auto): one profiled launch a side after the pairs, never counted (an engine that has
    # none says so in the block: tests/test_explain.py)
    assert ab["explain"]["mode"] == "auto" and not case["explanation"].get("why"), case["explanation"]
    assert sorted(p.name for p in (tmp_path / "report" / "runs" / CASE).glob("explain-*")) == [
        "explain-candidate", "explain-reference"]
    assert ab["sides"]["reference"]["spec"] == "current" and ab["method"]["tolerance"] == 0.02
    # the candidate is what the baseline gate judged (no baseline here: not a skip in an A/B session)
    (result,) = doc["cases"]
    assert len(result["throughputs"]) == case["pairs"]
    summary = (tmp_path / "report" / "summary.md").read_text()
    assert "## A/B: candidate against reference" in summary and "SLOWER" in summary
    assert (tmp_path / "report" / "plots" / "ab.png").stat().st_size > 1000
    props = {p.get("name"): p.get("value") for p in ET.parse(junit).iter("property")}
    assert props["dlperf_ab_verdict"] == "slower" and float(props["dlperf_ab_high"]) < 1
    # dlperf report draws the A/B section again from the saved results.json
    assert cli.main(["report", str(tmp_path / "report" / "results.json"), "-o", str(tmp_path / "again")]) == 0
    assert "## A/B: candidate against reference" in (tmp_path / "again" / "summary.md").read_text()
    assert (tmp_path / "again" / "plots" / "ab.png").exists()


@pytest.mark.slow  # a planted slow-down of half or more: no host's speed hides it; 10 s or more alone
def test_the_swapped_sides_are_faster_and_pass(tmp_path):
    r, doc = session(tmp_path, "--dlperf-reference", PLANT, "--dlperf-candidate", "current")
    assert r.returncode == 0, r.stdout + r.stderr
    assert doc["ab"]["cases"][CASE]["verdict"] == "faster" and "FASTER" in r.stdout


@pytest.mark.slow  # SAME within a tolerance of 60%: no host's move reaches it; 10 s or more alone
def test_identical_sides_are_same_within_a_wide_tolerance(tmp_path):
    r, doc = session(tmp_path, "--dlperf-candidate", "name=again", "--dlperf-ab-tolerance", "0.6")
    assert r.returncode == 0, r.stdout + r.stderr
    case = doc["ab"]["cases"][CASE]
    assert case["verdict"] == "same" and case["low"] >= 0.4 and case["high"] <= 1.6, case
    assert "candidate (again): name=again" in r.stdout
    # the other gated metrics are judged from the same pairs: identical sides are not worse on any
    assert case["metrics"]["peak_memory"]["verdict"] == "same", case["metrics"]
    assert all(v["verdict"] != "worse" for v in case["metrics"].values()), case["metrics"]


@pytest.mark.slow  # 10 s or more alone on a 2-core VM: not in the quick tier (tests/quick.sh), CI runs it
def test_a_candidate_python_holding_more_memory_is_worse_on_peak_memory(tmp_path):
    """A second Python environment, unknown to the project, holding 24 MiB more in every process: the
    candidate's peak memory is WORSE, a failing verdict of its own whatever its throughput's."""
    py = suite.python_holding_more(tmp_path / "venv", 24)
    r, doc = session(tmp_path, "--dlperf-candidate", f"python={py}", "--dlperf-ab-max-pairs", "4")
    assert r.returncode == 1, r.stdout + r.stderr
    memory = doc["ab"]["cases"][CASE]["metrics"]["peak_memory"]
    assert memory["verdict"] == "worse" and memory["ratio"] > 1.5 and memory["low"] > 1.5, memory
    assert f"{CASE}: A/B " in r.stdout and "peak memory WORSE: candidate peak memory " in r.stdout
    assert "% higher (interval " in memory["reason"] and "beyond the 10% tolerance" in memory["reason"]
    summary = (tmp_path / "report" / "summary.md").read_text()
    assert f"`{CASE} peak memory`" in summary and "WORSE" in summary


@pytest.mark.slow  # 10 s or more alone on a 2-core VM: not in the quick tier (tests/quick.sh), CI runs it
def test_undecided_passes_unless_asked_to_fail(tmp_path):
    # no change and no room: a tolerance of 0 is never SAME, and alpha 0.001 over 3 pairs never significant
    args = ("--dlperf-candidate", "name=again", "--dlperf-ab-tolerance", "0", "--dlperf-ab-alpha", "0.001",
            "--dlperf-ab-max-pairs", "3")
    r, doc = session(tmp_path / "pass", *args)
    assert r.returncode == 0, r.stdout + r.stderr
    case = doc["ab"]["cases"][CASE]
    assert case["verdict"] == "undecided" and case["complete"] and case["pairs"] == 3
    assert "--dlperf-ab-max-pairs" in case["reason"]
    r, _ = session(tmp_path / "fail", *args, "--dlperf-undecided", "fail")
    assert r.returncode == 1 and f"{CASE}: A/B UNDECIDED" in r.stdout, r.stdout


@pytest.mark.slow  # 10 s or more alone on a 2-core VM: not in the quick tier (tests/quick.sh), CI runs it
def test_a_launcher_that_raises_stops_its_case_alone(tmp_path):
    """An engine's bug in one case's launch ends that case with the error; the other case is decided."""
    r, doc = session(tmp_path, "--dlperf-candidate", "name=again", "--dlperf-ab-tolerance", "0.6",
                     "--dlperf-nodes", "2", env={"TINY_COMMANDS_RAISE": "2n1g"})
    assert r.returncode == 1, r.stdout + r.stderr
    two = CASE.replace("1n1g", "2n1g")
    cases = doc["ab"]["cases"]
    assert cases[CASE]["verdict"] == "same", cases[CASE]
    assert "the launch raised RuntimeError: tiny: asked to break" in cases[two]["error"] and cases[two]["pairs"] == 0
    assert "INTERNALERROR" not in r.stdout + r.stderr


def test_a_side_whose_python_is_missing_fails_before_any_launch(tmp_path):
    r, doc = session(tmp_path, "--dlperf-candidate", "python=/nonexistent/bin/python3")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "--dlperf-candidate python=/nonexistent/bin/python3: on node local0 the interpreter did not run" in r.stdout
    assert not (tmp_path / "report" / "runs").exists()  # no launch of either side
    assert doc["ab"]["cases"][CASE]["pairs"] == 0 and "error" in doc["ab"]["cases"][CASE]


def test_a_rev_side_launches_its_files_from_a_worktree_and_removes_it(tmp_path):
    before = subprocess.run(["git", "-C", str(ROOT), "worktree", "list"], capture_output=True, text=True).stdout
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    r, _ = session(tmp_path, "--dlperf-candidate", "rev=HEAD", "--dlperf-dryrun")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"# {CASE} [reference]" in r.stdout and f"# {CASE} [candidate files at {head[:12]}]" in r.stdout
    after = subprocess.run(["git", "-C", str(ROOT), "worktree", "list"], capture_output=True, text=True).stdout
    assert after == before
    r, _ = session(tmp_path / "bad", "--dlperf-candidate", "rev=no-such-ref-anywhere")
    assert r.returncode == 1 and "--dlperf-candidate rev=no-such-ref-anywhere: no such commit in" in r.stdout, r.stdout


def test_the_dry_run_shows_each_sides_commands(tmp_path):
    r, _ = session(tmp_path, "--dlperf-candidate", "env=NCCL_ALGO=Tree python=/usr/bin/python3", "--dlperf-dryrun")
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    ref, cand = out.split(f"# {CASE} [reference]")[1].split(f"# {CASE} [candidate]")
    assert "NCCL_ALGO" not in ref and "env DLPERF_RUN_TAG=" in ref
    assert "NCCL_ALGO=Tree" in cand and "/usr/bin/python3 -u" in cand
    assert "each case runs in pairs" in out
    # a pip= side: the make command each node runs before the first launch, shown; nothing made
    r, _ = session(tmp_path / "pip", "--dlperf-candidate", "pip=numpy==1.26.4 hide=quicklog", "--dlperf-dryrun",
                   f"--dlperf-env-cache={tmp_path / 'envs'}")
    assert r.returncode == 0, r.stdout + r.stderr
    assert (f"# {CASE} [candidate; its environment made first on each node: PYTHON makeenv.py make --cache "
            f"{tmp_path / 'envs'} --base PYTHON --installer auto --hide quicklog -- numpy==1.26.4, whose python then "
            "runs the commands below]") in r.stdout, r.stdout
    assert not (tmp_path / "envs").exists()


@pytest.mark.slow  # 10 s or more alone on a 2-core VM: not in the quick tier (tests/quick.sh), CI runs it
def test_ctrl_c_mid_pair_keeps_the_pairs_taken_marked_incomplete(tmp_path):
    # Not exclusive: tolerance 0 and alpha 0.001 leave the verdict undecided whatever the speed. A
    # launch of 40 steps lasts seconds, so the second pair is still running half a second after its log appears.
    report = tmp_path / "report"
    cmd = suite.command(f"--dlperf-report={report}", f"--dlperf-baseline-dir={tmp_path / 'b'}", *TINY,
                        "--dlperf-candidate", "name=again", "--dlperf-ab-tolerance", "0", "--dlperf-ab-alpha", "0.001",
                        "--dlperf-iters", "40")
    code, out = signal_when(cmd, ROOT, lambda: any((report / "runs" / CASE).glob("p1-*/*.log")), signal.SIGINT,
                            settle=0.5)
    assert code == pytest.ExitCode.INTERRUPTED, out
    case = json.loads((report / "results.json").read_text())["ab"]["cases"][CASE]
    assert case["complete"] is False and case["pairs"] >= 1 and case["verdict"] == "undecided", case
    assert tagged_processes(str(report)) == []


def test_a_side_whose_python_lacks_the_framework_fails_naming_it_before_any_launch(tmp_path):
    # a bare environment of the session's own Python: no torch there, so the ddp case cannot run on that side
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")], check=True)
    bare = tmp_path / "bare" / "bin" / "python"
    report = tmp_path / "report"
    r = run_suite(f"--dlperf-report={report}", f"--dlperf-baseline-dir={tmp_path / 'b'}", "--backend", "ddp",
                  "--dlperf-nodes", "1", "-k", "resnet50 and fp32 and 1n1g", *QUICK_PROBES,
                  "--dlperf-candidate", f"python={bare}")
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"--dlperf-candidate python={bare}: torch is not installed for that python on local0" in r.stdout, r.stdout
    assert not (report / "runs").exists()


def test_a_rev_side_takes_the_workload_files_its_commit_holds(tmp_path):
    """A commit from before a workload file existed (the torch workload was one file before it was split) runs
    its own entry script with the files it has: the newer ones are left out, not a missing upload; the direct start
    (rankstart.py) is the harness's."""
    from pytest_dlperf.ab.sides import Side, SideSpec
    from pytest_dlperf.launchers.torchrun import TorchrunLauncher

    launcher = TorchrunLauncher()
    repo = launcher.workload_paths()[0].parents[3]
    tree = tmp_path / "tree"
    for f in launcher.workload_paths():
        if f.name not in ("torch_models.py", "torch_comm.py"):  # not at that commit
            (tree / f.relative_to(repo)).parent.mkdir(parents=True, exist_ok=True)
            (tree / f.relative_to(repo)).write_text("")
    side = Side(SideSpec("reference", "rev=abc", rev="abc"), commit="abc" * 13 + "a", repo_root=repo, files_root=tree)
    got = side.workload_paths(launcher)
    assert got[0] == tree / launcher.workload_paths()[0].relative_to(repo)
    assert [f.name for f in got] == [f.name for f in launcher.workload_paths()
                                     if f.name not in ("torch_models.py", "torch_comm.py")]
    # the direct start starts the ranks as torchrun would: the harness's own, whatever the commit holds
    assert all(f.is_relative_to(tree) for f in got if f.name != "rankstart.py")
    assert [f for f in got if f.name == "rankstart.py"] == [f for f in launcher.workload_paths()
                                                          if f.name == "rankstart.py"]
    # a commit of before the timed checkpoint: its workload takes no --checkpoint-dir, so its launches get none
    from pytest_dlperf.launchers.base import carries_checkpoints

    assert carries_checkpoints(got) and carries_checkpoints(launcher.workload_paths())
    (tree / next(f for f in launcher.workload_paths() if f.name == "checkpoints.py").relative_to(repo)).unlink()
    assert not carries_checkpoints(side.workload_paths(launcher))
