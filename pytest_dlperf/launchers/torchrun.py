"""PyTorch DDP launched with torchrun: one launcher per node, static rendezvous on node 0."""
from __future__ import annotations

import posixpath

from ..clusters.base import Node, NodeCommand, RankStart
from ..specs import COMPILE_MODES, CaseSpec
from .base import LLM_SIZES, RANKSTART, TORCH_WORKLOAD, CacheUse, Launcher, ModelDefaults, RunPlan, own_cache_dir


# The seeds' models, which every torch engine trains (Horovod's and Perseus's too).
SEED_MODELS = ("resnet50", "vgg16", "bert-base", "arcface")


class TorchrunLauncher(Launcher):
    """``python -m torch.distributed.run --nnodes N --node_rank R ... torch_ddp.py ...``."""

    name = "ddp"
    framework = "torch"
    models = (*SEED_MODELS, "llama")
    compile_modes = COMPILE_MODES
    # rankstart.py: the local cluster's direct start of the ranks (RankStart.DIRECT)
    workload_files = (*TORCH_WORKLOAD, "torch_data.py", "dataset.py", "torchprofile.py", RANKSTART)
    loader = "torch"  # a DataLoader, or DALI's pipeline (node/workloads/torch_data.py)
    unprofiled = None  # torch.profiler, a Chrome trace per rank (node/workloads/torchprofile.py)
    # CPU: small enough that the default suite ends within 6 minutes on 2 cores (README).
    # GPU: every case GPU-bound on an H100/H200, the GPU's work per step well above what the host takes
    # to dispatch it (README, "GPU sizes"): resnet50 at 256 as NVIDIA trains it on one A100/H100 (AMP at
    # 128 took 31 ms a step and varied 4%); bert-base at 256 (at 32 it measured the host: 887 and 1173
    # samples/s in two launches; a plain loop gave 3126 at 128, 3429 at 256); ArcFace at 1024 (at 128 its
    # 112 px steps took 24.7 ms for about 7 ms of the GPU's work); the decoder in bf16 only (LLMs do not
    # train in fp32: its 0.95 B parameters' fp32 step would take about 1.5 s; --dlperf-precision fp32 asks).
    defaults = {
        "cpu": {"resnet50": ModelDefaults(8, 64), "vgg16": ModelDefaults(4, 32),
                "bert-base": ModelDefaults(2, 32), "arcface": ModelDefaults(8, 64), "llama": ModelDefaults(2, 64)},
        "gpu": {"resnet50": ModelDefaults(256, 224), "vgg16": ModelDefaults(64, 224),
                "bert-base": ModelDefaults(256, 128), "arcface": ModelDefaults(1024, 112),
                "llama": ModelDefaults(4, 2048, ("amp",))},
    }

    def variants(self, profile: str, model: str) -> tuple[str, ...]:
        """The decoder's size (``d256l4``: width 256, 4 blocks); the others' as every backend's."""
        if model == "llama":
            return ("d{}l{}".format(*LLM_SIZES[profile]),)
        return super().variants(profile, model)

    def install_hint(self) -> str:
        return ("pip install torch==2.13.0 (CPU nodes: --index-url https://download.pytorch.org/whl/cpu)")

    def commands(self, plan: RunPlan) -> list[NodeCommand]:
        case, m = plan.case, plan.measurement
        # the direct start where the cluster asks for it and the starter is among the files (a plugin's subclass
        # that names its own files without it keeps torchrun)
        start = RankStart.DIRECT if plan.rank_start is RankStart.DIRECT and \
            any(p.name == RANKSTART for p in self.workload_paths()) else RankStart.AGENT
        cmds = []
        for rank, node in enumerate(plan.nodes):
            threads = self.threads_per_worker(node, case.topology.devices_per_node) if node.gpus == 0 else 0
            program = [plan.workload[node.name], *self.workload_flags(case, m, threads, plan.output_path(node), plan.checkpoint)]
            program += self.variant_flags(case) + self.data_flags(plan, node) + self.profile_flags(plan, node)
            if self.name != "ddp":
                program += ["--engine", self.name]
            env = compile_cache_env(plan, node) if case.compiled else {}
            if env and drops_its_cache(plan, node, env):
                program.append("--drop-compile-cache")
            cmds.append(self.node_command(plan, rank, program, threads, env, start))
        return cmds

    @staticmethod
    def node_command(plan: RunPlan, rank: int, program: list[str], threads: int,
                     env: dict[str, str] | None = None, start: RankStart = RankStart.AGENT) -> NodeCommand:
        """torchrun on the plan's node ``rank``, starting ``program`` (a script and its flags) per device,
        with ``env`` beside the launch's own variables. ``start`` DIRECT: rankstart.py (beside the workload)
        instead of torchrun's agent, the same ``python -u`` per rank and worker environment without the agent's
        import of torch and its exit (the local cluster's ``--dlperf-local-start direct``)."""
        node, topo = plan.nodes[rank], plan.case.topology
        if start is RankStart.DIRECT:
            launch = [posixpath.join(posixpath.dirname(plan.workload[node.name]), RANKSTART),
                      "--nnodes", str(topo.nodes),
                      "--node-rank", str(rank),
                      "--nproc-per-node", str(topo.devices_per_node),
                      "--master-addr", plan.master_addr,
                      "--master-port", str(plan.master_port),
                      "--run-id", plan.tag]
        else:
            launch = ["-m", "torch.distributed.run",
                      "--nnodes", str(topo.nodes),
                      "--node_rank", str(rank),
                      "--nproc_per_node", str(topo.devices_per_node),
                      "--master_addr", plan.master_addr,
                      "--master_port", str(plan.master_port),
                      # torchrun makes an (empty) torchelastic_* tree in the node's /tmp per launch and never
                      # removes it: a run directory of ours keeps it instead
                      "--log-dir", posixpath.join(plan.run_dirs[node.name], "torchelastic")]
        return NodeCommand(node, [node.python, *launch, *program],
                           {**Launcher.worker_env(plan, node, threads), **(env or {})}, cwd=plan.run_dirs[node.name])


def compile_cache_env(plan: RunPlan, node: Node) -> dict[str, str]:
    """Where a compiled case's inductor (and Triton) caches go on ``node``: the directory the session was
    asked to keep (``Measurement.compile_cache``); else a warm launch's, the case's seed launch's cache; else
    an empty one in the launch's run directory, which the workload removes at its end unless it seeds the
    case's warm launches (``--drop-compile-cache``). No session's caches reach another."""
    cache = plan.compile_cache
    where = (plan.measurement.compile_cache
             or (cache.dirs.get(node.name) if cache.use is CacheUse.WARM else None)
             or own_cache_dir(plan.run_dirs[node.name]))
    return {"TORCHINDUCTOR_CACHE_DIR": where, "TRITON_CACHE_DIR": posixpath.join(where, "triton")}


def drops_its_cache(plan: RunPlan, node: Node, env: dict[str, str]) -> bool:
    """Whether the launch removes its cache at its end: one of its own that seeds no warm launch."""
    own = env["TORCHINDUCTOR_CACHE_DIR"] == own_cache_dir(plan.run_dirs[node.name])
    return own and not plan.measurement.compile_cache and plan.compile_cache.use is not CacheUse.SEED


class FSDPLauncher(TorchrunLauncher):
    """PyTorch's sharded data parallelism (FSDP2, ``fully_shard`` per block and at the root; bf16
    parameters with amp on GPUs), launched as ddp is: torchrun on every node, ``--engine fsdp``."""

    name = "fsdp"


class ACSpeedLauncher(TorchrunLauncher):
    """Alibaba ACSpeed: the DDP workload with ``import acspeed`` first (the ACSpeed seed), torchrun
    as for ddp. ACSpeed is not on PyPI: nodes without it have their cases skipped."""

    name = "acspeed"
    compile_modes = ("eager",)  # (ACSpeed replaces DDP's communication; compiled DDP is ddp's)

    def engine_frameworks(self, case) -> tuple[str, ...]:  # noqa: ANN001 - CaseSpec
        return (*super().engine_frameworks(case), "acspeed")

    def engine_hint_for(self, framework: str) -> str:
        if framework == "acspeed":
            return ("ACSpeed from Alibaba Cloud's AIACC packages or an Alibaba GPU image that ships it "
                    "(not on PyPI; see Alibaba Cloud's ACSpeed documentation)")
        return super().engine_hint_for(framework)
