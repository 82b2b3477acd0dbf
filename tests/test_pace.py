"""The pace probe (node/paceprobe.py) as a node runs it, and its log as the harness reads it (pace.py)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from pytest_dlperf.watchers.pace import PROBE, PaceLogError, parse_log, run_pace, window_pace

from .procs import tagged_processes


def start(tmp_path, *command: str, period: float = 0.05, env: dict | None = None) -> subprocess.Popen:
    tag = f"dlperf-pacetest-{uuid.uuid4().hex}"
    return subprocess.Popen([sys.executable, str(PROBE), "--output", str(tmp_path / "pace.log"), "--period",
                             str(period), "--", *command],
                            env={**os.environ, "DLPERF_RUN_TAG": tag, **(env or {})}, cwd=tmp_path)


def pace_of(text: str, start: float, end: float, source: str) -> float:
    return window_pace(parse_log(text, source), start, end, source)


HEAD = "# dlperf-pace 2 kernel=copy-8MiB period=0.1 perf=100.0 wall=1764000000.0\n"


def rows(tmp_path) -> list[list[float]]:
    return [[float(x) for x in line.split()] for line in (tmp_path / "pace.log").read_text().splitlines()[1:]]


def test_the_probe_runs_beside_the_command_returns_its_status_and_leaves_nothing(tmp_path):
    t0, w0 = time.perf_counter(), time.time()
    proc = start(tmp_path, sys.executable, "-c", "import time; time.sleep(1.0); raise SystemExit(3)")
    assert proc.wait(timeout=60) == 3
    t1 = time.perf_counter()
    text = (tmp_path / "pace.log").read_text()
    assert text.startswith("# dlperf-pace 2 kernel=copy-8MiB period=0.05 perf=")
    log = parse_log(text, "n:pace.log")  # the clock pair: this host's perf_counter and Unix time, read together
    assert t0 < log.perf < t1 and abs((log.wall - w0) - (log.perf - t0)) < 0.05
    got = rows(tmp_path)
    assert len(got) >= 5, text  # about one wake-up per 0.05 s of the command's second
    assert all(t0 < a <= b < t1 and rate > 0.1 for a, b, rate in got)  # the host's monotonic clock, GB/s
    assert tagged_processes(str(tmp_path)) == []
    # the harness's reading: the mean of the wake-ups inside a window on the same clock
    inside = [r for a, b, r in got if a >= got[1][0] and b <= got[-2][1]]
    assert pace_of(text, got[1][0], got[-2][1], "n:pace.log") == pytest.approx(sum(inside) / len(inside))


def test_sigterm_reaches_the_command_and_the_probe_stops(tmp_path):
    proc = start(tmp_path, sys.executable, "-c", "import time; time.sleep(120)")
    deadline = time.monotonic() + 60
    while len(tagged_processes(str(tmp_path))) < 2 and time.monotonic() < deadline:  # wrapper and probe
        time.sleep(0.1)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM  # the command's death, as a shell reports it
    time.sleep(0.2)
    assert tagged_processes(str(tmp_path)) == [] and [
        p for p in tagged_processes("time.sleep(120)") if str(tmp_path) in p[1]] == []


def test_without_numpy_the_probe_says_so_and_the_command_runs_as_without_it(tmp_path):
    fake = tmp_path / "site"
    (fake / "numpy").mkdir(parents=True)
    (fake / "numpy" / "__init__.py").write_text("raise ImportError('no numpy on this node')\n")
    proc = start(tmp_path, sys.executable, "-c", "import time; time.sleep(1.0); print('trained')",
                 env={"PYTHONPATH": str(fake)})
    assert proc.wait(timeout=60) == 0
    text = (tmp_path / "pace.log").read_text()
    assert "# error ImportError: no numpy on this node" in text
    with pytest.raises(PaceLogError, match="n:pace.log: the probe could not run: ImportError: no numpy"):
        pace_of(text, 0, 1e12, "n:pace.log")


@pytest.mark.parametrize("text,why", [
    ("", "not a pace probe log"),
    ("1.0 1.1 50\n", "not a pace probe log"),
    ("# dlperf-pace 1 kernel=copy-8MiB period=0.1\n1.0 1.1 50\n", "pace log contract 1, this harness reads 2"),
    ("# dlperf-pace 2 kernel=copy-8MiB period=0.1\n1.0 1.1 50\n", "the header has no clock pair"),
    (HEAD + "1.0 1.1 50\n5.0 5.1 52\n", "no wake-up of the probe inside the window"),
])
def test_a_log_that_gives_no_pace_is_an_error_naming_the_file(text, why):
    with pytest.raises(PaceLogError, match=f"n0:/run/pace.log: {why}"):
        pace_of(text, 2.0, 4.0, "n0:/run/pace.log")


def test_a_line_cut_short_by_the_kill_is_left_out():
    text = HEAD + "2.0 2.1 50\n2.5 2.6 54\n3.0 3.0"
    assert pace_of(text, 1.0, 4.0, "n") == 52.0


def test_the_window_on_node_0s_clock_is_placed_on_each_nodes_clock_through_the_unix_time():
    """Rank 0's window is on node 0's perf_counter; node 1's probe logs on its own, which started
    elsewhere (another host, booted at another time). The Unix time both read at the start links them."""
    node0 = parse_log(HEAD + "101.0 101.1 40\n102.0 102.1 60\n103.0 103.1 50\n", "n0")
    # node 1's perf_counter reads 5000.5 at the Unix time node 0's reads 100.0 (+0.5 s of wall)
    node1 = parse_log("# dlperf-pace 2 kernel=copy-8MiB period=0.1 perf=5000.0 wall=1763999999.5\n"
                      "5000.9 5001.0 90\n5001.6 5001.7 10\n5002.4 5002.5 30\n5003.6 5003.7 99\n",
                      "n1")
    # window [101.5, 103.2] on node 0 = Unix 1764000001.5..3.2 = node 1's [5002.0, 5003.7]
    got, nodes = run_pace({"n0": node0, "n1": node1}, "n0", 101.5, 103.2, {"n0": "n0:p", "n1": "n1:p"})
    assert nodes == {"n0": pytest.approx(55.0), "n1": pytest.approx((30 + 99) / 2)}
    assert got == pytest.approx((55.0 * 64.5) ** 0.5)  # geometric mean: a synchronous run waits for its slowest node
    with pytest.raises(PaceLogError, match="n1:p: no wake-up of the probe inside the window"):
        run_pace({"n0": node0, "n1": node1}, "n0", 102.0, 102.6, {"n0": "n0:p", "n1": "n1:p"})
