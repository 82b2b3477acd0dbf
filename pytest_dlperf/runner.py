"""Runs one repeat of a case on a cluster: plan, start a launcher per node, watch, clean up.

Whatever happens (success, a rank crashing, the timeout, Ctrl-C) every process of the run is
stopped before ``run_case`` returns: first each launcher's process tree, then a sweep of every
node for processes that still carry the run's tag.
"""
from __future__ import annotations

import json
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .clusters.base import Cluster, ClusterError, Node, NodeCommand, NodeProcess
from .launchers.base import Launcher, RunPlan
from .specs import CaseSpec, Measurement

TAIL_LINES = 40


class RunFailed(Exception):
    """A run did not finish: names the node(s), the exit code or timeout and the last output."""


@dataclass
class StepRecord:
    step: int
    warmup: bool
    start: float
    end: float
    rank_times: list[float]
    samples: int


@dataclass
class RunRecord:
    """What one run produced: the workload's meta line, every step, commands and log files."""

    repeat: int
    meta: dict
    steps: list[StepRecord]
    commands: list[str]
    logs: dict[str, str]
    wall_seconds: float
    run_dir: str = ""
    extra: dict = field(default_factory=dict)


def plan_run(cluster: Cluster, launcher: Launcher, case: CaseSpec, measurement: Measurement,
             run_id: str | None = None) -> tuple[RunPlan, list[NodeCommand]]:
    """Prepare per-run directories and the workload on each node; build the commands."""
    all_nodes = cluster.nodes()
    need = case.topology.nodes
    if need > len(all_nodes):
        raise ClusterError(f"{case.id} needs {need} nodes; the cluster has {len(all_nodes)}: "
                           + ", ".join(n.name for n in all_nodes))
    nodes = all_nodes[:need]
    run_id = run_id or f"{case.id}-{uuid.uuid4().hex[:8]}"
    run_dirs, workload = {}, {}
    for node in nodes:
        run_dirs[node.name] = cluster.make_run_dir(node, run_id)
        workload[node.name] = cluster.upload(node, launcher.workload_path(), run_dirs[node.name])
    plan = RunPlan(case=case, measurement=measurement, nodes=nodes, run_dirs=run_dirs,
                   workload=workload, master_addr=nodes[0].address,
                   master_port=cluster.free_port(nodes[0]), tag=f"dlperf-{uuid.uuid4().hex}")
    return plan, launcher.commands(plan)


def parse_steps(path: Path) -> tuple[dict, list[StepRecord]]:
    """Read the workload's JSON lines: (meta, steps). Raises RunFailed when incomplete."""
    meta: dict = {}
    steps: list[StepRecord] = []
    ended = False
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec["kind"] == "meta":
            meta = rec
        elif rec["kind"] == "step":
            steps.append(StepRecord(rec["step"], rec["warmup"], rec["start"], rec["end"],
                                    rec["rank_times"], rec["samples"]))
        elif rec["kind"] == "end":
            ended = rec["steps"] == len(steps)
    if not meta or not ended:
        raise RunFailed(f"{path}: the workload's step log is incomplete")
    return meta, steps


def _describe_failure(procs: list[NodeProcess], codes: dict[str, int | None], why: str,
                      first: list[NodeProcess] = ()) -> str:
    parts = [why]
    for p in list(first) + [p for p in procs if p not in first]:
        code = codes.get(p.node.name)
        state = "still running" if code is None else f"exit code {code}"
        parts.append(f"--- {p.node.name} ({state}), last lines of {p.log_path}:\n{p.tail(TAIL_LINES)}")
    return "\n".join(parts)


def stop_everything(cluster: Cluster, nodes: list[Node], tag: str, procs: list[NodeProcess]) -> list[str]:
    """Kill every launcher tree, then sweep every node by the run tag, all nodes in parallel.

    Returns the nodes that could not be swept (a dead node, say) instead of raising, so that
    the run's own failure is not replaced by the clean-up's.
    """
    def stop(p: NodeProcess) -> None:
        if p.poll() is None:
            p.kill()

    def sweep(node) -> str | None:
        try:
            cluster.kill_tagged(node, tag)
        except ClusterError as exc:
            return str(exc)
        return None

    with ThreadPoolExecutor(max_workers=max(1, len(nodes))) as pool:
        list(pool.map(stop, procs))
        return [e for e in pool.map(sweep, nodes) if e]


def run_case(cluster: Cluster, launcher: Launcher, case: CaseSpec, measurement: Measurement,
             log_dir: Path, repeat: int = 0, poll: float = 0.1,
             on_start: Callable[[list[str]], None] | None = None) -> RunRecord:
    """Run one repeat of the case to completion; raise RunFailed with the nodes' last output."""
    log_dir.mkdir(parents=True, exist_ok=True)
    plan, cmds = plan_run(cluster, launcher, case, measurement)
    rendered = [cluster.render(c) for c in cmds]
    (log_dir / "commands.sh").write_text("\n".join(rendered) + "\n")
    if on_start:
        on_start(rendered)
    procs: list[NodeProcess] = []
    codes: dict[str, int | None] = {}
    t0 = time.monotonic()
    deadline = t0 + measurement.timeout
    try:
        for cmd in cmds:
            procs.append(cluster.start(cmd, log_dir / f"{cmd.node.name}.log"))
        while True:
            codes = {p.node.name: p.poll() for p in procs}
            failed = [p for p in procs if codes[p.node.name] not in (None, 0)]
            if failed:
                # Give the other nodes a moment to report, so the first failure is not hidden.
                time.sleep(min(2.0, max(0.0, deadline - time.monotonic())))
                codes = {p.node.name: p.poll() for p in procs}
                names = ", ".join(f"{p.node.name} (exit {codes[p.node.name]})" for p in failed)
                raise RunFailed(_describe_failure(procs, codes, f"{case.id}: node {names} failed",
                                                  first=failed))
            if all(c == 0 for c in codes.values()):
                break
            if time.monotonic() > deadline:
                running = ", ".join(n for n, c in codes.items() if c is None)
                raise RunFailed(_describe_failure(
                    procs, codes, f"{case.id}: timed out after {measurement.timeout:g}s "
                                  f"(--dlperf-timeout); still running on {running}"))
            time.sleep(poll)
        wall = time.monotonic() - t0
        out = log_dir / plan.output_name
        try:
            cluster.download(plan.nodes[0], plan.output_path(plan.nodes[0]), out)
            meta, steps = parse_steps(out)
        except (OSError, ValueError, KeyError) as exc:
            raise RunFailed(_describe_failure(
                procs, codes, f"{case.id}: no usable step log from {plan.nodes[0].name}: {exc}")) from exc
    finally:
        sweep_errors = stop_everything(cluster, plan.nodes, plan.tag, procs)
        if sweep_errors:
            pending = sys.exc_info()[1]
            if isinstance(pending, RunFailed):  # keep the node's failure and its output in front
                pending.args = (f"{pending}\n" + "\n".join(sweep_errors),)
            elif pending is None:
                raise ClusterError("\n".join(sweep_errors))
    return RunRecord(repeat=repeat, meta=meta, steps=steps, commands=rendered,
                     logs={p.node.name: str(p.log_path) for p in procs}, wall_seconds=wall,
                     run_dir=str(log_dir))
