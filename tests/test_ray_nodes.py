"""The Ray kind's choices made without a cluster: which of ``ray.nodes()``'s nodes a session takes, in
what order and under what names, each node's bundle, the options' values, the declared shape. The kind
against a real Ray cluster: tests/test_ray.py."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from pytest_dlperf.clusters.ray.nodes import Selection, bundle, choose, names, parse_labels, parse_resources, read_nodes
from pytest_dlperf.clusters.ray.shape import ray_shape


def _node(ip: str, cpus: float = 1.0, gpus: float = 0.0, head: bool = False, alive: bool = True, **more) -> dict:
    res = {"CPU": cpus, f"node:{ip}": 1.0, "memory": 1e9, **({"GPU": gpus} if gpus else {}),
           **({"node:__internal_head__": 1.0} if head else {}), **more.pop("resources", {})}
    return {"NodeID": ip.replace(".", "") * 4, "Alive": alive, "NodeManagerAddress": ip, "NodeManagerHostname": "h",
            "Resources": res, **more}


RAW = [_node("10.0.0.12"), _node("10.0.0.9", alive=False, DeathReason="UNEXPECTED_TERMINATION",
                                  DeathReasonMessage="health check failed"),
       _node("10.0.0.10", head=True), _node("10.0.0.100"), _node("10.0.0.2", cpus=8, gpus=2.0,
                                                                  resources={"a100": 1.0}, Labels={"pool": "bench"})]


def test_the_head_comes_first_then_the_nodes_by_address_and_dead_ones_are_left_out_saying_why():
    chosen, left = choose(read_nodes(RAW), Selection())
    assert [n.ip for n in chosen] == ["10.0.0.10", "10.0.0.2", "10.0.0.12", "10.0.0.100"]  # numerically, not as text
    assert chosen[0].head and (chosen[1].cpus, chosen[1].gpus) == (8, 2)
    assert left == ["10.0.0.9: not alive (UNEXPECTED_TERMINATION health check failed)"]
    assert names(chosen) == ["10.0.0.10", "10.0.0.2", "10.0.0.12", "10.0.0.100"]
    assert [n.ip for n in choose(read_nodes(RAW), Selection(), want=2)[0]] == ["10.0.0.10", "10.0.0.2"]


def test_gpus_custom_resources_and_labels_select_nodes_of_a_mixed_cluster():
    nodes = read_nodes(RAW)
    (gpu,), left = choose(nodes, Selection(gpus=True))
    assert gpu.ip == "10.0.0.2" and "10.0.0.10: no GPU" in left
    assert [n.ip for n in choose(nodes, Selection(resources={"a100": 1}, labels={"pool": "bench"}))[0]] == ["10.0.0.2"]
    chosen, left = choose(nodes, Selection(resources={"a100": 2}))
    assert chosen == [] and "10.0.0.2: a100 1 < 2" in left and "10.0.0.12: no a100 resource" in left
    chosen, left = choose(nodes, Selection(labels={"pool": "train"}))
    assert chosen == [] and "10.0.0.2: label pool=bench" in left and "10.0.0.10: no label pool" in left
    head_only_work = read_nodes([_node("10.0.0.10", cpus=0, head=True), _node("10.0.0.11")])
    chosen, left = choose(head_only_work, Selection())
    assert [n.ip for n in chosen] == ["10.0.0.11"] and left == ["10.0.0.10: no CPU or GPU resource (a head that takes no work)"]


def test_a_bundle_asks_for_the_whole_node_and_is_pinned_to_it():
    gpu = read_nodes([_node("10.0.0.2", cpus=8, gpus=2)])[0]
    assert bundle(gpu, {"a100": 1}) == {"CPU": 8.0, "GPU": 2.0, "a100": 1.0, "node:10.0.0.2": 0.001}
    assert bundle(read_nodes([_node("10.0.0.3")])[0]) == {"CPU": 1.0, "node:10.0.0.3": 0.001}


def test_two_nodes_on_one_address_get_names_of_their_own():
    nodes = read_nodes([_node("10.0.0.3"), {**_node("10.0.0.3"), "NodeID": "ffee" * 14}])
    assert names(nodes) == ["10.0.0.3-10003100", "10.0.0.3-ffeeffee"]


def test_the_options_values_say_what_is_wrong():
    assert parse_resources("a100=1, spot") == {"a100": 1.0, "spot": 1.0}
    assert parse_labels("pool=bench,zone=a") == {"pool": "bench", "zone": "a"}
    for bad in ("a100=x", "a100=0", "=2"):
        with pytest.raises(ValueError, match="NAME"):
            parse_resources(bad)
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_labels("pool")


def test_the_shape_comes_from_the_options_only_with_nodes():
    assert ray_shape(SimpleNamespace(nodes=None, gpus_per_node=None, devices=None)) is None  # attached at collection
    shape = ray_shape(SimpleNamespace(nodes=4, gpus_per_node=2, devices=None))
    assert (shape.nodes, shape.slots, shape.gpus) == (4, 2, False)
    # --dlperf-devices gpu picks GPU nodes (factory.py): the matrix is built for them, not for CPU nodes
    shape = ray_shape(SimpleNamespace(nodes=2, gpus_per_node=8, devices="gpu"))
    assert (shape.nodes, shape.slots, shape.gpus, shape.devices) == (2, 8, True, "gpu")


class _Head:
    """ray.init as Ray Client's head answers it when its server for this client fails to start ``fails`` times."""

    def __init__(self, fails: int, error: type[Exception] = ConnectionAbortedError) -> None:
        self.fails, self.error, self.calls = fails, error, 0

    def __call__(self, **kwargs) -> None:
        self.calls += 1
        if self.calls <= self.fails:
            raise self.error("Initialization failure from server:\nTraceback (most recent call last):\n"
                             "psutil.ZombieProcess: PID still exists but it's a zombie (pid=13204)")


@pytest.mark.parametrize("fails, error, calls, attached", [(2, ConnectionAbortedError, 3, True),
                                                           (3, ConnectionAbortedError, 3, False),
                                                           (1, ValueError, 1, False)])
def test_an_attach_the_head_aborts_is_tried_again_saying_so_and_other_errors_fail_at_once(monkeypatch, fails, error,
                                                                                          calls, attached):
    """On a loaded head Ray Client's server for this session may fail to start (CI, 2026-12-07: it died before
    the proxier read it): the attach is tried up to ATTACH_TRIES times, each retry said; any other error is final."""
    from pytest_dlperf.clusters.base import ClusterError
    from pytest_dlperf.clusters.ray import cluster as rc
    from pytest_dlperf.clusters.ray.options import RayOptions

    head, said = _Head(fails, error), []
    monkeypatch.setattr(rc.ray, "init", head)
    monkeypatch.setattr(rc.ray, "is_initialized", lambda: False)
    monkeypatch.setattr(rc, "ATTACH_PAUSE", 0.0)
    c = rc.RayCluster(RayOptions(address="ray://10.0.0.10:10001"), say=said.append)
    if attached:
        c.connect()
    else:
        with pytest.raises(ClusterError) as info:
            c.connect()
        assert str(info.value).startswith("cannot attach to the Ray cluster at ray://10.0.0.10:10001: ")
        assert f"{error.__name__}: psutil.ZombieProcess" in str(info.value) and "\n" not in str(info.value)
    assert head.calls == calls
    assert len(said) == calls - 1, said
    assert all("could not start this session's client server" in s and f"{k + 2} of 3" in s for k, s in enumerate(said))
