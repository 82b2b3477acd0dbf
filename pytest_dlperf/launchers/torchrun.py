"""PyTorch DDP launched with torchrun: one launcher per node, static rendezvous on node 0."""
from __future__ import annotations

from ..clusters.base import RUN_TAG_ENV, NodeCommand
from .base import CPU_MALLOC_ENV, Launcher, ModelDefaults, RunPlan


class TorchrunLauncher(Launcher):
    """``python -m torch.distributed.run --nnodes N --node_rank R ... torch_ddp.py ...``."""

    name = "ddp"
    framework = "torch"
    models = ("resnet50", "vgg16", "bert-base", "arcface")
    workload_files = ("torch_ddp.py",)
    # CPU: small enough that the default suite ends within 6 minutes on 2 cores (README).
    defaults = {
        "cpu": {"resnet50": ModelDefaults(8, 64), "vgg16": ModelDefaults(4, 32),
                "bert-base": ModelDefaults(2, 32), "arcface": ModelDefaults(8, 64)},
        "gpu": {"resnet50": ModelDefaults(128, 224), "vgg16": ModelDefaults(64, 224),
                "bert-base": ModelDefaults(32, 128), "arcface": ModelDefaults(128, 112)},
    }

    def install_hint(self) -> str:
        return ("pip install torch==2.13.0 (CPU nodes: --index-url https://download.pytorch.org/whl/cpu)")

    def commands(self, plan: RunPlan) -> list[NodeCommand]:
        case, m = plan.case, plan.measurement
        topo = case.topology
        cmds = []
        for rank, node in enumerate(plan.nodes):
            threads = self.threads_per_worker(node, topo.devices_per_node) if node.gpus == 0 else 0
            argv = [
                node.python, "-m", "torch.distributed.run",
                "--nnodes", str(topo.nodes),
                "--node_rank", str(rank),
                "--nproc_per_node", str(topo.devices_per_node),
                "--master_addr", plan.master_addr,
                "--master_port", str(plan.master_port),
                plan.workload[node.name],
                "--model", case.model,
                "--precision", case.precision,
                "--batch-size", str(case.batch_size),
                "--image-size", str(case.image_size),
                "--warmup-iters", str(m.warmup_iters),
                "--max-warmup-iters", str(m.max_warmup_iters),
                "--iters", str(m.iters),
                "--window-seconds", f"{m.window_seconds:g}",
                "--max-iters", str(m.max_iters),
                "--threads", str(threads),
                "--output", plan.output_path(node),
            ]
            argv += self.variant_flags(case)
            env = {RUN_TAG_ENV: plan.tag}
            if threads:
                env["OMP_NUM_THREADS"] = str(threads)
            if node.gpus == 0:
                env.update(CPU_MALLOC_ENV)
            cmds.append(NodeCommand(node, argv, env, cwd=plan.run_dirs[node.name]))
        return cmds
