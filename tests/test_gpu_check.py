"""benchmarks/gpu_check.py: on a machine without a GPU it says so for every figure and invents none;
on a GPU its rows are read from what the suite writes (results.json of a session, of an A/B
session), here made by the suite's own code from recorded-shape NVML data."""
from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest
import torch

from pytest_dlperf.ab.judges import assessment_dict
from pytest_dlperf.ab.pairs import Launch, Pair, PairedCase
from pytest_dlperf.ab.sequential import decide

from .test_gpuwatch import CASE, M, figures_of, gpu_run

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "benchmarks" / "gpu_check.py")
gpu_check = importlib.util.module_from_spec(spec)
sys.modules["gpu_check"] = gpu_check  # its dataclasses look their module up
spec.loader.exec_module(gpu_check)


@pytest.mark.skipif(torch.cuda.is_available(), reason="says what it does where there is no GPU")
def test_without_a_gpu_every_figure_is_not_taken_and_says_why(tmp_path, capsys):
    assert gpu_check.main(["--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "gpu_check.json").read_text())
    assert doc["machine"]["gpu"] is None and doc["steps"] == {}
    assert [n["what"] for n in doc["not_taken"]] == ["install", "every default GPU case", "decoder plain-loop ratio",
                                                    "A/B planted 2%", "A/A"]
    assert all(n["why"].startswith("no CUDA GPU here: torch ") for n in doc["not_taken"])
    assert all(set(r) == {"what", "result"} for r in doc["rows"])  # no figure in any row
    out = capsys.readouterr().out
    assert "gpu_check: no GPU;" in out and "5 figure(s) not taken" in out and (tmp_path / "gpu_check-logs.tar.gz").exists()


def test_bad_arguments_are_one_line(capsys):
    with pytest.raises(SystemExit) as err:
        gpu_check.main(["--only", "cases,nope"])
    assert err.value.code == 2 and "--only 'cases,nope': name steps of cases, decoder, planted, aa, cudnn" in \
        capsys.readouterr().err


def test_a_cases_row_holds_its_figures_and_what_it_did_not_measure():
    from pytest_dlperf.results.cases import summarize
    from pytest_dlperf.watchers.gpuwatch import not_measured

    bound = summarize(CASE, M, [gpu_run(figures_of(n0="h100-gpu-bound.log"), k) for k in range(2)]).to_dict()
    row = gpu_check.case_row(bound)
    assert (row["what"], row["GPU busy"], row["energy"], row["result"]) == (
        "resnet50-fp32-bs256-224px-1n1g", "99.9%", "283 mJ/sample", "measured")
    assert row["figures"]["busy_share"] == pytest.approx(0.999) and row["figures"]["mfu"] is None
    host = gpu_check.case_row(summarize(CASE, M, [gpu_run(figures_of(n0="h200-host-bound.log"))]).to_dict())
    assert host["result"].startswith("host-bound: this figure follows the CPU's dispatch speed")
    why = "n0:gpu.log: the GPU watcher could not read NVML: ImportError: No module named 'pynvml'"
    none = gpu_check.case_row(summarize(CASE, M, [gpu_run(not_measured(why))]).to_dict())
    assert (none["GPU busy"], none["energy"], none["result"]) == ("-", "-", why)


def recorded_step(results: dict[str, dict], log: str = ""):  # noqa: ANN201 - gpu_check.run_step's shape
    """A stand-in for gpu_check.run_step: each step exits 0 with ``log`` as its output, and the steps named in
    ``results`` leave that results.json (a recorded shape) in their --dlperf-report directory."""
    def step(check, name, planned, argv, env=None):  # noqa: ANN001, ANN202
        check.steps[name] = {"returncode": 0, "log": f"{name}.log"}
        (check.out / f"{name}.log").write_text(log)
        if name in results:
            report = Path(next(a for a in argv if a.startswith("--dlperf-report=")).split("=", 1)[1])
            report.mkdir(parents=True)
            (report / "results.json").write_text(json.dumps(results[name]))
        return True

    return step


def test_an_ab_row_is_the_sessions_verdict(tmp_path, monkeypatch):
    """The A/B session's results.json, as the session writes its paired case, read into one row."""
    ratios = [0.979, 0.981, 0.980]
    pairs = [Pair(i, "reference", Launch("reference", 3000.0, gpu_run({}, 2 * i), {"time_to_first_step": 9.0}),
                  Launch("candidate", 3000.0 * r, gpu_run({}, 2 * i + 1), {"time_to_first_step": 9.5}))
             for i, r in enumerate(ratios)]
    paired = PairedCase(CASE, CASE.id, pairs, verdict=assessment_dict(decide([math.log(r) for r in ratios])),
                        complete=True)
    check = gpu_check.Check(tmp_path, deadline=float("inf"))

    monkeypatch.setattr(gpu_check, "run_step", recorded_step({"planted": {"ab": {"cases": {CASE.id: paired.to_dict()}}}}))
    gpu_check.ab(check, "planted", "A/B planted 2%", "env=DLPERF_PLANT_SLOWDOWN=0.02", 6, 150)
    (row,) = check.rows
    assert row["result"].startswith(f"{paired.verdict['verdict'].upper()} after 3 pair(s), ratio 0.98")
    assert row["figures"]["time_to_first_step"] == {"reference": [9.0] * 3, "candidate": [9.5] * 3}


def test_the_data_step_reads_each_sources_row_and_says_which_was_not_measured(tmp_path, monkeypatch):
    """--only data on a GPU: the dataset made, then one session's synthetic and real cases (recorded shape) read
    into rows with the input wait and the loader alone; DALI, not measured there, said with why."""
    check = gpu_check.Check(tmp_path, deadline=float("inf"))

    def metric(value):  # noqa: ANN001, ANN202
        return {"value": value}

    cases = [{"case": {"id": "resnet50-fp32-bs256-224px-1n1g", "data": "synthetic", "unit": "samples/s"},
              "median": 3000.0, "metrics": {"throughput": metric(3000.0)}},
             {"case": {"id": "resnet50-fp32-bs256-224px-real-1n1g", "data": "real", "unit": "samples/s"},
              "median": 2400.0, "metrics": {"throughput": metric(2400.0), "input_wait": metric(0.021),
                                           "input_share": {"value": 0.19, "flag": "data-bound: ..."},
                                           "loader_throughput": metric(2500.0)}}]

    monkeypatch.setattr(gpu_check, "run_step", recorded_step({"data": {"cases": cases}},
                                                             "1 skipped: --backend ddp: nvidia.dali is not installed\n"))
    gpu_check.data(check)
    synthetic, real = check.rows[:2]
    assert synthetic["what"] == "resnet50-fp32-bs256-224px-1n1g" and synthetic["throughput"] == "3000.0 samples/s"
    assert real["result"] == "input wait 21 ms, share 19.0%, loader alone 2500 samples/s; data-bound: ..."
    assert real["figures"]["input_wait"] == 0.021
    assert check.rows[2]["what"] == "resnet50 fp32 1n1g on dali data"
    assert "not taken: no case measured: exit 0: 1 skipped: --backend ddp: nvidia.dali is not installed" in \
        check.rows[2]["result"]


def test_the_explain_step_reads_the_blocks_top_kernel_and_says_when_there_is_none(tmp_path, monkeypatch):
    """--only explain on a GPU: the slowed environment made, then the A/B session's explanation (recorded shape)
    read into a row with its top kernel; a session that explained nothing is a row saying why."""
    top = {"name": "sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc", "change_ms": 3.25, "calls": "more",
           "beyond_noise": True}
    explanation = {"what": "one profiled launch a side", "problems": [],
                   "diff": {"unit": "kernels", "top": [top], "beyond_noise": 4, "ranks": [{"rank": 0}]}}
    results = {"ab": {"cases": {"resnet50-fp32-bs256-224px-1n1g": {"verdict": "slower", "explanation": explanation}}}}

    monkeypatch.setattr(gpu_check, "run_step", recorded_step({"explain": results}))
    check = gpu_check.Check(tmp_path, deadline=float("inf"))
    gpu_check.explained(check)
    (row,) = check.rows
    assert row["result"] == f"kernels: top {top['name'][:60]} +3.25 ms/step (more); 4 beyond the noise"
    explanation.pop("diff")
    explanation["why"] = "a profiled launch failed: ..."
    (tmp_path / "again").mkdir()
    check = gpu_check.Check(tmp_path / "again", deadline=float("inf"))
    gpu_check.explained(check)
    assert "a profiled launch failed: ..." in check.rows[0]["result"]
