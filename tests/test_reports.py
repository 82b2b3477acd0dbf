"""Reports people read and tools load: summary.md (regressions first), PNG plots, pytest-benchmark's
JSON (its compare command reads it), JUnit properties, GitHub's step summary, and the ``dlperf``
command that re-renders and compares saved results. All from real runs."""
from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from .suite import QUICK_PROBES, SMALL_CASE, TINY_ENGINE, run_suite

ROOT = Path(__file__).resolve().parent.parent
# The tiny engine (tests/tiny): reports of real launches, without torch's start-up in each
TINY = [*TINY_ENGINE, *SMALL_CASE, *QUICK_PROBES, "--dlperf-iters", "3", "--dlperf-repeats", "3", "--dlperf-timeout", "240"]
# The gated fixture judges the speed of real runs: nothing beside this module's tests under xdist.
pytestmark = pytest.mark.slow  # a module recording and a gated session of the tiny engine
PNG = b"\x89PNG\r\n\x1a\n"


def run(report: Path, store: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """A session of TINY whose steps each take a fixed 20 ms (TINY_STEP_SECONDS): the doubled recording below is a
    regression whatever the host's speed does between the two sessions."""
    return run_suite(f"--dlperf-report={report}", f"--dlperf-baseline-dir={store}", *TINY, *args,
                     env={"TINY_STEP_SECONDS": "0.02", **(env or {})})


@pytest.fixture(scope="module")
def gated(tmp_path_factory) -> Path:
    """A real run gated against a recording of itself whose 2n1g figures were doubled: a regression."""
    tmp = tmp_path_factory.mktemp("reports")
    store = tmp / "store"
    r = run(tmp / "recorded", store, "--update-baselines")
    assert r.returncode == 0, r.stdout + r.stderr
    (path,) = store.glob("*.json")
    doc = json.loads(path.read_text())
    e = doc["entries"]["tiny/resnet50-fp32-bs2-32px-2n1g"]
    e["runs"]["throughput"] = [2 * t for t in e["runs"]["throughput"]]
    e["versions"]["python"] = "3.9.0"  # as if recorded before a Python upgrade: its versions and its software say so
    for node in doc["software"][e["software"]]["nodes"]:
        node["python"] = "3.9.0"
    path.write_text(json.dumps(doc, indent=1))
    summary = tmp / "step-summary.md"
    summary.write_text("earlier step\n")
    r = run(tmp / "gated", store, "--junitxml", str(tmp / "junit.xml"), "--dlperf-plots=on",
            env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert r.returncode == 1, r.stdout + r.stderr
    (tmp / "gated.out").write_text(r.stdout)
    return tmp


def test_a_regression_names_what_changed_since_the_baseline(gated):
    out = (gated / "gated.out").read_text()
    now = json.loads((gated / "gated" / "results.json").read_text())["cases"][0]["runs"][0]["meta"]["python"]
    assert f"changed since the recording: python version 3.9.0 -> {now} on every node" in out, out
    assert f"Changed since the baseline: python version 3.9.0 -> {now}" in (gated / "gated" / "summary.md").read_text()
    recorded = json.loads(next((gated / "store").glob("*.json")).read_text())
    assert all("git" in e["versions"] for e in recorded["entries"].values())  # the commit is stored with a recording


def test_summary_md_puts_the_regression_first_with_plots(gated):
    text = (gated / "gated" / "summary.md").read_text()
    assert text.startswith("# dlperf results\n")
    assert "2 case(s) measured, " in text and " 0 failed" in text  # 1n1g is judged against itself: either way
    table = text.split("## tiny: resnet50 fp32, batch 2/device, 32px", 1)[1]
    (row,) = [ln for ln in table.splitlines() if ln.startswith("| 2n1g")]
    assert "| REGRESSION (-" in row, row
    assert "**REGRESSION**" in text.split("## Gate notes", 1)[1]
    names = [ln.split("(plots/", 1)[1].rstrip(")") for ln in text.splitlines() if ln.startswith("![")]
    assert sorted(names) == ["tiny-resnet50-fp32-bs2-32px-baseline.png", "tiny-resnet50-fp32-bs2-32px-efficiency.png",
                             "tiny-resnet50-fp32-bs2-32px-throughput.png"]
    for name in names:
        data = (gated / "gated" / "plots" / name).read_bytes()
        assert data.startswith(PNG) and len(data) > 10_000, name


def test_github_step_summary_is_appended_to(gated):
    text = (gated / "step-summary.md").read_text()
    assert text.startswith("earlier step\n# dlperf results\n")
    assert f"]({gated / 'gated'}/plots/" in text  # the plots are linked where they are


def test_junit_xml_carries_each_cases_key_figures(gated):
    tree = ET.parse(gated / "junit.xml")
    cases = {tc.get("name"): {p.get("name"): p.get("value") for p in tc.iter("property")} for tc in tree.iter("testcase")}
    props = cases["test_train[resnet50-fp32-bs2-32px-2n1g]"]
    assert props["dlperf_verdict_throughput"] == "regression" and props["dlperf_topology"] == "2n1g"
    assert float(props["dlperf_samples_per_s"]) > 0 and 0 < float(props["dlperf_efficiency"]) < 2
    assert "dlperf_step_p95_s" in props and props["dlperf_repeats"] == "3"


def test_pytest_benchmark_compare_lists_the_cases_of_two_runs(gated):
    doc = json.loads((gated / "gated" / "benchmark.json").read_text())
    (bench,) = [b for b in doc["benchmarks"] if b["param"] == "resnet50-fp32-bs2-32px-2n1g"]
    assert bench["stats"]["rounds"] == 3 and len(bench["stats"]["data"]) == 3
    assert bench["stats"]["ops"] == pytest.approx(1 / bench["stats"]["mean"])  # ops: samples/s
    r = subprocess.run([sys.executable, "-m", "pytest_benchmark", "compare", str(gated / "recorded" / "benchmark.json"),
                        str(gated / "gated" / "benchmark.json")], capture_output=True, text=True, cwd=gated)
    assert r.returncode == 0, r.stdout + r.stderr
    for case in ("resnet50-fp32-bs2-32px-1n1g", "resnet50-fp32-bs2-32px-2n1g"):
        assert r.stdout.count(f"test_train[{case}]") == 2, r.stdout


def test_dlperf_report_rerenders_and_compare_prints_ratios(gated, tmp_path):
    out = tmp_path / "again"
    r = subprocess.run([sys.executable, "-m", "pytest_dlperf.cli", "report", str(gated / "gated" / "results.json"),
                        "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (out / "summary.md").read_text() == (gated / "gated" / "summary.md").read_text()
    assert sorted(p.name for p in (out / "plots").iterdir()) == sorted(p.name for p in (gated / "gated" / "plots").iterdir())
    # the recording drew no plots (--dlperf-plots=off, as tests/suite.py asks): dlperf report draws them from its results
    recorded = gated / "recorded"
    assert not (recorded / "plots").exists() and "## Plots" not in (recorded / "summary.md").read_text()
    r = subprocess.run([sys.executable, "-m", "pytest_dlperf.cli", "report", str(recorded / "results.json")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (recorded / "plots").iterdir()) == ["tiny-resnet50-fp32-bs2-32px-efficiency.png",
                                                                      "tiny-resnet50-fp32-bs2-32px-throughput.png"]
    assert "## Plots" in (recorded / "summary.md").read_text()
    r = subprocess.run([sys.executable, "-m", "pytest_dlperf.cli", "compare", str(gated / "recorded" / "results.json"),
                        str(gated / "gated" / "results.json")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    a = {c["case"]["id"]: c["median"] for c in json.loads((gated / "recorded" / "results.json").read_text())["cases"]}
    b = {c["case"]["id"]: c["median"] for c in json.loads((gated / "gated" / "results.json").read_text())["cases"]}
    line = next(ln for ln in r.stdout.splitlines() if "tiny/resnet50-fp32-bs2-32px-2n1g" in ln)
    assert line.split()[-1] == f"{a['resnet50-fp32-bs2-32px-2n1g'] / b['resnet50-fp32-bs2-32px-2n1g']:.3f}"
    r = subprocess.run([sys.executable, "-m", "pytest_dlperf.cli", "report", str(tmp_path / "nope.json")],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "nope.json: no such file" in r.stderr


def test_groups_with_a_regression_come_first():
    from pytest_dlperf.reporting import markdown
    from pytest_dlperf.results.cases import CaseResult, ResultSet
    from pytest_dlperf.results.verdict import Verdict
    from pytest_dlperf.specs import CaseSpec, Measurement, Topology

    def result(model: str, status: str) -> CaseResult:
        case = CaseSpec(model=model, precision="fp32", batch_size=2, image_size=32, topology=Topology(1, 1), backend="ddp")
        steps = {"p50": 0.1, "p75": 0.1, "p90": 0.1, "p95": 0.1}
        return CaseResult(case, Measurement(warmup_iters=1, iters=3, repeats=1, timeout=60), [], [10.0], 10.0, 10.0, steps, steps, 1,
                          verdict={"throughput": Verdict(status=status, case=case.id, metric="throughput", tolerance=0.05,
                                                         message=f"{model} {status}", rule="")})

    results = ResultSet()
    results.add(result("resnet50", "pass"))
    results.add(result("vgg16", "regression"))
    text = markdown.render(results)
    assert text.index("## ddp: vgg16") < text.index("## ddp: resnet50")
    assert "2 case(s) measured, 1 regression(s), 0 failed" in text
    assert "- `ddp/vgg16-fp32-bs2-32px-1n1g` throughput: **REGRESSION**: vgg16 regression" in text


def test_report_compare_and_history_read_a_contract_1_results_json_and_a_newer_one_is_refused(tmp_path, capsys):
    """results.json is contract 2 (each case's declared metrics); a file of contract 1, written before,
    is read as it was, and one of a newer contract is refused in one line."""
    from pytest_dlperf import cli

    old = ROOT / "tests" / "data" / "history" / "results.json"
    doc = json.loads(old.read_text())
    assert doc["schema"] == 1 and all("metrics" not in c for c in doc["cases"])
    assert cli.main(["report", str(old), "-o", str(tmp_path / "rep")]) == 0
    summary = (tmp_path / "rep" / "summary.md").read_text()
    assert "| 2n1g |" in summary and "peak GiB" not in summary  # what contract 1 had, nothing invented
    assert cli.main(["compare", str(old), str(old)]) == 0
    assert cli.main(["history", str(old), "-o", str(tmp_path / "site")]) == 0
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps({**doc, "schema": 3}))
    with pytest.raises(SystemExit) as refused:  # the command's one line, without a traceback
        cli.main(["report", str(newer), "-o", str(tmp_path / "rep2")])
    assert str(refused.value).endswith("results.json contract 3 is newer than this pytest-dlperf reads (1, 2): "
                                       "upgrade pytest-dlperf")
    assert not (tmp_path / "rep2").exists()


def test_a_results_json_names_every_declared_metric_of_each_case(gated):
    doc = json.loads((gated / "gated" / "results.json").read_text())
    assert doc["schema"] == 2
    for case in doc["cases"]:
        m = case["metrics"]
        assert m["throughput"]["values"] == case["throughputs"] and m["throughput"]["better"] == "higher"
        assert m["peak_memory"]["unit"] == "bytes" and m["peak_memory"]["better"] == "lower"
        assert len(m["peak_memory"]["values"]) == len(case["throughputs"]) and m["peak_memory"]["value"] > 0
        assert m["time_to_first_step"]["unit"] == "s" and m["time_to_first_step"]["value"] > 0
        parts = case["runs"][0]["meta"]["first_step"]["parts"]
        assert set(parts) == {"launcher", "imports", "process_group", "model", "first_step"}
        assert sum(parts.values()) == pytest.approx(case["runs"][0]["meta"]["first_step"]["seconds"], rel=1e-6)
