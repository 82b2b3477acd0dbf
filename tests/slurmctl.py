"""A real Slurm cluster for the Slurm cluster tests: Debian's ``slurm-wlm`` 22.05, one slurmctld and
one slurmd per node, each node in a network namespace of its own.

The controller listens on a bridge (10.231.<block>.1) that every node's namespace joins through a
veth pair; node i is ``n<i>`` at 10.231.<block>.<10+i>, reached by srun and slurmctld at that
address as on a real cluster. Nodes may also get a private ``/tmp`` (a mount namespace with a
directory of its own bound there), so that a work directory under /tmp is not shared and files
must travel with sbcast. ``AuthType=auth/none``: the tests run as root on one machine. slurm-wlm comes
from tests/setup.sh.
"""
from __future__ import annotations

import contextlib
import os
import shlex
import shutil
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

from .installed import require_program
from .sshd import DIE_WITH_PARENT, address_block

SLURMCTLD = Path("/usr/sbin/slurmctld")


def ensure_slurm() -> None:
    """slurmctld, slurmd and the client commands (Debian's slurm-wlm, installed by tests/setup.sh)."""
    require_program(SLURMCTLD, "slurm-wlm")


def _sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, check=check)


def _free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


@dataclass
class SlurmTestCluster:
    """A running test cluster: its config, nodes and a way to run Slurm's commands against it."""

    base: Path
    nodes: list[str]
    addresses: dict[str, str]
    block: int
    private_tmp: bool
    daemons: list[subprocess.Popen] = field(default_factory=list)

    @property
    def conf(self) -> Path:
        return self.base / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        """This process's environment pointed at the cluster, outside any allocation."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        env["SLURM_CONF"] = str(self.conf)
        return env

    def run(self, *argv: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
        done = subprocess.run(list(argv), env=self.env, capture_output=True, text=True, timeout=timeout, check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr}")
        return done

    def jobs(self) -> list[str]:
        """squeue's lines (jobs pending, running or completing), empty when nothing is left."""
        return [line for line in self.run("squeue", "--noheader", "--format=%i %j %T %N").stdout.splitlines() if line]

    def job_steps(self) -> list[str]:
        return [line for line in self.run("squeue", "--noheader", "--steps", "--format=%i %j").stdout.splitlines()
                if line]

    def allocate(self, nodes: int, name: str = "user-alloc", exclusive: bool = False) -> tuple[str, str]:
        """A user's own allocation (salloc --no-shell): (job id, node list)."""
        done = self.run("salloc", "--no-shell", f"--nodes={nodes}", f"--job-name={name}",
                        *(["--exclusive"] if exclusive else []), timeout=60)
        job = done.stderr.split("Granted job allocation")[1].split()[0]
        nodelist = self.run("squeue", "--noheader", f"--jobs={job}", "--format=%N").stdout.strip()
        return job, nodelist

    def wait_idle(self, timeout: float = 60) -> None:
        """Until no job is listed and every node is idle again."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.jobs() and set(self.node_states().values()) == {"idle"}:
                return
            time.sleep(0.5)
        raise AssertionError(f"the test cluster did not come back to idle: {self.jobs()} "
                             f"{self.run('sinfo', '--Node').stdout}")

    def node_states(self) -> dict[str, str]:
        """Each node's short state as sinfo shows it (idle, alloc, down*, ...)."""
        done = self.run("sinfo", "--noheader", "--Node", "--format=%N %t", check=False)
        return dict(line.split() for line in done.stdout.splitlines() if line.strip())

    def resume(self, node: str) -> None:
        self.run("scontrol", "update", f"nodename={node}", "state=resume", check=False)

    def stop(self) -> None:
        for p in self.daemons:
            with contextlib.suppress(ProcessLookupError):
                p.send_signal(signal.SIGTERM)
        for p in self.daemons:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for i in range(1, len(self.nodes) + 1):
            _sh("ip", "netns", "del", _ns(self.block, i), check=False)
        _sh("ip", "link", "del", _bridge(self.block), check=False)
        shutil.rmtree(self.base, ignore_errors=True)


def _controller_marker(block: int) -> str:
    """The controller's address as this block's slurm.conf names it (SlurmctldHost=HOST(ADDR))."""
    return f"({_net(block)}.1)"


def block_state_files(block: int) -> list[Path]:
    """slurm.conf of every test cluster directory under /var/tmp that was made for this block."""
    marker = _controller_marker(block)
    found = []
    for conf in Path("/var/tmp").glob("dlperf-slurm-*/slurm.conf"):
        with contextlib.suppress(OSError):
            if marker in conf.read_text():
                found.append(conf)
    return found


def _ns(block: int, i: int | str) -> str:
    return f"dlperf-slurm-{block}-n{i}"


def _bridge(block: int) -> str:
    return f"dlpsl{block}"


def _clear_stale(block: int) -> None:
    """Remove what a dead test run left under this process's block: its daemons, its directory under
    /var/tmp, namespaces, links.

    Only stale things can be there: the block is held (a file lock) by this process alone. A run
    killed before its teardown leaves slurmd holding its namespace, so the veth pair outlives
    ``ip netns del``; and namespace teardown is asynchronous, so wait until the names are free.
    """
    marker = _controller_marker(block)
    for proc in psutil.process_iter(["name"]):
        if proc.info["name"] not in ("slurmctld", "slurmd", "slurmstepd"):
            continue
        with contextlib.suppress(psutil.Error, OSError):
            conf = Path(proc.environ().get("SLURM_CONF", ""))
            if conf.parent.name.startswith("dlperf-slurm-") and (not conf.exists() or marker in conf.read_text()):
                proc.kill()
    for conf in block_state_files(block):  # the dead runs' state, spool and logs
        shutil.rmtree(conf.parent, ignore_errors=True)
    for ns in block_namespaces(block):
        for pid in _sh("ip", "netns", "pids", ns, check=False).stdout.split():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
        _sh("ip", "netns", "del", ns, check=False)
    deadline = time.monotonic() + 20
    while True:
        links = block_links(block)
        if not links:
            return
        for link in links:
            _sh("ip", "link", "del", link, check=False)
        if time.monotonic() > deadline:
            raise RuntimeError(f"a dead test run's interfaces {links} did not go away; remove them with "
                               f"`ip link del NAME` and rerun")
        time.sleep(0.2)


def _net(block: int) -> str:
    return f"10.231.{block}"


def _veth(block: int, i: int | str, end: str) -> str:
    """Node i's veth pair: end "h" on the bridge, end "n" moved into the node's namespace."""
    return f"dlps{block}{end}{i}"


def block_links(block: int) -> list[str]:
    """The host's interfaces that belong to this block: its bridge and the veths' host ends."""
    names = [line.split()[0].split("@")[0] for line in _sh("ip", "-br", "link", check=False).stdout.splitlines()
             if line.strip()]
    return [n for n in names if n == _bridge(block) or n.startswith(_veth(block, "", "h"))]


def block_namespaces(block: int) -> list[str]:
    """The network namespaces of this block's nodes."""
    return sorted(p.name for p in Path("/run/netns").glob(_ns(block, "*")))


def _config(base: Path, nodes: list[str], addresses: dict[str, str], controller: str, port: int) -> str:
    cpus = os.cpu_count() or 1
    lines = [
        "ClusterName=dlperftest", f"SlurmctldHost={socket.gethostname()}({controller})",
        f"SlurmctldPort={port}", "SlurmdPort=6818", "AuthType=auth/none", "CredType=cred/none",
        "SlurmUser=root", "SlurmdUser=root", f"StateSaveLocation={base}/state", f"SlurmdSpoolDir={base}/spool/%n",
        f"SlurmctldPidFile={base}/slurmctld.pid", f"SlurmdPidFile={base}/slurmd-%n.pid",
        f"SlurmctldLogFile={base}/log/slurmctld.log", f"SlurmdLogFile={base}/log/slurmd-%n.log",
        "ProctrackType=proctrack/pgid", "TaskPlugin=task/none", "JobAcctGatherType=jobacct_gather/none",
        "MpiDefault=none", "ReturnToService=1",  # a node set DOWN stays down until resumed
        "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core",
        # An ended job's record stays 60 s (Slurm's default: 300): the harness names a job's end
        # (NODE_FAIL) from it, and with 5 s a loaded CI host diagnosed after the record was gone.
        "MinJobAge=60", "KillWait=5", "InactiveLimit=0", "MessageTimeout=20",
    ]
    for name in nodes:
        lines.append(f"NodeName={name} NodeAddr={addresses[name]} CPUs={cpus} State=UNKNOWN Feature=zen4,dlperf-testbox")
    lines.append(f"PartitionName=debug Nodes={','.join(nodes)} Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


def python_environments_under_tmp() -> list[Path]:
    """The tests' Python environment (a venv, and the interpreter it was made from) where it lies under
    /tmp, which a node with a /tmp of its own would not see."""
    found: list[Path] = []
    for prefix in sorted({Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}):
        if prefix.is_relative_to("/tmp") and not any(prefix.is_relative_to(f) for f in found):
            found.append(prefix)
    return found


def _private_tmp_script(hold: Path) -> str:
    """Shell that gives a node its own /tmp ($1) and still shows it the tests' Python environment at its
    path, as a cluster's shared file system shows the nodes its software (a clone with its venv under
    /tmp, the issue's fresh machine): each environment is bound aside first, then back at its path."""
    shared = python_environments_under_tmp()
    aside = [hold / str(i) for i in range(len(shared))]
    for d in aside:
        d.mkdir(parents=True)
    quote = shlex.quote
    first = "".join(f"mount --bind {quote(str(env))} {quote(str(d))} && " for env, d in zip(shared, aside))
    back = "".join(f"mkdir -p {quote(str(env))} && mount --bind {quote(str(d))} {quote(str(env))} && "
                   for env, d in zip(shared, aside))
    return first + 'mount --bind "$1" /tmp && ' + back


def start(n: int = 2, private_tmp: bool = True) -> SlurmTestCluster:
    """slurmctld on a bridge and ``n`` slurmd nodes in network namespaces, all idle when it returns."""
    ensure_slurm()
    if os.geteuid() != 0:
        raise RuntimeError("the Slurm test cluster needs root (network namespaces, slurmd)")
    block = address_block()
    _clear_stale(block)
    base = Path(tempfile.mkdtemp(prefix="dlperf-slurm-", dir="/var/tmp"))  # not under /tmp: nodes may have their own
    for sub in ("state", "spool", "log", "tmp"):
        (base / sub).mkdir()
    net = _net(block)
    nodes = [f"n{i}" for i in range(1, n + 1)]
    addresses = {name: f"{net}.{10 + i}" for i, name in enumerate(nodes, 1)}
    cluster = SlurmTestCluster(base, nodes, addresses, block, private_tmp)
    try:
        bridge = _bridge(block)
        _sh("ip", "link", "add", bridge, "type", "bridge")
        _sh("ip", "addr", "add", f"{net}.1/24", "dev", bridge)
        _sh("ip", "link", "set", bridge, "up")
        for i, name in enumerate(nodes, 1):
            ns, host_end, node_end = _ns(block, i), _veth(block, i, "h"), _veth(block, i, "n")
            _sh("ip", "netns", "add", ns)
            _sh("ip", "link", "add", host_end, "type", "veth", "peer", "name", node_end)
            _sh("ip", "link", "set", host_end, "master", bridge, "up")
            _sh("ip", "link", "set", node_end, "netns", ns)
            _sh("ip", "-n", ns, "link", "set", node_end, "name", "eth0")  # one NIC name on every node
            _sh("ip", "-n", ns, "addr", "add", f"{addresses[name]}/24", "dev", "eth0")
            _sh("ip", "-n", ns, "link", "set", "eth0", "up")
            _sh("ip", "-n", ns, "link", "set", "lo", "up")
            (base / "spool" / name).mkdir()
            (base / "tmp" / name).mkdir()
            (base / "tmp" / name).chmod(0o1777)
        hosts = base / "hosts"
        hosts.write_text("127.0.0.1 localhost\n" + "".join(f"{a} {n}\n" for n, a in addresses.items()))
        cluster.conf.write_text(_config(base, nodes, addresses, f"{net}.1", _free_port()))
        env = cluster.env
        cluster.daemons.append(subprocess.Popen([*DIE_WITH_PARENT, "slurmctld", "-D", "-i"], env=env, stdout=subprocess.DEVNULL,
                                                stderr=subprocess.DEVNULL, start_new_session=True))
        for i, name in enumerate(nodes, 1):
            # nsenter keeps the host's /sys (slurmd's cgroup plugin wants /sys/fs/cgroup); unshare
            # gives the node its hostname (UTS namespace) resolving to its address (/etc/hosts bound
            # in a mount namespace), as a cluster's DNS would, and a /tmp of its own when asked
            script = 'mount --bind "$3" /etc/hosts && hostname "$2" && '
            script += _private_tmp_script(base / "env" / name) if private_tmp else ""
            argv = [*DIE_WITH_PARENT, "nsenter", f"--net=/run/netns/{_ns(block, i)}", "unshare", "--mount", "--uts", "--propagation",
                    "private", "--", "sh", "-c", script + 'exec slurmd -D -N "$2"', "sh", str(base / "tmp" / name),
                    name, str(hosts)]
            cluster.daemons.append(subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                                                    stderr=subprocess.DEVNULL, start_new_session=True))
        deadline = time.monotonic() + 60
        while True:
            states = cluster.node_states()
            if all(states.get(name) == "idle" for name in nodes):
                break
            if time.monotonic() > deadline:
                logs = "\n".join(p.read_text()[-1500:] for p in sorted((base / "log").iterdir()))
                raise RuntimeError(f"the Slurm test nodes did not come up: {states}\n{logs}")
            time.sleep(0.3)
        return cluster
    except BaseException:
        cluster.stop()
        raise


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmTestCluster]:
    """Two Slurm nodes with private /tmp, shared by the session's Slurm tests."""
    ensure_slurm()
    cluster = start(2, private_tmp=True)
    try:
        yield cluster
    finally:
        cluster.stop()
