"""The site's pages: the index, one per case, one per model (its ladder), one per run and one per
A/B comparison. Each returns the page's HTML; site.py writes them."""
from __future__ import annotations

import os
from pathlib import Path

from .. import explain, metrics
from ..reporting import ab as ab_report
from ..reporting import cells
from ..software.provenance import changes
from . import charts, overview
from .bisect_page import href as bisect_href
from .bisect_page import standing
from .hrefs import ab_href, case_href, model_href, run_href
from .html import CHART_SCRIPTS, chart, esc, file_href, link, number, page, script_json, status, table
from .model import Group, History, family
from .runs import Run
from .sources import Skipped


def _verdicts(result) -> str:  # noqa: ANN001 - CaseResult
    return " ".join(f"{esc(m)} {status(v.status.value)}" for m, v in (result.verdict or {}).items()) or "-"


def _skipped(skipped: list[Skipped]) -> str:
    """The files left out: damaged or newer ones, and (apart) copies of a run counted once."""
    damaged, copies = [s for s in skipped if s.same_as is None], [s for s in skipped if s.same_as is not None]
    out = ""
    if damaged:
        rows = [[f"<code>{esc(s.path)}</code>", f'<span class="skipped">{esc(s.reason)}</span>'] for s in damaged]
        out += f"<h2>Left out ({len(damaged)})</h2>" + table(["results.json", "why"], rows)
    if copies:
        rows = [[f"<code>{esc(s.path)}</code>", f"<code>{esc(s.same_as)}</code>"] for s in copies]
        out += (f"<h2>Counted once ({len(copies)})</h2><p>These files hold the same bytes as another: one run, "
                "drawn once.</p>" + table(["results.json", "the same run as"], rows))
    return out


VERDICT_FILTER = ("regression", "improvement", "noisy", "hardware", "host", "undecided", "unjudged", "pass", "failed",
                  "step down", "step up")


def _filter() -> str:
    """The index's filter: words to match in a row (case, line, commit), and a verdict or step."""
    options = "".join(f'<option value="{esc(v)}">{esc(v)}</option>' for v in VERDICT_FILTER)
    return ('<p class="filter"><label>filter <input id="filter" type="search" autocomplete="off" '
            'placeholder="case, model, machine, commit"></label> <label>showing <select id="verdict-filter">'
            f'<option value="">every verdict</option>{options}</select></label></p>')


def _line_section(history: History, n: int, g: Group, label: str) -> str:
    """A line's cases: each one's trend, latest figures and verdict (or its failure, where the latest
    run on the line failed it)."""
    rows, attrs = [], []
    for key, groups in sorted(history.cases.items()):
        if g not in groups:
            continue
        points, failed = groups[g], history.failed.get(key, {}).get(g, [])
        last, r = groups[g][-1], groups[g][-1].result
        gone = failed[-1] if failed and failed[-1].run.created > last.run.created else None
        verdicts = ["failed"] if gone else [v.status.value for v in (r.verdict or {}).values()]
        latest = gone.run if gone else last.run
        trend = overview.sparkline(points, failed, next(iter(charts.METRICS)))  # the charts' first metric
        runs = str(len(points)) + (f" ({len(failed)} failed)" if failed else "")
        rows.append([link(case_href(key), key), f'<a href="{case_href(key)}">{trend}</a>',
                     esc(f"{r.median:.4g} {r.case.unit}"), number(r.efficiency, ".3f"),
                     status("failed") if gone else _verdicts(r), runs,
                     link(run_href(latest), latest.when), link(model_href(family(r.case)), "ladder")])
        attrs.append({"data-search": f"{key} {label}".lower(), "data-verdicts": " ".join(verdicts)})
    return (f'<h2>{esc(label)} <span class="count" id="line-{n}-count"></span></h2>'
            + table(["case", "trend", "latest", "efficiency", "latest verdict", "runs", "latest run", "model"], rows,
                    "filterable", table_id=f"line-{n}", row_attrs=attrs))


def index(history: History, found: list[overview.Change]) -> str:
    """What changed (``found``: each level change of each case's line), every line with its cases' trends and
    latest figures, then every run, newest first; a filter over the cases and steps."""
    parts = [f"<p>{len(history.runs)} runs, {len(history.cases)} cases"
             + (f", {len(history.bisections)} bisections" if history.bisections else "")
             + f"; {len(found)} step change{'s' if len(found) != 1 else ''}.</p>",
             _skipped(history.skipped), _filter(), overview.changes_table(history, found)]
    parts += [_line_section(history, n, g, label) for n, (g, label) in enumerate(history.labels.items())]
    run_rows = [[link(run_href(r), r.when) + (" (import date)" if r.dated.startswith("dated by its import") else ""),
                 esc(charts.commit_label(r)), esc(r.machine.label),
                 str(len(r.results)), _run_summary(r), link(ab_href(r), "A/B") if r.ab else ""]
                for r in reversed(history.runs)]
    parts.append("<h2>Runs</h2>" + table(["run", "commit", "machine", "cases", "verdicts", "A/B"], run_rows))
    if history.bisections:
        rows = [[link(bisect_href(b), b.path), esc(standing(b)), str(len(b.steps.probes))] for b in history.bisections]
        parts.append("<h2>Bisections</h2>" + table(["steps file", "where it stands", "probes"], rows))
    return page("Performance history", "\n".join(parts), "", scripts=("site.js",))


def _run_summary(run: Run) -> str:
    counts: dict[str, int] = {}
    for r in run.results:
        for v in (r.verdict or {}).values():
            counts[v.status.value] = counts.get(v.status.value, 0) + 1
    said = [f"{status(s)}&nbsp;{n}" for s, n in sorted(counts.items())]
    said += [esc(f"{len(run.failures)} failed")] if run.failures else []
    return " ".join(said) or "-"


def case_page(history: History, key: str, found: list[overview.Change]) -> str:
    """A case's charts (each of its level changes, ``found``, marked on its figure's), and its runs."""
    groups = history.cases[key]
    spec = history.specs[key]
    failed = history.failed.get(key, {})
    parts = [f"<p>Backend {esc(spec.backend)}, model {link('../' + model_href(family(spec)), family(spec))}. "
             "Each line is one baseline profile on one machine; the band is the baseline and its tolerance as "
             "each run was judged; marked points are verdicts other than pass, and a cross with a gap in the "
             "line a run in which the case failed. A click on a point opens its run.</p>"]
    for metric in charts.METRICS:
        levels = [(c.after, f"level change: {s.change:+.1%} ({s.before:.4g} -> {s.after:.4g}"
                   + (f", p {s.pvalue:.1e}" if s.pvalue is not None else "") + f") on {history.labels[c.group]}")
                  for c in found for m, s in c.moves if m == metric]
        fig = charts.case_figure(metric, spec.unit, groups, history.labels, failed, lambda run: "../" + run_href(run),
                                 levels)
        if fig is not None:  # each line after the first adds a row of legend at a desk's width
            parts.append(chart(f"chart-{metric}", fig, height=600 + 46 * (len(groups) - 1)))
    others = _other_metrics([p.result for pts in groups.values() for p in pts])
    rows = [(p.run.created, [link("../" + run_href(p.run), p.run.when), esc(charts.commit_label(p.run)),
                             esc(history.labels[g]), esc(", ".join(f"{t:.4g}" for t in p.result.throughputs)),
                             number(p.result.median), *(esc(cells.cell(p.result, m)) for m in others),
                             _verdicts(p.result)])
            for g, pts in groups.items() for p in pts]
    rows += [(f.run.created, [link("../" + run_href(f.run), f.run.when), esc(charts.commit_label(f.run)),
                              esc(history.labels.get(g, f"{g[0]} on {f.run.machine.label} [{g[1]}]")),
                              f'<span class="skipped">failed: {esc(f.why)}</span>', "-", *("-" for _ in others),
                              status("failed")])
             for g, fs in failed.items() for f in fs]
    parts.append("<h2>Runs</h2>" + table(["run", "commit", "line", f"repeats ({spec.unit})", "median",
                                          *(m.header(spec.unit) for m in others), "verdicts"],
                                         [r for _, r in sorted(rows, key=lambda t: t[0], reverse=True)]))
    return page(key, "\n".join(parts), "../", scripts=CHART_SCRIPTS)


def model_page(history: History, fam: str) -> str:
    """The ladder: throughput against devices for a chosen run next to another, with the ideal line."""
    lines = history.families[fam]
    data = [{"label": history.labels[g], "runs": charts.ladder_data(runs)} for g, runs in lines.items()]
    _, results = next(iter(lines.values()))[0]  # every case of a model counts in its unit
    unit = results[0].case.unit
    body = (f"<p>Throughput ({esc(unit)}) against devices; the ideal line is the first rung's throughput per "
            "device times the devices. Pick a line (profile and machine), a run and another to set beside it.</p>"
            '<p><label>line <select id="line"></select></label> <label>run <select id="run-a"></select></label> '
            '<label>against <select id="run-b"></select></label></p><div id="ladder" class="chart"></div>'
            f"<script>const LADDER = {script_json(data)}; const UNIT = {script_json(unit)};</script>"
            '<script src="../assets/ladder.js"></script>')
    return page(f"{fam}: scaling ladder", body, "../", scripts=CHART_SCRIPTS)


def _environment(run: Run) -> str:
    env = run.environment
    rows = [["commit", esc(run.commit or "(not recorded)")], ["pytest-dlperf", esc(env.get("pytest_dlperf"))],
            ["Python", esc(env.get("python"))], ["frameworks", esc(", ".join(env.get("frameworks") or []) or "-")],
            ["devices", esc(", ".join(env.get("node_devices") or []) or "-")],
            ["machine", esc(f"{run.machine.label} [{run.machine.key}]")],
            ["cluster", esc((env.get("cluster") or {}).get("kind", "-") if isinstance(env.get("cluster"), dict) else "-")]]
    for name, fp in ((env.get("hardware_fingerprints") or {}).get("nodes") or {}).items():
        cpu, comp, mem = fp.get("cpu") or {}, fp.get("compute") or {}, fp.get("memory") or {}
        gpus = ", ".join(g.get("name", "?") for g in fp.get("gpus") or []) or "none"
        rows.append([f"node {esc(name)}", esc(f"{cpu.get('model_name', '?')}, {cpu.get('cpus', '?')} CPUs, "
                                              f"{fp.get('memory_gib', '?')} GiB; GPUs: {gpus}; matmul probe "
                                              f"{comp.get('median', '?')} {comp.get('unit', '')}, copy "
                                              f"{mem.get('median', '?')} {mem.get('unit', '')}")])
    return "<h2>Environment</h2>" + table(["", ""], rows)


def _changed(history: History, run: Run) -> str:
    prev = history.previous(run)
    if prev is None:
        return "<h2>What changed</h2><p>The first run on this machine.</p>"
    said = changes(prev.versions, run.versions)
    gone = sorted(set(prev.versions) - set(run.versions))
    items = [esc(c) for c in said] + [esc(f"{k} {prev.versions[k]} -> (not reported)") for k in gone]
    return (f"<h2>What changed</h2><p>Since {link('../' + run_href(prev), prev.when)} on this machine: "
            + ("nothing recorded (versions, device, commit)." if not items else "</p><ul>" +
               "".join(f"<li>{i}</li>" for i in items) + "</ul><p>") + "</p>")


def _files(run: Run, page_dir: Path) -> str:
    folder = run.path.parent
    names = [n for n in ("results.json", "summary.md", "benchmark.json") if (folder / n).is_file()]
    names += sorted(str(p.relative_to(folder)) for p in folder.glob("dlperf_*.json"))
    names += sorted(str(p.relative_to(folder)) for p in (folder / "plots").glob("*.png"))
    items = "".join(f"<li>{link(file_href(os.path.relpath(folder / n, page_dir)), n)}</li>" for n in names)
    return f"<h2>Files</h2><p><code>{esc(folder)}</code></p><ul>{items}</ul>"


def _other_metrics(results: list) -> list:
    """The declared table metrics these results have besides the primary one (shown as the median)."""
    return [m for m in cells.shown(results) if m is not metrics.PRIMARY]


def run_page(history: History, run: Run, page_dir: Path) -> str:
    drawn = history.cases  # an A/B run's cases are on no line: no page to link to
    others = _other_metrics(run.results)
    unit = run.results[0].case.unit if run.results else "samples/s"
    rows = [[link("../" + case_href(r.case.key), r.case.key) if r.case.key in drawn and not run.ab else esc(r.case.key),
             esc(r.profile or "-"),
             esc(f"{r.median:.4g} {r.case.unit}"), esc(f"{min(r.throughputs):.4g}-{max(r.throughputs):.4g}"),
             *(esc(cells.cell(r, m)) for m in others),
             *(number(r.step_time.get(q), ".4f") for q in ("p50", "p75", "p90", "p95")),
             number(r.per_device.get("p50")), _verdicts(r)] for r in run.results]
    copies = [s.path for s in history.skipped if s.same_as == run.path]
    parts = [f"<p>{esc(run.path)}</p>"
             + (f"<p>The same run (same content) is also at: {esc(', '.join(map(str, copies)))}.</p>" if copies else "")
             + (f"<p>Imported with <code>dlperf import</code>: {esc(run.dated)}.</p>" if run.dated else ""),
             _environment(run), _changed(history, run),
             "<h2>Cases</h2>" + table(["case", "profile", "median", "repeats",
                                       *(m.header(unit) for m in others), "step p50 (s)",
                                       "p75", "p90", "p95", "per device p50", "verdicts"], rows)]
    if run.failures:
        parts.append("<h2>Failed cases</h2>" + table(["case", "why"], [[esc(k), esc(v)] for k, v in run.failures.items()]))
    if run.ab:
        parts.append(f"<p>{link('../' + ab_href(run), 'A/B comparison of this run')}</p>")
    for r in run.results:  # a stored-baseline regression confirmed side by side and explained
        found = next((e for v in (r.verdict or {}).values() if (e := explain.of_confirmation(v.confirmation)) is not None),
                     None)
        if found is not None:
            parts.append(explained(r.case.key, found, page_dir))
    parts.append(_files(run, page_dir))
    return page(f"Run {run.when}", "\n".join(parts), "../")


def ab_page(run: Run, page_dir: Path) -> str:
    """An A/B session's comparison: per case the candidate/reference ratio, its interval and verdict, and an
    explained case's "what got slower" with its traces."""
    section = run.ab or {}
    rows = [[esc(c) for c in cells] for cells in ab_report.rows(section)]
    body = (f"<p>{link('../' + run_href(run), 'the run')}</p>"
            + table(["case", "reference", "candidate", "candidate/reference", "interval", "pairs", "verdict"], rows)
            + "<ul>" + "".join(f"<li>{esc(line)}</li>" for line in ab_report.sides_lines(section)) + "</ul>"
            + "".join(explained(name, c["explanation"], page_dir) for name, c in (section.get("cases") or {}).items()
                      if c.get("explanation") is not None))
    fig = _ab_figure(section)
    return page(f"A/B {run.when}", body + (chart("chart-ab", fig) if fig else ""), "../", scripts=CHART_SCRIPTS)


def explained(name: str, explanation: dict, page_dir: Path) -> str:
    """A case's "what got slower" block, and a link to each rank's trace of each side where it is on disk."""
    said = explain.lines(explanation)
    links = []
    for role, where in (explanation.get("traces") or {}).items():
        folder = Path(where)
        files = sorted(folder.glob("rank*.json*")) if folder.is_dir() else []
        if files:
            links.append(f"<li>{esc(role)}: " + ", ".join(link(file_href(os.path.relpath(f, page_dir)), f.name)
                                                          for f in files) + "</li>")
    return (f"<h2>{esc(name)}: {esc(said[0])}</h2><pre>{esc(chr(10).join(said[1:]))}</pre>"
            + (f"<p>Traces (Chrome trace format: chrome://tracing, Perfetto, Holistic Trace Analysis):</p><ul>"
               f"{''.join(links)}</ul>" if links else ""))


def _ab_figure(section: dict) -> dict | None:
    data = []
    for name, c in (section.get("cases") or {}).items():
        ratios = [p["ratio"] for p in c.get("pairs_taken", [])]  # as the session recorded it (plots/ab.png too)
        if ratios:
            data.append({"type": "scatter", "mode": "lines+markers", "name": esc(name),
                         "x": list(range(1, len(ratios) + 1)), "y": ratios})
    if not data:
        return None
    return {"data": data, "layout": {"title": {"text": "candidate / reference, pair by pair"},
                                     "xaxis": {"title": {"text": "pair"}}, "yaxis": {"title": {"text": "ratio"}}}}
