"""The shape a Slurm session's nodes will have, read from the options and the allocation's
environment variables alone: no salloc, no squeue, no srun (collecting starts no allocation)."""
from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..shape import ClusterShape

if TYPE_CHECKING:
    from ...options.core import RunOptions
    from .options import SlurmOptions

_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def count_hosts(nodelist: str) -> int | None:
    """How many hosts a Slurm hostlist names (``n[1-3,7],gpu01`` -> 5), or None for one it cannot read."""
    entries, depth, start = [], 0, 0
    for i, ch in enumerate(nodelist):
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            entries.append(nodelist[start:i])
            start = i + 1
    entries.append(nodelist[start:])
    total = 0
    for entry in entries:
        count = 1
        for group in re.findall(r"\[([^\]]*)\]", entry):
            ranges = [_RANGE.match(r.strip()) for r in group.split(",")]
            if not all(ranges):
                return None
            count *= sum(int(m.group(2) or m.group(1)) - int(m.group(1)) + 1 for m in ranges if m)
        if not entry.strip() or count < 1:
            return None
        total += count
    return total


def _gpus_in(env: Mapping[str, str]) -> int:
    """The GPUs per node an allocation was granted (``SLURM_GPUS_PER_NODE=[type:]N``), 0 when it does not say."""
    for name in ("SLURM_GPUS_PER_NODE", "SLURM_GPUS_ON_NODE"):
        m = re.search(r"(\d+)$", env.get(name, "").strip())
        if m:
            return int(m.group(1))
    return 0


def slurm_shape(options: RunOptions, slurm: SlurmOptions, env: Mapping[str, str] | None = None) -> ClusterShape:
    """Inside an allocation (SLURM_JOB_ID): its node count and GPUs as its variables give them;
    otherwise what the harness will ask salloc for (--nodes, default 1; --dlperf-slurm-gpus-per-node)."""
    env = os.environ if env is None else env
    if env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID"):
        given = env.get("SLURM_JOB_NUM_NODES") or env.get("SLURM_NNODES") or ""
        nodelist = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST") or ""
        count = int(given) if given.isdigit() else count_hosts(nodelist) if nodelist else None
        gpus, source = _gpus_in(env), "the allocation's SLURM_JOB_NUM_NODES/SLURM_JOB_NODELIST, SLURM_GPUS_PER_NODE"
    else:
        count, gpus = None, slurm.gpus_per_node or 0
        source = "the allocation asked for: --nodes (default 1), --dlperf-slurm-gpus-per-node"
    nodes = options.nodes or count or 1
    return ClusterShape(nodes=nodes, slots=options.gpus_per_node or gpus or 1, gpus=gpus > 0,
                        source=source + ", --dlperf-gpus-per-node")
