"""Hardware fingerprints of the nodes: run ``node/hwprobe.py`` on every node at once, read back its JSON.

The probe runs on all nodes of the cluster together (on the local cluster: every node's cores
busy at the same time, as in the widest case), through the cluster's own ``start`` and clean-up,
so it is pinned like the workloads and leaves no process behind. A node whose probe fails gives
no fingerprint and a note; the session goes on (the gate then says it could not compare machines).
"""
from __future__ import annotations

import hashlib
import json
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from ..clusters.base import RUN_TAG_ENV, Cluster, ClusterError, NodeCommand, NodeProcess, stop_everything


PROBE = Path(__file__).resolve().parents[1] / "node" / "hwprobe.py"
PROBE_SECONDS = 1.5
PROBE_TIMEOUT = 120.0


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


def probe_command(node, run_dir: str, script: str, tag: str, seconds: float = PROBE_SECONDS) -> NodeCommand:
    """The probe's command on one node (shown by the dry-run like any other)."""
    argv = [node.python, script, "--seconds", f"{seconds:g}", "--output", str(Path(run_dir) / "hwprobe.json")]
    return NodeCommand(node, argv, {RUN_TAG_ENV: tag}, cwd=run_dir)


def measure(cluster: Cluster, log_dir: Path, seconds: float = PROBE_SECONDS,
            timeout: float = PROBE_TIMEOUT) -> Fingerprints:
    """Probe every node of the cluster at once; never raises for a node's failure (see ``errors``)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    nodes = cluster.nodes()
    tag = f"dlperf-probe-{uuid.uuid4().hex}"
    run_id = f"hwprobe-{uuid.uuid4().hex[:8]}"
    out = Fingerprints()
    procs: list[tuple[NodeCommand, NodeProcess]] = []
    try:
        cmds = []
        for node in nodes:
            run_dir = cluster.make_run_dir(node, run_id)
            script = cluster.upload(node, PROBE, run_dir)
            cmds.append(probe_command(node, run_dir, script, tag, seconds))
        (log_dir / "commands.sh").write_text("\n".join(cluster.render(c) for c in cmds) + "\n")
        for cmd in cmds:
            procs.append((cmd, cluster.start(cmd, log_dir / f"{cmd.node.name}.log")))
        deadline = time.monotonic() + timeout
        while any(p.poll() is None for _, p in procs) and time.monotonic() < deadline:
            time.sleep(0.1)
        for cmd, p in procs:
            name = cmd.node.name
            code = p.poll()
            if code != 0:
                state = "timed out" if code is None else f"exit code {code}"
                out.errors.append(f"{name}: hardware probe {state}: {p.tail(5)}")
                continue
            local = log_dir / f"{name}.json"
            try:
                cluster.download(cmd.node, str(Path(cmd.cwd or "") / "hwprobe.json"), local)
                doc = json.loads(local.read_text())
            except (OSError, ValueError) as exc:
                out.errors.append(f"{name}: hardware probe output unreadable: {exc}")
                continue
            if not isinstance(doc, dict) or "probe_version" not in doc:
                out.errors.append(f"{name}: hardware probe output is not a fingerprint")
                continue
            out.nodes[name] = doc
    except ClusterError as exc:
        out.errors.append(f"hardware probe not run: {exc}")
    finally:
        out.errors.extend(stop_everything(cluster, nodes, tag, [p for _, p in procs]))
    return out
