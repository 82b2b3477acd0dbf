"""DLPerf's log layout, ``<NnMg>/<name>_<run>.log``: which files are logs of which topology, and
their text; an entry that cannot be read is refused by name, one that is not a log is named as left out."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..specs import Topology

TOPOLOGY_DIR = re.compile(r"^(\d+)n(\d+)g$")
RUN_FILE = re.compile(r"^(?P<name>.+?)_(?P<run>\d+)\.log$")


@dataclass(frozen=True)
class LogFile:
    """One run's log: where it is, the topology its directory names, the case name and run number."""

    path: Path
    topology: Topology
    name: str
    run: int


def _topology(d: Path) -> Topology | None:
    m = TOPOLOGY_DIR.match(d.name)
    if not m:
        return None
    nodes, per_node = int(m[1]), int(m[2])
    if nodes < 1 or per_node < 1:
        raise ValueError(f"{d}: a topology directory needs at least 1 node and 1 device (1n1g, 2n8g): rename it")
    return Topology(nodes, per_node)


def find(logdir: Path, notes: list[str]) -> list[LogFile]:
    """Every ``<NnMg>/<name>_<run>.log`` under logdir, topology by topology; what else is there is
    named in ``notes`` (left out), what cannot be a run's log raises ValueError naming it."""
    if not logdir.is_dir():
        raise ValueError(f"{logdir}: not a directory (expected <NnMg>/<name>_<run>.log files under it)")
    found: list[LogFile] = []
    for entry in sorted(logdir.iterdir()):
        topology = _topology(entry) if entry.is_dir() else None
        if topology is None:
            notes.append(f"left out {entry}: not an <NnMg> topology directory")
            continue
        logs = sorted((p for p in entry.iterdir() if p.name.endswith(".log")), key=lambda p: (len(p.name), p.name))
        notes += [f"left out {p}: not a .log file" for p in sorted(entry.iterdir()) if not p.name.endswith(".log")]
        for log in logs:
            f = RUN_FILE.match(log.name)
            if not f:
                raise ValueError(f"{log}: expected <name>_<run>.log: rename it or move it out of {entry}")
            found.append(LogFile(log, topology, f["name"], int(f["run"])))
    if not found:
        raise ValueError(f"{logdir}: no <NnMg>/<name>_<run>.log files")
    return found


def read(log: LogFile) -> str:
    """The log's text (undecodable bytes replaced); a log that is not a readable file raises ValueError."""
    p = log.path
    if p.is_symlink() and not p.exists():
        raise ValueError(f"{p}: a dangling link (to {p.readlink()}): point it at the log or remove it")
    if p.is_dir():
        raise ValueError(f"{p}: a directory, not a log file: rename it or move it out of {p.parent}")
    if not p.is_file():
        raise ValueError(f"{p}: not a regular file: copy the log in as a file")
    try:
        return p.read_text(errors="replace")
    except OSError as exc:
        raise ValueError(f"{p}: cannot be read ({exc.strerror or exc}): fix its permissions or leave it out") from None
