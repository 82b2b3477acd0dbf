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


# On CPU nodes, glibc serves every tensor above its mmap threshold (at most 32 MiB) with a fresh
# mmap and returns it with munmap when freed, so each step page-faults and zeroes its large tensors
# anew (VGG-16 bs4: 2.8 M faults per launch). That cost depends on the kernel's memory state and
# made whole launches faster or slower: VGG-16 1n1g gave 1.98 samples/s with a run-to-run CV of
# 25%, ResNet-50 12.98 with 6.0%. Keeping freed memory in the heap, as the CUDA caching allocator
# does on GPUs, gave 5.97 (CV 4.5%) and 14.77 (CV 2.5%) on the same machine. Exported as env by
# the launchers, so the dry-run shows it.
CPU_MALLOC_ENV = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(64 << 30)}


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
