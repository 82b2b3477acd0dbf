"""What measuring a case uses of the session, and nothing else (``Bench``): the cluster (built on first
use), each case's launcher, name, measurement and readiness check, the progress line, the budget and the
report directory, and the compiled cases' inductor caches. The measuring orders, and the A/B feature,
are given one instead of the session."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..clusters.base import Cluster
from ..launchers.base import Launcher
from ..reporting.live import LiveLine
from ..specs import CaseSpec, Measurement
from .budget import Budget
from .checkpoints import Checkpoints
from .compile_caches import CompileCaches


@dataclass(frozen=True)
class Bench:
    """The session's parts a measurement uses."""

    cluster: Callable[[], Cluster]  # built on first use: collecting touches no node
    launcher: Callable[[CaseSpec], Launcher]
    name: Callable[[CaseSpec], str]  # the case's test id and run directory
    measurement: Callable[[CaseSpec, Measurement], Measurement]  # the case's own (its pace-probe policy)
    ready: Callable[[CaseSpec], None]  # the readiness check before its first launch: may raise pytest's skip or fail
    live: LiveLine
    budget: Callable[[Measurement], Budget]  # the session's, made with its first case's measurement
    report_dir: Path
    caches: CompileCaches = field(default_factory=CompileCaches)  # compiled cases' cold and warm launches
    checkpoints: Checkpoints = field(default_factory=Checkpoints)  # which launches take a checkpoint (auto's decisions)
    launch_log: Path | None = None  # --dlperf-launch-log: a line per launch appended there (launchlog.py)
