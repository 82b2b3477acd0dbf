"""The built-in cluster kinds and launch backends, registered through the plugin's own hooks."""
from __future__ import annotations

import pytest

from .clusters.base import Cluster, RankStart
from .clusters.shape import ClusterShape
from .launchers.base import Launcher
from .launchers.horovod import HorovodLauncher, PerseusLauncher
from .launchers.paddle import PaddleLauncher
from .launchers.tf import TFLauncher
from .launchers.torchrun import ACSpeedLauncher, FSDPLauncher, TorchrunLauncher

LAUNCHERS: dict[str, type[Launcher]] = {cls.name: cls for cls in (
    TorchrunLauncher, FSDPLauncher, TFLauncher, PaddleLauncher, HorovodLauncher, PerseusLauncher, ACSpeedLauncher)}


@pytest.hookimpl(trylast=True)
def pytest_dlperf_make_cluster(config, options) -> Cluster | None:
    if options.cluster == "local":
        from .clusters.local import LocalCluster

        # --dlperf-local-lease session: a lock in the report directory, which this session's xdist workers share
        return LocalCluster(nodes=options.nodes or 2, slots=options.gpus_per_node, base_dir=options.report_dir / "nodes",
                            lease=options.local_lease, lease_path=options.report_dir / "nodes" / "lease.lock",
                            rank_start=RankStart(options.local_start))
    if options.cluster == "ssh":
        from .clusters.ssh.factory import make_ssh_cluster
        from .clusters.ssh.options import SSHOptions

        return make_ssh_cluster(options, SSHOptions.from_config(config), _frameworks(config, options))
    if options.cluster == "aliyun":
        from .clusters.aliyun.factory import make_aliyun_cluster
        from .clusters.aliyun.options import AliyunOptions
        from .clusters.ssh.options import SSHOptions

        return make_aliyun_cluster(config, options, AliyunOptions.from_config(config), SSHOptions.from_config(config),
                                   _frameworks(config, options))
    if options.cluster == "slurm":
        from .clusters.slurm.factory import make_slurm_cluster
        from .clusters.slurm.options import SlurmOptions

        return make_slurm_cluster(config, options, SlurmOptions.from_config(config), _frameworks(config, options))
    if options.cluster == "ray":
        from .clusters.ray.factory import make_ray_cluster
        from .clusters.ray.options import RayOptions

        return make_ray_cluster(config, options, RayOptions.from_config(config), _frameworks(config, options))
    return None


@pytest.hookimpl(trylast=True)
def pytest_dlperf_cluster_shape(config, options) -> ClusterShape | None:
    """The built-in kinds' shapes, from their options alone (local: and this machine's GPUs)."""
    if options.cluster == "local":
        from .clusters.local import local_shape

        return local_shape(options.nodes or 2, options.gpus_per_node)
    if options.cluster == "ssh":
        from .clusters.ssh.given import ssh_shape
        from .clusters.ssh.options import SSHOptions

        return ssh_shape(options, SSHOptions.from_config(config))
    if options.cluster == "aliyun":  # the job's instances (--nodes, default 1); GPUs: --dlperf-devices says
        return ClusterShape(nodes=options.nodes or 1, slots=options.gpus_per_node or 1, gpus=False,
                            source="the instances asked for: --nodes (default 1), --dlperf-gpus-per-node")
    if options.cluster == "slurm":
        from .clusters.slurm.options import SlurmOptions
        from .clusters.slurm.shape import slurm_shape

        return slurm_shape(options, SlurmOptions.from_config(config))
    if options.cluster == "ray":  # with --nodes; else None: the Ray cluster's nodes, attached at collection
        from .clusters.ray.shape import ray_shape

        return ray_shape(options)
    return None


def _frameworks(config, options) -> tuple[str, ...]:
    """The frameworks of the session's backends (an SSH cluster's preflight asks the nodes for them)."""
    hook = config.pluginmanager.hook
    launchers = [hook.pytest_dlperf_make_launcher(config=config, backend=b) for b in options.backends]
    return tuple(dict.fromkeys(la.framework for la in launchers if la and la.framework))


@pytest.hookimpl
def pytest_dlperf_cluster_kinds(config) -> list[str]:
    return ["local", "ssh", "aliyun", "slurm", "ray"]


@pytest.hookimpl(trylast=True)
def pytest_dlperf_make_launcher(config, backend: str) -> Launcher | None:
    cls = LAUNCHERS.get(backend)
    if cls is None:
        return None
    if issubclass(cls, HorovodLauncher):
        return cls(controller=config.getoption("dlperf_horovod_controller", "gloo"))
    return cls()


@pytest.hookimpl
def pytest_dlperf_backends(config) -> list[str]:
    return list(LAUNCHERS)
