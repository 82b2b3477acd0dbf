"""The launch seam: a launcher may start every node from one command on node 0 (mpirun style),
with a hostfile, per-node ports and distinct node addresses; a plugin adds one through the hooks."""
from __future__ import annotations

import ast
import json
import shlex
from pathlib import Path

import pytest

from pytest_dlperf.clusters.local import LocalCluster

pytest_plugins = ["pytester"]

# A backend from a conftest: one command on node 0 that starts the node program of every node, the
# way mpirun or horovodrun start all ranks from the first host. Its ranks are the tiny engine's
# (tests/tiny: real processes exchanging gradients over TCP; what is tested here is the seam, and
# torchrun over every node trains in test_local_training.py).
SPANNING = '''
import shlex
import sys

import pytest

sys.path.insert(0, %r)  # the repository, for the tiny engine
from pytest_dlperf.clusters.base import RUN_TAG_ENV, NodeCommand
from tests.tiny.plugin import TinyLauncher


class Spanning(TinyLauncher):
    name = "span"
    models = ("resnet50",)
    spans_nodes = True

    def ports_needed(self, topology):
        return 2  # two ports chosen on every node

    def commands(self, plan):
        node0 = plan.nodes[0]
        per_node = TinyLauncher.commands(self, plan)  # what each node would run
        lines = [f"cat {shlex.quote(plan.hostfile)}",
                 "echo ports " + " ".join(f"{n}={','.join(map(str, p))}" for n, p in plan.ports.items()),
                 "echo addresses " + " ".join(f"{n}={a}" for n, a in plan.addresses.items())]
        lines += [shlex.join(c.argv) + " &" for c in per_node]
        lines.append("for p in $(jobs -p); do wait $p || exit 1; done")
        env = {**per_node[0].env, RUN_TAG_ENV: plan.tag}
        return [NodeCommand(node0, ["bash", "-c", "\\n".join(lines)], env, cwd=plan.run_dirs[node0.name])]


@pytest.hookimpl
def pytest_dlperf_make_launcher(config, backend):
    return Spanning() if backend == "span" else None


@pytest.hookimpl
def pytest_dlperf_backends(config):
    return ["span"]
''' % str(Path(__file__).resolve().parent.parent)

SUITE = """
def test_train(dlperf_case, dlperf):
    assert dlperf.run(dlperf_case).world_size_seen == dlperf_case.topology.world_size
"""

TINY = ["--dlperf-model", "resnet50", "--dlperf-precision", "fp32", "--dlperf-batch-size", "2",
        "--dlperf-image-size", "32", "--dlperf-warmup-iters", "1", "--dlperf-iters", "2", "--dlperf-repeats", "1",
        "--dlperf-probe-seconds", "0.5", "--dlperf-reprobe-pause", "0"]


def test_local_nodes_have_distinct_loopback_addresses(tmp_path):
    nodes = LocalCluster(nodes=3, base_dir=tmp_path).nodes()
    assert [n.address for n in nodes] == ["127.0.0.1", "127.0.0.2", "127.0.0.3"]


def test_a_spanning_launcher_from_a_plugin_trains_from_node_0(pytester: pytest.Pytester):
    pytester.makeconftest(SPANNING)
    pytester.makepyfile(test_suite=SUITE)
    report = pytester.path / "rep"
    r = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", "--backend", "span", "-k", "2n1g",
                                      f"--dlperf-report={report}", *TINY)
    assert r.ret == 0, r.stdout.str() + r.stderr.str()
    (case,) = json.loads((report / "results.json").read_text())["cases"]
    (run,) = case["runs"]
    assert case["world_size_seen"] == 2 and len(run["commands"]) == 1  # one command, on node 0
    assert set(run["logs"]) == {"local0"}
    log = (report / "runs" / case["case"]["id"] / "r0" / "local0.log").read_text()
    assert "127.0.0.1 slots=1\n127.0.0.2 slots=1\n" in log  # the hostfile on node 0
    ports = dict(kv.split("=") for kv in next(ln for ln in log.splitlines() if ln.startswith("ports ")).split()[1:])
    assert set(ports) == {"local0", "local1"}
    assert all(len(set(p.split(","))) == 2 and p.replace(",", "").isdigit() for p in ports.values())
    assert "addresses local0=127.0.0.1 local1=127.0.0.2" in log
    argv = shlex.split(run["commands"][0])
    script = argv[argv.index("bash") + 2]  # the rendered line: cd <run dir> && env ... bash -c <script>
    assert argv[argv.index("bash") + 1] == "-c" and f"--master-port {ports['local0'].split(',')[0]}" in script


def test_a_spanning_launcher_must_return_one_command(pytester: pytest.Pytester):
    pytester.makeconftest(SPANNING.replace('return [NodeCommand(node0, ["bash"', 'return per_node + [NodeCommand(node0, ["bash"'))
    pytester.makepyfile(test_suite=SUITE)
    r = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", "--backend", "span", "-k", "2n1g",
                                      "--dlperf-dryrun", *TINY)
    assert r.ret == 1
    assert "launcher 'span' spans nodes: it must return one command, for node 0" in r.stdout.str()


def test_a_run_whose_set_up_fails_says_what_the_cluster_knows(tmp_path):
    """A node lost while a run is set up (its directory cannot be made) fails with the cluster's
    own diagnosis appended (Slurm: the node is DOWN), as a failure mid-run does."""
    from pytest_dlperf.clusters.base import ClusterError
    from pytest_dlperf.launchers.torchrun import TorchrunLauncher
    from pytest_dlperf.measure.runner import run_case
    from pytest_dlperf.specs import CaseSpec, Measurement, Topology

    class LostNode(LocalCluster):
        def make_run_dir(self, node, run_id):
            raise ClusterError(f"{node.name}: cannot make the run directory: job has expired")

        def diagnose(self, nodes):
            return [f"scheduler: node {n.name} is DOWN" for n in nodes]

    case = CaseSpec("resnet50", "fp32", 2, 32, Topology(1, 1))
    m = Measurement(warmup_iters=1, iters=2, repeats=1, timeout=60)
    with pytest.raises(ClusterError) as err:
        run_case(LostNode(nodes=2, base_dir=tmp_path), TorchrunLauncher(), case, m, tmp_path / "logs")
    assert str(err.value) == "local0: cannot make the run directory: job has expired; scheduler: node local0 is DOWN"

    class Quiet(LostNode):
        def diagnose(self, nodes):
            return []

    with pytest.raises(ClusterError, match=r"job has expired$"):
        run_case(Quiet(nodes=2, base_dir=tmp_path), TorchrunLauncher(), case, m, tmp_path / "logs")


def test_the_tiny_engine_offers_the_models_its_workload_trains():
    """The default matrix on --backend tiny has no case its workload would refuse (it knew no llama)."""
    from tests.tiny.plugin import WORKLOAD, TinyLauncher

    tree = ast.parse(WORKLOAD.read_text())
    cost = next(n.value for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "COST")
    assert sorted(TinyLauncher.models) == sorted(ast.literal_eval(cost))
