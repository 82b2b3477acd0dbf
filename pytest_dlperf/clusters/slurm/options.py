"""The Slurm cluster kind's options (--dlperf-slurm-*, aliases --slurm-*), its plugin's
``pytest_addoption``, and :class:`SlurmOptions`, their typed values resolved once per session.
Light on purpose: loaded into every pytest session, it imports none of the cluster's modules."""
from __future__ import annotations

import shlex
from dataclasses import dataclass

import pytest

from ...options.argtypes import positive_int, positive_seconds
from ...options.groups import OptionGroup

# The allocation's options a session inside an allocation (SLURM_JOB_ID) does not use.
ALLOCATION_OPTIONS = ("partition", "account", "time", "constraint", "qos")


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def add_options(parser: pytest.Parser) -> None:
    """--dlperf-cluster slurm: inside salloc/sbatch the allocation's nodes; otherwise the harness
    allocates with salloc --no-shell and cancels the job at the end."""
    a = OptionGroup(parser, "dlperf-slurm", "pytest-dlperf: --dlperf-cluster slurm", after="dlperf-aliyun")
    a("--dlperf-slurm-partition", alias="--slurm-partition", default="", metavar="NAME",
      help="--dlperf-cluster slurm, when allocating (not inside an allocation): the partition (default: "
           "Slurm's)")
    a("--dlperf-slurm-account", alias="--slurm-account", default="", metavar="NAME",
      help="the account the allocation is charged to")
    a("--dlperf-slurm-time", alias="--slurm-time", default="", metavar="TIME",
      help="the allocation's time limit, in Slurm's format (MINUTES, HH:MM:SS, D-HH:MM)")
    a("--dlperf-slurm-gpus-per-node", alias="--slurm-gpus-per-node", type=positive_int, default=None, metavar="G",
      help="GPUs per node to allocate (salloc --gpus-per-node)")
    a("--dlperf-slurm-constraint", alias="--slurm-constraint", default="", metavar="FEATURES",
      help="node features to allocate (salloc --constraint)")
    a("--dlperf-slurm-qos", alias="--slurm-qos", default="", metavar="QOS",
      help="the allocation's quality of service (salloc --qos)")
    a("--dlperf-slurm-salloc-args", default="", metavar="'ARGS'", help="more salloc arguments, as one shell-quoted string")
    a("--dlperf-slurm-wait", alias="--slurm-wait", type=positive_seconds, default=600.0, metavar="S",
      help="seconds to wait for the allocation to start; then it is cancelled (default 600)")
    a("--dlperf-slurm-workdir", default=None, metavar="DIR",
      help="directory for run directories, used directly when every node sees it (a shared file system; "
           "default <report dir>/slurm); else each node's --dlperf-slurm-node-dir, files sent with sbcast")
    a("--dlperf-slurm-node-dir", default="/tmp", metavar="DIR",
      help="node-local directory for run directories when the work directory is not shared (default /tmp)")
    a("--dlperf-slurm-python", default="python3", metavar="PATH",
      help="Python interpreter on the nodes that runs the launcher and workload; steps get this process's "
           "environment, --export=ALL (default python3)")


@dataclass(frozen=True)
class SlurmOptions:
    """The --dlperf-slurm-* values."""

    partition: str = ""
    account: str = ""
    time: str = ""
    gpus_per_node: int | None = None
    constraint: str = ""
    qos: str = ""
    salloc_args: tuple[str, ...] = ()  # --dlperf-slurm-salloc-args, split as the shell would
    wait: float = 600.0
    workdir: str | None = None
    node_dir: str = "/tmp"
    python: str = "python3"

    @classmethod
    def from_config(cls, config: pytest.Config) -> SlurmOptions:
        get = config.getoption
        try:
            salloc_args = tuple(shlex.split(get("dlperf_slurm_salloc_args") or ""))
        except ValueError as exc:
            raise pytest.UsageError(f"--dlperf-slurm-salloc-args: {exc}: quote it as a shell would") from None
        return cls(partition=get("dlperf_slurm_partition"), account=get("dlperf_slurm_account"),
                   time=get("dlperf_slurm_time"), gpus_per_node=get("dlperf_slurm_gpus_per_node"),
                   constraint=get("dlperf_slurm_constraint"), qos=get("dlperf_slurm_qos"),
                   salloc_args=salloc_args, wait=get("dlperf_slurm_wait"),
                   workdir=get("dlperf_slurm_workdir"), node_dir=get("dlperf_slurm_node_dir"),
                   python=get("dlperf_slurm_python"))

    def allocation_options_given(self) -> list[str]:
        """The allocation's options given, as option names (unused inside an allocation)."""
        return [f"--dlperf-slurm-{n}" for n in ALLOCATION_OPTIONS if getattr(self, n)]
