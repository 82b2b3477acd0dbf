#!/usr/bin/env python3
"""How often the A/B gate is right, measured with real training on this machine.

1. Collects pools of real pairs: for each planted slow-down d (0 = A/A), one A/B session of the
   suite (resnet50 fp32 1n1g on one pinned core, the CPU profile's sizes and window, as `pytest
   suites/` runs it; no pace probe, as in any A/B session) with `--dlperf-candidate env=DLPERF_PLANT_SLOWDOWN=d`, held at exactly --pairs pairs
   (min = max pairs, so it never stops early). Each pair is two launches adjacent in time, ABBA BAAB.
2. Replays trials on those pairs: each trial takes the pool's pairs in a random order (drawn with
   replacement once a trial needs more than the pool holds; trials share pairs, so they are not
   independent) and applies the session's own sequential verdict (`ab.sequential.decide`, the
   default method unless --tolerance/--alpha/--max-pairs) after every pair, as a session does.
3. Prints per slow-down: SLOWER / SAME / FASTER / UNDECIDED rates with Wilson 95% intervals, the
   pairs used (median, 90th percentile), the minutes of pairs those took on this machine, and
   whether the targets are met (A/A fails at most 1 in 20; 5% caught in at least 19 of 20 within
   10 minutes of pairs).

Usage: python3 benchmarks/ab_power.py --pairs 16 --slowdowns 0,0.02,0.05,0.1 --pools-file /tmp/ab_pools.json
       python3 benchmarks/ab_power.py --analyze-only --pools-file /tmp/ab_pools.json [--trials 500]
"""
from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_dlperf.ab.sequential import Method, decide  # noqa: E402

CASE = "resnet50-fp32-bs8-64px-1n1g"


def collect(d: float, pairs: int, work: Path, candidate: str | None = None, reference: str = "current",
            label: str = "", window_seconds: float | None = None) -> dict:
    """One A/B session at exactly ``pairs`` pairs; its pairs as results.json has them. By default
    the candidate plants ``d``; ``candidate``/``reference`` give other sides (the slowed library);
    ``window_seconds`` sizes each launch's measured window (--dlperf-window-seconds) instead of the profile's."""
    label = label or f"planted {d:.0%}"
    report = work / label.replace(" ", "-").replace("%", "pct")
    candidate = candidate or f"env=DLPERF_PLANT_SLOWDOWN={d:g}"
    cmd = [sys.executable, "-m", "pytest", str(ROOT / "suites"), "-q", "-p", "no:cacheprovider",
           "--rootdir", str(ROOT), "-k", "resnet50 and fp32 and 1n1g",
           f"--dlperf-report={report}", f"--dlperf-baseline-dir={work / 'no-baselines'}",
           f"--dlperf-candidate={candidate}", f"--dlperf-reference={reference}",
           f"--dlperf-ab-min-pairs={pairs}", f"--dlperf-ab-max-pairs={pairs}", "--dlperf-ab-alpha=0.0001"]
    if window_seconds:
        cmd.append(f"--dlperf-window-seconds={window_seconds:g}")
    t0 = time.time()
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    doc = json.loads((report / "results.json").read_text()) if (report / "results.json").exists() else {}
    case = (doc.get("ab") or {}).get("cases", {}).get(CASE)
    if not case or not case.get("pairs_taken"):
        sys.exit(f"ab_power: the session for {label} took no pairs (exit {r.returncode}):\n{r.stdout[-3000:]}")
    taken = case["pairs_taken"]
    return {"slowdown": d, "label": label, "window_seconds": window_seconds, "sides": [reference, candidate], "started": t0, "seconds": time.time() - t0,
            "pairs": [{"ratio": p["ratio"], "seconds": p["reference"]["wall_seconds"] + p["candidate"]["wall_seconds"],
                       "first": p["first"]} for p in taken]}


def wilson(k: int, n: int) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    z, p = 1.96, k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, c - h), min(1.0, c + h)


def trial(pool: list[dict], method: Method, rng: random.Random) -> tuple[str, int, float]:
    """One replayed session: (verdict, pairs used, seconds of those pairs)."""
    order = rng.sample(pool, len(pool)) + [rng.choice(pool) for _ in range(max(0, method.max_pairs - len(pool)))]
    logs, secs = [], 0.0
    for p in order[:method.max_pairs]:
        logs.append(math.log(p["ratio"]))
        secs += p["seconds"]
        got = decide(logs, method, final=len(logs) >= method.max_pairs)
        if got.status.value != "continue":
            return got.status.value, len(logs), secs
    return "undecided", len(logs), secs


def analyze(pools: list[dict], method: Method, trials: int, seed: int) -> None:
    rng = random.Random(seed)
    print(f"method: alpha {method.alpha}, tolerance {method.tolerance:.0%}, {method.min_pairs}-{method.max_pairs} "
          f"pairs (nominal level {method.gamma:.4f}); {trials} replayed trials per slow-down")
    print(f"{'pool':>16} {'pairs':>5} {'ratio':>7} {'sd(log)':>8} {'SLOWER':>16} {'SAME':>6} {'FASTER':>7} "
          f"{'UNDEC.':>7} {'pairs p50/p90':>14} {'minutes p50/p90':>16}")
    met = {}
    for pool in pools:
        ratios = [p["ratio"] for p in pool["pairs"]]
        logs = [math.log(r) for r in ratios]
        got = [trial(pool["pairs"], method, rng) for _ in range(trials)]
        count = {v: sum(1 for g in got if g[0] == v) for v in ("slower", "same", "faster", "undecided")}
        used = sorted(g[1] for g in got)
        mins = sorted(g[2] / 60 for g in got)
        lo, hi = wilson(count["slower"], trials)
        d = pool["slowdown"]
        print(f"{pool.get('label', f'planted {d:.0%}'):>16} {len(ratios):>5} {math.exp(statistics.fmean(logs)):>7.3f} {statistics.stdev(logs):>8.3f} "
              f"{count['slower'] / trials:>6.1%} ({lo:.0%}-{hi:.0%}) {count['same'] / trials:>6.1%} "
              f"{count['faster'] / trials:>7.1%} {count['undecided'] / trials:>7.1%} "
              f"{used[len(used) // 2]:>7}/{used[int(len(used) * 0.9)]:<6} "
              f"{mins[len(mins) // 2]:>8.1f}/{mins[int(len(mins) * 0.9)]:<7.1f}")
        if d == 0 and "label" not in pool or pool.get("label") == "planted 0%":
            met["A/A fails at most 1 in 20"] = count["slower"] / trials <= 0.05
        if abs(d - 0.05) < 1e-9 and pool.get("label", "planted 5%") == "planted 5%":
            within = sum(1 for g in got if g[0] == "slower" and g[2] <= 600)
            met["5% caught in 19 of 20 within 10 minutes of pairs"] = within / trials >= 0.95
            print(f"         5% caught within 10 minutes of pairs: {within / trials:.1%}")
    for what, ok in met.items():
        print(f"target: {what} -> {'met' if ok else 'NOT met'}")
    pair_s = statistics.fmean(p["seconds"] for pool in pools for p in pool["pairs"])
    print(f"a pair took {pair_s:.1f} s on average here; an A/B session of the default suite (8 ddp cases) at "
          f"the A/A pool's median pairs costs about 8 x pairs x the cases' pair time")


def model(method: Method, trials: int, seed: int, sds: list[float], slowdowns: list[float]) -> None:
    """What the same verdict gives on a machine whose pairs' log ratios have spread ``sd``: normal
    log ratios (a model, not a measurement), to read the measured pools' spread against."""
    rng = random.Random(seed)
    print(f"model (normal log ratios, not a measurement): SLOWER rate / median pairs, {trials} trials, "
          f"cap {method.max_pairs}")
    print(f"{'sd':>6} " + " ".join(f"{d:>12.0%}" for d in slowdowns))
    for sd in sds:
        cells = []
        for d in slowdowns:
            pool = [{"ratio": math.exp(rng.gauss(math.log(1 - d), sd)), "seconds": 0.0}
                    for _ in range(max(200, method.max_pairs))]
            got = [trial(pool, method, rng) for _ in range(trials)]
            used = sorted(g[1] for g in got)
            cells.append(f"{sum(g[0] == 'slower' for g in got) / trials:>6.0%} /{used[len(used) // 2]:>3}")
        print(f"{sd:>6.1%} " + " ".join(f"{c:>12}" for c in cells))


def slowdown_list(text: str) -> list[float]:
    """``--slowdowns 0,0.05``: fractions in [0, 1); argparse turns a bad one into a one-line usage error."""
    try:
        got = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give fractions separated by commas, e.g. 0,0.05") from None
    if not got or any(not 0 <= d < 1 for d in got):
        raise argparse.ArgumentTypeError(f"{text!r}: each slow-down is a fraction from 0 up to (not including) 1")
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=16)
    ap.add_argument("--slowdowns", type=slowdown_list, default="0,0.02,0.05,0.1")
    ap.add_argument("--pools-file", type=Path, default=Path(tempfile.gettempdir()) / "ab_pools.json")
    ap.add_argument("--analyze-only", action="store_true")
    ap.add_argument("--trials", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tolerance", type=float, default=0.02)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--max-pairs", type=int, default=20)
    ap.add_argument("--model", action="store_true", help="also print the modelled rates for pairs' spreads of "
                    "2-12%% (normal log ratios), to read the measured spread against")
    ap.add_argument("--slow-env", default="", help="a second environment's python (benchmarks/slowenv/make_env.sh): "
                    "pools with it as the candidate, and as the reference")
    ap.add_argument("--window-seconds", type=float, default=None, help="size every launch's measured window to "
                    "about S seconds (--dlperf-window-seconds) instead of the CPU profile's steps")
    args = ap.parse_args()
    win = f", {args.window_seconds:g} s window" if args.window_seconds else ""
    if args.analyze_only:
        pools = json.loads(args.pools_file.read_text())
    else:
        pools = []
        with tempfile.TemporaryDirectory(prefix="ab-power-") as tmp:
            for d in args.slowdowns:
                pools.append(collect(d, args.pairs, Path(tmp), label=f"planted {d:.0%}{win}",
                                     window_seconds=args.window_seconds))
                print(f"collected d={d:g}: {len(pools[-1]['pairs'])} pairs in {pools[-1]['seconds']:.0f} s", flush=True)
                args.pools_file.write_text(json.dumps(pools, indent=1))
            if args.slow_env:
                for ref, cand, label in (("current", f"python={args.slow_env}", "slowed torch"),
                                         (f"python={args.slow_env}", "current", "slowed torch as ref")):
                    pools.append(collect(float("nan"), args.pairs, Path(tmp), cand, ref, label + win,
                                         window_seconds=args.window_seconds))
                    print(f"collected {label}: {len(pools[-1]['pairs'])} pairs in {pools[-1]['seconds']:.0f} s",
                          flush=True)
                    args.pools_file.write_text(json.dumps(pools, indent=1))
        print(f"pools: {args.pools_file} ({time.strftime('%Y-%m-%d %H:%M')})")
    analyze(pools, Method(alpha=args.alpha, tolerance=args.tolerance, min_pairs=3, max_pairs=args.max_pairs),
            args.trials, args.seed)
    if args.model:
        model(Method(alpha=args.alpha, tolerance=args.tolerance, min_pairs=3, max_pairs=args.max_pairs),
              min(args.trials, 300), args.seed, [0.02, 0.035, 0.06, 0.09, 0.12], [0.0, 0.02, 0.05, 0.1])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
