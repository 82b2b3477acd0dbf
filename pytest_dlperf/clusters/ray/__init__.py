"""The Ray cluster kind: the nodes of a running Ray cluster (KubeRay, Anyscale, ``ray up``), reached
through Ray (Ray Client from outside the cluster), one agent actor per node in a placement group.

Its names load on first use: the kind's options (``.options``) are read in every pytest session,
which must not import Ray for it (Ray is an extra: ``pip install 'pytest-dlperf[ray]'``)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names

if TYPE_CHECKING:
    from .cluster import RayCluster, RayProcess
    from .options import RayOptions

__all__ = ["RayCluster", "RayOptions", "RayProcess"]
_HOMES = {"RayCluster": ".cluster", "RayProcess": ".cluster", "RayOptions": ".options"}

__getattr__ = lazy_names(__name__, _HOMES)
