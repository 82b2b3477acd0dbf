"""Does every node have the backend's framework, in one version? Asked of the nodes by a probe
(``node/fwprobe.py``); the harness never imports a framework itself."""
from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from ..clusters.base import RUN_TAG_ENV, Cluster, ClusterError, Node, NodeCommand, stop_everything
from ..node.fwprobe import MARK

PROBE = Path(__file__).resolve().parents[1] / "node" / "fwprobe.py"
TIMEOUT = 60.0


@dataclass
class FrameworkCheck:
    """Per node: the framework's distribution and version (None: not installed)."""

    framework: str
    found: dict[str, dict | None] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    @property
    def missing(self) -> list[str]:
        return [n for n, f in self.found.items() if f is None]

    @property
    def versions(self) -> dict[str, str]:
        return {n: str(f.get("version")) for n, f in self.found.items() if f}

    def problem(self, install: str) -> tuple[str, str] | None:
        """("skip", why) when a node lacks the framework, ("fail", why) when versions differ."""
        if self.errors:
            return "fail", f"framework check of {self.framework!r} failed: " + "; ".join(self.errors)
        if self.missing:
            return "skip", (f"{self.framework} is not installed on {', '.join(self.missing)}: install it "
                            f"there with {install}")
        if len(set(self.versions.values())) > 1:
            shown = ", ".join(f"{n} {self.found[n]['dist']} {v}" for n, v in self.versions.items())
            return "fail", (f"{self.framework} differs between nodes ({shown}): install one version on "
                            f"every node ({install})")
        return None


def check(cluster: Cluster, nodes: list[Node], framework: str, log_dir: Path) -> FrameworkCheck:
    """Run the probe on every node at once and read its one JSON line from each node's output."""
    log_dir.mkdir(parents=True, exist_ok=True)
    out = FrameworkCheck(framework)
    tag, run_id = f"dlperf-fw-{uuid.uuid4().hex}", f"frameworks-{uuid.uuid4().hex[:8]}"
    procs = []
    try:
        for node in nodes:
            run_dir = cluster.make_run_dir(node, run_id)
            script = cluster.upload(node, PROBE, run_dir)
            cmd = NodeCommand(node, [node.python, script, framework], {RUN_TAG_ENV: tag}, cwd=run_dir)
            procs.append((node, cluster.start(cmd, log_dir / f"{node.name}.log")))
        deadline = time.monotonic() + TIMEOUT
        while any(p.poll() is None for _, p in procs) and time.monotonic() < deadline:
            time.sleep(0.05)
        for node, p in procs:
            lines: list[str] = []
            for _ in range(20):  # a remote node's output may land a moment after its exit code
                lines = [ln for ln in (log_dir / f"{node.name}.log").read_text(errors="replace").splitlines()
                         if ln.startswith(MARK)]
                if lines or p.poll() is None:
                    break
                time.sleep(0.05)
            if p.poll() != 0 or not lines:
                out.errors.append(f"{node.name}: the framework probe failed ({p.tail(5)})")
                continue
            out.found[node.name] = json.loads(lines[-1][len(MARK):]).get(framework)
    except (ClusterError, OSError, ValueError) as exc:
        out.errors.append(str(exc))
    finally:
        out.errors.extend(stop_everything(cluster, nodes, tag, [p for _, p in procs]))
    return out
