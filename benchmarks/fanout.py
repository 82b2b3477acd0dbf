#!/usr/bin/env python3
"""Is the SSH cluster's fan-out parallel? One command on 1 node vs the same command on 16 nodes.

Starts 16 real sshd nodes on loopback (127.0.0.2 ...; tests/sshd.py), connects an SSHCluster
once (preflight), then times ``run_all`` of one command on node 0 alone and on all 16 nodes at
once, over warm connections, and prints the medians and their ratio (target: 16 nodes < 2x one;
run one at a time, in turn, would be ~16x).

The gated command is ``sleep 0.05``: a command that takes node time but no CPU of this machine.
On loopback every "node" shares this machine's cores, so the CPU a command burns on the node
(a Python start-up, say) adds up over 16 nodes and measures this machine's core count rather
than the fan-out; those commands are printed too, for information, with the core count.

    python benchmarks/fanout.py [--nodes 16] [--reps 15] [--cmd 'sleep 0.05']
"""
from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.sshd import sshd_nodes  # noqa: E402

TARGET = 2.0


def timed(cluster, argv: list[str], nodes, reps: int) -> float:  # noqa: ANN001
    """Median seconds of run_all(argv) on the nodes (every node must exit 0)."""
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        cluster.run_all(argv, nodes=nodes, timeout=60)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--reps", type=int, default=15, help="timed repetitions per figure (median)")
    ap.add_argument("--cmd", default="sleep 0.05", help="the gated command (default: sleep 0.05)")
    args = ap.parse_args()
    gated = shlex.split(args.cmd)
    extra = [["true"], ["python3", "-c", "pass"]]
    with tempfile.TemporaryDirectory(prefix="dlperf-fanout-") as tmp, sshd_nodes(args.nodes, Path(tmp)) as sshd:
        cluster = sshd.cluster()
        try:
            t0 = time.perf_counter()
            nodes = cluster.nodes()  # connect and preflight every node once, in parallel
            connect = time.perf_counter() - t0
            print(f"{len(nodes)} sshd nodes on loopback, {os.cpu_count()} CPU core(s) here; "
                  f"connect + preflight of all: {connect * 1000:.0f} ms")
            rows = []
            for argv in [gated, *extra]:
                timed(cluster, argv, nodes, 2)  # warm-up
                one = timed(cluster, argv, nodes[:1], args.reps)
                many = timed(cluster, argv, nodes, args.reps)
                rows.append((argv, one, many))
            t0 = time.perf_counter()
            for _ in range(3):
                for node in nodes:  # what a loop over the nodes without fan-out would take
                    cluster.run_all(gated, nodes=[node], timeout=60)
            in_turn = (time.perf_counter() - t0) / 3
            print(f"{'command':28} {'1 node':>10} {f'{len(nodes)} nodes':>10} {'ratio':>7}")
            for argv, one, many in rows:
                note = "  <- gated" if argv is gated else "  (CPU on the nodes adds up on this machine)"
                print(f"{shlex.join(argv):28} {one * 1000:8.1f}ms {many * 1000:8.1f}ms {many / one:6.2f}x{note}")
        finally:
            cluster.close()
    _, one, many = rows[0]
    ok = many < TARGET * one
    print(f"without fan-out (node after node) {shlex.join(gated)!r} on {len(nodes)} nodes takes {in_turn * 1000:.0f} ms "
          f"({in_turn / one:.1f}x one)")
    print(f"fan-out of {shlex.join(gated)!r}: 1 node {one * 1000:.1f} ms, {len(nodes)} nodes {many * 1000:.1f} ms, "
          f"ratio {many / one:.2f}x (target < {TARGET:g}x): {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
