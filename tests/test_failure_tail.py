"""What a failed node's log shows in the failure message: the tail, and the first fatal line."""
from __future__ import annotations

from pytest_dlperf.clusters.base import tail_with_first_fatal


def test_first_fatal_line_before_the_window_is_kept_with_its_context():
    lines = [f"step {i}" for i in range(10)] + [
        "terminate called after throwing an instance of 'gloo::IoException'",
        "  what():  [gloo/transport/tcp/pair.cc:598] Connection closed by peer",
        "Fatal Python error: Aborted",
    ] + [f"torchrun summary {i}" for i in range(50)]
    out = tail_with_first_fatal(lines, 40).splitlines()
    assert out[0].startswith("terminate called")
    assert out[1].startswith("  what():")
    assert out[8] == "[... 5 lines ...]"  # 8 lines of context, then the gap to the window
    assert out[9:] == lines[-40:]


def test_plain_tail_when_nothing_fatal_or_fatal_inside_the_window():
    lines = [f"line {i}" for i in range(100)]
    assert tail_with_first_fatal(lines, 5).splitlines() == lines[-5:]
    lines[97] = "Traceback (most recent call last):"
    assert tail_with_first_fatal(lines, 5).splitlines() == lines[-5:]
    assert tail_with_first_fatal(lines[:3], 5).splitlines() == lines[:3]


def test_fatal_line_just_before_the_window_has_no_gap_marker():
    lines = ["x"] * 10 + ["Segmentation fault (core dumped)"] + ["y"] * 4
    out = tail_with_first_fatal(lines, 4).splitlines()
    assert out == ["Segmentation fault (core dumped)"] + ["y"] * 4
