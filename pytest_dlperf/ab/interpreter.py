"""Before a case's first pair: a side with its own interpreter has it on every node, with the
case's frameworks, each in one version; else the case fails naming the side and the node."""
from __future__ import annotations

from pathlib import Path

from ..clusters.base import Cluster, Node
from ..nodechecks.frameworks import probe
from .sides import Side


class SideNotReady(RuntimeError):
    """A side cannot run on a node: names the side, the node and the fix."""


def check_side(cluster: Cluster, side: Side, nodes: list[Node], frameworks: tuple[str, ...], log_dir: Path) -> None:
    """Probe the side's interpreter on ``nodes`` for ``frameworks``; keep node 0's versions on the side."""
    if not side.own_python:
        return
    where = side.where
    got = probe(cluster, side.nodes(nodes), list(frameworks), log_dir, name=f"side-{side.spec.role}", tag="dlperf-side")
    if got.error:
        raise SideNotReady(f"{where}: the probe could not run: {got.error}")
    for name, out in got.failed.items():
        tail = " ".join(out.tail(3).split())
        raise SideNotReady(f"{where}: on node {name} the interpreter did not run (exit {out.returncode}: "
                           f"{tail or 'no output'}): give a python that exists on every node")
    if got.later:
        raise SideNotReady(f"{where}: " + "; ".join(got.later))
    for fw in frameworks:
        missing = [n for n, f in got.found.items() if not f.get(fw)]
        if missing:
            raise SideNotReady(f"{where}: {fw} is not installed for that python on {', '.join(missing)}: "
                               f"install it there ({side.node(nodes[0]).python} -m pip install ...) or name another python")
        versions = {n: str(f[fw].get("version")) for n, f in got.found.items()}
        if len(set(versions.values())) > 1:
            shown = ", ".join(f"{n} {v}" for n, v in versions.items())
            raise SideNotReady(f"{where}: {fw} differs between nodes ({shown}): install one version everywhere")
        side.frameworks[fw] = next(iter(versions.values()))
