"""MFU: the peak by GPU and data type (or the probed CPU rate), and the figure from a case's runs."""
from __future__ import annotations

import json

import pytest

from pytest_dlperf.results.cases import result_from_dict, summarize
from pytest_dlperf.results.file import ResultsFileError, load
from pytest_dlperf.results.mfu import Utilisation, case_peak, dtype_of, gpu_peak, utilisation
from pytest_dlperf.results.records import RunRecord
from pytest_dlperf.specs import CaseSpec, Measurement, Topology


@pytest.mark.parametrize("device, dtype, tflops, label", [
    ("NVIDIA H100 80GB HBM3", "fp16", 989.4, "H100 SXM fp16"),
    ("NVIDIA H100 80GB HBM3", "tf32", 494.7, "H100 SXM tf32"),
    ("NVIDIA H200", "bf16", 989.4, "H200 SXM bf16"),
    ("NVIDIA H100 PCIe", "fp16", 756.5, "H100 PCIe fp16"),
    ("NVIDIA A100-SXM4-80GB", "tf32", 156.0, "A100 tf32"),
    ("NVIDIA A10", "fp16", 125.0, "A10 fp16"),
    ("Tesla V100-SXM2-16GB", "fp16", 125.0, "V100 SXM2 fp16"),
    ("Tesla V100-SXM2-16GB", "tf32", 15.7, "V100 SXM2 fp32"),  # no TF32 on Volta: fp32 runs as fp32
])
def test_gpu_peaks_by_device_and_dtype(device, dtype, tflops, label):
    found = gpu_peak(device, dtype)
    assert found is not None and found[0] == tflops and found[1] == label and "datasheet" in found[2]


def test_an_unknown_gpu_or_a_dtype_it_lacks_has_no_peak():
    assert gpu_peak("AMD Instinct MI300X", "bf16") is None
    assert gpu_peak("Tesla V100-SXM2-16GB", "bf16") is None
    ranks = [{"device": "AMD Instinct MI300X"}] * 2
    peak = case_peak("resnet50", "amp", ranks, 2, [], cuda=True)
    assert peak.flops is None and peak.label.startswith("peak unknown for AMD Instinct MI300X in fp16")


def test_gpu_dtype_follows_precision_and_the_model():
    # fp32 convolutions run on TF32 by default (cudnn.allow_tf32), fp32 matrix products do not
    assert [dtype_of("resnet50", "amp"), dtype_of("resnet50", "fp32"), dtype_of("bert-base", "fp32")] == \
        ["fp16", "tf32", "fp32"]
    # the decoder's autocast is bf16 on GPUs: a V100 has no bf16 peak to count it against
    assert dtype_of("llama", "amp") == "bf16" and gpu_peak("Tesla V100-SXM2-16GB", dtype_of("llama", "amp")) is None


def test_gpu_case_peak_is_the_sum_of_its_devices():
    peak = case_peak("resnet50", "amp", [{"device": "NVIDIA H100 80GB HBM3"}] * 8, 8, [], cuda=True)
    assert peak.flops == pytest.approx(8 * 989.4e12) and peak.label == "8 x H100 SXM fp16 peak"


def _probe(gflops: float, unit: str = "GFLOP/s per core") -> dict:
    return {"compute": {"kind": "numpy-sgemm-384", "unit": unit, "best": gflops, "median": gflops * 0.9}}


def test_cpu_peak_is_each_ranks_threads_times_its_nodes_probe():
    ranks = [{"threads": 2}, {"threads": 2}, {"threads": 1}, {"threads": 1}]
    peak = case_peak("resnet50", "fp32", ranks, 2, [_probe(80.0), _probe(50.0)], cuda=False)
    assert peak.flops == pytest.approx((2 * 80 + 2 * 80 + 50 + 50) * 1e9)
    assert peak.label == "probed sgemm x 6 threads"
    # a probe without numpy measured loop operations, not FLOPs: no peak, and says so
    peak = case_peak("resnet50", "fp32", ranks, 2, [_probe(80.0), _probe(3.0, "Mops/s per core")], cuda=False)
    assert peak.flops is None and "node 1's hardware probe measured no FLOP rate" in peak.label


def _run(meta: dict, repeat: int = 0) -> RunRecord:
    return RunRecord(repeat=repeat, meta=meta, steps=[], commands=[], logs={}, wall_seconds=1.0)


def test_utilisation_from_the_median_and_the_counted_flops():
    meta = {"ranks": [{"threads": 1}], "flops_per_sample": 5e8, "cuda": None}
    u = utilisation(8.0, [meta, meta], "resnet50", "fp32", 1, [_probe(80.0)])
    assert u.mfu == pytest.approx(8.0 * 5e8 / 80e9) and u.text == "5.0%"
    assert u.line == ("MFU 5.0%: 4 GFLOP/s of 80 GFLOP/s, probed sgemm x 1 thread; "
                      "0.5 GFLOP/sample fwd+bwd")
    # a workload that counted nothing (an external program, another framework): no figure invented
    u = utilisation(8.0, [{"ranks": [{"threads": 1}]}], "resnet50", "fp32", 1, [_probe(80.0)])
    assert u.mfu is None and u.flops_per_sample is None and u.text == "-"
    assert u.line == "MFU: not known (the workload counted no FLOPs)"


def test_utilisation_goes_through_results_json():
    case = CaseSpec("resnet50", "fp32", 2, 32, Topology(1, 1))
    result = summarize(case, Measurement(warmup_iters=0, iters=0, repeats=1, timeout=0),
                       [_run({"world_size": 1, "parsed": {"throughput": 8.0, "rates": []}})])
    result.utilisation = Utilisation(0.05, 5e8, 4e9, case_peak("resnet50", "fp32", [{"threads": 1}], 1,
                                                               [_probe(80.0)], cuda=False))
    back = result_from_dict(result.to_dict())
    assert back.utilisation == result.utilisation
    assert result.to_dict()["mfu"]["peak"]["label"] == "probed sgemm x 1 thread"


def test_h100_nvl_has_its_own_peak():
    assert gpu_peak("NVIDIA H100 NVL", "bf16") == (835.5, "H100 NVL bf16", "NVIDIA H100 Tensor Core GPU datasheet (2023)")


def test_a_results_file_with_a_broken_mfu_is_refused_in_one_line(tmp_path):
    case = CaseSpec("resnet50", "fp32", 2, 32, Topology(1, 1))
    result = summarize(case, Measurement(warmup_iters=0, iters=0, repeats=1, timeout=0),
                       [_run({"world_size": 1, "parsed": {"throughput": 8.0, "rates": []}})])
    result.utilisation = utilisation(8.0, [{"ranks": [{"threads": 1}], "flops_per_sample": 5e8}], "resnet50",
                                     "fp32", 1, [_probe(80.0)])
    d = result.to_dict()
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"cases": [d]}))
    (back,) = load(path)[0].results
    assert back.utilisation.mfu == pytest.approx(0.05)
    d["mfu"] = {"mfu": "high", "peak": {}}
    path.write_text(json.dumps({"cases": [d]}))
    with pytest.raises(ResultsFileError, match=r"cases\[0\] \(resnet50-fp32-bs2-32px-1n1g\): 'mfu' is not null or an "
                                               r"object with a 'peak' object"):
        load(path)
