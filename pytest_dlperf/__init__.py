"""pytest-dlperf: prove on every change that distributed deep-learning training did not get slower."""
from __future__ import annotations

from .clusters.base import Cluster, ClusterError, Node, NodeCommand
from .launchers.base import Launcher, RunPlan
from .results import CaseResult, ResultSet
from .specs import CaseSpec, Measurement, Topology, ladder

__version__ = "0.1.0"

__all__ = [
    "CaseResult", "CaseSpec", "Cluster", "ClusterError", "Launcher", "Measurement", "Node",
    "NodeCommand", "ResultSet", "RunPlan", "Topology", "ladder", "__version__",
]
