"""Small HTML pieces the pages are made of: the page frame, tables, links and an embedded chart.
Every text from a results.json is escaped; every chart's JSON is made safe inside a script tag."""
from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence

STATUS_CLASS = {"regression": "bad", "noisy": "warn", "hardware": "grey", "improvement": "good", "pass": "ok",
                "unjudged": "grey", "missing": "grey", "failed": "bad", "host": "grey",
                "good": "ok", "bad": "bad", "undecided": "grey"}  # the last three: a bisection's items


def esc(value: object) -> str:
    return html.escape("" if value is None else str(value))


def wrap(text: object, width: int = 56) -> str:
    """Text from a results.json for a chart's hover or legend: whole, in lines of about ``width``
    characters (plotly draws a hover label on one line, cut at the chart's edges; 56 of its 12 px
    characters fit a phone's 420 px), escaped (plotly reads its text as HTML: a message's "<a href"
    must not become a link). Words are never broken; one longer than ``width`` has its own line."""
    lines: list[str] = []
    line = ""
    for word in ("" if text is None else str(text)).split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return html.escape("\n".join([*lines, line]), quote=False).replace("\n", "<br>")


def script_json(value: object) -> str:
    """JSON to place inside <script>: no "<" at all, so no "</script" or "<!--" can change how it is parsed."""
    return json.dumps(value, separators=(",", ":")).replace("<", "\\u003c")


def page(title: str, body: str, root: str, scripts: Sequence[str] = ()) -> str:
    """A whole page; ``root``: the relative path to the site's top ("" or "../")."""
    tags = "".join(f'<script src="{root}assets/{s}"></script>' for s in scripts)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{esc(title)} - dlperf history</title>'
            f'<link rel="stylesheet" href="{root}assets/site.css">{tags}</head>\n<body>'
            f'<nav><a href="{root}index.html">dlperf history</a></nav>\n<h1>{esc(title)}</h1>\n{body}\n</body></html>\n')


def table(header: Sequence[str], rows: Iterable[Sequence[str]], cls: str = "", table_id: str = "",
          row_attrs: Sequence[dict[str, str]] = ()) -> str:
    """``rows``' cells are HTML already (escape text with ``esc``); ``row_attrs``: each row's attributes
    (text, escaped here), such as the index filter's data-search. Wide tables scroll on a narrow screen."""
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    attrs = list(row_attrs)
    body = "\n".join("<tr" + "".join(f' {k}="{esc(v)}"' for k, v in (attrs[i] if i < len(attrs) else {}).items())
                     + ">" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for i, row in enumerate(rows))
    ident = f' id="{esc(table_id)}"' if table_id else ""
    return (f'<div class="scroll"><table{ident} class="{cls}"><thead><tr>{head}</tr></thead><tbody>\n{body}\n'
            "</tbody></table></div>")


def file_href(path: str) -> str:
    """A relative file path as a link's address (a "#", "?" or "%" in a name is not the address's)."""
    from urllib.parse import quote

    return quote(path.replace("\\", "/"))


def link(href: str, text: object) -> str:
    return f'<a href="{esc(href)}">{esc(text)}</a>'


def status(value: str | None) -> str:
    if not value:
        return "-"
    return f'<span class="verdict {STATUS_CLASS.get(value, "")}">{esc(value)}</span>'


CHART_SCRIPTS = ("plotly.min.js", "site.js")  # a page with a chart loads both from assets/


def chart(div_id: str, figure: dict, height: int | None = None) -> str:
    """A plotly.js chart drawn when the page loads, by site.js's dlperfPlot: its configuration offers
    no way to send the chart out, and a point whose customdata is a run's page opens it on a click.
    ``height``: px to draw it at first (site.js fits it to its legend after; a good guess saves a redraw)."""
    style = f' style="height: {height}px"' if height else ""
    return (f'<div id="{div_id}" class="chart"{style}></div>\n<script>dlperfPlot("{div_id}", '
            f'{script_json(figure["data"])}, {script_json(figure["layout"])});</script>')


def number(value: float | None, fmt: str = ".4g") -> str:
    return "-" if value is None else format(value, fmt)


CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em 2em; color: #222; }
nav { font-size: 0.9em; margin-bottom: 0.5em; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.9em; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25em 0.7em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
.chart { width: 100%; max-width: 1100px; height: 600px; }  /* site.js fits it to its legend */
.verdict { padding: 0 0.4em; border-radius: 3px; }
.bad { background: #d62728; color: #fff; } .warn { background: #ff7f0e; color: #fff; }
.good { background: #2ca02c; color: #fff; } .grey { background: #ccc; } .ok { background: #e4f2e4; }
.skipped { color: #8a1f11; }
code { font-size: 0.9em; }
.scroll { overflow-x: auto; max-width: 100%; }
.filter input { min-width: 16em; }
.count { font-weight: normal; font-size: 0.8em; color: #555; }
svg.spark polyline { fill: none; stroke: #1f77b4; stroke-width: 1.2; }
svg.spark circle { fill: #1f77b4; } svg.spark circle.last { fill: #222; }
@media (max-width: 600px) {
  body { margin: 0.8em 0.6em; }
  .filter input { min-width: 0; width: 100%; }
}
"""
