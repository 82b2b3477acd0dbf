"""Reports: the seed-style tables for the terminal, results.json for machines, and (modules
beside this one) summary.md, PNG plots and pytest-benchmark's JSON for people and tools."""
from __future__ import annotations

import datetime as _dt
import io
import json
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table

from .. import metrics
from ..files import atomic_write_text
from ..results.cases import CONTRACT, ResultSet
from . import cells, compiled, data

SCHEMA = CONTRACT  # results.json's "schema": its contract version (results/cases.py)


def _fmt(value: float | None, spec: str, unit: str = "") -> str:
    """A figure, or "-" where there is none (never a filled-in 0)."""
    return "-" if value is None else format(value, spec) + unit


def summary_tables(results: ResultSet, width: int = 200) -> str:
    """One table per model, precision, batch and image size, as DLPerf and AIACC print them."""
    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=False, color_system=None)
    for (model, precision, batch, _image, backend, variant, _data), rows in results.groups().items():
        size, c = rows[0].case.size_label, rows[0].case
        data = f" {c.data} data" if c.real_data else ""
        table = Table(title=f"{model} {precision} bs{batch}/device {size}{' ' + variant if variant else ''}{data} "
                            f"({backend})",
                      title_justify="left", box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False)
        columns = cells.shown(rows)  # the declared metrics these rows have, in declaration order
        unit = rows[0].case.unit
        heads = [h for m in columns for h in ([m.header(unit), "mean"] if m is metrics.PRIMARY else [m.header(unit)])]
        for col in ("topology", "nodes", "devices", *heads, "p50 step", "p95 step", "repeats"):
            table.add_column(col, justify="left" if col == "topology" else "right")
        for r in rows:
            t = r.case.topology
            figures = [c for m in columns for c in ([cells.cell(r, m), f"{r.mean:.2f}"] if m is metrics.PRIMARY
                                                     else [cells.cell(r, m)])]
            table.add_row(t.name, str(t.nodes), str(t.world_size), *figures,
                          _fmt(r.step_time.get("p50"), ".3f", "s"),
                          _fmt(r.step_time.get("p95"), ".3f", "s"), str(len(r.throughputs)))
        console.print(table)
        for line in cells.not_measured(rows) + cells.flagged(rows):
            console.print(f"  {line}", soft_wrap=True)
        for r in rows:
            console.print(f"  {r.case.topology.name}: {r.acspeed_line}")
            if r.utilisation is not None and r.utilisation.flops_per_sample is not None:
                console.print(f"  {r.case.topology.name}: {r.utilisation.line}", soft_wrap=True)
            if (comm := r.communication) is not None:
                console.print(f"  {r.case.topology.name}: efficiency {_fmt(r.efficiency, '.2f')} beside {comm.line}",
                              soft_wrap=True)
            for line in compiled.case_lines(r):
                console.print(f"  {line}", soft_wrap=True)
    return buf.getvalue()


def _text_table(title: str, header: list[str] | tuple[str, ...], body: list[list[str]], left: int,
                width: int) -> str:
    """A titled table of text cells for the terminal: the first ``left`` columns left-aligned, the
    figures right; "" without rows."""
    if not body:
        return ""
    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=False, color_system=None)
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    for i, col in enumerate(header):
        table.add_column(col, justify="left" if i < left else "right", no_wrap=True)
    for cells_ in body:
        table.add_row(*cells_)
    console.print(table)
    return buf.getvalue()


def compiled_table(results: ResultSet, width: int = 200) -> str:
    """Each compiled case beside its eager twin (``compiled.grid``); "" where none was compiled."""
    return _text_table("torch.compile: compiled against eager (throughput in each case's unit; compile time, "
                       "graph breaks and recompilations as dynamo counted them)", compiled.HEADER,
                       compiled.grid(results), 3, width)


def data_table(results: ResultSet, width: int = 200) -> str:
    """Synthetic, real and DALI side by side (``data.grid``); "" where no case read a dataset."""
    return _text_table("data: synthetic, real and DALI throughput (speedup), real over synthetic; the real case's "
                       "input wait and its loaders alone", data.HEADER, data.grid(results), 3, width)


def engine_grid(results: ResultSet) -> tuple[list[str], list[list[str]]]:
    """The engines-compared table as text cells, for the terminal and for summary.md: header
    (case, framework, topology, one column per engine, then the first engine's ratios) and rows."""
    rows = results.engine_comparison()
    engines = list(dict.fromkeys(e for row in rows for e in row["engines"]))
    ratios = list(dict.fromkeys(k for row in rows for k in row["ratios"]))
    body = []
    for row in rows:
        case = f"{row['model']} {row['precision']} bs{row['batch_size']}" + (f" {row['variant']}" if row["variant"] else "") \
            + (f" {row['data']} data" if row.get("data") else "")
        cells = [case, row["framework"], row["topology"]]
        for e in engines:
            f = row["engines"].get(e)
            over = f" x{f['compiled_over_eager']:.2f} eager" if f and f.get("compiled_over_eager") is not None else ""
            cells.append("-" if f is None else f"{f['samples_per_s']:.2f} ({_fmt(f['efficiency'], '.2f')}, "
                                                f"{_fmt(f['multi_node_efficiency'], '.2f')}){over}")
        cells += [_fmt(row["ratios"].get(k), ".3f") for k in ratios]
        body.append(cells)
    return ["case", "framework", "topology", *engines, *ratios], body


def engine_table(results: ResultSet, width: int = 200) -> str:
    """Engines side by side (``--backend A,B``), as the AIACC tables put Perseus beside Horovod: per
    engine samples/s, efficiency and multi-node efficiency, then the first engine's ratio to each other."""
    header, body = engine_grid(results)
    return _text_table("engines compared: throughput, samples/s or tokens/s as each case counts (efficiency, "
                       "multi-node efficiency)", header, body, 3, width)


def results_document(results: ResultSet, environment: dict, options: dict, failures: dict[str, str]) -> dict:
    """What results.json holds."""
    return {
        "schema": SCHEMA,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "environment": environment,
        "options": options,
        "summary": results.dlperf_summary(),
        "engines": results.engine_comparison(),
        "cases": [r.to_dict() for r in results.results],
        "failures": failures,
    }


def write_results(report_dir: Path, results: ResultSet, environment: dict, options: dict,
                  failures: dict[str, str], ab: dict | None = None) -> Path:
    """results.json (everything, raw steps included) and dlperf_<precision>.json (DLPerf's shape);
    ``ab``: an A/B session's section (docs/ab.md)."""
    doc = results_document(results, environment, options, failures)
    if ab is not None:
        doc["ab"] = ab
    path = report_dir / "results.json"
    atomic_write_text(path, json.dumps(doc, indent=1, default=str) + "\n")
    for precision, per_model in doc["summary"].items():
        atomic_write_text(report_dir / f"dlperf_{precision}.json", json.dumps(per_model, indent=1) + "\n")
    write_readable(report_dir, results, environment, failures, ab, plots=options.get("plots", True))
    return path


def readable_paths(report_dir: Path, results: ResultSet, ab: dict | None = None) -> list[Path]:
    """Every file ``write_readable`` may write (each group's plots by name), to be checked before
    anything is written."""
    from .plots import group_slug

    plots = report_dir / "plots"
    slugs = dict.fromkeys(group_slug(rows[0].case) for rows in results.groups().values())
    return [report_dir / "summary.md", report_dir / "benchmark.json",
            *(plots / f"{slug}-{kind}.png" for slug in slugs for kind in ("throughput", "efficiency", "baseline")),
            *([plots / "ab.png"] if ab is not None else [])]


def write_readable(report_dir: Path, results: ResultSet, environment: dict, failures: dict[str, str],
                   ab: dict | None = None, plots: bool = True) -> Path:
    """summary.md and plots/*.png (unless ``plots`` is off: --dlperf-plots) for people, benchmark.json for
    pytest-benchmark; summary.md is also appended to ``$GITHUB_STEP_SUMMARY`` when a GitHub Actions step
    runs us."""
    import os

    from . import ab as ab_report
    from . import benchmark, markdown
    from . import plots as drawn

    written = drawn.write_all(report_dir / "plots", results) if results.results and plots else []
    text = markdown.render(results, failures, written, budget=environment.get("budget"))
    if ab is not None:
        text += "\n\n" + "\n".join(ab_report.markdown(ab, ab_report.plot(ab, report_dir / "plots") if plots else None))
    path = report_dir / "summary.md"
    atomic_write_text(path, text + "\n")
    if results.results:
        atomic_write_text(report_dir / "benchmark.json",
                          json.dumps(benchmark.to_json(results, environment), indent=1, default=str) + "\n")
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as fh:  # the step's file: others append too
            fh.write(text.replace("](plots/", f"]({report_dir}/plots/") + "\n")
    return path


def write_part(report_dir: Path, session: str, worker: str, results: ResultSet, failures: dict[str, str],
               dryrun: list[tuple[str, list[str]]], extra: dict | None = None) -> Path:
    """An xdist worker's share of the report, merged by the controller at the end; named by the
    session's token, so another session's parts in the same directory are never taken for its own."""
    doc = {"cases": [r.to_dict() for r in results.results], "failures": failures, "dryrun": dryrun,
           "extra": extra or {}}
    path = report_dir / "parts" / f"{session}-{worker}.json"
    atomic_write_text(path, json.dumps(doc, default=str) + "\n")
    return path


def read_parts(report_dir: Path, session: str) -> list[dict]:
    """Every part this session's workers wrote (none outside xdist)."""
    return [json.loads(p.read_text()) for p in sorted((report_dir / "parts").glob(f"{session}-*.json"))]
