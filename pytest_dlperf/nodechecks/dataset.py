"""Does every node of a real-data case hold the same dataset at --dlperf-data-dir? Asked of the nodes at once
by ``node/workloads/dataset.py index DIR`` (its file count and a digest over every file's path and size)
before the case's first launch: a node that lacks it, lacks the case's format, or holds another one is named
with the fix, instead of a launch that fails or measures different data on one node."""
from __future__ import annotations

from pathlib import Path

from ..clusters.base import Cluster, Node, NodeCommand
from ..node.workloads.dataset import INDEX_MARK

PROBE = Path(__file__).resolve().parents[1] / "node" / "workloads" / "dataset.py"
BUILDER = PROBE.with_name("datamake.py")
MAKE = "dlperf data make imagenet {dir}"
MAKE_TIMEOUT = 1800.0  # the default dataset builds in seconds; a large --images in minutes
INDEX_TIMEOUT = 600.0  # a stat of every file: ImageNet's 1.28 million on a cold disk or NFS takes minutes


def check(cluster: Cluster, nodes: list[Node], directory: str, fmt: str, log_dir: Path,
          make: bool = False) -> str | None:
    """One line naming each node without the dataset (or without ``fmt`` in it) or whose index differs from
    node 0's, with the fix; None when every node holds the same dataset of that format. With ``make``, the
    nodes that lack the directory build it first (``datamake.py``, deterministic: the same dataset on each)."""
    found = _indexes(cluster, nodes, directory, log_dir)
    if isinstance(found, str):
        return found
    lacking = [n for n in nodes if found[n.name].get("missing")]
    if make and lacking:
        problem = build(cluster, lacking, directory, log_dir / "make")
        if problem is not None:
            return problem
        found = _indexes(cluster, nodes, directory, log_dir / "again")
        if isinstance(found, str):
            return found
    return judge(found, [n.name for n in nodes], directory, fmt)


def build(cluster: Cluster, nodes: list[Node], directory: str, log_dir: Path) -> str | None:
    """``datamake.py imagenet DIR`` on every node of ``nodes`` at once, through the cluster's own channel
    (dataset.py uploaded beside it); a line naming each node where it failed, None when all built."""

    def command(node: Node, run_dir: str, script: str) -> NodeCommand:
        cluster.upload(node, PROBE, run_dir)  # the builder imports it
        return NodeCommand(node, [node.python, script, "imagenet", directory], cwd=run_dir)

    runs = cluster.run_everywhere(nodes, command, log_dir, MAKE_TIMEOUT, name="datamake", tag="dlperf-datamake",
                                  script=BUILDER)
    broken = [runs.error] if runs.error else []
    broken += [f"{node}: {got.tail(3)}" for node, got in runs.outputs.items() if got.returncode != 0]
    return f"making --dlperf-data-dir {directory} failed: " + "; ".join(broken) if broken else None


def _indexes(cluster: Cluster, nodes: list[Node], directory: str, log_dir: Path) -> dict[str, dict] | str:
    """Every node's ``dataset.index`` of ``directory``, or the line saying where the probe failed."""
    runs = cluster.run_everywhere(nodes, lambda node, run_dir, script: NodeCommand(
        node, [node.python, script, "index", directory], cwd=run_dir), log_dir, INDEX_TIMEOUT, name="dataset",
        tag="dlperf-data", script=PROBE, expect=INDEX_MARK)
    found, broken = runs.marked(INDEX_MARK, "dataset")
    if broken:
        return "the dataset check failed: " + "; ".join(broken)
    return found


def judge(found: dict[str, dict], nodes: list[str], directory: str, fmt: str) -> str | None:
    """The check's line from every node's index (``dataset.index``), node 0 first; None: all hold the same."""
    make = MAKE.format(dir=directory)
    missing = [n for n in nodes if found[n].get("missing")]
    if missing:
        return (f"--dlperf-data-dir {directory} does not exist on {', '.join(missing)}: make it there "
                f"(`{make}`, the same command on every node gives the same dataset; --dlperf-data-make makes it on "
                "every node that lacks it) or copy it")
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
