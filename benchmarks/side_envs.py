#!/usr/bin/env python3
"""Side environments (issue #64), measured on this machine.

1. ``make``: the time to a ready environment that differs from the session's python by one small
   package (a pure-Python wheel the benchmark builds), on both nodes of the local cluster at once, as an
   A/B session makes it (``envs.make_everywhere``): first into an empty cache, then again from the cache;
   for each installer this machine has (pip always; uv where installed).
2. ``verdicts``: real training, resnet50 fp32 (the suite's CPU sizes: bs8, 64 px) 1n1g and 2n1g, as A/B sessions of
   the suite whose candidate is ``pip=WHEEL``: a library that slows every training worker by --share
   (its ``.pth`` sets DLPERF_PLANT_SLOWDOWN at every interpreter's start), and its twin without the
   slowing. Prints each case's verdict, ratio, pairs and the time its environment took.

Usage: python3 benchmarks/side_envs.py make [--rounds 3]
       python3 benchmarks/side_envs.py verdicts [--share 0.1] [--max-pairs 12]
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_dlperf.clusters.local import LocalCluster  # noqa: E402
from pytest_dlperf.envs.make import make_everywhere  # noqa: E402
from pytest_dlperf.envs.options import EnvOptions  # noqa: E402
from tests.wheels import slowing_wheel  # noqa: E402


def installers() -> list[str]:
    return ["pip", *(["uv"] if shutil.which("uv") or (Path(sys.executable).parent / "uv").exists() else [])]


def make(rounds: int, work: Path) -> None:
    cluster = LocalCluster(nodes=2)
    nodes = cluster.nodes()
    print("Both local nodes share this machine's cache: one makes, the other waits on the lock and reuses it.")
    print(f"{'installer':<10} {'round':>5} {'cold s (2 nodes)':>17} {'per node s':>24} {'cached s':>9}")
    for installer in installers():
        for i in range(rounds):
            wheel = slowing_wheel(work / f"w-{installer}-{i}", 0.0, version=f"1.0.{i}")  # a new key each round
            options = EnvOptions(cache=str(work / f"cache-{installer}-{i}"), installer=installer)
            t0 = time.monotonic()
            cold = make_everywhere(cluster, nodes, [str(wheel)], (), options, work / "logs", "bench", lambda s: None)
            cold_s = time.monotonic() - t0
            t0 = time.monotonic()
            warm = make_everywhere(cluster, nodes, [str(wheel)], (), options, work / "logs", "bench", lambda s: None)
            warm_s = time.monotonic() - t0
            per = ", ".join(f"{n.seconds:.1f}{' (reused)' if n.reused else ''}" for n in cold.nodes.values())
            assert all(n.reused for n in warm.nodes.values())
            print(f"{installer:<10} {i:>5} {cold_s:>17.1f} {per:>24} {warm_s:>9.1f}", flush=True)
    cluster.close()


def verdicts(share: float, max_pairs: int, work: Path) -> None:
    print(f"{'candidate':<22} {'case':<30} {'verdict':<9} {'ratio':>6} {'interval':>16} {'pairs':>5} {'env s':>6}")
    for label, s in ((f"slowed {share:.0%}", share), ("twin (no slowing)", 0.0)):
        wheel = slowing_wheel(work / label.split()[0], s)
        report = work / f"report-{label.split()[0]}"
        cmd = [sys.executable, "-m", "pytest", str(ROOT / "suites"), "-q", "-p", "no:cacheprovider",
               "--rootdir", str(ROOT), "-k", "resnet50 and fp32 and (1n1g or 2n1g)", "--dlperf-nodes", "2",
               f"--dlperf-report={report}", f"--dlperf-baseline-dir={work / 'no-baselines'}",
               f"--dlperf-candidate=pip={wheel}", f"--dlperf-env-cache={work / 'envs'}",
               f"--dlperf-ab-max-pairs={max_pairs}"]
        t0 = time.time()
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        doc = json.loads((report / "results.json").read_text()) if (report / "results.json").exists() else {}
        ab = doc.get("ab") or {}
        env = (ab.get("sides", {}).get("candidate") or {}).get("environment") or {}
        if not ab.get("cases"):
            print(f"{label:<22} (no verdict: exit {r.returncode}) {r.stdout[-400:]}")
        for case, got in (ab.get("cases") or {}).items():
            print(f"{label:<22} {case:<30} {got['verdict']:<9} {got.get('ratio', float('nan')):>6.3f} "
                  f"{'[' + format(got.get('low', 0), '.3f') + ', ' + format(got.get('high', 0), '.3f') + ']':>16} "
                  f"{got['pairs']:>5} {env.get('seconds', 0):>6.1f}", flush=True)
        print(f"  ({label}: session {time.time() - t0:.0f} s, exit {r.returncode}, environment on "
              f"{sorted((env.get('nodes') or {}))})", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    m = sub.add_parser("make")
    m.add_argument("--rounds", type=int, default=3)
    v = sub.add_parser("verdicts")
    v.add_argument("--share", type=float, default=0.1)
    v.add_argument("--max-pairs", type=int, default=12)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="dlperf-side-envs-") as tmp:
        if args.what == "make":
            make(args.rounds, Path(tmp))
        else:
            verdicts(args.share, args.max_pairs, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
