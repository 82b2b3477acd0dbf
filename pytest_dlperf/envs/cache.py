"""The side environments' caches on every node of a cluster, listed or pruned through the cluster's own
channel (``pytest ... --dlperf-env-list``, ``--dlperf-env-prune D``; ``dlperf env list|prune -- ARGS``): the
node script ``node/makeenv.py`` answers on each node, as it makes them."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..clusters.base import Cluster, Node, NodeCommand
from ..node.makeenv import MARK
from .make import SCRIPT

TIMEOUT = 300.0  # listing sizes a cache; pruning removes environments of a few GB


@dataclass
class NodeCache:
    """One node's answer: its environments (listed or removed), or why it gave none."""

    node: str
    envs: list[dict] = field(default_factory=list)
    error: str | None = None


def lines(verb: str, caches: list[NodeCache]) -> list[str]:
    """What the terminal says: a line per environment, each node's total, and each node that did not answer."""
    out: list[str] = []
    for c in caches:
        if c.error is not None:
            out.append(f"dlperf env {verb}: node {c.node}: {c.error}")
            continue
        for env in c.envs:
            what = " ".join(env.get("requirements", [])) or "(nothing installed)"
            if verb == "list":
                used = time.strftime("%Y-%m-%d %H:%M", time.localtime(env["last_used"]))
                out.append(f"{c.node}: {env['path']}  {env.get('builder', '?')}  {what}  {env['bytes'] / 2**20:.1f} MiB  "
                           f"last used {used}")
            else:
                out.append(f"{c.node}: removed {env['path']} ({what})")
        size = sum(e.get("bytes", 0) for e in c.envs) / 2**20
        out.append(f"{c.node}: {len(c.envs)} environment(s) {'cached' if verb == 'list' else 'removed'}, {size:.1f} MiB")
    return out


def on_every_node(cluster: Cluster, nodes: list[Node], cache: str, older_than: float | None,
                  log_dir: Path) -> tuple[list[str], bool]:
    """List (``older_than`` None) or prune the cache on every node at once: the terminal's lines, and whether
    every node answered."""
    verb = "list" if older_than is None else "prune"
    runs = cluster.run_everywhere(
        nodes, lambda node, run_dir, script: NodeCommand(
            node, [node.python, script, verb, "--cache", cache,
                   *(["--older-than", str(older_than)] if older_than is not None else [])], cwd=run_dir),
        log_dir, TIMEOUT, name="envcache", tag="dlperf-envcache", script=SCRIPT, expect=MARK)
    caches = [_answer(name, out.returncode, out.text, out.tail(3)) for name, out in runs.outputs.items()]
    if runs.error:
        caches.append(NodeCache("(cluster)", error=runs.error))
    said = lines(verb, caches) + [f"dlperf env {verb}: {e}" for e in runs.sweep_errors]
    return said, not (runs.error or runs.sweep_errors or any(c.error for c in caches))


def _answer(node: str, returncode: int | None, text: str, tail: str) -> NodeCache:
    got = [ln[len(MARK):] for ln in text.splitlines() if ln.startswith(MARK)]
    if returncode != 0 or not got:
        return NodeCache(node, error=f"no answer (exit {returncode}: {' '.join(tail.split()) or 'no output'})")
    return NodeCache(node, json.loads(got[-1]))
