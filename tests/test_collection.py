"""Nothing happens at collection: collecting, --collect-only, --help and a session whose tests are
all deselected touch no node (the case matrix comes from the cluster kind's declared shape); the
cluster is built when the first case is about to run, and nodes unlike that shape stop the session
there in one line naming the option that fixes it."""
from __future__ import annotations

import contextlib
import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_dlperf.clusters.base import Node
from pytest_dlperf.clusters.shape import ClusterShape, mismatch, of_nodes
from pytest_dlperf.clusters.slurm.options import SlurmOptions
from pytest_dlperf.clusters.slurm.shape import count_hosts, slurm_shape
from pytest_dlperf.clusters.ssh.given import ssh_shape
from pytest_dlperf.clusters.ssh.options import SSHOptions
from pytest_dlperf.options.core import RunOptions

from .suite import TINY_ENGINE, run_suite

HOSTS = ("127.0.0.5", "127.0.0.6")  # loopback addresses where no sshd listens
# A connection tried against a listener that never answers waits this long for the SSH banner.
CONNECT_TIMEOUT = 30


@pytest.fixture
def listeners() -> Iterator[tuple[int, list[socket.socket]]]:
    """A TCP port that both HOSTS listen on and never answer: any connection attempt lands in the
    accept queue (seen by :func:`connected`), and an SSH client would wait for its banner."""
    for _ in range(20):
        socks = []
        try:
            first = socket.create_server((HOSTS[0], 0))
            socks.append(first)
            port = first.getsockname()[1]
            socks.append(socket.create_server((HOSTS[1], port)))
        except OSError:
            for s in socks:
                s.close()
            continue
        for s in socks:
            s.setblocking(False)
        try:
            yield port, socks
        finally:
            for s in socks:
                s.close()
        return
    pytest.fail(f"no port free on both {HOSTS}")


def connected(socks: list[socket.socket]) -> list[str]:
    """The listeners that a connection came to."""
    hit = []
    for s in socks:
        with contextlib.suppress(BlockingIOError):
            conn, _ = s.accept()
            conn.close()
            hit.append(s.getsockname()[0])
    return hit


def ssh_args(port: int, report: Path) -> list[str]:
    return ["--dlperf-cluster", "ssh", "--dlperf-hosts", ",".join(HOSTS), "--dlperf-ssh-port", str(port),
            "--dlperf-ssh-connect-timeout", str(CONNECT_TIMEOUT), "--dlperf-ssh-retries", "0",
            "--dlperf-ssh-config=/dev/null", f"--dlperf-report={report}"]


@pytest.mark.parametrize("args, code", [
    (["--collect-only"], pytest.ExitCode.OK),
    (["--help"], pytest.ExitCode.OK),
    (["-k", "nothing"], pytest.ExitCode.NO_TESTS_COLLECTED),  # every test deselected, none run
], ids=["collect-only", "help", "all-deselected"])
def test_ssh_hosts_are_not_contacted_until_a_case_runs(listeners, tmp_path, args, code):
    port, socks = listeners
    t0 = time.monotonic()
    r = run_suite(*ssh_args(port, tmp_path / "report"), *args, timeout=120)
    took = time.monotonic() - t0
    assert r.returncode == code, r.stdout + r.stderr
    assert connected(socks) == [], r.stdout + r.stderr
    assert took < CONNECT_TIMEOUT / 2, f"took {took:.1f}s"  # no connection waited for a banner
    assert not (tmp_path / "report").exists()
    if "--collect-only" in args:  # the hosts' count and slots, CPU nodes: the ids the nodes would give
        assert "test_train[resnet50-fp32-bs8-64px-1n1g]" in r.stdout
        assert "test_train[resnet50-fp32-bs8-64px-2n1g]" in r.stdout and "amp" not in r.stdout
    if "--help" in args:
        assert "--dlperf-devices" in r.stdout


def test_the_first_case_to_run_connects_and_an_unreachable_node_stops_the_session(listeners, tmp_path):
    """The check above can fail: the same hosts, with a case to run, are reached (and stop the
    session as a usage error naming them, before any case runs)."""
    port, socks = listeners
    args = ssh_args(port, tmp_path / "report")
    args[args.index("--dlperf-ssh-connect-timeout") + 1] = "1"
    r = run_suite(*args, *TINY_ENGINE, "-k", "resnet50 and 1n1g", timeout=120)
    assert r.returncode == pytest.ExitCode.USAGE_ERROR, r.stdout + r.stderr
    assert sorted(connected(socks)) == sorted(HOSTS)
    assert "SSH preflight failed on" in r.stderr and "Traceback" not in r.stdout + r.stderr
    assert "passed" not in r.stdout and not (tmp_path / "report" / "runs").exists()


def test_ssh_gpu_nodes_are_declared_with_dlperf_devices(tmp_path):
    r = run_suite("--collect-only", "--dlperf-cluster", "ssh", "--dlperf-hosts", "10.9.9.1:2,10.9.9.2:2",
                  "--dlperf-devices", "gpu", "-k", "resnet50", f"--dlperf-report={tmp_path / 'report'}",
                  timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    ids = [line.split("[", 1)[1].rstrip("]") for line in r.stdout.splitlines() if "::test_train[" in line]
    # on GPUs every case eager, and compiled only the decoder at 1n1g by default (the 12-minute GPU suite)
    assert ids == [f"resnet50-{p}-bs256-224px-{t}" for p in ("fp32", "amp") for t in ("1n1g", "1n2g", "2n2g")]
    r = run_suite("--collect-only", "--dlperf-cluster", "ssh", "--dlperf-hosts", "10.9.9.1:2,10.9.9.2:2",
                  "--dlperf-devices", "gpu", "-k", "resnet50", "--dlperf-compile", "eager,compiled",
                  f"--dlperf-report={tmp_path / 'report'}", timeout=120)
    both = [line.split("[", 1)[1].rstrip("]") for line in r.stdout.splitlines() if "::test_train[" in line]
    assert both == [f"resnet50-{p}-bs256-224px-{c}{t}" for p in ("fp32", "amp") for t in ("1n1g", "1n2g", "2n2g")
                    for c in ("", "compiled-")]


def test_the_default_gpu_suite_on_one_gpu_is_nine_gpu_bound_cases(tmp_path):
    """The GPU sizes (README, "GPU sizes"): resnet50 and bert-base at 256, ArcFace at 1024, VGG-16 at 64,
    each in fp32 and amp; the decoder in bf16 only, its fp32 on request; the decoder at 1n1g compiled too."""
    def ids(*extra: str) -> list[str]:
        r = run_suite("--collect-only", "--dlperf-cluster", "ssh", "--dlperf-hosts", "10.9.9.1:1", "--dlperf-devices",
                      "gpu", *extra, f"--dlperf-report={tmp_path / 'report'}", timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        return [line.split("[", 1)[1].rstrip("]") for line in r.stdout.splitlines() if "::test_train[" in line]

    assert ids() == [f"{m}-{p}-{size}-1n1g" for m, size in (("resnet50", "bs256-224px"), ("vgg16", "bs64-224px"),
                                                            ("bert-base", "bs256-seq128"),
                                                            ("arcface", "bs1024-112px-cls85742"))
                     for p in ("fp32", "amp")] + ["llama-amp-bs4-seq2048-d2048l16-1n1g",
                                                  "llama-amp-bs4-seq2048-d2048l16-compiled-1n1g"]
    assert ids("--dlperf-model", "llama", "--dlperf-precision", "fp32,amp") == [
        "llama-fp32-bs4-seq2048-d2048l16-1n1g", "llama-fp32-bs4-seq2048-d2048l16-compiled-1n1g",
        "llama-amp-bs4-seq2048-d2048l16-1n1g", "llama-amp-bs4-seq2048-d2048l16-compiled-1n1g"]


def fake_tools(bindir: Path, log: Path, *names: str) -> None:
    """Commands on PATH that only write their name and arguments to ``log``."""
    bindir.mkdir()
    for name in names:
        tool = bindir / name
        tool.write_text(f'#!/bin/sh\necho "{name} $*" >> "{log}"\nexit 1\n')
        tool.chmod(0o755)


def test_slurm_collects_without_slurm_and_starts_no_allocation(tmp_path):
    plain = {"PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin"}
    r = run_suite("--collect-only", "--dlperf-cluster", "slurm", "--nodes", "2",
                  f"--dlperf-report={tmp_path / 'r1'}", env=plain, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "test_train[resnet50-fp32-bs8-64px-2n1g]" in r.stdout
    # with Slurm's commands on PATH, collecting runs none of them
    log = tmp_path / "calls.log"
    fake_tools(tmp_path / "bin", log, "salloc", "srun", "squeue", "scontrol", "scancel", "sbcast")
    env = {"PATH": f"{tmp_path / 'bin'}:{plain['PATH']}"}
    r = run_suite("--collect-only", "--dlperf-cluster", "slurm", "--nodes", "2",
                  f"--dlperf-report={tmp_path / 'r2'}", env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert not log.exists(), log.read_text()
    # the first case to run asks for the allocation (the fake salloc refuses it)
    r = run_suite("--dlperf-cluster", "slurm", "--nodes", "2", *TINY_ENGINE, "-k", "resnet50 and 1n1g",
                  "--dlperf-slurm-wait", "5", f"--dlperf-report={tmp_path / 'r3'}", env=env, timeout=120)
    assert r.returncode == pytest.ExitCode.USAGE_ERROR, r.stdout + r.stderr
    assert any(ln.startswith("salloc ") for ln in log.read_text().splitlines()), log.read_text()


def test_nodes_unlike_the_declared_shape_stop_the_session_in_one_line(tmp_path):
    """The local kind told it has GPU nodes (--dlperf-devices gpu) on this CPU machine: the matrix is
    the GPU profile's, and the nodes built for the first case say otherwise."""
    report = tmp_path / "report"
    r = run_suite(*TINY_ENGINE, "--dlperf-devices", "gpu", "--dlperf-dryrun", "-k", "resnet50 and fp32 and 1n1g",
                  f"--dlperf-report={report}", timeout=120)
    assert r.returncode == pytest.ExitCode.USAGE_ERROR, r.stdout + r.stderr
    out = r.stdout + r.stderr
    (line,) = [ln for ln in r.stderr.splitlines() if ln.startswith("ERROR:")]
    assert line == ("ERROR: --dlperf-cluster local: the case matrix was built for 2 GPU node(s) x 1 slot(s) "
                    "(--nodes (default 2), --dlperf-gpus-per-node and the GPUs nvidia-smi finds here; "
                    "--dlperf-devices gpu), but the nodes have 2 CPU node(s) x 1 slot(s): run with "
                    "--dlperf-devices cpu")
    assert "Traceback" not in out and "dry-run: per-node commands" not in out and "passed" not in r.stdout
    assert not (report / "runs").exists()


def test_under_xdist_each_benchmark_fails_with_the_line_instead_of_crashing_its_worker(tmp_path):
    r = run_suite(*TINY_ENGINE, "-n", "2", "--dlperf-devices", "gpu", "-k", "resnet50 and fp32",
                  f"--dlperf-report={tmp_path / 'report'}", timeout=180)
    out = r.stdout + r.stderr
    assert r.returncode == pytest.ExitCode.TESTS_FAILED, out
    assert "INTERNALERROR" not in out and "Traceback" not in out
    assert out.count("but the nodes have 2 CPU node(s) x 1 slot(s): run with --dlperf-devices cpu") >= 2, out
    assert "2 errors" in r.stdout and not (tmp_path / "report" / "runs").exists()


def test_gpus_detected_at_collection_must_still_be_there_when_the_cluster_is_built(tmp_path):
    """Local GPU detection (nvidia-smi) that finds 4 GPUs while collecting and 2 when the cluster is
    built: the ladder was cut to 2 slots per node, the nodes have 1; the line names the fix."""
    count = tmp_path / "calls"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    smi = bindir / "nvidia-smi"
    smi.write_text(f'#!/bin/sh\nn=$(cat "{count}" 2>/dev/null || echo 0)\necho $((n + 1)) > "{count}"\n'
                   'if [ "$n" = 0 ]; then k=4; else k=2; fi\n'
                   'i=0; while [ $i -lt $k ]; do echo "Fake GPU"; i=$((i + 1)); done\n')
    smi.chmod(0o755)
    env = {"PATH": f"{bindir}:{os.environ['PATH']}"}
    r = run_suite(*TINY_ENGINE, "--collect-only", "-k", "resnet50", f"--dlperf-report={tmp_path / 'r1'}",
                  env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr  # 4 GPUs over 2 nodes: the GPU profile's ladder to 2n2g
    assert "test_train[resnet50-amp-bs256-224px-2n2g]" in r.stdout, r.stdout
    count.unlink()
    r = run_suite(*TINY_ENGINE, "--dlperf-dryrun", "-k", "resnet50 and fp32 and 1n1g",
                  f"--dlperf-report={tmp_path / 'r2'}", env=env, timeout=120)
    assert r.returncode == pytest.ExitCode.USAGE_ERROR, r.stdout + r.stderr
    assert ("the case matrix was built for 2 GPU node(s) x 2 slot(s)" in r.stderr
            and "but the nodes have 2 GPU node(s) x 1 slot(s): run with --dlperf-gpus-per-node 1" in r.stderr), r.stderr
    assert "Traceback" not in r.stdout + r.stderr


# --- the shapes, in process ------------------------------------------------------------------------
def options(**kw) -> RunOptions:
    base = dict(cluster="ssh", nodes=None, gpus_per_node=None, backend="ddp", models=None, precisions=None,
                batch_size=None, image_size=None, repeats=None, budget=None, order="rounds", warmup_iters=None,
                iters=None, window_seconds=None, dryrun=False, report_dir=Path("/nonexistent"), timeout=60.0)
    return RunOptions(**{**base, **kw})


def test_ssh_shape_is_the_host_list_cut_to_nodes():
    two = ssh_shape(options(), SSHOptions(hosts="a:4,b:2"))
    assert (two.nodes, two.slots, two.gpus) == (2, 2, False) and "--dlperf-hosts" in two.source
    one = ssh_shape(options(nodes=1), SSHOptions(hosts="a:4,b:2"))
    assert (one.nodes, one.slots, one.gpus) == (1, 4, False)
    bare = ssh_shape(options(), SSHOptions(hosts="a,b"))  # no slots given: one worker, as on a CPU node
    assert (bare.nodes, bare.slots) == (2, 1)
    assert ssh_shape(options(gpus_per_node=2), SSHOptions(hosts="a,b")).slots == 2
    with pytest.raises(pytest.UsageError, match="--nodes 3: only 2 host"):
        ssh_shape(options(nodes=3), SSHOptions(hosts="a,b"))


@pytest.mark.parametrize("nodelist, count", [
    ("n1", 1), ("n[1-2]", 2), ("a,b[01-03,7]", 5), ("rack[1-2]-n[1-4]", 8), ("n[x]", None), ("n[3-1]", None),
])
def test_slurm_hostlists_are_counted_without_scontrol(nodelist, count):
    assert count_hosts(nodelist) == count


def test_slurm_shape_reads_the_options_or_the_allocations_variables():
    s = slurm_shape(options(cluster="slurm"), SlurmOptions(), env={})
    assert (s.nodes, s.slots, s.gpus) == (1, 1, False)
    s = slurm_shape(options(cluster="slurm", nodes=2), SlurmOptions(gpus_per_node=4), env={})
    assert (s.nodes, s.slots, s.gpus) == (2, 4, True)
    inside = {"SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "n[1-3]", "SLURM_GPUS_PER_NODE": "tesla:2"}
    s = slurm_shape(options(cluster="slurm"), SlurmOptions(gpus_per_node=8), env=inside)
    assert (s.nodes, s.slots, s.gpus) == (3, 2, True)
    s = slurm_shape(options(cluster="slurm"), SlurmOptions(), env={**inside, "SLURM_JOB_NUM_NODES": "4"})
    assert s.nodes == 4


def test_mismatch_names_what_was_assumed_what_is_there_and_the_fix():
    nodes = [Node(f"g{i}", f"10.0.0.{i}", slots=8, cpus=32, gpus=8) for i in range(2)]
    real = of_nodes(nodes, None, "ssh")
    assert (real.nodes, real.slots, real.gpus) == (2, 8, True)
    assert mismatch(ClusterShape(2, 8, True, "x"), real, "ssh") is None
    line = mismatch(ClusterShape(2, 1, False, "--dlperf-hosts"), real, "ssh")
    assert line == ("--dlperf-cluster ssh: the case matrix was built for 2 CPU node(s) x 1 slot(s) (--dlperf-hosts), "
                    "but the nodes have 2 GPU node(s) x 8 slot(s): run with --dlperf-gpus-per-node 8 "
                    "--dlperf-devices gpu")
    assert "--nodes 2" in mismatch(ClusterShape(3, 8, True, "x"), real, "ssh")
    with pytest.raises(pytest.UsageError, match="--nodes 3: the ssh cluster has 2 node"):
        of_nodes(nodes, 3, "ssh")
    over = [Node("g0", "10.0.0.1", slots=4, cpus=8, gpus=2)]
    with pytest.raises(pytest.UsageError, match="--dlperf-gpus-per-node 4: node g0 has 2 GPU"):
        of_nodes(over, None, "ssh")


PLUGIN_KINDS = """
import os
from pytest_dlperf import ClusterShape
from pytest_dlperf.clusters.local import LocalCluster


def pytest_dlperf_cluster_kinds(config):
    return ["shaped", "unshaped"]


def pytest_dlperf_cluster_shape(config, options):
    if options.cluster == "shaped":
        return ClusterShape(nodes=3, slots=2, gpus=False, source="the plugin")


def pytest_dlperf_make_cluster(config, options):
    if options.cluster in ("shaped", "unshaped"):
        open(os.environ["BUILT_MARK"], "a").write(options.cluster + "\\n")
        return LocalCluster(nodes=options.nodes or 3, slots=2, base_dir=options.report_dir / "nodes")
"""


def test_a_plugin_kind_with_a_shape_is_built_at_run_time_one_without_at_collection(tmp_path):
    (tmp_path / "conftest.py").write_text(PLUGIN_KINDS)
    (tmp_path / "test_ids.py").write_text("def test_ids(dlperf_case):\n    pass\n")
    mark = tmp_path / "built"
    for kind, built in (("shaped", False), ("unshaped", True)):  # unshaped: the matrix from its built nodes
        r = run_suite("--collect-only", "--dlperf-cluster", kind, "--dlperf-model", "resnet50",
                      f"--dlperf-report={tmp_path / kind}", suite=tmp_path / "test_ids.py",
                      env={"BUILT_MARK": str(mark)}, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        ids = [line.split("[", 1)[1].rstrip("]") for line in r.stdout.splitlines() if "::test_ids[" in line]
        assert ids == [f"resnet50-fp32-bs8-64px-{t}" for t in ("1n1g", "1n2g", "2n2g", "3n2g")]
        assert mark.exists() == built, kind
    mark.unlink()
    r = run_suite("--dlperf-cluster", "shaped", "-k", "resnet50 and 1n1g", f"--dlperf-report={tmp_path / 'run'}",
                  suite=tmp_path / "test_ids.py", env={"BUILT_MARK": str(mark)}, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert mark.read_text() == "shaped\n"  # built once, when the case ran
