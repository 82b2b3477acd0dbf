"""An A/B session's section read for people: the terminal table, summary.md's section and the plot,
all drawn from results.json's ``ab`` section (a dict), so ``dlperf report`` and ``dlperf history``
redraw it from a saved file (the JUnit properties are the case's own: ``ab.pairs``)."""
from __future__ import annotations

import io
import math
import statistics
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table

from .. import explain, metrics

HEADER = ("case", "reference", "candidate", "cand/ref", "interval", "pairs", "verdict")


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _geomean(values: list[float]) -> float | None:
    return math.exp(statistics.fmean(math.log(v) for v in values)) if values else None


def rows(section: dict) -> list[list[str]]:
    """Per case: reference and candidate throughput (the case's unit; geometric means over the pairs), their ratio
    with its interval, the pairs and the verdict (``incomplete`` where an interrupt cut it short)."""
    out = []
    for name, c in section.get("cases", {}).items():
        taken = c.get("pairs_taken", [])
        ref = _geomean([p["reference"]["throughput"] for p in taken])
        cand = _geomean([p["candidate"]["throughput"] for p in taken])
        verdict = (c.get("verdict") or "none").upper()
        if not c.get("complete"):
            verdict += " (incomplete)"
        if c.get("error"):
            verdict = "FAILED"
        interval = "-" if c.get("low") is None else f"{c['low']:.3f}-{c['high']:.3f}"
        out.append([name, "-" if ref is None else f"{ref:.2f}", "-" if cand is None else f"{cand:.2f}",
                    _pct(c.get("ratio")), interval, str(len(taken)), verdict])
        for metric, v in (c.get("metrics") or {}).items():  # the other gated metrics' paired verdicts
            out.append(_metric_row(name, metric, v, taken))
    for name, s in section.get("scaling", {}).items():
        interval = "-" if s.get("low") is None else f"{s['low']:.3f}-{s['high']:.3f}"
        out.append([f"{name} scaling efficiency", "", "", _pct(s.get("ratio")), interval, str(s.get("pairs", "")),
                    str(s.get("verdict", "")).upper()])
    return out


def _metric_row(name: str, metric: str, v: dict, taken: list[dict]) -> list[str]:
    """A case's row for another metric's paired verdict: both sides' geometric means in its unit."""
    try:
        m = metrics.get(metric)
    except ValueError:
        return [f"{name} {metric}", "-", "-", _pct(v.get("ratio")), "-", str(v.get("pairs", "")),
                str(v.get("verdict", "")).upper()]
    if m.counted:  # the most each side counted in any launch
        sides = [v.get(role) for role in ("reference", "candidate")]
    else:
        sides = [_geomean([p[role].get("figures", {}).get(metric) for p in taken
                           if p[role].get("figures", {}).get(metric)]) for role in ("reference", "candidate")]
    interval = "-" if v.get("low") is None else f"{v['low']:.3f}-{v['high']:.3f}"
    return [f"{name} {m.title}", *(m.show(x) for x in sides), _pct(v.get("ratio")), interval,
            str(v.get("pairs", "")), str(v.get("verdict", "")).upper()]


def sides_lines(section: dict) -> list[str]:
    """The sides, the method, and what differs between the sides."""
    sides = section.get("sides", {})
    out = [f"{role} ({s.get('name')}): {s.get('spec')}" + (f" at {s['commit'][:12]}" if s.get("commit") else "")
           for role, s in sides.items()]
    m = section.get("method", {})
    if m:
        out.append(f"paired test: {m.get('test', '')}; alpha {m.get('alpha')}, tolerance {m.get('tolerance'):.0%}, "
                   f"{m.get('min_pairs')}-{m.get('max_pairs')} pairs; UNDECIDED cases {m.get('undecided')}")
    diffs = list(dict.fromkeys(d for c in section.get("cases", {}).values() for d in c.get("differences", [])))
    if diffs:
        out.append("the sides differ in: " + "; ".join(diffs))
    return out


def terminal(section: dict, width: int = 160) -> str:
    """The A/B table for the terminal summary."""
    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=False, color_system=None)
    table = Table(title="A/B: candidate against reference (each case's throughput unit: samples/s, tokens/s for a "
                        "decoder; geometric means over the pairs)",
                  title_justify="left", box=box.SIMPLE_HEAD)
    for col in HEADER:
        table.add_column(col, justify="left" if col in ("case", "verdict") else "right", no_wrap=col == "case")
    for cells in rows(section):
        table.add_row(*cells)
    console.print(table)
    for line in sides_lines(section):
        console.print(line)
    for name, c in section.get("cases", {}).items():
        if c.get("reason"):
            console.print(f"{name}: {c['reason']}")
        for metric, v in (c.get("metrics") or {}).items():
            console.print(f"{name} {metric}: {v.get('reason', '')}")
        if c.get("explanation") is not None:
            console.print(f"{name}: " + "\n".join(explain.lines(c["explanation"])), soft_wrap=True)
    return buf.getvalue()


def markdown(section: dict, plot: str | None = None) -> list[str]:
    """summary.md's A/B section."""
    lines = ["## A/B: candidate against reference", "", "| " + " | ".join(HEADER) + " |",
             "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(f"`{cells[0]}`" if i == 0 else cells[i] for i in range(len(cells))) + " |"
              for cells in rows(section)]
    lines.append("")
    lines += [f"- {line}" for line in sides_lines(section)]
    for name, c in section.get("cases", {}).items():
        if c.get("explanation") is not None:
            block = explain.lines(c["explanation"])
            lines += ["", f"### `{name}`: {block[0]}", "", "```", *block[1:], "```"]
    if plot:
        lines += ["", f"![A/B pairs](plots/{plot})"]
    return lines + [""]


def plot(section: dict, out_dir: Path) -> str | None:
    """plots/ab.png: per case, every pair's candidate/reference ratio in the order taken, the
    final interval and the tolerance band. None when no pair was taken."""
    cases = {n: c for n, c in section.get("cases", {}).items() if c.get("pairs_taken")}
    if not cases:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tol = section.get("method", {}).get("tolerance", 0.0)
    fig, ax = plt.subplots(figsize=(8, 1.0 + 0.6 * len(cases)))
    for y, (name, c) in enumerate(cases.items()):
        ratios = [p["ratio"] for p in c["pairs_taken"]]
        ax.scatter(ratios, [y] * len(ratios), s=14, alpha=0.6, color="tab:blue")
        if c.get("low") is not None:
            ax.plot([c["low"], c["high"]], [y, y], color="black", linewidth=3)
            ax.plot([c["ratio"]], [y], marker="|", markersize=14, color="black")
    ax.axvspan(1 - tol, 1 + tol, color="tab:green", alpha=0.12, label=f"tolerance +-{tol:.0%}")
    ax.axvline(1.0, color="gray", linewidth=0.8)
    ax.set_yticks(range(len(cases)), [f"{n} ({(c.get('verdict') or '-').upper()})" for n, c in cases.items()],
                  fontsize=8)
    ax.set_xlabel("candidate / reference throughput (dots: pairs; bar: the interval)")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    from .plots import save_png

    save_png(fig, out_dir / "ab.png", dpi=110)
    return "ab.png"
