"""The session's software identities (``software.py``): each node set probed once before its first case
(``nodechecks/software.py``), the repository read once, and each case's identity made from them, its
files and what its runs report. Every identity made is kept for results.json (``table``)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from ..clusters.base import Cluster, Node
from ..nodechecks import software as probe
from ..results.records import RunRecord
from ..software import provenance
from ..software.identity import NodeSoftware, Repository, Software, file_digest, stack_of
from ..specs import CaseSpec


class SoftwareIdentities:
    """``cluster()``: the session's cluster; ``root``: the repository under test; ``store``: the baseline
    directory (left out of the repository's changes); ``log_dir``: where the probes' logs go."""

    def __init__(self, cluster: Callable[[], Cluster], root: Path | None, store: Path, log_dir: Path,
                 note: Callable[[str], None]) -> None:
        self.cluster, self.root, self.store, self.log_dir, self.note = cluster, root, store, log_dir, note
        self._nodes: dict[tuple[str, ...], dict[str, NodeSoftware] | None] = {}
        self._repository: Repository | None = None
        self._repository_read = False
        self.table: dict[str, dict] = {}  # id -> identity, every one this session made

    @property
    def repository(self) -> Repository | None:
        """The repository under test, read once per session (None: not in git)."""
        if not self._repository_read:
            self._repository, self._repository_read = provenance.repository(self.root, self.store), True
        return self._repository

    def probe(self, nodes: Sequence[Node]) -> None:
        """Probe the nodes' software once per node set (a case's readiness check, before its first launch); a node
        that cannot say is noted, and its cases' software is "not recorded"."""
        key = tuple(n.name for n in nodes)
        if key in self._nodes:
            return
        got = probe.probe(self.cluster(), list(nodes), self.log_dir / "-".join(key))
        for err in got.errors:
            self.note(f"software probe: {err}: the software of cases on it is not recorded, so no verdict can "
                      "say that nothing differs")
        self._nodes[key] = got.found if not got.errors and len(got.found) == len(nodes) else None

    def of_nodes(self, nodes: Sequence[Node]) -> tuple[NodeSoftware, ...] | None:
        """The nodes' software, in order (None: not probed, or a node did not say)."""
        found = self._nodes.get(tuple(n.name for n in nodes))
        return tuple(found[n.name] for n in nodes) if found is not None else None

    def for_case(self, case: CaseSpec, nodes: Sequence[Node], workload: Sequence[Path], suite: Path | None,
                 runs: Sequence[RunRecord], versions: dict[str, str]) -> Software | None:
        """The case's identity: its nodes' software, the digests of its workload's files and its suite's
        test file, the repository, pytest-dlperf's version and the stack its first run reports. None where
        its nodes' software is not known."""
        of_nodes = self.of_nodes(nodes[:case.topology.nodes])
        if of_nodes is None or not runs:
            return None
        files = {f"workload:{Path(p).name}": file_digest(p) for p in workload if Path(p).is_file()}
        if suite is not None and Path(suite).is_file():
            files[f"suite:{Path(suite).name}"] = file_digest(suite)
        software = Software(of_nodes, files, self.repository, provenance.own_version(), stack_of(versions))
        self.table[software.id] = software.to_dict()
        return software

    def same_tree(self, a: str, b: str) -> bool:
        """Whether two commits hold the same files outside the baseline store (only a recording between them)."""
        return provenance.same_tree(self.root, a, b, self.store)

