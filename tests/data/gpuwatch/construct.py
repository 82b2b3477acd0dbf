#!/usr/bin/env python3
"""Writes the recorded-shape GPU watcher logs beside this file (run once; the logs are committed).

No GPU was at hand when these were made (2026-11-27), so the logs are constructed, not read from a
GPU: they have the shape node/nvmlwatch.py writes and NVML gives, and figures chosen to test the
harness's reading of them (gpuwatch.py), never to stand for a measurement:

- utilisation: integer percent, one sample every 1/6 s (the shortest sample period NVML's reference
  gives for nvmlUtilization_t: "between 1 second and 1/6 second, depending on the product"), with
  times in Unix seconds as nvmlSample_t's microsecond timeStamp; the first read returns the driver's
  buffer from before the launch;
- energy: nvmlDeviceGetTotalEnergyConsumption's millijoules since the driver loaded, read every 0.1 s
  (the watcher's period) and stamped on the node's perf_counter; powers of an idle H100 SXM (75 W),
  one training near its 700 W limit (690 W) and a lighter load (310 W);
- a launch's phases: start-up with the GPU idle, a first step, warm-up, the measured window (where
  the tests put it), the end of the run.

The tests state each expected figure from the values written here (the window's samples, the
power of the window's phase), so that a reading that takes the wrong samples or the wrong clock
gives another figure.
"""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
WALL0 = 1764072000.0  # 2025-11-25 12:00 UTC: the launch's start on the nodes' shared Unix time
H100 = "GPU-5f9c2e1a-7b7d-4a4e-9a3b-1c2d3e4f5a6b NVIDIA H100 80GB HBM3"
H200 = "GPU-0b8e6d21-33c4-4f1e-8d2a-9e7f6a5b4c3d NVIDIA H200"
PROVENANCE = ("# recorded-shape: constructed by tests/data/gpuwatch/construct.py in node/nvmlwatch.py's format "
              "(contract 1), not read from a GPU")


def util_pattern(k: int, window: list[int]) -> int:
    """The GPU-bound launch: idle start-up, a first step, warm-up, the window, the run's end."""
    t = k / 6
    if t < 12:
        return 0
    if t < 14:
        return (35, 80, 92)[k % 3]
    if k == 91:
        return 40  # straddles the window's start (15.05 s): must not count
    if 92 <= k <= 121:
        return window[k - 92]
    if k == 122:
        return 10  # ends after the window's end (20.3 s): must not count
    return 100 if t < 20.5 else 5


def power(t: float, window_watts: float) -> float:
    return 75.0 if t < 12 else 400.0 if t < 15 else window_watts if t < 20.5 else 120.0


def energy_lines(perf0: float, window_watts: float, mj0: int = 123_456_789) -> list[str]:
    """Reads every 0.1 s from the launch's start to 30 s, at the phases' powers (exact integer mJ)."""
    out, mj = [], mj0
    for i in range(301):
        t = i / 10
        out.append(f"e 0 {perf0 + t:.6f} {mj}")
        mj += round(power(t, window_watts) * 100)  # W x 0.1 s in mJ
    return out


def log(perf0: float, device: str, window: list[int], window_watts: float) -> str:
    head = [f"# dlperf-gpuwatch 1 period=0.1 perf={perf0:.6f} wall={WALL0:.6f}", PROVENANCE,
            f"# device 0 {device}", "# source samples"]
    util = [f"u 0 {WALL0 + k / 6:.6f} {util_pattern(k, window)}" for k in range(-30, 181)]
    return "\n".join(head + util + energy_lines(perf0, window_watts)) + "\n"


def rates_log(perf0: float) -> str:
    """Polled rates (the driver keeps no samples): one per 0.1 s read; the first 2 s of the window
    still read 70, what a rate covering the warm-up's last second and the window's first would say."""
    head = [f"# dlperf-gpuwatch 1 period=0.1 perf={perf0:.6f} wall={WALL0:.6f}", PROVENANCE,
            f"# device 0 {H100}",
            "# note utilisation samples of GPU 0: NVMLError_NotSupported: Not Supported; read as rates",
            "# source rates"]
    util = []
    for i in range(301):
        t = i / 10
        value = 0 if t < 12 else 70 if t < 17.05 else 100 if t <= 20.3 else 5
        util.append(f"u 0 {WALL0 + t:.6f} {value}")
    return "\n".join(head + util + energy_lines(perf0, 690.0)) + "\n"


def main() -> None:
    bound = [100] * 30
    for i in (4, 17, 26):
        bound[i] = 99  # (27 x 100 + 3 x 99) / 30 = 99.9%
    host = [58, 66, 61, 63, 60, 64] * 5  # 62.0% on average
    (HERE / "h100-gpu-bound.log").write_text(log(2000.0, H100, bound, 690.0))
    (HERE / "h200-host-bound.log").write_text(log(2000.0, H200, host, 310.0))
    # two nodes: the same launch seen on node 1, whose perf_counter started elsewhere (another boot)
    (HERE / "two-nodes-node1.log").write_text(log(91234.5, H100, bound, 690.0))
    (HERE / "h100-rates.log").write_text(rates_log(2000.0))


if __name__ == "__main__":
    main()
