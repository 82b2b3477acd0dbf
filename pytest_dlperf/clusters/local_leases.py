"""Who takes turns on the local cluster (``--dlperf-local-lease``), one strategy per class behind ``LocalLease``.

- ``machine`` (the default): a session holds every core of this machine while it measures, so no other session's
  launch runs beside its launches.
- ``session``: only the session's own xdist workers take turns (a lock in its report directory).
- ``core``: each launch holds only the cores its nodes use, one core a node, chosen among the free ones when it
  starts: two one-node launches of two sessions run at once on two cores. For sessions that judge no speed (a
  functional check, the project's own tests); a ``machine`` session waits for them and they for it.

The locks are files in this machine's temporary directory, so every session on the machine sees them.
"""
from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Protocol

from filelock import FileLock, Timeout

from .turns import Turns, read_holder, waiting_line

# The lock every ``machine`` session takes turns on, then each core's lock (``core`` sessions hold those).
MACHINE_LEASE = Path(tempfile.gettempdir()) / "pytest-dlperf-local.lock"
CORE_LOCKS = Path(tempfile.gettempdir()) / "pytest-dlperf-local-cores"
POLL = 0.05  # seconds between looks for free cores


class LocalLease(Protocol):
    """How a local cluster's session shares this machine with other sessions."""

    kind: str  # machine, session or core

    def lease(self, turns: Turns, what: str) -> contextlib.AbstractContextManager[None]:
        """Held around a session's launches of ``what`` (a case, a round: ``Cluster.lease``); ``turns`` says who
        holds the lease while this session waits for it."""
        ...

    def hold(self, count: int, turns: Turns) -> contextlib.AbstractContextManager[list[int] | None]:
        """Held around one launch on ``count`` nodes: the cores it runs on (node i on the i-th), or None for
        the nodes' own shares of the machine; ``turns`` says who holds them while the launch waits."""
        ...


def _core_lock(core: int) -> FileLock:
    CORE_LOCKS.mkdir(parents=True, exist_ok=True)
    return FileLock(str(CORE_LOCKS / f"core{core}.lock"))


def _queue() -> FileLock:
    """Taken while a session gathers cores, so one that waits for several is not passed by those that need one."""
    CORE_LOCKS.mkdir(parents=True, exist_ok=True)
    return FileLock(str(CORE_LOCKS / "queue.lock"))


class SessionLease:
    """Only the session's own xdist workers take turns (a lock file of the session's). Its launches are held by
    the lease around them, not one by one."""

    kind = "session"
    nodes = "this session's local nodes"  # as the line of a worker that waits names them

    def __init__(self, path: Path) -> None:
        self.path = path

    @contextlib.contextmanager
    def lease(self, turns: Turns, what: str) -> Iterator[None]:
        with turns.take(FileLock(str(self.path)), self.nodes, what), self.also():
            yield

    def also(self) -> contextlib.AbstractContextManager[None]:
        """What the lease holds besides its lock file (nothing)."""
        return contextlib.nullcontext()

    @contextlib.contextmanager
    def hold(self, count: int, turns: Turns) -> Iterator[list[int] | None]:
        yield None


class MachineLease(SessionLease):
    """Every session on this machine takes turns on one lock, one measurement at a time, and holds every core
    while it does: ``core`` sessions' launches wait for it, and it for them."""

    kind = "machine"
    nodes = "this machine's local nodes"

    def __init__(self, cores: Sequence[int], path: Path = MACHINE_LEASE) -> None:
        super().__init__(path)
        self.cores = sorted(cores)

    @contextlib.contextmanager
    def also(self) -> Iterator[None]:
        with contextlib.ExitStack() as held:
            with _queue():
                for core in self.cores:
                    held.enter_context(_core_lock(core))
            yield


class CoreLease:
    """Each launch holds one free core per node (all of them where it has more nodes than the machine cores)."""

    kind = "core"

    def __init__(self, cores: Sequence[int]) -> None:
        self.cores = sorted(cores)

    @contextlib.contextmanager
    def lease(self, turns: Turns, what: str) -> Iterator[None]:
        yield

    @contextlib.contextmanager
    def hold(self, count: int, turns: Turns) -> Iterator[list[int] | None]:
        want = max(1, min(count, len(self.cores)))
        with contextlib.ExitStack() as held:
            with _queue():
                got = self._gather(want, held, turns)
            yield got

    def _gather(self, want: int, held: contextlib.ExitStack, turns: Turns) -> list[int]:
        """``want`` free cores, waiting until that many are free at once (never holding some while it waits);
        past ``turns.every`` seconds of waiting, it says so, naming a ``machine`` session that holds them."""
        started = time.monotonic()
        next_say = started + turns.every
        while True:
            if time.monotonic() >= next_say:
                next_say += turns.every
                turns.say(waiting_line(f"{want} free core{'s' if want > 1 else ''} of this machine",
                                       read_holder(MACHINE_LEASE), time.monotonic() - started, time.time(),
                                       unnoted="other sessions' launches hold them (--dlperf-local-lease core)"))
            got: list[int] = []
            with contextlib.ExitStack() as trying:
                for core in self.cores:
                    lock = _core_lock(core)
                    try:
                        lock.acquire(timeout=0)
                    except Timeout:
                        continue
                    trying.callback(lock.release)
                    got.append(core)
                    if len(got) == want:
                        held.push(trying.pop_all())
                        return got
            time.sleep(POLL)


def make_lease(kind: str, cores: Sequence[int], session_path: Path) -> LocalLease:
    """The lease of ``--dlperf-local-lease`` ``kind`` over this machine's ``cores``."""
    if kind == "session":
        return SessionLease(session_path)
    if kind == "core":
        return CoreLease(cores)
    return MachineLease(cores)
