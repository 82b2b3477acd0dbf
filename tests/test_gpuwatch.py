"""The GPU watcher: its logs read over the measured window (gpuwatch.py) on recorded-shape NVML data
(tests/data/gpuwatch: constructed in the watcher's format, no GPU being at hand; construct.py says
how), the busy share and energy per sample as metrics with the host-bound flag, the node-side
watcher (node/nvmlwatch.py) against a stand-in for nvidia-ml-py (tests/fakenvml), and a launch on
local nodes that say they have GPUs."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_dlperf import metrics
from pytest_dlperf.reporting import summary_tables
from pytest_dlperf.reporting.junit import junit_properties
from pytest_dlperf.results.cases import ResultSet, result_from_dict, summarize
from pytest_dlperf.results.records import RunRecord, StepRecord
from pytest_dlperf.specs import CaseSpec, Measurement, Topology
from pytest_dlperf.watchers import gpuwatch
from pytest_dlperf.watchers.gpuwatch import GpuLogError, parse_log

DATA = Path(__file__).resolve().parent / "data" / "gpuwatch"
FAKE = Path(__file__).resolve().parent / "fakenvml"
WINDOW = (2015.05, 2020.3)  # node 0's perf_counter: inside the logs' 690 W phase (construct.py)
SECONDS = WINDOW[1] - WINDOW[0]


def read(name: str, source: str = "n0:gpu.log") -> gpuwatch.GpuLog:
    return parse_log((DATA / name).read_text(), source)


def figures_of(**logs: str) -> dict:
    parsed = {node: read(name, f"{node}:gpu.log") for node, name in logs.items()}
    return gpuwatch.figures(parsed, next(iter(logs)), *WINDOW, {n: f"{n}:gpu.log" for n in logs})


# ---------------------------------------------------------------- the window's figures, recorded shape
def test_a_gpu_bound_launch_counts_the_samples_whose_period_lies_in_the_window():
    log = read("h100-gpu-bound.log")
    assert log.source == "samples" and log.devices == {0: "GPU-5f9c2e1a-7b7d-4a4e-9a3b-1c2d3e4f5a6b NVIDIA H100 80GB HBM3"}
    assert gpuwatch.sample_period(log.util[0]) == pytest.approx(1 / 6, abs=1e-5)
    got = figures_of(n0="h100-gpu-bound.log")
    # the 30 samples from 15.33 s to 20.17 s: 27 read 100 and 3 read 99; the sample straddling the window's
    # start (40) and the one ending after its end (10) are left out
    assert got["busy"] == {"share": pytest.approx(0.999), "gpus": {"n0:0": pytest.approx(0.999)}}
    # the counter rose 69 000 mJ a read through the 690 W phase: 690 W x 5.25 s, its ends interpolated
    assert got["energy"]["joules"] == pytest.approx(690.0 * SECONDS)
    assert got["energy"]["watts"] == pytest.approx(690.0) and got["source"] == ["samples"]


def test_a_host_bound_launch_reads_its_idle_share():
    got = figures_of(n0="h200-host-bound.log")
    assert got["busy"]["share"] == pytest.approx(0.62)  # 58, 66, 61, 63, 60, 64 five times over
    assert got["energy"]["joules"] == pytest.approx(310.0 * SECONDS)


def test_two_nodes_are_read_at_the_window_placed_on_each_nodes_clock_by_unix_time():
    got = figures_of(n0="h100-gpu-bound.log", n1="two-nodes-node1.log")  # node 1's perf_counter: 89 234.5 s ahead
    assert got["busy"]["gpus"] == {"n0:0": pytest.approx(0.999), "n1:0": pytest.approx(0.999)}
    assert got["energy"]["gpus"] == {"n0:0": pytest.approx(690.0 * SECONDS), "n1:0": pytest.approx(690.0 * SECONDS)}
    assert got["energy"]["joules"] == pytest.approx(2 * 690.0 * SECONDS)


def test_polled_rates_count_from_two_seconds_into_the_window():
    """A rate read by polling covers up to twice NVML's longest period before the read: the first two
    seconds' reads (70: still the warm-up's) are left out, the rest read 100."""
    log = read("h100-rates.log")
    assert log.source == "rates" and "read as rates" in log.notes[0]
    assert figures_of(n0="h100-rates.log")["busy"]["share"] == pytest.approx(1.0)


def test_a_window_too_short_for_the_samples_is_not_measured_and_its_energy_still_is():
    log = read("h100-gpu-bound.log")
    got = gpuwatch.figures({"n0": log}, "n0", 2015.05, 2015.4, {"n0": "n0:gpu.log"})
    assert got["busy"] == {"not_measured": "n0:gpu.log: 1 utilisation sample(s) of GPU 0 cover the window (0.35 s; "
                                           "NVML's come every 0.17 s by samples): too few to say how busy it was "
                                           "(at least 3)"}
    assert got["energy"]["joules"] == pytest.approx(690.0 * 0.35)


def test_a_gpu_that_ran_nothing_in_the_window_is_not_a_busy_share_of_zero():
    got = gpuwatch.figures({"n0": read("h100-gpu-bound.log")}, "n0", 2002.0, 2008.0, {"n0": "n0:gpu.log"})
    assert "ran no kernel in the whole window" in got["busy"]["not_measured"]
    assert got["energy"]["joules"] == pytest.approx(75.0 * 6.0)  # the idle start-up's power


def test_energy_needs_reads_on_both_sides_of_the_window():
    got = gpuwatch.figures({"n0": read("h100-gpu-bound.log")}, "n0", 2015.0, 2040.0, {"n0": "n0:gpu.log"})
    assert got["energy"] == {"not_measured": "n0:gpu.log: GPU 0's energy counter was not read on both sides of "
                                             "the window"}


HEAD = "# dlperf-gpuwatch 1 period=0.1 perf=100.0 wall=1764072000.0\n"
DEV = "# device 0 GPU-5f9c2e1a NVIDIA H100 80GB HBM3\n# source samples\n"


@pytest.mark.parametrize("text,why", [
    ("", "n:gpu.log: not a GPU watcher log (no '# dlperf-gpuwatch' header)"),
    ("# dlperf-gpuwatch 2 period=0.1 perf=1 wall=2\n", "n:gpu.log: GPU watcher contract 2, this harness reads 1"),
    (HEAD + "# error ImportError: No module named 'pynvml' (pip install nvidia-ml-py, or 'pytest-dlperf[gpu]', on "
            "the node)\n",
     "n:gpu.log: the GPU watcher could not read NVML: ImportError: No module named 'pynvml' (pip install"),
    ("# dlperf-gpuwatch 1 period=0.1\n" + DEV, "n:gpu.log: the header has no clock pair"),
    (HEAD + "# device 0 GPU-5f9c2e1a NVIDIA H100 80GB HBM3\n", "n:gpu.log: the log names no GPU or no source"),
])
def test_a_log_that_cannot_give_figures_says_why(text, why):
    with pytest.raises(GpuLogError) as err:
        parse_log(text, "n:gpu.log")
    assert str(err.value).startswith(why)


def test_an_energy_counter_the_gpu_lacks_or_that_went_back_is_said():
    samples = "".join(f"u 0 {1764072000 + k / 6:.6f} 100\n" for k in range(60))
    noted = parse_log(HEAD + DEV + "# note energy of GPU 0: NVMLError_NotSupported: Not Supported\n" + samples, "n:gpu.log")
    got = gpuwatch.figures({"n": noted}, "n", 101.0, 106.0, {"n": "n:gpu.log"})
    assert got["busy"]["share"] == pytest.approx(1.0)
    assert got["energy"] == {"not_measured": "n:gpu.log: GPU 0 has no energy counter reads (energy of GPU 0: "
                                             "NVMLError_NotSupported: Not Supported)"}
    back = parse_log(HEAD + DEV + samples + "e 0 100.0 5000\ne 0 103.0 9000\ne 0 104.0 100\ne 0 108.0 200\n", "n:gpu.log")
    assert "energy counter went back" in gpuwatch.figures({"n": back}, "n", 101.0, 106.0, {"n": "n"})["energy"]["not_measured"]


# ---------------------------------------------------------------- as metrics of a case
def gpu_run(gpu: dict, repeat: int = 0) -> RunRecord:
    """A launch whose 50-step window is WINDOW on node 0's clock (resnet50 bs256 at 1n1g: 12 800 samples)."""
    step = SECONDS / 50
    steps = [StepRecord(i, True, 2014.0 + i * 0.2, 2014.2 + i * 0.2, [0.2], 256) for i in range(5)]
    steps += [StepRecord(5 + i, False, WINDOW[0] + i * step, WINDOW[0] + (i + 1) * step, [step], 256) for i in range(50)]
    meta = {"warmup_iters": 5, "iters": 50, "window": {"start": WINDOW[0], "end": WINDOW[1]}, "world_size": 1, "cuda": "13.0"}
    return RunRecord(repeat, meta, steps, [], {}, 30.0, gpu=gpu)


CASE = CaseSpec("resnet50", "fp32", 256, 224, Topology(1, 1))
M = Measurement(warmup_iters=5, iters=10, repeats=3, timeout=600)


def test_busy_share_and_energy_per_sample_are_per_launch_figures_of_the_case():
    bound, host = figures_of(n0="h100-gpu-bound.log"), figures_of(n0="h200-host-bound.log")
    r = summarize(CASE, M, [gpu_run(bound, 0), gpu_run(host, 1), gpu_run(bound, 2)])
    assert r.values("busy_share") == pytest.approx([0.999, 0.62, 0.999]) and r.value("busy_share") == pytest.approx(0.999)
    assert r.values("energy_per_sample") == pytest.approx([690 * SECONDS / 12800, 310 * SECONDS / 12800, 690 * SECONDS / 12800])
    assert r.flags() == {}  # the median launch was GPU-bound
    d = r.metrics_dict()["energy_per_sample"]
    assert d["unit"] == "J/sample" and d["better"] == "lower" and d["gated"] is False and "flag" not in d
    assert metrics.ENERGY_PER_SAMPLE.show(r.value("energy_per_sample"), CASE.unit) == "283 mJ/sample"
    back = result_from_dict(json.loads(json.dumps(r.to_dict())))
    assert back.runs[1].gpu == host and back.value("busy_share") == pytest.approx(0.999)


def test_a_host_bound_case_is_flagged_in_results_tables_and_junit():
    host = figures_of(n0="h200-host-bound.log")
    r = summarize(CASE, M, [gpu_run(host, k) for k in range(3)])
    line = "host-bound: this figure follows the CPU's dispatch speed (GPU busy share 62.0%, below 90.0%)"
    assert r.flags() == {"busy_share": line} and r.metrics_dict()["busy_share"]["flag"] == line
    assert f"1n1g: {line}" in summary_tables(ResultSet([r]), width=250)
    assert ("dlperf_busy_share_flag", "host-bound") in junit_properties(r)


def test_the_flag_follows_the_limit_not_the_case():
    assert metrics.BUSY_SHARE.flagged(0.899) and not metrics.BUSY_SHARE.flagged(0.90)
    assert metrics.BUSY_SHARE.flag.limit == metrics.HOST_BOUND_BELOW == 0.90
    with pytest.raises(ValueError, match="its limit must be above 0"):
        metrics.Flag(0.0, "x", "y")


def test_a_cpu_case_has_no_gpu_metrics_and_a_gpu_case_without_figures_says_why():
    cpu = summarize(CASE, M, [gpu_run({}, k) for k in range(2)])
    assert "busy_share" not in cpu.metrics_dict() and "busy_share" not in cpu.absent
    why = "n0:gpu.log: the GPU watcher could not read NVML: ImportError: No module named 'pynvml'"
    gpu = summarize(CASE, M, [gpu_run(gpuwatch.not_measured(why), k) for k in range(2)])
    assert gpu.absent["busy_share"] == why and gpu.metrics_dict()["energy_per_sample"]["not_measured"] == why
    assert f"GPU busy share not measured (1n1g): {why}" in summary_tables(ResultSet([gpu]), width=250)


# ---------------------------------------------------------------- the node-side watcher
def watch(tmp_path: Path, *command: str, devices: int = 1, fake: dict | None = None, env: dict | None = None,
          path: Path = FAKE) -> tuple[int, str]:
    """Run the watcher in front of ``command`` with the stand-in NVML; (exit status, its log)."""
    full = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    full.update(PYTHONPATH=str(path), FAKE_NVML=json.dumps(fake or {}), **(env or {}))
    rc = subprocess.run([sys.executable, str(gpuwatch.WATCHER), "--output", str(tmp_path / "gpu.log"), "--devices",
                         str(devices), "--period", "0.05", "--", *command], env=full, timeout=60).returncode
    return rc, (tmp_path / "gpu.log").read_text()


TWO = {"devices": [{"uuid": "GPU-aaaa1111-0000-0000-0000-000000000000", "name": "NVIDIA H100 80GB HBM3", "util": 97,
                    "watts": 690.0},
                   {"uuid": "GPU-bbbb2222-0000-0000-0000-000000000000", "name": "NVIDIA H100 80GB HBM3", "util": 64,
                    "watts": 300.0}], "period": 0.05}
SLEEP = (sys.executable, "-c", "import time; time.sleep(1.0); raise SystemExit(3)")


def test_the_watcher_reads_nvml_beside_the_command_and_returns_its_status(tmp_path):
    p0, w0 = time.perf_counter(), time.time()
    rc, text = watch(tmp_path, *SLEEP, fake=TWO)
    p1 = time.perf_counter()
    assert rc == 3
    log = parse_log(text, "n:gpu.log")
    assert log.devices == {0: "GPU-aaaa1111-0000-0000-0000-000000000000 NVIDIA H100 80GB HBM3"} and log.source == "samples"
    assert len(log.energy[0]) >= 10 and all(p0 < t < p1 for t, _ in log.energy[0])
    assert {v for _, v in log.util[0]} == {97} and log.util[0][-1][0] > w0
    got = gpuwatch.figures({"n": log}, "n", p0 + 0.3, p1 - 0.2, {"n": "n:gpu.log"})
    assert got["busy"]["share"] == pytest.approx(0.97)
    assert got["energy"]["watts"] == pytest.approx(690.0, rel=0.01)  # the stand-in's power, read on this clock


@pytest.mark.parametrize("visible,uuid", [("1", "GPU-bbbb2222"), ("GPU-bbbb", "GPU-bbbb2222"),
                                          ("GPU-bbbb2222-0000-0000-0000-000000000000,0", "GPU-bbbb2222")])
def test_the_watcher_takes_the_gpus_cuda_shows_the_launch(tmp_path, visible, uuid):
    rc, text = watch(tmp_path, sys.executable, "-c", "pass", fake=TWO, env={"CUDA_VISIBLE_DEVICES": visible})
    log = parse_log(text, "n:gpu.log")
    assert rc == 0 and log.devices[0].startswith(uuid) and {v for _, v in log.util[0]} == {64}


@pytest.mark.parametrize("visible,devices,why", [
    ("MIG-4f1e2d3c", 1, "CUDA_VISIBLE_DEVICES names a MIG instance (MIG-4f1e2d3c)"),
    ("0", 2, "1 GPU(s) visible to the launch (CUDA_VISIBLE_DEVICES='0', NVML counts 2); the case uses 2"),
    ("", 1, "0 GPU(s) visible to the launch"),
])
def test_gpus_the_watcher_cannot_watch_are_said_and_the_command_runs(tmp_path, visible, devices, why):
    rc, text = watch(tmp_path, sys.executable, "-c", "print('trained')", devices=devices, fake=TWO,
                     env={"CUDA_VISIBLE_DEVICES": visible})
    assert rc == 0 and f"# error {why}" in text


def test_without_nvidia_ml_py_the_watcher_says_so_and_the_command_runs(tmp_path):
    fake = tmp_path / "site"
    (fake / "pynvml").mkdir(parents=True)
    (fake / "pynvml" / "__init__.py").write_text("raise ImportError(\"No module named 'pynvml'\")\n")
    rc, text = watch(tmp_path, *SLEEP, path=fake)
    assert rc == 3
    with pytest.raises(GpuLogError, match=r"could not read NVML: ImportError: No module named 'pynvml' \(pip install "
                                          r"nvidia-ml-py, or 'pytest-dlperf\[gpu\]', on the node\)"):
        parse_log(text, "n:gpu.log")


def test_a_driver_without_samples_or_with_other_sample_times_is_read_by_polled_rates(tmp_path):
    for fake, said in (({**TWO, "samples": False}, "NVMLError_NotSupported: Not Supported; read as rates"),
                       ({**TWO, "clock_offset": -3600.0}, "not near this host's Unix time; read as rates")):
        rc, text = watch(tmp_path, *SLEEP, fake=fake)
        log = parse_log(text, "n:gpu.log")
        assert log.source == "rates" and said in log.notes[0] and len(log.util[0]) >= 10


def test_a_gpu_without_an_energy_counter_or_an_nvml_that_does_not_start_is_said(tmp_path):
    no_energy = {"devices": [{**TWO["devices"][0], "energy": False}], "period": 0.05}
    _, text = watch(tmp_path, *SLEEP, fake=no_energy)
    assert "# note energy of GPU 0: NVMLError_NotSupported: Not Supported" in text and "\ne 0 " not in text
    _, text = watch(tmp_path, *SLEEP, fake={**TWO, "init_error": "NVMLError_DriverNotLoaded"})
    assert "# error NVML did not start: NVMLError_DriverNotLoaded: DriverNotLoaded" in text


# ---------------------------------------------------------------- in a launch
def gpu_cluster(tmp_path: Path, nodes: int):
    """Local nodes that say they each have one GPU (CUDA_VISIBLE_DEVICES 0, 1, ...): the stand-in NVML
    answers for them."""
    import dataclasses

    from pytest_dlperf.clusters.local import LocalCluster

    cluster = LocalCluster(nodes=nodes, base_dir=tmp_path / "nodes")
    cluster._nodes = [dataclasses.replace(n, gpus=1, extra={**n.extra, "gpus": str(i)})
                      for i, n in enumerate(cluster._nodes)]
    return cluster


def test_a_launch_on_gpu_nodes_is_watched_on_every_node_over_its_window(tmp_path, monkeypatch):
    from pytest_dlperf.measure.runner import run_case

    from tests.tiny.plugin import TinyLauncher

    monkeypatch.setenv("PYTHONPATH", str(FAKE))
    monkeypatch.setenv("FAKE_NVML", json.dumps(TWO))
    case = CaseSpec("resnet50", "fp32", 2, 32, Topology(2, 1), backend="tiny")
    m = Measurement(warmup_iters=1, iters=3, repeats=1, timeout=120, window_seconds=1.2, max_iters=400)
    run = run_case(gpu_cluster(tmp_path, 2), TinyLauncher(), case, m, tmp_path / "logs")
    assert "nvmlwatch.py" in run.commands[0] and "--devices 1" in run.commands[0]
    assert run.gpu["busy"]["gpus"] == {"local0:0": pytest.approx(0.97), "local1:0": pytest.approx(0.64)}
    r = summarize(case, m, [run])
    assert r.value("busy_share") == pytest.approx((0.97 + 0.64) / 2)
    assert r.flags() == {"busy_share": "host-bound: this figure follows the CPU's dispatch speed (GPU busy share "
                                       "80.5%, below 90.0%)"}
    # J per sample x samples per second: the two GPUs' power, 690 W and 300 W, over the same window
    assert r.value("energy_per_sample") * r.median == pytest.approx(990.0, rel=0.01)
    assert (tmp_path / "logs" / "local1.gpu.log").exists()


def test_the_watcher_runs_where_it_can_give_the_cases_figures():
    from pytest_dlperf.clusters.base import Node, NodeCommand
    from pytest_dlperf.launchers.external import ExternalLauncher
    from pytest_dlperf.measure.runner import watches_gpus

    from tests.tiny.plugin import TinyLauncher

    gpu, cpu = Node("g", "h", 1, cpus=8, gpus=1), Node("c", "h", 1, cpus=8)
    one, two = CaseSpec("resnet50", "fp32", 2, 32, Topology(1, 1)), CaseSpec("resnet50", "fp32", 2, 32, Topology(2, 1))
    assert watches_gpus(TinyLauncher(), one, [NodeCommand(cpu, ["x"], {})]) is None
    assert watches_gpus(TinyLauncher(), one, [NodeCommand(gpu, ["x"], {})]) == ""

    class Spanning(TinyLauncher):
        spans_nodes = True

    assert watches_gpus(Spanning(), two, [NodeCommand(gpu, ["x"], {})]).endswith("only node 0's GPUs could be watched")
    assert watches_gpus(Spanning(), one, [NodeCommand(gpu, ["x"], {})]) == ""
    external = ExternalLauncher.__new__(ExternalLauncher)
    external.output_format = "ddp_bench"
    assert "no window on the nodes' clocks" in watches_gpus(external, one, [NodeCommand(gpu, ["x"], {})])
