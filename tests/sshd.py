"""Real OpenSSH daemons on loopback for the SSH cluster tests: one ``sshd -D`` per node.

Node i of a set listens on 127.0.<block>.<i+2> (127.0.0.2, 127.0.0.3, ... for the main process;
each pytest-xdist worker gets a block of its own), every node of a set on the same port, with a
generated host key per node, one generated client key, a ``known_hosts`` holding every node's
``[address]:port`` entry and an OpenSSH client config with one alias per node. Debian's
openssh-server comes from tests/setup.sh.
"""
from __future__ import annotations

import contextlib
import getpass
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest
from filelock import FileLock, Timeout

from .installed import require_program

SSHD = Path("/usr/sbin/sshd")


def ensure_sshd() -> Path:
    """sshd's path (Debian's openssh-server, installed by tests/setup.sh)."""
    return require_program(SSHD, "openssh-server")


def keygen(path: Path, comment: str) -> str:
    """Write a fresh ed25519 key pair at path; return the public key line."""
    for p in (path, path.with_name(path.name + ".pub")):
        p.unlink(missing_ok=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
                   check=True, capture_output=True)
    return path.with_name(path.name + ".pub").read_text().strip()


_BLOCK: tuple[int, FileLock] | None = None


def address_block() -> int:
    """The third octet of this process's test addresses, held for the process's life.

    0 (or 10+N for xdist worker gwN) when no other test session on this machine holds it, else one
    of 100-199: a file lock per block, which the kernel drops when the holder dies, so two sessions
    at once never share addresses, interface or namespace names, and whatever a dead holder left
    under a block is stale by the time another process takes it (the Slurm cluster clears it).
    """
    global _BLOCK
    if _BLOCK is None:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "")
        preferred = 10 + int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0
        for block in (preferred, *range(100, 200)):
            lock = FileLock(str(Path(tempfile.gettempdir()) / f"pytest-dlperf-block-{block}.lock"))
            try:
                lock.acquire(timeout=0)
            except Timeout:
                continue
            _BLOCK = (block, lock)
            break
        else:
            raise RuntimeError("every test address block (0, 100-199) is held by another test session on this "
                               "machine: let one finish first")
    return _BLOCK[0]


# prefix to a test daemon's argv: SIGTERM when the test process dies (even by SIGKILL), so a killed
# run leaves no sshd or slurmd holding the addresses, namespaces and ports that the next run needs;
# util-linux's setpriv sets it and execs the daemon (no preexec_fn: a fork of a threaded process)
DIE_WITH_PARENT = ["setpriv", "--pdeathsig", "TERM", "--"]


def _port_free(address: str, port: int) -> bool:
    with contextlib.closing(socket.socket()) as s:
        try:
            s.bind((address, port))
        except OSError:
            return False
    return True


def _banner(address: str, port: int) -> bool:
    """True once an SSH server answers on address:port."""
    try:
        with socket.create_connection((address, port), timeout=1) as s:
            return s.recv(8).startswith(b"SSH-")
    except OSError:
        return False


@dataclass
class SSHNode:
    """One sshd: its address, config and process."""

    index: int
    address: str
    port: int
    dir: Path
    proc: subprocess.Popen | None = None

    @property
    def host_key(self) -> Path:
        return self.dir / "host_ed25519"

    @property
    def config(self) -> Path:
        return self.dir / "sshd_config"

    @property
    def log(self) -> Path:
        return self.dir / "sshd.log"

    @property
    def alias(self) -> str:
        return f"node{self.index}"


@dataclass
class SSHNodes:
    """A set of sshd nodes on loopback and the client files that reach them."""

    root: Path
    nodes: list[SSHNode] = field(default_factory=list)
    user: str = field(default_factory=getpass.getuser)

    @property
    def client_key(self) -> Path:
        return self.root / "client_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.root / "known_hosts"

    @property
    def ssh_config(self) -> Path:
        return self.root / "ssh_config"

    @property
    def port(self) -> int:
        return self.nodes[0].port

    def hosts(self, slots: int | None = 1, count: int | None = None) -> str:
        """The --dlperf-hosts value: ``127.0.0.2:1,127.0.0.3:1``."""
        picked = self.nodes[:count] if count else self.nodes
        return ",".join(n.address + (f":{slots}" if slots else "") for n in picked)

    def cli(self) -> list[str]:
        """Options that reach the nodes with the generated files (no ~/.ssh involved)."""
        # path values with '=': a separate one would count as a test path in pytest's rootdir search
        return ["--dlperf-ssh-user", self.user, "--dlperf-ssh-port", str(self.port),
                f"--dlperf-ssh-key={self.client_key}",
                f"--dlperf-ssh-known-hosts={self.known_hosts}", f"--dlperf-ssh-config={os.devnull}",
                f"--dlperf-ssh-python={sys.executable}", f"--dlperf-ssh-workdir={self.root / 'remote'}"]

    def settings(self, **overrides):
        """SSHSettings equal to cli()."""
        from pytest_dlperf.clusters.ssh.connect import SSHSettings

        kw = dict(user=self.user, port=self.port, key=str(self.client_key),
                  known_hosts=str(self.known_hosts), config=None, python=sys.executable,
                  workdir=str(self.root / "remote"), connect_timeout=5.0, retries=1, backoff=0.2)
        kw.update(overrides)
        return SSHSettings(**kw)

    def cluster(self, count: int | None = None, slots: int | None = 1, **overrides):
        """An SSHCluster over the first count nodes."""
        from pytest_dlperf.clusters.hosts import parse_hosts
        from pytest_dlperf.clusters.ssh import SSHCluster

        return SSHCluster(parse_hosts(self.hosts(slots, count)), self.settings(**overrides))

    # ------------------------------------------------------------------ daemons
    def write_client_files(self) -> None:
        """known_hosts with every node's key, and an ssh config with alias nodeI per node."""
        lines, cfg = [], []
        for n in self.nodes:
            pub = n.host_key.with_name(n.host_key.name + ".pub").read_text().split()
            lines.append(f"[{n.address}]:{n.port} {pub[0]} {pub[1]}")
            cfg.append(f"Host {n.alias}\n    HostName {n.address}\n    Port {n.port}\n    User {self.user}\n"
                       f"    IdentityFile {self.client_key}\n    UserKnownHostsFile {self.known_hosts}\n")
        self.known_hosts.write_text("\n".join(lines) + "\n")
        self.ssh_config.write_text("\n".join(cfg))

    def write_sshd_config(self, n: SSHNode) -> None:
        n.config.write_text("\n".join([
            f"ListenAddress {n.address}:{n.port}",
            f"HostKey {n.host_key}",
            "PidFile none",
            "UsePAM no",
            "StrictModes no",
            "PermitRootLogin prohibit-password",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            f"AuthorizedKeysFile {self.root / 'authorized_keys'}",
            "AllowTcpForwarding yes",
            "Subsystem sftp internal-sftp",
            "SetEnv SHLVL=1",  # Debian's bash would otherwise source ~/.bashrc for every command
            "LogLevel ERROR",
            "",
        ]))

    def start(self, n: SSHNode) -> None:
        """Start node n's sshd and wait until it answers."""
        self.write_sshd_config(n)
        log = open(n.log, "ab")
        try:
            n.proc = subprocess.Popen([*DIE_WITH_PARENT, str(SSHD), "-D", "-e", "-f", str(n.config)],
                                      stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        finally:
            log.close()
        deadline = time.monotonic() + 10
        while not _banner(n.address, n.port):
            if n.proc.poll() is not None:
                raise OSError(f"sshd for {n.address}:{n.port} exited {n.proc.returncode}: "
                              f"{n.log.read_text(errors='replace')[-500:]}")
            if time.monotonic() > deadline:
                raise OSError(f"sshd for {n.address}:{n.port} did not answer in 10s")
            time.sleep(0.01)

    def sshd_pids(self, n: SSHNode) -> list[int]:
        """The node's listening sshd and every sshd process under it (not the user's commands)."""
        if n.proc is None or n.proc.poll() is not None:
            return []
        try:
            root = psutil.Process(n.proc.pid)
            procs = [root] + root.children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        out = []
        for p in procs:
            with contextlib.suppress(psutil.Error):
                if p.exe() == str(SSHD) or p.name() == "sshd":
                    out.append(p.pid)
        return out

    def kill_sshd(self, index: int) -> None:
        """Kill node index's sshd and its session processes at once, as a crash would."""
        n = self.nodes[index]
        for pid in self.sshd_pids(n):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if n.proc is not None:
            n.proc.wait(timeout=10)

    def stop(self, index: int) -> None:
        """Stop node index's sshd and everything under it."""
        n = self.nodes[index]
        if n.proc is None:
            return
        with contextlib.suppress(psutil.NoSuchProcess):
            procs = [psutil.Process(n.proc.pid)] + psutil.Process(n.proc.pid).children(recursive=True)
            for p in procs:
                with contextlib.suppress(psutil.NoSuchProcess):
                    p.kill()
        n.proc.wait(timeout=10)
        n.proc = None

    def new_host_key(self, index: int) -> None:
        """Give node index a new host key (a reinstalled host, or an attacker) and restart it."""
        n = self.nodes[index]
        self.stop(index)
        keygen(n.host_key, f"{n.alias}-rekeyed")
        self.start(n)

    def close(self) -> None:
        for i in range(len(self.nodes)):
            self.stop(i)


def start_nodes(count: int, root: Path, tries: int = 20) -> SSHNodes:
    """Start count sshd nodes on loopback under root; the caller closes them."""
    ensure_sshd()
    if os.geteuid() != 0:
        raise RuntimeError("the sshd test nodes log in as root and need root")
    Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # sshd's privilege separation directory
    root.mkdir(parents=True, exist_ok=True)
    nodes = SSHNodes(root=root)
    pub = keygen(nodes.client_key, "pytest-dlperf-client")
    (root / "authorized_keys").write_text(pub + "\n")
    block = address_block()
    addresses = [f"127.0.{block}.{i + 2}" for i in range(count)]
    last: Exception | None = None
    for _ in range(tries):
        port = random.randint(10000, 32000)
        if not all(_port_free(a, port) for a in addresses):
            continue
        nodes.nodes = []
        try:
            for i, address in enumerate(addresses):
                d = root / f"node{i}"
                d.mkdir(exist_ok=True)
                node = SSHNode(i, address, port, d)
                if not node.host_key.exists():
                    keygen(node.host_key, f"node{i}")
                nodes.nodes.append(node)
                nodes.start(node)
        except OSError as exc:  # the port was taken in between: try another
            last = exc
            nodes.close()
            continue
        nodes.write_client_files()
        return nodes
    raise RuntimeError(f"could not start {count} sshd nodes: {last}")


@contextlib.contextmanager
def sshd_nodes(count: int, root: Path) -> Iterator[SSHNodes]:
    nodes = start_nodes(count, root)
    try:
        yield nodes
    finally:
        nodes.close()


@pytest.fixture(scope="session")
def ssh_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SSHNodes]:
    """Two sshd nodes shared by the tests that leave them running and unchanged."""
    with sshd_nodes(2, tmp_path_factory.mktemp("sshd-shared")) as nodes:
        yield nodes


@pytest.fixture
def fresh_ssh_nodes(tmp_path_factory: pytest.TempPathFactory):
    """Factory: ``fresh_ssh_nodes(n)`` starts n sshd nodes that this test may break."""
    made: list[SSHNodes] = []

    def make(count: int = 2) -> SSHNodes:
        made.append(start_nodes(count, tmp_path_factory.mktemp("sshd")))
        return made[-1]

    yield make
    for nodes in made:
        nodes.close()
