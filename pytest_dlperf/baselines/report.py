"""The gate's summary table: every regression, improvement and unjudgeable case in one table."""
from __future__ import annotations

import io
from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.table import Table

from .. import metrics
from .rules import Verdict

ORDER = {"regression": 0, "noisy": 1, "hardware": 2, "host": 3, "undecided": 4, "missing": 5, "unjudged": 6,
         "improvement": 7, "pass": 8}


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:+.1%}"


def verdict_table(verdicts: Sequence[Verdict], include_pass: bool = False, width: int = 140) -> str:
    """Regressions first, then noisy, missing and improvements (passes only when asked)."""
    rows = [v for v in verdicts if include_pass or v.status != "pass"]
    if not rows:
        return ""
    table = Table(title="dlperf baseline gate", title_justify="left", box=box.SIMPLE_HEAD)
    for col in ("verdict", "case", "metric", "measured", "baseline", "change", "tolerance", "p / bounds"):
        table.add_column(col, justify="left" if col in ("verdict", "case", "metric") else "right")
    for v in sorted(rows, key=lambda v: (ORDER[v.status], v.case, v.metric)):
        metric = metrics.get(v.metric)  # figures in its declared unit (GiB, not bytes), tolerance signed its way
        m = "-" if v.measured_median is None else f"{v.measured_median / metric.scale:.4g}" + (
            f" ±{v.measured_cv:.0%}" if v.measured_cv is not None else "")
        b = "-" if v.baseline_median is None else f"{v.baseline_median / metric.scale:.4g}" + (
            f" ±{v.baseline_cv:.0%}" if v.baseline_cv is not None else "")
        stat = "-"
        if v.interval is not None and v.p_value is not None:
            stat = f"p={v.p_value:.2g} {v.interval[0]:.2f}..{v.interval[1]:.2f}"
        tol = "count" if metric.counted else metric.direction.signed(v.tolerance)  # a count has no tolerance
        table.add_row(v.status.upper(), v.case, v.metric, m, b, _pct(v.change), tol, stat)
    buf = io.StringIO()
    Console(file=buf, width=width, force_terminal=False, color_system=None).print(table)
    return buf.getvalue()
