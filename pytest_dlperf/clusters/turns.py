"""Taking turns on a lock file and saying who holds it: a session that must wait for another session's nodes
prints who holds them (the pid, the case, since when) and that it starts when they are free, again every
``every`` seconds while it waits, instead of seeming to hang.

The holder writes a note beside the lock once it has it (``<lock>.holder``, one JSON object) and removes it when
it lets go; a waiter only reads the note. The lock itself decides, so a note that is missing or stale (a
session of an older version, one killed with SIGKILL) changes what the line says, never who goes first.
"""
from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # filelock is imported when a lease is taken: a session without benchmarks imports none of it
    from filelock import FileLock

EVERY = 15.0  # seconds between two lines while a session waits


def _silent(text: str) -> None:
    """A cluster made outside a pytest session (a script, a unit test) says nothing."""


@dataclass(frozen=True)
class Holder:
    """Who holds a lock: written beside it by the holder, read by those who wait."""

    pid: int
    host: str
    what: str  # the case (or the cases, or the probe) it holds the nodes for; "" where the caller named none
    since: float  # time.time() when it got the lock

    def describe(self, now: float) -> str:
        """``pid 4242 (resnet50-fp32-bs8-64px-2n1g) since 14:02:11, 35 s ago``."""
        where = "" if self.host == socket.gethostname() else f" on {self.host}"
        case = f" ({self.what})" if self.what else ""
        clock = time.strftime("%H:%M:%S", time.localtime(self.since))
        return f"pid {self.pid}{where}{case} since {clock}, {max(0.0, now - self.since):.0f} s ago"

    def gone(self) -> bool:
        """This machine's holder whose process has ended (its note outlived it)."""
        if self.host != socket.gethostname():
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:  # alive, another user's
            pass
        return False


def note_of(lock: Path) -> Path:
    """Where the holder of ``lock`` writes who it is."""
    return lock.with_name(lock.name + ".holder")


def read_holder(lock: Path) -> Holder | None:
    """The note beside ``lock``, or None where there is none or it cannot be read (being written, say)."""
    try:
        got = json.loads(note_of(lock).read_text())
        return Holder(int(got["pid"]), str(got["host"]), str(got["what"]), float(got["since"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


NO_NOTE = "another session holds them (it left no note: an older pytest-dlperf, or one just starting)"


def waiting_line(nodes: str, holder: Holder | None, waited: float, now: float, unnoted: str = NO_NOTE) -> str:
    """The line a waiting session says: who holds ``nodes``, since when, and that it starts when they free;
    ``unnoted``: who holds them where no note names the holder."""
    if holder is None:
        who = unnoted
    elif holder.gone():
        who = f"the note beside the lock names {holder.describe(now)}, which has ended; another session holds them"
    else:
        who = f"held by {holder.describe(now)}"
    return (f"dlperf: waiting {waited:.0f} s for {nodes}: {who}; this session starts when they are free")


@dataclass(frozen=True)
class Turns:
    """How this session takes its turn on a shared lock: what it says while waiting, and how often."""

    say: Callable[[str], None] = _silent
    every: float = EVERY

    @contextlib.contextmanager
    def take(self, lock: FileLock, nodes: str, what: str = "") -> Iterator[None]:
        """Hold ``lock`` (the lock of ``nodes``, as a line names them) for ``what``; while another session holds
        it, say who, every ``every`` seconds. Taken again through the same ``lock`` object, it is only counted."""
        if lock.is_locked:  # this object holds it already (a lease inside a lease): the outer one wrote the note
            with lock:
                yield
            return
        from filelock import Timeout

        path = Path(lock.lock_file)
        path.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        try:
            lock.acquire(timeout=0)
        except Timeout:
            self._wait(lock, path, nodes, started)
        mine = Holder(os.getpid(), socket.gethostname(), what, time.time())
        try:
            with contextlib.suppress(OSError):
                _write(note_of(path), mine)
            yield
        finally:
            with contextlib.suppress(OSError):
                if read_holder(path) == mine:
                    note_of(path).unlink()
            lock.release()

    def _wait(self, lock: FileLock, lock_path: Path, nodes: str, started: float) -> None:
        from filelock import Timeout

        while True:
            self.say(waiting_line(nodes, read_holder(lock_path), time.monotonic() - started, time.time()))
            try:
                lock.acquire(timeout=self.every)
            except Timeout:
                continue
            self.say(f"dlperf: {nodes} free after {time.monotonic() - started:.0f} s of waiting: this session starts")
            return


def _write(path: Path, holder: Holder) -> None:
    """The note, whole or not at all (a waiter never reads half of it)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(asdict(holder)))
    os.replace(tmp, path)
