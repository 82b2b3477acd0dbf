"""Preflight for launchers that start every node from node 0 (horovodrun, perseusrun, mpirun):
can node 0 log in to each other node over SSH, without a password, the way the launcher will?"""
from __future__ import annotations

import shlex
import time
import uuid
from pathlib import Path

from ..clusters.base import RUN_TAG_ENV, Cluster, ClusterError, Node, NodeCommand, stop_everything

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
    log_dir.mkdir(parents=True, exist_ok=True)
    head, others = nodes[0], nodes[1:]
    tag = f"dlperf-reach-{uuid.uuid4().hex}"
    proc = None
    try:
        run_dir = cluster.make_run_dir(head, f"reach-{uuid.uuid4().hex[:8]}")
        access = cluster.span_access(nodes, run_dir)
        if not access.preflight:
            return None
        ssh = shlex.join(ssh_argv(access.ssh_port, access.ssh_identity))
        script = "".join(f"{ssh} {shlex.quote(n.address)} true </dev/null || echo {MARK}{shlex.quote(n.name)} $?\n"
                         for n in others)
        proc = cluster.start(NodeCommand(head, ["bash", "-c", script], {RUN_TAG_ENV: tag, **access.env},
                                         cwd=run_dir), log_dir / f"{head.name}.log")
        deadline = time.monotonic() + TIMEOUT
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.1)  # a remote node's output may land a moment after its exit code
        text = (log_dir / f"{head.name}.log").read_text(errors="replace")
    except (ClusterError, OSError) as exc:
        return "fail", f"could not check that {head.name} reaches the other nodes over SSH: {exc}"
    finally:
        stop_everything(cluster, [head], tag, [proc] if proc else [])
    if proc.poll() is None:
        return "fail", f"{head.name} did not finish logging in to the other nodes within {TIMEOUT:.0f} s"
    bad = [ln[len(MARK):].split()[0] for ln in text.splitlines() if ln.startswith(MARK)]
    if not bad:
        return None
    how = f"`{ssh} <address> true`"
    return "fail", (f"{head.name} cannot log in to {', '.join(bad)} over SSH without a password, and the "
                    f"launcher starts them that way ({how} failed):\n{proc.tail(10)}\nFix: put a key of "
                    f"{head.name}'s user in the other nodes' authorized_keys (or pass --dlperf-ssh-node-key "
                    "FILE, a key file on node 0)")
