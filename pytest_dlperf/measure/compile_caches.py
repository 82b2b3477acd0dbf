"""Which inductor cache each launch of a compiled case compiles into (issue #66): its first
``Measurement.cold_launches`` launches compile cold, each into an empty cache of its own, and the first
keeps its cache; the later ones start from that cache. A cold compile of the decoder took about 45-57 s
on one core, a launch from the filled cache 16 s: a recording's eight launches paid the compile eight
times, where three cold ones give compile time its verdict (a rank test of three launches against three
reaches the gate's alpha). Compile time, time to first step and peak memory are taken from the cold
launches (``metrics``); the window's figures from every launch. When the case's test ends, the seeds'
caches are removed from the nodes (``drop``), as every other launch removes its own."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..clusters.base import Cluster, NodeCommand
from ..launchers.base import CacheUse, CompileCache, own_cache_dir
from ..results.records import RunRecord
from ..specs import CaseSpec, Measurement

if TYPE_CHECKING:
    from .runner import SideLike


def launch_key(name: str, side: SideLike | None) -> tuple[str, str]:
    """Whose launches a launch counts among: its case's (by test name), on its side (an A/B session's)."""
    return name, side.label if side is not None else ""


def _counted(case: CaseSpec, m: Measurement) -> bool:
    """Whether the case's launches are counted here: a compiled case's, without a kept cache
    (--dlperf-compile-cache), outside a profiled launch (never counted)."""
    return case.compiled and not m.compile_cache and not m.profile_steps


@dataclass
class CompileCaches:
    """Per case and side (an A/B session's), its launches so far and its seed launch's caches."""

    launched: dict[tuple[str, str], int] = field(default_factory=dict)
    seeds: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)  # -> node name -> cache dir

    def next(self, key: tuple[str, str], case: CaseSpec, m: Measurement) -> CompileCache:
        """The cache of ``key``'s next launch. A kept cache (--dlperf-compile-cache) and a profiled launch,
        never counted, are left as they were: the kept one, or an empty one of the launch's own."""
        if not _counted(case, m):
            return CompileCache()
        n = self.launched.get(key, 0)
        if n < m.cold_launches:
            return CompileCache(CacheUse.SEED if n == 0 else CacheUse.OWN)
        seed = self.seeds.get(key)
        return CompileCache(CacheUse.WARM, dict(seed)) if seed else CompileCache()

    def took(self, key: tuple[str, str], cache: CompileCache, case: CaseSpec, m: Measurement,
             run: RunRecord) -> None:
        """A launch of ``key`` ran to its end: it counts, and a seed's caches serve the later launches."""
        if not _counted(case, m):
            return
        self.launched[key] = self.launched.get(key, 0) + 1
        if cache.use is CacheUse.SEED:
            self.seeds[key] = {node: own_cache_dir(d) for node, d in run.node_dirs.items()}

    def release(self, name: str | None = None) -> dict[str, list[str]]:
        """The seed caches of case ``name`` (every side's; None: every case's), per node name, forgotten here:
        its launches are over. A later launch of it would compile cold again."""
        got: dict[str, list[str]] = {}
        for key in [k for k in self.seeds if name is None or k[0] == name]:
            for node, where in self.seeds.pop(key).items():
                got.setdefault(node, []).append(where)
        return got


# Removes each directory given; one that is gone already is no error.
_REMOVE = "import shutil, sys\nfor p in sys.argv[1:]:\n    shutil.rmtree(p, ignore_errors=True)"


def drop(cluster: Cluster, dirs: dict[str, list[str]], log_dir: Path) -> list[str]:
    """Remove ``dirs`` (per node name) on their nodes, at once; a line per node where that failed."""
    nodes = [n for n in cluster.nodes() if n.name in dirs]
    if not nodes:
        return []
    with cluster.lease(what="removing the compile caches"):
        runs = cluster.run_everywhere(
            nodes, lambda node, run_dir, script: NodeCommand(node, [node.python, "-c", _REMOVE, *dirs[node.name]],
                                                             cwd=run_dir),
            log_dir, 60.0, name="dropcache", tag="dlperf-dropcache")
    failed = [f"{name}: {got.tail(3)}" for name, got in runs.outputs.items() if got.returncode != 0]
    return ([runs.error] if runs.error else []) + failed + runs.sweep_errors
