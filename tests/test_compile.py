"""torch.compile as a case dimension (issue #49): the count rule of graph breaks and recompilations
against hand-made sides, a compiled case's command and caches; on the tiny engine (its compiled mode plants
graph breaks), a second Python environment whose workers break the graph, against a stored baseline and as an
A/B candidate; on real torch, dynamo's own counts of the breaks a library makes (a sitecustomize that logs from
inside RMSNorm's forward), a node whose compiler fails and one that has none."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_dlperf import metrics
from pytest_dlperf.ab.judges import count_verdict
from pytest_dlperf.ab.pairs import Launch, Pair, PairedCase
from pytest_dlperf.baselines import BaselineError, Entry, Tolerances
from pytest_dlperf.baselines.rules import judge_count
from pytest_dlperf.clusters.base import Node
from pytest_dlperf.clusters.local import LocalCluster
from pytest_dlperf.launchers.base import CacheUse, RunPlan, own_cache_dir
from pytest_dlperf.launchers.torchrun import TorchrunLauncher
from pytest_dlperf.measure import Bench, launch
from pytest_dlperf.measure.budget import Budget
from pytest_dlperf.measure.compile_caches import CompileCaches, drop
from pytest_dlperf.measure.measured import launch_class
from pytest_dlperf.results.cases import _other_figures
from pytest_dlperf.results.records import RunRecord
from pytest_dlperf.specs import CaseSpec, Measurement, Topology
from tests.suite import QUICK_PROBES, SMALL_CASE, TINY_ENGINE, python_over_this_one, run_suite

CASE = "llama-fp32-bs2-seq64-d256l4-compiled-1n1g"
BREAK = "Failed to trace builtin operator"  # what dynamo says of the planted print
# A library that logs from inside RMSNorm's forward (the decoder's every block calls it): dynamo cannot
# trace print, so the graph breaks there, in the sitecustomize's own file.
SITECUSTOMIZE = '''import torch.nn as nn

_forward = nn.RMSNorm.forward


def forward(self, x):
    print("", end="")
    return _forward(self, x)


nn.RMSNorm.forward = forward
'''


def entry(**figures: list[float]) -> Entry:
    e = Entry.from_samples(model="llama", precision="fp32", batch_size=2, image_size=64, backend="ddp",
                           topology="1n1g", throughputs=[600.0, 610.0], tolerance=None, versions={},
                           recorded_at="2026-11-26T10:00:00+00:00", variant="d256l4-compiled")
    e.runs.update({k: list(v) for k, v in figures.items()})
    return e


def run(said: list[str]) -> RunRecord:
    return RunRecord(repeat=0, meta={"compile": {"breaks": said}}, steps=[], commands=[], logs={}, wall_seconds=1.0)


def test_a_graph_break_where_the_baseline_had_none_is_a_regression_naming_it_whatever_the_tolerance():
    said = [f"{BREAK} at /venv/sitecustomize.py:7 in forward"]
    new = judge_count([3.0, 3.0], entry(graph_breaks=[0.0, 0.0]), metric="graph_breaks", case=CASE, said=said)
    assert new.status == "regression" and new.measured_median == 3 and new.baseline_median == 0
    assert new.message.startswith(f"REGRESSION {CASE} graph_breaks: 3 where the baseline had none")
    assert "a count, not a tolerance" in new.message and said[0] in new.message
    same = judge_count([2.0], entry(graph_breaks=[2.0, 2.0]), metric="graph_breaks", case=CASE, said=said)
    assert same.status == "pass" and same.message.endswith(f"Counted: {said[0]}")
    fewer = judge_count([0.0], entry(recompiles=[1.0, 0.0]), metric="recompiles", case=CASE)  # the most in any run
    assert fewer.status == "improvement" and "consider --update-baselines" in fewer.message
    older = judge_count([1.0], entry(), metric="graph_breaks", case=CASE)  # recorded before counts were kept
    assert older.status == "missing" and "record it again with --update-baselines" in older.message
    with pytest.raises(ValueError, match="judge_count is for the count metrics"):
        judge_count([1.0], entry(), metric="compile_time", case=CASE)


def test_as_an_ab_candidate_a_new_graph_break_is_worse_and_named():
    said = f"{BREAK} at /venv/sitecustomize.py:7 in forward"
    worse = count_verdict(metrics.GRAPH_BREAKS, [(0.0, 3.0), (0.0, 3.0), (0.0, 3.0)], [run([said])] * 3)
    assert worse["verdict"] == "worse" and (worse["reference"], worse["candidate"]) == (0, 3)
    assert worse["reason"].startswith("candidate 3 graph breaks where the reference had none") and said in worse["reason"]
    assert count_verdict(metrics.GRAPH_BREAKS, [(1.0, 1.0)], [run([said])])["verdict"] == "same"
    assert count_verdict(metrics.RECOMPILES, [(2.0, 0.0)], [run([])])["verdict"] == "better"


def test_a_count_is_declared_without_a_tolerance_and_kept_at_zero():
    assert metrics.GRAPH_BREAKS.counted and metrics.GRAPH_BREAKS.gated and not metrics.GRAPH_BREAKS.tolerated
    assert "graph_breaks" not in metrics.names(metrics.tolerated()) and "compile_time" in metrics.names(metrics.tolerated())
    with pytest.raises(ValueError, match="graph breaks is a count, judged without a tolerance"):
        Tolerances(graph_breaks=0.1)
    with pytest.raises(ValueError, match="a count is a per-launch metric with no tolerance"):
        metrics.Metric("n", "n", "n", "", metrics.Direction.LOWER, metrics.Kind.LAUNCH, gated=True,
                       description="", rule=metrics.Rule.COUNT, tolerances={k: 0.1 for k in metrics.DeviceKind},
                       per_launch=lambda r, c, m: 0.0)
    doc = {"entries": {}}
    e = entry(graph_breaks=[0.0, 0.0], recompiles=[0.0, 1.0])
    doc["entries"][e.key] = e.to_dict()
    assert Entry.from_dict(e.key, doc["entries"][e.key], Path("f.json")).runs == e.runs
    bad = {**e.to_dict(), "runs": {"throughput": [600.0], "graph_breaks": [-1]}}
    with pytest.raises(BaselineError, match="must be a non-empty list of counts"):
        Entry.from_dict(e.key, bad, Path("f.json"))


def test_a_launch_whose_window_compiled_has_no_compile_time_and_says_why():
    """A window that compiled carries the compile in its throughput: no compile time is taken from it."""
    m = Measurement(warmup_iters=1, iters=3, repeats=1, timeout=60)
    case = CaseSpec("llama", "fp32", 2, 64, Topology(1, 1), variant="d256l4").as_mode("compiled")
    record = {"seconds": 0.0, "steps": 0, "dynamo_seconds": 27.9, "graph_breaks": 0, "recompiles": 0,
              "window_compiles": 1, "cache": {"cold": True}}
    launched = RunRecord(repeat=0, meta={"compile": record}, steps=[], commands=[], logs={}, wall_seconds=1.0)
    with pytest.raises(metrics.NotMeasured, match="a step of the measured window compiled"):
        metrics.COMPILE_TIME.per_launch(launched, case, m)
    record.update(window_compiles=0, seconds=25.0, steps=1)
    assert metrics.COMPILE_TIME.per_launch(launched, case, m) == 25.0


def test_a_compiled_case_compiles_into_an_empty_cache_of_its_own_unless_one_is_kept():
    eager = CaseSpec("llama", "fp32", 2, 64, Topology(1, 1), "ddp", "d256l4")
    case = eager.as_mode("compiled")
    assert case.id == CASE and case.compiled and not eager.compiled and case.as_mode("eager") == eager
    assert (launch_class(case), launch_class(eager)) == ("1n1g-compiled", "1n1g")
    assert not metrics.COMPILE_TIME.has(eager) and metrics.COMPILE_TIME.has(case)
    node = Node("n0", "10.0.0.1", "/usr/bin/python3", cpus=2)

    def command(m: Measurement):
        plan = RunPlan(case, m, [node], {"n0": "/run/r0"}, {"n0": "/run/r0/torch_ddp.py"}, "10.0.0.1", 29500, "t")
        return TorchrunLauncher().commands(plan)[0]

    m = Measurement(warmup_iters=2, iters=3, repeats=1, timeout=60)
    cold = command(m)
    assert "--compile" in cold.argv and "--drop-compile-cache" in cold.argv
    assert cold.env["TORCHINDUCTOR_CACHE_DIR"] == "/run/r0/inductor-cache"
    assert cold.env["TRITON_CACHE_DIR"] == "/run/r0/inductor-cache/triton"
    kept = command(Measurement(warmup_iters=2, iters=3, repeats=1, timeout=60, compile_cache="/cache"))
    assert kept.env["TORCHINDUCTOR_CACHE_DIR"] == "/cache" and "--drop-compile-cache" not in kept.argv


def test_a_compiled_cases_first_launches_compile_cold_and_the_later_ones_start_from_the_firsts_cache():
    """Issue #66: three cold launches give compile time its verdict; the rest need not compile again."""
    case = CaseSpec("llama", "fp32", 2, 64, Topology(1, 1), "ddp", "d256l4").as_mode("compiled")
    m = Measurement(warmup_iters=2, iters=3, repeats=5, timeout=60, cold_launches=2)
    caches, key, nodes = CompileCaches(), ("case", ""), [Node("n0", "10.0.0.1", "/usr/bin/python3", cpus=2),
                                                         Node("n1", "10.0.0.2", "/usr/bin/python3", cpus=2)]

    def launched(i: int) -> list:
        cache = caches.next(key, case, m)
        dirs = {n.name: f"/run/r{i}/{n.name}" for n in nodes}
        plan = RunPlan(case, m, nodes, dirs, {n.name: f"{d}/torch_ddp.py" for n, d in zip(nodes, dirs.values())},
                       "10.0.0.1", 29500, "t", compile_cache=cache)
        cmds = TorchrunLauncher().commands(plan)
        caches.took(key, cache, case, m, RunRecord(repeat=i, meta={}, steps=[], commands=[], logs={}, wall_seconds=1,
                                                   node_dirs=dirs))
        return [(c.env["TORCHINDUCTOR_CACHE_DIR"], "--drop-compile-cache" in c.argv) for c in cmds]

    got = [launched(i) for i in range(4)]
    assert got[0] == [("/run/r0/n0/inductor-cache", False), ("/run/r0/n1/inductor-cache", False)]  # the seed: kept
    assert got[1] == [("/run/r1/n0/inductor-cache", True), ("/run/r1/n1/inductor-cache", True)]  # cold, removed
    assert got[2] == got[3] == got[0]  # warm: each node from the seed's cache there, which none removes
    other = caches.next(("case", "candidate"), case, m)  # an A/B session's other side starts cold of its own
    assert other.use is CacheUse.SEED
    profiled = caches.next(key, case, replace(m, profile_steps=5))  # never counted: its own, as ever
    assert profiled.use is CacheUse.OWN
    assert caches.next(key, case, replace(m, compile_cache="/cache")).use is CacheUse.OWN  # a kept one rules
    assert caches.next(key, case.as_mode("eager"), m).use is CacheUse.OWN


def test_each_launch_takes_its_cache_from_the_cases_launches_so_far_and_the_seeds_go_when_it_ends(tmp_path, monkeypatch):
    """``measure.launch`` asks for each launch's cache by case and side, counts a launch that ran, and the
    seeds' caches are removed from their nodes (here a real local cluster) once the case is over."""
    case = CaseSpec("llama", "fp32", 2, 64, Topology(1, 1), "ddp", "d256l4").as_mode("compiled")
    m = Measurement(warmup_iters=2, iters=3, repeats=3, timeout=60, cold_launches=1)
    cluster = LocalCluster(nodes=1, base_dir=tmp_path / "nodes", pin=False)
    planned: list[tuple[str, CacheUse]] = []

    def run_case(cluster, launcher, case, measurement, log_dir, k, on_progress=None, side=None, cache=None):
        planned.append((side.label if side else "", cache.use))
        run_dir = cluster.make_run_dir(cluster.nodes()[0], f"r{len(planned)}")
        Path(own_cache_dir(run_dir)).mkdir()  # what the seed's workload would leave
        return RunRecord(repeat=k, meta={}, steps=[], commands=[], logs={}, wall_seconds=1.0,
                         node_dirs={"local0": run_dir})

    monkeypatch.setattr(sys.modules["pytest_dlperf.measure.launch"], "run_case", run_case)
    live = types.SimpleNamespace(watching=False, said=lambda text: None, clear=lambda: None)
    bench = Bench(cluster=lambda: cluster, launcher=lambda c: TorchrunLauncher(), name=lambda c: "c",
                  measurement=lambda c, mm: mm, ready=lambda c: None, live=live,
                  budget=lambda mm: Budget(0.0), report_dir=tmp_path / "report")
    other = types.SimpleNamespace(label="candidate")
    runs = [launch(bench, case, m, f"r{i}", i, 3, []) for i in range(3)] + [launch(bench, case, m, "p0", 0, 1, [],
                                                                                   side=other)]
    assert planned == [("", CacheUse.SEED), ("", CacheUse.WARM), ("", CacheUse.WARM), ("candidate", CacheUse.SEED)]
    seeds = [own_cache_dir(runs[0].node_dirs["local0"]), own_cache_dir(runs[3].node_dirs["local0"])]
    assert all(Path(d).is_dir() for d in seeds)
    dirs = bench.caches.release("c")
    assert dirs == {"local0": seeds} and bench.caches.release("c") == {}
    assert drop(cluster, dirs, tmp_path / "drop") == []
    assert not any(Path(d).exists() for d in seeds) and Path(runs[0].node_dirs["local0"]).is_dir()
    cluster.close()


def test_a_compiled_cases_start_up_figures_come_from_its_cold_launches_and_its_window_from_every_one():
    case = CaseSpec("llama", "fp32", 2, 64, Topology(1, 1), "ddp", "d256l4").as_mode("compiled")
    m = Measurement(warmup_iters=1, iters=3, repeats=3, timeout=60)

    def launched(cold: bool, seconds: float) -> RunRecord:
        record = {"seconds": seconds, "steps": 1, "dynamo_seconds": seconds - 1, "graph_breaks": 0, "recompiles": 0,
                  "window_compiles": 0, "cache": {"dir": "/run/r0/inductor-cache", "cold": cold}}
        meta = {"compile": record, "first_step": {"seconds": seconds + 5}, "memory": {"peak_bytes": 2 ** 30}}
        return RunRecord(repeat=0, meta=meta, steps=[], commands=[], logs={}, wall_seconds=1.0)

    figures, absent = _other_figures(case, m, [launched(True, 45.0), launched(False, 3.5), launched(False, 3.4)])
    assert figures["compile_time"] == [45.0] and figures["dynamo_compile_time"] == [44.0]
    assert figures["time_to_first_step"] == [50.0] and figures["peak_memory"] == [2.0 ** 30]
    assert figures["graph_breaks"] == [0.0, 0.0, 0.0]  # what dynamo counts, it counts in every launch
    assert not {"compile_time", "time_to_first_step", "peak_memory"} & set(absent)
    figures, absent = _other_figures(case, m, [launched(False, 3.5)])  # a kept cache filled before: none cold
    assert "compile_time" not in figures and "time_to_first_step" not in figures
    assert absent["compile_time"].startswith("every launch compiled from a filled cache (/run/r0/inductor-cache)")
    eager = case.as_mode("eager")  # an eager case's start-up: every launch's
    figures, _ = _other_figures(eager, m, [launched(False, 3.5), launched(False, 3.4)])
    assert figures["time_to_first_step"] == [8.5, 8.4]


def test_ab_judges_a_compiled_cases_start_up_on_its_cold_pairs():
    def pair(k: int, cold: bool, ref: dict, cand: dict) -> Pair:
        run = RunRecord(repeat=k, meta={"compile": {"cache": {"cold": cold}}}, steps=[], commands=[], logs={},
                        wall_seconds=1.0)
        return Pair(k, "reference", Launch("reference", 10.0, run, ref), Launch("candidate", 10.0, run, cand))

    case = CaseSpec("llama", "fp32", 2, 64, Topology(1, 1), "ddp", "d256l4").as_mode("compiled")
    rec = PairedCase(case, "c")
    rec.pairs = [pair(0, True, {"compile_time": 40.0}, {"compile_time": 50.0}), pair(1, False, {}, {})]
    assert rec.figures("compile_time") == [(40.0, 50.0)]  # the warm pair has it on neither side by design
    rec.pairs.append(pair(2, True, {"compile_time": 41.0}, {}))
    assert rec.figures("compile_time") == []  # one side alone: not judged on the others
    rec.pairs = [pair(0, True, {"compile_time": 40.0}, {"compile_time": 50.0}), pair(1, True, {}, {})]
    assert rec.figures("compile_time") == []  # a cold pair without it (its window compiled) is never left out
    rec.pairs = [pair(0, True, {"peak_memory": 1.0}, {"peak_memory": 1.0}), pair(1, False, {}, {})]
    assert rec.figures("peak_memory") == [(1.0, 1.0)]
    eager = PairedCase(case.as_mode("eager"), "e")  # an eager case's every launch is its start-up's
    eager.pairs = [pair(0, False, {"peak_memory": 1.0}, {"peak_memory": 1.0}), pair(1, False, {}, {})]
    assert eager.figures("peak_memory") == []


# ---------------------------------------------------------------- the gate, A/B and history on the tiny engine
TINY_CASE = "resnet50-fp32-bs2-32px-compiled-1n1g"
# A library, imported by sitecustomize, whose code dynamo cannot trace: on the tiny engine it plants the graph
# breaks as what dynamo would say of them (TINY_GRAPH_BREAKS, tests/tiny/workload.py), at its own file's line
TINY_BREAKING = ('''import os\nos.environ.setdefault("TINY_GRAPH_BREAKS", "3|" + "Failed to trace builtin operator at " + '''
                 '''__file__ + ":7 in forward")\n''')


def tiny_session(tmp: Path, store: Path, *args: str, python: str | None = None,
                 repeats: int = 1) -> tuple[subprocess.CompletedProcess, Path]:
    """The tiny engine's compiled resnet50 at 1n1g (``--dlperf-compile compiled``), ``repeats`` launches."""
    report = tmp / "report"
    r = run_suite(*TINY_ENGINE, *SMALL_CASE, *QUICK_PROBES, "--dlperf-compile", "compiled", "-k", "1n1g",
                  "--dlperf-iters", "3", "--dlperf-repeats", str(repeats), f"--dlperf-report={report}",
                  f"--dlperf-baseline-dir={store}", *args, python=python, timeout=300)
    return r, report


@pytest.mark.slow  # what it checks is counted, not timed; about ten tiny launches
def test_a_python_whose_workers_break_the_graph_fails_against_the_baseline_and_as_an_ab_candidate(tmp_path):
    """A compiled case's recording keeps its counts and its cold launches' start-up; a second Python environment
    whose library breaks the graph fails against the stored baseline and as an A/B candidate, naming where the
    break is; the history site draws the counts. (Dynamo's own counters on real torch: the next test.)"""
    store = tmp_path / "store"
    # recorded with the session's own caches: the first launch compiles cold, the second from its cache
    r, report = tiny_session(tmp_path / "record", store, "--update-baselines", "--dlperf-cold-launches", "1",
                             repeats=2)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((report / "results.json").read_text())
    (case,) = doc["cases"]
    assert case["case"]["id"] == TINY_CASE and case["compile_cache"]["cold"] == [True, False], case["compile_cache"]
    (seed,) = case["compile_cache"]["dirs"]  # the warm launch compiled from the first's cache ...
    assert seed.startswith(str(report / "nodes")) and seed.endswith("/local0/inductor-cache")
    assert not Path(seed).exists() and not list((report / "nodes").glob("*/*/inductor-cache"))  # ... removed after
    got = case["metrics"]
    assert len(got["throughput"]["values"]) == 2  # the warm launch's window counts ...
    assert len(got["compile_time"]["values"]) == len(got["time_to_first_step"]["values"]) == 1  # ... its start-up not
    assert got["compile_time"]["value"] >= 0.3 and got["dynamo_compile_time"]["value"] >= 0.3  # a cold compile
    assert (got["graph_breaks"]["values"], got["recompiles"]["values"]) == ([0.0] * 2, [0.0] * 2)
    assert got["graph_breaks"]["rule"] == "count" and got["compile_time"]["rule"] == "tolerance"
    summary = (report / "summary.md").read_text()
    assert "## Compiled over eager" in summary and "| compile s | breaks | recompiles |" in summary
    assert "0 graph break(s), 0 recompilation(s)" in summary
    recorded = json.loads(next(store.glob("*.json")).read_text())["entries"][f"tiny/{TINY_CASE}"]
    assert len(recorded["runs"]["throughput"]) == 2 and recorded["runs"]["graph_breaks"] == [0.0, 0.0]
    assert len(recorded["runs"]["compile_time"]) == 1 and recorded["runs"]["compile_time"][0] >= 0.3

    venv = tmp_path / "venv"
    (python_over_this_one(venv) / "sitecustomize.py").write_text(TINY_BREAKING)
    breaking = str(venv / "bin" / "python")
    r, report = tiny_session(tmp_path / "stored", store, python=breaking)
    assert r.returncode == 1, r.stdout + r.stderr
    where = f"{venv}/lib/"
    assert f"REGRESSION {TINY_CASE} graph_breaks: " in r.stdout and "where the baseline had none" in r.stdout
    verdict = json.loads((report / "results.json").read_text())["cases"][0]["verdict"]["graph_breaks"]
    assert verdict["status"] == "regression" and BREAK in verdict["message"] and where in verdict["message"]
    assert "sitecustomize.py:7 in forward" in verdict["message"]
    summary = (report / "summary.md").read_text()
    assert "**REGRESSION**" in summary and "graph break: " + BREAK in summary

    r, report = tiny_session(tmp_path / "ab", store, "--dlperf-candidate", f"python={breaking}",
                             "--dlperf-ab-max-pairs", "3")
    assert r.returncode == 1, r.stdout + r.stderr
    ab = json.loads((report / "results.json").read_text())["ab"]["cases"][TINY_CASE]["metrics"]["graph_breaks"]
    assert ab["verdict"] == "worse" and ab["reference"] == 0 and ab["candidate"] == 3, ab
    assert "sitecustomize.py:7 in forward" in ab["reason"] and f"{TINY_CASE}: A/B " in r.stdout
    assert "graph breaks WORSE: candidate" in r.stdout

    site = tmp_path / "site"  # the history site draws the counts and compile time as it draws every gated metric
    h = subprocess.run([sys.executable, "-m", "pytest_dlperf.cli", "history", str(tmp_path), "-o", str(site)],
                       capture_output=True, text=True, timeout=300)
    assert h.returncode == 0, h.stdout + h.stderr
    page = "".join(p.read_text() for p in site.rglob("*.html") if TINY_CASE in p.read_text())
    assert "Graph breaks" in page and "Recompilations" in page and "Compile time" in page


# ---------------------------------------------------------------- on real torch
def python_breaking_the_graph(directory: Path) -> str:
    """A second Python environment the project knows nothing of: a venv over this one's packages whose
    sitecustomize logs from inside RMSNorm's forward; its interpreter's path."""
    (python_over_this_one(directory) / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return str(directory / "bin" / "python")


def compiled_session(tmp: Path, store: Path, cache: Path | None, *args: str, python: str | None = None,
                     env: dict | None = None, repeats: int = 1) -> tuple[subprocess.CompletedProcess, Path]:
    """The compiled decoder at 1n1g, ``repeats`` launches, its inductor caches kept in ``cache`` (None: the
    session's own)."""
    report = tmp / "report"
    kept = [f"--dlperf-compile-cache={cache}"] if cache is not None else []
    r = run_suite("-k", CASE, "--dlperf-repeats", str(repeats), *QUICK_PROBES, f"--dlperf-report={report}",
                  f"--dlperf-baseline-dir={store}", *kept, *args, python=python, env=env, timeout=900)
    return r, report


@pytest.mark.real  # (not exclusive: what it checks is counted, not timed)
def test_dynamo_counts_the_graph_breaks_a_library_makes_in_the_compiled_decoder_and_names_them(tmp_path):
    """One launch of the compiled decoder on real torch in a Python environment whose library logs from inside
    RMSNorm's forward: dynamo breaks the graph there, and the launch's figures are dynamo's own counts, naming
    the library's file and line; its cold compile's time and the cache it removed after it."""
    breaking = python_breaking_the_graph(tmp_path / "venv")
    r, report = compiled_session(tmp_path, tmp_path / "none", None, "--dlperf-baseline-missing", "skip",
                                 python=breaking)
    assert r.returncode == 0 and "1 skipped" in r.stdout, r.stdout + r.stderr  # no baseline: measured, not judged
    (case,) = json.loads((report / "results.json").read_text())["cases"]
    (run,) = case["runs"]
    record = run["meta"]["compile"]
    assert record["graph_breaks"] > 0 and record["cache"]["cold"] is True and record["window_compiles"] == 0, record
    said = record["breaks"]
    assert any(BREAK in x and f"{tmp_path / 'venv'}/lib/" in x and "sitecustomize.py:7 in forward" in x
               for x in said), said
    assert run["meta"]["wrapper"] == "torch.compile"
    got = case["metrics"]
    assert got["graph_breaks"]["values"] == [float(record["graph_breaks"])] and got["compile_time"]["value"] > 1
    assert not list((report / "nodes").glob("*/*/inductor-cache"))  # its own cache, removed at its end


@pytest.mark.real
def test_a_node_whose_compiler_fails_fails_the_case_naming_the_node_and_dynamos_first_line(tmp_path):
    """A C++ compiler that answers --version (so the preflight finds one) but fails every compile."""
    cxx = tmp_path / "broken-g++"
    cxx.write_text('#!/bin/sh\n[ "$1" = --version ] && { echo "broken-g++ 1.0"; exit 0; }\n'
                   'echo "broken-g++: internal compiler error: planted" >&2\nexit 1\n')
    cxx.chmod(0o755)
    r, report = compiled_session(tmp_path, tmp_path / "store", tmp_path / "cache", env={"CXX": str(cxx)})
    assert r.returncode == 1, r.stdout + r.stderr
    failure = json.loads((report / "results.json").read_text())["failures"][CASE]
    first = failure.splitlines()[0]
    assert first.startswith(f"{CASE}: node local0 (exit 1) failed: torch.compile failed on ")
    assert "(rank 0): " in first and "Error" in first.split("(rank 0): ")[1], failure
    assert "Traceback" not in failure and len(failure.splitlines()) <= 3, failure


def test_a_node_without_a_compiler_skips_the_compiled_case_naming_it_and_the_install_line(tmp_path):
    r = run_suite("-k", CASE, *QUICK_PROBES, f"--dlperf-report={tmp_path / 'report'}", timeout=300,
                  env={"CXX": str(tmp_path / "no-such-g++"), "PATH": os.environ["PATH"]})
    assert r.returncode == 0 and "1 skipped" in r.stdout, r.stdout + r.stderr
    assert (f"torch.compile (inductor) needs the C++ compiler of its CPU kernels ({tmp_path / 'no-such-g++'}), and "
            "local0 has none: install one there: apt-get install g++") in r.stdout
    assert not (tmp_path / "report" / "runs").exists()  # nothing launched
