"""``--dlperf-cluster slurm`` against a real Slurm 22.05 (Debian's slurm-wlm): slurmctld and two slurmd
nodes in network namespaces of their own, each with its own hostname and /tmp (tests/slurmctl.py)."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from pytest_dlperf.clusters.slurm.cluster import gres_gpus
from pytest_dlperf.clusters.slurm.commands import AllocationSpec, StepSpec

from . import suite
from .frameworks import ensure_horovod
from .procs import _live_tagged, signal_when
from .slurmctl import NET, SlurmTestCluster, slurm_cluster  # noqa: F401  (the fixture)

# starts a real Slurm (slurmctld, slurmd in network namespaces): not in the quick tier (tests/quick.sh; docs/testing.md)
pytestmark = pytest.mark.real

ROOT = suite.ROOT
TINY = [*suite.TINY_ENGINE, *suite.QUICK_PROBES]
SMALL = ["--dlperf-model", "resnet50", "--dlperf-precision", "fp32", "--dlperf-batch-size", "2",
         "--dlperf-image-size", "32", "--dlperf-warmup-iters", "1", "--dlperf-iters", "2", "--dlperf-repeats", "1",
         "--dlperf-timeout", "180", *suite.QUICK_PROBES]  # no test here judges the hardware probe


@pytest.fixture(autouse=True)
def _no_job_carries_over(request):
    """The cluster is the session's: a test that failed with a job still allocated (a harness it had
    to SIGKILL) must not fail the next ones too. Runs after the test's own checks."""
    yield
    if "slurm_cluster" in request.fixturenames:
        cluster = request.getfixturevalue("slurm_cluster")
        left = [j.split()[0] for j in cluster.jobs()]
        if left:
            cluster.run("scancel", *left, check=False)
        cluster.wait_idle()


def suite_cmd(report: Path, *args: str, small: bool = True, tiny: bool = False) -> list[str]:
    """The suite on the Slurm kind; ``tiny``: on the tiny engine (tests/tiny), for the kind's mechanisms."""
    return suite.command(f"--dlperf-report={report}", f"--dlperf-baseline-dir={report / 'baselines'}",
                         "--dlperf-cluster", "slurm", f"--dlperf-slurm-python={sys.executable}",
                         *(SMALL if small else []), *(TINY if tiny else ()), *args)


def run_suite(cluster, report: Path, *args: str, env: dict | None = None, timeout: float = 300,
              small: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(suite_cmd(report, *args, small=small), cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=env or cluster.env)


TRAINING_STEP = re.compile(r" dlperf-[0-9a-f]{12}$")


def training_steps(cluster) -> list[str]:
    """The job's training steps, named ``dlperf-`` and the first 12 hex digits of the run's tag.

    Matched by that form, not by excluding the others: the short steps (``dlperf-exec``), the
    hardware probe (``dlperf-probe-*``), the framework check (``dlperf-fw-*``) and the reach check
    (``dlperf-reach-*``) also run before a case, and a test that downs a node on seeing one of them
    downs it before training starts (CI, 2026-11-23: the mkdir of the run failed instead)."""
    return [s for s in cluster.job_steps() if TRAINING_STEP.search(s)]


def workload_processes(cluster: SlurmTestCluster) -> list[tuple[int, str]]:
    """Tagged processes of runs on this cluster's nodes (the harness's sweep must leave none): those in its nodes'
    network namespaces. Another xdist worker's test cluster, training at the same moment, runs its own (seen in
    CI: a sigterm test's check found the other worker's 1n1g run)."""
    mine = {os.stat(f"/run/netns/{ns}").st_ino for ns in NET.namespaces(cluster.block)}
    assert len(mine) == len(cluster.nodes), f"the cluster's namespaces are gone: {sorted(mine)}"
    out = []
    for pid, _, cmd in _live_tagged():
        if "dlperf-slurm-" not in cmd:
            continue
        try:
            if os.stat(f"/proc/{pid}/ns/net").st_ino in mine:
                out.append((pid, cmd))
        except OSError:  # it ended meanwhile
            continue
    return out


def test_commands_are_argument_lists_a_user_can_read():
    spec = AllocationSpec(nodes=4, partition="gpu", account="perf", time="01:00:00", gpus_per_node=8,
                          constraint="a100", extra=("--exclusive",), name="dlperf-x")
    assert spec.salloc_argv() == ["salloc", "--no-shell", "--nodes=4", "--exclusive", "--job-name=dlperf-x", "--partition=gpu",
                                  "--account=perf", "--time=01:00:00", "--constraint=a100", "--gpus-per-node=8",
                                  "--exclusive"]
    step = StepSpec("42", ["gpu7"], ["python3", "train.py", "--a", "b c"], name="dlperf-t",
                    env={"X": "1,2", "DLPERF_RUN_TAG": "t"}, cwd="/tmp/r", gres="gpu:8")
    assert step.srun_argv() == [
        "srun", "--jobid=42", "--overlap", "--nodes=1", "--ntasks=1", "--ntasks-per-node=1", "--nodelist=gpu7",
        "--job-name=dlperf-t", "--kill-on-bad-exit=1", "--quiet", "--export=ALL", "--gres=gpu:8",
        "--chdir=/tmp/r", "env", "DLPERF_RUN_TAG=t", "X=1,2", "python3", "train.py", "--a", "b c"]
    assert gres_gpus("gpu:a100:8(S:0-1)") == (8, "a100")
    assert gres_gpus("gpu:4") == (4, "")
    assert gres_gpus("(null)") == (0, "")


def test_the_harness_allocates_trains_two_nodes_and_releases(slurm_cluster, tmp_path):
    """No allocation: salloc --no-shell of two nodes, DDP trains them (a one-node case runs on the first alike),
    scancel at the end. The report directory is under /tmp, which the nodes do not share: files travel with
    sbcast."""
    report = tmp_path / "report"
    r = run_suite(slurm_cluster, report, "--nodes", "2", "--dlperf-slurm-partition", "debug",
                  "--dlperf-slurm-time", "10", "-k", "2n1g")
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout + r.stderr
    assert "slurm: job" in out and "runs on n1,n2" in out and "released allocation" in out
    doc = json.loads((report / "results.json").read_text())
    cluster = doc["environment"]["cluster"]
    assert cluster["kind"] == "slurm" and [n["name"] for n in cluster["nodes"]] == ["n1", "n2"]
    assert [n["address"] for n in cluster["nodes"]] == [slurm_cluster.addresses["n1"], slurm_cluster.addresses["n2"]]
    assert cluster["slurm"]["owned"] is True and cluster["slurm"]["shared_workdir"] is False
    (two,) = doc["cases"]
    assert two["case"]["id"] == "resnet50-fp32-bs2-32px-2n1g"
    assert two["world_size_seen"] == 2 and two["median"] > 0
    (run,) = two["runs"]
    job = cluster["slurm"]["job"]
    for rank, (line, node) in enumerate(zip(run["commands"], ("n1", "n2"))):
        assert line.startswith(f"srun --jobid={job} --overlap --nodes=1 --ntasks=1 ")
        assert f"--nodelist={node}" in line and f"--node_rank {rank}" in line
        assert f"--master_addr {slurm_cluster.addresses['n1']}" in line and f"/tmp/dlperf-slurm-{job}/" in line
    # the profile is named after the nodes' Slurm features (sorted), not the probe's CPU model
    assert re.search(r"'cpu-dlperf-testbox-zen4-\d+c-torch2'", two["verdict"]["throughput"]["message"])
    assert slurm_cluster.jobs() == []
    assert workload_processes(slurm_cluster) == []


def test_inside_an_allocation_it_runs_there_and_leaves_it(slurm_cluster, tmp_path):
    """salloc by the user: the harness uses that job's nodes, cancels nothing of it, and horovodrun
    on node 0 starts node 1's ranks through srun (no SSH between compute nodes). The work
    directory (outside /tmp) is seen by both nodes, so no file is sent."""
    ensure_horovod()  # not left to test_horovod.py having run first
    job, nodelist = slurm_cluster.allocate(2)
    shared = Path(tempfile.mkdtemp(prefix="dlperf-slurm-shared-", dir="/var/tmp"))
    try:
        env = {**slurm_cluster.env, "SLURM_JOB_ID": job, "SLURM_JOB_NODELIST": nodelist}
        report = tmp_path / "report"
        r = run_suite(slurm_cluster, report, "--backend", "horovod", "-k", "torch and 2n1g",
                      f"--dlperf-slurm-workdir={shared}", "--dlperf-slurm-partition", "ignored", env=env)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "--dlperf-slurm-partition not used" in r.stderr
        doc = json.loads((report / "results.json").read_text())
        cluster = doc["environment"]["cluster"]
        assert cluster["slurm"] == {**cluster["slurm"], "job": job, "owned": False, "shared_workdir": True}
        (case,) = doc["cases"]
        assert case["world_size_seen"] == 2
        (line,) = case["runs"][0]["commands"]
        assert line.startswith(f"srun --jobid={job} ") and "-m horovod.runner.launch" in line and "--nodelist=n1" in line
        assert str(shared) in line
        # the user's job still runs, with none of the harness's steps left in it
        assert [j.split()[0] for j in slurm_cluster.jobs()] == [job]
        assert slurm_cluster.job_steps() == []
        assert workload_processes(slurm_cluster) == []
    finally:
        slurm_cluster.run("scancel", job, check=False)
        slurm_cluster.wait_idle()
        shutil.rmtree(shared, ignore_errors=True)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupted_mid_run_nothing_is_left(slurm_cluster, tmp_path, sig):
    """Ctrl-C (or a CI runner's SIGTERM) while a 2-node run trains: the allocation is cancelled
    and no job, step or process is left."""
    cmd = suite_cmd(tmp_path / "report", "--nodes", "2", "-k", "2n1g", "--dlperf-iters", "500",
                    "--dlperf-timeout", "300", tiny=True)

    def training() -> bool:
        return training_steps(slurm_cluster) != []

    code, out = signal_when(cmd, ROOT, training, sig, env=slurm_cluster.env, settle=3.0)
    assert code != 0, out
    assert "released allocation" in out or "cancelled job" in out, out
    assert slurm_cluster.jobs() == [], out
    assert workload_processes(slurm_cluster) == [], out
    slurm_cluster.wait_idle()


def test_a_node_that_goes_down_fails_the_run_naming_it(slurm_cluster, tmp_path):
    cmd = suite_cmd(tmp_path / "report", "--nodes", "2", "-k", "2n1g", "--dlperf-iters", "500",
                    "--dlperf-timeout", "300", tiny=True)
    proc = subprocess.Popen(cmd, cwd=ROOT, env=slurm_cluster.env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 180
        while not training_steps(slurm_cluster):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[0]
            time.sleep(0.2)
        time.sleep(3)
        slurm_cluster.run("scontrol", "update", "nodename=n2", "state=down", "reason=dlperf-test-power-loss")
        out, _ = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        slurm_cluster.resume("n2")
    assert proc.returncode == 1, out
    assert "failed; slurm: node n2 is DOWN" in out and "(Reason=dlperf-test-power-loss" in out and "job" in out and "(NODE_FAIL)" in out, out
    assert slurm_cluster.jobs() == [], out
    assert workload_processes(slurm_cluster) == [], out
    slurm_cluster.wait_idle()


def test_nodes_that_cannot_run_python_fail_the_session_and_release(slurm_cluster, tmp_path):
    r = run_suite(slurm_cluster, tmp_path / "report", "--nodes", "2",
                  "--dlperf-slurm-python=/nonexistent/python3", timeout=120)
    assert r.returncode == 4, r.stdout + r.stderr
    err = r.stderr
    assert "slurm preflight failed on" in err and "--- n1:" in err and "--- n2:" in err
    assert "/nonexistent/python3" in err and "--dlperf-slurm-python" in err
    assert "released allocation" in err
    assert slurm_cluster.jobs() == []


def test_an_allocation_that_stays_pending_is_cancelled_after_the_wait(slurm_cluster, tmp_path):
    blocker, _ = slurm_cluster.allocate(2, name="someone-else", exclusive=True)
    try:
        r = run_suite(slurm_cluster, tmp_path / "report", "--nodes", "2", "--dlperf-slurm-wait", "3", timeout=120)
        assert r.returncode == 4, r.stdout + r.stderr
        err = r.stderr
        assert "pending (Resources)" in err, err  # the progress line with squeue's reason
        assert "still PENDING (Resources) after 3s (--dlperf-slurm-wait): cancelled" in err, err
        assert [j.split()[0] for j in slurm_cluster.jobs()] == [blocker]
        # Ctrl-C while the job waits in the queue: it is cancelled too
        cmd = suite_cmd(tmp_path / "report2", "--nodes", "2")
        code, out = signal_when(cmd, ROOT, lambda: len(slurm_cluster.jobs()) == 2, signal.SIGINT,
                                env=slurm_cluster.env, settle=1.0)
        assert code != 0 and "cancelled job" in out, out
        assert [j.split()[0] for j in slurm_cluster.jobs()] == [blocker]
    finally:
        slurm_cluster.run("scancel", blocker, check=False)
        slurm_cluster.wait_idle()


def test_a_stale_allocation_or_too_many_nodes_is_a_usage_error(slurm_cluster, tmp_path):
    stale = {**slurm_cluster.env, "SLURM_JOB_ID": "999999"}
    r = run_suite(slurm_cluster, tmp_path / "r1", env=stale, timeout=60)
    assert r.returncode == 4 and "SLURM_JOB_ID=999999 is set but squeue lists no nodes" in r.stderr, r.stderr
    # more nodes than the partition has: Slurm queues it (PartitionConfig); the wait ends it
    r = run_suite(slurm_cluster, tmp_path / "r2", "--nodes", "3", "--dlperf-slurm-wait", "2", timeout=60)
    assert r.returncode == 4 and "still PENDING (" in r.stderr and "cancelled" in r.stderr, r.stderr
    assert slurm_cluster.jobs() == []
