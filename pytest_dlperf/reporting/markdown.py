"""summary.md: the seed-style tables in Markdown, one per backend, model and precision, regressions
first, for people and for a CI job's step summary (``GITHUB_STEP_SUMMARY``)."""
from __future__ import annotations

from .. import explain, metrics
from ..metrics import Metric
from ..results.cases import CaseResult, ResultSet
from . import _fmt, cells, compiled, data, engine_grid

# Worst first: a group's rank in the file is its worst case's.
SEVERITY = ("regression", "hardware", "host", "noisy", "failed", "undecided", "missing", "unjudged", "improvement", "pass",
            "")


def case_verdict(result: CaseResult) -> str:
    """The worst status of the case's metrics ("" when it was not gated)."""
    statuses = [v.status.value for v in (result.verdict or {}).values()]
    return min(statuses, key=lambda s: SEVERITY.index(s) if s in SEVERITY else 0) if statuses else ""


def _group_title(r: CaseResult) -> str:
    c = r.case
    variant = f" {c.variant}" if c.variant else ""
    data = f", {c.data} data" if c.real_data else ""
    return f"{c.backend}: {c.model} {c.precision}, batch {c.batch_size}/device, {c.size_label}{variant}{data}"


def render(results: ResultSet, failures: dict[str, str] | None = None, plots: list[str] = (),
           title: str = "dlperf results", budget: dict | None = None) -> str:
    """The whole summary.md; ``plots``: PNG file names under plots/ to show at the end; ``budget``:
    results.json's ``environment.budget`` (the cases that ran fewer repeats are named)."""
    failures = failures or {}
    regressions = [r for r in results.results if case_verdict(r) == "regression"]
    lines = [f"# {title}", "",
             f"{len(results.results)} case(s) measured, {len(regressions)} regression(s), {len(failures)} failed", ""]
    lines += _budget_lines(budget) + _failure_lines(failures) + _case_tables(results) + _engine_lines(results)
    lines += _compiled_lines(results) + _data_lines(results)
    lines += _gate_notes(results)
    if plots:
        lines += ["## Plots", ""] + [f"![{p}](plots/{p})" for p in plots] + [""]
    return "\n".join(lines)


def _budget_lines(budget: dict | None) -> list[str]:
    if not (budget and budget.get("cut")):
        return []
    cut = ", ".join(f"`{case}` ({c['repeats']} of {c['planned']})" for case, c in budget["cut"].items())
    return [f"Measured within a budget of {budget['seconds']:g} s ({budget['used']:.0f} s used): "
            f"{len(budget['cut'])} case(s) ran fewer repeats: {cut}.", ""]


def _failure_lines(failures: dict[str, str]) -> list[str]:
    if not failures:
        return []
    lines = ["## Failed", ""]
    for case, why in failures.items():
        first = why.strip().splitlines()[0] if why.strip() else ""
        lines.append(f"- `{case}`: {first}")
    return lines + [""]


def _case_tables(results: ResultSet) -> list[str]:
    """One table per model and precision, the groups with the worst verdict first."""
    groups = list(results.groups().values())
    groups.sort(key=lambda rows: min(SEVERITY.index(case_verdict(r)) if case_verdict(r) in SEVERITY else 0
                                     for r in rows))
    lines: list[str] = []
    for rows in groups:
        columns = cells.shown(rows)  # the declared metrics these rows have, in declaration order
        unit = rows[0].case.unit
        lines += [f"## {_group_title(rows[0])}", "",
                  "| topology | nodes | devices | " + " | ".join(m.header(unit) for m in columns)
                  + " | p50 step | p95 step | verdict |",
                  "|---|--:|--:|" + "--:|" * len(columns) + "--:|--:|---|"]
        lines += [_case_row(r, columns) for r in rows] + [""]
        notes = cells.not_measured(rows) + cells.flagged(rows) + [
            f"{r.case.topology.name}: {comm.line}" for r in rows if (comm := r.communication) is not None]
        notes += [line for r in rows for line in compiled.case_lines(r)]
        lines += [f"- {n}" for n in notes] + ([""] if notes else [])
    return lines


def _case_row(r: CaseResult, columns: list[Metric]) -> str:
    t = r.case.topology
    verdict = case_verdict(r)
    primary = (r.verdict or {}).get(metrics.PRIMARY.name)
    change = primary.change if primary is not None else None
    shown = verdict.upper() + (f" ({change:+.1%})" if change is not None else "") if verdict else "-"
    figures = " | ".join(cells.cell(r, m) for m in columns)
    return (f"| {t.name} | {t.nodes} | {t.world_size} | {figures} | "
            f"{_fmt(r.step_time.get('p50'), '.3f', ' s')} | {_fmt(r.step_time.get('p95'), '.3f', ' s')} | {shown} |")


def _section(title: str, intro: str, header: list[str] | tuple[str, ...], body: list[list[str]]) -> list[str]:
    """A titled table of text cells: the first three columns left-aligned, the figures right; none without rows."""
    if not body:
        return []
    return [f"## {title}", "", intro, "",
            "| " + " | ".join(header) + " |", "|---|---|---|" + "--:|" * (len(header) - 3),
            *("| " + " | ".join(cells) + " |" for cells in body), ""]


def _engine_lines(results: ResultSet) -> list[str]:
    header, body = engine_grid(results)
    return _section("Engines compared", "throughput (samples/s, tokens/s for a decoder; efficiency, multi-node "
                    "efficiency) per engine, and the first engine's ratio.", header, body)


def _compiled_lines(results: ResultSet) -> list[str]:
    return _section("Compiled over eager", "torch.compile: each compiled case's throughput against its eager twin's "
                    "(samples/s, tokens/s for a decoder), its compile time (s) and the graph breaks and recompilations "
                    "dynamo counted.", compiled.HEADER, compiled.grid(results))


def _data_lines(results: ResultSet) -> list[str]:
    return _section("Synthetic and real data", "Throughput (samples/s, tokens/s for a decoder) per data source with "
                    "its speedup, real over synthetic, and the real case's input wait per step and its loaders alone "
                    "(decoded samples/s).", data.HEADER, data.grid(results))


def _gate_notes(results: ResultSet) -> list[str]:
    """What the gate said beyond PASS, and what changed since the baseline for a regression."""
    notes = [(r, v) for r in results.results for v in (r.verdict or {}).values()
             if v.status in ("regression", "hardware", "host", "noisy", "undecided", "unjudged")]
    missing = [r for r in results.results if case_verdict(r) == "missing"]
    if not (notes or missing):
        return []
    lines = ["## Gate notes", ""]
    for r, v in notes:
        changed = "; ".join(v.changes or []) or "nothing recorded (versions, device, commit)"
        lines.append(f"- `{r.case.backend}/{r.case.id}` {v.metric}: **{v.status.value.upper()}**: "
                     f"{v.message}" + (f" Changed since the baseline: {changed}."
                                       if v.status == "regression" else ""))
    for r in results.results:  # a regression's "what got slower", once a case
        found = explain.of_regression((r.verdict or {}).values())
        if found is not None:
            block = explain.lines(found)
            lines += ["", f"`{r.case.backend}/{r.case.id}`: {block[0]}", "", "```", *block[1:], "```", ""]
    if missing:
        lines.append(f"- {len(missing)} case(s) had no baseline to gate against: record one with "
                     "`pytest --update-baselines` on this machine.")
    return lines + [""]
