"""``dlperf import``: peers' logs become results.json (and a baseline profile) with DLPerf's rules.
The DLPerf TensorFlow 2 logs (tests/data, TimeHistory lines of the real runs) must give DLPerf's
published medians, means and speedups; the other formats parse real lines of those tools."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_dlperf.baselines.store import BaselineStore
from pytest_dlperf.importers import Overrides, load
from pytest_dlperf import formats

DATA = Path(__file__).resolve().parent / "data"
ROOT = Path(__file__).resolve().parent.parent


def dlperf(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_dlperf.cli", *args], capture_output=True, text=True, cwd=cwd)


# DLPerf's published table for these logs (../shared/reference/README.md): median, mean, speedup.
PUBLISHED = {"1n1g": (321.8, 321.87, 1.00), "1n2g": (574.66, 573.32, 1.79), "1n4g": (1143.46, 1141.43, 3.55)}


def test_dlperf_tf2_logs_give_dlperfs_published_medians_and_speedups():
    results = load(DATA / "dlperf-tf2-resnet50", "dlperf-tf2")
    got = {r.case.topology.name: (round(r.median, 2), round(r.mean, 2), round(r.speedup, 2)) for r in results.results}
    assert got == PUBLISHED
    r = next(r for r in results.results if r.case.topology.name == "1n4g")
    assert r.case.key == "tensorflow2/resnet50-fp32-bs128-224px-1n4g" and len(r.throughputs) == 5
    assert r.efficiency == pytest.approx(1143.462 / (4 * 321.8), rel=1e-3)


def test_dlperf_import_writes_results_and_records_a_profile_the_gate_reads(tmp_path):
    out = tmp_path / "r.json"
    r = dlperf("import", str(DATA / "dlperf-tf2-resnet50"), "--format", "dlperf-tf2", "-o", str(out),
               "--record", "gpu-8x-v100-dlperf", "--baseline-dir", str(tmp_path / "store"))
    assert r.returncode == 0, r.stderr
    assert "tensorflow2/resnet50-fp32-bs128-224px-1n2g: median 574.66 samples/s, mean 573.32, speedup 1.79" in r.stdout
    doc = json.loads(out.read_text())
    assert {c["case"]["id"]: round(c["median"], 2) for c in doc["cases"]} == {
        f"resnet50-fp32-bs128-224px-{t}": v[0] for t, v in PUBLISHED.items()}
    assert doc["summary"]["fp32"]["resnet50"]["1n4g"]["median_speed"] == 1143.46  # DLPerf's own shape
    bfile = BaselineStore(tmp_path / "store").load("gpu-8x-v100-dlperf")
    e = bfile.get("tensorflow2/resnet50-fp32-bs128-224px-1n1g")
    assert round(e.figure("throughput"), 2) == 321.8 and len(e.values("throughput")) == 5
    assert e.source.startswith("imported: dlperf-tf2")
    # and the report renders from it
    r = dlperf("report", str(out), "-o", str(tmp_path / "rep"))
    assert r.returncode == 0, r.stderr
    assert "| 1n4g | 1 | 4 | 1143.46 | 3.55 | 0.89 |" in (tmp_path / "rep" / "summary.md").read_text()


def test_the_warmup_rule_is_the_formats_and_can_be_changed():
    with_first = load(DATA / "dlperf-tf2-resnet50", "dlperf-tf2", warmup=0)
    one = next(r for r in with_first.results if r.case.topology.name == "1n1g")
    assert one.median < 321.8  # the first 100 steps (start-up) pull the mean down


@pytest.mark.parametrize("args, words", [
    (["--format", "tf_cnn"], "rn50_b128_fp32_1.log: no 'total images/sec: X' lines: not a tf_cnn log"),
    (["--format", "nope"], "invalid choice: 'nope'"),
])
def test_wrong_format_names_the_file_and_what_it_expected(tmp_path, args, words):
    r = dlperf("import", str(DATA / "dlperf-tf2-resnet50"), *args, "-o", str(tmp_path / "r.json"))
    assert r.returncode != 0 and words in r.stderr, r.stderr
    assert not (tmp_path / "r.json").exists()


def test_a_directory_without_the_layout_is_refused(tmp_path):
    (tmp_path / "logs").mkdir()
    r = dlperf("import", str(tmp_path / "logs"), "--format", "horovod", "-o", str(tmp_path / "r.json"))
    assert r.returncode == 1 and "no <NnMg>/<name>_<run>.log files" in r.stderr


PEERS = DATA / "peers"


@pytest.mark.parametrize("fmt, file, hints, total, devices, batch", [
    ("tf_cnn", "tf_cnn/lambda_a100pcie_8gpu_resnet50_fp16_bs448.log", {}, 15996.69, 8, 448),
    ("tf_cnn", "tf_cnn/lambda_a100pcie_1gpu_resnet50_fp16_bs448.log", {}, 2075.05, 1, 448),
    ("horovod", "horovod/hpc-ai-envs_pytorch_resnet50_bs96_8gpu.log", {}, 14281.2, 8, 96),
    ("horovod", "horovod/horovod_issue712_pytorch_resnet50_bs32_4gpu.log", {}, 432.8, 4, 32),
    ("horovod", "horovod/ocitutorials_tf2_resnet50_bs32_8gpu_mpirun_prefix.log", {}, 4801.4, 8, 32),
    ("horovod", "horovod/ocitutorials_tf2_resnet50_bs32_16gpu_2nodes.log", {}, 9279.7, 16, 32),
    # ex/sec is per GPU: 8 GPUs x 1233/s (resnet50's 2M/8G row); resnet101's block when asked for
    ("ddp-bench", "ddp-bench/hpc-ai-envs_ddp_2nodes_4gpu.log", {"devices": 8, "model": "resnet50"}, 8 * 1233, 8, 32),
    ("ddp-bench", "ddp-bench/hpc-ai-envs_ddp_2nodes_4gpu.log", {"devices": 8, "model": "resnet101"}, 8 * 706, 8, 32),
    ("ddp-bench", "ddp-bench/pytorch_ddp_readme_example_v100_dgx.log", {"devices": 16, "model": "resnet50"}, 16 * 306, 16, 32),
    # its PARAMETER header: world_size 1, batch_size 128
    ("dllogger", "dllogger/nvidia_dllogger_example_resnet_log_2019.json.log", {}, 661.9801574510492, 1, 128),
])
def test_real_output_of_each_tool_gives_its_published_figure(fmt, file, hints, total, devices, batch):
    run = formats.FORMATS[fmt]((PEERS / file).read_text(), None, formats.Hints(**hints))
    assert run.throughput == pytest.approx(total) and run.devices == devices and run.batch_size == batch


def test_dllogger_merges_a_steps_split_records_and_its_summary_is_the_epochs_mean():
    run = formats.dllogger.parse((PEERS / "dllogger/nvidia_dllogger_example_resnet_log_2019.json.log").read_text(), None)
    assert run.rates == pytest.approx([648.9330897795348, 675.0272251225636])
    assert run.throughput == pytest.approx(sum(run.rates) / 2)


def test_paddle_ips_lines_and_per_device_rates(tmp_path):
    text = (PEERS / "plsc/paddleclas_issue2186_pplcnet_x1_0_1gpu.log").read_text()
    assert formats.plsc.parse(text, None).rates == [444.43222, 661.17681, 451.21227]
    assert formats.plsc.parse(text, 1).throughput == pytest.approx((661.17681 + 451.21227) / 2)
    # a PaddleClas log of 2 GPUs (its ips is per GPU): --per-device-rates doubles it
    (tmp_path / "1n2g").mkdir()
    (tmp_path / "1n2g" / "pplcnet_b512_fp32_1.log").write_text(text)
    over = load(tmp_path, "plsc", 1, Overrides(model="resnet50", per_device_rates=True))
    (r,) = over.results
    assert r.median == pytest.approx(2 * (661.17681 + 451.21227) / 2)


def test_tf_cnn_logs_in_dlperfs_layout_give_lambdas_published_table(tmp_path):
    for topo, n in (("1n1g", 1), ("1n8g", 8)):
        (tmp_path / topo).mkdir()
        src = PEERS / f"tf_cnn/lambda_a100pcie_{n}gpu_resnet50_fp16_bs448.log"
        (tmp_path / topo / "resnet50_fp16_1.log").write_text(src.read_text())
    results = {r.case.topology.name: r for r in load(tmp_path, "tf_cnn").results}
    published = (PEERS / "tf_cnn/lambda_published_tf-train-throughput-fp16.csv").read_text()
    assert "2075" in published and "15997" in published
    assert round(results["1n1g"].median) == 2075 and round(results["1n8g"].median) == 15997
    assert results["1n8g"].case.key == "tf_cnn/resnet50-amp-bs448-224px-1n8g"  # batch from the log's header
    assert results["1n8g"].speedup == pytest.approx(15996.69 / 2075.05)
    (tmp_path / "1n2g").mkdir()
    (tmp_path / "1n2g" / "resnet50_fp16_1.log").write_text((PEERS / "tf_cnn/lambda_a100pcie_8gpu_resnet50_fp16_bs448.log").read_text())
    with pytest.raises(ValueError, match="the log says 8 devices, its directory 1n2g"):
        load(tmp_path, "tf_cnn")
