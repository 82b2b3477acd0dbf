"""The pace probe on the harness side: wrap node 0's launch command, read the probe's log.

The probe (``node/paceprobe.py``) measures the host's memory-system speed on the launch's core
while it runs; a run's *pace* is the probe's mean rate (GB/s) over the workload's measured window.
The gate (``baselines/gate.py``) judges throughputs at one pace where both the session's runs and
the baseline's have one. CPU nodes only: on a GPU the host's memory system is not what sets the
step time.
"""
from __future__ import annotations

import dataclasses
import math
import posixpath
import statistics
from pathlib import Path

from .clusters.base import Cluster, NodeCommand

PROBE = Path(__file__).resolve().parent / "node" / "paceprobe.py"
LOG_NAME = "pace.log"
CONTRACT = 1
PERIOD = 0.1


class PaceLogError(ValueError):
    """The probe's log cannot give a pace: names the file and why."""


def wanted(cmds: list[NodeCommand]) -> bool:
    """The probe runs beside node 0's command where node 0 is a CPU node."""
    return bool(cmds) and cmds[0].node.gpus == 0


def log_on_node(run_dir: str) -> str:
    """Where the probe writes its log on node 0: in the run's directory."""
    return posixpath.join(run_dir, LOG_NAME)


def wrap(cluster: Cluster, run_dir: str, cmds: list[NodeCommand]) -> list[NodeCommand]:
    """Node 0's command behind the probe's wrapper (the others unchanged); uploads the probe."""
    first = cmds[0]
    script = cluster.upload(first.node, PROBE, run_dir)
    argv = [first.node.python, script, "--output", log_on_node(run_dir), "--period", f"{PERIOD:g}",
            "--", *first.argv]
    return [dataclasses.replace(first, argv=argv), *cmds[1:]]


def window_pace(text: str, start: float, end: float, source: str) -> float:
    """The mean rate of the probe's wake-ups that lie inside [start, end] (the workload's window)."""
    lines = text.splitlines()
    if not lines or not lines[0].startswith("# dlperf-pace "):
        raise PaceLogError(f"{source}: not a pace probe log (no '# dlperf-pace' header)")
    head = lines[0].split()
    if len(head) < 3 or head[2] != str(CONTRACT):
        raise PaceLogError(f"{source}: pace log contract {head[2] if len(head) > 2 else '?'}, "
                           f"this harness reads {CONTRACT}: install the same pytest-dlperf on the nodes' side")
    errors = [line[len("# error "):] for line in lines[1:] if line.startswith("# error ")]
    if errors:
        raise PaceLogError(f"{source}: the probe could not run: {errors[0]}")
    rates = []
    for line in lines[1:]:
        parts = line.split()
        if len(parts) != 3:
            continue  # the last line of a probe killed mid-write
        try:
            t0, t1, rate = (float(p) for p in parts)
        except ValueError:
            continue
        if t0 >= start and t1 <= end and rate > 0 and math.isfinite(rate):
            rates.append(rate)
    if not rates:
        raise PaceLogError(f"{source}: no wake-up of the probe inside the window "
                           f"({end - start:.2f} s; the probe wakes every {PERIOD:g} s)")
    return statistics.fmean(rates)
