"""What the reports say of real data: the seed's table (DLPerf's NGC ResNet-50 page puts real data, real data
with DALI and synthetic data side by side): per engine, model and topology, each data source's throughput
with its speedup, and real over synthetic; the input wait, the data-bound flag and the loader alone beside."""
from __future__ import annotations

from dataclasses import replace

from .. import metrics
from ..datasources import DATA_SOURCES, REAL, SYNTHETIC
from ..results.cases import CaseResult, ResultSet

HEADER = ("engine", "case", "topology", *(f"{d} (speedup)" for d in DATA_SOURCES), "real/synthetic",
          "input wait ms", "loader/s")


def _figure(r: CaseResult | None, name: str) -> str:
    if r is None:
        return "-"
    return metrics.get(name).show(r.value(name), r.case.unit, unit=False)


def _with_speedup(r: CaseResult | None) -> str:
    if r is None:
        return "-"
    return f"{_figure(r, 'throughput')} ({_figure(r, 'speedup')})"


def grid(results: ResultSet) -> list[list[str]]:
    """A row per engine, model, precision, size and topology that has a real-data case: every source's
    throughput (speedup), real over synthetic, the real case's input wait and its loaders alone ("-" where
    the session has no such case or figure)."""
    rows = []
    bases = dict.fromkeys(replace(r.case, data=SYNTHETIC) for r in sorted(
        results.results, key=lambda r: (r.case.group, r.case.topology)) if r.case.real_data)
    for c in bases:
        by = {d: results.find(replace(c, data=d), c.topology) for d in DATA_SOURCES}
        synthetic, got = by[SYNTHETIC], by[REAL]
        ratio = "-"
        if synthetic is not None and got is not None and synthetic.median and got.median:
            ratio = f"{got.median / synthetic.median:.3f}"
        read = next((by[d] for d in DATA_SOURCES if d != SYNTHETIC and by[d] is not None), None)  # real first
        what = f"{c.model} {c.precision} bs{c.batch_size} {c.size_label}" + (f" {c.variant}" if c.variant else "")
        rows.append([c.backend, what, c.topology.name, *(_with_speedup(by[d]) for d in DATA_SOURCES), ratio,
                     _figure(read, "input_wait"), _figure(read, "loader_throughput")])
    return rows
