"""pytest-dlperf: prove on every change that distributed deep-learning training did not get slower.

The public names load on first use: the plugin imports this package in every pytest session of
the environment, and most of those run no benchmark.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_PUBLIC = {
    "CaseResult": "results.cases", "ResultSet": "results.cases",
    "CaseSpec": "specs", "Measurement": "specs", "Topology": "specs", "ladder": "specs",
    "Cluster": "clusters.base", "ClusterError": "clusters.base", "Node": "clusters.base",
    "NodeCommand": "clusters.base", "ClusterShape": "clusters.shape",
    "Launcher": "launchers.base", "RunPlan": "launchers.base",
}

__all__ = [*sorted(_PUBLIC), "__version__"]

if TYPE_CHECKING:
    from .clusters.base import Cluster, ClusterError, Node, NodeCommand
    from .clusters.shape import ClusterShape
    from .launchers.base import Launcher, RunPlan
    from .results.cases import CaseResult, ResultSet
    from .specs import CaseSpec, Measurement, Topology, ladder


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        value = getattr(importlib.import_module(f".{_PUBLIC[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
