"""The charts as plotly.js figures (plain dicts: data, layout): a case's metric over time and over
commits with its spread, the baseline and tolerance band as judged, the verdicts and the machine
changes; a model's ladder data (drawn by the page's script for the two runs a reader picks)."""
from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .. import metrics
from ..results.cases import CaseResult
from ..results.verdict import Verdict
from .html import esc, wrap
from .runs import Run

# a chart per gated metric, as declared (metrics/catalog.py); figures in the declared unit (GiB, not bytes)
METRICS = {m.name: m.title[:1].upper() + m.title[1:] for m in metrics.gated()}
PALETTE = ("#1f77b4", "#9467bd", "#8c564b", "#17becf", "#bcbd22", "#e377c2")
# verdicts marked on a line: (colour, plotly symbol); pass and "no baseline" are the line itself
MARKED = {"regression": ("#d62728", "x"), "improvement": ("#2ca02c", "triangle-up"),
          "noisy": ("#ff7f0e", "diamond"), "hardware": ("#7f7f7f", "square"), "unjudged": ("#9467bd", "circle-open"),
          "host": ("#7f7f7f", "square-open"), "undecided": ("#ff7f0e", "diamond-open")}
FAILED_COLOUR = "#000000"  # a night the case failed: a mark, and a gap in its line
LEGEND_WIDTH = 40  # characters a legend entry is wrapped at, so that it fits a phone's width


@dataclass(frozen=True)
class Point:
    """A case's result in one run."""

    run: Run
    result: CaseResult


@dataclass(frozen=True)
class Failed:
    """A run in which the case failed (its results.json's ``failures``): no figure, a gap in its line."""

    run: Run
    why: str


def value(result: CaseResult, metric: str) -> float | None:
    got = result.value(metric)
    return None if got is None else got / metrics.get(metric).scale


def judged(result: CaseResult, metric: str) -> float | None:
    """The figure the gate set against the band: its measured median (the throughput at the baseline's
    pace where the pace probe adjusted it; a speedup whose one-device case another file holds), else
    the run's own figure."""
    v = verdict(result, metric)
    if v is not None and v.measured_median is not None:
        return v.measured_median / metrics.get(metric).scale
    return value(result, metric)


def verdict(result: CaseResult, metric: str) -> Verdict | None:
    return (result.verdict or {}).get(metric)


def commit_label(run: Run) -> str:
    return run.commit or "(no commit)"


def _rgba(hex_colour: str, alpha: float) -> str:
    r, g, b = (int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def _band(points: Sequence[Point], metric: str) -> tuple[list, list, list]:
    """Per point: the baseline median and its band as the gate judged that run (None: no baseline)."""
    base, low, high = [], [], []
    for p in points:
        v = verdict(p.result, metric)
        b = v.baseline_median / metrics.get(metric).scale if v is not None and v.baseline_median else None
        base.append(b)
        low.append(None if b is None else b * (1 - v.tolerance))
        high.append(None if b is None else b * (1 + v.tolerance))
    return base, low, high


Link = Callable[[Run], str]  # a run's page, relative to the page the chart is on


def _hover(p: Point, metric: str) -> str:
    v = verdict(p.result, metric)
    said = f"<br>{v.status.value}" + (f" ({v.change:+.1%} vs baseline)" if v.change is not None else "") if v else ""
    raw = value(p.result, metric)
    if raw is not None and judged(p.result, metric) != raw:
        said += f"<br>at the baseline's pace; as measured {raw:.4g}"
    if v is not None and v.status.value in MARKED:  # its mark lets the pointer through to here
        said += f"<br>{wrap(v.message)}"
    return f"{p.run.when}<br>commit {esc(commit_label(p.run))}{said}"


def _said(run: Run, message: str) -> str:
    """A marked point's hover: when, the commit and the whole message, wrapped to be read."""
    return f"{run.when}<br>commit {esc(commit_label(run))}<br>{wrap(message)}"


def _band_traces(label: str, colour: str, points: Sequence[Point], metric: str, xs: list) -> list[dict]:
    """The baseline as each run was judged and its tolerance band (none where no run had a baseline)."""
    base, low, high = _band(points, metric)
    if all(b is None for b in base):
        return []
    return [
        {"type": "scatter", "mode": "lines", "x": xs, "y": low, "line": {"width": 0, "shape": "hv"},
         "hoverinfo": "skip", "showlegend": False, "legendgroup": label},
        {"type": "scatter", "mode": "lines", "x": xs, "y": high, "fill": "tonexty",
         "name": wrap(f"tolerance band: {label}", LEGEND_WIDTH), "fillcolor": _rgba(colour, 0.18),
         "line": {"width": 0, "shape": "hv"}, "hoverinfo": "skip", "legendgroup": label},
        {"type": "scatter", "mode": "lines", "x": xs, "y": base, "name": wrap(f"baseline as judged: {label}", LEGEND_WIDTH),
         "line": {"color": colour, "dash": "dash", "width": 1, "shape": "hv"}, "legendgroup": label},
    ]


def _measured(label: str, colour: str, points: Sequence[Point], failed: Sequence[Failed], metric: str,
              x_of: Callable[[Run], object], href: Link) -> dict:
    """The line itself: each run's figure with the range of its repeats; a night the case failed is a
    gap (y null), never joined over."""
    rows = sorted([*points, *failed], key=lambda e: e.run.created)
    ys = [None if isinstance(e, Failed) else judged(e.result, metric) for e in rows]
    measured = {"type": "scatter", "mode": "lines+markers", "x": [x_of(e.run) for e in rows], "y": ys,
                "name": wrap(label, LEGEND_WIDTH), "legendgroup": label, "connectgaps": False,
                "line": {"color": colour}, "marker": {"color": colour, "size": 6},
                "customdata": [href(e.run) for e in rows],
                "text": ["" if isinstance(e, Failed) else _hover(e, metric) for e in rows],
                "hovertemplate": "%{y:.4g}<br>%{text}<extra></extra>"}
    if metric == metrics.PRIMARY.name:
        def spread(e: Point | Failed, y: float | None, side: int) -> float | None:
            if isinstance(e, Failed) or y is None:
                return None
            r = e.result  # the repeats' range, scaled around the judged figure
            return (max(r.throughputs) - r.median if side > 0 else r.median - min(r.throughputs)) * y / r.median
        measured["error_y"] = {"type": "data", "symmetric": False, "color": _rgba(colour, 0.6),
                               "array": [spread(e, y, 1) for e, y in zip(rows, ys)],
                               "arrayminus": [spread(e, y, -1) for e, y in zip(rows, ys)]}
    return measured


def _failed_trace(points: Sequence[Point], failed: Sequence[Failed], metric: str, x_of: Callable[[Run], object],
                  href: Link, show: bool) -> list[dict]:
    """A mark at each night the case failed, at the line's level before it (after it, for a first night)."""
    if not failed:
        return []
    level = []
    for f in failed:
        before = [p for p in points if p.run.created < f.run.created]
        near = before[-1] if before else (points[0] if points else None)
        level.append(judged(near.result, metric) if near is not None else None)
    return [{"type": "scatter", "mode": "markers", "name": "failed (no figure)", "legendgroup": "failed",
             "showlegend": show, "x": [x_of(f.run) for f in failed], "y": level,
             "marker": {"color": FAILED_COLOUR, "symbol": "x-thin-open", "size": 14, "line": {"width": 2}},
             "customdata": [href(f.run) for f in failed], "hoverinfo": "text",
             "text": [_said(f.run, f"failed: {f.why}") for f in failed]}]


def _verdict_traces(points: Sequence[Point], metric: str, x_of: Callable[[Run], object],
                    shown: set[str]) -> list[dict]:
    """A mark on each point of a verdict other than pass; the pointer passes through it to the point
    under it, whose hover has the whole message and whose click opens the run (the message once in
    the page, not twice)."""
    out = []
    for status, (colour, symbol) in MARKED.items():
        at = [p for p in points if (v := verdict(p.result, metric)) is not None and v.status.value == status]
        if at:
            out.append({"type": "scatter", "mode": "markers", "name": status, "legendgroup": status,
                        "showlegend": status not in shown, "x": [x_of(p.run) for p in at],
                        "y": [judged(p.result, metric) for p in at],
                        "marker": {"color": colour, "symbol": symbol, "size": 13, "line": {"width": 2, "color": colour}},
                        "hoverinfo": "skip"})
            shown.add(status)
    return out


def _changes(groups: dict[tuple[str, str], list[Point]]) -> list[tuple[Point, str]]:
    """Where each line after the first begins, with what changed: the machine, or the profile alone."""
    starts = sorted((pts[0] for pts in groups.values() if pts), key=lambda p: p.run.created)
    out = []
    for before, p in zip(starts, starts[1:]):
        same_machine = before.run.machine.key == p.run.machine.key
        out.append((p, f"profile change: {p.result.profile}" if same_machine else f"machine change: {p.run.machine.label}"))
    return out


def _marks(changes: list[tuple[Point, str]], x_of: Callable[[Run], object]) -> tuple[list[dict], list[dict]]:
    shapes = [{"type": "line", "xref": "x", "yref": "paper", "x0": x_of(p.run), "x1": x_of(p.run), "y0": 0, "y1": 1,
               "line": {"color": "#444", "dash": "dot", "width": 1.5}} for p, _ in changes]
    notes = [{"xref": "x", "yref": "paper", "x": x_of(p.run), "y": 0, "xanchor": "left", "yanchor": "bottom",
              "showarrow": False, "bgcolor": "rgba(255,255,255,0.8)",
              "text": esc(said.split(":", 1)[0]), "hovertext": wrap(said), "font": {"size": 10}} for p, said in changes]
    return shapes, notes


def _x_time(run: Run) -> str:
    return run.created.isoformat()


def _time_axis(runs: Sequence[Run]) -> dict:
    """The date axis; where all runs fall within a day (one run, say), a day either side of them, so
    that the ticks are days and not the milliseconds around a lone point."""
    axis = {"type": "date", "title": {"text": "run time (UTC)"}}
    first, last = min(r.created for r in runs), max(r.created for r in runs)
    if last - first < _dt.timedelta(days=1):
        axis["range"] = [(first - _dt.timedelta(days=1)).isoformat(), (last + _dt.timedelta(days=1)).isoformat()]
    return axis


def _traces(groups: dict[tuple[str, str], list[Point]], labels: dict[tuple[str, str], str], metric: str,
            failed: dict[tuple[str, str], list[Failed]], href: Link, x_of: Callable[[Run], object]) -> list[dict]:
    """Every line's traces, its points at ``x_of`` of their runs."""
    data: list[dict] = []
    shown: set[str] = set()
    for i, (g, pts) in enumerate(groups.items()):
        colour, gone = PALETTE[i % len(PALETTE)], failed.get(g, [])
        data += _band_traces(labels[g], colour, pts, metric, [x_of(p.run) for p in pts])
        data.append(_measured(labels[g], colour, pts, gone, metric, x_of, href))
        data += _verdict_traces(pts, metric, x_of, shown)
        data += _failed_trace(pts, gone, metric, x_of, href, "failed" not in shown)
        shown.update(["failed"] if gone else [])
    return data


def case_figure(metric: str, unit: str, groups: dict[tuple[str, str], list[Point]],
                labels: dict[tuple[str, str], str], failed: dict[tuple[str, str], list[Failed]] | None = None,
                href: Link | None = None, levels: Sequence[tuple[Point, str]] = ()) -> dict | None:
    """A case's metric over time, one line per (profile, machine), each failed night a gap with a mark;
    ``href``: a point's run page (a click opens it); ``levels``: the first run on each new level, with what
    changed, marked like a machine change. None when no run has the metric."""
    if not any(judged(p.result, metric) is not None for pts in groups.values() for p in pts):
        return None
    failed, href = failed or {}, href or (lambda run: "")
    every = [p.run for pts in groups.values() for p in pts] + [f.run for fs in failed.values() for f in fs]
    commits = list(dict.fromkeys(commit_label(r) for r in sorted(every, key=lambda r: r.created)))
    data = _traces(groups, labels, metric, failed, href, lambda run: run)  # each x a Run, then placed twice:
    data_by_commit = [[commit_label(r) for r in t["x"]] for t in data]  # at its commit ("over commits")
    for t in data:
        t["x"] = [_x_time(r) for r in t["x"]]  # at its time (the chart as it opens)
    changes = sorted([*_changes(groups), *levels], key=lambda c: c[0].run.created)
    time_marks, commit_marks = _marks(changes, _x_time), _marks(changes, commit_label)
    shown = metrics.get(metric).unit_for(unit)
    title = esc(f"{METRICS[metric]}" + (f" ({shown})" if shown and shown != "x" else ""))
    time_axis = _time_axis(every)
    commit_axis = {"type": "category", "categoryorder": "array", "categoryarray": commits,
                   "title": {"text": "commit (in the order first run)"}}
    buttons = [
        {"label": "over time", "method": "update",
         "args": [{"x": [t["x"] for t in data]},
                  {"xaxis": time_axis, "shapes": time_marks[0], "annotations": time_marks[1]}]},
        {"label": "over commits", "method": "update",
         "args": [{"x": data_by_commit},
                  {"xaxis": commit_axis, "shapes": commit_marks[0], "annotations": commit_marks[1]}]},
    ]
    layout = {"title": {"text": title, "x": 0, "xanchor": "left", "y": 0.98, "yanchor": "top"},
              "xaxis": time_axis, "yaxis": {"title": {"text": title}},
              "shapes": time_marks[0], "annotations": time_marks[1], "hovermode": "closest",
              "hoverlabel": {"align": "left", "namelength": -1, "font": {"size": 12}},
              "legend": {"orientation": "h", "y": -0.25}, "margin": {"t": 80, "l": 60, "r": 36},
              "modebar": {"orientation": "v"},
              "updatemenus": [{"type": "buttons", "direction": "right", "x": 0, "xanchor": "left", "y": 1.02,
                               "yanchor": "bottom", "buttons": buttons}]}
    return {"data": data, "layout": layout}


def ladder_data(runs: Sequence[tuple[Run, list[CaseResult]]]) -> list[dict]:
    """Per run (newest first): its label and each topology's throughput with its spread, by devices."""
    out = []
    for run, results in sorted(runs, key=lambda x: x[0].created, reverse=True):
        pts = sorted(results, key=lambda r: (r.case.topology.world_size, r.case.topology.nodes))
        out.append({"id": run.id, "label": f"{run.when} · {commit_label(run)}",
                    "points": [{"topology": r.case.topology.name, "devices": r.case.topology.world_size,
                                "median": r.median, "low": min(r.throughputs), "high": max(r.throughputs)}
                               for r in pts]})
    return out
