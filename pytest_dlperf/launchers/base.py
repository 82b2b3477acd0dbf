"""The launcher interface: turns a case and a set of nodes into one command per node.

A launcher only builds argument lists (TorchX style): the same commands are printed by
``--dlperf-dryrun`` and run by the runner, so a pasted dry-run reproduces the case.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from ..clusters.base import Node, NodeCommand
from ..specs import CaseSpec, Measurement


@dataclass(frozen=True)
class RunPlan:
    """Where one run of a case happens: nodes, per-node directories and the rendezvous."""

    case: CaseSpec
    measurement: Measurement
    nodes: list[Node]  # the first case.topology.nodes nodes, node 0 first
    run_dirs: dict[str, str]  # node name -> run directory on that node
    workload: dict[str, str]  # node name -> workload script path on that node
    master_addr: str
    master_port: int
    tag: str  # DLPERF_RUN_TAG for every process of the run

    @property
    def output_name(self) -> str:
        return "steps.jsonl"

    def output_path(self, node: Node) -> str:
        return str(Path(self.run_dirs[node.name]) / self.output_name)


class Launcher(ABC):
    """Builds the per-node commands of one backend."""

    name: str = ""
    workload: str = ""  # file name in pytest_dlperf/workloads
    models: tuple[str, ...] = ()

    def workload_path(self) -> Path:
        return Path(__file__).resolve().parent.parent / "workloads" / self.workload

    @abstractmethod
    def commands(self, plan: RunPlan) -> list[NodeCommand]:
        """One command per node of the plan."""

    @staticmethod
    def threads_per_worker(node: Node, workers: int) -> int:
        """Cores per worker process on a CPU node (torchrun only sets 1 when it starts several)."""
        return max(1, node.cpus // max(1, workers))
