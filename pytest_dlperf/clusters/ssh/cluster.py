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
import os
import posixpath
import re
import shlex
import stat
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import paramiko
from filelock import FileLock

from ..base import RUN_TAG_ENV, Cluster, ClusterError, ExecResult, Node, NodeCommand, NodeProcess, SpanAccess, \
    cannot_sweep, ports_printed, swept
from ..hosts import HostSpec
from .connect import DEFAULT_KNOWN_HOSTS, Connection, SSHSettings, Target, connect, \
    load_config, resolve
from .options import DEFAULT_SSH_CONFIG
from .preflight import PROBE_SRC, make_node, parse_probe, problems
from .remote import LOST, CommandTimeout, SSHProcess, exec_line, run_channel, watch_line

KILLTAG_SRC = (Path(__file__).resolve().parents[2] / "node" / "killtag.py").read_text()
FREE_PORT_SRC = ("import socket, sys; ss = [socket.socket() for _ in range(int(sys.argv[1]))]; "
                 "[s.bind(('', 0)) for s in ss]; print(*[s.getsockname()[1] for s in ss])")
TAIL_LINES = 20
T = TypeVar("T")
_CHANNEL_ERRORS = (OSError, EOFError, paramiko.SSHException)


@dataclass
class _Host:
    """One host: where it is, its connection and SFTP session."""

    index: int
    spec: HostSpec
    target: Target
    conn: Connection | None = None
    sftp: paramiko.SFTPClient | None = None
    lock: threading.RLock = field(default_factory=threading.RLock)
    sftp_lock: threading.Lock = field(default_factory=threading.Lock)
    workdir: str | None = None


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
        self._hosts = [_Host(i, h, resolve(h, self.settings, self._config)) for i, h in enumerate(hosts)]
        self._by_name = {h.spec.name: h for h in self._hosts}
        self._nodes: list[Node] | None = None
        self._preflight_lock = threading.Lock()
        self._procs: list[SSHProcess] = []
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self._closed = False

    # ------------------------------------------------------------------ fan-out
    def _fan(self, fn: Callable[[_Host], T], hosts: Sequence[_Host]) -> dict[str, T | BaseException]:
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

    def _host(self, node: Node | str) -> _Host:
        name = node if isinstance(node, str) else node.name
        try:
            return self._by_name[name]
        except KeyError:
            raise ClusterError(f"{name}: not a node of this SSH cluster") from None

    def _node_of(self, host: _Host) -> Node:
        """The node after preflight; before it, a stand-in with what the host list says."""
        if self._nodes is not None:
            return self._nodes[host.index]
        return Node(host.spec.name, host.target.hostname, host.spec.slots or 1, 1, python=self.settings.python)

    # ------------------------------------------------------------------ connections
    def _connection(self, host: _Host) -> Connection:
        """The host's connection, opened on first use and again if it went away."""
        if self._closed:
            raise ClusterError(f"{host.spec.name}: the SSH cluster is closed")
        with host.lock:
            if host.conn is None or not host.conn.alive():
                if host.conn is not None:
                    host.conn.close()
                    host.sftp = None
                host.conn = connect(host.target, self.settings, self._config)
            return host.conn

    def _session(self, host: _Host) -> paramiko.Channel:
        """A new session channel on the host's connection (reconnecting once if it just died)."""
        for attempt in (0, 1):
            conn = self._connection(host)
            try:
                return conn.transport.open_session(timeout=self.settings.connect_timeout)
            except _CHANNEL_ERRORS as exc:
                if attempt or conn.alive():
                    raise ClusterError(f"{host.spec.name}: cannot open an SSH channel: {exc}") from exc
        raise AssertionError("unreachable")

    def _sftp(self, host: _Host) -> paramiko.SFTPClient:
        with host.lock:
            conn = self._connection(host)
            if host.sftp is None or host.sftp.get_channel().closed:
                try:
                    host.sftp = conn.client.open_sftp()
                except _CHANNEL_ERRORS as exc:
                    raise ClusterError(f"{host.spec.name}: cannot start SFTP: {exc}") from exc
            return host.sftp

    # ------------------------------------------------------------------ commands
    def _exec_host(self, host: _Host, argv: Sequence[str], env: dict[str, str] | None = None,
                   cwd: str | None = None, timeout: float = 60.0, stdin: bytes | None = None,
                   guard: bool = True) -> ExecResult:
        line = exec_line(argv, env, cwd, guard=guard and stdin is None)
        try:
            code, out, err = run_channel(self._session(host), line, host.spec.name, timeout, stdin)
        except CommandTimeout as exc:
            raise ClusterError(f"{host.spec.name}: {shlex.join(argv)} {exc}") from None
        except _CHANNEL_ERRORS as exc:
            raise ClusterError(f"{host.spec.name}: {shlex.join(argv)} could not run: {exc}") from exc
        return ExecResult(self._node_of(host), code, out, err)

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

        def one(h: _Host) -> ExecResult:
            return self._exec_host(h, argv(self._node_of(h)) if callable(argv) else argv, env, cwd, timeout)

        results = self._fan(one, hosts)
        if check:
            self._raise_failures(f"`{'command' if callable(argv) else shlex.join(argv)}`", results)
        return [r if isinstance(r, ExecResult) else ExecResult(self._node_of(h), LOST, "", str(r))
                for h, r in zip(hosts, results.values())]

    # ------------------------------------------------------------------ preflight
    def _probe(self, host: _Host) -> dict:
        python = self.settings.python
        res = self._exec_host(host, [python, "-c", PROBE_SRC, *self.frameworks],
                              timeout=max(30.0, self.settings.connect_timeout * 3), guard=False)
        return parse_probe(res.returncode, res.stdout, res.tail(5), python)

    def preflight(self) -> list[Node]:
        """Connect every host at once and check it, once; ClusterError naming every bad node."""
        with self._preflight_lock:
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
        return list(self.preflight())

    # ------------------------------------------------------------------ files
    def _workdir(self, host: _Host, sftp: paramiko.SFTPClient) -> str:
        """The node's base directory for run directories (absolute), created 0700 on first use."""
        if host.workdir is None:
            base = self.settings.workdir or f"/tmp/pytest-dlperf-{host.target.user}"
            if not base.startswith("/"):
                base = posixpath.join(sftp.normalize("."), base)
            _mkdirs(sftp, base, mode=0o700)
            st = sftp.lstat(base)
            if not stat.S_ISDIR(st.st_mode or 0):
                raise ClusterError(f"{host.spec.name}: {base} is not a directory; pass --dlperf-ssh-workdir")
            host.workdir = base
        return host.workdir

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
        host = self._host(node)
        sftp = self._sftp(host)
        with host.sftp_lock:
            try:
                base = self._workdir(host, sftp)
                run = posixpath.join(base, run_id)
                _mkdirs(sftp, run)
                path = posixpath.join(run, f"node{host.index}")
                sftp.mkdir(path)
            except OSError as exc:
                raise ClusterError(f"{node.name}: cannot create the run directory under "
                                   f"{self.settings.workdir or '/tmp'}: {exc}; pass --dlperf-ssh-workdir") from exc
        return path

    def upload(self, node: Node, local: Path, remote_dir: str) -> str:
        """SFTP the file into remote_dir, unless the same file (size and mtime) is already there."""
        host = self._host(node)
        dest = posixpath.join(remote_dir, local.name)
        st = local.stat()
        sftp = self._sftp(host)
        with host.sftp_lock:
            try:
                with contextlib.suppress(FileNotFoundError):
                    there = sftp.stat(dest)
                    if there.st_size == st.st_size and int(there.st_mtime or 0) == int(st.st_mtime):
                        return dest
                part = f"{dest}.part-{uuid.uuid4().hex[:8]}"
                sftp.put(str(local), part)
                sftp.chmod(part, stat.S_IMODE(st.st_mode))
                sftp.utime(part, (int(st.st_atime), int(st.st_mtime)))
                sftp.posix_rename(part, dest)
            except OSError as exc:
                raise ClusterError(f"{node.name}: upload of {local} to {dest} failed: {exc}") from exc
        return dest

    def download(self, node: Node, remote: str, local: Path) -> None:
        """SFTP the node's file to local (FileNotFoundError when the node has none)."""
        host = self._host(node)
        sftp = self._sftp(host)
        part = local.with_name(f".{local.name}.part-{uuid.uuid4().hex[:8]}")
        with host.sftp_lock:
            try:
                sftp.get(remote, str(part))
                os.replace(part, local)
            except FileNotFoundError:
                raise FileNotFoundError(f"{node.name}: {remote}: no such file") from None
            except OSError as exc:
                raise ClusterError(f"{node.name}: download of {remote} failed: {exc}") from exc
            finally:
                part.unlink(missing_ok=True)

    def start(self, cmd: NodeCommand, log_path: Path) -> NodeProcess:
        if RUN_TAG_ENV not in cmd.env:
            raise ClusterError(f"{cmd.node.name}: command started without {RUN_TAG_ENV}")
        host = self._host(cmd.node)
        chan = self._session(host)
        try:
            chan.set_combine_stderr(True)
            chan.exec_command(watch_line(cmd, self.grace))
        except _CHANNEL_ERRORS as exc:
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
    def lease_paths(self) -> list[Path]:
        """One lock file per node, keyed by host:port, shared by every process on this machine."""
        keys = sorted({f"{h.target.hostname}:{h.target.port}" for h in self._hosts})
        return [self.lock_dir / f"{_safe(k)}-{hashlib.sha1(k.encode()).hexdigest()[:10]}.lock" for k in keys]

    @contextlib.contextmanager
    def lease(self) -> Iterator[None]:
        """Hold every node of the cluster (in a fixed order, so two workers cannot deadlock)."""
        self.lock_dir.mkdir(parents=True, exist_ok=True)
        with contextlib.ExitStack() as stack:
            for path in self.lease_paths():
                stack.enter_context(FileLock(str(path)))
            yield

    def close(self) -> None:
        self.kill_started()
        self._closed = True
        with self._pool_lock:
            if self._pool is not None:
                self._pool.shutdown(wait=True, cancel_futures=True)
                self._pool = None
        for h in self._hosts:
            with h.lock:
                if h.sftp is not None:
                    with contextlib.suppress(Exception):
                        h.sftp.close()
                    h.sftp = None
                if h.conn is not None:
                    h.conn.close()
                    h.conn = None


def _safe(text: str) -> str:
    """A file name for a host key: unusual characters become '_'."""
    return re.sub(r"[^A-Za-z0-9._@:-]", "_", text).replace(":", "_")


def _mkdirs(sftp: paramiko.SFTPClient, path: str, mode: int = 0o755) -> None:
    """mkdir -p over SFTP."""
    parts = [p for p in path.split("/") if p]
    cur = "/" if path.startswith("/") else ""
    for part in parts:
        cur = posixpath.join(cur, part) if cur else part
        try:
            sftp.stat(cur)
        except FileNotFoundError:
            try:
                sftp.mkdir(cur, mode)
            except OSError:
                sftp.stat(cur)  # made by someone else in between
