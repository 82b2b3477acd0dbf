"""Test nodes in network namespaces of their own, joined by a bridge: the part the Slurm and Ray test
clusters (tests/slurmctl.py, tests/raycluster.py) share.

A ``NodeNet`` names one kind of test cluster's bridge, veth pairs and namespaces within an address
block (tests/sshd.py's ``address_block``, held by one test process at a time): the bridge is
10.<octet>.<block>.1, this machine's end, and each node's namespace joins it through a veth pair whose
node end is ``eth0`` at the address it is given. No namespace has a route off the machine. Nodes that
want their own /tmp and hostname get them from ``node_shell`` in a mount and UTS namespace.
"""
from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    """One command, its output captured; raises on failure where ``check``."""
    return subprocess.run(list(argv), capture_output=True, text=True, check=check)


@dataclass(frozen=True)
class NodeNet:
    """The names and addresses of one kind of test cluster's network in a block."""

    namespace_prefix: str  # dlperf-slurm: node i's namespace is dlperf-slurm-<block>-n<i>
    octet: int  # the second octet of 10.<octet>.<block>.0/24
    bridge_prefix: str  # the bridge is <bridge_prefix><block>
    veth_prefix: str  # node i's veth ends are <veth_prefix><block>h<i> (bridge) and ...n<i> (namespace)

    def net(self, block: int) -> str:
        return f"10.{self.octet}.{block}"

    def address(self, block: int, i: int) -> str:
        """Node i's address (the bridge is .1; nodes from .10 up)."""
        return f"{self.net(block)}.{10 + i}"

    def namespace(self, block: int, i: int | str) -> str:
        return f"{self.namespace_prefix}-{block}-n{i}"

    def bridge(self, block: int) -> str:
        return f"{self.bridge_prefix}{block}"

    def veth(self, block: int, i: int | str, end: str) -> str:
        """Node i's veth pair: end "h" on the bridge, end "n" moved into the node's namespace."""
        return f"{self.veth_prefix}{block}{end}{i}"

    def links(self, block: int) -> list[str]:
        """The host's interfaces that belong to this block: its bridge and the veths' host ends."""
        names = [line.split()[0].split("@")[0] for line in sh("ip", "-br", "link", check=False).stdout.splitlines()
                 if line.strip()]
        return [n for n in names if n == self.bridge(block) or n.startswith(self.veth(block, "", "h"))]

    def namespaces(self, block: int) -> list[str]:
        """The network namespaces of this block's nodes."""
        return sorted(p.name for p in Path("/run/netns").glob(self.namespace(block, "*")))

    def build(self, block: int, nodes: dict[int, str]) -> None:
        """The bridge, and for each node index its namespace joined to it with ``eth0`` at its address."""
        bridge = self.bridge(block)
        sh("ip", "link", "add", bridge, "type", "bridge")
        sh("ip", "addr", "add", f"{self.net(block)}.1/24", "dev", bridge)
        sh("ip", "link", "set", bridge, "up")
        for i, address in nodes.items():
            ns, host_end, node_end = self.namespace(block, i), self.veth(block, i, "h"), self.veth(block, i, "n")
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "add", host_end, "type", "veth", "peer", "name", node_end)
            sh("ip", "link", "set", host_end, "master", bridge, "up")
            sh("ip", "link", "set", node_end, "netns", ns)
            sh("ip", "-n", ns, "link", "set", node_end, "name", "eth0")  # one NIC name on every node
            sh("ip", "-n", ns, "addr", "add", f"{address}/24", "dev", "eth0")  # no default route
            sh("ip", "-n", ns, "link", "set", "eth0", "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")

    def remove(self, block: int, indices: list[int]) -> None:
        """The nodes' namespaces and the bridge (a namespace's veth goes with it)."""
        for i in indices:
            sh("ip", "netns", "del", self.namespace(block, i), check=False)
        sh("ip", "link", "del", self.bridge(block), check=False)

    def clear_stale(self, block: int) -> None:
        """What a dead test run left of this block's network: its namespaces' processes, the namespaces,
        the links. A killed run's daemons hold their namespace, so the veth pair outlives ``ip netns
        del``, and namespace teardown is asynchronous: wait until the names are free."""
        for ns in self.namespaces(block):
            kill_namespace(ns, grace=0.5)
            sh("ip", "netns", "del", ns, check=False)
        deadline = time.monotonic() + 20
        while links := self.links(block):
            for link in links:
                sh("ip", "link", "del", link, check=False)
            if time.monotonic() > deadline:
                raise RuntimeError(f"a dead test run's interfaces {links} did not go away; remove them with "
                                   "`ip link del NAME` and rerun")
            time.sleep(0.2)


def kill_namespace(ns: str, grace: float = 5.0) -> None:
    """Every process of the namespace: TERM, then KILL what is left after ``grace``."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        pids = sh("ip", "netns", "pids", ns, check=False).stdout.split()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), sig)
        deadline = time.monotonic() + wait
        while pids and time.monotonic() < deadline:
            time.sleep(0.1)
            pids = sh("ip", "netns", "pids", ns, check=False).stdout.split()
        if not pids:
            return


def python_environments_under_tmp() -> list[Path]:
    """The tests' Python environment (a venv, and the interpreter it was made from) where it lies under
    /tmp, which a node with a /tmp of its own would not see."""
    found: list[Path] = []
    for prefix in sorted({Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}):
        if prefix.is_relative_to("/tmp") and not any(prefix.is_relative_to(f) for f in found):
            found.append(prefix)
    return found


def private_tmp_script(hold: Path) -> str:
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


def node_argv(namespace: str, script: str, *args: str) -> list[str]:
    """``sh -c script sh args...`` inside the node's network namespace, in a mount and UTS namespace of
    its own (so it may bind its /etc/hosts and /tmp and set its hostname). nsenter keeps the host's /sys
    (slurmd's cgroup plugin wants /sys/fs/cgroup)."""
    return ["nsenter", f"--net=/run/netns/{namespace}", "unshare", "--mount", "--uts", "--propagation", "private",
            "--", "sh", "-c", script, "sh", *args]


def hosts_file(path: Path, names: dict[str, str]) -> Path:
    """An /etc/hosts for the nodes: each name resolving to its address, as a cluster's DNS would."""
    path.write_text("127.0.0.1 localhost\n" + "".join(f"{a} {n}\n" for n, a in names.items()))
    return path
