"""The DLPerf topology ladder and case ids."""
from __future__ import annotations

import pytest

from pytest_dlperf.specs import CaseSpec, Topology, ladder


def names(n, g):
    return [t.name for t in ladder(n, g)]


def test_ladder_of_the_seeds():
    assert names(4, 8) == ["1n1g", "1n2g", "1n4g", "1n8g", "2n8g", "4n8g"]


def test_ladder_always_includes_n_and_g():
    assert names(3, 6) == ["1n1g", "1n2g", "1n4g", "1n6g", "2n6g", "3n6g"]
    assert names(2, 1) == ["1n1g", "2n1g"]
    assert names(1, 1) == ["1n1g"]
    assert names(5, 1) == ["1n1g", "2n1g", "4n1g", "5n1g"]


def test_ladder_rejects_zero():
    with pytest.raises(ValueError):
        ladder(0, 1)


def test_topology_parse_and_world_size():
    t = Topology.parse("2n8g")
    assert (t.nodes, t.devices_per_node, t.world_size, str(t)) == (2, 8, 16, "2n8g")
    for bad in ("2x8", "0n1g", "n8g", ""):
        with pytest.raises(ValueError, match="NnGg"):
            Topology.parse(bad)


def test_case_id_and_key_name_every_measured_field():
    c = CaseSpec("resnet50", "fp32", 8, 64, Topology(2, 1), backend="ddp")
    assert c.id == "resnet50-fp32-bs8-64px-2n1g"
    assert c.key == "ddp/resnet50-fp32-bs8-64px-2n1g"
    assert c.group == ("resnet50", "fp32", 8, 64, "ddp", "", "synthetic")
    x = CaseSpec("resnet50", "fp32", 8, 64, Topology(2, 1), backend="tf", variant="noxla")
    assert x.id == "resnet50-fp32-bs8-64px-noxla-2n1g" and x.group[-2] == "noxla"
    b = CaseSpec("bert-base", "amp", 2, 32, Topology(1, 1), backend="tf", variant="xla")
    assert b.id == "bert-base-amp-bs2-seq32-xla-1n1g"
