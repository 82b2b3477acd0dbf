"""More launches of a case whose test has its launches already: a recording whose launches fell into
modes sees them again (--dlperf-confirm). They run in the case's own test, after the rounds of every
case, so they come minutes after the case's first ones."""
from __future__ import annotations

from ..clusters.base import ClusterError
from ..specs import Measurement
from .bench import Bench
from .launch import launch
from .measured import Measured
from .runner import RunFailed


def more_launches(bench: Bench, got: Measured, m: Measurement, n: int, label: str) -> float:
    """``n`` more launches of ``got``'s case (run directories ``<label>0`` ...), appended to its runs;
    the error of one that fails stops them, recorded on ``got``. Returns the seconds they took."""
    k0, before = len(got.runs), len(got.taken)
    try:
        with bench.cluster().lease(what=got.case.id):
            for i in range(n):
                got.runs.append(launch(bench, got.case, m, f"{label}{i}", k0 + i, k0 + n, got.taken))
    except (RunFailed, ClusterError) as exc:
        got.error = str(exc)
    return sum(got.taken[before:])
