"""The Ray cluster built from the --dlperf-ray-* options: attached to the cluster the address names
(--dlperf-ray-address, else RAY_ADDRESS), its nodes chosen and probed now, so that a cluster that cannot
be reached or has no node for the cases stops the session before the first case."""
from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

import pytest

from ..base import ClusterError
from ..progress import shown
from .options import RayOptions

if TYPE_CHECKING:
    from ...options.core import RunOptions
    from .cluster import RayCluster


def make_ray_cluster(config: pytest.Config, options: RunOptions, ray_opts: RayOptions,
                     frameworks: tuple[str, ...] = ()) -> RayCluster:
    """Attach and probe the nodes; no Ray, no address, or a cluster that cannot be used is a usage error."""
    if importlib.util.find_spec("ray") is None:  # Ray is an extra, imported only for this kind
        raise pytest.UsageError("--dlperf-cluster ray needs Ray on this machine: pip install 'pytest-dlperf[ray]' "
                                "(the same Ray and Python versions as the cluster's)")
    if not ray_opts.address:
        raise pytest.UsageError("--dlperf-cluster ray: give --dlperf-ray-address ray://HEAD:10001 (the head's Ray "
                                "Client port) or set RAY_ADDRESS; the harness attaches to a running cluster only")
    from .cluster import RayCluster

    gpus = None if options.devices is None else options.devices == "gpu"
    cluster = RayCluster(ray_opts, want=options.nodes, slots=options.gpus_per_node, gpus=gpus,
                         frameworks=frameworks or ("torch",), say=shown(config), token=options.session_token)
    try:
        cluster.connect()
        cluster.nodes()  # preflight now: a cluster without nodes for the cases fails the session before any case
    except BaseException as exc:
        cluster.close()
        if isinstance(exc, ClusterError):
            raise pytest.UsageError(f"--dlperf-cluster ray: {exc}") from None
        raise
    return cluster
