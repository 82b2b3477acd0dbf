"""The shape a Ray session's nodes will have, from the options alone where they say it (no connection
while pytest collects); where they do not, the nodes are the Ray cluster's own, known once attached."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..shape import ClusterShape

if TYPE_CHECKING:
    from ...options.core import RunOptions


def ray_shape(options: RunOptions) -> ClusterShape | None:
    """With --nodes, the shape from the options alone (CPU nodes unless --dlperf-devices says gpu, the
    same option that makes the cluster pick GPU nodes); without, None: the nodes are the Ray cluster's
    own, known only once attached, so the cluster is attached while pytest collects and the ladder
    climbs to them."""
    if not options.nodes:
        return None
    return ClusterShape(nodes=options.nodes, slots=options.gpus_per_node or 1, gpus=options.devices == "gpu",
                        source="--nodes, --dlperf-gpus-per-node, --dlperf-devices")
