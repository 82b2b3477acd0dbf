"""What got slower (issue #57): profiler traces read per step, two sides diffed operator by operator and rank
by rank, the block and ``dlperf explain``; the profiled launch of the torch workload, on real torch; and on the
tiny engine (whose profiled launch writes the same Chrome trace), an A/B session and a stored baseline's screen
whose candidate adds an operator to every step, explained.

The recorded traces (tests/data/traces) are two real profiled launches of a small decoder on two ranks (DDP,
gloo), stripped to the fields the reader uses and gzipped: one of this environment, one of an environment
whose attention computes extra query-key products (benchmarks/slowenv/dlperf_extramatmul.py)."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_dlperf import cli, explain
from pytest_dlperf.ab.explain import DEFAULT_LAUNCH_NOISE, launch_noise, wanted
from pytest_dlperf.ab.pairs import Launch, Pair, PairedCase
from pytest_dlperf.explain.profile import BETWEEN
from pytest_dlperf.explain.readers.kineto import profile_events
from tests import census
from tests.suite import QUICK_PROBES, ROOT, SMALL_CASE, TINY_ENGINE, python_over_this_one, run_suite

TRACES = Path(__file__).parent / "data" / "traces"
REFERENCE, CANDIDATE = TRACES / "llama-2rank-reference", TRACES / "llama-2rank-candidate"


def side(where: Path, role: str) -> list[explain.RankProfile]:
    ranks, problems = explain.from_dir(where, role)
    assert not problems
    return ranks


def _diff(reference: list[explain.RankProfile], candidate: list[explain.RankProfile], noise: float) -> explain.Diff:
    return explain.diff(explain.summarize(reference), explain.summarize(candidate), noise, candidate)


# ---------------------------------------------------------------- reading a trace
def test_a_recorded_trace_reads_into_its_steps_with_each_operators_self_time():
    ranks = side(REFERENCE, "reference")
    assert [r.rank for r in ranks] == [0, 1] and all(len(r.steps) == 3 for r in ranks)
    for r in ranks:
        for s in r.steps:
            # self times on the training thread add up to the step; the collectives' threads come on top
            assert sum(f.seconds for f in s.ops.values()) >= s.seconds * 0.999
            assert s.ops["aten::mm"].count > 0 and s.ops[BETWEEN].count == 0
            assert 0 < s.collective < s.seconds and s.ops["gloo:all_reduce"].count >= 1  # DDP's buckets
            assert not s.kernels and not s.shares  # a CPU trace: no kernels, no device breakdown


def _gpu_trace(comm_ms: float, compute_ms: float = 6.0) -> list[dict]:
    """A Kineto trace's events of two steps on a GPU, as the profiler writes them: the step markers and runtime
    calls on the CPU, the kernels and a copy on the device, joined by their correlation ids."""
    ev: list[dict] = []
    for k in range(2):
        t0 = 1_000_000.0 + k * 20_000
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k}", "pid": 1, "tid": 1, "ts": t0,
                   "dur": 10_000.0})
        # the step's copy on the GPU's timeline, as CUDA traces carry it: not a step of its own
        ev.append({"ph": "X", "cat": "gpu_user_annotation", "name": f"ProfilerStep#{k}", "pid": 0, "tid": 7,
                   "ts": t0 + 900, "dur": 9_000.0})
        for j, (name, cat, dur) in enumerate((("sm90_xmma_gemm_f32", "kernel", compute_ms * 1e3),
                                              ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "kernel", comm_ms * 1e3),
                                              ("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", 500.0))):
            corr = k * 10 + j
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": t0 + 10 + j, "dur": 5.0, "args": {"correlation": corr}})
            # the gemm from 1 ms; the all-reduce after it (4 ms overlapped with it); the copy at the end, its
            # launch inside the step, its run past the step's CPU side (it counts for the step that launched it)
            start = {0: t0 + 1_000, 1: t0 + 3_000, 2: t0 + 9_000 + (k + 1) * 1_500}[j]
            ev.append({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": start, "dur": dur,
                       "args": {"correlation": corr}})
    return ev


def test_a_gpu_trace_gives_its_kernels_per_step_and_the_steps_compute_communication_memory_and_idle():
    steps = profile_events(_gpu_trace(comm_ms=6.0), "gpu trace")
    assert len(steps) == 2  # the GPU-side copies of the markers are not steps
    s = steps[0]
    assert s.kernels["sm90_xmma_gemm_f32"].count == 1 and s.kernels["sm90_xmma_gemm_f32"].seconds == pytest.approx(0.006)
    # the copy ran after the step's CPU side (10.5-11 ms of a 10 ms step): still the step's, by its launch
    assert all(st.kernels["Memcpy HtoD (Pageable -> Device)"].count == 1 for st in steps)
    # gemm 1-7 ms; all-reduce 3-9 ms (2 ms not hidden); the copy 0.5 ms; the step is 10 ms
    assert s.shares == pytest.approx({"compute": 0.6, "communication": 0.2, "memory": 0.05, "idle": 0.15})
    assert s.collective == pytest.approx(0.006)  # on a GPU, the time in the communication kernels
    d = _diff([explain.RankProfile(0, steps, "a")],
              [explain.RankProfile(0, profile_events(_gpu_trace(comm_ms=8.0), "b"), "b")], 0.02).to_dict()
    assert d["unit"] == "kernels" and d["top"][0]["name"].startswith("ncclDevKernel_AllReduce")
    assert d["top"][0]["change_ms"] == pytest.approx(2.0) and d["top"][0]["beyond_noise"]
    (rank,) = d["ranks"]
    assert rank["candidate_breakdown"]["communication"] == pytest.approx(0.4)
    assert "communication 20% -> 40%" in "\n".join(explain.lines({"what": "t", "diff": d}))


def test_self_time_takes_the_nested_operators_out_so_the_training_thread_adds_up_to_the_step():
    def op(name: str, ts: float, dur: float, tid: int = 1, cat: str = "cpu_op") -> dict:
        return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur}

    events = [op("ProfilerStep#0", 0, 12_000, cat="user_annotation"), op("aten::linear", 0, 10_000),
              op("aten::matmul", 2_000, 3_000), op("aten::mm", 3_000, 1_000), op("aten::relu", 6_000, 2_000),
              op("gloo:all_reduce", 5_000, 4_000, tid=2, cat="user_annotation")]
    (s,) = profile_events(events, "nested")
    own = {n: round(f.seconds * 1e3, 6) for n, f in s.ops.items()}
    assert own == {BETWEEN: 2.0, "aten::linear": 5.0, "aten::matmul": 2.0, "aten::mm": 1.0, "aten::relu": 2.0,
                   "gloo:all_reduce": 4.0}
    assert sum(v for n, v in own.items() if n != "gloo:all_reduce") == pytest.approx(s.seconds * 1e3)
    assert s.collective == pytest.approx(0.004)


def _summary(ms: float, var: float, steps: int = 5, calls: float = 1.0) -> dict:
    ops = {"x": {"ms": ms, "var": var, "calls": calls}, BETWEEN: {"ms": 100.0 - ms, "var": 0.0, "calls": 0.0}}
    return {"contract": 1, "unit": "operators", "steps": steps, "step_ms": 100.0, "ops": ops,
            "ranks": [{"rank": 0, "step_ms": 100.0, "collective": 0.0, "breakdown": {}}]}


def test_the_noise_is_three_times_the_steps_and_the_launches_spread_together():
    """x takes 10 ms a step, variance 1 over 5 steps a side, launch spread 2%: its noise is
    3 x sqrt(1/5 + 1/5 + (0.02 x 10.25)^2) = 1.99 ms; 0.5 ms more is within it, 3 ms more beyond."""
    (x,) = [c for c in explain.diff(_summary(10, 1), _summary(10.5, 1), 0.02).top if c.name == "x"]
    assert x.noise_ms == pytest.approx(3 * (0.4 + (0.02 * 10.25) ** 2) ** 0.5) and not x.beyond(100.0)
    (x,) = [c for c in explain.diff(_summary(10, 1), _summary(13, 1), 0.02).top if c.name == "x"]
    assert x.beyond(100.0) and x.calls == "" and x.change_ms == pytest.approx(3.0)
    # a call more per step is named whatever the time
    (x,) = [c for c in explain.diff(_summary(10, 1), _summary(10, 1, calls=2.0), 0.02).top if c.name == "x"]
    assert x.calls == "more" and x.beyond(100.0)
    # a CPU operator against a GPU kernel table is said, not diffed
    gpu = {**_summary(10, 1), "unit": "kernels"}
    assert "cannot be diffed" in explain.compared({}, _summary(10, 1), gpu, 0.02, [])["why"]


def test_profiled_launches_the_host_moved_apart_beyond_what_the_pairs_measured_widen_the_noise():
    """The pairs found the sides equal (ratio 1.0), but the candidate's profiled launch ran its steps 20% slower
    throughout: x, 20% slower with them, is then within the noise; without the pairs' ratio it is beyond."""
    def side(scale: float) -> dict:
        ops = {f"op{i}": {"ms": 5.0 * scale, "var": 0.01, "calls": 1.0} for i in range(8)}
        return {"contract": 1, "unit": "operators", "steps": 5, "step_ms": 40.0 * scale, "ops": ops,
                "ranks": [{"rank": 0, "step_ms": 40.0 * scale, "collective": 0.0, "breakdown": {}}]}

    moved = explain.diff(side(1.0), side(1.2), 0.02, throughput_ratio=1.0)
    assert moved.drift == pytest.approx(math.log(1.2)) and moved.beyond == 0
    said = "\n".join(explain.lines({"what": "t", "diff": moved.to_dict()}))
    assert "the profiled launches' steps moved 18.2% apart beyond what the measured launches found" in said
    assert explain.diff(side(1.0), side(1.2), 0.02).beyond == 8  # not known: the pairs' spread alone
    # the pairs found the candidate 1/1.2 as fast: its profiled steps 20% longer are what they measured
    assert explain.diff(side(1.0), side(1.2), 0.02, throughput_ratio=1 / 1.2).drift == pytest.approx(0.0, abs=1e-12)


def test_operators_the_host_moved_each_its_own_way_widen_the_noise_and_one_that_moved_alone_stands_out():
    """Ten operators, each moved by the host between the two launches by its own amount (+-30%, as memory-bound
    and multi-threaded ones move on a shared CPU) while the steps agree: none is beyond the noise, which says
    the dispersion; one of them three times slower besides: that one is."""
    moves = [1.3, 0.75, 1.2, 0.8, 1.25, 0.7, 1.1, 0.9, 1.15, 0.85]

    def side(factors: list[float]) -> dict:
        ops = {f"op{i}": {"ms": 4.0 * f, "var": 0.01, "calls": 1.0} for i, f in enumerate(factors)}
        return {"contract": 1, "unit": "operators", "steps": 5, "step_ms": 40.0, "ops": ops,
                "ranks": [{"rank": 0, "step_ms": 40.0, "collective": 0.0, "breakdown": {}}]}

    d = explain.diff(side([1.0] * 10), side(moves), 0.02, throughput_ratio=1.0)
    assert d.dispersion is not None and d.dispersion > 0.15 and d.beyond == 0
    hot = explain.diff(side([1.0] * 10), side([3.0, *moves[1:]]), 0.02, throughput_ratio=1.0)
    assert hot.beyond == 1 and hot.top[0].name == "op0"
    assert explain.diff(side([1.0] * 7), side(moves[:7]), 0.02).dispersion is None  # too few operators to say


# ---------------------------------------------------------------- the diff
def test_the_planted_products_are_the_top_line_and_a_trace_against_itself_shows_nothing():
    d = _diff(side(REFERENCE, "reference"), side(CANDIDATE, "candidate"), DEFAULT_LAUNCH_NOISE)
    top = d.top[0]
    assert top.name == "aten::bmm" and top.calls == "added" and top.reference_ms == 0 < top.candidate_ms
    assert "aten::bmm" in d.added and not d.removed and d.beyond >= 1
    same = _diff(side(REFERENCE, "reference"), side(REFERENCE, "reference"), DEFAULT_LAUNCH_NOISE)
    assert same.beyond == 0 and not same.added and all(c.change_ms == 0 for c in same.top)
    block = "\n".join(explain.lines({"what": "t", "diff": same.to_dict()}))
    assert "0 of" in block and "changed beyond the noise" in block and "within" in block


def _collective_rank(rank: int, wait_ms: float, n: int = 4) -> explain.RankProfile:
    from pytest_dlperf.explain.profile import StepProfile

    return explain.RankProfile(rank, [StepProfile(0.1, collective=(wait_ms + 0.1 * (k % 2)) / 1e3) for k in range(n)],
                               f"rank {rank}")


def test_a_rank_the_others_wait_for_at_the_collectives_is_named_the_straggler():
    ranks = [_collective_rank(0, 40.0), _collective_rank(1, 41.0), _collective_rank(2, 2.0), _collective_rank(3, 39.0)]
    d = _diff(ranks, ranks, 0.02)
    assert d.straggler is not None and d.straggler["rank"] == 2 and d.straggler["waits_most"] == 1
    said = "\n".join(explain.lines({"what": "t", "diff": d.to_dict()}))
    assert "straggler: rank 2 (the others wait 40.0 ms a step" in said
    even = [_collective_rank(r, 40.0 + r * 0.5) for r in range(4)]
    assert _diff(even, even, 0.02).straggler is None


# ---------------------------------------------------------------- bad input
def test_a_trace_that_cannot_be_read_is_named_and_the_other_ranks_still_diff(tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    for f in REFERENCE.iterdir():
        (broken / f.name).write_bytes(f.read_bytes())
    (broken / "rank1.json.gz").write_bytes(b"not gzip")
    (broken / "rank2.json").write_text('{"traceEvents": [{"ph": "X", "name": "aten::mm", "ts": 1, "dur": 2}]}')
    ranks, problems = explain.from_dir(broken, "candidate")
    assert [r.rank for r in ranks] == [0]
    assert any("rank 1's trace" in p and "cannot be read" in p for p in problems)
    assert any("rank 2's trace" in p and "no ProfilerStep# markers" in p for p in problems)
    got = explain.explanation(explain.from_dir(REFERENCE, "reference"), (ranks, problems), 0.02, what="t")
    assert got["diff"]["ranks"] and len(got["problems"]) == 3 and got["problems"][2] == "rank 1 was profiled on the reference only"
    assert sum(ln.startswith("  ! candidate") for ln in explain.lines(got)) == 2
    none = explain.explanation(explain.from_dir(tmp_path / "nowhere", "reference"), (ranks, problems), 0.02, what="t")
    assert "diff" not in none and "not explained: no trace of the reference could be read" in explain.lines(none)[0]


def test_a_launch_whose_ranks_could_not_write_or_copy_their_traces_says_which():
    meta = {"profile": {"tool": "torch.profiler", "steps": 3, "ranks": [
        {"rank": 0, "error": "could not write /x/rank0.json: OSError: [Errno 28] No space left on device"},
        {"rank": 1, "file": "/x/rank1.json", "error": "could not copy n1:/x/rank1.json: gone"}]}}
    ranks, problems = explain.from_meta(meta, "candidate")
    assert not ranks and problems == [
        "candidate rank 0: could not write /x/rank0.json: OSError: [Errno 28] No space left on device",
        "candidate rank 1: could not copy n1:/x/rank1.json: gone"]
    assert explain.from_meta({}, "reference") == ([], ["reference: the launch kept no profile record"])


def test_dlperf_explain_diffs_two_saved_launches_and_names_a_directory_without_traces(tmp_path, capsys):
    assert cli.main(["explain", str(REFERENCE), str(CANDIDATE)]) == 0
    out = capsys.readouterr().out.splitlines()
    header = next(i for i, ln in enumerate(out) if ln.split()[:2] == ["operators", "ms/step"])
    assert out[0].startswith("what got slower (") and out[header + 1].split()[0] == "aten::bmm"
    assert cli.main(["explain", str(REFERENCE), str(CANDIDATE), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["diff"]["top"][0]["name"] == "aten::bmm"
    assert cli.main(["explain", str(tmp_path), str(CANDIDATE)]) == 1
    out = capsys.readouterr().out
    assert "not explained: no trace of the reference could be read" in out and "holds no trace: rank<R>.json (or .json.gz) (kineto)" in out


# ---------------------------------------------------------------- when
def _rec(verdict: str, ratios: list[float], metrics: dict | None = None) -> PairedCase:
    rec = PairedCase(case=None, name="c")  # type: ignore[arg-type]
    for i, r in enumerate(ratios):
        rec.pairs.append(Pair(i, "reference", Launch("reference", 100.0, None), Launch("candidate", 100.0 * r, None)))  # type: ignore[arg-type]
    rec.verdict, rec.metrics = {"verdict": verdict}, metrics or {}
    return rec


def test_auto_explains_a_slower_or_worse_case_always_every_case_and_never_none():
    slower, same, worse = _rec("slower", [0.9] * 3), _rec("same", [1.0] * 3), _rec("same", [1.0] * 3, {"peak_memory": {"verdict": "worse"}})
    assert [wanted(r, "auto") for r in (slower, same, worse)] == [True, False, True]
    assert wanted(same, "always") and not wanted(slower, "never")
    failed = _rec("slower", [0.9] * 3)
    failed.error = "a launch failed"
    assert not wanted(failed, "always") and not wanted(_rec("slower", []), "always")
    assert launch_noise(_rec("slower", [0.9, 0.95])) == DEFAULT_LAUNCH_NOISE
    assert 0.05 < launch_noise(_rec("slower", [0.9, 0.95, 1.0])) < 0.1
    # one pair a busy host disturbed (its reference four times slower) leaves the launch noise near the others'
    assert launch_noise(_rec("slower", [0.9, 0.91, 0.92, 0.9, 3.6])) < 0.02
    assert launch_noise(_rec("slower", [0.9, 0.9, 0.9])) == 0.01


# ---------------------------------------------------------------- the profiled launch, real torch
@pytest.mark.real
def test_a_trace_that_cannot_be_written_is_said_and_the_rank_goes_on(tmp_path):
    (tmp_path / "file").write_text("a file where the directory should be")
    code = ("import sys, torch; sys.path.insert(0, sys.argv[1]); import torchprofile, json\n"
            "x = torch.randn(64, 64, requires_grad=True)\n"
            "step = lambda: (x @ x).sum()\n"
            "print(json.dumps(torchprofile.profile_steps(step, 2, sys.argv[2], 0, False, lambda: None)))\n"
            "print(json.dumps(torchprofile.profile_steps(step, 2, sys.argv[3], 0, False, lambda: None)))\n")
    with census.shell_launch("profile_steps", "torch.profiler", ("torch",), 1):
        r = subprocess.run([sys.executable, "-c", code, str(ROOT / "pytest_dlperf" / "node" / "workloads"),
                            str(tmp_path / "file" / "trace"), str(tmp_path / "ok")], capture_output=True, text=True,
                           timeout=120)
    assert r.returncode == 0, r.stderr
    bad, good = (json.loads(ln) for ln in r.stdout.strip().splitlines()[-2:])
    assert "file" not in bad and bad["error"].startswith(f"could not write {tmp_path / 'file' / 'trace' / 'rank0.json'}")
    assert good["file"] == str(tmp_path / "ok" / "rank0.json") and "error" not in good
    assert len(side(tmp_path / "ok", "reference")[0].steps) == 2


@pytest.mark.real
def test_a_recording_keeps_the_decoders_profile_from_one_profiled_launch_on_torch(tmp_path):
    """--update-baselines --dlperf-explain always on real torch: one launch, then one profiled launch (never
    counted) whose rank's Chrome trace is read and summarized into the entry (the decoder's matrix products; no
    batched one, which tests/data/traces' candidate adds)."""
    store = tmp_path / "store"
    r = run_suite(f"--dlperf-report={tmp_path / 'rec'}", f"--dlperf-baseline-dir={store}", "--backend", "ddp",
                  "--dlperf-model", "llama", "--dlperf-warmup-iters", "1", "--dlperf-iters", "4", "-k",
                  "1n1g and not compiled", "--dlperf-nodes", "1", "--dlperf-repeats", "1", "--dlperf-explain-steps", "3",
                  "--dlperf-probe-seconds", "0.5", "--update-baselines", "--dlperf-explain", "always")
    assert r.returncode == 0, r.stdout + r.stderr
    (entry,) = json.loads(next(store.glob("*.json")).read_text())["entries"].values()
    kept = entry["trace_summary"]
    assert explain.problem(kept) is None and kept["ops"]["aten::mm"]["calls"] > 0 and "aten::bmm" not in kept["ops"]
    (trace,) = (tmp_path / "rec" / "runs").glob("*/explain-recorded/trace/rank0.json")
    assert len(side(trace.parent, "reference")[0].steps) == 3 and len(entry["runs"]["throughput"]) == 1


# ---------------------------------------------------------------- explained sessions on the tiny engine
# A library that adds work to every step, as an attention that computes more products would: on the tiny engine an
# operator of its own in every step (TINY_EXTRA_OP, tests/tiny/workload.py), which its profiled launch traces.
EXTRA_OP = '''import os\nos.environ.setdefault("TINY_EXTRA_OP", "aten::bmm:{share}")\n'''
TINY_ONE_NODE = (*TINY_ENGINE, *SMALL_CASE, *QUICK_PROBES, "--dlperf-iters", "4", "-k", "1n1g", "--dlperf-nodes", "1")


def python_with_extra_op(directory: Path, share: float) -> str:
    (python_over_this_one(directory) / "sitecustomize.py").write_text(EXTRA_OP.format(share=share))
    return str(directory / "bin" / "python")


@pytest.mark.slow  # six launches and two profiled ones
def test_an_extra_operator_in_every_step_is_the_top_line_of_the_ab_block(tmp_path):
    """A second environment whose library adds an operator to every step (the project knows nothing of it): each
    side takes one profiled launch after its pairs, never counted, and the block's top line is the operator it
    added, in the terminal, results.json and summary.md."""
    candidate = python_with_extra_op(tmp_path / "env", 0.5)
    report = tmp_path / "report"
    r = run_suite(f"--dlperf-report={report}", f"--dlperf-baseline-dir={tmp_path / 'b'}", *TINY_ONE_NODE,
                  "--dlperf-candidate", f"python={candidate}", "--dlperf-ab-max-pairs", "3", "--dlperf-explain", "always",
                  "--dlperf-explain-steps", "3")
    doc = json.loads((report / "results.json").read_text())
    (name, case), = doc["ab"]["cases"].items()
    e = case["explanation"]
    assert e["diff"]["top"][0]["name"] == "aten::bmm" and e["diff"]["top"][0]["calls"] == "added", r.stdout
    assert not e["problems"] and e["diff"]["steps"] == {"reference": 3, "candidate": 3}
    runs = report / "runs" / name
    assert sorted(p.name for p in runs.glob("explain-*")) == ["explain-candidate", "explain-reference"]
    for role in ("reference", "candidate"):
        assert (runs / f"explain-{role}" / "trace" / "rank0.json").stat().st_size > 1000
    assert case["pairs"] == 3 and len(doc["cases"][0]["throughputs"]) == 3  # the profiled launches not counted
    assert "what got slower (one profiled launch a side" in r.stdout and "aten::bmm" in r.stdout
    assert "aten::bmm" in (report / "summary.md").read_text()


@pytest.mark.slow  # against a recording made x4 faster: no host's move hides it
def test_a_regression_no_reference_confirms_is_explained_against_the_profile_its_baseline_recorded(tmp_path):
    """--update-baselines --dlperf-explain always keeps the recording's profile summarized in its entry (not the
    traces); a later session under a second python whose library adds an operator to every step fails its screen,
    no side-by-side confirmation runs (--dlperf-confirm-pairs 0), and the REGRESSION is explained against that
    recorded profile by one profiled launch of this session.

    The screen fails against a copy of the recording whose runs are scaled until its slowest is x4 its fastest
    (its software identity, paces and profile kept): the extra operator alone was hidden by a host that ran faster
    at this session than at the recording (a shared VM's speed moves by half between minutes). Three runs a side,
    so that the rank test decides (every run of this session slower than every run of the copy: p = 1/20). What
    follows the failure is the claim: not confirmed, explained against the recorded profile."""
    candidate = python_with_extra_op(tmp_path / "env", 1.0)
    store = tmp_path / "store"
    args = (*TINY_ONE_NODE, "--dlperf-repeats", "3", "--dlperf-explain-steps", "3", "--dlperf-confirm-pairs", "0",
            "--dlperf-hardware", "skip")
    r = run_suite(f"--dlperf-report={tmp_path / 'rec'}", f"--dlperf-baseline-dir={store}", *args, "--update-baselines",
                  "--dlperf-explain", "always")
    assert r.returncode == 0, r.stdout + r.stderr
    (entry,) = json.loads(next(store.glob("*.json")).read_text())["entries"].values()
    kept = entry["trace_summary"]
    assert explain.problem(kept) is None and kept["ops"]["aten::mm"]["calls"] > 0 and "aten::bmm" not in kept["ops"]
    assert list((tmp_path / "rec" / "runs").glob("*/explain-recorded/trace/rank0.json"))
    recording = next(store.glob("*.json"))
    doc = json.loads(recording.read_text())
    (entry,) = doc["entries"].values()
    runs = entry["runs"]["throughput"]
    scale = 4 * max(runs) / min(runs)
    entry["runs"]["throughput"] = [x * scale for x in runs]
    faster = tmp_path / "faster"
    faster.mkdir()
    (faster / recording.name).write_text(json.dumps(doc))
    r = run_suite(f"--dlperf-report={tmp_path / 'gate'}", f"--dlperf-baseline-dir={faster}", *args,
                  "--dlperf-tolerance", "0.01", python=candidate)
    assert "REGRESSION" in r.stdout and "not confirmed side by side" in r.stdout, r.stdout + r.stderr
    assert "what got slower (this session's profiled launch (3 steps, never counted) against the recording's" in r.stdout
    (case,) = json.loads((tmp_path / "gate" / "results.json").read_text())["cases"]
    e = explain.of_confirmation(case["verdict"]["throughput"]["confirmation"])
    assert e["diff"]["top"][0]["name"] == "aten::bmm" and e["diff"]["top"][0]["calls"] == "added", e
    assert len(case["throughputs"]) == 3  # the profiled launch is not counted


def test_each_ranks_trace_is_copied_from_its_node_and_what_could_not_be_is_named(tmp_path):
    """torchrun's ranks: node i holds ranks i*R to i*R+R-1. A copy that fails, and a rank on no node of the launch,
    are each said in the rank's entry; a launch without a profile record says so."""
    from types import SimpleNamespace

    from pytest_dlperf.measure.runner import _fetch_traces

    copied = []

    def download(node, remote, local):  # noqa: ANN001, ANN202
        if remote.endswith("rank3.json"):
            raise OSError("gone")
        copied.append((node.name, remote))
        local.write_text("{}")

    plan = SimpleNamespace(nodes=[SimpleNamespace(name="n0"), SimpleNamespace(name="n1")],
                           case=SimpleNamespace(topology=SimpleNamespace(devices_per_node=2)))
    ranks = [{"rank": r, "file": f"/run/trace/rank{r}.json"} for r in range(5)] + [{"rank": 5, "error": "could not write"}]
    meta = {"local_world_size": 2, "profile": {"ranks": ranks}}
    _fetch_traces(SimpleNamespace(download=download), plan, meta, tmp_path / "trace")
    assert copied == [("n0", "/run/trace/rank0.json"), ("n0", "/run/trace/rank1.json"), ("n1", "/run/trace/rank2.json")]
    assert ranks[0]["local"] == str(tmp_path / "trace" / "rank0.json")
    assert ranks[3]["error"] == "could not copy n1:/run/trace/rank3.json: gone" and "local" not in ranks[3]
    assert ranks[4]["error"] == "rank 4 is on no node of the launch (2 nodes of 2 ranks)"
    assert ranks[5] == {"rank": 5, "error": "could not write"}
    bare: dict = {}
    _fetch_traces(SimpleNamespace(download=download), plan, bare, tmp_path / "none")
    assert explain.from_meta(bare, "candidate")[1][0].startswith("candidate: the workload wrote no profile record")


def test_a_profiled_launch_that_cannot_run_or_raises_is_the_blocks_why(monkeypatch):
    from types import SimpleNamespace

    from pytest_dlperf.ab import explain as ab_explain
    from pytest_dlperf.specs import Measurement

    def bench(unprofiled):  # noqa: ANN001, ANN202
        return SimpleNamespace(launcher=lambda case: SimpleNamespace(name="tf", unprofiled=unprofiled))

    got = ab_explain.profile_once(bench("its profiler writes XPlane"), None, Measurement(1, 1, 1, 60.0), 3, "candidate")
    assert got.why == "--backend tf: its profiler writes XPlane" and not got.ranks

    def boom(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise RuntimeError("the disk is gone\nand more")

    monkeypatch.setattr(ab_explain, "launch", boom)
    got = ab_explain.profile_once(bench(None), None, Measurement(1, 1, 1, 60.0), 3, "candidate")
    assert got.why == "the profiled launch raised RuntimeError: the disk is gone"
    said = ab_explain.against_recorded(bench(None), None, Measurement(1, 1, 1, 60.0), ab_explain.ExplainOptions(), {"contract": 9}, 0.02)
    assert said["why"] == "the baseline's recorded profile cannot be read: profile summary contract 9, this harness reads 1"


def test_a_new_trace_format_is_one_reader_and_the_diff_and_block_are_unchanged(tmp_path, monkeypatch):
    """Another profiler's format behind the TraceReader interface: lines of ``STEP_SECONDS OP SECONDS`` in
    ``rank<R>.steps``. Added to READERS, its directories read, diff and render as Kineto's do."""
    import re

    from pytest_dlperf.explain import readers
    from pytest_dlperf.explain.profile import OpFigure, RankProfile, StepProfile

    class StepLines:
        format, files = "step-lines", "rank<R>.steps"

        def rank_of(self, path: Path) -> int | None:
            m = re.match(r"^rank(\d+)\.steps$", path.name)
            return int(m.group(1)) if m else None

        def read(self, path: Path, rank: int) -> RankProfile:
            steps = []
            for line in path.read_text().splitlines():
                step, op, seconds = line.split()
                steps.append(StepProfile(float(step), {op: OpFigure(float(seconds), 1),
                                                       BETWEEN: OpFigure(float(step) - float(seconds), 0)}))
            return RankProfile(rank, steps, str(path))

    for side, matmul in (("ref", 0.050), ("cand", 0.080)):
        (tmp_path / side).mkdir()
        (tmp_path / side / "rank0.steps").write_text("".join(f"{matmul + 0.010} aten::mm {matmul}\n" for _ in range(5)))
    (tmp_path / "ref" / "notes.txt").write_text("not a trace\n")
    assert explain.from_dir(tmp_path / "ref", "reference")[1] == ["reference: " + f"{tmp_path / 'ref'} holds no trace: "
                                                                  "rank<R>.json (or .json.gz) (kineto)"]
    monkeypatch.setattr(readers, "READERS", (*readers.READERS, StepLines()))
    ref, cand = explain.from_dir(tmp_path / "ref", "reference"), explain.from_dir(tmp_path / "cand", "candidate")
    assert ref[1] == cand[1] == [] and [r.rank for r in ref[0]] == [0]
    got = explain.explanation(ref, cand, 0.05)
    top = got["diff"]["top"][0]
    assert top["name"] == "aten::mm" and "aten::mm" in "\n".join(explain.lines(got)), got
