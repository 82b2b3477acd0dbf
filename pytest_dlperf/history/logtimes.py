"""When an imported run ran: ``dlperf import`` writes results.json at import time, so a history of
old logs would all fall on the day of the import. The logs themselves mostly carry a clock (DLLogger's
``"timestamp"``, a ``2022/08/05 01:28:59`` or ISO time in each line): the run is dated by the latest
such time in its logs, and says so; where they carry none, or are gone, it keeps the import's date
and says that instead."""
from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..results.cases import CaseResult

UTC = _dt.timezone.utc
# a date with a time of day (a date alone is a header's or a comment's, not the run's clock)
_CLOCK = re.compile(r"(?<![\d.])(\d{4})[-/](\d{2})[-/](\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:[.,]\d+)?"
                    r"(Z|[+-]\d{2}:?\d{2})?(?!\d)")
_EPOCH = re.compile(r'"timestamp"\s*:\s*"?(\d{9,10}(?:\.\d+)?)"?')  # DLLogger's seconds since 1970


@dataclass(frozen=True)
class Dated:
    """A run's time and where it comes from (shown on its page)."""

    when: _dt.datetime
    said: str


def _zone(text: str | None) -> _dt.timezone:
    if not text or text == "Z":
        return UTC
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    return _dt.timezone(sign * _dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))


def _plausible(when: _dt.datetime, now: _dt.datetime) -> bool:
    return _dt.datetime(2000, 1, 1, tzinfo=UTC) <= when <= now + _dt.timedelta(days=1)


def latest_time(text: str, now: _dt.datetime) -> _dt.datetime | None:
    """The latest clock time a log's text carries (a time without a zone is taken as UTC), or None."""
    found: list[_dt.datetime] = []
    for m in _CLOCK.finditer(text):
        try:
            y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
            found.append(_dt.datetime(y, mo, d, h, mi, s, tzinfo=_zone(m[7])).astimezone(UTC))
        except ValueError:
            continue  # 2022-13-45 12:00:00 is not a time
    found += [_dt.datetime.fromtimestamp(float(m[1]), UTC) for m in _EPOCH.finditer(text)]
    found = [w for w in found if _plausible(w, now)]
    return max(found) if found else None


def _log_paths(results: Iterable[CaseResult], imported_from: Path) -> list[Path]:
    """Each run's log as the import named it; a relative name is looked up under the imported
    directory by its <NnMg>/<name>_<run>.log tail (the import ran from a directory not recorded)."""
    out: dict[Path, None] = {}
    for r in results:
        for rec in r.runs:
            name = (rec.logs or {}).get("log") or ((rec.meta or {}).get("parsed") or {}).get("file")
            if name:
                p = Path(str(name))
                out[p if p.is_absolute() else imported_from / p.parent.name / p.name] = None
    return list(out)


def imported_date(environment: Mapping, results: list[CaseResult], created: _dt.datetime) -> Dated | None:
    """The date of a run ``dlperf import`` wrote (None for a run pytest wrote: its own time is the run's)."""
    source = environment.get("imported_from")
    if not source:
        return None
    logs = _log_paths(results, Path(str(source)))
    now = _dt.datetime.now(UTC)
    times, missing = [], []
    for p in logs:
        try:
            text = p.read_text(encoding="utf-8", errors="replace")
        except OSError:
            missing.append(p)
            continue
        if (t := latest_time(text, now)) is not None:
            times.append(t)
    if times:
        return Dated(max(times), f"dated by its logs: the latest time in {len(times)} of its {len(logs)} log(s)")
    why = (f"its logs are not at {missing[0]}" + (f" and {len(missing) - 1} more" if len(missing) > 1 else "")
           if missing else "its logs carry no time of day with a date")
    return Dated(created, f"dated by its import ({why})")
