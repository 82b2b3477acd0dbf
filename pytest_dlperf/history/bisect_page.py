"""A ``dlperf bisect``'s page: what it bisects, where it stands (first bad found, nothing to bisect,
or the next item to probe), each item's decided verdict with its cases' evidence, and per case the
candidate/reference ratio with its interval at every decided item."""
from __future__ import annotations

import os
from pathlib import Path

from ..bisect.steps import Found, NotBad, next_step
from .html import CHART_SCRIPTS, chart, esc, file_href, link, page, status, table, wrap
from .sources import Bisection

def href(bisection: Bisection) -> str:
    return f"bisect/{bisection.id}.html"


def standing(bisection: Bisection) -> str:
    """One line: where the search stands."""
    steps = bisection.steps
    end = next_step(len(steps.items), steps.decided())
    if isinstance(end, Found):
        return (f"first bad: {steps.items[end.first_bad].describe()}; last good: "
                f"{steps.items[end.last_good].describe()}")
    if isinstance(end, NotBad):
        return "nothing to bisect: the bad end is not slower than the good one"
    return f"not finished: item {end.index} ({steps.items[end.index].describe()}) is probed next"


def _report_link(report_dir: str | None, runs_by_dir: dict[Path, str], page_dir: Path) -> str:
    if not report_dir:
        return "-"
    where = Path(report_dir).resolve()
    if where in runs_by_dir:
        return link("../" + runs_by_dir[where], "run page")
    return link(file_href(os.path.relpath(where, page_dir)), report_dir)


def _figure(bisection: Bisection) -> dict | None:
    steps, data = bisection.steps, []
    for case in sorted({c for p in steps.probes for c in p.cases}):
        pts = sorted((i, steps.latest(i).cases[case]) for i in steps.decided() if case in steps.latest(i).cases)
        pts = [(i, e) for i, e in pts if e.ratio is not None and e.low is not None and e.high is not None]
        if pts:
            data.append({"type": "scatter", "mode": "markers", "name": esc(case), "x": [i for i, _ in pts],
                         "y": [e.ratio for _, e in pts], "text": [wrap(e.describe()) for _, e in pts],
                         "error_y": {"type": "data", "symmetric": False, "array": [e.high - e.ratio for _, e in pts],
                                     "arrayminus": [e.ratio - e.low for _, e in pts]}})
    if not data:
        return None
    layout = {"title": {"text": "candidate / known-good, by item"}, "xaxis": {"title": {"text": "item"}, "dtick": 1},
              "yaxis": {"title": {"text": "ratio (interval)"}},
              "shapes": [{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": 1, "y1": 1,
                          "line": {"color": "#444", "dash": "dot"}}]}
    return {"data": data, "layout": layout}


def bisect_page(bisection: Bisection, runs_by_dir: dict[Path, str], page_dir: Path) -> str:
    steps = bisection.steps
    rows = []
    for i, item in enumerate(steps.items):
        probe = steps.latest(i)
        tried = [p for p in steps.probes if p.index == i]
        verdict = probe.verdict.value if probe else ("undecided" if tried else "")
        evidence = "<br>".join(f"{esc(c)}: {esc(e.describe())}" for c, e in (probe.cases if probe else {}).items())
        rows.append([str(i), esc(item.describe()), status(verdict or None),
                     evidence or "-", str(len(tried)),
                     _report_link(probe.report_dir if probe else None, runs_by_dir, page_dir)])
    command = steps.command
    said = ", ".join(f"{k} {v}" for k, v in command.items() if k in ("kind", "good", "bad", "repo"))
    body = (f"<p><code>{esc(bisection.path)}</code>: {esc(said)}; pytest "
            f"<code>{esc(' '.join(map(str, command.get('pytest_args') or [])))}</code></p>"
            f"<p><strong>{esc(standing(bisection))}</strong></p>"
            + table(["item", "", "verdict", "evidence", "probes", "report"], rows))
    fig = _figure(bisection)
    return page("Bisection", body + (chart("chart-bisect", fig) if fig else ""), "../",
                scripts=CHART_SCRIPTS if fig else ())
