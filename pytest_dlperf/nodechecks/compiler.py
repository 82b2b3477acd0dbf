"""Does every node of a compiled case have the compiler torch.compile's inductor runs there? On CPU nodes
the C++ compiler of its generated kernels, on GPU nodes the C compiler Triton builds its launcher with;
asked of the nodes by a probe (``node/workloads/nodefacts.py --compiler``), before the case's first launch,
so that a node without one is named with the line that installs it, not found by a failed compile."""
from __future__ import annotations

from pathlib import Path

from ..clusters.base import Cluster, Node, NodeCommand
from ..node.workloads.nodefacts import COMPILER_MARK
from .frameworks import PROBE, TIMEOUT

INSTALL = {"cpu": "apt-get install g++ (Debian, Ubuntu) or dnf install gcc-c++ (RHEL, Fedora), or set CXX to a C++ "
                  "compiler that runs there",
           "gpu": "apt-get install gcc (Debian, Ubuntu) or dnf install gcc (RHEL, Fedora), or set CC to a C compiler "
                  "that runs there"}


def check(cluster: Cluster, nodes: list[Node], log_dir: Path) -> tuple[str, str] | None:
    """("skip", why) naming the nodes without the compiler and the install line; ("fail", why) where the
    probe itself failed; None when every node has one."""
    kind = "gpu" if nodes and nodes[0].gpus else "cpu"
    runs = cluster.run_everywhere(nodes, lambda node, run_dir, script: NodeCommand(
        node, [node.python, script, "--compiler", kind], cwd=run_dir), log_dir, TIMEOUT, name="compiler",
        tag="dlperf-cc", script=PROBE, expect=COMPILER_MARK)
    found, broken = runs.marked(COMPILER_MARK, "compiler")
    if broken:
        return "fail", "torch.compile's compiler check failed: " + "; ".join(broken)
    missing = [node for node, f in found.items() if not f.get("path")]
    if not missing:
        return None
    what = "C++ compiler of its CPU kernels" if kind == "cpu" else "C compiler Triton builds its launcher with"
    return "skip", (f"torch.compile (inductor) needs the {what} ({found[missing[0]]['needs']}), and "
                    f"{', '.join(missing)} has none: install one there: {INSTALL[kind]}")
