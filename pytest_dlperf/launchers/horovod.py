"""The Horovod family, launched as the seeds launch it: one launcher on node 0 that starts every
rank on every node over SSH. ``horovod``: ``horovodrun -np N -H a:G,b:G --gloo|--mpi python ...``;
``perseus``: Alibaba AIACC-Training (formerly Perseus), ``perseusrun -np N -H a:G,b:G --gloo|--mpi --
python ...`` with the Horovod-compatible ``perseus.torch.horovod`` / ``perseus.tensorflow.horovod``.

Each runs the PyTorch workload and the TensorFlow workload (``--engine horovod|perseus``): which
framework trains is the first part of the case's variant (``torch``, ``tf``).
"""
from __future__ import annotations

import os
import posixpath
import re

from ..clusters.base import NodeCommand
from ..specs import CaseSpec
from .base import ARCFACE_CLASSES, LLM_SIZES, TORCH_WORKLOAD, Launcher, RunPlan
from .tf import BYTES_PER_PACK, TFLauncher
from .torchrun import TorchrunLauncher

CONTROLLERS = ("gloo", "mpi")
# Frameworks a Horovod-style engine drives: variant part -> (import name, workload, models).
FRAMEWORKS = {
    "torch": ("torch", "torch_ddp.py", TorchrunLauncher.models),
    "tf": ("tensorflow", "tf_mwms.py", TFLauncher.models),
}
FIRST_TRACEBACK = re.compile(r"^\[(?:\d+,)?(\d+)\]<std(?:err|out)>:Traceback \(most recent call last\)", re.MULTILINE)
FIRST_EXIT = re.compile(r"^Process (\d+) exit with status code [1-9]", re.MULTILINE)
# OpenMPI refuses to run as root unless told; horovodrun --mpi passes the environment on.
MPI_AS_ROOT = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


class HorovodLauncher(Launcher):
    """``python -m horovod.runner.launch`` (horovodrun) on node 0 for all ranks of all nodes."""

    name = "horovod"
    unprofiled = "horovodrun starts every rank from node 0, and its ranks' traces are not gathered yet"
    framework = "horovod"
    models = TorchrunLauncher.models  # the TF workload trains the seeds' models but ArcFace (variants)
    workload_files = (*TORCH_WORKLOAD, "tf_mwms.py")
    spans_nodes = True
    # The same sizes as the frameworks' own backends, so that ratios between engines compare like with like.
    defaults = TorchrunLauncher.defaults
    controller_flag = {"gloo": "--gloo", "mpi": "--mpi"}

    def __init__(self, controller: str = "gloo") -> None:
        if controller not in CONTROLLERS:
            raise ValueError(f"controller {controller!r}: one of {', '.join(CONTROLLERS)}")
        self.controller = controller

    def variants(self, profile: str, model: str) -> tuple[str, ...]:
        """The framework that trains (torch, tf), then ArcFace's class count or the decoder's size:
        ``torch-cls4096``, ``torch-d256l4``."""
        out = []
        for part, (_, _, models) in FRAMEWORKS.items():
            if model in models:
                size = {"arcface": f"-cls{ARCFACE_CLASSES[profile]}", "llama": "-d{}l{}".format(*LLM_SIZES[profile])}
                out.append(part + size.get(model, ""))
        return tuple(out)

    @staticmethod
    def trains_with(case: CaseSpec) -> str:
        return case.variant.split("-")[0]

    def engine_frameworks(self, case: CaseSpec) -> tuple[str, ...]:
        return (self.framework, FRAMEWORKS[self.trains_with(case)][0])

    def install_hint(self) -> str:
        return self.install_hint_for(self.framework)

    def engine_hint_for(self, framework: str) -> str:
        if framework == "tensorflow":
            return TFLauncher().install_hint()
        if framework == "torch":
            return TorchrunLauncher().install_hint()
        return ("python -m pytest_dlperf.node.install_horovod (builds Horovod 0.28.1 against the node's torch "
                "and TensorFlow and caches the wheel; --mpi for MPI)")

    def launcher_argv(self, plan: RunPlan, np: int, hosts: str) -> list[str]:
        """The launcher's own part of the command line, up to the program it starts."""
        node0 = plan.nodes[0]
        argv = [node0.python, "-m", "horovod.runner.launch", "-np", str(np), "-H", hosts,
                self.controller_flag[self.controller], "--disable-cache"]
        return argv + self._ssh_flags(plan)

    @staticmethod
    def _ssh_flags(plan: RunPlan) -> list[str]:
        span = plan.span
        argv = []
        if span is not None and span.ssh_port:
            argv += ["--ssh-port", str(span.ssh_port)]
        if span is not None and span.ssh_identity:
            argv += ["--ssh-identity-file", span.ssh_identity]
        if span is not None and span.nics:  # the local cluster's loopback: no NIC discovery over SSH
            argv += ["--network-interfaces", ",".join(span.nics)]
        return argv

    def blame(self, plan: RunPlan, log: str) -> str | None:
        """horovodrun prefixes each rank's lines with ``[rank]<stderr>:``; the first rank to print a
        traceback (or, failing that, the first "Process N exit with status code") failed first. Its
        node: ranks fill the hosts of ``-H`` in order, devices_per_node each."""
        m = FIRST_TRACEBACK.search(log) or FIRST_EXIT.search(log)
        if m is None:
            return None
        rank, g = int(m.group(1)), plan.case.topology.devices_per_node
        if rank // g >= len(plan.nodes):
            return None
        return f"rank {rank} on {plan.nodes[rank // g].name} failed first"

    def passthrough_env(self) -> dict[str, str]:
        """Variables of the harness's environment the engine reads (PERSEUS_* for perseus)."""
        return {}

    def commands(self, plan: RunPlan) -> list[NodeCommand]:
        case, m, topo = plan.case, plan.measurement, plan.case.topology
        node0 = plan.nodes[0]
        threads = self.threads_per_worker(node0, topo.devices_per_node) if node0.gpus == 0 else 0
        # Both workloads sit beside each other (workload_files); the case's framework picks one.
        script = posixpath.join(posixpath.dirname(plan.workload[node0.name]), FRAMEWORKS[self.trains_with(case)][1])
        program = [node0.python, script, "--engine", self.name,
                   *self.workload_flags(case, m, threads, plan.output_path(node0), plan.checkpoint)]
        if self.trains_with(case) == "tf":
            program += ["--bytes-per-pack", str(BYTES_PER_PACK)]
        program += self.variant_flags(case)
        return [self.spanning_command(plan, program, threads)]

    def spanning_command(self, plan: RunPlan, program: list[str], threads: int) -> NodeCommand:
        """The launcher on node 0 starting ``program`` as every rank of every node of the plan."""
        node0, topo = plan.nodes[0], plan.case.topology
        hosts = ",".join(f"{plan.addresses[n.name]}:{topo.devices_per_node}" for n in plan.nodes)
        # The launcher exports its environment to every rank on every node: the run tag included.
        env = {**self.passthrough_env(), **(plan.span.env if plan.span is not None else {}),
               **self.worker_env(plan, node0, threads)}
        if self.controller == "mpi":
            env.update(MPI_AS_ROOT)
        # The workload files sit at one path on every node (runner.plan_run): one line starts every rank.
        argv = self.launcher_argv(plan, topo.world_size, hosts) + program
        return NodeCommand(node0, argv, env, cwd=plan.run_dirs[node0.name])


class PerseusLauncher(HorovodLauncher):
    """``perseusrun -np NP -H host1:N,host2:N --gloo|--mpi -- python ...`` (Alibaba's startup
    commands page); the workloads import ``perseus.torch.horovod`` / ``perseus.tensorflow.horovod``."""

    name = "perseus"
    framework = "perseus"

    def engine_hint_for(self, framework: str) -> str:
        if framework in ("torch", "tensorflow"):
            return super().engine_hint_for(framework)
        return ("AIACC-Training from Alibaba Cloud's AIACC packages or an Alibaba GPU image that ships it "
                "(not on PyPI; see Alibaba Cloud's AIACC-Training documentation)")

    def launcher_argv(self, plan: RunPlan, np: int, hosts: str) -> list[str]:
        node0 = plan.nodes[0]
        runner = os.path.join(os.path.dirname(node0.python), "perseusrun") if "/" in node0.python else "perseusrun"
        return [runner, "-np", str(np), "-H", hosts, self.controller_flag[self.controller],
                *self._ssh_flags(plan), "--"]

    def passthrough_env(self) -> dict[str, str]:
        return {k: v for k, v in os.environ.items() if k.startswith("PERSEUS_")}
