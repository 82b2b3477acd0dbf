"""The launch log (``--dlperf-launch-log FILE``, or ``DLPERF_LAUNCH_LOG``): one JSON line per launch appended to
a file, so that whoever runs many sessions (a CI job, the project's own tests) can count their launches, which
engine each ran and the seconds each took, across every session. Unset: nothing is written."""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

ENV = "DLPERF_LAUNCH_LOG"
VERSION = 1  # the line's fields, below; a reader refuses another


@dataclass(frozen=True)
class LaunchLine:
    """One launch: its case and run directory label, the engine and the frameworks it imports on the nodes
    (none for an engine that trains without one), the cluster kind, its nodes, its seconds, whether it ran."""

    case: str
    label: str
    engine: str
    frameworks: tuple[str, ...]
    cluster: str
    nodes: int
    seconds: float
    ok: bool
    at: float  # its start, seconds since the epoch

    def to_json(self) -> str:
        return json.dumps({"v": VERSION, **asdict(self)}, separators=(",", ":"))


def append(path: Path | None, line: LaunchLine) -> str:
    """Append ``line`` to ``path`` (None: no log) in one write, so sessions appending at once do not interleave
    within a line; "" or why it could not be written (the launch's result stands: the log is a count of them)."""
    if path is None:
        return ""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (line.to_json() + "\n").encode())
        finally:
            os.close(fd)
    except OSError as exc:
        return f"launch log {path}: not written: {exc.strerror or exc}"
    return ""


def read(path: Path) -> list[LaunchLine]:
    """The lines of a launch log; ValueError naming the line that is not one."""
    out = []
    for n, text in enumerate(path.read_text().splitlines(), 1):
        if not text.strip():
            continue
        try:
            doc = json.loads(text)
            version = doc.pop("v", None)
            if version != VERSION:
                raise ValueError(f"version {version!r}, expected {VERSION}")
            doc["frameworks"] = tuple(doc["frameworks"])
            out.append(LaunchLine(**doc))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}:{n}: not a launch log line ({exc})") from None
    return out
