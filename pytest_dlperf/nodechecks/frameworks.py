"""Does every node have the backend's framework, in one version? Asked of the nodes by a probe
(``node/workloads/nodefacts.py --frameworks``); the harness never imports a framework itself."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..clusters.base import Cluster, Node, NodeCommand, NodeOutput
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


@dataclass
class Probed:
    """What the probe printed on each node: import name -> {"dist", "version"} or None; the nodes
    whose probe did not print (their output: exit code and tail); what stopped the run itself
    (``error``) and what went wrong after it (an unreadable line, the sweep: ``later``)."""

    found: dict[str, dict[str, dict | None]] = field(default_factory=dict)
    failed: dict[str, NodeOutput] = field(default_factory=dict)
    error: str | None = None
    later: list[str] = field(default_factory=list)


def probe(cluster: Cluster, nodes: list[Node], names: list[str], log_dir: Path, *, name: str = "frameworks",
          tag: str = "dlperf-fw") -> Probed:
    """Run the probe for ``names`` on every node at once (each node's own ``python``) and read its
    one JSON line from each node's output."""
    runs = cluster.run_everywhere(nodes, lambda node, run_dir, script: NodeCommand(
        node, [node.python, script, "--frameworks", *names], cwd=run_dir), log_dir, TIMEOUT, name=name,
        tag=tag, script=PROBE, expect=MARK)
    out = Probed(error=runs.error or None)
    try:
        for node, got in runs.outputs.items():
            lines = [ln for ln in got.text.splitlines() if ln.startswith(MARK)]
            if got.returncode != 0 or not lines:
                out.failed[node] = got
                continue
            out.found[node] = json.loads(lines[-1][len(MARK):])
    except ValueError as exc:
        out.later.append(str(exc))
    out.later.extend(runs.sweep_errors)
    return out


def check(cluster: Cluster, nodes: list[Node], framework: str, log_dir: Path) -> FrameworkCheck:
    """Whether every node has ``framework``, in one version (``probe``)."""
    got = probe(cluster, nodes, [framework], log_dir)
    out = FrameworkCheck(framework, {node: f.get(framework) for node, f in got.found.items()})
    out.errors = [*([got.error] if got.error else []),
                  *(f"{node}: the framework probe failed ({o.tail(5)})" for node, o in got.failed.items()), *got.later]
    return out
