"""``dlperf history``: a static site over many runs' results.json (docs/history.md).

Public: ``read(arguments, finder)`` reads the results the arguments name, ``build_site`` also writes the
site; ``make`` the finder of level changes (``changepoints``), ``changes`` and ``alarms`` what --check says;
``HistoryError`` is input that gives no site (one line to show)."""
from __future__ import annotations

from pathlib import Path

from .changepoints import FINDERS, Finder, FinderError, Segmentation, Thresholds, make
from .check import Alarm, alarms
from .model import History
from .order import by_commit
from .overview import changes
from .since import Drift, drifts, pinned
from .site import Built, build
from .sources import HistoryError, Skipped, expand, read_all

__all__ = ["FINDERS", "Alarm", "Built", "Drift", "Finder", "FinderError", "History", "HistoryError", "Skipped",
           "Thresholds", "alarms", "build", "build_site", "changes", "drifts", "make", "pinned", "read"]


def read(arguments: list[str], finder: Finder = Segmentation(), repo: Path | None = None) -> History:
    """The history of every results.json the arguments name, its lines in ``repo``'s commit order where it holds
    every run's commit, else in time order (``History.order`` says which); files that cannot be read are left out
    and named (``History.skipped``); HistoryError where no run at all can be drawn."""
    runs, bisections, skipped = read_all(expand(arguments))
    if not runs and not bisections:
        why = "; ".join(f"{s.path}: {s.reason}" for s in skipped)
        raise HistoryError(f"no results.json could be read ({why})")
    ordered, said = by_commit(runs, repo)
    return History(ordered, skipped, bisections, finder, said)


def build_site(arguments: list[str], out: Path, finder: Finder = Segmentation()) -> tuple[Built, History]:
    """The site of every results.json the arguments name (``read``)."""
    history = read(arguments, finder)
    return build(history, out), history
