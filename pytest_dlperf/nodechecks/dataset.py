"""Does every node of a real-data case hold the same dataset at --dlperf-data-dir? Asked of the nodes at once
by ``node/workloads/dataset.py index DIR`` (its file count and a digest over every file's path and size)
before the case's first launch: a node that lacks it, lacks the case's format, or holds another one is named
with the fix, instead of a launch that fails or measures different data on one node."""
from __future__ import annotations

import json
from pathlib import Path

from ..clusters.base import Cluster, Node, NodeCommand
from ..node.workloads.dataset import INDEX_MARK
from .frameworks import TIMEOUT

PROBE = Path(__file__).resolve().parents[1] / "node" / "workloads" / "dataset.py"
MAKE = "dlperf data make imagenet {dir}"


def check(cluster: Cluster, nodes: list[Node], directory: str, fmt: str, log_dir: Path) -> str | None:
    """One line naming each node without the dataset (or without ``fmt`` in it) or whose index differs from
    node 0's, with the fix; None when every node holds the same dataset of that format."""
    runs = cluster.run_everywhere(nodes, lambda node, run_dir, script: NodeCommand(
        node, [node.python, script, "index", directory], cwd=run_dir), log_dir, TIMEOUT, name="dataset",
        tag="dlperf-data", script=PROBE, expect=INDEX_MARK)
    found, broken = {}, [runs.error] if runs.error else []
    for node, got in runs.outputs.items():
        lines = [ln for ln in got.text.splitlines() if ln.startswith(INDEX_MARK)]
        if got.returncode != 0 or not lines:
            broken.append(f"{node}: the dataset probe failed ({got.tail(5)})")
            continue
        found[node] = json.loads(lines[-1][len(INDEX_MARK):])
    if broken:
        return "the dataset check failed: " + "; ".join(broken)
    return judge(found, [n.name for n in nodes], directory, fmt)


def judge(found: dict[str, dict], nodes: list[str], directory: str, fmt: str) -> str | None:
    """The check's line from every node's index (``dataset.index``), node 0 first; None: all hold the same."""
    make = MAKE.format(dir=directory)
    missing = [n for n in nodes if found[n].get("missing")]
    if missing:
        return (f"--dlperf-data-dir {directory} does not exist on {', '.join(missing)}: make it there "
                f"(`{make}`, the same command on every node gives the same dataset) or copy it")
    lacking = [n for n in nodes if fmt not in found[n].get("formats", [])]
    if lacking:
        return (f"--dlperf-data-dir {directory} on {', '.join(lacking)} holds no {fmt} data (found: "
                f"{', '.join(found[lacking[0]].get('formats') or ['nothing known'])}): `{make}` writes every format")
    differ = [n for n in nodes[1:] if found[n]["digest"] != found[nodes[0]]["digest"]]
    if differ:
        shown = "; ".join(f"{n}: {found[n]['files']} files, {found[n]['bytes']} bytes, index {found[n]['digest']}"
                          for n in [nodes[0], *differ])
        return (f"--dlperf-data-dir {directory} differs between nodes ({shown}): every node must hold the same "
                "dataset; make it again on the differing nodes or copy node 0's")
    return None
