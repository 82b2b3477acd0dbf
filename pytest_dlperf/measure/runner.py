"""Runs one repeat of a case on a cluster: plan, start a launcher per node, watch, clean up.

Whatever happens (success, a rank crashing, the timeout, Ctrl-C) every process of the run is
stopped before ``run_case`` returns: first each launcher's process tree, then a sweep of every
node for processes that still carry the run's tag.
"""
from __future__ import annotations

import json
import posixpath
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from ..clusters.base import Cluster, ClusterError, Node, NodeCommand, NodeProcess, fresh_log, stop_everything
from ..launchers.base import CompileCache, Launcher, RunPlan, carries_checkpoints, checkpoint_dir
from ..node.workloads import steplog
from ..results.records import RunRecord, StepRecord
from ..specs import CaseSpec, Measurement
from ..watchers import gpuwatch, pace

TAIL_LINES = 40


class SideLike(Protocol):
    """What a launch uses of an A/B session's side (``ab.sides.Side``): the nodes it runs on, its
    workload files and its commands (its interpreter, variables)."""

    @property
    def label(self) -> str: ...  # "reference", "candidate": whose launches these are

    def nodes(self, nodes: list[Node]) -> list[Node]: ...

    def workload_paths(self, launcher: Launcher) -> list[Path]: ...

    def commands(self, cmds: list[NodeCommand]) -> list[NodeCommand]: ...


class RunFailed(Exception):
    """A run did not finish: names the node(s), the exit code or timeout and the last output."""


def plan_run(cluster: Cluster, launcher: Launcher, case: CaseSpec, measurement: Measurement,
             run_id: str | None = None, side: SideLike | None = None,
             cache: CompileCache | None = None) -> tuple[RunPlan, list[NodeCommand]]:
    """Prepare per-run directories and the workload on each node; build the commands. ``side`` (an
    A/B session's): its interpreter on the nodes, its files' revision and its workers' variables;
    ``cache``: a compiled case's inductor cache (default: an empty one of the launch's own)."""
    all_nodes = side.nodes(cluster.nodes()) if side is not None else cluster.nodes()
    need = case.topology.nodes
    if need > len(all_nodes):
        raise ClusterError(f"{case.id} needs {need} nodes; the cluster has {len(all_nodes)}: "
                           + ", ".join(n.name for n in all_nodes))
    nodes = all_nodes[:need]
    run_id = run_id or f"{case.id}-{uuid.uuid4().hex[:8]}"
    run_dirs, workload, carried = {}, {}, True
    for node in nodes:
        run_dirs[node.name] = cluster.make_run_dir(node, run_id)
        # A launcher that starts every node from node 0 runs one command line everywhere: the
        # workload sits at one path on every node, the run's directory above the node's own.
        where = posixpath.dirname(run_dirs[node.name]) if launcher.spans_nodes else run_dirs[node.name]
        files = side.workload_paths(launcher) if side is not None else launcher.workload_paths()
        paths = [cluster.upload(node, f, where) for f in files]
        carried = carried and carries_checkpoints(files)
        workload[node.name] = paths[0] if paths else ""  # the entry script; the others (steplog.py) beside it
    if launcher.spans_nodes and len(set(workload.values())) > 1:
        shown = ", ".join(f"{name}: {path}" for name, path in workload.items())
        raise ClusterError(f"{launcher.name} starts every node from node 0 with one command line, but the "
                           f"workload landed at different paths ({shown}): give every node the same "
                           "absolute --dlperf-ssh-workdir")
    # A port chosen on each node (not here: a port free on the harness may be taken on a node).
    want = launcher.ports_needed(case.topology)
    ports = {n.name: cluster.free_ports(n, max(want, 1 if i == 0 else 0)) for i, n in enumerate(nodes)}
    hostfile, span = None, None
    if launcher.spans_nodes:
        hostfile = _write_hostfile(cluster, nodes, case.topology.devices_per_node, run_dirs[nodes[0].name])
        span = cluster.span_access(nodes, run_dirs[nodes[0].name])
    held = cluster.socket_interfaces()
    tag = f"dlperf-{uuid.uuid4().hex}"
    plan = RunPlan(case=case, measurement=measurement, nodes=nodes, run_dirs=run_dirs,
                   workload=workload, master_addr=nodes[0].address,
                   master_port=ports[nodes[0].name][0], tag=tag,
                   addresses={n.name: n.address for n in nodes}, ports=ports, hostfile=hostfile, span=span,
                   interfaces={n.name: held[n.name] for n in nodes if n.name in held},
                   compile_cache=cache or CompileCache(), rank_start=cluster.rank_start,
                   checkpoint=checkpoint_dir(measurement, [run_dirs[n.name] for n in nodes], tag,
                                             cluster.shares_filesystem) if carried else "")
    cmds = launcher.commands(plan)
    if side is not None:
        cmds = side.commands(cmds)
    if launcher.spans_nodes and [c.node.name for c in cmds] != [nodes[0].name]:
        raise ClusterError(f"launcher {launcher.name!r} spans nodes: it must return one command, for node 0")
    if probes_pace(launcher, measurement, cmds):
        cmds = pace.wrap(cluster, run_dirs, cmds)
    elif watches_gpus(launcher, case, cmds) == "":
        cmds = gpuwatch.wrap(cluster, run_dirs, cmds, case.topology.devices_per_node)
    return plan, cmds


def probes_pace(launcher: Launcher, measurement: Measurement, cmds: list[NodeCommand]) -> bool:
    """The pace probe runs beside every node's launch when asked, on CPU nodes, for a workload of
    ours (its step log has the window on node 0's clock)."""
    return measurement.pace_probe and launcher.output_format is None and pace.wanted(cmds)


def watches_gpus(launcher: Launcher, case: CaseSpec, cmds: list[NodeCommand]) -> str | None:
    """Whether the GPU watcher runs beside every node's launch (``gpuwatch.py``): "" where it does; where
    the nodes have GPUs but the watcher cannot give the case's figures, why not; None on CPU nodes."""
    if not cmds or any(c.node.gpus == 0 for c in cmds):
        return None
    if launcher.output_format is not None:
        return "a program's own output has no window on the nodes' clocks to read NVML over"
    if launcher.spans_nodes and case.topology.nodes > 1:
        return f"{launcher.name} starts every node from node 0, so only node 0's GPUs could be watched"
    return ""


def _write_hostfile(cluster: Cluster, nodes: list[Node], slots: int, run_dir: str) -> str:
    """``address slots=N`` per node (MPI/Horovod form), uploaded to node 0's run directory."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="dlperf-hostfile-") as tmp:
        local = Path(tmp) / "hostfile"
        local.write_text("".join(f"{n.address} slots={slots}\n" for n in nodes))
        return cluster.upload(nodes[0], local, run_dir)


def parse_steps(path: Path, source: str | None = None) -> tuple[dict, list[StepRecord]]:
    """Read a workload's step log through the contract: (meta, steps). A truncated, garbled or
    out-of-sync log raises steplog.StepLogError naming ``source`` (node:file) and the line."""
    source = source or str(path)
    log = steplog.parse(path.read_text(encoding="utf-8", errors="replace"), source)
    steplog.check_in_sync(log, source)
    steps = [StepRecord(s["step"], s["warmup"], s["start"], s["end"], s["rank_times"], s["samples"])
             for s in log.steps]
    return log.meta, steps


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _diagnosis(cluster: Cluster, case: CaseSpec) -> list[str]:
    """``cluster.diagnose`` for the nodes the case would run on; nothing when even those are unknown."""
    try:
        nodes = cluster.nodes()[:case.topology.nodes]
    except ClusterError:
        return []
    return cluster.diagnose(nodes)


def _describe_failure(procs: list[NodeProcess], codes: dict[str, int | None], why: str,
                      first: list[NodeProcess] = ()) -> str:
    parts = [why]
    for p in list(first) + [p for p in procs if p not in first]:
        code = codes.get(p.node.name)
        state = "still running" if code is None else f"exit code {code}"
        parts.append(f"--- {p.node.name} ({state}), last lines of {p.log_path}:\n{p.tail(TAIL_LINES)}")
    return "\n".join(parts)


def said_failure(case: CaseSpec, procs: list[NodeProcess], codes: dict[str, int | None],
                 failed: list[NodeProcess]) -> str | None:
    """Where a failed node's workload said what failed in one line (``steplog.fail``: a compiler's error,
    with the host and dynamo's first error line): each such node and its line, the other nodes' states
    and where their whole output is; None where no failed node said a line."""
    said = {p.node.name: line for p in failed if (line := steplog.failed_line(_read(p.log_path)))}
    if not said:
        return None
    lines = [f"{case.id}: node {name} (exit {codes[name]}) failed: {line}" for name, line in said.items()]
    for p in procs:
        if p.node.name not in said:
            code = codes.get(p.node.name)
            lines.append(f"node {p.node.name}: {'still running' if code is None else f'exit code {code}'}")
    return "\n".join(lines + ["each node's whole output: " + ", ".join(str(p.log_path) for p in procs)])


def last_progress(path: Path) -> dict | None:
    """The last ``DLPERF-PROGRESS {...}`` line rank 0 printed into node 0's log (steplog.Progress),
    also behind a launcher's prefix (horovodrun's ``[0]<stdout>:``)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            fh.seek(max(0, fh.tell() - 8192))
            tail = fh.read().decode(errors="replace")
    except OSError:
        return None
    i = tail.rfind(steplog.PROGRESS_MARK)
    if i < 0:
        return None
    line = tail[i + len(steplog.PROGRESS_MARK):].split("\n", 1)[0]
    try:
        info = json.loads(line)
    except ValueError:
        return None
    return info if isinstance(info, dict) else None


def run_case(cluster: Cluster, launcher: Launcher, case: CaseSpec, measurement: Measurement,
             log_dir: Path, repeat: int = 0, poll: float = 0.1,
             on_progress: Callable[[dict], None] | None = None, side: SideLike | None = None,
             cache: CompileCache | None = None) -> RunRecord:
    """Run one repeat of the case to completion; raise RunFailed with the nodes' last output.
    ``on_progress`` gets rank 0's latest progress line (a dict) about twice a second. The launch holds its
    nodes (``Cluster.hold``: a local core lease's cores) from its plan to its clean-up."""
    with cluster.hold(cluster.nodes()[:case.topology.nodes]):
        return _run_case(cluster, launcher, case, measurement, log_dir, repeat, poll, on_progress, side, cache)


def _run_case(cluster: Cluster, launcher: Launcher, case: CaseSpec, measurement: Measurement, log_dir: Path,
              repeat: int, poll: float, on_progress: Callable[[dict], None] | None, side: SideLike | None,
              cache: CompileCache | None) -> RunRecord:
    log_dir.mkdir(parents=True, exist_ok=True)
    try:
        plan, cmds = plan_run(cluster, launcher, case, measurement, side=side, cache=cache)
    except ClusterError as exc:  # a node lost while the run was set up: say what the cluster knows
        found = _diagnosis(cluster, case)
        if not found:
            raise
        raise ClusterError(str(exc) + "".join(f"; {d}" for d in found)) from None
    rendered = [cluster.render(c) for c in cmds]
    (log_dir / "commands.sh").write_text("\n".join(rendered) + "\n")
    procs: list[NodeProcess] = []
    t0, started_at = time.monotonic(), time.time()
    run_pace, pace_error, node_paces, gpu = None, "", {}, {}
    try:
        for cmd in cmds:
            procs.append(cluster.start(cmd, fresh_log(log_dir, cmd.node)))
        codes = _watch(cluster, launcher, plan, procs, t0 + measurement.timeout, poll, on_progress)
        wall = time.monotonic() - t0
        meta, steps = _read_output(cluster, launcher, plan, procs, codes, log_dir)
        if measurement.profile_steps and launcher.output_format is None:
            _fetch_traces(cluster, plan, meta, log_dir / "trace")
        if launcher.output_format is None and probes_pace(launcher, measurement, cmds):
            run_pace, pace_error, node_paces = _read_pace(cluster, plan, cmds, log_dir, meta)
        watched = watches_gpus(launcher, case, cmds)
        if watched is not None:
            gpu = _read_gpu(cluster, plan, cmds, log_dir, meta) if watched == "" else gpuwatch.not_measured(watched)
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
                     run_dir=str(log_dir), started_at=started_at, pace=run_pace, pace_error=pace_error,
                     node_paces=node_paces, gpu=gpu, node_dirs=dict(plan.run_dirs))


def _watch(cluster: Cluster, launcher: Launcher, plan: RunPlan, procs: list[NodeProcess], deadline: float,
           poll: float, on_progress: Callable[[dict], None] | None) -> dict[str, int | None]:
    """Wait until every node's launcher exits 0 (their exit codes); RunFailed on a failure or the timeout."""
    case, next_look = plan.case, time.monotonic()
    while True:
        codes = {p.node.name: p.poll() for p in procs}
        failed = [p for p in procs if codes[p.node.name] not in (None, 0)]
        if failed:
            # Give the other nodes a moment to report, so the first failure is not hidden.
            time.sleep(min(2.0, max(0.0, deadline - time.monotonic())))
            codes = {p.node.name: p.poll() for p in procs}
            said = said_failure(case, procs, codes, failed)
            if said is not None:  # the workload named what failed in a line: that line, not a traceback wall
                raise RunFailed(said)
            names = ", ".join(f"{p.node.name} (exit {codes[p.node.name]})" for p in failed)
            why = f"{case.id}: node {names} failed" + "".join(f"; {d}" for d in cluster.diagnose(plan.nodes))
            if launcher.spans_nodes:  # one log for every node's ranks: say whose rank failed first
                why += "".join(f"; {b}" for b in [launcher.blame(plan, _read(procs[0].log_path))] if b)
            raise RunFailed(_describe_failure(procs, codes, why, first=failed))
        if all(c == 0 for c in codes.values()):
            return codes
        if on_progress is not None and time.monotonic() >= next_look:
            next_look = time.monotonic() + 0.5
            info = last_progress(procs[0].log_path)
            if info is not None:
                on_progress(info)
        if time.monotonic() > deadline:
            running = ", ".join(n for n, c in codes.items() if c is None)
            raise RunFailed(_describe_failure(
                procs, codes, f"{case.id}: timed out after {plan.measurement.timeout:g}s "
                              f"(--dlperf-timeout); still running on {running}"))
        time.sleep(poll)


def _read_output(cluster: Cluster, launcher: Launcher, plan: RunPlan, procs: list[NodeProcess],
                 codes: dict[str, int | None], log_dir: Path) -> tuple[dict, list[StepRecord]]:
    """(meta, steps) of a finished run: node 0's step log through the contract, or a program's own
    output through its parser (no steps); RunFailed naming what is wrong with it."""
    case, node0 = plan.case, plan.nodes[0]
    if launcher.output_format is not None:
        try:
            return launcher.parse_output(plan, _read(procs[0].log_path)), []
        except ValueError as exc:
            raise RunFailed(_describe_failure(
                procs, codes, f"{case.id}: node {node0.name}'s output ({procs[0].log_path}) is not "
                              f"{launcher.output_format} output: {exc}")) from exc
    out = log_dir / plan.output_name
    remote = plan.output_path(node0)
    try:
        cluster.download(node0, remote, out)
        return parse_steps(out, f"{node0.name}:{remote}")
    except (OSError, ValueError, KeyError) as exc:
        raise RunFailed(_describe_failure(
            procs, codes, f"{case.id}: no usable step log from node {node0.name} "
                          f"({remote}, copied to {out}): {exc}")) from exc


def _fetch_traces(cluster: Cluster, plan: RunPlan, meta: dict, into: Path) -> None:
    """A profiled launch's traces, each rank's from its node (the meta line's ``profile``), into ``into``;
    each rank's entry gains ``local`` (the copy) or ``error`` (why there is none). Nothing raises: a
    profiled launch without its traces is explained without them, and says so."""
    profile = meta.get("profile")
    if not isinstance(profile, dict) or not isinstance(profile.get("ranks"), list):
        meta["profile"] = {"error": "the workload wrote no profile record (an older workload, or no --profile-steps)"}
        return
    per_node = int(meta.get("local_world_size") or plan.case.topology.devices_per_node)
    into.mkdir(parents=True, exist_ok=True)
    for entry in profile["ranks"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("rank"), int) or "file" not in entry:
            continue  # a rank that wrote no trace says why in its entry; one not understood is named when read
        rank = entry["rank"]
        at = rank // max(per_node, 1)
        if not 0 <= at < len(plan.nodes):
            entry["error"] = f"rank {rank} is on no node of the launch ({len(plan.nodes)} nodes of {per_node} ranks)"
            continue
        node = plan.nodes[at]
        local = into / f"rank{rank}.json"
        try:
            cluster.download(node, str(entry["file"]), local)
            entry["local"] = str(local)
        except (OSError, ClusterError) as exc:
            entry["error"] = f"could not copy {node.name}:{entry['file']}: {exc}"


def _fetch_logs(cluster: Cluster, plan: RunPlan, cmds: list[NodeCommand], log_dir: Path, name: str,
                parse: Callable[[str, str], object]) -> tuple[dict, dict[str, str]]:
    """Each node's log ``name`` from its run directory, parsed (``parse(text, source)``), and each one's
    source (``node:path``) for messages."""
    logs, sources = {}, {}
    for cmd in cmds:
        node = cmd.node
        remote = posixpath.join(plan.run_dirs[node.name], name)
        local = log_dir / f"{node.name}.{name}"
        sources[node.name] = f"{node.name}:{remote}"
        cluster.download(node, remote, local)
        logs[node.name] = parse(_read(local), sources[node.name])
    return logs, sources


def _read_pace(cluster: Cluster, plan: RunPlan, cmds: list[NodeCommand], log_dir: Path,
               meta: dict) -> tuple[float | None, str, dict[str, float]]:
    """(pace, "", each node's) from the probed nodes' logs over the step log's window (node 0's
    clock), or (None, why not, {})."""
    try:
        logs, sources = _fetch_logs(cluster, plan, cmds, log_dir, pace.LOG_NAME, pace.parse_log)
        window = meta["window"]
        got, nodes = pace.run_pace(logs, plan.nodes[0].name, float(window["start"]), float(window["end"]), sources)
        return got, "", nodes
    except (OSError, KeyError, TypeError, ValueError) as exc:
        return None, str(exc), {}


def _read_gpu(cluster: Cluster, plan: RunPlan, cmds: list[NodeCommand], log_dir: Path, meta: dict) -> dict:
    """The launch's GPU figures (``gpuwatch.figures``) from the watchers' logs over the step log's window
    (node 0's clock), or both not measured, saying why."""
    try:
        logs, sources = _fetch_logs(cluster, plan, cmds, log_dir, gpuwatch.LOG_NAME, gpuwatch.parse_log)
        window = meta["window"]
        return gpuwatch.figures(logs, plan.nodes[0].name, float(window["start"]), float(window["end"]), sources)
    except (OSError, KeyError, TypeError, ValueError) as exc:
        return gpuwatch.not_measured(str(exc))
