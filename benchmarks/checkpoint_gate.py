#!/usr/bin/env python3
"""What a checkpoint costs a launch and how well the A/B gate judges its save time (issue #80), with real training
on this machine.

``cost``: one session of the default suite (or ``-k``) with ``--dlperf-checkpoint on`` and ``--dlperf-repeats N``;
per case, the launch's seconds, the save and load seconds (the slowest rank's), their share of the launch (auto
keeps a case's checkpoint where its first launch's share is at most 10%) and the checkpoint's size.

``ab``: pools of real A/B pairs (as benchmarks/ab_power.py collects them: one session held at exactly --pairs
pairs, ABBA BAAB), identical sides (A/A) and a candidate whose every save is planted --plant times longer
(``DLPERF_PLANT_SAVE``), with the checkpoint on every launch. Then trials replayed on each pool: the pairs in a
random order (drawn with replacement past the pool's size: trials share pairs, so they are not independent), the
session's own sequential verdict (``ab.sequential.decide`` at the metric's CPU tolerance) after every pair, up to
--max-pairs. Prints, for checkpoint_save and checkpoint_load, how often A/A was WORSE and how often and after how
many pairs the planted save was, against the issue's targets (2x WORSE within 6 pairs; no false WORSE in 10 A/A
sessions).

Usage: python3 benchmarks/checkpoint_gate.py cost [-k EXPR] [--repeats 1]
       python3 benchmarks/checkpoint_gate.py ab [-k EXPR] [--pairs 16] [--plant 2] [--pools-file F] [--analyze-only]
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_dlperf import metrics  # noqa: E402
from pytest_dlperf.ab.sequential import Method, decide  # noqa: E402
from pytest_dlperf.metrics import DeviceKind  # noqa: E402

SUITE = [sys.executable, "-m", "pytest", str(ROOT / "suites"), "-q", "-p", "no:cacheprovider", "--rootdir", str(ROOT)]
GATED = ("checkpoint_save", "checkpoint_load")


def session(args: list[str], report: Path) -> dict:
    """One suite session writing its report to ``report``; its results.json (exits on a session that wrote none)."""
    r = subprocess.run([*SUITE, f"--dlperf-report={report}", *args], cwd=ROOT, capture_output=True, text=True)
    path = report / "results.json"
    if not path.exists():
        sys.exit(f"checkpoint_gate: the session wrote no results.json (exit {r.returncode}):\n{r.stdout[-3000:]}{r.stderr[-2000:]}")
    return json.loads(path.read_text())


def cost(opts: argparse.Namespace, work: Path) -> None:
    doc = session(["-k", opts.k, "--dlperf-checkpoint", "on", "--dlperf-repeats", str(opts.repeats),
                   f"--dlperf-baseline-dir={work / 'none'}", "--dlperf-baseline-missing", "skip"], work / "cost")
    print(f"{'case':48} {'launch s':>9} {'save s':>7} {'load s':>7} {'share':>6} {'MiB':>7}  (medians of {opts.repeats})")
    for case in doc["cases"]:
        rows = [(r["wall_seconds"], r["meta"]["checkpoint"]) for r in case["runs"] if r["meta"].get("checkpoint")]
        if not rows:
            print(f"{case['case']['id']:48} no checkpoint")
            continue
        wall = statistics.median(w for w, _ in rows)
        save = statistics.median(c["save_seconds"] for _, c in rows)
        load = statistics.median(c["load_seconds"] for _, c in rows)
        share = statistics.median((c["save_seconds"] + c["load_seconds"]) / w for w, c in rows)
        name = f"{case['case']['backend']}/{case['case']['id']}"
        print(f"{name:48} {wall:9.1f} {save:7.2f} {load:7.2f} {share:6.1%} {rows[0][1]['bytes'] / 2 ** 20:7.1f}")


def collect(opts: argparse.Namespace, work: Path, candidate: str, label: str) -> list[dict]:
    """One A/B session held at exactly --pairs pairs; each pair's figures of the gated checkpoint metrics."""
    t0 = time.time()
    doc = session(["-k", opts.k, "--dlperf-checkpoint", "on", f"--dlperf-baseline-dir={work / 'none'}",
                   f"--dlperf-candidate={candidate}", f"--dlperf-ab-min-pairs={opts.pairs}",
                   f"--dlperf-ab-max-pairs={opts.pairs}", "--dlperf-ab-alpha=0.0001", "--dlperf-explain=never"],
                  work / label)
    (case,) = (doc.get("ab") or {}).get("cases", {}).values()
    pairs = [{m: (p["reference"]["figures"].get(m), p["candidate"]["figures"].get(m)) for m in GATED}
             for p in case["pairs_taken"]]
    print(f"collected {label}: {len(pairs)} pairs in {time.time() - t0:.0f} s", flush=True)
    return pairs


def replay(pairs: list[dict], metric: str, trials: int, max_pairs: int, rng: random.Random) -> tuple[int, list[int]]:
    """Sessions replayed on a pool: how many ended WORSE, and after how many pairs each of those did."""
    declared = metrics.get(metric)
    method = Method(tolerance=declared.default_tolerance(DeviceKind.CPU), max_pairs=max_pairs)
    data = [p[metric] for p in pairs if None not in p[metric]]
    worse, at = 0, []
    for _ in range(trials):
        order = rng.sample(data, len(data)) if len(data) >= max_pairs else [rng.choice(data) for _ in range(max_pairs)]
        for n in range(method.min_pairs, max_pairs + 1):
            got = decide(order[:n], method, final=n == max_pairs, lower_is_better=True)
            if got.status.value != "continue":
                break
        if got.status.value == "slower":  # lower is better: "slower" is a higher figure, WORSE
            worse += 1
            at.append(n)
    return worse, at


def ab(opts: argparse.Namespace, work: Path) -> None:
    pools_file = Path(opts.pools_file) if opts.pools_file else work / "pools.json"
    if not opts.analyze_only:
        pools = {"aa": collect(opts, work, "name=again", "aa"),
                 "planted": collect(opts, work, f"env=DLPERF_PLANT_SAVE={opts.plant:g}", f"plant-{opts.plant:g}x")}
        pools_file.write_text(json.dumps({"plant": opts.plant, "k": opts.k, "pools": pools}))
    saved = json.loads(pools_file.read_text())
    rng = random.Random(opts.seed)
    for metric in GATED:
        for name, pool in saved["pools"].items():
            ratios = [c / r for r, c in (p[metric] for p in pool) if r and c]
            worse, at = replay(pool, metric, opts.trials, opts.max_pairs, rng)
            said = f"after {statistics.median(at):.0f} pairs (max {max(at)})" if at else ""
            what = "A/A" if name == "aa" else f"save planted {saved['plant']:g}x"
            print(f"{metric:16} {what:20} pool {len(pool):2} pairs, median ratio {statistics.median(ratios):.3f}: "
                  f"WORSE in {worse}/{opts.trials} replayed sessions {said}")
    print("targets: a 2x slower save WORSE within 6 pairs; no A/A session WORSE (10 sessions)")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=("cost", "ab"))
    p.add_argument("-k", default="", help="the cases (pytest -k; ab: one case, default llama fp32 1n1g eager)")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--pairs", type=int, default=12, help="ab: pairs a pool holds")
    p.add_argument("--plant", type=float, default=2.0, help="ab: the candidate's saves this many times longer")
    p.add_argument("--max-pairs", type=int, default=6, help="ab: a replayed session's most pairs")
    p.add_argument("--trials", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--pools-file", default="")
    p.add_argument("--analyze-only", action="store_true")
    p.add_argument("--work", default="")
    opts = p.parse_args()
    if opts.what == "ab" and not opts.k:
        opts.k = "llama and 1n1g and not compiled"
    work = Path(opts.work or tempfile.mkdtemp(prefix="checkpoint-gate-"))
    (cost if opts.what == "cost" else ab)(opts, work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
