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
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest

from .installed import require_program
from .netns import NodeNet, hosts_file, node_argv, private_tmp_script
from .sshd import DIE_WITH_PARENT, address_block

SLURMCTLD = Path("/usr/sbin/slurmctld")
NET = NodeNet("dlperf-slurm", 231, "dlpsl", "dlps")  # node i: dlperf-slurm-<block>-n<i> at 10.231.<block>.<10+i>


def ensure_slurm() -> None:
    """slurmctld, slurmd and the client commands (Debian's slurm-wlm, installed by tests/setup.sh)."""
    require_program(SLURMCTLD, "slurm-wlm")


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
        NET.remove(self.block, list(range(1, len(self.nodes) + 1)))
        shutil.rmtree(self.base, ignore_errors=True)


def _controller_marker(block: int) -> str:
    """The controller's address as this block's slurm.conf names it (SlurmctldHost=HOST(ADDR))."""
    return f"({NET.net(block)}.1)"


def block_state_files(block: int) -> list[Path]:
    """slurm.conf of every test cluster directory under /var/tmp that was made for this block."""
    marker = _controller_marker(block)
    found = []
    for conf in Path("/var/tmp").glob("dlperf-slurm-*/slurm.conf"):
        with contextlib.suppress(OSError):
            if marker in conf.read_text():
                found.append(conf)
    return found


def _clear_stale(block: int) -> None:
    """Remove what a dead test run left under this process's block: its daemons, its directory under
    /var/tmp, namespaces, links.

    Only stale things can be there: the block is held (a file lock) by this process alone.
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
    NET.clear_stale(block)


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
    nodes = [f"n{i}" for i in range(1, n + 1)]
    addresses = {name: NET.address(block, i) for i, name in enumerate(nodes, 1)}
    cluster = SlurmTestCluster(base, nodes, addresses, block, private_tmp)
    try:
        NET.build(block, {i: addresses[name] for i, name in enumerate(nodes, 1)})
        for name in nodes:
            (base / "spool" / name).mkdir()
            (base / "tmp" / name).mkdir()
            (base / "tmp" / name).chmod(0o1777)
        hosts = hosts_file(base / "hosts", addresses)
        cluster.conf.write_text(_config(base, nodes, addresses, f"{NET.net(block)}.1", _free_port()))
        env = cluster.env
        cluster.daemons.append(subprocess.Popen([*DIE_WITH_PARENT, "slurmctld", "-D", "-i"], env=env, stdout=subprocess.DEVNULL,
                                                stderr=subprocess.DEVNULL, start_new_session=True))
        for i, name in enumerate(nodes, 1):
            # the node's hostname resolving to its address, and a /tmp of its own when asked
            script = 'mount --bind "$3" /etc/hosts && hostname "$2" && '
            script += private_tmp_script(base / "env" / name) if private_tmp else ""
            argv = [*DIE_WITH_PARENT, *node_argv(NET.namespace(block, i), script + 'exec slurmd -D -N "$2"',
                                                 str(base / "tmp" / name), name, str(hosts))]
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
