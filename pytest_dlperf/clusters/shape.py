"""What the case matrix needs of a cluster, its shape: how many nodes the ladder climbs to, the
slots per node, GPU or CPU nodes (the profile: precisions and each model's default sizes).

A cluster kind declares its shape from its options alone (no connection, no allocation, no
instance), so that collecting builds no cluster; the cluster built when the first case runs is
compared with that declaration (:func:`mismatch`), since a matrix built for other nodes would
measure cases the nodes do not have.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from .base import Node


@dataclass(frozen=True)
class ClusterShape:
    """The nodes the ladder climbs to, the slots (devices) per node, GPU or CPU nodes, and what said so."""

    nodes: int
    slots: int
    gpus: bool
    source: str = ""  # where the figures come from, for the mismatch line (e.g. "--dlperf-hosts")

    def __post_init__(self) -> None:
        if self.nodes < 1 or self.slots < 1:
            raise ValueError(f"a cluster shape needs at least one node with one slot, got {self.nodes}x{self.slots}")

    @property
    def devices(self) -> str:
        """``gpu`` or ``cpu``, as --dlperf-devices names them."""
        return "gpu" if self.gpus else "cpu"

    def describe(self) -> str:
        """``2 CPU node(s) x 1 slot(s)``."""
        return f"{self.nodes} {self.devices.upper()} node(s) x {self.slots} slot(s)"


def of_nodes(nodes: Sequence[Node], want: int | None, kind: str) -> ClusterShape:
    """The shape of built nodes, cut to ``want`` (--nodes; None: all of them); more nodes than
    there are, or more slots than a node has GPUs, is a usage error naming the option."""
    want = want or len(nodes)
    if want > len(nodes):
        raise pytest.UsageError(f"--nodes {want}: the {kind} cluster has "
                                f"{len(nodes)} node(s): {', '.join(n.name for n in nodes)}")
    for n in nodes[:want]:
        if n.gpus and n.slots > n.gpus:
            raise pytest.UsageError(f"--dlperf-gpus-per-node {n.slots}: node {n.name} has {n.gpus} GPU(s)")
    return ClusterShape(nodes=want, slots=min(n.slots for n in nodes[:want]), gpus=bool(nodes[0].gpus),
                        source="the nodes")


def mismatch(declared: ClusterShape, real: ClusterShape, kind: str) -> str | None:
    """One line when the nodes differ from the declared shape in what the matrix depends on: what the
    matrix assumed, what the nodes have, and the options that make the next session's matrix fit."""
    fixes = []
    if real.nodes != declared.nodes:
        fixes.append(f"--nodes {real.nodes}")
    if real.slots != declared.slots:
        fixes.append(f"--dlperf-gpus-per-node {real.slots}")
    if real.gpus != declared.gpus:
        fixes.append(f"--dlperf-devices {real.devices}")
    if not fixes:
        return None
    return (f"--dlperf-cluster {kind}: the case matrix was built for {declared.describe()} ({declared.source}), "
            f"but the nodes have {real.describe()}: run with {' '.join(fixes)}")
