"""What the reports say of torch.compile: the compiled-over-eager table (per engine, model, precision and
topology, as PyTorch's HUD puts a compiled model's speed-up over eager beside its compile time) and a
compiled case's lines under its table (compile time, the caches, what dynamo said of each graph break
and recompilation)."""
from __future__ import annotations

from .. import metrics
from ..results.cases import CaseResult, ResultSet

HEADER = ("engine", "case", "topology", "eager", "compiled", "compiled/eager", "compile s", "breaks", "recompiles")


def _show(name: str, r: CaseResult | None) -> str:
    m = metrics.get(name)
    return m.show(r.value(name) if r is not None else None, r.case.unit if r is not None else "samples/s", unit=False)


def grid(results: ResultSet) -> list[list[str]]:
    """A row per compiled case: its eager twin's throughput and its own (the case's unit), their ratio,
    its compile time and its counts; "-" where the session has no eager twin or no figure."""
    rows = []
    for r in sorted((r for r in results.results if r.case.compiled), key=lambda r: (r.case.group, r.case.topology)):
        c, eager = r.case, results.find(r.case.as_mode("eager"), r.case.topology)
        what = f"{c.model} {c.precision} bs{c.batch_size} {c.size_label}" + (
            f" {v}" if (v := c.as_mode("eager").variant) else "")
        rows.append([c.backend, what, c.topology.name, _show("throughput", eager), _show("throughput", r),
                     *(_show(n, r) for n in ("compiled_over_eager", "compile_time", "graph_breaks", "recompiles"))])
    return rows


def case_lines(r: CaseResult) -> list[str]:
    """A compiled case's torch.compile in words, and each thing dynamo said of a break or a recompilation."""
    if not r.case.compiled:
        return []
    records = [run.meta.get("compile") or {} for run in r.runs]
    cold = sum(1 for x in records if (x.get("cache") or {}).get("cold"))
    where = next(((x.get("cache") or {}).get("dir") for x in records if x.get("cache")), None)
    cache = ("every launch from an empty cache" if cold == len(records) else
             f"every launch from the filled cache {where}" if cold == 0 else
             f"{cold} of {len(records)} launches from an empty cache, the others from the filled {where}")
    t = r.case.topology.name
    took = (f"{_show('compile_time', r)} s to the last compilation, " if r.value("compile_time") is not None else "")
    splits = max((int(x.get("ddp_splits") or 0) for x in records), default=0)
    ddp = f", DDPOptimizer's {splits} split(s) at DDP's buckets apart" if splits else ""
    out = [f"{t}: torch.compile {took}dynamo's own accounting {_show('dynamo_compile_time', r)} s, {cache}; "
           f"{_show('graph_breaks', r)} graph break(s){ddp}, {_show('recompiles', r)} recompilation(s)"]
    for name, what in (("graph_breaks", "graph break"), ("recompiles", "recompilation")):
        out += [f"{t}: {what}: {said}" for said in r.said(name)]
    return out
