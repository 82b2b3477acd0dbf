"""The charts as plotly.js figures (plain dicts: data, layout): a case's metric over time and over
commits with its spread, the baseline and tolerance band as judged, the verdicts and the machine
changes; a model's ladder data (drawn by the page's script for the two runs a reader picks)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .. import metrics
from ..verdict import Verdict
from ..results import CaseResult
from .runs import Run

# a chart per gated metric, as declared (metrics/catalog.py); figures in the declared unit (GiB, not bytes)
METRICS = {m.name: m.title[:1].upper() + m.title[1:] for m in metrics.gated()}
PALETTE = ("#1f77b4", "#9467bd", "#8c564b", "#17becf", "#bcbd22", "#e377c2")
# verdicts marked on a line: (colour, plotly symbol); pass and "no baseline" are the line itself
MARKED = {"regression": ("#d62728", "x"), "improvement": ("#2ca02c", "triangle-up"),
          "noisy": ("#ff7f0e", "diamond"), "hardware": ("#7f7f7f", "square"), "unjudged": ("#9467bd", "circle-open")}


@dataclass(frozen=True)
class Point:
    """A case's result in one run."""

    run: Run
    result: CaseResult


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


def _hover(p: Point, metric: str) -> str:
    v = verdict(p.result, metric)
    said = f"<br>{v.status.value}" + (f" ({v.change:+.1%} vs baseline)" if v.change is not None else "") if v else ""
    raw = value(p.result, metric)
    if raw is not None and judged(p.result, metric) != raw:
        said += f"<br>at the baseline's pace; as measured {raw:.4g}"
    return f"{p.run.when}<br>commit {commit_label(p.run)}{said}"


def _line_traces(label: str, colour: str, points: Sequence[Point], metric: str, xs: list) -> list[dict]:
    """One machine's traces: band (two), baseline, measured with its spread."""
    base, low, high = _band(points, metric)
    ys = [judged(p.result, metric) for p in points]
    traces = []
    if any(b is not None for b in base):
        traces += [
            {"type": "scatter", "mode": "lines", "x": xs, "y": low, "line": {"width": 0, "shape": "hv"},
             "hoverinfo": "skip", "showlegend": False, "legendgroup": label},
            {"type": "scatter", "mode": "lines", "x": xs, "y": high, "fill": "tonexty", "name": f"tolerance band: {label}",
             "fillcolor": _rgba(colour, 0.18), "line": {"width": 0, "shape": "hv"}, "hoverinfo": "skip",
             "legendgroup": label},
            {"type": "scatter", "mode": "lines", "x": xs, "y": base, "name": f"baseline as judged: {label}",
             "line": {"color": colour, "dash": "dash", "width": 1, "shape": "hv"}, "legendgroup": label},
        ]
    measured = {"type": "scatter", "mode": "lines+markers", "x": xs, "y": ys, "name": label, "legendgroup": label,
                "line": {"color": colour}, "marker": {"color": colour, "size": 6},
                "text": [_hover(p, metric) for p in points], "hovertemplate": "%{y:.4g}<br>%{text}<extra></extra>"}
    if metric == metrics.PRIMARY.name:
        scale = [y / p.result.median for y, p in zip(ys, points)]  # the repeats' range around the judged figure
        measured["error_y"] = {"type": "data", "symmetric": False, "color": _rgba(colour, 0.6),
                               "array": [(max(p.result.throughputs) - p.result.median) * k for p, k in zip(points, scale)],
                               "arrayminus": [(p.result.median - min(p.result.throughputs)) * k
                                              for p, k in zip(points, scale)]}
    return traces + [measured]


def _verdict_traces(points: Sequence[Point], metric: str, xs: list, shown: set[str]) -> list[dict]:
    out = []
    for status, (colour, symbol) in MARKED.items():
        at = [i for i, p in enumerate(points) if (v := verdict(p.result, metric)) is not None and v.status.value == status]
        if at:
            out.append({"type": "scatter", "mode": "markers", "name": status, "legendgroup": status,
                        "showlegend": status not in shown, "x": [xs[i] for i in at],
                        "y": [judged(points[i].result, metric) for i in at],
                        "marker": {"color": colour, "symbol": symbol, "size": 13, "line": {"width": 2, "color": colour}},
                        "text": [verdict(points[i].result, metric).message for i in at], "hoverinfo": "text"})
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


def _marks(changes: list[tuple[Point, str]], x_of) -> tuple[list[dict], list[dict]]:  # noqa: ANN001
    shapes = [{"type": "line", "xref": "x", "yref": "paper", "x0": x_of(p), "x1": x_of(p), "y0": 0, "y1": 1,
               "line": {"color": "#444", "dash": "dot", "width": 1.5}} for p, _ in changes]
    notes = [{"xref": "x", "yref": "paper", "x": x_of(p), "y": 0, "xanchor": "left", "yanchor": "bottom",
              "showarrow": False, "bgcolor": "rgba(255,255,255,0.8)",
              "text": said.split(":", 1)[0], "hovertext": said, "font": {"size": 10}} for p, said in changes]
    return shapes, notes


def _x_time(p: Point) -> str:
    return p.run.created.isoformat()


def case_figure(metric: str, unit: str, groups: dict[tuple[str, str], list[Point]],
                labels: dict[tuple[str, str], str]) -> dict | None:
    """A case's metric over time, one line per (profile, machine); None when no run has the metric."""
    if not any(judged(p.result, metric) is not None for pts in groups.values() for p in pts):
        return None
    by_time = sorted((p for pts in groups.values() for p in pts), key=lambda p: p.run.created)
    commits = list(dict.fromkeys(commit_label(p.run) for p in by_time))
    data, data_by_commit, shown, shown_again = [], [], set(), set()
    for i, (g, pts) in enumerate(groups.items()):
        colour = PALETTE[i % len(PALETTE)]
        dated = [_x_time(p) for p in pts]
        data += _line_traces(labels[g], colour, pts, metric, dated) + _verdict_traces(pts, metric, dated, shown)
        by_commit = [commit_label(p.run) for p in pts]  # the same traces again, each point at its commit
        data_by_commit += [t["x"] for t in _line_traces(labels[g], colour, pts, metric, by_commit)
                           + _verdict_traces(pts, metric, by_commit, shown_again)]
    changes = _changes(groups)
    time_marks = _marks(changes, _x_time)
    commit_marks = _marks(changes, lambda p: commit_label(p.run))
    shown = metrics.get(metric).unit_for(unit)
    title = f"{METRICS[metric]}" + (f" ({shown})" if shown and shown != "x" else "")
    time_axis = {"type": "date", "title": {"text": "run time (UTC)"}}
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
    layout = {"title": {"text": title}, "xaxis": time_axis, "yaxis": {"title": {"text": title}},
              "shapes": time_marks[0], "annotations": time_marks[1], "hovermode": "closest",
              "legend": {"orientation": "h", "y": -0.25}, "margin": {"t": 60},
              "updatemenus": [{"type": "buttons", "direction": "right", "x": 0, "xanchor": "left", "y": 1.15,
                               "buttons": buttons}]}
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
