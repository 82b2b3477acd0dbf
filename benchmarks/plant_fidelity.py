"""Does DLPERF_PLANT_SLOWDOWN=d cost the throughput it says? Replays one recorded launch in pairs.

The gate's tests and ``gate_power.py`` plant slow-downs by sleeping inside each step. On a shared VM
a core that sleeps might be lent back faster by the host, and the plant would then cost less than
d. This replays a 1n1g launch from a report (``<report>/runs/<case>/r0/commands.sh``) N times
without the plant and N times with it, in turns, and prints the paired ratios: their median should
be near 1 - d.

    python3 benchmarks/plant_fidelity.py /tmp/report/runs/resnet50-fp32-bs8-64px-1n1g/r0/commands.sh \
        --plant 0.1 --pairs 8 --window-seconds 3
"""
from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
from pathlib import Path

from pytest_dlperf import metrics
from pytest_dlperf.measure.runner import parse_steps


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(command: str, output: Path, plant: float) -> float:
    """Run the launch once; its window's throughput, read and computed as the harness does."""
    command = re.sub(r"--master_port \d+", f"--master_port {free_port()}", command)
    r = subprocess.run(["bash", "-c", command], env={**os.environ, "DLPERF_PLANT_SLOWDOWN": str(plant)},
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"the launch failed (exit {r.returncode}):\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    meta, steps = parse_steps(output)
    return metrics.throughput(steps, meta["warmup_iters"], meta["iters"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("commands", type=Path, help="a 1n1g run's commands.sh from a dlperf report")
    ap.add_argument("--plant", type=float, default=0.1, help="the planted slow-down d (default 0.1)")
    ap.add_argument("--pairs", type=int, default=8, help="launches with and without it (default 8)")
    ap.add_argument("--window-seconds", type=float, help="the window's length instead of the launch's own")
    args = ap.parse_args()
    lines = [line for line in args.commands.read_text().splitlines() if line.strip()]
    if len(lines) != 1:
        sys.exit(f"{args.commands}: {len(lines)} node commands; give a 1n1g run's commands.sh (one line)")
    found = re.search(r"--output (\S+)", lines[0])
    if not found:
        sys.exit(f"{args.commands}: no --output in the command: not a dlperf workload's launch")
    output = Path(found.group(1))
    command = lines[0]
    if args.window_seconds is not None:
        command = re.sub(r"--window-seconds \S+", f"--window-seconds {args.window_seconds:g}", command)
    ratios = []
    for i in range(args.pairs):
        plain, planted = launch(command, output, 0.0), launch(command, output, args.plant)
        ratios.append(planted / plain)
        print(f"pair {i + 1}: {plain:.3f} and {planted:.3f} samples/s, ratio {ratios[-1]:.3f}", flush=True)
    print(f"median paired ratio {statistics.median(ratios):.3f} (a faithful plant gives {1 - args.plant:.3f}); "
          f"range {min(ratios):.3f}-{max(ratios):.3f} over {len(ratios)} pairs")


if __name__ == "__main__":
    main()
