"""Preflight for launchers that start every node from node 0 (horovodrun, perseusrun, mpirun):
can node 0 log in to each other node over SSH, without a password, the way the launcher will?"""
from __future__ import annotations

import shlex
from pathlib import Path

from ..clusters.base import Cluster, Node, NodeCommand

TIMEOUT = 60.0
MARK = "DLPERF-UNREACHABLE "


def ssh_argv(port: int | None, identity: str | None) -> list[str]:
    """The client command the launchers use, as they use it (no host key check), but a password
    prompt is a failure rather than a hang, and node 0's known_hosts is left alone."""
    argv = ["ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
            "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=10"]
    if port:
        argv += ["-p", str(port)]
    if identity:
        argv += ["-i", identity]
    return argv


def check(cluster: Cluster, nodes: list[Node], log_dir: Path) -> tuple[str, str] | None:
    """None when node 0 reaches every other node; else ("fail", why) naming the nodes and the fix."""
    head, others = nodes[0], nodes[1:]
    ssh = ""

    def command(node: Node, run_dir: str, script: str) -> NodeCommand | None:
        nonlocal ssh
        access = cluster.span_access(nodes, run_dir)
        if not access.check_reach:
            return None
        ssh = shlex.join(ssh_argv(access.ssh_port, access.ssh_identity))
        lines = "".join(f"{ssh} {shlex.quote(n.address)} true </dev/null || echo {MARK}{shlex.quote(n.name)} $?\n"
                        for n in others)
        return NodeCommand(node, ["bash", "-c", lines], dict(access.env), cwd=run_dir)

    runs = cluster.run_everywhere([head], command, log_dir, TIMEOUT, name="reach", tag="dlperf-reach", linger=0.1)
    if runs.error:
        return "fail", f"could not check that {head.name} reaches the other nodes over SSH: {runs.error}"
    got = runs.outputs.get(head.name)
    if got is None:  # the cluster starts the other nodes itself (span_access.check_reach false)
        return None
    if got.returncode is None:
        return "fail", f"{head.name} did not finish logging in to the other nodes within {TIMEOUT:.0f} s"
    bad = [ln[len(MARK):].split()[0] for ln in got.text.splitlines() if ln.startswith(MARK)]
    if not bad:
        return None
    how = f"`{ssh} <address> true`"
    return "fail", (f"{head.name} cannot log in to {', '.join(bad)} over SSH without a password, and the "
                    f"launcher starts them that way ({how} failed):\n{got.tail(10)}\nFix: put a key of "
                    f"{head.name}'s user in the other nodes' authorized_keys (or pass --dlperf-ssh-node-key "
                    "FILE, a key file on node 0)")
