"""What the readiness checks found, as one result the hub, the judge, the reports and the xdist parts read:
each node's best hardware fingerprint and framework versions, and per case its baseline context. The checks
write it; nothing else reaches into them."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..nodechecks import hardware
from .contexts import BaselineContext


@dataclass
class Found:
    """The session's readiness result: per node the best fingerprint and the framework versions; per case
    (by name) the baseline context its file resolved (None: none to gate against)."""

    fingerprints: hardware.Fingerprints | None = None
    node_frameworks: dict[str, dict[str, str]] = field(default_factory=dict)  # node -> framework -> version
    contexts: dict[str, BaselineContext | None] = field(default_factory=dict)

    def context(self, name: str) -> BaselineContext | None:
        """The case's baseline context (None before its readiness checks, or where it has none)."""
        return self.contexts.get(name)

    def probes(self) -> list[dict]:
        """Each node's best probe so far, in node order (none before the first probe)."""
        return list(self.fingerprints.nodes.values()) if self.fingerprints else []

    def keep(self, fp: hardware.Fingerprints) -> None:
        """Fold fingerprints into the session's: per node, the best probe seen so far."""
        if self.fingerprints is None:
            self.fingerprints = fp
        else:
            self.fingerprints.merge(fp)

    def to_part(self) -> dict[str, Any]:
        """An xdist worker's share of it (``merge_part`` folds it into the controller's)."""
        return {"fingerprints": self.fingerprints.to_dict() if self.fingerprints else None,
                "node_frameworks": self.node_frameworks}

    def merge_part(self, part: dict[str, Any]) -> None:
        """A worker's share: its nodes' versions added, each node's best fingerprint kept."""
        for node, fws in (part.get("node_frameworks") or {}).items():
            self.node_frameworks.setdefault(node, {}).update(fws)
        if part.get("fingerprints"):  # each worker probed the nodes
            self.keep(hardware.Fingerprints.from_dict(part["fingerprints"]))

    def environment(self) -> dict[str, Any]:
        """Its part of results.json's ``environment``."""
        return {"hardware_fingerprints": self.fingerprints.to_dict() if self.fingerprints else None,
                "node_frameworks": self.node_frameworks}
