"""The Slurm cluster built from the --dlperf-slurm-* options: the caller's allocation when pytest
runs inside one (SLURM_JOB_ID), else one the harness allocates now and releases at the end."""
from __future__ import annotations

import shlex

import pytest

from ..aliyun.factory import shown
from ..base import ClusterError
from .allocation import Allocation, allocate, from_environment
from .cluster import SlurmCluster
from .commands import AllocationSpec, SlurmError, which


def make_slurm_cluster(config: pytest.Config, options, frameworks: tuple[str, ...] = ()) -> SlurmCluster:  # noqa: ANN001
    """The allocation's nodes as a cluster; bad input or a refused allocation is a usage error."""
    get = config.getoption
    say = shown(config)
    try:
        for tool in ("srun", "squeue", "scontrol", "scancel"):
            which(tool)
        alloc = from_environment()
    except SlurmError as exc:
        raise pytest.UsageError(f"--dlperf-cluster slurm: {exc}") from None
    if alloc is not None:
        asked = [f"--dlperf-slurm-{n}" for n in ("partition", "account", "time", "constraint", "qos")
                 if get(f"dlperf_slurm_{n}")]
        if asked:
            say(f"slurm: inside allocation {alloc.job_id} (SLURM_JOB_ID): {', '.join(asked)} not used")
        if options.nodes and options.nodes > len(alloc.nodes):
            raise pytest.UsageError(f"--nodes {options.nodes}: allocation {alloc.job_id} has {len(alloc.nodes)} "
                                    f"node(s): {','.join(alloc.nodes)}")
    else:
        if getattr(config, "workerinput", None) is not None:
            raise pytest.UsageError("--dlperf-cluster slurm allocates once per session: run it without pytest-xdist "
                                    "(-n), or inside salloc/sbatch so that the workers share that allocation")
        spec = AllocationSpec(nodes=options.nodes or 1, partition=get("dlperf_slurm_partition"),
                              account=get("dlperf_slurm_account"), time=get("dlperf_slurm_time"),
                              gpus_per_node=get("dlperf_slurm_gpus_per_node"),
                              constraint=get("dlperf_slurm_constraint"), qos=get("dlperf_slurm_qos"),
                              extra=tuple(shlex.split(get("dlperf_slurm_salloc_args") or "")))
        try:
            alloc = allocate(spec, get("dlperf_slurm_wait"), say)
        except SlurmError as exc:
            raise pytest.UsageError(f"--dlperf-cluster slurm: {exc}") from None
    return _cluster(config, options, alloc, frameworks, say)


def _cluster(config: pytest.Config, options, alloc: Allocation, frameworks, say) -> SlurmCluster:  # noqa: ANN001
    get = config.getoption
    workdir = get("dlperf_slurm_workdir") or str(options.report_dir / "slurm")
    cluster = SlurmCluster(alloc, workdir=workdir, slots=options.gpus_per_node, frameworks=frameworks,
                           python=get("dlperf_slurm_python"), say=say, node_dir=get("dlperf_slurm_node_dir"))
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
