"""The site's pages: the index, one per case, one per model (its ladder), one per run and one per
A/B comparison. Each returns the page's HTML; site.py writes them."""
from __future__ import annotations

import os
from pathlib import Path

from ..reporting import ab as ab_report
from ..provenance import changes
from . import charts
from .bisect_page import href as bisect_href
from .bisect_page import standing
from .html import chart, esc, file_href, link, number, page, script_json, status, table
from .model import History, family, slug
from .runs import Run
from .sources import Skipped


def case_href(key: str) -> str:
    return f"cases/{slug(key)}.html"


def run_href(run: Run) -> str:
    return f"runs/{slug(run.id)}.html"


def model_href(fam: str) -> str:
    return f"models/{slug(fam)}.html"


def ab_href(run: Run) -> str:
    return f"ab/{slug(run.id)}.html"


def _verdicts(result) -> str:  # noqa: ANN001 - CaseResult
    return " ".join(f"{esc(m)} {status(v.status.value)}" for m, v in (result.verdict or {}).items()) or "-"


def _skipped(skipped: list[Skipped]) -> str:
    if not skipped:
        return ""
    rows = [[f"<code>{esc(s.path)}</code>", f'<span class="skipped">{esc(s.reason)}</span>'] for s in skipped]
    return f"<h2>Left out ({len(skipped)})</h2>" + table(["results.json", "why"], rows)


def index(history: History) -> str:
    """Every line (profile and machine) with its cases' latest figures, then every run, newest first."""
    parts = [f"<p>{len(history.runs)} runs, {len(history.cases)} cases"
             + (f", {len(history.bisections)} bisections" if history.bisections else "") + ".</p>",
             _skipped(history.skipped)]
    for g, label in history.labels.items():
        rows = []
        for key, groups in sorted(history.cases.items()):
            if g not in groups:
                continue
            last = groups[g][-1]
            r = last.result
            rows.append([link(case_href(key), key), esc(f"{r.median:.4g} {r.case.unit}"),
                         number(r.efficiency, ".3f"), _verdicts(r), str(len(groups[g])),
                         link(run_href(last.run), last.run.when), link(model_href(family(r.case)), "ladder")])
        parts.append(f"<h2>{esc(label)}</h2>" + table(["case", "latest", "efficiency", "latest verdict", "runs",
                                                       "latest run", "model"], rows))
    run_rows = [[link(run_href(r), r.when), esc(charts.commit_label(r)), esc(r.machine.label),
                 str(len(r.results)), _run_summary(r), link(ab_href(r), "A/B") if r.ab else ""]
                for r in reversed(history.runs)]
    parts.append("<h2>Runs</h2>" + table(["run", "commit", "machine", "cases", "verdicts", "A/B"], run_rows))
    if history.bisections:
        rows = [[link(bisect_href(b), b.path), esc(standing(b)), str(len(b.steps.probes))] for b in history.bisections]
        parts.append("<h2>Bisections</h2>" + table(["steps file", "where it stands", "probes"], rows))
    return page("Performance history", "\n".join(parts), "")


def _run_summary(run: Run) -> str:
    counts: dict[str, int] = {}
    for r in run.results:
        for v in (r.verdict or {}).values():
            counts[v.status.value] = counts.get(v.status.value, 0) + 1
    said = [f"{status(s)}&nbsp;{n}" for s, n in sorted(counts.items())]
    said += [esc(f"{len(run.failures)} failed")] if run.failures else []
    return " ".join(said) or "-"


def case_page(history: History, key: str) -> str:
    groups = history.cases[key]
    spec = history.specs[key]
    parts = [f"<p>Backend {esc(spec.backend)}, model {link('../' + model_href(family(spec)), family(spec))}. "
             "Each line is one baseline profile on one machine; the band is the baseline and its tolerance as "
             "each run was judged; marked points are verdicts other than pass.</p>"]
    for metric in charts.METRICS:
        fig = charts.case_figure(metric, spec.unit, groups, history.labels)
        if fig is not None:
            parts.append(chart(f"chart-{metric}", fig))
    rows = [[link("../" + run_href(p.run), p.run.when), esc(charts.commit_label(p.run)), esc(history.labels[g]),
             esc(", ".join(f"{t:.4g}" for t in p.result.throughputs)), number(p.result.median),
             number(p.result.speedup, ".3f"), number(p.result.efficiency, ".3f"), _verdicts(p.result)]
            for g, pts in groups.items() for p in reversed(pts)]
    parts.append("<h2>Runs</h2>" + table(["run", "commit", "line", f"repeats ({spec.unit})", "median", "speedup",
                                          "efficiency", "verdicts"], rows))
    return page(key, "\n".join(parts), "../", scripts=["plotly.min.js"])


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
    return page(f"{fam}: scaling ladder", body, "../", scripts=["plotly.min.js"])


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


def run_page(history: History, run: Run, page_dir: Path) -> str:
    drawn = history.cases  # an A/B run's cases are on no line: no page to link to
    rows = [[link("../" + case_href(r.case.key), r.case.key) if r.case.key in drawn and not run.ab else esc(r.case.key),
             esc(r.profile or "-"),
             esc(f"{r.median:.4g} {r.case.unit}"), esc(f"{min(r.throughputs):.4g}-{max(r.throughputs):.4g}"),
             number(r.speedup, ".3f"), number(r.efficiency, ".3f"),
             *(number(r.step_time.get(q), ".4f") for q in ("p50", "p75", "p90", "p95")),
             number(r.per_device.get("p50")), _verdicts(r)] for r in run.results]
    parts = [f"<p>{esc(run.path)}</p>", _environment(run), _changed(history, run),
             "<h2>Cases</h2>" + table(["case", "profile", "median", "repeats", "speedup", "efficiency", "step p50 (s)",
                                       "p75", "p90", "p95", "per device p50", "verdicts"], rows)]
    if run.failures:
        parts.append("<h2>Failed cases</h2>" + table(["case", "why"], [[esc(k), esc(v)] for k, v in run.failures.items()]))
    if run.ab:
        parts.append(f"<p>{link('../' + ab_href(run), 'A/B comparison of this run')}</p>")
    parts.append(_files(run, page_dir))
    return page(f"Run {run.when}", "\n".join(parts), "../")


def ab_page(run: Run) -> str:
    """An A/B session's comparison: per case the candidate/reference ratio, its interval and verdict."""
    section = run.ab or {}
    rows = [[esc(c) for c in cells] for cells in ab_report.rows(section)]
    body = (f"<p>{link('../' + run_href(run), 'the run')}</p>"
            + table(["case", "reference", "candidate", "candidate/reference", "interval", "pairs", "verdict"], rows)
            + "<ul>" + "".join(f"<li>{esc(line)}</li>" for line in ab_report.sides_lines(section)) + "</ul>")
    fig = _ab_figure(section)
    return page(f"A/B {run.when}", body + (chart("chart-ab", fig) if fig else ""), "../", scripts=["plotly.min.js"])


def _ab_figure(section: dict) -> dict | None:
    data = []
    for name, c in (section.get("cases") or {}).items():
        ratios = [p["ratio"] for p in c.get("pairs_taken", [])]  # as the session recorded it (plots/ab.png too)
        if ratios:
            data.append({"type": "scatter", "mode": "lines+markers", "name": name,
                         "x": list(range(1, len(ratios) + 1)), "y": ratios})
    if not data:
        return None
    return {"data": data, "layout": {"title": {"text": "candidate / reference, pair by pair"},
                                     "xaxis": {"title": {"text": "pair"}}, "yaxis": {"title": {"text": "ratio"}}}}
