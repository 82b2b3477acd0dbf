"""All-reduce bandwidth beside scaling: the medians over runs, busbw as nccl-tests defines it, and the
share of a step the gradients' all-reduce would take."""
from __future__ import annotations

import pytest

from pytest_dlperf.results.comm import communication, network_said

MIB = 2 ** 20


def _meta(algbw: float, world: int = 2) -> dict:
    sizes = [25 * MIB, 100 * MIB]
    return {"gradient_bytes": 80 * MIB, "allreduce": [
        {"bytes": b, "seconds": b / algbw, "algbw": algbw, "busbw": algbw * 2 * (world - 1) / world} for b in sizes]}


def test_medians_over_runs_and_the_step_share():
    comm = communication([_meta(1e9), _meta(3e9), _meta(2e9), {}], step_p50=0.5)
    assert [b.bytes for b in comm.sizes] == [25 * MIB, 100 * MIB]
    assert comm.busbw == pytest.approx(2e9)  # world 2: busbw = algbw x 2(n-1)/n = algbw
    assert comm.share == pytest.approx(80 * MIB / 2e9 / 0.5)
    assert comm.line == ("all-reduce busbw 2 GB/s at 25 MiB, 2 GB/s at 100 MiB; the step's 80 MiB of gradients "
                         "at 2 GB/s algbw: 0.0419 s, 8% of a p50 step")
    assert comm.to_dict()["step_share"] == comm.share


def test_eight_ranks_busbw_is_seven_quarters_of_algbw_and_a_single_device_has_none():
    comm = communication([_meta(1e9, world=8)], step_p50=None)
    assert comm.busbw == pytest.approx(1.75e9) and comm.share is None
    assert communication([{"model": "resnet50"}], 0.2) is None


def test_a_regression_says_whether_the_network_got_slower():
    slow = communication([_meta(0.8e9)], step_p50=0.5)
    assert network_said(slow, 1e9) == ("the all-reduce's busbw fell: 1 GB/s recorded, 0.8 GB/s now (-20%): "
                                       "the network or the communication library got slower")
    held = communication([_meta(0.95e9)], step_p50=0.5)
    assert network_said(held, 1e9) == "the all-reduce's busbw held: 1 GB/s recorded, 0.95 GB/s now (-5%): not the network"
    assert network_said(held, None) == "" and network_said(None, 1e9) == ""
