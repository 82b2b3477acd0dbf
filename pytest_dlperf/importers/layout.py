"""DLPerf's log layout, ``<NnMg>/<name>_<run>.log``: which files are logs of which topology, and
their text; an entry that cannot be read is refused by name, one that is not a log is named as left
out, and no run is counted twice (two files of one run number, or two paths to one file)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..specs import Topology

TOPOLOGY_DIR = re.compile(r"^(\d+)n(\d+)g$")
RUN_FILE = re.compile(r"^(?P<name>.+?)_(?P<run>[0-9]{1,9})\.log$")


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


def _listing(d: Path) -> list[Path]:
    """A directory's entries, sorted; one that cannot be listed is refused by name."""
    try:
        return sorted(d.iterdir())
    except OSError as exc:
        raise ValueError(f"{d}: cannot be listed ({exc.strerror or exc}): fix its permissions or move it out of "
                         f"{d.parent}") from None


def _once(found: list[LogFile]) -> None:
    """Refuses two files of one case that are one run: the same run number (``a_1.log``, ``a_01.log``)
    or the same file reached by two paths (a link)."""
    runs: dict[tuple, LogFile] = {}
    files: dict[tuple[int, int], LogFile] = {}
    for log in found:
        other = runs.setdefault((log.topology, log.name, log.run), log)
        if other is not log:
            raise ValueError(f"{log.path}: run {log.run} of {log.name!r} again (as {other.path.name}): rename one of "
                             "them")
        try:
            st = log.path.stat()
        except OSError:
            continue  # read() names what is wrong with it
        other = files.setdefault((st.st_dev, st.st_ino), log)
        if other is not log:
            raise ValueError(f"{log.path}: the same file as {other.path} (a link): one run counted twice; remove one")


def find(logdir: Path, notes: list[str]) -> list[LogFile]:
    """Every ``<NnMg>/<name>_<run>.log`` under logdir, topology by topology; what else is there is
    named in ``notes`` (left out), what cannot be a run's log raises ValueError naming it."""
    if not logdir.is_dir():
        raise ValueError(f"{logdir}: not a directory (expected <NnMg>/<name>_<run>.log files under it)")
    found: list[LogFile] = []
    for entry in _listing(logdir):
        topology = _topology(entry) if entry.is_dir() else None
        if topology is None:
            notes.append(f"left out {entry}: not an <NnMg> topology directory")
            continue
        listing = _listing(entry)
        logs = sorted((p for p in listing if p.name.endswith(".log")), key=lambda p: (len(p.name), p.name))
        notes += [f"left out {p}: not a .log file" for p in listing if not p.name.endswith(".log")]
        for log in logs:
            f = RUN_FILE.match(log.name)
            if not f:
                raise ValueError(f"{log}: expected <name>_<run>.log: rename it or move it out of {entry}")
            found.append(LogFile(log, topology, f["name"], int(f["run"])))
    if not found:
        raise ValueError(f"{logdir}: no <NnMg>/<name>_<run>.log files")
    _once(found)
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
