"""One reader per trace format behind one interface: a reader says which files are its own (and the rank
each holds) and reads one into a RankProfile (explain/profile.py), which the diff, the block and the
summary use whatever the format. A new profiler's format is one reader added to READERS."""
from __future__ import annotations

from pathlib import Path
from typing import Protocol

from ..profile import RankProfile, TraceError
from .kineto import KinetoReader


class TraceReader(Protocol):
    """A profiler's trace format."""

    format: str  # its name, as said in messages
    files: str  # how its files are named, as said in messages

    def rank_of(self, path: Path) -> int | None:
        """The rank a file of this format holds, from its name; None where the file is not this format's."""
        ...

    def read(self, path: Path, rank: int) -> RankProfile:
        """The file as that rank's profile; TraceError names the file and what is wrong."""
        ...


READERS: tuple[TraceReader, ...] = (KinetoReader(),)


def reader_for(path: Path) -> tuple[TraceReader, int] | None:
    """The reader whose file ``path`` is, and the rank it holds; None where no reader knows it."""
    for reader in READERS:
        rank = reader.rank_of(path)
        if rank is not None:
            return reader, rank
    return None


def known_files() -> str:
    """The file names the readers know, for a message."""
    return "; ".join(f"{r.files} ({r.format})" for r in READERS)


def read(path: Path, rank: int) -> RankProfile:
    """``path`` read by the reader its name names, as rank ``rank``'s profile."""
    found = reader_for(path)
    if found is None:
        raise TraceError(f"rank {rank}'s trace {path}: no reader knows this file; traces are {known_files()}")
    return found[0].read(path, rank)
