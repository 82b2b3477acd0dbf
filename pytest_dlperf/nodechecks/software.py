"""What software each node runs training with: its interpreter, distributions and training variables,
asked of every node at once by ``node/workloads/nodefacts.py --software`` (run with the node's own
``python``, or a side's), for the case's software identity (``software.py``)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..clusters.base import Cluster, Node, NodeCommand
from ..node.workloads.nodefacts import SOFTWARE_CONTRACT, SOFTWARE_MARK
from ..software.identity import NodeSoftware
from .frameworks import PROBE

TIMEOUT = 60.0


@dataclass
class SoftwareProbe:
    """Per node: its software (``found``); what kept a node from saying (``errors``, one line each)."""

    found: dict[str, NodeSoftware] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def probe(cluster: Cluster, nodes: list[Node], log_dir: Path, env: dict[str, str] | None = None) -> SoftwareProbe:
    """Run the probe on every node at once with each node's ``python`` and the variables ``env`` adds
    (an A/B side's); read its one JSON line from each."""
    runs = cluster.run_everywhere(nodes, lambda node, run_dir, script: NodeCommand(
        node, [node.python, script, "--software"], dict(env or {}), cwd=run_dir), log_dir, TIMEOUT, name="software",
        tag="dlperf-sw", script=PROBE, expect=SOFTWARE_MARK)
    out = SoftwareProbe(errors=[runs.error] if runs.error else [])
    for node, got in runs.outputs.items():
        lines = [ln for ln in got.text.splitlines() if ln.startswith(SOFTWARE_MARK)]
        if got.returncode != 0 or not lines:
            out.errors.append(f"{node}: the software probe did not answer (exit {got.returncode}: "
                              f"{' '.join(got.tail(3).split()) or 'no output'})")
            continue
        try:
            d = json.loads(lines[-1][len(SOFTWARE_MARK):])
            if d.get("contract") != SOFTWARE_CONTRACT:
                raise ValueError(f"contract {d.get('contract')!r}, expected {SOFTWARE_CONTRACT}")
            out.found[node] = NodeSoftware.from_dict(d)
        except ValueError as exc:
            out.errors.append(f"{node}: the software probe's line cannot be read: {exc}")
    out.errors.extend(runs.sweep_errors)
    return out
