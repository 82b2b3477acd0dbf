"""``Cluster.run_everywhere`` (a node script on every node, waited for, read, swept) and the three
node checks built on it (frameworks, reach, hardware), on the local cluster: real processes, no training."""
from __future__ import annotations

import ast
import os
from collections.abc import Sequence
from pathlib import Path

import psutil
import pytest

from pytest_dlperf.clusters.base import RUN_TAG_ENV, Node, NodeCommand, SpanAccess
from pytest_dlperf.clusters.local import LocalCluster
from pytest_dlperf.nodechecks import frameworks, hardware, reach


def shell(script: str):
    """A ``command`` for run_everywhere: ``bash -c script`` in the node's run directory."""
    return lambda node, run_dir, path: NodeCommand(node, ["bash", "-c", script], {"NODE": node.name}, cwd=run_dir)


def tagged_alive(tag: str) -> list[int]:
    """Processes of this user whose environment carries the run tag."""
    found = []
    for p in psutil.process_iter(["pid"]):
        try:
            if p.environ().get(RUN_TAG_ENV) == tag:
                found.append(p.pid)
        except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    return found


def test_run_everywhere_collects_every_nodes_output_and_exit_code(tmp_path):
    cluster = LocalCluster(nodes=2, base_dir=tmp_path / "nodes", pin=False)
    runs = cluster.run_everywhere(cluster.nodes(), shell('echo "hello from $NODE in $PWD"; echo "$DLPERF_RUN_TAG"; '
                                                         '[ "$NODE" = local0 ]'),
                                  tmp_path / "logs", 30, name="demo", tag="dlperf-demo")
    assert not runs.error and not runs.sweep_errors
    assert list(runs.outputs) == ["local0", "local1"]
    first, second = runs.outputs["local0"], runs.outputs["local1"]
    assert first.returncode == 0 and second.returncode == 1 and second.state == "exit code 1"
    assert f"hello from local0 in {first.run_dir}" in first.text
    assert Path(first.run_dir).parent.name.startswith("demo-") and first.run_dir != second.run_dir
    tag = first.text.splitlines()[1]
    assert tag.startswith("dlperf-demo-") and second.text.splitlines()[1] == tag  # one tag for the run
    assert first.log_path == tmp_path / "logs" / "local0.log" and first.log_path.read_text() == first.text
    commands = (tmp_path / "logs" / "commands.sh").read_text().splitlines()
    assert len(commands) == 2 and all(f"{RUN_TAG_ENV}={tag}" in c for c in commands)


def test_run_everywhere_uploads_the_script_and_passes_its_path(tmp_path):
    script = tmp_path / "probe.py"
    script.write_text("import os, sys; print('ran', os.path.basename(sys.argv[0]), os.getcwd())\n")
    cluster = LocalCluster(nodes=1, base_dir=tmp_path / "nodes", pin=False)
    runs = cluster.run_everywhere(cluster.nodes(), lambda node, run_dir, path: NodeCommand(
        node, [node.python, path], cwd=run_dir), tmp_path / "logs", 30, name="up", tag="dlperf-up", script=script)
    got = runs.outputs["local0"]
    assert got.returncode == 0 and got.text.strip() == f"ran probe.py {got.run_dir}"
    assert (Path(got.run_dir) / "probe.py").read_text() == script.read_text()


def test_a_node_past_the_deadline_is_timed_out_and_swept(tmp_path):
    cluster = LocalCluster(nodes=1, base_dir=tmp_path / "nodes", pin=False)
    runs = cluster.run_everywhere(cluster.nodes(), shell("echo started; echo $DLPERF_RUN_TAG; sleep 60 & wait"),
                                  tmp_path / "logs", 1.0, name="slow", tag="dlperf-slow")
    got = runs.outputs["local0"]
    assert got.returncode is None and got.state == "timed out" and got.tail(5).startswith("started")
    assert not runs.error and not runs.sweep_errors
    assert tagged_alive(got.text.split()[1]) == []  # the shell and its sleep are gone


def test_a_node_that_cannot_start_is_an_error_not_an_exception(tmp_path):
    class Broken(LocalCluster):
        def make_run_dir(self, node: Node, run_id: str) -> str:
            if node.name == "local1":
                from pytest_dlperf.clusters.base import ClusterError
                raise ClusterError(f"{node.name}: disk full")
            return super().make_run_dir(node, run_id)

    cluster = Broken(nodes=2, base_dir=tmp_path / "nodes", pin=False)
    runs = cluster.run_everywhere(cluster.nodes(), shell("sleep 60"), tmp_path / "logs", 30, name="b", tag="dlperf-b")
    assert runs.error == "local1: disk full" and runs.outputs == {} and not runs.sweep_errors


def test_a_command_of_none_runs_nothing_on_that_node(tmp_path):
    cluster = LocalCluster(nodes=2, base_dir=tmp_path / "nodes", pin=False)
    runs = cluster.run_everywhere(cluster.nodes(), lambda node, run_dir, path: None if node.name == "local1" else
                                  NodeCommand(node, ["true"], cwd=run_dir), tmp_path / "logs", 30, name="n", tag="t")
    assert list(runs.outputs) == ["local0"] and runs.outputs["local0"].returncode == 0


def test_hardware_probe_fingerprints_every_node(tmp_path):
    cluster = LocalCluster(nodes=2, base_dir=tmp_path / "nodes")
    fp = hardware.measure(cluster, tmp_path / "hw", seconds=0.2)
    assert fp.errors == [] and list(fp.nodes) == ["local0", "local1"]
    assert all("probe_version" in doc for doc in fp.nodes.values())
    assert (tmp_path / "hw" / "local1.json").is_file() and (tmp_path / "hw" / "commands.sh").is_file()


def test_hardware_probe_failure_is_a_note(tmp_path, monkeypatch):
    bad = tmp_path / "hwprobe.py"
    bad.write_text("import sys; print('no numpy here', file=sys.stderr); sys.exit(3)\n")
    monkeypatch.setattr(hardware, "PROBE", bad)
    cluster = LocalCluster(nodes=1, base_dir=tmp_path / "nodes", pin=False)
    fp = hardware.measure(cluster, tmp_path / "hw", seconds=0.2)
    assert fp.nodes == {} and fp.errors == ["local0: hardware probe exit code 3: no numpy here"]


def test_framework_check_reads_every_nodes_versions(tmp_path):
    cluster = LocalCluster(nodes=2, base_dir=tmp_path / "nodes", pin=False)
    found = frameworks.check(cluster, cluster.nodes(), "pytest", tmp_path / "fw")
    assert found.errors == [] and found.versions == {"local0": pytest.__version__, "local1": pytest.__version__}
    assert found.problem("pip install pytest") is None
    missing = frameworks.check(cluster, cluster.nodes(), "no_such_framework_here", tmp_path / "fw2")
    assert missing.errors == [] and missing.missing == ["local0", "local1"]
    assert missing.problem("pip install it")[0] == "skip"


class SshReach(LocalCluster):
    """A local cluster whose node 0 reaches the others through an ``ssh`` that fails for 127.0.0.3."""

    def span_access(self, nodes: Sequence[Node], run_dir: str) -> SpanAccess:
        bindir = Path(run_dir) / "bin"
        bindir.mkdir()
        ssh = bindir / "ssh"
        ssh.write_text('#!/bin/sh\nfor a; do host=$prev; prev=$a; done\n'
                       '[ "$host" = 127.0.0.3 ] && { echo "Permission denied (publickey)" >&2; exit 255; }\n'
                       'exit 0\n')
        ssh.chmod(0o755)
        return SpanAccess(env={"PATH": f"{bindir}:{os.environ['PATH']}"}, ssh_port=2222)


def test_reach_names_the_nodes_node_0_cannot_log_in_to(tmp_path):
    cluster = SshReach(nodes=3, base_dir=tmp_path / "nodes", pin=False)
    status, why = reach.check(cluster, cluster.nodes(), tmp_path / "reach")
    assert status == "fail" and "local0 cannot log in to local2 over SSH" in why
    assert "Permission denied (publickey)" in why and "`ssh -o BatchMode=yes" in why and "-p 2222" in why
    two = SshReach(nodes=2, base_dir=tmp_path / "two", pin=False)
    assert reach.check(two, two.nodes(), tmp_path / "reach-two") is None  # 127.0.0.2 lets node 0 in


def test_reach_is_not_checked_where_the_cluster_starts_the_nodes_itself(tmp_path):
    cluster = LocalCluster(nodes=2, base_dir=tmp_path / "nodes", pin=False)
    assert reach.check(cluster, cluster.nodes(), tmp_path / "reach") is None
    assert not (tmp_path / "reach" / "commands.sh").exists()


def test_the_node_checks_results_and_importers_do_not_import_the_runner():
    package = Path(hardware.__file__).parents[1]
    modules = [*package.joinpath("nodechecks").glob("*.py"), *package.joinpath("results").glob("*.py"),
               *package.joinpath("importers").glob("*.py")]
    for module in modules:
        imported = set()
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.ImportFrom):
                imported.add(node.module or "")
                imported.update(f"{node.module}.{a.name}" if node.module else a.name for a in node.names)
        assert not any(name.split(".")[-1] == "runner" for name in imported), (module, imported)
