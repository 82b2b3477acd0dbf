"""The Slurm cluster kind: an allocation's nodes (the caller's, or one allocated with salloc and
cancelled at the end), every command a job step started with srun.

Its names load on first use: the kind's options (``.options``) are read in every pytest session,
which must not import the cluster (paramiko, filelock) for it."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names

if TYPE_CHECKING:
    from .allocation import Allocation
    from .cluster import SlurmCluster
    from .commands import AllocationSpec, SlurmError

__all__ = ["Allocation", "AllocationSpec", "SlurmCluster", "SlurmError"]
_HOMES = {"Allocation": ".allocation", "SlurmCluster": ".cluster", "AllocationSpec": ".commands",
          "SlurmError": ".commands"}

__getattr__ = lazy_names(__name__, _HOMES)
