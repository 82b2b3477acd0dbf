"""The environment a result was measured in: versions, processor (``node/workloads/nodefacts.cpu_model``),
devices, hosts."""
from __future__ import annotations

import os
import platform
from importlib import metadata

from ..node.workloads.nodefacts import cpu_model
from .cases import ResultSet


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def collect(results: ResultSet, cluster=None) -> dict:
    """Harness-side facts plus what the workloads reported from the nodes."""
    metas = [run.meta for r in results.results for run in r.runs]
    devices = sorted({rank.get("device", "") for m in metas for rank in m.get("ranks", [])})
    hosts = sorted({rank.get("host", "") for m in metas for rank in m.get("ranks", [])})
    frameworks = sorted({f"{k} {v}" for m in metas for k, v in (m.get("frameworks") or {}).items()})
    return {
        "pytest_dlperf": _version("pytest-dlperf"),
        "python": platform.python_version(),
        "harness_host": platform.node(),
        "harness_cpu": cpu_model(),
        "harness_cores": os.cpu_count(),
        "frameworks": frameworks,
        "node_devices": devices,
        "node_hosts": hosts,
        "node_python": sorted({m.get("python", "") for m in metas}),
        "cluster": cluster.describe() if cluster is not None else None,
    }
