"""The SSH cluster: the user's machines, reached with paramiko, one connection per node per session.

Nothing connects until the nodes are first needed; then every node is connected and checked in
parallel once (preflight: reachable, Python and framework versions, CPUs and GPUs, the same
versions everywhere) and the connections are reused for the whole session. Commands, uploads
and downloads fan out over the nodes in parallel; each node's exit code, stdout and stderr are
kept apart and a failure names the node with its last output lines. Launchers run under a
watchdog on their node, so no remote process outlives its run (remote.py).
"""
from __future__ import annotations

import contextlib
import hashlib
import re
import shlex
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from filelock import FileLock

from ..base import RUN_TAG_ENV, Cluster, ClusterError, ExecResult, Node, NodeCommand, NodeProcess, SpanAccess, \
    cannot_sweep, ports_printed, swept
from ..hosts import HostSpec
from .connect import DEFAULT_KNOWN_HOSTS, SSHSettings, load_config, resolve
from .host import CHANNEL_ERRORS, Host
from .options import DEFAULT_SSH_CONFIG
from .agreement import PROBE_SRC, make_node, parse_probe, problems
from .remote import LOST, SSHProcess, watch_line

KILLTAG_SRC = (Path(__file__).resolve().parents[2] / "node" / "killtag.py").read_text()
FREE_PORT_SRC = ("import socket, sys; ss = [socket.socket() for _ in range(int(sys.argv[1]))]; "
                 "[s.bind(('', 0)) for s in ss]; print(*[s.getsockname()[1] for s in ss])")
TAIL_LINES = 20
T = TypeVar("T")


class SSHCluster(Cluster):
    """Hosts given with --dlperf-hosts/--dlperf-hostfile, each a node with its own GPUs (or CPU workers)."""

    kind = "ssh"

    def __init__(self, hosts: Sequence[HostSpec], settings: SSHSettings | None = None,
                 slots: int | None = None, frameworks: Sequence[str] = ("torch",),
                 lock_dir: str | Path | None = None, grace: float = 5.0, require_frameworks: bool = True) -> None:
        """Resolve the hosts against the ssh config; connect nothing yet."""
        if not hosts:
            raise ClusterError("an SSH cluster needs at least one host (--dlperf-hosts or --dlperf-hostfile)")
        self.settings = settings or SSHSettings()
        self.slots = slots
        self.frameworks = tuple(frameworks)
        self.require_frameworks = require_frameworks  # False: a missing one is the session's to skip
        self.grace = grace
        self.lock_dir = Path(lock_dir or Path(tempfile.gettempdir()) / "pytest-dlperf-ssh-leases")
        self._config = load_config(self.settings.config)
        self._hosts = [Host(i, h, resolve(h, self.settings, self._config), self.settings, self._config)
                       for i, h in enumerate(hosts)]
        self._by_name = {h.spec.name: h for h in self._hosts}
        self._nodes: list[Node] | None = None
        self._check_lock = threading.Lock()
        self._procs: list[SSHProcess] = []
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    # ------------------------------------------------------------------ fan-out
    def _fan(self, fn: Callable[[Host], T], hosts: Sequence[Host]) -> dict[str, T | BaseException]:
        """Run fn on every host at once; each host's result or exception, by node name."""
        if len(hosts) == 1:
            try:
                return {hosts[0].spec.name: fn(hosts[0])}
            except Exception as exc:  # noqa: BLE001 - reported per node by the caller
                return {hosts[0].spec.name: exc}
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=min(64, len(self._hosts)),
                                                thread_name_prefix="dlperf-ssh")
            futures = {h.spec.name: self._pool.submit(fn, h) for h in hosts}
        out: dict[str, T | BaseException] = {}
        for name, fut in futures.items():
            try:
                out[name] = fut.result()
            except Exception as exc:  # noqa: BLE001
                out[name] = exc
        return out

    @staticmethod
    def _raise_failures(what: str, results: dict[str, object]) -> None:
        """One error naming every node that failed, with its reason and last lines."""
        bad, names = [], []
        for name, res in results.items():
            if isinstance(res, BaseException):
                text = str(res).removeprefix(f"{name}: ")
                bad.append(f"--- {name}: {text}")
            elif isinstance(res, ExecResult) and res.returncode != 0:
                bad.append(f"--- {name}: exit code {res.returncode}; last lines:\n{res.tail(TAIL_LINES)}")
            else:
                continue
            names.append(name)
        if bad:
            raise ClusterError(f"{what} failed on {', '.join(names)}:\n" + "\n".join(bad))

    def _host(self, node: Node | str) -> Host:
        name = node if isinstance(node, str) else node.name
        try:
            return self._by_name[name]
        except KeyError:
            raise ClusterError(f"{name}: not a node of this SSH cluster") from None

    def _node_of(self, host: Host) -> Node:
        """The node after preflight; before it, a stand-in with what the host list says."""
        if self._nodes is not None:
            return self._nodes[host.index]
        return Node(host.spec.name, host.target.hostname, host.spec.slots or 1, 1, python=self.settings.python)

    # ------------------------------------------------------------------ commands
    def _exec_host(self, host: Host, argv: Sequence[str], env: dict[str, str] | None = None,
                   cwd: str | None = None, timeout: float = 60.0, stdin: bytes | None = None,
                   guard: bool = True) -> ExecResult:
        return host.exec(self._node_of(host), argv, env, cwd, timeout, stdin, guard)

    def exec(self, node: Node | str, argv: Sequence[str], env: dict[str, str] | None = None,
             cwd: str | None = None, timeout: float = 60.0, stdin: bytes | None = None,
             guard: bool = True) -> ExecResult:
        """Run a command on one node and wait; ClusterError only when it cannot run or times out.

        With guard, the command runs in a process group of its own that is stopped when the
        channel goes away; a command that reads stdin runs unguarded.
        """
        return self._exec_host(self._host(node), argv, env, cwd, timeout, stdin, guard)

    def run_all(self, argv: Sequence[str] | Callable[[Node], Sequence[str]], nodes: Sequence[Node] | None = None,
                env: dict[str, str] | None = None, cwd: str | None = None, timeout: float = 60.0,
                check: bool = True) -> list[ExecResult]:
        """Run a command (or one per node) on every node at once; with check one failure fails all, named."""
        hosts = list(self._hosts) if nodes is None else [self._host(n) for n in nodes]

        def one(h: Host) -> ExecResult:
            return self._exec_host(h, argv(self._node_of(h)) if callable(argv) else argv, env, cwd, timeout)

        results = self._fan(one, hosts)
        if check:
            self._raise_failures(f"`{'command' if callable(argv) else shlex.join(argv)}`", results)
        return [r if isinstance(r, ExecResult) else ExecResult(self._node_of(h), LOST, "", str(r))
                for h, r in zip(hosts, results.values())]

    # ------------------------------------------------------------------ preflight
    def _probe(self, host: Host) -> dict:
        python = self.settings.python
        res = self._exec_host(host, [python, "-c", PROBE_SRC, *self.frameworks],
                              timeout=max(30.0, self.settings.connect_timeout * 3), guard=False)
        return parse_probe(res.returncode, res.stdout, res.tail(5), python)

    def check_nodes(self) -> list[Node]:
        """Connect every host at once and check it, once; ClusterError naming every bad node."""
        with self._check_lock:
            if self._nodes is not None:
                return self._nodes
            results = self._fan(self._probe, self._hosts)
            self._raise_failures("SSH preflight", results)
            found = problems(results, self.frameworks, self.require_frameworks)  # type: ignore[arg-type]
            if found:
                raise ClusterError("SSH preflight: " + "\n".join(found))
            self._nodes = [
                make_node(h.spec.name, h.target.hostname, results[h.spec.name], self.slots or h.spec.slots,
                          self.settings.python,
                          {"host": h.target.hostname, "port": str(h.target.port), "user": h.target.user})
                for h in self._hosts]
            return self._nodes

    def nodes(self) -> list[Node]:
        return list(self.check_nodes())

    # ------------------------------------------------------------------ files
    def span_access(self, nodes: Sequence[Node], run_dir: str) -> SpanAccess:
        """horovodrun and mpirun take one SSH port for every host: the nodes must share theirs."""
        ports = {self._host(n).target.port for n in nodes}
        if len(ports) > 1:
            shown = ", ".join(f"{n.name}:{self._host(n).target.port}" for n in nodes)
            raise ClusterError(f"a launcher that starts every node from node 0 reaches them on one SSH port; "
                               f"these nodes differ ({shown}): run sshd on one port on every node")
        port = ports.pop()
        return SpanAccess(ssh_port=None if port == 22 else port, ssh_identity=self.settings.node_key)

    def make_run_dir(self, node: Node, run_id: str) -> str:
        return self._host(node).make_run_dir(run_id)

    def upload(self, node: Node, local: Path, remote_dir: str) -> str:
        """SFTP the file into remote_dir, unless the same file (size and mtime) is already there."""
        return self._host(node).upload(local, remote_dir)

    def download(self, node: Node, remote: str, local: Path) -> None:
        """SFTP the node's file to local (FileNotFoundError when the node has none)."""
        self._host(node).download(remote, local)

    def start(self, cmd: NodeCommand, log_path: Path) -> NodeProcess:
        if RUN_TAG_ENV not in cmd.env:
            raise ClusterError(f"{cmd.node.name}: command started without {RUN_TAG_ENV}")
        host = self._host(cmd.node)
        chan = host.session()
        try:
            chan.set_combine_stderr(True)
            chan.exec_command(watch_line(cmd, self.grace))
        except CHANNEL_ERRORS as exc:
            chan.close()
            raise ClusterError(f"{cmd.node.name}: could not start {cmd.argv[0]!r}: {exc}") from exc

        def kill_group(pid: int) -> None:
            self._exec_host(host, ["kill", "-s", "KILL", "--", f"-{pid}"], guard=False, timeout=15)

        try:
            proc = SSHProcess(cmd.node, chan, log_path, self.grace, kill_group)
        except OSError:
            chan.close()  # the watchdog sees the channel go and stops the launcher
            raise
        self._procs.append(proc)
        return proc

    def kill_tagged(self, node: Node, tag: str) -> int:
        """Sweep the node with killtag.py (sent on stdin) for processes carrying the tag."""
        if not tag:
            raise ClusterError(f"{node.name}: empty run tag")
        try:
            res = self.exec(node, [node.python, "-", tag], stdin=KILLTAG_SRC.encode(), timeout=60)
        except ClusterError as exc:
            raise cannot_sweep(node, tag, exc) from exc
        return swept(node, tag, res)

    def free_ports(self, node: Node, n: int = 1) -> list[int]:
        """``n`` ports free on the node itself (a port free here may be taken there)."""
        if n <= 0:
            return []
        return ports_printed(node, n, self.exec(node, [node.python, "-c", FREE_PORT_SRC, str(n)], guard=False,
                                                timeout=30))

    def render(self, cmd: NodeCommand) -> str:
        """``ssh -p PORT [-i KEY] user@host -- <line>``: pasting it runs the node's command."""
        t = self._host(cmd.node).target
        argv = ["ssh"]
        if t.config and Path(t.config).expanduser() != Path(DEFAULT_SSH_CONFIG).expanduser():
            argv += ["-F", t.config]
        argv += ["-p", str(t.port)]
        if t.keys:
            argv += ["-i", t.keys[0]]
        if t.known_hosts and t.known_hosts != (str(Path(DEFAULT_KNOWN_HOSTS).expanduser()),):
            argv += ["-o", "UserKnownHostsFile=" + " ".join(f'"{k}"' if " " in k else k for k in t.known_hosts)]
        if t.proxy_jump:
            argv += ["-J", t.proxy_jump]
        argv += [f"{t.user}@{t.hostname}", "--", cmd.shell()]
        return shlex.join(argv)

    # ------------------------------------------------------------------ leases and clean-up
    def lease_paths(self) -> dict[str, Path]:
        """One lock file per node, keyed by host:port, shared by every process on this machine."""
        keys = sorted({f"{h.target.hostname}:{h.target.port}" for h in self._hosts})
        return {k: self.lock_dir / f"{_safe(k)}-{hashlib.sha1(k.encode()).hexdigest()[:10]}.lock" for k in keys}

    @contextlib.contextmanager
    def lease(self, what: str = "") -> Iterator[None]:
        """Hold every node of the cluster (in a fixed order, so two workers cannot deadlock)."""
        with contextlib.ExitStack() as stack:
            for key, path in self.lease_paths().items():
                stack.enter_context(self.turns.take(FileLock(str(path)), f"ssh node {key}", what))
            yield

    def close(self) -> None:
        self.kill_started()
        with self._pool_lock:
            if self._pool is not None:
                self._pool.shutdown(wait=True, cancel_futures=True)
                self._pool = None
        for h in self._hosts:
            h.close()


def _safe(text: str) -> str:
    """A file name for a host key: unusual characters become '_'."""
    return re.sub(r"[^A-Za-z0-9._@:-]", "_", text).replace(":", "_")

