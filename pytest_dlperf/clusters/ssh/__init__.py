"""The SSH cluster kind: static nodes reached with paramiko (one connection per node, parallel
exec/upload, a watchdog per remote launch, preflight, leases).

Its names load on first use: the kind's options (``.options``) are read in every pytest session,
which must not import paramiko for it."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names

if TYPE_CHECKING:
    from .cluster import SSHCluster
    from .connect import SSHSettings

__all__ = ["SSHCluster", "SSHSettings"]
_HOMES = {"SSHCluster": ".cluster", "SSHSettings": ".connect"}

__getattr__ = lazy_names(__name__, _HOMES)
