"""The built-in cluster kinds and launch backends, registered through the plugin's own hooks."""
from __future__ import annotations

import pytest

from .clusters.base import Cluster
from .launchers.base import Launcher
from .launchers.torchrun import TorchrunLauncher

LAUNCHERS: dict[str, type[Launcher]] = {TorchrunLauncher.name: TorchrunLauncher}


@pytest.hookimpl(trylast=True)
def pytest_dlperf_make_cluster(config, options) -> Cluster | None:
    if options.cluster == "local":
        from .clusters.local import LocalCluster

        return LocalCluster(nodes=options.nodes or 2, slots=options.gpus_per_node,
                            base_dir=options.report_dir / "nodes")
    if options.cluster == "ssh":
        from .clusters.ssh_options import make_ssh_cluster

        return make_ssh_cluster(config, options)
    return None


@pytest.hookimpl(trylast=True)
def pytest_dlperf_make_launcher(config, backend: str) -> Launcher | None:
    cls = LAUNCHERS.get(backend)
    return cls() if cls else None


@pytest.hookimpl
def pytest_dlperf_backends(config) -> list[str]:
    return list(LAUNCHERS)
