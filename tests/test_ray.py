"""``--dlperf-cluster ray`` against a real Ray cluster (ray 2.60.0): a head and three workers, 1 CPU each,
every one in a network namespace of its own with its own /tmp (tests/raycluster.py), attached from here
through Ray Client (``ray://<head>:10001``) as a harness outside the cluster attaches."""
from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from . import suite
from .procs import _live_tagged
from .raycluster import ray_cluster  # noqa: F401  (the fixture)

# starts a real Ray cluster and trains with torch: not in the quick tier (tests/quick.sh; docs/testing.md)
pytestmark = pytest.mark.real

ROOT = suite.ROOT
SMALL = [*suite.SMALL_CASE, "--dlperf-iters", "2", "--dlperf-repeats", "1", "--dlperf-timeout", "240",
         *suite.QUICK_PROBES]
TINY = [*suite.TINY_ENGINE, *suite.QUICK_PROBES]


def suite_cmd(cluster, report: Path, *args: str, tiny: bool = False) -> list[str]:  # noqa: ANN001
    return suite.command(f"--dlperf-report={report}", f"--dlperf-baseline-dir={report / 'baselines'}",
                         "--dlperf-cluster", "ray", f"--dlperf-ray-address={cluster.address}",
                         *(TINY if tiny else ()), *SMALL, *args)


def run_suite(cluster, report: Path, *args: str, timeout: float = 600, tiny: bool = False) -> subprocess.CompletedProcess:  # noqa: ANN001
    return subprocess.run(suite_cmd(cluster, report, *args, tiny=tiny), cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def tagged_in(cluster, i: int) -> list[str]:  # noqa: ANN001
    """Command lines of the run's processes (tagged) living in node i's namespace."""
    pids = set(subprocess.run(["ip", "netns", "pids", cluster.namespace(i)], capture_output=True,
                              text=True).stdout.split())
    return [cmd for pid, _, cmd in _live_tagged() if str(pid) in pids]


def assert_nothing_left(cluster, out: str) -> None:  # noqa: ANN001
    """No actor or placement group of any session in the cluster, no process of a run on any node."""
    deadline = time.monotonic() + 10  # a removal Ray has taken but not yet carried out
    while (left := cluster.leftovers()) != {"actors": [], "groups": {}} and time.monotonic() < deadline:
        time.sleep(0.5)
    assert left == {"actors": [], "groups": {}}, out
    # in this cluster's nodes: the other xdist worker's Ray test cluster may be training beside it
    assert [cmd for i in range(len(cluster.addresses)) for cmd in tagged_in(cluster, i)
            if "pytest-dlperf-ray" in cmd] == [], out


def test_the_ladder_runs_on_ray_nodes_ddp_trains_there_and_nothing_is_left(ray_cluster, tmp_path):
    """The dry-run lists the Ray nodes and each node's command; then the tiny engine runs the ladder 1n1g, 2n1g,
    4n1g on the four nodes and DDP trains torch at 2n1g, files going through Ray to each node's own /tmp and
    back. (What a Ray node runs is the cluster's: the engine's own launch, torch's included, is the same on
    every kind; FSDP trains in tests/test_llm.py.)"""
    head, *workers = ray_cluster.addresses
    dry = run_suite(ray_cluster, tmp_path / "dry", "--backend", "ddp", "--dlperf-dryrun", "-k", "4n1g")
    out = dry.stdout + dry.stderr
    assert dry.returncode == 0, f"{out}\n{ray_cluster.logs()}"
    assert f"ray: attached to {ray_cluster.address}" in out, out
    assert f"nodes: {head} (head, 1 CPU), " + ", ".join(f"{w} (1 CPU)" for w in workers) in out, out
    lines = [ln for ln in dry.stdout.splitlines() if "torch.distributed.run" in ln]
    assert [ln.split(":")[0] for ln in lines] == ray_cluster.addresses, dry.stdout
    assert all(f"--master_addr {head}" in ln and f"--node_rank {k}" in ln for k, ln in enumerate(lines)), dry.stdout
    assert_nothing_left(ray_cluster, out)

    for engine, args, kinds in (("tiny", ("--dlperf-iters", "2", "--dlperf-repeats", "1"), {"1n1g", "2n1g", "4n1g"}),
                                ("ddp", ("-k", "2n1g"), {"2n1g"})):
        report = tmp_path / engine
        r = run_suite(ray_cluster, report, *args, tiny=engine == "tiny")
        out = r.stdout + r.stderr
        assert r.returncode == 0, f"{out}\n{ray_cluster.logs()}"
        doc = json.loads((report / "results.json").read_text())
        cluster = doc["environment"]["cluster"]
        assert cluster["kind"] == "ray" and [n["name"] for n in cluster["nodes"]] == ray_cluster.addresses
        assert cluster["ray"]["address"] == ray_cluster.address and cluster["ray"]["placement_groups"]
        seen = {c["case"]["topology"]: c for c in doc["cases"]}
        assert set(seen) == kinds and {c["case"]["backend"] for c in doc["cases"]} == {engine}, sorted(seen)
        for topology, case in seen.items():
            n = int(topology[0])
            assert case["world_size_seen"] == n and case["median"] > 0, (engine, topology)
            (run,) = case["runs"]
            assert run["meta"]["nnodes"] == n
            assert set(run["logs"]) == set(ray_cluster.addresses[:n])
            assert all(f"{head}" in c and "/tmp/pytest-dlperf-ray/dlperf-" in c for c in run["commands"])
            if engine == "ddp":
                assert all(f"--master_addr {head}" in c for c in run["commands"])
                assert run["meta"]["frameworks"]["torch"].startswith("2.") and run["meta"]["wrapper"] == \
                    "DistributedDataParallel"
            # each node's output came back into its log here
            assert all(Path(p).read_text().strip() for p in run["logs"].values()), run["logs"]
        assert_nothing_left(ray_cluster, out)


def test_a_worker_killed_mid_launch_fails_the_case_naming_it(ray_cluster, tmp_path):
    """A worker node dies (every process of it killed) while a 2-node launch runs: the case fails naming
    that node, and nothing of the session is left in the cluster or on the nodes."""
    worker = ray_cluster.addresses[1]
    cmd = suite_cmd(ray_cluster, tmp_path / "report", "--nodes", "2", "-k", "2n1g", "--dlperf-iters", "2000",
                    "--dlperf-timeout", "300", tiny=True)
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 180
        while not any("workload.py" in c for c in tagged_in(ray_cluster, 1)):  # the tiny engine's ranks
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[0]
            time.sleep(0.2)
        time.sleep(2)
        ray_cluster.kill_node(1)
        out, _ = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    try:
        assert proc.returncode == 1, out
        assert (f"ray: node {worker} is no longer alive" in out or f"ray: lost node {worker}" in out
                or f"ray: the agent on node {worker} does not answer" in out), out
        assert_nothing_left(ray_cluster, out)
    finally:
        ray_cluster.restart_node(1)
