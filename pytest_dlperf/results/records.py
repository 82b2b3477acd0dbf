"""What one run of a case produced (``RunRecord``, its ``StepRecord``s): written by the runner and
the importers, read by the results. A module of its own so that neither reader imports the runner."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class StepRecord:
    step: int
    warmup: bool
    start: float
    end: float
    rank_times: list[float]
    samples: int


@dataclass
class RunRecord:
    """What one run produced: the workload's meta line, every step, commands and log files."""

    repeat: int
    meta: dict
    steps: list[StepRecord]
    commands: list[str]
    logs: dict[str, str]
    wall_seconds: float
    run_dir: str = ""
    started_at: float = 0.0  # Unix time the launch began: results.json shows the session's order
    pace: float | None = None  # the pace probes' GB/s over the window, geometric mean of the nodes' (pace.py)
    pace_error: str = ""  # why a probed run has no pace
    node_paces: dict[str, float] = field(default_factory=dict)  # each probed node's pace
    # the GPU watcher's figures over the window (gpuwatch.py): "busy" and "energy", each its figures or
    # {"not_measured": why}; {} where no GPU was there to watch (CPU nodes, an imported log)
    gpu: dict = field(default_factory=dict)
    node_dirs: dict[str, str] = field(default_factory=dict)  # node name -> the launch's run directory there
