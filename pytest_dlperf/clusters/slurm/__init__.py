"""The Slurm cluster kind: an allocation's nodes (the caller's, or one allocated with salloc and
cancelled at the end), every command a job step started with srun."""
from __future__ import annotations

from .allocation import Allocation
from .cluster import SlurmCluster
from .commands import AllocationSpec, SlurmError

__all__ = ["Allocation", "AllocationSpec", "SlurmCluster", "SlurmError"]
