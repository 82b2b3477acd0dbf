"""PNG plots as the seeds publish them (matplotlib, no display needed): per backend, model,
precision and sizes, throughput against devices with the ideal linear-scaling line, scaling
efficiency per topology, and measured against baseline with the tolerance band."""
from __future__ import annotations

import io
import re
from pathlib import Path

from .. import metrics
from ..files import atomic_write_bytes
from ..metrics import Direction, Kind, Metric
from ..results.cases import CaseResult, ResultSet, device_unit
from ..results.verdict import Verdict
from ..specs import CaseSpec


def group_slug(case: CaseSpec) -> str:
    """A file-name-safe name of the case's group (everything but the topology)."""
    parts = [case.backend, case.model, case.precision, f"bs{case.batch_size}", case.size_label, case.variant,
             case.data if case.real_data else ""]
    return re.sub(r"[^A-Za-z0-9._-]+", "_", "-".join(p for p in parts if p))


def _title(c: CaseSpec) -> str:
    variant = f" {c.variant}" if c.variant else ""
    data = f", {c.data} data" if c.real_data else ""
    return f"{c.model} {c.precision}, batch {c.batch_size}/device, {c.size_label}{variant}{data} ({c.backend})"


def _unit(rows: list[CaseResult]) -> str:
    return device_unit([run for r in rows for run in r.runs])


def write_all(out_dir: Path, results: ResultSet) -> list[str]:
    """Write every group's plots into out_dir; return the file names written."""
    import matplotlib

    matplotlib.use("Agg")  # files only, never a window
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[str] = []
    for rows in results.groups().values():
        rows = sorted(rows, key=lambda r: (r.case.topology.world_size, r.case.topology.nodes))
        c, slug, unit = rows[0].case, group_slug(rows[0].case), _unit(rows)
        devices = [r.case.topology.world_size for r in rows]
        labels = [r.case.topology.name for r in rows]

        fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
        ax.plot(devices, [r.median for r in rows], "o-", label="measured (median of repeats)")
        lo = [min(r.throughputs) for r in rows]
        hi = [max(r.throughputs) for r in rows]
        ax.fill_between(devices, lo, hi, alpha=0.2, label="range over repeats")
        one = next((r.median for r in rows if r.case.topology.world_size == 1), None)
        if one:
            ax.plot(devices, [one * d for d in devices], "--", color="grey", label="ideal linear scaling")
        for d, m, lab in zip(devices, [r.median for r in rows], labels):
            ax.annotate(lab, (d, m), textcoords="offset points", xytext=(4, -12), fontsize=8)
        ax.set_xlabel(f"{unit} (devices in total)")
        ax.set_ylabel(f"throughput ({c.unit}, all devices)")
        ax.set_title(_title(c), fontsize=10)
        ax.set_xticks(sorted(set(devices)))
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        written.append(_save(fig, out_dir / f"{slug}-throughput.png"))

        written.append(_efficiency(plt, rows, labels, out_dir / f"{slug}-efficiency.png"))
        panels = [(m, gated) for m in metrics.of_kind(Kind.LAUNCH, gated_only=True)
                  if (gated := [(r, r.verdict[m.name]) for r in rows if r.verdict and r.verdict.get(m.name) is not None
                                and r.verdict[m.name].baseline_median])]
        if panels:
            written.append(_baseline(plt, panels, out_dir / f"{slug}-baseline.png"))
    return written


def _efficiency(plt, rows: list[CaseResult], labels: list[str], path: Path) -> str:  # noqa: ANN001 - pyplot
    """Scaling efficiency per topology; a case without one (no 1n1g in its group) gets no bar and a "-",
    as the tables show it, never a 0.00."""
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    eff = [r.efficiency for r in rows]
    bars = ax.bar(labels, [e if e is not None else float("nan") for e in eff], width=0.5, color="tab:blue",
                  label="scaling efficiency (speedup / devices)")
    multi = [r.multi_node_efficiency for r in rows]
    if any(m is not None for m in multi):
        ax.plot(labels, [m if m is not None else float("nan") for m in multi], "s", color="tab:orange",
                label="multi-node efficiency")
    ax.axhline(1.0, ls="--", color="grey", label="ideal (1.0)")
    for b, e in zip(bars, eff):
        ax.annotate("-" if e is None else f"{e:.2f}", (b.get_x() + b.get_width() / 2, e or 0.0), ha="center",
                    va="bottom", fontsize=8)
    if any(e is None for e in eff):
        ax.text(0.99, 0.98, "-: no 1n1g case in this group, so no efficiency", transform=ax.transAxes,
                ha="right", va="top", fontsize=7)
    ax.set_xlabel("topology (nodes x devices per node)")
    ax.set_ylabel("efficiency (1.0 = linear scaling)")
    ax.set_ylim(0, max(1.15, max((e for e in eff if e is not None), default=0.0) * 1.15))
    ax.set_title(_title(rows[0].case), fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="lower left")
    return _save(fig, path)


AT_PACE, AS_MEASURED = "at the baseline runs' pace (as judged)", "as measured"


def baseline_scale(result: CaseResult, verdict: Verdict) -> tuple[float, float, str]:
    """(measured, baseline, scale) as the gate judged them: both at the baseline runs' pace where the
    verdict brought them there, else both as measured; one scale, never one side of each."""
    if (verdict.pace or {}).get("applied") and verdict.measured_median:
        return verdict.measured_median, verdict.baseline_median, AT_PACE
    return result.median, verdict.baseline_median, AS_MEASURED


def _baseline(plt, panels: list[tuple[Metric, list[tuple[CaseResult, Verdict]]]], path: Path) -> str:  # noqa: ANN001
    """Measured against baseline with the tolerance band, one panel per gated per-launch metric judged
    (throughput first), each on the scale the gate judged."""
    fig, axes = plt.subplots(len(panels), 1, figsize=(6.4, 4.2 * len(panels)), dpi=110, squeeze=False)
    for ax, (metric, gated) in zip(axes[:, 0], panels):
        _baseline_panel(ax, metric, gated)
    return _save(fig, path)


def _baseline_panel(ax, metric: Metric, gated: list[tuple[CaseResult, Verdict]]) -> None:  # noqa: ANN001 - Axes
    x = list(range(len(gated)))
    figures = [baseline_scale(r, v) if metric.paced else (v.measured_median, v.baseline_median, AS_MEASURED)
               for r, v in gated]
    scales = sorted({s for _, _, s in figures})
    base = [b / metric.scale for _, b, _ in figures]
    tol = [v.tolerance or 0.0 for _, v in gated]
    ax.bar([i - 0.2 for i in x], base, width=0.4, color="lightgrey", label="baseline (median)")
    palette = {"regression": "tab:red", "noisy": "tab:orange", "hardware": "tab:grey", "host": "tab:grey",
               "undecided": "tab:orange"}
    colors = [palette.get(v.status, "tab:green") for _, v in gated]
    ax.bar([i + 0.2 for i in x], [m / metric.scale for m, _, _ in figures], width=0.4, color=colors,
           label="measured (median; red: regression, orange: noisy)")
    worse = -1 if metric.direction is Direction.HIGHER else 1  # the gate fails a median beyond the band
    for i, b, t in zip(x, base, tol):
        ax.fill_between([i - 0.45, i + 0.45], b, b * (1 + worse * t), color="tab:blue", alpha=0.2,
                        label=f"tolerance band ({metric.direction.limit(t) if i == 0 else ''} .. baseline)"
                        if i == 0 else None)
    mixed = len(scales) > 1  # then each pair says its own scale under its topology
    ax.set_xticks(x, [r.case.topology.name + ("\n(at baseline pace)" if mixed and s == AT_PACE else "")
                      for (r, _), (_, _, s) in zip(gated, figures)])
    ax.set_xlabel("topology")
    unit = metric.unit_for(gated[0][0].case.unit)
    ax.set_ylabel(f"{metric.title} ({unit}), {'; '.join(scales)}" if unit else f"{metric.title}, {'; '.join(scales)}")
    ax.set_title(_title(gated[0][0].case) + f": {metric.title} against the baseline", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)


def save_png(fig, path: Path, **savefig: object) -> None:  # noqa: ANN001 - a matplotlib Figure
    """The figure as a PNG written atomically (never half a file), then closed."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", **savefig)
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())


def _save(fig, path: Path) -> str:  # noqa: ANN001 - a matplotlib Figure
    fig.tight_layout()
    save_png(fig, path)
    return path.name
