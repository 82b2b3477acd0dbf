"""All-reduce bandwidth beside the scaling figures: what the workload measured on the case's ranks
after its window (step-log meta ``allreduce``), as nccl-tests defines it (algbw = bytes / time,
busbw = algbw x 2(n-1)/n), and the share of a step its gradients' all-reduce would take."""
from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Bandwidth:
    """One all-reduce size: median over the case's runs."""

    bytes: int
    algbw: float  # bytes/s
    busbw: float  # bytes/s


@dataclass(frozen=True)
class Communication:
    """A multi-device case's all-reduce bandwidths, and the estimated share of its p50 step that
    all-reducing its gradients once at the bucket size's algbw takes (an upper bound where the
    engine overlaps communication with the backward pass)."""

    sizes: tuple[Bandwidth, ...]
    gradient_bytes: int
    share: float | None

    @property
    def busbw(self) -> float:
        """The bucket size's busbw, the one DDP's all-reduces run at."""
        return self.sizes[0].busbw

    def to_dict(self) -> dict:
        return {"sizes": [vars(b) for b in self.sizes], "gradient_bytes": self.gradient_bytes,
                "step_share": self.share}

    @property
    def line(self) -> str:
        sizes = ", ".join(f"{_gb(b.busbw)} at {_mib(b.bytes)}" for b in self.sizes)
        share = f", {self.share:.0%} of a p50 step" if self.share is not None else ""
        return (f"all-reduce busbw {sizes}; the step's {_mib(self.gradient_bytes)} of gradients at "
                f"{_gb(self.sizes[0].algbw)} algbw: {self.gradient_bytes / self.sizes[0].algbw:.3g} s{share}")


def _gb(bps: float) -> str:
    return f"{bps / 1e9:.3g} GB/s"


def _mib(n: float) -> str:
    return f"{n / 2 ** 20:.3g} MiB"


def communication(metas: Sequence[Mapping], step_p50: float | None) -> Communication | None:
    """From the runs' meta lines; None where no run measured the all-reduce (one device, another
    workload)."""
    measured = [m["allreduce"] for m in metas if m.get("allreduce")]
    if not measured:
        return None
    sizes = []
    for i, first in enumerate(measured[0]):
        same = [runs[i] for runs in measured if len(runs) > i and runs[i]["bytes"] == first["bytes"]]
        sizes.append(Bandwidth(int(first["bytes"]), statistics.median(s["algbw"] for s in same),
                               statistics.median(s["busbw"] for s in same)))
    grads = int(next(m["gradient_bytes"] for m in metas if m.get("allreduce")))
    share = (grads / sizes[0].algbw) / step_p50 if step_p50 else None
    return Communication(tuple(sizes), grads, share)


NETWORK_DROP = 0.10  # a busbw this much below the baseline's is called the network's slow-down


def network_said(comm: Communication | None, baseline_busbw: float | None) -> str:
    """For a multi-device case that regressed: whether its all-reduce got slower since the baseline
    ("" where either side has no figure)."""
    if comm is None or not baseline_busbw:
        return ""
    change = comm.busbw / baseline_busbw - 1
    figures = f"{_gb(baseline_busbw)} recorded, {_gb(comm.busbw)} now ({change:+.0%})"
    if change < -NETWORK_DROP:
        return f"the all-reduce's busbw fell: {figures}: the network or the communication library got slower"
    return f"the all-reduce's busbw held: {figures}: not the network"
