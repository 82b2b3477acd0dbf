"""Does every node have the backend's framework, in one version? Asked of the nodes by a probe
(``node/workloads/nodefacts.py --frameworks``); the harness never imports a framework itself."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..clusters.base import Cluster, Node, NodeCommand
from ..node.workloads.nodefacts import MARK

PROBE = Path(__file__).resolve().parents[1] / "node" / "workloads" / "nodefacts.py"
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
    runs = cluster.run_everywhere(nodes, lambda node, run_dir, script: NodeCommand(
        node, [node.python, script, "--frameworks", framework], cwd=run_dir), log_dir, TIMEOUT, name="frameworks",
        tag="dlperf-fw", script=PROBE, expect=MARK)
    out = FrameworkCheck(framework)
    if runs.error:
        out.errors.append(runs.error)
    try:
        for name, got in runs.outputs.items():
            lines = [ln for ln in got.text.splitlines() if ln.startswith(MARK)]
            if got.returncode != 0 or not lines:
                out.errors.append(f"{name}: the framework probe failed ({got.tail(5)})")
                continue
            out.found[name] = json.loads(lines[-1][len(MARK):]).get(framework)
    except ValueError as exc:
        out.errors.append(str(exc))
    out.errors.extend(runs.sweep_errors)
    return out
