"""The tiny engine as a plugin registers it (``-p tests.tiny.plugin``): ``--backend tiny``.

It trains the ddp backend's model names and sizes, so case ids are the ones users see, with a
standard-library workload (workload.py) that starts in milliseconds instead of importing torch
twice: for tests of the harness's mechanisms (verdicts, exit codes, reports, orders, budgets,
faults). Every real engine still trains for real in its own tests (docs/testing.md lists them).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_dlperf import Launcher
from pytest_dlperf.clusters.base import NodeCommand
from pytest_dlperf.launchers.base import BESIDE_EVERY_WORKLOAD, WORKLOADS, RunPlan
from pytest_dlperf.launchers.torchrun import TorchrunLauncher, compile_cache_env, drops_its_cache
from pytest_dlperf.specs import COMPILE_MODES

WORKLOAD = Path(__file__).resolve().parent / "workload.py"


class TinyLauncher(Launcher):
    """One node process per node, which starts a rank process per device."""

    name = "tiny"
    framework = ""  # nothing to probe on the nodes: the workload is the standard library
    # the ddp backend's models the workload has a step cost for (its COST): no decoder, whose flags it does not take
    models = tuple(m for m in TorchrunLauncher.models if m != "llama")
    defaults = TorchrunLauncher.defaults
    # compiled as ddp's are (--dlperf-compile compiled): the inductor cache's directory and its removal as torchrun's,
    # a cold first step, and the graph breaks a Python environment plants (TINY_GRAPH_BREAKS, workload.py)
    compile_modes = COMPILE_MODES
    unprofiled = None  # a profiled launch writes Kineto's Chrome trace per rank, as torch's (workload.py's Profiler)

    def engine_frameworks(self, case) -> tuple[str, ...]:  # noqa: ANN001 - CaseSpec
        return ()

    def workload_paths(self) -> list[Path]:
        return [WORKLOAD, *(WORKLOADS / f for f in BESIDE_EVERY_WORKLOAD)]

    def commands(self, plan: RunPlan) -> list[NodeCommand]:
        case, m = plan.case, plan.measurement
        broken = os.environ.get("TINY_COMMANDS_RAISE")  # a plugin engine's bug, for the cases whose id ends so
        if broken and case.id.endswith(broken):
            raise RuntimeError(f"tiny: asked to break {case.id}")
        cmds = []
        for rank, node in enumerate(plan.nodes):
            argv = [node.python, "-u", plan.workload[node.name], "--nnodes", str(case.topology.nodes),
                    "--node-rank", str(rank), "--nproc-per-node", str(case.topology.devices_per_node),
                    "--master-addr", plan.master_addr, "--master-port", str(plan.master_port),
                    *self.workload_flags(case, m, 1, plan.output_path(node), plan.checkpoint), *self.variant_flags(case),
                    *self.profile_flags(plan, node)]
            env = compile_cache_env(plan, node) if case.compiled else {}
            if env and drops_its_cache(plan, node, env):
                argv.append("--drop-compile-cache")
            cmds.append(NodeCommand(node, argv, {**Launcher.worker_env(plan, node), **env}, cwd=plan.run_dirs[node.name]))
        return cmds


@pytest.hookimpl
def pytest_dlperf_make_launcher(config, backend):  # noqa: ANN001
    return TinyLauncher() if backend == "tiny" else None


@pytest.hookimpl
def pytest_dlperf_backends(config):  # noqa: ANN001
    return ["tiny"]
