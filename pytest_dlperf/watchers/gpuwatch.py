"""The GPU watcher on the harness side: wrap every GPU node's launch command, read the watchers' logs.

The watcher (``node/nvmlwatch.py``) reads NVML beside the launch, outside the training processes. Over
the workload's measured window (rank 0's step log, on node 0's clock, placed on every node's clocks
through the Unix time as the pace probe's is) this gives, per launch:

- **busy share**: the mean of NVML's utilisation samples that lie inside the window, each GPU's, then
  the mean over the case's GPUs: the share of the window in which the GPUs had a kernel running. A
  sample covers the driver's sample period before its time, so a sample counts where that whole
  period lies in the window (the period: the median gap between the GPU's samples; a rate read by
  polling covers up to twice NVML's longest period, 1 s, before the read).
- **energy**: the GPUs' total-energy counters at the window's ends, each interpolated between the
  reads around it, summed over the case's GPUs, in joules.

A GPU whose NVML gives a figure too sparsely to say (fewer than ``MIN_SAMPLES`` samples in the window),
or not at all (no nvidia-ml-py on the node, an energy counter older than Volta's), leaves the figure
not measured, with the reason; never a guess.
"""
from __future__ import annotations

import dataclasses
import posixpath
import statistics
from pathlib import Path

from ..clusters.base import Cluster, NodeCommand, behind
from ..node import nvmlwatch
from .nodelog import ClockPair, LogKind, read_header

WATCHER = Path(nvmlwatch.__file__).resolve()  # copied to each node beside its launch
LOG_NAME = "gpu.log"
CONTRACT = nvmlwatch.VERSION
PERIOD = 0.1
MIN_SAMPLES = 3  # utilisation samples of a GPU inside the window, at the least
RATES_LAG = 2.0  # seconds a polled rate may reach back: twice NVML's longest sample period (1 s)


class GpuLogError(ValueError):
    """A watcher's log cannot give a figure: names the file and why."""


def log_on_node(run_dir: str) -> str:
    """Where the watcher writes its log on a node: in the node's run directory."""
    return posixpath.join(run_dir, LOG_NAME)


def wrap(cluster: Cluster, run_dirs: dict[str, str], cmds: list[NodeCommand], devices: int) -> list[NodeCommand]:
    """Every node's command behind the watcher (``devices``: the GPUs the case uses on a node)."""
    return behind(cluster, run_dirs, cmds, WATCHER, lambda run_dir: [
        "--output", log_on_node(run_dir), "--devices", str(devices), "--period", f"{PERIOD:g}"])


KIND = LogKind("dlperf-gpuwatch", "GPU watcher log", "GPU watcher contract", "the GPU watcher could not read NVML")


@dataclasses.dataclass
class GpuLog(ClockPair):
    """One node's watcher log: its clock pair, the GPUs watched, their samples and energy reads."""

    source: str  # "samples": NVML's own samples; "rates": polled rates
    devices: dict[int, str]  # CUDA order -> "uuid name"
    util: dict[int, list[tuple[float, float]]]  # GPU -> (Unix time, percent), in time order
    energy: dict[int, list[tuple[float, float]]]  # GPU -> (perf_counter, millijoules), in time order
    notes: list[str]


def parse_log(text: str, source: str) -> GpuLog:
    """The watcher's log (contract ``CONTRACT``), or GpuLogError naming ``source`` and what is wrong."""
    lines = text.splitlines()
    clock = read_header(lines, KIND, CONTRACT, source, GpuLogError)
    log = GpuLog(clock.perf, clock.wall, "", {}, {}, {}, [])
    for line in lines[1:]:
        parts = line.split()
        if line.startswith("# device ") and len(parts) >= 4 and parts[2].isdigit():
            log.devices[int(parts[2])] = " ".join(parts[3:])
        elif line.startswith("# source "):
            log.source = line[len("# source "):].strip()
        elif line.startswith("# note "):
            log.notes.append(line[len("# note "):])
        elif len(parts) == 4 and parts[0] in ("u", "e") and parts[1].isdigit():
            try:
                t, v = float(parts[2]), float(parts[3])
            except ValueError:
                continue  # the last line of a watcher killed mid-write
            (log.util if parts[0] == "u" else log.energy).setdefault(int(parts[1]), []).append((t, v))
    if not log.devices or log.source not in ("samples", "rates"):
        raise GpuLogError(f"{source}: the log names no GPU or no source of its utilisation: it stopped early")
    for series in (*log.util.values(), *log.energy.values()):
        series.sort()
    return log


def sample_period(samples: list[tuple[float, float]]) -> float:
    """The driver's sample period: the median gap between a GPU's consecutive samples."""
    gaps = [b[0] - a[0] for a, b in zip(samples, samples[1:]) if b[0] > a[0]]
    return statistics.median(gaps) if gaps else 0.0


def busy_shares(log: GpuLog, w0: float, w1: float, source: str) -> dict[int, float]:
    """Each GPU's busy share over [w0, w1] (Unix times): the mean of the samples whose period lies inside."""
    out = {}
    for k in log.devices:
        samples = log.util.get(k, [])
        lag = RATES_LAG if log.source == "rates" else sample_period(samples)
        inside = [v for t, v in samples if t - lag >= w0 and t <= w1]
        if len(inside) < MIN_SAMPLES:
            raise GpuLogError(f"{source}: {len(inside)} utilisation sample(s) of GPU {k} cover the window "
                              f"({w1 - w0:.2f} s; NVML's come every {lag:.2f} s by {log.source}): too few "
                              f"to say how busy it was (at least {MIN_SAMPLES})")
        if not any(inside):
            raise GpuLogError(f"{source}: GPU {k} ({log.devices[k]}) ran no kernel in the whole window: the "
                              "ranks trained on other GPUs than the watched ones (CUDA_VISIBLE_DEVICES, "
                              "CUDA_DEVICE_ORDER)?")
        out[k] = statistics.fmean(inside) / 100.0
    return out


def counter_at(reads: list[tuple[float, float]], t: float) -> float | None:
    """The energy counter at ``t``, between the two reads around it (None: no read on one side)."""
    before = [r for r in reads if r[0] <= t]
    after = [r for r in reads if r[0] >= t]
    if not before or not after:
        return None
    (t0, e0), (t1, e1) = before[-1], after[0]
    return e0 if t1 == t0 else e0 + (e1 - e0) * (t - t0) / (t1 - t0)


def energies(log: GpuLog, p0: float, p1: float, source: str) -> dict[int, float]:
    """Each GPU's energy in joules over [p0, p1] (the node's perf_counter)."""
    out = {}
    for k in log.devices:
        reads = log.energy.get(k, [])
        if not reads:
            said = [n for n in log.notes if n.startswith(f"energy of GPU {k}:")]
            raise GpuLogError(f"{source}: GPU {k} has no energy counter reads"
                              + (f" ({said[0]})" if said else ""))
        if any(b[1] < a[1] for a, b in zip(reads, reads[1:])):
            raise GpuLogError(f"{source}: GPU {k}'s energy counter went back (the driver reloaded?)")
        e0, e1 = counter_at(reads, p0), counter_at(reads, p1)
        if e0 is None or e1 is None:
            raise GpuLogError(f"{source}: GPU {k}'s energy counter was not read on both sides of the window")
        out[k] = (e1 - e0) / 1000.0
    return out


def figures(logs: dict[str, GpuLog], first: str, start: float, end: float, sources: dict[str, str]) -> dict:
    """The launch's ``gpu`` figures for the window [start, end] on node ``first``'s perf_counter (rank 0's
    step log): ``busy`` and ``energy``, each its figures or ``{"not_measured": why}``."""
    ref = logs[first]
    w0, w1 = ref.to_wall(start), ref.to_wall(end)
    out: dict = {"source": sorted({log.source for log in logs.values()}), "window_seconds": end - start}
    seconds = max(end - start, 1e-9)
    try:
        shares = {f"{n}:{k}": s for n, log in logs.items() for k, s in busy_shares(log, w0, w1, sources[n]).items()}
        out["busy"] = {"share": statistics.fmean(shares.values()), "gpus": shares}
    except GpuLogError as exc:
        out["busy"] = {"not_measured": str(exc)}
    try:
        joules = {f"{n}:{k}": j for n, log in logs.items()
                  for k, j in energies(log, log.to_node_clock(w0), log.to_node_clock(w1), sources[n]).items()}
        total = sum(joules.values())
        out["energy"] = {"joules": total, "watts": total / seconds, "gpus": joules}
    except GpuLogError as exc:
        out["energy"] = {"not_measured": str(exc)}
    return out


def not_measured(why: str) -> dict:
    """The launch's ``gpu`` figures where none could be taken, both saying why."""
    return {"busy": {"not_measured": why}, "energy": {"not_measured": why}}
