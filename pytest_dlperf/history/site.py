"""Writing the site: every page into a new directory beside the target, with plotly.js, the style and
the ladder script copied in (the site opens from disk, no server, no network), then put in place, so
that a failed build never leaves a half-written site."""
from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import overview, pages
from .bisect_page import bisect_page
from .bisect_page import href as bisect_href
from .html import CSS
from .model import History
from .sources import HistoryError

MARK = ".dlperf-history"  # a directory holding this is a site we built, safe to replace


@dataclass(frozen=True)
class Built:
    """What a build wrote."""

    index: Path
    pages: int


def _plotly_js() -> str:
    try:
        from plotly.offline import get_plotlyjs
    except ImportError:
        raise HistoryError("plotly is not installed: pip install pytest-dlperf (it depends on plotly)") from None
    return get_plotlyjs()


def _write_pages(history: History, root: Path, final: Path) -> int:
    """Every page into ``root``; links to a run's files are relative to ``final``, where the site will be."""
    (root / "assets").mkdir()
    (root / "assets" / "plotly.min.js").write_text(_plotly_js(), encoding="utf-8")
    (root / "assets" / "site.css").write_text(CSS, encoding="utf-8")
    for script in ("ladder.js", "site.js"):
        shutil.copyfile(Path(__file__).with_name(script), root / "assets" / script)
    found = overview.changes(history)  # once: the index lists them, each case's charts mark its own
    by_case: dict[str, list[overview.Change]] = {}
    for c in found:
        by_case.setdefault(c.key, []).append(c)
    written = {"index.html": pages.index(history, found)}
    written.update({pages.case_href(k): pages.case_page(history, k, by_case.get(k, [])) for k in history.cases})
    written.update({pages.model_href(f): pages.model_page(history, f) for f in history.families})
    for run in history.runs:
        href = pages.run_href(run)
        written[href] = pages.run_page(history, run, (final / href).parent)
        if run.ab:
            written[pages.ab_href(run)] = pages.ab_page(run, (final / pages.ab_href(run)).parent)
    runs_by_dir = {run.path.parent.resolve(): pages.run_href(run) for run in history.runs}
    for b in history.bisections:
        written[bisect_href(b)] = bisect_page(b, runs_by_dir, (final / bisect_href(b)).parent)
    for href, text in written.items():
        (root / href).parent.mkdir(parents=True, exist_ok=True)
        (root / href).write_text(text, encoding="utf-8")
    (root / MARK).write_text("built by dlperf history; replaced whole by the next build\n", encoding="utf-8")
    return len(written)


def _put_in_place(tmp: Path, out: Path) -> None:
    """The new site where the old was: the old is moved aside first and back if the new cannot follow."""
    old = out.with_name(f".{out.name}.old") if out.exists() else None
    try:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
            out.rename(old)
        tmp.rename(out)
    except OSError as exc:
        if old is not None and old.exists() and not out.exists():
            old.rename(out)
        shutil.rmtree(tmp, ignore_errors=True)
        raise HistoryError(f"{out}: cannot put the site in place ({exc.strerror or exc}): give -o a directory "
                           "you can write; the site there is as it was") from None
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def build(history: History, out: Path) -> Built:
    """Write the site into ``out`` (new, empty, or a site built before); HistoryError says why not."""
    out = out.resolve()
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / MARK).is_file())):
        raise HistoryError(f"{out}: exists and is not a site dlperf history built: give -o a new or empty directory")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    except OSError as exc:
        raise HistoryError(f"{out}: cannot write there ({exc.strerror or exc}): give -o a writable directory") from None
    try:
        count = _write_pages(history, tmp, out)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise HistoryError(f"{out}: cannot write the site ({exc.strerror or exc}): free space or give -o another "
                           "directory; the site there is as it was") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp's 0700 is for the build, not for the site's readers
    _put_in_place(tmp, out)
    return Built(out / "index.html", count)
