"""``dlperf history``: a static site over many runs' results.json (docs/history.md).

Public: ``build_site(arguments, out)`` reads the results the arguments name and writes the site;
``HistoryError`` is input that gives no site (one line to show)."""
from __future__ import annotations

from pathlib import Path

from .model import History
from .site import Built, build
from .sources import HistoryError, Skipped, expand, read_all

__all__ = ["Built", "History", "HistoryError", "Skipped", "build_site"]


def build_site(arguments: list[str], out: Path) -> tuple[Built, History]:
    """The site of every results.json the arguments name; files that cannot be read are left out
    and named (``History.skipped``); HistoryError where no run at all can be drawn."""
    runs, bisections, skipped = read_all(expand(arguments))
    if not runs and not bisections:
        why = "; ".join(f"{s.path}: {s.reason}" for s in skipped)
        raise HistoryError(f"no results.json could be read ({why})")
    history = History(runs, skipped, bisections)
    return build(history, out), history
