"""Benchmarks the project did not write: a command (tf_cnn_benchmarks, Horovod's synthetic
benchmark, a DeepLearningExamples ``main.py``, the user's own training script), launched over the
cluster as the built-in workloads are (torchrun per node, horovodrun on node 0, or the command on
every node), and the parser of its output (``formats``, which ``dlperf import`` reads with) in place of the step log.

A suite declares one in its ``conftest.py`` and selects it with ``--backend NAME``::

    BENCH = ExternalBenchmark(name="my-train", program=("{script}", "--arch", "{model}", ...),
                              format="dllogger", files=("train.py",), models=("resnet18",),
                              sizes={"cpu": {"resnet18": (8, 32)}})
    pytest_dlperf_backends, pytest_dlperf_make_launcher = hookimpls(BENCH)
"""
from __future__ import annotations

import string
from dataclasses import dataclass, field
from pathlib import Path

from ..clusters.base import NodeCommand
from ..formats import FORMATS, Hints
from ..specs import PRECISIONS, CaseSpec, ModelDefaults
from .base import Launcher, RunPlan
from .horovod import HorovodLauncher
from .torchrun import TorchrunLauncher

LAUNCHES = ("torchrun", "horovodrun", "per-node")
# What a program's arguments may name, filled per case, node and run (README, "External benchmarks").
PLACEHOLDERS = ("script", "dir", "python", "model", "model_name", "precision", "batch_size", "image_size",
                "warmup_iters", "iters", "threads", "nnodes", "node_rank", "nproc_per_node", "world_size",
                "master_addr", "master_port", "run_dir")
PRECISION_ARGS = "{precision_args}"  # an argument of its own: replaced by the case's precision's arguments


@dataclass(frozen=True)
class ExternalBenchmark:
    """An outside benchmark command, how it is launched and how its output is read."""

    name: str  # the --backend value
    program: tuple[str, ...]  # the program's argv with {placeholders}; "{script}" is files[0] on the node
    format: str  # the parser of node 0's output: one of formats.FORMATS
    framework: str = "torch"  # the package every node needs, in one version (profile: ...-torch2)
    launch: str = "torchrun"  # torchrun | horovodrun | per-node
    files: tuple[str | Path, ...] = ()  # copied to every node, beside each other
    models: tuple[str, ...] = ("resnet50",)
    sizes: dict[str, dict[str, tuple[int, int]]] = field(default_factory=dict)  # profile -> model -> (batch, size)
    model_names: dict[str, str] = field(default_factory=dict)  # our model -> the program's ({model_name})
    # The precisions the program trains, each with its arguments ({precision_args}); only these run.
    precision_args: dict[str, tuple[str, ...]] = field(default_factory=lambda: {"fp32": ()})
    warmup_iters: int | None = None  # the parser's warm-up rule: intervals or steps it drops
    env: dict[str, str] = field(default_factory=dict)
    install_hint: str = ""  # what to run on a node without the framework

    def __post_init__(self) -> None:
        where = f"external benchmark {self.name!r}"
        if self.format not in FORMATS:
            raise ValueError(f"{where}: format {self.format!r} has no parser; one of {', '.join(FORMATS)}")
        if self.launch not in LAUNCHES:
            raise ValueError(f"{where}: launch {self.launch!r}; one of {', '.join(LAUNCHES)}")
        if not self.program:
            raise ValueError(f"{where}: program is empty; give the command's argv, e.g. ('{{script}}', '--batch-size', "
                             "'{batch_size}')")
        for arg in self.program:
            if arg == PRECISION_ARGS:
                continue
            for _, key, _, _ in string.Formatter().parse(arg):
                if key is not None and key not in PLACEHOLDERS:
                    raise ValueError(f"{where}: {{{key}}} in {arg!r} is not a placeholder; "
                                     f"known: {', '.join(PLACEHOLDERS)}, and {PRECISION_ARGS} as an argument of its own")
        if any("{script}" in a for a in self.program) and not self.files:
            raise ValueError(f"{where}: the program names {{script}} but files is empty")
        for f in self.files:
            if not Path(f).is_file():
                raise ValueError(f"{where}: file {f} does not exist")
        missing = [p for p in self.precision_args if p not in PRECISIONS]
        if missing:
            raise ValueError(f"{where}: precision_args for {', '.join(missing)}: precisions are {', '.join(PRECISIONS)}")
        for profile, per_model in self.sizes.items():
            unknown = [m for m in per_model if m not in self.models]
            if profile not in ("cpu", "gpu") or unknown:
                raise ValueError(f"{where}: sizes[{profile!r}] must be 'cpu' or 'gpu' with models of {self.models}")

    def launcher(self, controller: str = "gloo") -> ExternalLauncher:
        return ExternalLauncher(self, controller)


class ExternalLauncher(Launcher):
    """Launches an ExternalBenchmark and reads its throughput from node 0's output."""

    def __init__(self, bench: ExternalBenchmark, controller: str = "gloo") -> None:
        self.bench = bench
        self.name = bench.name
        self.unprofiled = "a program the project did not write runs no profiler of ours"
        self.framework = bench.framework
        self.models = bench.models
        self.spans_nodes = bench.launch == "horovodrun"
        self.output_format = bench.format
        self.precisions = tuple(bench.precision_args)
        self.defaults = {p: {m: ModelDefaults(*bs) for m, bs in per.items()} for p, per in bench.sizes.items()}
        self._horovod = HorovodLauncher(controller) if self.spans_nodes else None

    def variants(self, profile: str, model: str) -> tuple[str, ...]:
        return ("",)

    def model_defaults(self, profile: str, model: str) -> ModelDefaults:
        try:
            return self.defaults[profile][model]
        except KeyError:
            raise ValueError(f"external benchmark {self.name!r}: no sizes for {model} on {profile} nodes; add "
                             f"sizes={{{profile!r}: {{{model!r}: (batch, image or sequence size)}}}}") from None

    def engine_frameworks(self, case: CaseSpec) -> tuple[str, ...]:
        return ("horovod", self.framework) if self.spans_nodes else (self.framework,)

    def install_hint(self) -> str:
        return self.bench.install_hint or f"pip install {self.framework}"

    def engine_hint_for(self, framework: str) -> str:
        if framework == "horovod" and self._horovod is not None:
            return self._horovod.install_hint_for(framework)
        return self.install_hint()

    def workload_paths(self) -> list[Path]:
        return [Path(f).resolve() for f in self.bench.files]

    def program(self, plan: RunPlan, rank: int, threads: int) -> list[str]:
        """The program's argv for node ``rank`` of the plan, placeholders filled."""
        case, m, topo, node = plan.case, plan.measurement, plan.case.topology, plan.nodes[rank]
        script = plan.workload[node.name]
        values = {
            "script": script, "dir": str(Path(script).parent) if script else plan.run_dirs[node.name],
            "python": node.python, "model": case.model, "model_name": self.bench.model_names.get(case.model, case.model),
            "precision": case.precision, "batch_size": case.batch_size, "image_size": case.image_size,
            "warmup_iters": m.warmup_iters, "iters": m.iters, "threads": threads, "nnodes": topo.nodes,
            "node_rank": rank, "nproc_per_node": topo.devices_per_node, "world_size": topo.world_size,
            "master_addr": plan.master_addr, "master_port": plan.master_port, "run_dir": plan.run_dirs[node.name],
        }
        out = []
        for arg in self.bench.program:
            if arg == PRECISION_ARGS:
                out += list(self.bench.precision_args[case.precision])
            else:
                out.append(arg.format(**values))
        return out

    def commands(self, plan: RunPlan) -> list[NodeCommand]:
        g = plan.case.topology.devices_per_node
        cmds = []
        for rank, node in enumerate(plan.nodes):
            threads = self.threads_per_worker(node, g) if node.gpus == 0 else 0
            program = self.program(plan, rank, threads)
            if self.bench.launch == "torchrun":
                cmd = TorchrunLauncher.node_command(plan, rank, program, threads)
            elif self._horovod is not None:  # horovodrun: one command on node 0 for every rank
                cmd = self._horovod.spanning_command(plan, [node.python, *program], threads)
            else:  # per-node: the program itself on every node, told its place by the placeholders
                cmd = NodeCommand(node, [node.python, *program], self.worker_env(plan, node, threads),
                                  cwd=plan.run_dirs[node.name])
            cmds.append(NodeCommand(cmd.node, cmd.argv, {**cmd.env, **self.bench.env}, cwd=cmd.cwd))
            if self.spans_nodes:
                break
        return cmds

    def blame(self, plan: RunPlan, log: str) -> str | None:
        return self._horovod.blame(plan, log) if self._horovod is not None else None

    def parse_output(self, plan: RunPlan, output: str) -> dict:
        """Node 0's output through the benchmark's parser: the run's meta, its figures under
        ``parsed``. Raises ValueError saying which lines the format needs."""
        case = plan.case
        try:
            parsed = FORMATS[self.bench.format](output, self.bench.warmup_iters,
                                                Hints(devices=case.topology.world_size, model=case.model,
                                                      nodes=case.topology.nodes))
        except (TypeError, AttributeError, KeyError) as exc:  # lines of the format's shape, not its content
            raise ValueError(f"unreadable {self.bench.format} lines ({type(exc).__name__}: {exc})") from None
        if not parsed.throughput > 0:
            raise ValueError(f"the output's throughput is {parsed.throughput}: nothing was measured")
        if parsed.batch_size is not None and parsed.batch_size != case.batch_size:
            raise ValueError(f"the program ran batch size {parsed.batch_size} per device; the case is "
                             f"{case.batch_size}: pass {{batch_size}} to its batch-size flag")
        if parsed.devices is not None and parsed.devices != case.topology.world_size:
            raise ValueError(f"the output says {parsed.devices} devices; {case.topology.name} has "
                             f"{case.topology.world_size}")
        return {"parsed": {"format": self.bench.format, "throughput": parsed.throughput, "rates": parsed.rates,
                           "per_step": parsed.per_step, "step_time": parsed.step_time, "notes": parsed.notes,
                           "origin": parsed.origin.value, "source": parsed.source, "warnings": parsed.warnings},
                "gpus": parsed.gpus if parsed.gpus is not None else bool(plan.nodes[0].gpus),
                "world_size": parsed.devices or 0, "model": case.model, "backend": self.name,
                "external": {"program": list(self.bench.program), "launch": self.bench.launch}}


def hookimpls(*benchmarks: ExternalBenchmark):
    """The two hooks a suite's conftest.py exports to offer its benchmarks as backends:
    ``pytest_dlperf_backends, pytest_dlperf_make_launcher = hookimpls(A, B)``."""
    by_name = {b.name: b for b in benchmarks}

    def pytest_dlperf_backends(config) -> list[str]:
        return list(by_name)

    def pytest_dlperf_make_launcher(config, backend: str) -> Launcher | None:
        bench = by_name.get(backend)
        if bench is None:
            return None
        return bench.launcher(config.getoption("dlperf_horovod_controller", "gloo"))

    return pytest_dlperf_backends, pytest_dlperf_make_launcher
