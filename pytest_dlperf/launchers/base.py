"""The launcher interface, one seam for every engine: a case and a set of nodes become commands.

A launcher declares its framework, models, workload files and per-model default sizes, and builds
argument lists only (TorchX style): either one command per node (torchrun, Paddle's launch, TF
workers) or one command on node 0 that starts every node (mpirun, horovodrun). The same commands
are printed by ``--dlperf-dryrun`` and run by the runner, so a pasted dry-run reproduces the case.
"""
from __future__ import annotations

import posixpath
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from ..clusters.base import RUN_TAG_ENV, Node, NodeCommand, RankStart, SpanAccess
from ..datasources import install_line, source
from ..specs import COMPILED, PRECISIONS, CaseSpec, CheckpointMode, Measurement, ModelDefaults

# The decoder's width and depth per profile, a case variant (``d256l4``): on CPU nodes small enough
# for the default suite's budget; on GPUs about 0.95 B parameters, the size a plain eager loop
# brought to 45% MFU on an H200 in bf16 (issue #38; not yet measured with this workload).
LLM_SIZES = {"cpu": (256, 4), "gpu": (2048, 16)}
LLM_VARIANT = re.compile(r"^d(\d+)l(\d+)$")


# The torch workload (node/workloads/torch_ddp.py) and the modules it imports beside it: what every launcher
# that runs it copies (torchrun's, Horovod's).
TORCH_WORKLOAD = ("torch_ddp.py", "torch_models.py", "torch_comm.py", "torch_probes.py", "torch_checkpoint.py")
# The local cluster's direct start of a torch workload's ranks (RankStart.DIRECT): the harness's own on every side.
RANKSTART = "rankstart.py"
# What goes with every workload: the step-log contract, the node's facts (cpu_model), the scaffold of flags,
# feed and input facts every workload shares (node/workloads/workloadkit.py) and the timed checkpoint (checkpoints.py).
CHECKPOINTS = "checkpoints.py"
BESIDE_EVERY_WORKLOAD = ("steplog.py", "nodefacts.py", "workloadkit.py", CHECKPOINTS)


class CacheUse(Enum):
    """Which inductor cache a compiled case's launch compiles into (without --dlperf-compile-cache)."""

    OWN = "own"  # an empty one of its own, removed after it: a cold compile
    SEED = "seed"  # an empty one of its own, kept after it for the case's warm launches: a cold compile
    WARM = "warm"  # the case's seed launch's: compiled from it, so its start-up is not a compile's


@dataclass(frozen=True)
class CompileCache:
    """A launch's inductor cache: its use, and for a warm launch the seed's directory on each node."""

    use: CacheUse = CacheUse.OWN
    dirs: Mapping[str, str] = field(default_factory=dict)  # WARM: node name -> the seed launch's cache


def own_cache_dir(run_dir: str) -> str:
    """A launch's own inductor cache, in its run directory on the node."""
    return posixpath.join(run_dir, "inductor-cache")


def carries_checkpoints(files: list[Path]) -> bool:
    """Whether a launch's workload files take ``--checkpoint-dir``: an A/B side's older revision of them, from before
    the timed checkpoint, holds no checkpoints.py and its workload would refuse the flag."""
    return any(Path(f).name == CHECKPOINTS for f in files)


def checkpoint_dir(m: Measurement, run_dirs: list[str], tag: str, shared: bool) -> str:
    """Where a launch's ranks save their checkpoint, one path on every node (``run_dirs``: the nodes', node 0's
    first): under --dlperf-checkpoint-dir, a directory of the launch's own (``tag``); else node 0's run directory where
    every rank sees it (one node, or nodes that share a filesystem). "": no checkpoint (off, a profiled launch, or
    nodes that share no directory)."""
    if m.checkpoint != CheckpointMode.ON or m.profile_steps:
        return ""
    if m.checkpoint_dir:
        return posixpath.join(m.checkpoint_dir, tag)
    return posixpath.join(run_dirs[0], "checkpoint") if len(run_dirs) == 1 or shared else ""


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
    addresses: dict[str, str] = field(default_factory=dict)  # node name -> address the others reach it at
    ports: dict[str, list[int]] = field(default_factory=dict)  # node name -> ports free on that node
    hostfile: str | None = None  # on node 0, MPI style "address slots=N" per node (spanning launchers)
    span: SpanAccess | None = None  # spanning launchers: how node 0 reaches the other nodes
    # node name -> the interface holding its address and the socket variables its environment sets
    # (nodechecks/interfaces.py; multi-node cases only)
    interfaces: dict[str, dict] = field(default_factory=dict)
    compile_cache: CompileCache = field(default_factory=CompileCache)  # a compiled case's inductor cache
    rank_start: RankStart = RankStart.AGENT  # how the cluster starts a torch workload's ranks (Cluster.rank_start)
    checkpoint: str = ""  # where the ranks save their checkpoint, one path on every node ("": none; checkpoint_dir)

    @property
    def output_name(self) -> str:
        return "steps.jsonl"

    def output_path(self, node: Node) -> str:
        return str(Path(self.run_dirs[node.name]) / self.output_name)

    def trace_dir(self, node: Node) -> str:
        """Where a profiled launch's ranks on ``node`` write their traces."""
        return str(Path(self.run_dirs[node.name]) / "trace")


# On CPU nodes, glibc serves every tensor above its mmap threshold (at most 32 MiB) with a fresh
# mmap and returns it with munmap when freed, so each step page-faults and zeroes its large tensors
# anew (VGG-16 bs4: 2.8 M faults per launch). That cost depends on the kernel's memory state and
# made whole launches faster or slower: VGG-16 1n1g gave 1.98 samples/s with a run-to-run CV of
# 25%, ResNet-50 12.98 with 6.0%. Keeping freed memory in the heap, as the CUDA caching allocator
# does on GPUs, gave 5.97 (CV 4.5%) and 14.77 (CV 2.5%) on the same machine. Exported as env by
# the launchers, so the dry-run shows it.
CPU_MALLOC_ENV = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(64 << 30)}


WORKLOADS = Path(__file__).resolve().parent.parent / "node" / "workloads"


# ArcFace's identities: PLSC's MS1M-ArcFace class count on GPUs; fewer on CPU nodes (in the case id).
ARCFACE_CLASSES = {"cpu": 4096, "gpu": 85742}


class Launcher(ABC):
    """Builds the commands of one backend; what it needs of the nodes it declares here."""

    name: str = ""  # the --backend value
    framework: str = ""  # the package every node must have; profiles and baselines name its version
    models: tuple[str, ...] = ()
    precisions: tuple[str, ...] = PRECISIONS  # what the backend can train; the profile's are cut to these
    compile_modes: tuple[str, ...] = ("eager",)  # "compiled" too: its models train through torch.compile
    # Files of pytest_dlperf/node/workloads copied into every run directory; the first is the one run.
    # BESIDE_EVERY_WORKLOAD go with every workload.
    workload_files: tuple[str, ...] = ()
    spans_nodes: bool = False  # True: one command on node 0 starts every node (mpirun style)
    # None: the workload writes the step log (the contract). Else the format (pytest_dlperf.formats) whose parser
    # reads node 0's output (a program the project did not write, launchers/external.py).
    output_format: str | None = None
    defaults: dict[str, dict[str, ModelDefaults]] = {}  # profile ("cpu", "gpu") -> model -> sizes
    # Its workload's loader of real data (datasources.py declares what each reads, per source and model);
    # None: it trains on synthetic batches only.
    loader: str | None = None
    # None: its workload takes --profile-steps/--profile-dir (a profiled launch, --dlperf-explain); else why not
    unprofiled: str | None = "its workload has no profiled launch"

    def ports_needed(self, topology) -> int:  # noqa: ANN001 - Topology
        """Ports the plan carries for every node, chosen on that node (0: only node 0's master port)."""
        return 0

    def variants(self, profile: str, model: str) -> tuple[str, ...]:
        """The backend's own case dimension for a model on a profile ("" = none), e.g. XLA on/off.
        By default ArcFace's class count (``cls4096``), for every backend that trains it."""
        return (f"cls{ARCFACE_CLASSES[profile]}",) if model == "arcface" else ("",)

    @staticmethod
    def variant_flags(case: CaseSpec) -> list[str]:
        """Workload flags the default variants stand for: ``cls4096`` -> ``--num-classes 4096``, a
        decoder's ``d256l4`` -> ``--llm-dim 256 --llm-layers 4``, ``compiled`` -> ``--compile`` (a variant
        may join several parts with '-', e.g. ``torch-cls4096``, ``d256l4-compiled``)."""
        flags = []
        for part in case.variant.split("-"):
            if part.startswith("cls"):
                flags += ["--num-classes", part[3:]]
            elif case.model == "llama" and (m := LLM_VARIANT.match(part)):
                flags += ["--llm-dim", m.group(1), "--llm-layers", m.group(2)]
            elif part == COMPILED:
                flags.append("--compile")
        return flags

    def data_format(self, case: CaseSpec) -> str | None:
        """The dataset format a real-data case reads (None: synthetic, or this engine does not read it)."""
        return source(case.data).format_for(self.loader, case.model)

    def no_data_reason(self, case: CaseSpec) -> str | None:
        """Why this engine cannot train the case's data (None: it can): said when the case is skipped."""
        return source(case.data).why_not(self.name, self.loader, case.model)

    @staticmethod
    def profile_flags(plan: RunPlan, node: Node) -> list[str]:
        """A profiled launch's workload flags: its steps, and where the node's ranks write their traces."""
        steps = plan.measurement.profile_steps
        return ["--profile-steps", str(steps), "--profile-dir", plan.trace_dir(node)] if steps else []

    @staticmethod
    def data_flags(plan: RunPlan, node: Node) -> list[str]:
        """A real-data case's workload flags: the dataset and the loader's worker processes per rank on ``node``
        (--dlperf-data-workers, else the node's cores over its ranks, 1 to 8)."""
        case, m = plan.case, plan.measurement
        if not case.real_data:
            return []
        workers = m.data_workers if m.data_workers is not None else \
            max(1, min(8, node.cpus // max(1, case.topology.devices_per_node)))
        return ["--data", case.data, "--data-dir", m.data_dir, "--data-workers", str(workers),
                *(["--drop-caches"] if m.drop_caches else [])]

    def frameworks_for(self, case: CaseSpec) -> tuple[str, ...]:
        """Packages (import names) every node of the case needs, in one version on all of them: the engine's
        and, where the engine reads the case's data source, the source's."""
        return (*self.engine_frameworks(case), *(source(case.data).frameworks if self.data_format(case) else ()))

    def engine_frameworks(self, case: CaseSpec) -> tuple[str, ...]:
        """The engine's own packages for the case."""
        return (self.framework,)

    def install_hint(self) -> str:
        """What to run on a node that lacks the backend's framework."""
        return f"pip install 'pytest-dlperf[{self.name}]'"

    def install_hint_for(self, framework: str) -> str:
        """What to run on a node that lacks one of ``frameworks_for(case)``: a data source's own line, else the
        engine's (``engine_hint_for``)."""
        return install_line(framework) or self.engine_hint_for(framework)

    def engine_hint_for(self, framework: str) -> str:
        """What to run on a node that lacks one of ``engine_frameworks(case)``."""
        return self.install_hint()

    def workload_paths(self) -> list[Path]:
        files = list(dict.fromkeys([*self.workload_files, *BESIDE_EVERY_WORKLOAD]))
        return [WORKLOADS / f for f in files]

    def model_defaults(self, profile: str, model: str) -> ModelDefaults:
        return self.defaults[profile][model]

    @abstractmethod
    def commands(self, plan: RunPlan) -> list[NodeCommand]:
        """One command per node of the plan, or (``spans_nodes``) one command for node 0."""

    @staticmethod
    def workload_flags(case: CaseSpec, m: Measurement, threads: int, output: str, checkpoint: str = "") -> list[str]:
        """The flags every workload accepts (README, "Writing a workload"), for this case and measurement;
        ``checkpoint``: the plan's checkpoint directory (``RunPlan.checkpoint``)."""
        return ["--model", case.model, "--precision", case.precision,
                "--batch-size", str(case.batch_size), "--image-size", str(case.image_size),
                "--warmup-iters", str(m.warmup_iters), "--max-warmup-iters", str(m.max_warmup_iters),
                "--iters", str(m.iters), "--window-seconds", f"{m.window_seconds:g}",
                "--max-iters", str(m.max_iters), "--threads", str(threads),
                *(["--checkpoint-dir", checkpoint] if checkpoint else []), "--output", output]

    def parse_output(self, plan: RunPlan, output: str) -> dict:
        """With ``output_format``: node 0's output -> the run's meta, its figures under ``parsed``
        (throughput, rates). Raises ValueError saying what the output lacks."""
        raise NotImplementedError(f"launcher {self.name!r} sets output_format but does not parse output")

    def blame(self, plan: RunPlan, log: str) -> str | None:
        """Spanning launchers: from node 0's log (every rank's output), which rank on which node
        failed first, e.g. "rank 1 on local1 failed first"; None when the log does not say."""
        return None

    @staticmethod
    def worker_env(plan: RunPlan, node: Node, threads: int = 0) -> dict[str, str]:
        """What every node command carries: the run tag (the sweep finds the run's processes by it),
        OpenMP threads per worker when given, and on CPU nodes the allocator settings that keep
        launches steady (CPU_MALLOC_ENV)."""
        env = {RUN_TAG_ENV: plan.tag, **Launcher.socket_env(plan, node)}
        if threads:
            env["OMP_NUM_THREADS"] = str(threads)
        if node.gpus == 0:
            env.update(CPU_MALLOC_ENV)
        return env

    @staticmethod
    def socket_env(plan: RunPlan, node: Node) -> dict[str, str]:
        """A multi-node case on a node whose hostname resolves to loopback (Gloo's default address there):
        GLOO_SOCKET_IFNAME to the interface that holds the node's address, where the node sets none. Nothing
        elsewhere, and nothing for a launcher that starts every node from node 0 (its variables reach all)."""
        found = plan.interfaces.get(node.name) or {}
        if plan.case.topology.nodes < 2 or plan.span is not None or not found.get("loopback") or \
                not found.get("interface") or "GLOO_SOCKET_IFNAME" in found.get("set", {}):
            return {}
        return {"GLOO_SOCKET_IFNAME": found["interface"]}

    @staticmethod
    def threads_per_worker(node: Node, workers: int) -> int:
        """Cores per worker process on a CPU node (torchrun only sets 1 when it starts several)."""
        return max(1, node.cpus // max(1, workers))
