"""One launch of a case, as every measuring order takes it: the progress line while it runs, its run
directory under the report's ``runs/<case>/``, and the seconds it took."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

from .. import metrics
from ..results.phases import launch_phases
from ..results.records import RunRecord
from ..specs import CaseSpec, Measurement
from .bench import Bench
from .compile_caches import launch_key
from .launchlog import LaunchLine, append
from .runner import run_case

if TYPE_CHECKING:
    from .runner import SideLike


def launch(bench: Bench, case: CaseSpec, m: Measurement, label: str, k: int, of: int,
           taken: list[float], side: SideLike | None = None, name: str | None = None) -> RunRecord:
    """Launch the case once (the ``k``-th of ``of``; its run directory ``runs/<name>/<label>``), showing
    its progress; the seconds it took are appended to ``taken`` whether it ran or raised (RunFailed,
    ClusterError)."""
    name = name or bench.name(case)
    key, session_m = launch_key(name, side), bench.measurement(case, m)
    cm = bench.checkpoints.measurement(name, session_m)  # per case, both sides alike
    cache = bench.caches.next(key, case, cm)
    show = ((lambda info: bench.live.update(name, k, of, info, case.unit)) if bench.live.watching else None)
    clock = bench.budget(m).clock
    t0, at = clock(), time.time()
    said = f"dlperf {name} {label} ({k + 1} of {of})"
    cluster, launcher, ok = bench.cluster(), bench.launcher(case), False
    try:
        run = run_case(cluster, launcher, case, cm, bench.report_dir / "runs" / name / label,
                       k, on_progress=show, side=side, cache=cache)
        ok = True
    except BaseException:
        bench.live.said(f"{said}: failed after {clock() - t0:.1f} s")
        raise
    finally:
        bench.live.clear()
        taken.append(clock() - t0)
        unlogged = append(bench.launch_log, LaunchLine(
            case=name, label=label, engine=launcher.name, frameworks=tuple(launcher.engine_frameworks(case)),
            cluster=cluster.kind, nodes=case.topology.nodes, seconds=round(taken[-1], 3), ok=ok, at=round(at, 3)))
        if unlogged:
            bench.live.said(unlogged)
    bench.caches.took(key, cache, case, cm, run)
    bench.checkpoints.took(name, session_m, run, taken[-1])
    went = launch_phases(run, same_clock=cluster.kind == "local", total=taken[-1])
    bench.live.said(f"{said}: {_figure(run, case, m)} in {taken[-1]:.1f} s" + (f": {went.line()}" if went else ""))
    return run


def _figure(run: RunRecord, case: CaseSpec, m: Measurement) -> str:
    """The launch's throughput for its log line (a run whose window cannot give one says so)."""
    try:
        return metrics.PRIMARY.show(metrics.PRIMARY.per_launch(run, case, m), case.unit)
    except (ValueError, KeyError, TypeError):
        return "no throughput"
