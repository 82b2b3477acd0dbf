"""The run's cases in pytest-benchmark's JSON format, so that ``pytest-benchmark compare`` and its
histograms work on them: one benchmark per case; each round is one repeat (one launch), its
figure the seconds per sample over that repeat's measured window (1 / global samples/s), so
pytest-benchmark's "ops" is samples/s. Everything else goes in ``extra_info``."""
from __future__ import annotations

import datetime as _dt
import platform

from .. import metrics
from ..results.cases import CaseResult, ResultSet


def _stats(seconds: list[float]) -> dict:
    """pytest-benchmark's own statistics over the rounds (its Stats class: the same fields)."""
    from pytest_benchmark.stats import Stats

    stats = Stats()
    for s in seconds:
        stats.update(s)
    out = stats.as_dict()
    out["data"] = list(seconds)
    out["iterations"] = 1
    return out


def _benchmark(r: CaseResult, name: str) -> dict:
    c = r.case
    return {
        "group": f"{c.backend} {c.model} {c.precision} bs{c.batch_size} {c.size_label}" + (f" {c.variant}" if c.variant else ""),
        "name": f"test_train[{name}]",
        "fullname": f"dlperf::{c.backend}/{c.id}",
        "params": {"dlperf_case": c.id},
        "param": c.id,
        "extra_info": {
            "unit": f"seconds per {c.unit.removesuffix('s/s')} (1 / global {c.unit}); ops = {c.unit}",
            "backend": c.backend, "model": c.model, "precision": c.precision, "batch_size_per_device": c.batch_size,
            "image_size": c.image_size, "variant": c.variant, "topology": c.topology.name,
            "nodes": c.topology.nodes, "devices": c.topology.world_size,
            "samples_per_s": r.throughputs, "median_samples_per_s": r.median,
            **{m.name: r.value(m.name) for m in metrics.declared() if m is not metrics.PRIMARY},
            "metrics": r.metrics_dict(),
            "step_time_s": r.step_time, "verdict": {k: v.status.value for k, v in (r.verdict or {}).items()},
        },
        "options": {"timer": "wall time of the measured window (barrier to barrier)", "min_rounds": len(r.throughputs),
                    "warmup": True, "disable_gc": False, "max_time": None, "min_time": None},
        "stats": _stats([1.0 / t for t in r.throughputs if t > 0]),
    }


def to_json(results: ResultSet, environment: dict, names: dict[str, str] | None = None) -> dict:
    """The document pytest-benchmark writes with --benchmark-json (machine_info, commit_info,
    benchmarks, datetime, version). ``names``: case key -> test id (when several engines ran)."""
    import pytest_benchmark

    names = names or {}
    commit = environment.get("git") or {}
    return {
        "machine_info": {
            "node": platform.node(), "processor": platform.processor(), "machine": platform.machine(),
            "python_implementation": platform.python_implementation(), "python_version": platform.python_version(),
            "system": platform.system(), "release": platform.release(),
            "cpu": {"brand_raw": environment.get("cpu_model", "")}, "dlperf_environment": environment,
        },
        "commit_info": {"id": commit.get("commit", "unknown"), "dirty": commit.get("dirty", False),
                        "project": "pytest-dlperf", "branch": commit.get("branch", "(unknown)")},
        "benchmarks": [_benchmark(r, names.get(r.case.key, r.case.id)) for r in results.results if r.throughputs],
        "datetime": _dt.datetime.now(_dt.timezone.utc).isoformat(),
        "version": pytest_benchmark.__version__,
    }
