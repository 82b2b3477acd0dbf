"""Multi-node sockets on the interface that holds each node's address (nodechecks/interfaces.py): what the
probe finds on this machine, the line for a node where Gloo would advertise loopback, the variables the
launchers set and the dry-run shows. (The Ray rig's nodes resolve their own hostnames to 127.0.1.1, as
Debian writes /etc/hosts: its 2- and 4-node cases train only through this; tests/test_ray.py.)"""
from __future__ import annotations

import sys
from pathlib import Path

from pytest_dlperf.clusters.base import Node
from pytest_dlperf.launchers.base import Launcher, RunPlan
from pytest_dlperf.nodechecks.interfaces import keep
from pytest_dlperf.specs import CaseSpec, Measurement, Topology
from tests.suite import run_suite

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "pytest_dlperf" / "node" / "workloads"))
import nodefacts  # noqa: E402  (node-side, as the nodes import it)


class Held:
    """What keep() needs of a cluster: the socket_interfaces memo."""

    def __init__(self) -> None:
        self.held: dict[str, dict] = {}

    def socket_interfaces(self) -> dict[str, dict]:
        return self.held


def test_the_probe_finds_loopback_for_a_loopback_address_and_nothing_for_an_address_not_held():
    assert nodefacts.interface_of("127.0.0.1") == "lo" and nodefacts.interface_of("127.0.0.3") == "lo"
    assert nodefacts.interface_of("203.0.113.77") is None and nodefacts.interface_of("localhost") == "lo"
    got = nodefacts.interface("127.0.0.1")
    assert got["interface"] == "lo" and got["address"] == "127.0.0.1" and "hostname" in got


def test_a_node_no_interface_holds_is_named_with_the_fix_unless_it_sets_gloo_itself():
    held = Held()
    found = {"n0": {"address": "10.0.0.1", "interface": "eth0", "resolves_to": "127.0.1.1", "hostname": "a"},
             "n1": {"address": "10.0.0.2", "interface": None, "resolves_to": "127.0.1.1", "hostname": "b"}}
    line = keep(held, found)
    assert line.startswith("no network interface holds the address of n1 (address 10.0.0.2; hostname b resolves "
                           "to 127.0.1.1): Gloo would advertise a loopback address there")
    assert "set GLOO_SOCKET_IFNAME to the node's interface" in line and held.held["n0"]["interface"] == "eth0"
    assert keep(held, found, gloo=False) is None  # GPU nodes: NCCL picks its own interface
    found["n1"]["resolves_to"] = "10.0.0.2"  # Gloo finds the node's address by its name: nothing to fix
    assert keep(held, found) is None
    found["n1"].update(resolves_to="127.0.1.1", set={"GLOO_SOCKET_IFNAME": "ib0"})
    assert keep(held, found) is None


def _plan(nodes: int, interfaces: dict[str, dict], spans: bool = False) -> RunPlan:
    case = CaseSpec("resnet50", "fp32", 8, 64, Topology(nodes, 1))
    return RunPlan(case=case, measurement=Measurement(1, 1, 1, 60), nodes=[], run_dirs={}, workload={},
                   master_addr="10.0.0.1", master_port=1, tag="t", interfaces=interfaces,
                   span=object() if spans else None)


def test_gloo_is_pointed_at_the_interface_only_where_the_hostname_resolves_to_loopback():
    node = Node("n1", "10.0.0.2", 1, 1)
    loopback = {"n1": {"interface": "eth0", "set": {}, "loopback": True}}
    assert Launcher.socket_env(_plan(2, loopback), node) == {"GLOO_SOCKET_IFNAME": "eth0"}
    assert Launcher.socket_env(_plan(2, {"n1": {**loopback["n1"], "loopback": False}}), node) == {}
    assert Launcher.socket_env(_plan(2, {"n1": {**loopback["n1"], "set": {"GLOO_SOCKET_IFNAME": "ib0"}}}), node) == {}
    assert Launcher.socket_env(_plan(1, loopback), node) == {}
    assert Launcher.socket_env(_plan(2, loopback, spans=True), node) == {}  # horovodrun: one environment for all
    assert Launcher.socket_env(_plan(2, {}), node) == {}


def test_the_dry_run_of_a_two_node_case_shows_the_interface(tmp_path):
    r = run_suite("--dlperf-dryrun", "-k", "resnet50 and not compiled", f"--dlperf-report={tmp_path / 'r'}",
                  timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    two = r.stdout[r.stdout.index("# resnet50-fp32-bs8-64px-2n1g"):].split("\n# ")[0]
    one = r.stdout[r.stdout.index("# resnet50-fp32-bs8-64px-1n1g"):].split("\n# ")[0]
    assert two.count("GLOO_SOCKET_IFNAME=lo") == 2 and "GLOO_SOCKET_IFNAME" not in one
