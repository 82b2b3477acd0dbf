"""The test bed itself (tests/sshd.py, tests/slurmctl.py): a test run killed midway, or a second run at
the same time on the same machine, must not break the next run's sshd and Slurm nodes.

Each case runs the bed in child processes, as a second test session on this machine would: a child
holds an address block of its own while it lives, and the next child to take that block finds
whatever the dead one left.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from .slurmctl import NET, block_state_files, ensure_slurm
from .sshd import address_block

# starts the sshd and Slurm rigs: not in the quick tier (tests/quick.sh; docs/testing.md)
pytestmark = pytest.mark.real

ROOT = Path(__file__).resolve().parent.parent

# a child that starts the bed, prints what it holds and waits to be killed (or told to stop)
CHILD = r"""
import json, os, sys, time
import tests.slurmctl as slurmctl
import tests.sshd as sshd

if "orphans" in sys.argv:  # the daemons as an older bed started them: outliving a killed run
    slurmctl.DIE_WITH_PARENT.clear()
cluster = slurmctl.start(2, private_tmp=False)
nodes = sshd.start_nodes(1, __import__("pathlib").Path(sys.argv[1]))
print(json.dumps({"block": sshd.address_block(), "daemons": [p.pid for p in cluster.daemons],
                  "sshd": nodes.nodes[0].proc.pid}), flush=True)
if sys.stdin.readline().strip() == "stop":
    nodes.close()
    cluster.stop()
    print("stopped", flush=True)
"""


def child(tmp: Path, *flags: str) -> tuple[subprocess.Popen, dict]:
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp), *flags], cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line:
        raise AssertionError(f"the child bed did not start: {proc.wait(timeout=30)} {proc.stderr.read()[-3000:]}")
    return proc, json.loads(line)


def gone(pids: list[int], timeout: float = 15) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE for p in pids):
            return True
        time.sleep(0.2)
    return False


@pytest.mark.skipif(os.geteuid() != 0, reason="the bed's namespaces and daemons need root")
def test_a_killed_run_leaves_nothing_that_breaks_the_next_and_runs_at_once_do_not_share(tmp_path):
    ensure_slurm()
    mine = address_block()
    # a run killed midway with daemons that outlive it (as the bed's daemons did before): the next
    # run to take its block clears them, their namespaces and links, and starts
    first, held = child(tmp_path / "a", "orphans")
    try:
        assert held["block"] != mine  # a second session at once gets addresses of its own
        first.kill()
        first.wait()
        assert not gone(held["daemons"], timeout=1)  # the orphans are there to be cleared
        assert NET.links(held["block"])
        second, again = child(tmp_path / "b")
        assert again["block"] == held["block"] and gone(held["daemons"], timeout=1)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(held["sshd"], signal.SIGKILL)  # its sshd is an orphan too (sshd is on a port of its own)
    # a run killed with today's bed: every daemon dies with it (parent-death signal)
    second.kill()
    second.wait()
    assert gone(again["daemons"] + [again["sshd"]])
    # and the next one starts on the same block and, stopped, leaves nothing
    third, last = child(tmp_path / "c")
    assert last["block"] == held["block"]
    out, err = third.communicate("stop\n", timeout=60)
    assert third.returncode == 0 and "stopped" in out, err[-2000:]
    assert gone(last["daemons"] + [last["sshd"]], timeout=1)
    assert NET.links(last["block"]) == [] and NET.namespaces(last["block"]) == []
    assert block_state_files(last["block"]) == []  # the killed runs' directories went with their daemons
