"""A profiled launch's ranks read back: from its meta line's ``profile`` (each rank's copied trace, or why
there is none), or from a directory of ``rank<R>.json`` traces (``dlperf explain``). What cannot be read
is named, never dropped in silence."""
from __future__ import annotations

from pathlib import Path

from .profile import RankProfile, TraceError
from .readers import known_files, read, reader_for


def from_meta(meta: dict, role: str) -> tuple[list[RankProfile], list[str]]:
    """(the ranks read, the problems) of one side's profiled launch."""
    profile = meta.get("profile")
    if not isinstance(profile, dict):
        return [], [f"{role}: the launch kept no profile record"]
    if profile.get("error"):
        return [], [f"{role}: {profile['error']}"]
    ranks, problems = [], []
    for entry in profile.get("ranks") or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("rank"), int):
            problems.append(f"{role}: a rank's profile record is not understood: {entry!r}"[:200])
            continue
        rank = entry["rank"]
        if entry.get("error"):
            problems.append(f"{role} rank {rank}: {entry['error']}")
            continue
        if not entry.get("local"):
            problems.append(f"{role} rank {rank}: no trace was copied")
            continue
        try:
            ranks.append(read(Path(entry["local"]), rank))
        except TraceError as exc:
            problems.append(f"{role}: {exc}")
    return ranks, problems


def from_dir(directory: Path, role: str) -> tuple[list[RankProfile], list[str]]:
    """(the ranks read, the problems) of a directory of traces (each file a reader knows: ``rank<R>.json``),
    or a run directory holding them under ``trace/``."""
    where = directory / "trace" if (directory / "trace").is_dir() else directory
    if not where.is_dir():
        return [], [f"{role}: {directory} is not a directory of traces"]
    found = sorted((got[1], p.name, got[0], p) for p in where.iterdir() if (got := reader_for(p)))
    if not found:
        return [], [f"{role}: {where} holds no trace: {known_files()}"]
    ranks, problems = [], []
    for rank, _, reader, path in found:
        try:
            ranks.append(reader.read(path, rank))
        except TraceError as exc:
            problems.append(f"{role}: {exc}")
    return ranks, problems
