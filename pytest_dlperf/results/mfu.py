"""Model FLOPs utilisation: the FLOPs a case's steps did per second against its devices' peak.

The FLOPs per sample come from the workload (torch's ``FlopCounterMode`` over its first warm-up
step, forward and backward: the step-log meta's optional ``flops_per_sample``). The peak comes
from a table by GPU and data type, each figure with its source, or on CPU nodes from the
hardware probe's measured sgemm rate of the cores the ranks ran on; an unknown GPU or a probe
without a FLOP figure gives no MFU and says why, instead of a guess (docs/metrics.md, MFU)."""
from __future__ import annotations

import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from ..baselines.fingerprint import compute_rate
from ..specs import TOKEN_MODELS

# Dense tensor-core peaks in TFLOP/s (no sparsity), per data type, from NVIDIA's datasheets.
# A data type a GPU lacks is absent: tf32 then falls back to its fp32 figure (V100 runs fp32
# convolutions in fp32); bf16 on a GPU without it has no peak.
_H100_SXM = {"bf16": 989.4, "fp16": 989.4, "tf32": 494.7, "fp32": 66.9}
GPU_PEAKS: tuple[tuple[str, str, dict[str, float], str], ...] = (
    # (pattern on the device name, label, peaks, source)
    (r"H200", "H200 SXM", _H100_SXM, "NVIDIA H200 Tensor Core GPU datasheet (2024)"),
    (r"H100.*PCIe", "H100 PCIe", {"bf16": 756.5, "fp16": 756.5, "tf32": 378.0, "fp32": 51.2},
     "NVIDIA H100 Tensor Core GPU datasheet (2023)"),
    (r"H100.*NVL", "H100 NVL", {"bf16": 835.5, "fp16": 835.5, "tf32": 417.5, "fp32": 60.0},
     "NVIDIA H100 Tensor Core GPU datasheet (2023)"),
    (r"H100", "H100 SXM", _H100_SXM, "NVIDIA H100 Tensor Core GPU datasheet (2023)"),
    (r"A100", "A100", {"bf16": 312.0, "fp16": 312.0, "tf32": 156.0, "fp32": 19.5},
     "NVIDIA A100 Tensor Core GPU datasheet (2021)"),
    (r"\bA10\b", "A10", {"bf16": 125.0, "fp16": 125.0, "tf32": 62.5, "fp32": 31.2},
     "NVIDIA A10 Tensor Core GPU datasheet (2021)"),
    (r"V100.*PCIE", "V100 PCIe", {"fp16": 112.0, "fp32": 14.0}, "NVIDIA V100 Tensor Core GPU datasheet (2020)"),
    (r"V100", "V100 SXM2", {"fp16": 125.0, "fp32": 15.7}, "NVIDIA V100 Tensor Core GPU datasheet (2020)"),
)
# fp32 convolutions run on TF32 tensor cores by default (torch.backends.cudnn.allow_tf32), fp32
# matrix products do not (torch.backends.cuda.matmul.allow_tf32 is False by default)
CONV_MODELS = ("resnet50", "vgg16", "arcface")


@dataclass(frozen=True)
class Peak:
    """The FLOP/s a case's devices could do at most, what that figure is and where it comes from."""

    flops: float | None  # FLOP/s of all the case's devices together; None: unknown (``label`` says why)
    label: str
    source: str = ""


@dataclass(frozen=True)
class Utilisation:
    """A case's MFU (None where the peak or the FLOP count is unknown) and what it rests on."""

    mfu: float | None
    flops_per_sample: float | None
    achieved_flops: float | None
    peak: Peak
    analytic_flops_per_sample: float | None = None  # a decoder's 6N + 12·L·H·Q·T per token (PaLM), beside the count

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping) -> Utilisation:
        peak = d.get("peak") or {}
        return cls(d.get("mfu"), d.get("flops_per_sample"), d.get("achieved_flops"),
                   Peak(peak.get("flops"), str(peak.get("label", "")), str(peak.get("source", ""))),
                   d.get("analytic_flops_per_sample"))

    @property
    def text(self) -> str:
        """The table's cell: ``41.2%`` or ``-``."""
        return f"{self.mfu:.1%}" if self.mfu is not None else "-"

    @property
    def line(self) -> str:
        """One line for the summary: MFU, against what, from what."""
        if self.flops_per_sample is None:
            return "MFU: not known (the workload counted no FLOPs)"
        per = f"{self.flops_per_sample / 1e9:.3g} GFLOP/sample fwd+bwd"
        if self.analytic_flops_per_sample:
            per = (f"{self.flops_per_sample / 1e6:.4g} MFLOP/token counted, "
                   f"{self.analytic_flops_per_sample / 1e6:.4g} by 6N + 12·L·H·Q·T")
        if self.mfu is None:
            return f"MFU not known ({self.peak.label}); {per}"
        return f"MFU {self.mfu:.1%}: {_rate(self.achieved_flops)} of {_rate(self.peak.flops)}, {self.peak.label}; {per}"


def _rate(flops: float) -> str:
    return f"{flops / 1e12:.3g} TFLOP/s" if flops >= 1e12 else f"{flops / 1e9:.3g} GFLOP/s"


def dtype_of(model: str, precision: str) -> str:
    """The data type a GPU case's products run in (the workload's autocast: bf16 for a decoder,
    as LLMs train, fp16 for the others, as the seeds' AMP)."""
    if precision == "amp":
        return "bf16" if model in TOKEN_MODELS else "fp16"
    return "tf32" if model in CONV_MODELS else "fp32"


def gpu_peak(device: str, dtype: str) -> tuple[float, str, str] | None:
    """(TFLOP/s of one GPU, label, source) from the table, or None for a GPU or data type it lacks."""
    for pattern, label, peaks, source in GPU_PEAKS:
        if re.search(pattern, device, re.IGNORECASE):
            tflops = peaks.get(dtype, peaks.get("fp32") if dtype == "tf32" else None)
            return (tflops, f"{label} {dtype if dtype in peaks else 'fp32'}", source) if tflops else None
    return None


def case_peak(model: str, precision: str, ranks: Sequence[Mapping], devices_per_node: int,
              node_probes: Sequence[Mapping | None], cuda: bool) -> Peak:
    """The peak of the ranks a run had: by GPU name and data type, or on CPU nodes each rank's
    threads times its node's probed sgemm rate per core (``node_probes``: the case's nodes' hardware
    fingerprints, in node order)."""
    if not ranks:
        return Peak(None, "peak unknown: the run reported no ranks")
    if cuda:
        dtype = dtype_of(model, precision)
        found = [gpu_peak(str(r.get("device", "")), dtype) for r in ranks]
        missing = sorted({str(r.get("device", "")) for r, f in zip(ranks, found) if f is None})
        if missing:
            return Peak(None, f"peak unknown for {', '.join(missing)} in {dtype} (no datasheet figure in "
                              "pytest_dlperf/results/mfu.py)")
        labels = sorted({f[1] for f in found if f})
        return Peak(sum(f[0] for f in found if f) * 1e12, f"{len(ranks)} x {', '.join(labels)} peak",
                    "; ".join(sorted({f[2] for f in found if f})))
    total = 0.0
    threads = [max(int(rank.get("threads") or 1), 1) for rank in ranks]
    for i, n in enumerate(threads):
        node = i // max(devices_per_node, 1)
        probe = node_probes[node] if node < len(node_probes) else None
        rate = compute_rate(probe)
        if ((probe or {}).get("compute") or {}).get("unit") != "GFLOP/s per core" or not rate:
            return Peak(None, f"peak unknown: node {node}'s hardware probe measured no FLOP rate")
        total += rate * 1e9 * n
    return Peak(total, f"probed sgemm x {sum(threads)} thread{'s' if sum(threads) > 1 else ''}",
                "this session's hardware probe (fp32 numpy sgemm per core)")


def utilisation(median_samples_per_s: float, metas: Sequence[Mapping], model: str, precision: str,
                devices_per_node: int, node_probes: Sequence[Mapping | None]) -> Utilisation:
    """MFU of a case from its median throughput and its runs' meta lines."""
    counts = [float(m["flops_per_sample"]) for m in metas if m.get("flops_per_sample")]
    first = metas[0] if metas else {}
    peak = case_peak(model, precision, first.get("ranks") or [], devices_per_node, node_probes,
                     cuda=bool(first.get("cuda")))
    analytic = (first.get("llm") or {}).get("analytic_flops_per_token")
    if not counts:
        return Utilisation(None, None, None, peak, analytic)
    per_sample = statistics.median(counts)
    achieved = median_samples_per_s * per_sample
    return Utilisation(achieved / peak.flops if peak.flops else None, per_sample, achieved, peak, analytic)
