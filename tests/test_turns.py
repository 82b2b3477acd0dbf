"""Taking turns on shared nodes (clusters/turns.py): a session that waits says who holds them, again and again."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time

from filelock import FileLock

from pytest_dlperf.clusters.turns import Holder, Turns, note_of, read_holder, waiting_line

HOLD = """
import sys
from filelock import FileLock
from pytest_dlperf.clusters.turns import Turns
with Turns().take(FileLock(sys.argv[1]), "the nodes", sys.argv[2]):
    print("held", flush=True)
    sys.stdin.readline()
"""


def until(done, seconds: float = 60.0) -> bool:  # noqa: ANN001
    """Whether ``done()`` came true within ``seconds`` (a loaded host starts a thread late)."""
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_waiter_says_who_holds_the_lock_since_when_again_while_it_waits_and_when_it_starts(tmp_path):
    lock = tmp_path / "nodes.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(lock), "resnet50-fp32-bs8-64px-2n1g"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    said: list[str] = []
    entered = threading.Event()

    def wait_for_it() -> None:
        with Turns(say=said.append, every=0.2).take(FileLock(str(lock)), "this machine's local nodes", "mine"):
            entered.set()
            assert read_holder(lock).what == "mine"  # now this session's note
    try:
        assert holder.stdout.readline() == "held\n"
        assert read_holder(lock) == Holder(holder.pid, read_holder(lock).host, "resnet50-fp32-bs8-64px-2n1g",
                                           read_holder(lock).since)
        waiter = threading.Thread(target=wait_for_it, daemon=True)
        waiter.start()
        assert until(lambda: len(said) >= 3)  # the line repeats while it waits (however late the thread starts)
        assert not entered.is_set()
    finally:
        holder.communicate("\n", timeout=30)
    waiter.join(30)
    assert entered.is_set()
    *waiting, started = said
    assert len(waiting) >= 3, said  # the line repeats while it waits
    pattern = (rf"dlperf: waiting \d+ s for this machine's local nodes: held by pid {holder.pid} "
               r"\(resnet50-fp32-bs8-64px-2n1g\) since \d\d:\d\d:\d\d, \d+ s ago; this session starts when they are free")
    assert all(re.fullmatch(pattern, line) for line in waiting), said
    assert re.fullmatch(r"dlperf: this machine's local nodes free after \d+ s of waiting: this session starts", started)
    assert not note_of(lock).exists()  # each holder removed its note when it let go


def test_no_wait_no_word_and_a_lease_inside_a_lease_is_only_counted(tmp_path):
    said: list[str] = []
    turns, lock = Turns(say=said.append, every=0.1), FileLock(str(tmp_path / "l.lock"))
    with turns.take(lock, "the nodes", "outer"):
        with turns.take(lock, "the nodes", "inner"):
            assert read_holder(tmp_path / "l.lock").what == "outer"
        assert lock.is_locked and read_holder(tmp_path / "l.lock").what == "outer"
    assert not lock.is_locked and said == [] and not note_of(tmp_path / "l.lock").exists()


def test_a_missing_or_stale_note_changes_the_words_not_the_order():
    now = time.time()
    assert "another session holds them (it left no note" in waiting_line("the nodes", None, 3, now)
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    gone = Holder(int(done.stdout), os.uname().nodename, "a case", now - 60)
    line = waiting_line("the nodes", gone, 3, now)
    assert f"names pid {int(done.stdout)} (a case) since" in line and "which has ended; another session holds them" in line
    elsewhere = Holder(7, "gpu-node-7", "", now - 5)
    assert "held by pid 7 on gpu-node-7 since" in waiting_line("the nodes", elsewhere, 3, now)


def test_a_core_lease_launch_that_waits_for_a_measuring_session_says_whose_cores_they_are(tmp_path, monkeypatch):
    """--dlperf-local-lease core: a launch waits while a ``machine`` session holds every core; past ``every``
    seconds it says so, naming that session from the note beside the machine lease."""
    from pytest_dlperf.clusters import local_leases

    monkeypatch.setattr(local_leases, "CORE_LOCKS", tmp_path / "cores")
    monkeypatch.setattr(local_leases, "MACHINE_LEASE", tmp_path / "machine.lock")
    said: list[str] = []
    got: list[list[int] | None] = []
    measuring = local_leases.MachineLease([0, 1], tmp_path / "machine.lock")
    with measuring.lease(Turns(), "resnet50-fp32-bs8-64px-1n1g"):
        def launch() -> None:
            with local_leases.CoreLease([0, 1]).hold(1, Turns(say=said.append, every=0.2)) as cores:
                got.append(cores)
        waiter = threading.Thread(target=launch, daemon=True)
        waiter.start()
        assert until(lambda: len(said) >= 2)
        assert not got
    waiter.join(30)
    assert got and len(got[0]) == 1
    assert len(said) >= 2, said
    assert all(re.fullmatch(rf"dlperf: waiting \d+ s for 1 free core of this machine: held by pid {os.getpid()} "
                            r"\(resnet50-fp32-bs8-64px-1n1g\) since .*; this session starts when they are free", line)
               for line in said), said
