"""The local cluster: each node is its own launcher process group on this machine.

The machine's cores are split evenly between the nodes and each node's launcher is pinned to
its share with ``taskset``, so a node's workers keep the same cores whatever the topology (as
on real machines) and two nodes do not compete for one core. GPUs, where present, are split the
same way with ``CUDA_VISIBLE_DEVICES``.
"""
from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from ..node.killtag import kill_tag
from ..node.localsh import NODES_ENV
from ..node.workloads.nodefacts import gpu_names as detect_gpus
from .base import RUN_TAG_ENV, Cluster, ClusterError, Node, NodeCommand, NodeProcess, RankStart, SpanAccess
from .local_leases import MACHINE_LEASE, LocalLease, make_lease
from .shape import ClusterShape

LOCALSH = Path(__file__).resolve().parent.parent / "node" / "localsh.py"


def _split(items: list[int], parts: int) -> list[list[int]]:
    """Split items into equal consecutive shares; all share everything when there are too few."""
    if len(items) < parts:
        return [list(items) for _ in range(parts)]
    size = len(items) // parts
    return [items[i * size:(i + 1) * size] for i in range(parts)]


def local_shape(nodes: int, slots: int | None) -> ClusterShape:
    """The shape LocalCluster(nodes, slots) will have, found without building it: this machine's GPUs
    (nvidia-smi; no node is touched), shared out between the nodes as the cluster shares them."""
    gpus = len(detect_gpus())
    share = len(_split(list(range(gpus)), nodes)[0]) if gpus else 0
    return ClusterShape(nodes=nodes, slots=slots or max(1, share), gpus=gpus > 0,
                        source="--nodes (default 2), --dlperf-gpus-per-node and the GPUs nvidia-smi finds here")


class LocalProcess(NodeProcess):
    """A launcher started with Popen in a session of its own."""

    def __init__(self, node: Node, popen: subprocess.Popen, log_path: Path, tag: str) -> None:
        self.node, self.popen, self.log_path, self.tag = node, popen, log_path, tag

    def poll(self) -> int | None:
        return self.popen.poll()

    def kill(self) -> None:
        import psutil

        try:
            root = psutil.Process(self.popen.pid)
            procs = [root] + root.children(recursive=True)
        except psutil.NoSuchProcess:
            procs = []
        for p in procs:
            with contextlib.suppress(psutil.NoSuchProcess):
                p.terminate()
        _, alive = psutil.wait_procs(procs, timeout=5)
        for p in alive:
            with contextlib.suppress(psutil.NoSuchProcess):
                p.kill()
        psutil.wait_procs(alive, timeout=5)
        with contextlib.suppress(Exception):
            self.popen.wait(timeout=5)


__all__ = ["MACHINE_LEASE", "LocalCluster", "LocalProcess", "local_shape"]


class LocalCluster(Cluster):
    """N nodes on this machine, each with its share of cores (and GPUs)."""

    kind = "local"

    def __init__(self, nodes: int, slots: int | None = None, base_dir: Path | None = None,
                 pin: bool = True, lease: str = "machine", lease_path: Path | None = None,
                 rank_start: RankStart = RankStart.DIRECT) -> None:
        """``slots`` per node defaults to the node's share of GPUs, else one worker; ``lease``: who takes turns
        on this machine (``local_leases``: machine, session, core); ``lease_path``: a ``session`` lease's lock;
        ``rank_start``: how torch ranks start (by default directly: torchrun's agent adds only its own cost here)."""
        if nodes < 1 or (slots is not None and slots < 1):
            raise ClusterError("a local cluster needs at least one node with one slot")
        cpus = sorted(os.sched_getaffinity(0))
        gpus = detect_gpus()
        self.base_dir = Path(base_dir or tempfile.mkdtemp(prefix="dlperf-local-"))
        self.rank_start = rank_start
        self.shares_filesystem = True  # every node is a directory on this machine
        self.leases: LocalLease = make_lease(lease, cpus, Path(lease_path or self.base_dir / "lease.lock"))
        # a core lease gives each node one core, chosen per launch (hold); the others split the machine's cores
        cpu_shares = [[cpus[i % len(cpus)]] for i in range(nodes)] if lease == "core" else _split(cpus, nodes)
        gpu_shares = _split(list(range(len(gpus))), nodes) if gpus else [[] for _ in range(nodes)]
        self.pin = pin and shutil.which("taskset") is not None and len(cpus) >= nodes
        self._pinned: dict[str, str] = {}  # node name -> the cores a core lease holds for the launch running now
        self._holding = 0
        self._nodes = [
            Node(
                name=f"local{i}",
                address=f"127.0.0.{i + 1}",  # distinct, for engines that tell nodes apart by address
                slots=slots or max(1, len(gpu_shares[i])),
                cpus=len(cpu_shares[i]),
                gpus=len(gpu_shares[i]),
                python=sys.executable,
                extra={
                    "cpuset": ",".join(map(str, cpu_shares[i])),
                    "gpus": ",".join(map(str, gpu_shares[i])),
                    "gpu_name": gpus[0] if gpus else "",
                },
            )
            for i in range(nodes)
        ]
        self._procs: list[LocalProcess] = []

    def nodes(self) -> list[Node]:
        return list(self._nodes)

    def make_run_dir(self, node: Node, run_id: str) -> str:
        path = self.base_dir / run_id / node.name
        path.mkdir(parents=True, exist_ok=False)
        return str(path)

    def upload(self, node: Node, local: Path, remote_dir: str) -> str:
        dest = Path(remote_dir) / local.name
        shutil.copy2(local, dest)
        return str(dest)

    def download(self, node: Node, remote: str, local: Path) -> None:
        if Path(remote).resolve() != local.resolve():
            shutil.copy2(remote, local)

    def cpuset(self, node: Node) -> str:
        """The cores the node's processes are pinned to: those a core lease holds for the launch, else its share."""
        return self._pinned.get(node.name, node.extra["cpuset"])

    def wrap(self, node: Node, argv: list[str]) -> list[str]:
        if self.pin:
            return ["taskset", "-c", self.cpuset(node), *argv]
        return list(argv)

    def node_env(self, node: Node) -> dict[str, str]:
        """Environment a node's launcher gets on top of this process's."""
        return {"CUDA_VISIBLE_DEVICES": node.extra["gpus"]} if node.extra.get("gpus") else {}

    def start(self, cmd: NodeCommand, log_path: Path) -> NodeProcess:
        env = dict(os.environ)
        env.update(self.node_env(cmd.node))
        env.update(cmd.env)
        if RUN_TAG_ENV not in env:
            raise ClusterError(f"{cmd.node.name}: command started without {RUN_TAG_ENV}")
        log = open(log_path, "ab")
        try:
            popen = subprocess.Popen(self.wrap(cmd.node, cmd.argv), env=env, cwd=cmd.cwd, stdout=log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        except OSError as exc:
            raise ClusterError(f"{cmd.node.name}: could not start {cmd.argv[0]!r}: {exc}") from exc
        finally:
            log.close()
        proc = LocalProcess(cmd.node, popen, log_path, env[RUN_TAG_ENV])
        self._procs.append(proc)
        return proc

    def kill_tagged(self, node: Node, tag: str) -> int:
        found, left = kill_tag(tag)
        if left:
            raise ClusterError(f"{node.name}: {left} process(es) tagged {tag} survived SIGKILL")
        return found

    def span_access(self, nodes: Sequence[Node], run_dir: str) -> SpanAccess:
        """The nodes are shares of this machine that launchers take for remote hosts: an ``ssh``
        first on node 0's PATH (node/localsh.py) runs their commands here, pinned as the node is."""
        script = self.upload(nodes[0], LOCALSH, run_dir)
        bindir = Path(run_dir) / "localsh-bin"
        bindir.mkdir(exist_ok=True)
        agent = bindir / "ssh"
        agent.write_text(f"#!/bin/sh\nexec {shlex.quote(nodes[0].python)} {shlex.quote(script)} \"$@\"\n")
        agent.chmod(0o755)
        where = {n.address: (self.cpuset(n) if self.pin else "") for n in nodes}
        return SpanAccess(env={"PATH": f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
                               NODES_ENV: json.dumps(where, separators=(",", ":"))}, check_reach=False, nics=("lo",))

    def render(self, cmd: NodeCommand) -> str:
        wrapped = NodeCommand(cmd.node, self.wrap(cmd.node, cmd.argv),
                              {**self.node_env(cmd.node), **cmd.env}, cmd.cwd)
        return wrapped.shell()

    @contextlib.contextmanager
    def lease(self, what: str = "") -> Iterator[None]:
        """Sessions take turns as the lease says (by default every session on this machine, one at a time)."""
        with self.leases.lease(self.turns, what):
            yield

    @contextlib.contextmanager
    def hold(self, nodes: Sequence[Node]) -> Iterator[None]:
        """A core lease's cores for one launch on ``nodes``, node i pinned to the i-th (held once: a launch's
        own node scripts run inside it)."""
        if self._holding:
            self._holding += 1
            try:
                yield
            finally:
                self._holding -= 1
            return
        with self.leases.hold(len(nodes), self.turns) as cores:
            self._pinned = {n.name: str(cores[i % len(cores)]) for i, n in enumerate(nodes)} if cores else {}
            self._holding = 1
            try:
                yield
            finally:
                self._holding, self._pinned = 0, {}

