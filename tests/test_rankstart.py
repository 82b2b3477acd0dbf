"""The local cluster's direct start of torch ranks (node/workloads/rankstart.py): torchrun's worker environment,
torchrun's handling of a failing rank and of signals, on standard-library ranks; real training through it is
every local torch launch of the tests (docs/testing.md)."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_dlperf.launchers.base import WORKLOADS

RANKSTART = WORKLOADS / "rankstart.py"

DUMP_ENV = """
import json, os, sys
with open(os.path.join(sys.argv[1], "rank%s.json" % os.environ["RANK"]), "w") as fh:
    json.dump(dict(os.environ), fh)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(tmp_path: Path, script: str, nproc: int, nnodes: int = 1, node_rank: int = 0,
          **kw: object) -> subprocess.Popen:
    path = tmp_path / "rank.py"
    path.write_text(script)
    argv = [sys.executable, str(RANKSTART), "--nnodes", str(nnodes), "--node-rank", str(node_rank),
            "--nproc-per-node", str(nproc), "--master-addr", "127.0.0.1", "--master-port", str(free_port()),
            "--run-id", "run-1", str(path), str(tmp_path)]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def wait_for(p: subprocess.Popen, files: list[Path]) -> None:
    """Until every rank has written its file (the start still running), for 20 s at most."""
    deadline = time.monotonic() + 20
    while not all(f.exists() for f in files):
        assert time.monotonic() < deadline and p.poll() is None, p.communicate()
        time.sleep(0.05)


def test_each_rank_gets_torchruns_worker_environment(tmp_path):
    """Node rank 1 of 2 nodes with 2 ranks each holds global ranks 2 and 3, with every variable torchrun's agent
    sets for a static launch; then a real torchrun, started the same way, sets the same variables to the same
    values (its run id, its agent store and its error file aside: they name the agent, which is not there)."""
    p = start(tmp_path, DUMP_ENV, nproc=2, nnodes=2, node_rank=1)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    got = {r: json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (2, 3)}
    assert [got[r]["LOCAL_RANK"] for r in (2, 3)] == ["0", "1"]
    assert {got[2][k] for k in ("WORLD_SIZE", "ROLE_WORLD_SIZE")} == {"4"}
    assert got[3]["GROUP_RANK"] == "1" and got[3]["GROUP_WORLD_SIZE"] == "2" and got[3]["LOCAL_WORLD_SIZE"] == "2"
    assert got[3]["MASTER_ADDR"] == "127.0.0.1" and got[3]["TORCHELASTIC_RUN_ID"] == "run-1"

    pytest.importorskip("torch")
    ours = tmp_path / "ours"
    theirs = tmp_path / "theirs"
    ours.mkdir()
    theirs.mkdir()
    port = str(free_port())
    script = tmp_path / "rank.py"
    subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--nnodes", "1",
                    "--master_addr", "127.0.0.1", "--master_port", port,
                    "--log-dir", str(tmp_path / "logs"), str(script), str(theirs)], check=True, timeout=120,
                   capture_output=True)
    subprocess.run([sys.executable, str(RANKSTART), "--nnodes", "1", "--node-rank", "0", "--nproc-per-node", "2",
                    "--master-addr", "127.0.0.1", "--master-port", port, str(script), str(ours)], check=True,
                   timeout=60, capture_output=True)
    agent_only = {"TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_ERROR_FILE"}
    for rank in (0, 1):
        a = json.loads((theirs / f"rank{rank}.json").read_text())
        b = json.loads((ours / f"rank{rank}.json").read_text())
        set_by_torchrun = {k for k in a if a.get(k) != os.environ.get(k)} - agent_only
        assert set_by_torchrun, "torchrun set no variable for its worker?"
        assert {k: b.get(k) for k in set_by_torchrun} == {k: a[k] for k in set_by_torchrun}


def test_a_failing_rank_stops_the_others_and_its_code_is_the_exit(tmp_path):
    """Local rank 1 exits with 3 at once; rank 0 would sleep a minute: it is stopped, and the line names rank 1."""
    script = """
import os, sys, time
open(os.path.join(sys.argv[1], "pid%s" % os.environ["LOCAL_RANK"]), "w").write(str(os.getpid()))
if os.environ["LOCAL_RANK"] == "1":
    time.sleep(0.5)
    sys.exit(3)
time.sleep(60)
"""
    t0 = time.monotonic()
    p = start(tmp_path, script, nproc=2)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 3 and time.monotonic() - t0 < 15
    assert "rankstart: rank 1 (local rank 1 on node rank 0) exited with code 3; stopping the others" in err
    assert not alive(int((tmp_path / "pid0").read_text()))


def test_sigterm_reaches_every_rank_and_the_start_leaves_with_them(tmp_path):
    """A CI runner's SIGTERM to the start is passed on: each rank's handler runs, and the start exits non-zero."""
    script = """
import os, signal, sys, time
def bye(signum, frame):
    open(os.path.join(sys.argv[1], "term%s" % os.environ["LOCAL_RANK"]), "w").write("x")
    sys.exit(143)
signal.signal(signal.SIGTERM, bye)
open(os.path.join(sys.argv[1], "ready%s" % os.environ["LOCAL_RANK"]), "w").write("x")
time.sleep(60)
"""
    p = start(tmp_path, script, nproc=2)
    wait_for(p, [tmp_path / f"ready{r}" for r in (0, 1)])
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=20)
    assert p.returncode == 128 + signal.SIGTERM
    assert (tmp_path / "term0").exists() and (tmp_path / "term1").exists()


def test_ranks_that_all_succeed_leave_a_zero_exit(tmp_path):
    p = start(tmp_path, "import sys\n", nproc=3)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0 and err == ""


def test_a_failing_rank_takes_down_what_the_others_started(tmp_path):
    """Each rank is a session of its own and is stopped whole: rank 0's child (a data loader's worker, say) goes
    with it when rank 1 fails."""
    script = """
import os, subprocess, sys, time
if os.environ["LOCAL_RANK"] == "0":
    child = subprocess.Popen(["sleep", "60"])
    open(os.path.join(sys.argv[1], "child"), "w").write(str(child.pid))
    time.sleep(60)
while not os.path.exists(os.path.join(sys.argv[1], "child")):
    time.sleep(0.05)
sys.exit(2)
"""
    p = start(tmp_path, script, nproc=2)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 2, err
    child = int((tmp_path / "child").read_text())
    deadline = time.monotonic() + 5
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child)


def test_ranks_die_with_a_killed_start(tmp_path):
    """SIGKILL to the start, which it cannot pass on: its ranks get SIGKILL from the kernel (parent-death signal)."""
    script = """
import os, sys, time
open(os.path.join(sys.argv[1], "pid%s" % os.environ["LOCAL_RANK"]), "w").write(str(os.getpid()))
time.sleep(60)
"""
    p = start(tmp_path, script, nproc=2)
    wait_for(p, [tmp_path / f"pid{r}" for r in (0, 1)])
    pids = [int((tmp_path / f"pid{r}").read_text()) for r in (0, 1)]
    p.kill()
    p.communicate(timeout=10)
    deadline = time.monotonic() + 5
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(pid) for pid in pids)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped by its parent, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False
