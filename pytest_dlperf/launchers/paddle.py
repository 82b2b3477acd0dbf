"""PaddlePaddle collective training: ``python -m paddle.distributed.launch`` on every node
(``--master`` node 0, ``--nnodes``, ``--rank``, ``--nproc_per_node``), as PLSC's runs start it."""
from __future__ import annotations

import shlex

from ..clusters.base import NodeCommand
from .base import Launcher, ModelDefaults, RunPlan


class PaddleLauncher(Launcher):
    """One ``paddle.distributed.launch`` per node; rank logs (``workerlog.N``) end up in the node's log."""

    name = "paddle"
    unprofiled = "its workload does not run Paddle's profiler yet"
    framework = "paddle"
    models = ("resnet50", "vgg16", "arcface")
    workload_files = ("paddle_dp.py", "paddle_data.py", "dataset.py")
    loader = "paddle"  # PaddleClas' list through paddle.io.DataLoader (node/workloads/paddle_data.py)
    defaults = {
        "cpu": {"resnet50": ModelDefaults(8, 64), "vgg16": ModelDefaults(4, 32), "arcface": ModelDefaults(8, 64)},
        "gpu": {"resnet50": ModelDefaults(128, 224), "vgg16": ModelDefaults(64, 224),
                "arcface": ModelDefaults(128, 112)},
    }

    def install_hint(self) -> str:
        return ("pip install 'pytest-dlperf[paddle]' (paddlepaddle, CPU; GPU nodes: paddlepaddle-gpu from "
                "https://www.paddlepaddle.org.cn/packages/stable/cu126/)")

    def commands(self, plan: RunPlan) -> list[NodeCommand]:
        case, m, topo = plan.case, plan.measurement, plan.case.topology
        master = f"{plan.master_addr}:{plan.master_port}"
        cmds = []
        for rank, node in enumerate(plan.nodes):
            threads = self.threads_per_worker(node, topo.devices_per_node) if node.gpus == 0 else 0
            logs = f"{plan.run_dirs[node.name]}/paddle-logs"
            # --host: the address the other nodes reach this one at (Paddle otherwise takes the
            # hostname's address, and node 0 only serves as master when that equals --master's)
            launch = [node.python, "-m", "paddle.distributed.launch", "--master", master,
                      "--host", plan.addresses[node.name],
                      "--nnodes", str(topo.nodes), "--rank", str(rank),
                      "--nproc_per_node", str(topo.devices_per_node), "--log_dir", logs,
                      plan.workload[node.name], *self.workload_flags(case, m, threads, plan.output_path(node), plan.checkpoint)]
            launch += self.variant_flags(case) + self.data_flags(plan, node)
            # The ranks write to workerlog.N: show their last lines in the node's log when one fails.
            script = (f"{shlex.join(launch)}; rc=$?; if [ $rc -ne 0 ]; then tail -n 40 {shlex.quote(logs)}/workerlog.*; "
                      "fi; exit $rc")
            cmds.append(NodeCommand(node, ["bash", "-c", script], self.worker_env(plan, node, threads),
                                    cwd=plan.run_dirs[node.name]))
        return cmds
