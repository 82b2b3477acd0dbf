"""The cluster interface: a set of nodes that can run commands, hold files and be cleaned up.

A cluster knows where processes run (this machine, over SSH, in the cloud); a launcher knows
what runs (torchrun, horovodrun). The runner joins them. Every process a run starts carries
the environment variable ``DLPERF_RUN_TAG``; ``kill_tagged`` sweeps a node by that tag, so a
worker that left its launcher's process tree is still found and killed.
"""
from __future__ import annotations

import contextlib
import re
import shlex
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path

from .turns import Turns

RUN_TAG_ENV = "DLPERF_RUN_TAG"


class RankStart(Enum):
    """How a torch workload's ranks start on a node: under the engine's own launcher (torchrun's agent), as on
    a user's cluster; or directly (``node/workloads/rankstart.py``, the local cluster's default,
    ``--dlperf-local-start``), without the agent's second import of torch and its slow exit."""

    AGENT = "torchrun"
    DIRECT = "direct"


class ClusterError(RuntimeError):
    """A node could not be reached or did something unexpected; the message names the node."""


@dataclass(frozen=True)
class Node:
    """One machine (or a share of this machine) that runs one launcher per case."""

    name: str  # how reports and errors name it
    address: str  # how the other nodes reach it (the master address when it is node 0)
    slots: int  # devices (GPUs) on the node; on a CPU node, worker processes
    cpus: int  # cores the node's workers may use
    gpus: int = 0  # GPUs seen on the node
    python: str = "python3"  # the interpreter that runs launchers and workloads there
    extra: Mapping[str, str] = field(default_factory=dict)  # backend specific facts (cpuset, port)


@dataclass
class NodeCommand:
    """A command for one node: an argument list, its environment additions and working dir."""

    node: Node
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None

    def shell(self) -> str:
        """The command as one POSIX shell line, every part quoted with shlex."""
        parts: list[str] = []
        if self.cwd:
            parts += ["cd", shlex.quote(self.cwd), "&&"]
        if self.env:
            parts += ["env"] + [shlex.quote(f"{k}={v}") for k, v in sorted(self.env.items())]
        parts += [shlex.quote(a) for a in self.argv]
        return " ".join(parts)


@dataclass
class SpanAccess:
    """How node 0 reaches the other nodes when one launcher there starts them all (horovodrun,
    perseusrun, mpirun: ``ssh [-p PORT] [-i KEY] HOST COMMAND``)."""

    env: dict[str, str] = field(default_factory=dict)  # for node 0's launcher (the local cluster's agent)
    ssh_port: int | None = None  # one port for every node (horovodrun takes one)
    ssh_identity: str | None = None  # a key file on node 0
    check_reach: bool = True  # prove node 0 reaches every node over SSH before the first run (nodechecks.reach)
    nics: tuple[str, ...] = ()  # network interfaces every node shares (empty: the launcher finds them)


@dataclass
class ExecResult:
    """What one command did on one node."""

    node: Node
    returncode: int
    stdout: str
    stderr: str

    def tail(self, n: int = 20) -> str:
        lines = (self.stdout + ("\n" if self.stdout and self.stderr else "") + self.stderr).splitlines()
        return "\n".join(lines[-n:])


def swept(node: Node, tag: str, res: ExecResult) -> int:
    """How many processes ``node/killtag.py`` found on the node ("FOUND LEFT" on its last line);
    ClusterError when the sweep did not run or a tagged process survived SIGKILL."""
    words = res.stdout.split()
    if len(words) < 2 or not all(w.isdigit() for w in words[-2:]):
        raise ClusterError(f"{node.name}: the sweep for run {tag} failed (exit {res.returncode}): {res.tail(10)}")
    found, left = int(words[-2]), int(words[-1])
    if left:
        raise ClusterError(f"{node.name}: {left} process(es) tagged {tag} survived SIGKILL")
    return found


def cannot_sweep(node: Node, tag: str, exc: Exception) -> ClusterError:
    """The error for a node that could not be swept at all: where to look for what may be left."""
    why = str(exc).removeprefix(f"{node.name}: ").rstrip(".")
    return ClusterError(f"{node.name}: cannot sweep it for run {tag} ({why}); processes of the run may be "
                        f"left there: look for {RUN_TAG_ENV}={tag} in /proc/*/environ")


def ports_printed(node: Node, n: int, res: ExecResult) -> list[int]:
    """The ``n`` port numbers a node's free-port probe printed, or ClusterError with its output."""
    try:
        ports = [int(w) for w in res.stdout.split()[-n:]]
        if len(ports) != n:
            raise ValueError
        return ports
    except ValueError:
        raise ClusterError(f"{node.name}: cannot find a free port (exit {res.returncode}): {res.tail(5)}") from None


FATAL_LINE = re.compile(r"terminate called|what\(\):|Fatal Python error|Segmentation fault"
                        r"|Traceback \(most recent call last\)|Killed|out of memory", re.IGNORECASE)


def fresh_log(log_dir: Path, node: Node) -> Path:
    """Node ``node``'s log in ``log_dir``, emptied for a new launch: the clusters append to it, and a report
    directory used again (the same --dlperf-report twice, a self-hosted runner's workspace) holds an earlier
    session's log at the same path, which would read as one log of two runs."""
    path = log_dir / f"{node.name}.log"
    path.unlink(missing_ok=True)
    return path


def tail_with_first_fatal(lines: list[str], n: int, context: int = 8) -> str:
    """The last ``n`` lines, preceded by the first fatal-looking line and ``context`` after it when
    that line lies before the window."""
    start = max(len(lines) - n, 0)
    first = next((i for i, line in enumerate(lines[:start]) if FATAL_LINE.search(line)), None)
    if first is None:
        return "\n".join(lines[start:])
    head = lines[first:min(first + context, start)]
    skipped = start - first - len(head)
    gap = [f"[... {skipped} lines ...]"] if skipped else []
    return "\n".join(head + gap + lines[start:])


@dataclass
class NodeOutput:
    """What a node script run by ``Cluster.run_everywhere`` did on one node."""

    node: Node
    run_dir: str  # the script's run directory on the node: files it wrote are there
    log_path: Path  # its stdout and stderr, on this machine
    returncode: int | None  # None: still running at the deadline (then stopped)
    text: str = ""  # the output, read once every node had finished or the deadline passed

    @property
    def state(self) -> str:
        """'exit code N' or 'timed out', for a message."""
        return "timed out" if self.returncode is None else f"exit code {self.returncode}"

    def tail(self, n: int = 20) -> str:
        """The output's last lines, after its first fatal line (as ``NodeProcess.tail``)."""
        return tail_with_first_fatal(self.text.splitlines(), n)


@dataclass
class NodeRuns:
    """A node script's outputs by node name, in node order. ``error``: why it did not run at all (a
    node unreachable, an upload failed; ``outputs`` then empty); ``sweep_errors``: nodes the clean-up
    could not sweep."""

    outputs: dict[str, NodeOutput] = field(default_factory=dict)
    error: str = ""
    sweep_errors: list[str] = field(default_factory=list)

    def marked(self, mark: str, what: str) -> tuple[dict[str, dict], list[str]]:
        """Each node's last line behind ``mark`` read as JSON, and a line per node where the ``what`` probe failed
        (no such line, or a non-zero exit; ``error`` first)."""
        import json

        found, broken = {}, [self.error] if self.error else []
        for node, got in self.outputs.items():
            lines = [ln for ln in got.text.splitlines() if ln.startswith(mark)]
            if got.returncode != 0 or not lines:
                broken.append(f"{node}: the {what} probe failed ({got.tail(5)})")
                continue
            found[node] = json.loads(lines[-1][len(mark):])
        return found, broken


# A node's command for a node script: (node, its run directory, the script's path there or "") -> the
# command, or None when nothing is to run on that node.
CommandFor = Callable[[Node, str, str], "NodeCommand | None"]


class NodeProcess(ABC):
    """A launcher running on a node; output goes to a log file on this machine."""

    node: Node
    log_path: Path

    @abstractmethod
    def poll(self) -> int | None:
        """Exit code, or None while it runs."""

    @abstractmethod
    def kill(self) -> None:
        """Stop the launcher and every process it started; safe to call twice."""

    def tail(self, n: int = 30) -> str:
        """Last lines the node's launcher and workers printed, after the first fatal line if that
        came earlier (a C++ ``terminate called ...`` is otherwise buried under torchrun's summary)."""
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return ""
        return tail_with_first_fatal(lines, n)


class Cluster(ABC):
    """A set of nodes. Subclasses implement process control and file transfer for one kind."""

    kind: str = ""
    rank_start: RankStart = RankStart.AGENT  # how a torch workload's ranks start on its nodes
    # whether the nodes see one filesystem (a directory made on one, every node reads): a multi-node case's
    # checkpoint then goes under node 0's run directory, else only where --dlperf-checkpoint-dir names a shared one
    shares_filesystem: bool = False
    turns: Turns = Turns()  # what the session says while it waits for its nodes (ClusterHolder sets it)

    @abstractmethod
    def nodes(self) -> list[Node]:
        """All nodes, node 0 first."""

    def socket_interfaces(self) -> dict[str, dict]:
        """Per node name, the interface holding its address and the socket variables its environment sets
        (``nodechecks.interfaces``, found once before the first multi-node case); filled in place."""
        return self.__dict__.setdefault("_socket_interfaces", {})

    @abstractmethod
    def make_run_dir(self, node: Node, run_id: str) -> str:
        """Create and return a fresh per-run directory on the node."""

    @abstractmethod
    def upload(self, node: Node, local: Path, remote_dir: str) -> str:
        """Place a file in a directory on the node; return its path there."""

    @abstractmethod
    def download(self, node: Node, remote: str, local: Path) -> None:
        """Copy a file from the node to this machine."""

    @abstractmethod
    def start(self, cmd: NodeCommand, log_path: Path) -> NodeProcess:
        """Start a command on its node in the background."""

    @abstractmethod
    def kill_tagged(self, node: Node, tag: str) -> int:
        """Kill every process on the node whose environment carries the run tag; return how many."""

    def wrap(self, node: Node, argv: Sequence[str]) -> list[str]:
        """The argument list as the node runs it (a local node adds CPU pinning, say)."""
        return list(argv)

    def free_ports(self, node: Node, n: int = 1) -> list[int]:
        """``n`` distinct TCP ports free on the node (held together while chosen)."""
        import socket

        if n <= 0:
            return []
        with contextlib.ExitStack() as stack:
            socks = [stack.enter_context(contextlib.closing(socket.socket())) for _ in range(n)]
            for s in socks:
                s.bind(("", 0))
            return [int(s.getsockname()[1]) for s in socks]

    def span_access(self, nodes: Sequence[Node], run_dir: str) -> SpanAccess:
        """How node 0 starts processes on the other nodes; ``run_dir`` is node 0's run directory."""
        raise ClusterError(f"the {self.kind} cluster cannot run a launcher that starts every node from node 0")

    def diagnose(self, nodes: Sequence[Node]) -> list[str]:
        """What the cluster itself knows about a failed run's nodes (a node its scheduler took down,
        say), as lines for the failure message; nothing by default."""
        return []

    def render(self, cmd: NodeCommand) -> str:
        """How the command is run, as a line a user can paste (dry-run)."""
        return cmd.shell()

    @contextlib.contextmanager
    def lease(self, what: str = "") -> Iterator[None]:
        """Hold the nodes for ``what`` (a case's launches, a round's, a probe) so that parallel pytest workers
        and other sessions do not share them; one that waits for them says who holds them (``turns``)."""
        yield

    @contextlib.contextmanager
    def hold(self, nodes: Sequence[Node]) -> Iterator[None]:
        """Held around one launch, or one node script, on ``nodes`` (a local cluster's core lease picks their
        cores here); nothing by default."""
        yield

    def describe(self) -> dict:
        """Facts for results.json: kind and nodes."""
        return {
            "kind": self.kind,
            "nodes": [
                {"name": n.name, "address": n.address, "slots": n.slots, "cpus": n.cpus, "gpus": n.gpus}
                for n in self.nodes()
            ],
        }

    def close(self) -> None:
        """Release connections and anything still running."""
        self.kill_started()

    def run_everywhere(self, nodes: Sequence[Node], command: CommandFor, log_dir: Path, timeout: float, *,
                       name: str, tag: str, script: Path | None = None, expect: str = "",
                       linger: float = 0.0) -> NodeRuns:
        """Run a node script on every node at once, wait for all (``timeout`` s at most), read each
        node's output, then stop what still runs and sweep the nodes by the run's tag. Never raises
        for a node: its ``NodeOutput`` (exit code, output), ``NodeRuns.error`` or ``sweep_errors`` say.

        ``script`` goes into each node's run directory (``<name>-<id>``) first; ``command`` then
        gives the node's command, to which the run tag (``<tag>-<id>``) is added. The commands are
        written to ``log_dir/commands.sh``, each node's output to ``log_dir/<node>.log``. A remote
        node's output may land a moment after its exit code: ``expect`` is text an exited node's
        output will hold (waited for up to a second), ``linger`` seconds are waited in any case."""
        with self.hold(nodes):
            return self._run_everywhere(nodes, command, log_dir, timeout, name, tag, script, expect, linger)

    def _run_everywhere(self, nodes: Sequence[Node], command: CommandFor, log_dir: Path, timeout: float, name: str,
                        tag: str, script: Path | None, expect: str, linger: float) -> NodeRuns:
        log_dir.mkdir(parents=True, exist_ok=True)
        run_tag, run_id = f"{tag}-{uuid.uuid4().hex}", f"{name}-{uuid.uuid4().hex[:8]}"
        out, started = NodeRuns(), []
        try:
            planned = self._plan_everywhere(nodes, command, run_id, run_tag, script)
            if planned:
                (log_dir / "commands.sh").write_text("".join(self.render(cmd) + "\n" for cmd, _ in planned))
            for cmd, run_dir in planned:
                started.append((run_dir, self.start(cmd, fresh_log(log_dir, cmd.node))))
            deadline = time.monotonic() + timeout
            while any(p.poll() is None for _, p in started) and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(linger)
            out.outputs = {p.node.name: NodeOutput(p.node, run_dir, p.log_path, p.poll(), _settled(p, expect))
                           for run_dir, p in started}
        except (ClusterError, OSError) as exc:
            out.error = str(exc)
        finally:
            out.sweep_errors = stop_everything(self, nodes, run_tag, [p for _, p in started])
        return out

    def _plan_everywhere(self, nodes: Sequence[Node], command: CommandFor, run_id: str, run_tag: str,
                         script: Path | None) -> list[tuple[NodeCommand, str]]:
        """Each node's run directory, the script uploaded there, and its tagged command."""
        planned = []
        for node in nodes:
            run_dir = self.make_run_dir(node, run_id)
            cmd = command(node, run_dir, self.upload(node, script, run_dir) if script else "")
            if cmd is not None:
                planned.append((NodeCommand(cmd.node, cmd.argv, {RUN_TAG_ENV: run_tag, **cmd.env}, cmd.cwd), run_dir))
        return planned

    def kill_started(self) -> None:
        """Kill every launcher this cluster started that still runs (``self._procs``)."""
        procs: list[NodeProcess] = getattr(self, "_procs", [])
        for p in procs:
            if p.poll() is None:
                p.kill()
        procs.clear()


def behind(cluster: Cluster, run_dirs: Mapping[str, str], cmds: Sequence[NodeCommand], script: Path,
           flags: Callable[[str], list[str]]) -> list[NodeCommand]:
    """Each node's command behind a wrapper of ``node/`` (the pace probe, the GPU watcher), uploaded to
    the node's run directory: ``python <script> <flags(run_dir)> -- <command ...>``."""
    out = []
    for cmd in cmds:
        run_dir = run_dirs[cmd.node.name]
        wrapper = cluster.upload(cmd.node, script, run_dir)
        out.append(replace(cmd, argv=[cmd.node.python, wrapper, *flags(run_dir), "--", *cmd.argv]))
    return out


def stop_everything(cluster: Cluster, nodes: Sequence[Node], tag: str, procs: Sequence[NodeProcess]) -> list[str]:
    """Kill every launcher tree, then sweep every node by the run tag, all nodes in parallel.

    Returns the nodes that could not be swept (a dead node, say) instead of raising, so that
    the run's own failure is not replaced by the clean-up's.
    """
    def stop(p: NodeProcess) -> None:
        if p.poll() is None:
            p.kill()

    def sweep(node: Node) -> str | None:
        try:
            cluster.kill_tagged(node, tag)
        except ClusterError as exc:
            return str(exc)
        return None

    with ThreadPoolExecutor(max_workers=max(1, len(nodes))) as pool:
        list(pool.map(stop, procs))
        return [e for e in pool.map(sweep, nodes) if e]


def _settled(proc: NodeProcess, expect: str) -> str:
    """The process's output; when it has exited without ``expect`` yet, read again for up to a second."""
    text = ""
    for _ in range(20):
        try:
            text = proc.log_path.read_text(errors="replace")
        except FileNotFoundError:
            text = ""
        if not expect or expect in text or proc.poll() is None:
            break
        time.sleep(0.05)
    return text
