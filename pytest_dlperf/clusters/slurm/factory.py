"""The Slurm cluster built from the --dlperf-slurm-* options: the caller's allocation when pytest
runs inside one (SLURM_JOB_ID), else one the harness allocates now and releases at the end."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from ..base import ClusterError
from ..progress import shown
from .allocation import Allocation, allocate, from_environment
from .cluster import SlurmCluster
from .commands import AllocationSpec, SlurmError, which
from .options import SlurmOptions

if TYPE_CHECKING:
    from ...options.core import RunOptions


def make_slurm_cluster(config: pytest.Config, options: RunOptions, slurm: SlurmOptions,
                       frameworks: tuple[str, ...] = ()) -> SlurmCluster:
    """The allocation's nodes as a cluster; bad input or a refused allocation is a usage error."""
    say = shown(config)
    try:
        for tool in ("srun", "squeue", "scontrol", "scancel"):
            which(tool)
        alloc = from_environment()
    except SlurmError as exc:
        raise pytest.UsageError(f"--dlperf-cluster slurm: {exc}") from None
    if alloc is not None:
        asked = slurm.allocation_options_given()
        if asked:
            say(f"slurm: inside allocation {alloc.job_id} (SLURM_JOB_ID): {', '.join(asked)} not used")
        if options.nodes and options.nodes > len(alloc.nodes):
            raise pytest.UsageError(f"--nodes {options.nodes}: allocation {alloc.job_id} has {len(alloc.nodes)} "
                                    f"node(s): {','.join(alloc.nodes)}")
    else:
        if getattr(config, "workerinput", None) is not None:
            raise pytest.UsageError("--dlperf-cluster slurm allocates once per session: run it without pytest-xdist "
                                    "(-n), or inside salloc/sbatch so that the workers share that allocation")
        spec = AllocationSpec(nodes=options.nodes or 1, partition=slurm.partition, account=slurm.account,
                              time=slurm.time, gpus_per_node=slurm.gpus_per_node, constraint=slurm.constraint,
                              qos=slurm.qos, extra=slurm.salloc_args)
        try:
            alloc = allocate(spec, slurm.wait, say)
        except SlurmError as exc:
            raise pytest.UsageError(f"--dlperf-cluster slurm: {exc}") from None
    return _cluster(options, slurm, alloc, frameworks, say)


def _cluster(options: RunOptions, slurm: SlurmOptions, alloc: Allocation, frameworks: tuple[str, ...],
             say: Callable[[str], None]) -> SlurmCluster:
    workdir = slurm.workdir or str(options.report_dir / "slurm")
    cluster = SlurmCluster(alloc, workdir=workdir, slots=options.gpus_per_node, frameworks=frameworks,
                           python=slurm.python, say=say, node_dir=slurm.node_dir)
    try:
        cluster.nodes()  # preflight now, so a node that cannot run fails the session before any case
    except BaseException as exc:
        try:
            alloc.release(say)
        finally:
            if isinstance(exc, (ClusterError, SlurmError)):
                raise pytest.UsageError(f"--dlperf-cluster slurm: {exc}") from None
        raise
    return cluster
