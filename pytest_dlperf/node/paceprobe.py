#!/usr/bin/env python3
"""The pace probe: the host's memory-system speed measured beside a launch, on the launch's core.

On a shared cloud VM whole launches run faster or slower with the host (README, "Gate power"); a
short copy that does not fit in the L2 cache, run on the launch's own core at a low duty cycle,
tracked resnet50's and vgg16's throughput across launches with correlations of +0.92 to +0.96
(benchmarks/sibling_probe.py, 2026-11-25). The gate can then judge throughputs at one pace.

Started by the harness (``--dlperf-pace-probe``) in front of every node's launch command (each CPU
node the harness starts a command on; a launcher that starts every node from node 0, as mpirun
does, has node 0's only)::

    python3 paceprobe.py --output pace.log [--period 0.1] -- <launch command ...>

It starts the probe as a child pinned to the first core this process may use (the local cluster
pins each node to its own cores, so that is the node's worker core), runs the command as another
child, passes SIGTERM, SIGINT and SIGHUP on to the command, and when the command ends stops the
probe and exits with the command's status. Both children inherit the run's tag in the environment,
so the harness's sweep finds them should this wrapper be killed first. Without numpy on the node
the probe writes its error to the log and the launch runs as it would without the probe.

The probe wakes every ``--period`` seconds and copies 8 MiB (past the L2, inside the L3) a few
times, each call timed in its own thread's CPU time (so the launch's turns on the core are not
counted; time the host takes from the core is); a wake-up's rate is its best call, in GB/s counting
bytes read and written. It costs a launch about 3% of its throughput (2.3-3.6% measured).

Contract with the harness, version 2: the ``--output`` file, text, one line per wake-up after a
header::

    # dlperf-pace 2 kernel=copy-8MiB period=0.1 perf=<perf_counter> wall=<time.time()>
    <time.perf_counter() at the wake-up> <time.perf_counter() after its calls> <GB/s>
    ...
    # error <why>            (instead of the rate lines, when the probe cannot run)

``perf_counter`` is the host's monotonic clock, the one the workloads' step logs use; ``perf`` and
``wall`` are that clock and the Unix time read together when the probe starts, so the harness can
place rank 0's window (on node 0's ``perf_counter``) on every other node's clock through the Unix
time the nodes share (NTP keeps it within milliseconds; the window lasts seconds). It averages the
wake-ups inside the window. Version 1 (2026-11-25, node 0 only) had no clock pair. Standard
library and numpy only; imports nothing from the harness.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time

VERSION = 2
KERNEL = "copy-8MiB"
COPY_FLOATS = 1 << 21  # 8 MiB of float32
CALL_SECONDS = 0.002  # calls per wake-up: as many as take about this long at full speed (at least 3)


def probe(output: str, period: float) -> int:
    """Write one rate line per wake-up until killed."""
    with open(output, "w", buffering=1) as log:
        perf, wall, after = time.perf_counter(), time.time(), time.perf_counter()
        log.write(f"# dlperf-pace {VERSION} kernel={KERNEL} period={period:g} "
                  f"perf={(perf + after) / 2:.6f} wall={wall:.6f}\n")
        try:
            os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
            import numpy as np
        except (ImportError, OSError) as exc:
            log.write(f"# error {type(exc).__name__}: {exc}\n")
            return 0
        src = np.ones(COPY_FLOATS, dtype=np.float32)
        dst = np.empty_like(src)
        gb = 2 * src.nbytes / 1e9
        calls, t = 0, time.thread_time()
        while time.thread_time() - t < CALL_SECONDS:
            np.copyto(dst, src)
            calls += 1
        calls = max(3, calls)
        while True:
            time.sleep(period)
            t0, best = time.perf_counter(), float("inf")
            for _ in range(calls):
                c0 = time.thread_time()
                np.copyto(dst, src)
                best = min(best, time.thread_time() - c0)
            log.write(f"{t0:.6f} {time.perf_counter():.6f} {gb / max(best, 1e-9):.4f}\n")


def run(output: str, period: float, command: list[str]) -> int:
    """Run ``command`` with the probe beside it; the command's exit status."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    prober = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--probe", "--output", output,
                               "--period", str(period)], env=env, stdin=subprocess.DEVNULL)
    try:
        child = subprocess.Popen(command)
    except OSError as exc:
        prober.kill()
        prober.wait()
        print(f"paceprobe.py: cannot start {command[0]!r}: {exc}", file=sys.stderr)
        return 127

    def forward(signum: int, _frame: object) -> None:
        if child.poll() is None:
            child.send_signal(signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)
    try:
        rc = child.wait()
    finally:
        prober.kill()
        prober.wait()
    return 128 - rc if rc < 0 else rc


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--output", required=True, help="the probe's log (contract above)")
    p.add_argument("--period", type=float, default=0.1, help="seconds between wake-ups (default 0.1)")
    p.add_argument("--probe", action="store_true", help="be the probe itself (the wrapper starts it so)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- then the launch command")
    a = p.parse_args(argv)
    if a.probe:
        return probe(a.output, a.period)
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not command:
        p.error("no command to run: paceprobe.py --output FILE -- COMMAND ...")
    if not a.period > 0:
        p.error(f"--period must be above 0, got {a.period}")
    return run(a.output, a.period, command)


if __name__ == "__main__":
    sys.exit(main())
