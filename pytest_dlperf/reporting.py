"""Reports: the seed-style tables for the terminal and results.json for machines."""
from __future__ import annotations

import datetime as _dt
import io
import json
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table

from .files import atomic_write_text
from .results import ResultSet

SCHEMA = 1


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def summary_tables(results: ResultSet, width: int = 120) -> str:
    """One table per model, precision, batch and image size, as DLPerf and AIACC print them."""
    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=False, color_system=None)
    for (model, precision, batch, _image, backend, variant), rows in results.groups().items():
        size = rows[0].case.size_label
        table = Table(title=f"{model} {precision} bs{batch}/device {size}{' ' + variant if variant else ''} ({backend})",
                      title_justify="left", box=box.SIMPLE_HEAD)
        for col in ("topology", "nodes", "devices", "samples/s", "mean", "speedup", "efficiency",
                    "multi-node", "p50 step", "p95 step", "repeats"):
            table.add_column(col, justify="left" if col == "topology" else "right")
        for r in rows:
            t = r.case.topology
            table.add_row(t.name, str(t.nodes), str(t.world_size), f"{r.median:.2f}", f"{r.mean:.2f}",
                          _fmt(r.speedup, ".2f"), _fmt(r.efficiency, ".2f"),
                          _fmt(r.multi_node_efficiency, ".2f"), f"{r.step_time['p50']:.3f}s",
                          f"{r.step_time['p95']:.3f}s", str(len(r.throughputs)))
        console.print(table)
        for r in rows:
            console.print(f"  {r.case.topology.name}: {r.acspeed_line}")
    return buf.getvalue()


def write_results(report_dir: Path, results: ResultSet, environment: dict, options: dict,
                  failures: dict[str, str]) -> Path:
    """results.json (everything, raw steps included) and dlperf_<precision>.json (DLPerf's shape)."""
    summary = results.dlperf_summary()
    doc = {
        "schema": SCHEMA,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "environment": environment,
        "options": options,
        "summary": summary,
        "cases": [r.to_dict() for r in results.results],
        "failures": failures,
    }
    path = report_dir / "results.json"
    atomic_write_text(path, json.dumps(doc, indent=1, default=str) + "\n")
    for precision, per_model in summary.items():
        atomic_write_text(report_dir / f"dlperf_{precision}.json", json.dumps(per_model, indent=1) + "\n")
    return path


def write_part(report_dir: Path, worker: str, results: ResultSet, failures: dict[str, str],
               dryrun: list[tuple[str, list[str]]], extra: dict | None = None) -> Path:
    """An xdist worker's share of the report, merged by the controller at the end."""
    doc = {"cases": [r.to_dict() for r in results.results], "failures": failures, "dryrun": dryrun,
           "extra": extra or {}}
    path = report_dir / "parts" / f"{worker}.json"
    atomic_write_text(path, json.dumps(doc, default=str) + "\n")
    return path


def read_parts(report_dir: Path) -> list[dict]:
    """Every worker's part (none outside xdist)."""
    return [json.loads(p.read_text()) for p in sorted((report_dir / "parts").glob("*.json"))]
