"""The field's formulas (DLPerf, AIACC, the PyTorch DDP benchmark), as pure functions; the metrics
that use them are declared in ``catalog``.

- throughput: global samples / wall seconds over the steady window [warmup, warmup+iters),
  not a mean of per-step rates (which overstates it when steps vary).
- step-time percentiles: over the per-step times of every rank (PyTorch DDP benchmark).
- speedup: median(case) / median(1n1g); efficiency: speedup / devices;
  multi-node efficiency: throughput(k nodes) / (k x throughput(1 full node)).
"""
from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

PERCENTILES = (50, 75, 90, 95)


@dataclass(frozen=True)
class Step:
    """The fields of one measured step that the metrics need."""

    start: float
    end: float
    samples: int
    rank_times: Sequence[float]


def steady_window(steps: Sequence, warmup: int, iters: int) -> list:
    """Steps [warmup, warmup+iters); raises if the run has fewer."""
    if warmup < 0 or iters < 1:
        raise ValueError("warmup must be >= 0 and iters >= 1")
    if len(steps) < warmup + iters:
        raise ValueError(f"run has {len(steps)} steps; the window needs {warmup + iters}")
    return list(steps[warmup:warmup + iters])


def throughput(steps: Sequence, warmup: int, iters: int) -> float:
    """Global samples per second: samples in the window / wall time from its first start to last end."""
    window = steady_window(steps, warmup, iters)
    wall = window[-1].end - window[0].start
    if wall <= 0:
        raise ValueError("the steady window has no duration")
    return sum(s.samples for s in window) / wall


def step_times(steps: Sequence, warmup: int, iters: int) -> list[float]:
    """Every rank's time of every step in the window."""
    return [float(t) for s in steady_window(steps, warmup, iters) for t in s.rank_times]


def percentiles(values: Sequence[float], qs: Sequence[int] = PERCENTILES) -> dict[str, float]:
    """{'p50': .., 'p75': ..} with numpy's linear interpolation."""
    if not values:
        raise ValueError("no values")
    import numpy as np  # only where percentiles are taken: the declarations import this module too

    arr = np.asarray(values, dtype=float)
    return {f"p{q}": float(np.percentile(arr, q)) for q in qs}


def speedup(median: float, base_median: float | None) -> float | None:
    """median / median of 1n1g in the same group (None without a 1n1g)."""
    if not base_median:
        return None
    return median / base_median


def efficiency(speedup_value: float | None, devices: int) -> float | None:
    """Scaling efficiency (AIACC 并行效率): speedup / devices."""
    if speedup_value is None:
        return None
    return speedup_value / devices


def multi_node_efficiency(tput: float, nodes: int, one_node_tput: float | None) -> float | None:
    """AIACC 多机加速比: throughput(k nodes) / (k x throughput(1 node, all its devices))."""
    if not one_node_tput or nodes < 2:
        return None
    return tput / (nodes * one_node_tput)


def center(values: Sequence[float]) -> tuple[float, float]:
    """(mean, median) of the per-repeat throughputs."""
    return statistics.fmean(values), statistics.median(values)


def acspeed_line(world: int, nodes: int, batch: int, pct: dict[str, float], unit: str = "GPUs",
                 per_node: int | None = None, per_device: dict[str, float] | None = None) -> str:
    """The PyTorch DDP / ACSpeed benchmark line; the /s figure is samples per second per device
    (``per_device``'s where given: an imported log's own, not recomputed from its rounded seconds), and
    ``kM/nG`` is machines / devices per machine as the benchmark writes it (``16 GPUs -- 2M/8G``).

    ``8 GPUs -- 1M/8G: p50: 0.073s 440/s p75: 0.073s 438/s p90: 0.073s 437/s p95: 0.073s 436/s``
    """
    rates = per_device or {}
    cells = " ".join(f"{k}: {v:.3f}s {rates.get(k, batch / v):.0f}/s" for k, v in pct.items()) \
        or "no step times (none in the log)"
    return f"{world} {unit} -- {nodes}M/{per_node or world // max(nodes, 1)}G: {cells}"
