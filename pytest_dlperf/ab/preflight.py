"""Before a case's first pair: a side with its own interpreter has it on every node, with the
case's frameworks, each in one version; else the case fails naming the side and the node."""
from __future__ import annotations

import json
from pathlib import Path

from ..clusters.base import Cluster, Node, NodeCommand
from ..node.workloads.nodefacts import MARK
from ..preflight.frameworks import PROBE, TIMEOUT
from .sides import Side


class SideNotReady(RuntimeError):
    """A side cannot run on a node: names the side, the node and the fix."""


def check_side(cluster: Cluster, side: Side, nodes: list[Node], frameworks: tuple[str, ...], log_dir: Path) -> None:
    """Probe the side's interpreter on ``nodes`` for ``frameworks``; keep node 0's versions on the side."""
    if side.spec.python is None:
        return
    where = f"--dlperf-{side.spec.role} python={side.spec.python}"
    runs = cluster.run_everywhere(side.nodes(nodes), lambda node, run_dir, script: NodeCommand(
        node, [node.python, script, "--frameworks", *frameworks], cwd=run_dir), log_dir, TIMEOUT,
        name=f"side-{side.spec.role}", tag="dlperf-side", script=PROBE, expect=MARK)
    if runs.error:
        raise SideNotReady(f"{where}: the probe could not run: {runs.error}")
    found: dict[str, dict] = {}
    for name, got in runs.outputs.items():
        lines = [ln for ln in got.text.splitlines() if ln.startswith(MARK)]
        if got.returncode != 0 or not lines:
            tail = " ".join(got.tail(3).split())
            raise SideNotReady(f"{where}: on node {name} the interpreter did not run (exit {got.returncode}: "
                               f"{tail or 'no output'}): give a python that exists on every node")
        try:
            found[name] = json.loads(lines[-1][len(MARK):])
        except ValueError as exc:
            raise SideNotReady(f"{where}: on node {name} the probe's output is not JSON ({exc})") from None
    for fw in frameworks:
        missing = [n for n, f in found.items() if not f.get(fw)]
        if missing:
            raise SideNotReady(f"{where}: {fw} is not installed for that python on {', '.join(missing)}: "
                               f"install it there ({side.spec.python} -m pip install ...) or name another python")
        versions = {n: str(f[fw].get("version")) for n, f in found.items()}
        if len(set(versions.values())) > 1:
            shown = ", ".join(f"{n} {v}" for n, v in versions.items())
            raise SideNotReady(f"{where}: {fw} differs between nodes ({shown}): install one version everywhere")
        side.frameworks[fw] = next(iter(versions.values()))
    if runs.sweep_errors:
        raise SideNotReady(f"{where}: " + "; ".join(runs.sweep_errors))
