"""The index's overview: what changed, where and since when. Every step change of every case's line
(its case, line, the runs and commits it fell between, its size per metric, and whether the line is
still on the new level), newest first; and each case's small trend. Both are made here from the
history; pages.index lays them out."""
from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from . import charts
from .charts import Failed, Point
from .html import esc, link, table
from .hrefs import case_href, run_href
from .model import Group, History
from .changepoints import Finder
from .steps import Step

DEFAULT_THRESHOLD = 0.05  # a step's least size where no run of the line was judged (the gate's default tolerance)
SPARK_POINTS = 100  # a trend is drawn from at most this many figures (medians of neighbours beyond)


@dataclass(frozen=True)
class Change:
    """A step in a case's line: the last run on the old level, the first on the new, the move per
    metric, and the first run of the line's next step (None: the line is still on this level)."""

    key: str
    group: Group
    before: Point
    after: Point
    moves: tuple[tuple[str, Step], ...]
    until: Point | None

    @property
    def direction(self) -> str:
        """"down" where every metric's level fell, "up" where every one rose, else "mixed"."""
        signs = {m.change < 0 for _, m in self.moves}
        return "mixed" if len(signs) > 1 else "down" if signs == {True} else "up"


def threshold(points: Sequence[Point], metric: str) -> float:
    """A step's least size on a line: the tolerance its runs were judged with (their median)."""
    tolerances = [v.tolerance for p in points if (v := charts.verdict(p.result, metric)) is not None]
    return statistics.median(tolerances) if tolerances else DEFAULT_THRESHOLD


def figures(points: Sequence[Point], metric: str) -> list[tuple[int, float]]:
    """A line's figures in one metric, with their indexes in ``points``: runs without the metric are passed
    over, and so is a figure a file could not give (NaN, inf)."""
    return [(i, y) for i, p in enumerate(points) if (y := charts.judged(p.result, metric)) is not None
            and math.isfinite(y)]


def line_steps(points: Sequence[Point], metric: str, finder: Finder) -> dict[int, Step]:
    """The level changes of one line in one metric, keyed by the index (in ``points``) of the first run on
    the new level (``figures``)."""
    at = figures(points, metric)
    if any(y <= 0 for _, y in at):
        return {}
    found = finder.find([y for _, y in at], threshold(points, metric))
    return {at[s.at][0]: s for s in found}


def changes(history: History) -> list[Change]:
    """Every step of every case's line, in any metric the charts draw, newest first."""
    out: list[Change] = []
    for key, groups in history.cases.items():
        for g, points in groups.items():
            by_run: dict[int, list[tuple[str, Step]]] = {}
            for metric in charts.METRICS:
                for i, step in line_steps(points, metric, history.finder).items():
                    by_run.setdefault(i, []).append((metric, step))
            starts = sorted(by_run)
            for n, i in enumerate(starts):
                until = points[starts[n + 1]] if n + 1 < len(starts) else None
                out.append(Change(key, g, points[i - 1], points[i], tuple(by_run[i]), until))
    return sorted(out, key=lambda c: (c.after.run.created, c.key), reverse=True)


def _moves(change: Change) -> str:
    return "<br>".join(f'<span class="verdict {"bad" if s.change < 0 else "good"}">{s.change:+.1%}</span> '
                       f"{esc(charts.METRICS[m].lower())} {s.before:.4g} &rarr; {s.after:.4g}"
                       + (f" (p {s.pvalue:.1e})" if s.pvalue is not None else "") for m, s in change.moves)


def changes_table(history: History, found: list[Change]) -> str:
    """The overview's table: one row a step, newest first, filterable with the index's filter box."""
    if not found:
        return ("<h2>What changed</h2><p>No level change in any case's line, by "
                f"{esc(history.finder.describe())} (docs/history.md, \"Change points\").</p>")
    rows, attrs = [], []
    for c in found:
        b, a = c.before.run, c.after.run
        commits = (f"{esc(charts.commit_label(b))} &rarr; {esc(charts.commit_label(a))}"
                   if charts.commit_label(b) != charts.commit_label(a) else f"{esc(charts.commit_label(a))} (same commit)")
        last = history.cases[c.key][c.group][-1].run
        until = (f"still, at its last run {link(run_href(last), last.when)}" if c.until is None
                 else f"until {link(run_href(c.until.run), c.until.run.when)}")
        rows.append([link(run_href(a), a.when), link(case_href(c.key), c.key), esc(history.labels[c.group]),
                     _moves(c), f"{link(run_href(b), b.when)} &rarr; {link(run_href(a), a.when)}", commits, until])
        attrs.append({"data-search": f"{c.key} {history.labels[c.group]} {charts.commit_label(b)} "
                                     f"{charts.commit_label(a)}".lower(), "data-verdicts": f"step {c.direction}"})
    return ('<h2>What changed <span class="count" id="changes-count"></span></h2>'
            "<p>Each level change of a case's line, newest first: the level before and after, the run and commit "
            f"range it fell between, and whether the line is still there. Found by {esc(history.finder.describe())}, "
            f"the runs in {esc(history.order)}.</p>"
            + table(["since", "case", "line", "change", "runs", "commits", "now"], rows, "filterable",
                    table_id="changes", row_attrs=attrs))


def _thin(values: list[float | None]) -> list[float | None]:
    """At most SPARK_POINTS figures: each the median of its neighbours (None where all of them failed)."""
    if len(values) <= SPARK_POINTS:
        return values
    out: list[float | None] = []
    for k in range(SPARK_POINTS):
        chunk = [v for v in values[k * len(values) // SPARK_POINTS:(k + 1) * len(values) // SPARK_POINTS]
                 if v is not None]
        out.append(statistics.median(chunk) if chunk else None)
    return out


def sparkline(points: Sequence[Point], failed: Sequence[Failed], metric: str, width: int = 120,
              height: int = 26) -> str:
    """A line's trend as inline SVG: its figures in run order, a gap where the case failed, a dot at
    its latest figure; empty where no run has the metric."""
    rows = sorted([*points, *failed], key=lambda e: e.run.created)
    values = _thin([None if isinstance(e, Failed) else charts.judged(e.result, metric) for e in rows])
    known = [v for v in values if v is not None]
    if not known:
        return ""
    low, high = min(known), max(known)
    span, step = (high - low) or 1.0, width / max(len(values) - 1, 1)
    xy = [None if v is None else (round(i * step, 1), round(height - 2 - (v - low) / span * (height - 4), 1))
          for i, v in enumerate(values)]
    pieces, piece = [], []
    for pt in [*xy, None]:
        if pt is None:
            pieces += [piece] if piece else []
            piece = []
        else:
            piece.append(f"{pt[0]},{pt[1]}")
    lines = "".join(f'<polyline points="{" ".join(p)}"/>' if len(p) > 1 else
                    f'<circle cx="{p[0].split(",")[0]}" cy="{p[0].split(",")[1]}" r="1.5"/>' for p in pieces)
    last = next(pt for pt in reversed(xy) if pt is not None)
    return (f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
            f'aria-label="trend of {len(rows)} runs, {low:.4g} to {high:.4g}">{lines}'
            f'<circle class="last" cx="{last[0]}" cy="{last[1]}" r="2.5"/></svg>')
