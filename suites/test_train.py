"""The benchmark matrix: every model x precision x topology trains for real and is measured."""
from __future__ import annotations


def test_train(dlperf_case, dlperf):
    result = dlperf.run(dlperf_case)
    assert result.world_size_seen == dlperf_case.topology.world_size, (
        f"the workload saw {result.world_size_seen} ranks; {dlperf_case.topology} needs "
        f"{dlperf_case.topology.world_size}")
    assert result.median > 0
