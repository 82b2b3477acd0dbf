"""Every case of the selected external benchmark trains and is gated, as suites/test_train.py."""
from __future__ import annotations


def test_user_train(dlperf_case, dlperf):
    result = dlperf.run(dlperf_case)
    assert result.median > 0
    if result.world_size_seen:  # formats that print the world size (horovod's "on N GPU(s)")
        assert result.world_size_seen == dlperf_case.topology.world_size
