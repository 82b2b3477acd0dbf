"""Hardware fingerprints of the nodes: run ``node/hwprobe.py`` on every node at once, read back its JSON.

The probe runs on all nodes of the cluster together (on the local cluster: every node's cores
busy at the same time, as in the widest case), through ``Cluster.run_everywhere`` (the cluster's
own ``start`` and clean-up), so it is pinned like the workloads and leaves no process behind. A
node whose probe fails gives no fingerprint and a note; the session goes on (the gate then says it
could not compare machines).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from ..clusters.base import Cluster, Node, NodeCommand, NodeOutput

PROBE = Path(__file__).resolve().parents[1] / "node" / "hwprobe.py"
PROBE_SECONDS = 1.5
PROBE_TIMEOUT = 120.0
OUTPUT = "hwprobe.json"  # the probe's file in its run directory


@dataclass
class Fingerprints:
    """Each node's fingerprint (node name -> probe JSON), in node order, and what went wrong."""

    nodes: dict[str, dict] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    @property
    def machine_id(self) -> str:
        """A short content hash: the id under which a baseline file keeps these fingerprints."""
        text = json.dumps(self.nodes, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def to_dict(self) -> dict:
        return {"nodes": self.nodes, "errors": self.errors}

    @classmethod
    def from_dict(cls, d: dict) -> Fingerprints:
        return cls(nodes=dict(d.get("nodes", {})), errors=list(d.get("errors", [])))

    def merge(self, other: Fingerprints) -> None:
        """Keep, per node, the better-performing probe of the two (see ``fingerprint.best_of``)."""
        from ..baselines.fingerprint import best_of

        self.nodes = best_of(self.nodes, other.nodes)
        self.errors.extend(e for e in other.errors if e not in self.errors)


def probe_command(node: Node, run_dir: str, script: str, seconds: float = PROBE_SECONDS) -> NodeCommand:
    """The probe's command on one node (shown by the dry-run like any other)."""
    argv = [node.python, script, "--seconds", f"{seconds:g}", "--output", str(Path(run_dir) / OUTPUT)]
    return NodeCommand(node, argv, cwd=run_dir)


def measure(cluster: Cluster, log_dir: Path, seconds: float = PROBE_SECONDS,
            timeout: float = PROBE_TIMEOUT) -> Fingerprints:
    """Probe every node of the cluster at once; never raises for a node's failure (see ``errors``)."""
    nodes = cluster.nodes()
    runs = cluster.run_everywhere(nodes, lambda node, run_dir, script: probe_command(node, run_dir, script, seconds),
                                  log_dir, timeout, name="hwprobe", tag="dlperf-probe", script=PROBE)
    out = Fingerprints()
    if runs.error:
        out.errors.append(f"hardware probe not run: {runs.error}")
    for name, got in runs.outputs.items():
        doc, error = _fingerprint(cluster, got, log_dir / f"{name}.json")
        if error:
            out.errors.append(f"{name}: {error}")
        else:
            out.nodes[name] = doc
    out.errors.extend(runs.sweep_errors)
    return out


def _fingerprint(cluster: Cluster, got: NodeOutput, local: Path) -> tuple[dict, str]:
    """(the node's fingerprint, "") copied to ``local``, or ({}, what went wrong)."""
    if got.returncode != 0:
        return {}, f"hardware probe {got.state}: {got.tail(5)}"
    try:
        cluster.download(got.node, str(Path(got.run_dir) / OUTPUT), local)
        doc = json.loads(local.read_text())
    except (OSError, ValueError) as exc:
        return {}, f"hardware probe output unreadable: {exc}"
    if not isinstance(doc, dict) or "probe_version" not in doc:
        return {}, "hardware probe output is not a fingerprint"
    return doc, ""
