"""Would A/B pairs whose two launches run at the same time, on disjoint cores, spread less than
pairs run one after the other? An experiment for a design question, not a feature of the suite.

On the local cluster a 1n1g case runs one thread pinned to node 0's core (``taskset -c 0``), and
the other core idles. Here each pair's reference and candidate either run one after the other on
core 0, ABBA (what ``--dlperf-candidate`` does today: "sequential"), or both at once, one on each
core, swapping cores pair by pair ("simultaneous"), so both sides live through the same host
state. The two kinds of pair alternate, so both see the same hour. The workload is the suite's own
(torch_ddp.py, resnet50 fp32 bs8 64 px, the CPU profile's lengths, one thread, the launchers'
malloc settings), run from the launcher's own command line without the harness around it.

    python3 benchmarks/ab_simultaneous.py --pairs 16 --slowdowns 0,0.05 --pools-file /tmp/sim.json

It prints, per kind and planted slow-down, the pairs' mean ratio and the spread of their log
ratios, and writes pools that ``ab_power.py --analyze-only --pools-file`` replays through the
session's sequential verdict.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ab_power import slowdown_list  # benchmarks/ is this script's own directory on sys.path

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ROOT / "pytest_dlperf" / "node" / "workloads"
FILES = ("torch_ddp.py", "steplog.py", "nodefacts.py")
# The CPU profile's resnet50 case, as `pytest suites/` launches it (see --dlperf-dryrun).
CASE = ["--model", "resnet50", "--precision", "fp32", "--batch-size", "8", "--image-size", "64",
        "--warmup-iters", "2", "--max-warmup-iters", "4", "--iters", "3", "--window-seconds", "1.5",
        "--max-iters", "40", "--threads", "1"]
ENV = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "68719476736", "OMP_NUM_THREADS": "1"}


def launch(work: Path, core: int, port: int, slowdown: float) -> subprocess.Popen:
    """Start one launch of the case on ``core``; its step log goes to work/steps.jsonl."""
    work.mkdir(parents=True)
    for f in FILES:
        shutil.copy(WORKLOADS / f, work / f)
    argv = ["taskset", "-c", str(core), sys.executable, "-m", "torch.distributed.run", "--nnodes", "1",
            "--node_rank", "0", "--nproc_per_node", "1", "--master_addr", "127.0.0.1", "--master_port", str(port),
            "--log-dir", str(work / "torchelastic"), str(work / "torch_ddp.py"), *CASE,
            "--output", str(work / "steps.jsonl")]
    env = {**os.environ, **ENV, **({"DLPERF_PLANT_SLOWDOWN": f"{slowdown:g}"} if slowdown else {})}
    return subprocess.Popen(argv, cwd=work, env=env, stdout=(work / "out.log").open("w"), stderr=subprocess.STDOUT)


def window(work: Path) -> tuple[float, float, float]:
    """(samples/s over the measured steps, first step's start, last step's end) from the step log."""
    steps = [json.loads(line) for line in (work / "steps.jsonl").read_text().splitlines()]
    measured = [s for s in steps if s.get("kind") == "step" and not s.get("warmup")]
    if not measured:
        raise SystemExit(f"ab_simultaneous: no measured steps in {work / 'steps.jsonl'}; see {work / 'out.log'}")
    seconds = sum(s["end"] - s["start"] for s in measured)
    return sum(s["samples"] for s in measured) / seconds, measured[0]["start"], measured[-1]["end"]


def wait(procs: list[subprocess.Popen], works: list[Path]) -> None:
    for p, w in zip(procs, works):
        if p.wait(timeout=600) != 0:
            raise SystemExit(f"ab_simultaneous: a launch failed (exit {p.returncode}); see {w / 'out.log'}")


def pair(kind: str, k: int, d: float, base: Path, port: int) -> dict:
    """One pair of ``kind``; its ratio (candidate / reference), seconds, and how much the windows overlapped."""
    t0 = time.time()
    ref, cand = base / "reference", base / "candidate"
    if kind == "simultaneous":
        cores = (k % 2, 1 - k % 2)
        procs = [launch(ref, cores[0], port, 0.0), launch(cand, cores[1], port + 1, d)]
        wait(procs, [ref, cand])
    else:
        order = ("reference", "candidate") if k % 4 in (0, 3) else ("candidate", "reference")
        for role in order:
            work = ref if role == "reference" else cand
            wait([launch(work, 0, port, d if role == "candidate" else 0.0)], [work])
    (a, a0, a1), (b, b0, b1) = window(ref), window(cand)
    overlap = max(0.0, min(a1, b1) - max(a0, b0)) / max(a1 - a0, b1 - b0)
    return {"ratio": b / a, "seconds": time.time() - t0, "first": "reference", "overlap": overlap}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=16, help="pairs of each kind per slow-down")
    ap.add_argument("--slowdowns", type=slowdown_list, default="0,0.05")
    ap.add_argument("--pools-file", type=Path, default=Path(tempfile.gettempdir()) / "ab_simultaneous.json")
    args = ap.parse_args()
    pools: list[dict] = []
    port = 29600
    with tempfile.TemporaryDirectory(prefix="ab-sim-") as tmp:
        for d in args.slowdowns:
            got: dict[str, list[dict]] = {"sequential": [], "simultaneous": []}
            started = time.time()
            for k in range(args.pairs):
                kinds = ("sequential", "simultaneous") if k % 2 == 0 else ("simultaneous", "sequential")
                for kind in kinds:
                    port += 2
                    got[kind].append(pair(kind, k, d, Path(tmp) / f"d{d:g}-{kind}-{k}", port))
            for kind, pairs in got.items():
                logs = [math.log(p["ratio"]) for p in pairs]
                print(f"planted {d:.0%} {kind:>12}: {len(pairs)} pairs, ratio {math.exp(statistics.fmean(logs)):.3f}, "
                      f"sd(log) {statistics.stdev(logs):.3f}, a pair {statistics.fmean(p['seconds'] for p in pairs):.1f} s, "
                      f"windows overlapped {statistics.fmean(p['overlap'] for p in pairs):.0%}", flush=True)
                pools.append({"slowdown": d, "label": f"planted {d:.0%}, {kind}", "sides": ["current", "current"],
                              "started": started, "seconds": sum(p["seconds"] for p in pairs), "pairs": pairs})
            args.pools_file.write_text(json.dumps(pools, indent=1))
    print(f"pools: {args.pools_file} ({time.strftime('%Y-%m-%d %H:%M')}); replay: python3 benchmarks/ab_power.py "
          f"--analyze-only --pools-file {args.pools_file}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
