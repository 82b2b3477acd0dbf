"""The pace probe on the harness side: wrap every node's launch command, read the probes' logs.

The probe (``node/paceprobe.py``) measures the host's memory-system speed on each node's launch
core while it runs. A node's pace is its probe's mean rate (GB/s) over the workload's measured
window; a run's pace is the geometric mean of its nodes' (a synchronous step waits for the slowest
rank, and a host that slows one node slows the run). The gate (``baselines/gate.py``) judges
throughputs at one pace where both the session's runs and the baseline's have one. CPU nodes only:
on a GPU the host's memory system is not what sets the step time.
"""
from __future__ import annotations

import dataclasses
import math
import posixpath
import statistics
from pathlib import Path

from ..clusters.base import Cluster, NodeCommand, behind
from ..node import paceprobe
from .nodelog import ClockPair, LogKind, read_header

PROBE = Path(paceprobe.__file__).resolve()  # copied to each node beside its launch
LOG_NAME = "pace.log"
CONTRACT = paceprobe.VERSION  # the probe's log; also stored with baseline paces (1 was node 0's pace alone)
PERIOD = 0.1


class PaceLogError(ValueError):
    """The probe's log cannot give a pace: names the file and why."""


def wanted(cmds: list[NodeCommand]) -> bool:
    """The probes run where every node the harness starts a command on is a CPU node."""
    return bool(cmds) and all(c.node.gpus == 0 for c in cmds)


def log_on_node(run_dir: str) -> str:
    """Where the probe writes its log on a node: in the node's run directory."""
    return posixpath.join(run_dir, LOG_NAME)


def wrap(cluster: Cluster, run_dirs: dict[str, str], cmds: list[NodeCommand]) -> list[NodeCommand]:
    """Every node's command behind the probe's wrapper; uploads the probe to each node."""
    return behind(cluster, run_dirs, cmds, PROBE,
                  lambda run_dir: ["--output", log_on_node(run_dir), "--period", f"{PERIOD:g}"])


KIND = LogKind("dlperf-pace", "pace probe log", "pace log contract", "the probe could not run")


@dataclasses.dataclass
class PaceLog(ClockPair):
    """One node's probe log: its clock pair (perf_counter and Unix time read together) and wake-ups."""

    wakeups: list[tuple[float, float, float]]  # (start, end on the node's perf_counter, GB/s)


def parse_log(text: str, source: str) -> PaceLog:
    """The probe's log (contract ``CONTRACT``), or PaceLogError naming ``source`` and what is wrong."""
    lines = text.splitlines()
    clock = read_header(lines, KIND, CONTRACT, source, PaceLogError)
    wakeups = []
    for line in lines[1:]:
        parts = line.split()
        if len(parts) != 3:
            continue  # the last line of a probe killed mid-write
        try:
            t0, t1, rate = (float(p) for p in parts)
        except ValueError:
            continue
        if rate > 0 and math.isfinite(rate):
            wakeups.append((t0, t1, rate))
    return PaceLog(clock.perf, clock.wall, wakeups)


def window_pace(log: PaceLog, start: float, end: float, source: str) -> float:
    """The mean rate of the wake-ups that lie inside [start, end], on the log's node's perf_counter."""
    rates = [rate for t0, t1, rate in log.wakeups if t0 >= start and t1 <= end]
    if not rates:
        raise PaceLogError(f"{source}: no wake-up of the probe inside the window "
                           f"({end - start:.2f} s; the probe wakes every {PERIOD:g} s)")
    return statistics.fmean(rates)


def run_pace(logs: dict[str, PaceLog], first: str, start: float, end: float,
             sources: dict[str, str]) -> tuple[float, dict[str, float]]:
    """The run's pace (geometric mean over nodes) and each node's, for the window [start, end] on
    node ``first``'s perf_counter (rank 0's step log), placed on the other nodes' clocks through
    the Unix time in each log's clock pair."""
    ref = logs[first]
    w0, w1 = ref.to_wall(start), ref.to_wall(end)
    nodes = {name: window_pace(log, log.to_node_clock(w0), log.to_node_clock(w1), sources[name])
             for name, log in logs.items()}
    return math.exp(statistics.fmean(math.log(p) for p in nodes.values())), nodes
