"""The SSH cluster kind: static nodes reached with paramiko (one connection per node, parallel
exec/upload, a watchdog per remote launch, preflight, leases)."""
from __future__ import annotations

from .cluster import SSHCluster
from .connect import SSHSettings

__all__ = ["SSHCluster", "SSHSettings"]
