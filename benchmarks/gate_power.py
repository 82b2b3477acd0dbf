#!/usr/bin/env python3
"""Measure the baseline gate's false-alarm and detection rates with real training runs on this machine.

What it does
  1. Collects pools of real per-run throughputs of the suite's own workload (torch_ddp.py under
     torchrun, one worker pinned to one core with taskset, the CPU profile's resnet50 fp32 bs8
     64px with the profile's warm-up and time-based window), for four conditions: a baseline pool, an identical-code
     pool, and pools with a planted slow-down of 5% and 10%. Runs are taken in blocks of one run
     per condition, ordered by a Williams square (over 4 blocks every condition follows every other
     once), so that load from other users of the machine, and whatever a run leaves to the next,
     fall on every condition alike. (A plain rotation let "baseline" always follow the 10% run, and
     its pool came out about 2% faster than the identical one in each of three collections.)
  2. For each condition and repeat count N, builds trials: a "session" of N runs judged by
     gate.judge against a baseline of M runs (M: --baseline-runs, by default the launches
     --update-baselines records on CPU nodes, the CPU profile's record_repeats). Trials come from disjoint runs when the pools hold
     enough (trials x N each), otherwise each trial draws N runs without replacement from each pool
     (resampled: trials share runs, so they are not independent; the output says which).
  3. Prints, per condition and N, how often the gate said regression / noisy / pass with Wilson 95%
     intervals, and the slow-down actually achieved (ratio of pool medians, bootstrap 95% CI).

How the slow-down is planted
  The workload honours DLPERF_PLANT_SLOWDOWN=d: after each measured step's compute, inside the
  timed window, the rank sleeps d/(1-d) x that step's compute time, so its throughput becomes (1-d) x what it
  would have been. Nothing else in the run changes.

Usage: python3 benchmarks/gate_power.py --pool 24 --pools-file /tmp/gate_pools.json
(4 x pool runs of about 11 s each; --pool 24 takes about 15-18 minutes). --analyze-only re-reads a
saved pools file and prints the figures again (e.g. with other --repeats, --baseline-runs or
--tolerance); with --baseline-sittings POOLS... it judges the sessions of --pools-file against a
baseline recorded over those files' sittings (--baseline-runs of each), as --update-baselines
--dlperf-record-sittings keeps one. --synthetic-cv C runs nothing: it judges pools drawn from a log-normal model with
run-to-run CV C (independent runs; with --synthetic-drift D a host factor that drifts from block to
block as well), to show what the same gate gives on a machine of that noise; its output says it is
a model, not a measurement. The schedule lines compare sessions and baselines taken back to back
with ones spread in time (--dlperf-order case / rounds) on the same pools, in time order.

The pace probe: as the suite does by default on CPU nodes, every run has the copy probe beside it on
its core (the kernel of pytest_dlperf/node/paceprobe.py, started here from sibling_probe.py) and
the "as the gate judges by default" lines judge throughputs at the baseline's pace where the
session's host ran slower, else as measured; a drop still a regression there on a host that ran slower
beyond the probe's own spread is the screen's REGRESSION whose pace says so (rules.host_slower,
``pace["host_slower"]``), shown apart as 'host': the attribution calls it HOST where nothing recorded
differs (identical code), which fails CI (--dlperf-hardware fail, the default under CI), and confirms
it side by side where the software differs (a planted slow-down's DLPERF_PLANT_SLOWDOWN), which this
benchmark does not run: either way it counts as failing CI. Until issue #63 the screen called it
HARDWARE and stopped. The lines above them judge the same runs as measured, and adjusted both ways.
--no-pace-probe collects runs without it.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from filelock import FileLock
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from pytest_dlperf import metrics  # noqa: E402
from pytest_dlperf.baselines.rules import pace_adjust, pace_slope  # noqa: E402
from pytest_dlperf.files import atomic_write_text  # noqa: E402
from pytest_dlperf.launchers.base import CPU_MALLOC_ENV  # noqa: E402
from pytest_dlperf.measure.runner import parse_steps  # noqa: E402
from pytest_dlperf.specs import CPU_PROFILE  # noqa: E402

WORKLOAD = ROOT / "pytest_dlperf" / "node" / "workloads" / "torch_ddp.py"
# The lock LocalCluster.lease() holds around each dlperf run on this machine: taking it per run
# means this script takes turns with pytest-dlperf sessions instead of competing with them.
LEASE = Path(tempfile.gettempdir()) / "pytest-dlperf-local.lock"
CONDITIONS = {"baseline": 0.0, "identical": 0.0, "slow5": 0.05, "slow10": 0.10}
# The order of the conditions in each block, a Williams square for 4: in its rows every condition
# comes directly after every other exactly once, so a carry-over from one run to the next is balanced.
WILLIAMS = ((0, 1, 3, 2), (1, 2, 0, 3), (2, 3, 1, 0), (3, 0, 2, 1))


@dataclass(frozen=True)
class Workload:
    """The one case every run measures (the CPU profile's 1n1g resnet50 case by default)."""

    model: str = "resnet50"
    precision: str = "fp32"
    batch_size: int = 8
    image_size: int = 64
    warmup_iters: int = CPU_PROFILE.warmup_iters
    max_warmup_iters: int = CPU_PROFILE.max_warmup_iters
    iters: int = CPU_PROFILE.iters
    window_seconds: float = CPU_PROFILE.window_seconds
    max_iters: int = CPU_PROFILE.max_iters
    core: int = 0


def run_once(w: Workload, slowdown: float, timeout: float = 300.0,
             pace_probe: bool = False) -> tuple[float, list[float], float | None]:
    """One real training run: the suite's throughput metric (samples / wall s of the window), its step
    times, and with ``pace_probe`` the mean rate (GB/s) of sibling_probe.py's same-core copy probe over
    the window (the host's memory-system pace beside the run, taken on the run's own core)."""
    with tempfile.TemporaryDirectory(prefix="gate-power-") as tmp:
        out = Path(tmp) / "steps.jsonl"
        argv = ["taskset", "-c", str(w.core), sys.executable, "-m", "torch.distributed.run",
                "--standalone", "--nproc_per_node", "1",
                "--log-dir", str(Path(tmp) / "torchelastic"), str(WORKLOAD),
                "--model", w.model, "--precision", w.precision, "--batch-size", str(w.batch_size),
                "--image-size", str(w.image_size), "--warmup-iters", str(w.warmup_iters),
                "--max-warmup-iters", str(w.max_warmup_iters), "--iters", str(w.iters),
                "--window-seconds", repr(w.window_seconds), "--max-iters", str(w.max_iters),
                "--threads", "1", "--output", str(out)]
        env = {**os.environ, "OMP_NUM_THREADS": "1", **CPU_MALLOC_ENV, "DLPERF_PLANT_SLOWDOWN": repr(slowdown)}
        probe_log = Path(tmp) / "pace.log"
        with FileLock(str(LEASE)):
            probe = None
            if pace_probe:
                from sibling_probe import PROBE_CODE  # noqa: PLC0415  (one probe for both benchmarks)

                probe = subprocess.Popen([sys.executable, "-c", PROBE_CODE, "same-copy", str(probe_log),
                                          str(w.core), str(PACE_PERIOD)])
                time.sleep(0.5)
            try:
                proc = subprocess.run(argv, env=env, cwd=tmp, capture_output=True, text=True, timeout=timeout)
            finally:
                if probe is not None:
                    probe.kill()
                    probe.wait()
        if proc.returncode != 0:
            raise RuntimeError(f"run failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
        meta, steps = parse_steps(out)  # the lengths the workload ran: it sizes the window
        lengths = (meta["warmup_iters"], meta["iters"])
        pace = None
        if pace_probe:
            from sibling_probe import probe_rate  # noqa: PLC0415

            pace = probe_rate(probe_log, meta["window"]["start"], meta["window"]["end"])
            if not np.isfinite(pace):
                raise RuntimeError(f"the pace probe logged no wake-up inside the window ({probe_log})")
        return metrics.throughput(steps, *lengths), metrics.step_times(steps, *lengths), pace


def collect(w: Workload, pool: int, path: Path, pace_probe: bool = False) -> dict:
    """Fill every condition's pool to ``pool`` runs in blocks ordered by ``WILLIAMS``; saves after every run (resumable)."""
    doc = json.loads(path.read_text()) if path.exists() else {}
    if doc and doc["workload"] != w.__dict__:
        raise SystemExit(f"{path} holds runs of another workload {doc['workload']}; use another --pools-file")
    probe_txt = PACE_TXT if pace_probe else None
    if doc and doc.get("pace_probe") != probe_txt:
        raise SystemExit(f"{path} holds runs taken {'without' if pace_probe else 'with'} the pace probe; "
                         "use another --pools-file")
    doc.setdefault("workload", w.__dict__)
    doc.setdefault("pace_probe", probe_txt)
    doc.setdefault("plant", "DLPERF_PLANT_SLOWDOWN=d: sleep d/(1-d) x step compute inside the timed region")
    runs = doc.setdefault("runs", {c: [] for c in CONDITIONS})
    names = list(CONDITIONS)
    block = min(len(runs[c]) for c in names)
    t_start = time.monotonic()
    while block < pool:
        order = [names[i] for i in WILLIAMS[block % len(WILLIAMS)]]
        for cond in order:
            if len(runs[cond]) > block:
                continue
            tput, steps, pace = run_once(w, CONDITIONS[cond], pace_probe=pace_probe)
            runs[cond].append({"throughput": tput, "block": block, "time": time.time(), "step_times": steps,
                               **({"pace": pace} if pace is not None else {})})
            atomic_write_text(path, json.dumps(doc, indent=1) + "\n")
        block += 1
        done = sum(len(v) for v in runs.values())
        el = time.monotonic() - t_start
        print(f"  block {block}/{pool}: {done} runs, {el:.0f}s elapsed; last "
              + ", ".join(f"{c}={runs[c][-1]['throughput']:.2f}" + (f" (pace {runs[c][-1]['pace']:.1f})"
                                                                   if pace_probe else "") for c in names), flush=True)
    return doc


# The pace probe (--pace-probe): sibling_probe.py's "same-copy" kernel on the run's own core, an 8 MiB
# copy timed in the probe's CPU time every PACE_PERIOD s. On 2026-11-25 it tracked the launches'
# throughput with correlations of +0.92 to +0.95 (benchmarks/sibling_probe.py, README "Gate power").
PACE_PERIOD = 0.1
PACE_TXT = f"same-core 8 MiB copy every {PACE_PERIOD} s, rate in the probe's CPU time, mean over the window"


def adjusted_pair(session: list[tuple[float, float]], base: list[tuple[float, float]]) -> Pair:
    """Both sides' throughputs at the baseline runs' median pace, whichever host was faster
    (pytest_dlperf.baselines.rules.pace_adjust: t x (pace_ref / pace)^slope, the slope pooled within sides)."""
    m, b, _ = pace_adjust([t for t, _ in session], [p for _, p in session], [t for t, _ in base], [p for _, p in base])
    return m, b


def screen_word(v) -> str:
    """The screen's verdict as counted here: "host" for a REGRESSION whose pace says this session's host ran
    slower than the recording's beyond the probe's own spread (``pace["host_slower"]``): the attribution
    calls it HOST on unchanged software (failing CI) and confirms it side by side on changed software; else
    the verdict's status ("regression", "noisy", "pass", ...)."""
    status = str(getattr(v.status, "value", v.status))
    return "host" if status == "regression" and (v.pace or {}).get("host_slower") else status


def gate_rates(pairs: list[tuple[list[tuple[float, float]], list[tuple[float, float]]]], w: Workload, tol: float,
               cv_bound: float, alpha: float) -> tuple[int, int, int, int]:
    """(regressions, noisy, host, trials) as the gate's screen judges (throughput, pace) runs: rules.judge with
    both sides' paces, so at the baseline's pace where the session's host ran slower, else as measured;
    "host": a regression there on a host that ran slower beyond the probe's own spread (``screen_word``),
    counted apart from the other regressions. Every one of the three fails CI."""
    from pytest_dlperf.baselines.rules import judge

    verdicts = []
    for session, base in pairs:
        entry = entry_for([t for t, _ in base], w)
        entry.paces = [p for _, p in base]
        verdicts.append(screen_word(judge([t for t, _ in session], entry, tol, cv_bound=cv_bound, alpha=alpha,
                                          measured_paces=[p for _, p in session])))
    return verdicts.count("regression"), verdicts.count("noisy"), verdicts.count("host"), len(verdicts)


def gate_cell(condition: str, reg: int, noisy: int, host: int, total: int) -> str:
    """Failing CI (a 'host' regression fails there too: HOST under CI, or confirmed side by side) and, for
    identical code, how much of it was called what."""
    fails = (reg + noisy + host) / total
    if condition == "identical":
        return f"{fails:.0%} ({reg / total:.0%} reg, {host / total:.0%} host)"
    return f"{fails:.0%} ({host / total:.0%} host)" if host else f"{fails:.0%}"


def pace_lines(doc: dict, sweep: list[int], tol: float, cv_bound: float, alpha: float, seed: int,
               baseline_runs: int | None, repeats: list[int] = (3, 5)) -> None:
    """With a pace probe beside every run: the sweep's rates judged on raw and on pace-adjusted throughputs."""
    w = Workload(**doc["workload"])
    runs = {c: [(r["throughput"], r["pace"]) for r in doc["runs"][c]] for c in CONDITIONS}
    base_pace = float(np.median([p for _, p in runs["baseline"]]))
    print(f"\npace probe ({doc['pace_probe']}); within each pool, log throughput against log pace:")
    for c in CONDITIONS:
        lt, lp = np.log([t for t, _ in runs[c]]), np.log([p for _, p in runs[c]])
        b = pace_slope([runs[c]])
        print(f"  {c:9s} median pace {np.exp(np.median(lp)):6.2f} GB/s ({np.exp(np.median(lp)) / base_pace:.3f} of the "
              f"baseline pool's), pace CV {np.exp(lp).std(ddof=1) / np.exp(lp).mean():5.1%}; correlation "
              f"{np.corrcoef(lt, lp)[0, 1]:+.2f}, slope {b:.2f}: spread {lt.std(ddof=1):.1%} -> "
              f"{(lt - b * lp).std(ddof=1):.1%} adjusted")
    print("  sweep, 500 resampled trials each: identical code failing CI (of which regression) / 5% caught / "
          "10% caught: as measured; adjusted to the baseline's pace (slope fitted per trial); as the gate judges "
          "(adjusted only where the session's host ran slower; 'host': a regression there on a host that ran "
          "slower beyond the probe's spread, HOST by the attribution on unchanged software)")
    gate_counts: dict[tuple[str, int], tuple[int, int, int, int]] = {}  # the target lines below reuse the sweep's
    for n in sweep:
        m = baseline_runs or n
        if n + m > len(runs["baseline"]):
            continue
        cells = {"raw": [], "adjusted": [], "gate": []}
        for c in ("identical", "slow5", "slow10"):
            rng = random.Random(f"pace-{seed}-{c}-{n}")
            pairs = resampled_sessions(runs["baseline"], runs[c], n, 500, rng, m=m)
            for mode, judged in (("raw", [([t for t, _ in s], [t for t, _ in b]) for s, b in pairs]),
                                 ("adjusted", [adjusted_pair(s, b) for s, b in pairs])):
                cells[mode].append(sweep_cell(c, judged, w, tol, cv_bound, alpha))
            gate_counts[c, n] = gate_rates(pairs, w, tol, cv_bound, alpha)
            cells["gate"].append(gate_cell(c, *gate_counts[c, n]))
        print(f"  N={n:2d}  measured: {' / '.join(cells['raw']):24s} adjusted: {' / '.join(cells['adjusted']):24s} "
              f"as the gate: {' / '.join(cells['gate'])}")
    rows = []
    for n in repeats:
        m = baseline_runs or n
        if n + m > len(runs["baseline"]):
            continue
        for c in ("identical", "slow10"):
            if (c, n) not in gate_counts:  # the same trials as the sweep's (same seed) where it has this N
                pairs = resampled_sessions(runs["baseline"], runs[c], n, 500, random.Random(f"pace-{seed}-{c}-{n}"), m=m)
                gate_counts[c, n] = gate_rates(pairs, w, tol, cv_bound, alpha)
            reg, noisy, host, total = gate_counts[c, n]
            rows.append({"repeats": n, "mode": "as gate", "condition": c, "regression": reg, "noisy": noisy,
                         "host": host, "trials": total})
    print("\nas the gate judges by default (every run probed; at the baseline's pace where the session's host ran "
          "slower, else as measured; a regression on a host that ran slower beyond the probe's spread is HOST by the "
          "attribution on unchanged software, which fails CI too), "
          "500 resampled trials (they share runs: their intervals are narrower than independent sessions' would be)")
    verdict_lines(rows)


def sittings_lines(doc: dict, sittings: dict[str, dict], repeats: list[int], per: int, tol: float, cv_bound: float,
                   alpha: float, seed: int, trials: int = 500) -> None:
    """The sessions of one sitting (``doc``) judged as the gate against a baseline recorded over other
    sittings, as --update-baselines --dlperf-record-sittings keeps it: each trial's entry holds ``per``
    runs drawn from each sitting's baseline pool, in that order, with their paces and sitting counts."""
    from pytest_dlperf.baselines.rules import judge

    w = Workload(**doc["workload"])
    pools = {name: [(r["throughput"], r["pace"]) for r in d["runs"]["baseline"]] for name, d in sittings.items()}
    print(f"\nagainst a baseline of {len(pools)} sittings ({', '.join(pools)}), {per} runs of each, "
          f"{trials} resampled trials (as the gate judges: at the baseline's pace where the session's host ran "
          "slower, the slope fitted within each sitting; 'host': a regression on a host the pace probe found slower, "
          "HOST on unchanged software): identical code failing CI / 5% caught / "
          "10% caught")
    rows = []
    for n in repeats:
        cells = []
        for c in ("identical", "slow5", "slow10"):
            rng = random.Random(f"sittings-{seed}-{c}-{n}")
            runs = [(r["throughput"], r["pace"]) for r in doc["runs"][c]]
            counts = {"regression": 0, "noisy": 0, "host": 0}
            for _ in range(trials):
                base = [rng.sample(pool, per) for pool in pools.values()]
                session = rng.sample(runs, n)
                entry = entry_for([t for side in base for t, _ in side], w)
                entry.paces = [p for side in base for _, p in side]
                entry.sittings = [{"recorded_at": name, "runs": per} for name in pools]
                word = screen_word(judge([t for t, _ in session], entry, tol, cv_bound=cv_bound, alpha=alpha,
                                         measured_paces=[p for _, p in session]))
                counts[word] = counts.get(word, 0) + 1
            cells.append(gate_cell(c, counts["regression"], counts["noisy"], counts["host"], trials))
            if c != "slow5":
                rows.append({"repeats": n, "mode": "sittings", "condition": c, "trials": trials, **counts})
        print(f"  N={n:2d}  {' / '.join(cells)}")
    verdict_lines(rows)


def synthetic(w: Workload, cv: float, pool: int, seed: int, drift: float = 0.0) -> dict:
    """Pools drawn from a model instead of runs: throughput 14 x (1 - slow-down) x lognormal(0, cv),
    every run independent; with ``drift`` D, times a host factor exp(h) per block shared by the
    block's four runs, h an AR(1) series with standard deviation D and lag-1 correlation 0.8 (the
    slow spells of minutes seen on the VM)."""
    rng = np.random.default_rng(seed)
    host, h = [], rng.normal(0.0, drift)
    for _ in range(pool):
        host.append(h)
        h = 0.8 * h + rng.normal(0.0, drift * 0.6)  # sqrt(1 - 0.8^2) = 0.6 keeps the sd at D
    runs = {c: [{"throughput": float(14.0 * (1 - d) * np.exp(host[i] + rng.normal(0.0, cv))), "block": i}
                for i in range(pool)] for c, d in CONDITIONS.items()}
    what = f"log-normal runs with CV {cv:.1%}" + (f" and a drifting host (sd {drift:.1%}, lag-1 0.8)" if drift else "")
    return {"workload": w.__dict__, "runs": runs,
            "plant": f"MODEL, not a measurement: {what}, the slow-down multiplied in"}


def wilson(k: int, n: int) -> tuple[float, float]:
    """Wilson score 95% interval for k successes in n trials (scipy's binomtest)."""
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return ci.low, ci.high


def ratio_ci(slow: list[float], base: list[float], seed: int = 0, n_boot: int = 4000) -> tuple[float, float, float]:
    """Achieved throughput ratio (median slow / median base) with a bootstrap 95% interval."""
    rng = np.random.default_rng(seed)
    s, b = np.asarray(slow), np.asarray(base)
    boots = [np.median(rng.choice(s, s.size)) / np.median(rng.choice(b, b.size)) for _ in range(n_boot)]
    return float(np.median(s) / np.median(b)), float(np.percentile(boots, 2.5)), float(np.percentile(boots, 97.5))


Pair = tuple[list[float], list[float]]


def chunked_sessions(base: list[float], cond: list[float], n: int, apart: bool, m: int | None = None) -> list[Pair]:
    """Independent trials: chunk i of the condition (n consecutive runs, one session) against a
    baseline chunk of m runs (m = n by default). ``apart``: the chunk half the collection later, so
    drift between sessions counts too; else the baseline runs of the same blocks (launched in
    between, as an A/B session would take them), so drift over minutes falls on both sides alike."""
    m = m or n
    k = min(len(base) // m, len(cond) // n)
    if k < 2 or (not apart and m != n):
        return []
    shift = k // 2 if apart else 0
    return [(cond[i * n:(i + 1) * n], base[((i + shift) % k) * m:((i + shift) % k + 1) * m]) for i in range(k)]


def resampled_sessions(base: list[float], cond: list[float], n: int, count: int, rng: random.Random,
                       m: int | None = None) -> list[Pair]:
    """Trials drawing n runs (m for the baseline, n by default) without replacement from each pool:
    more trials, but they share runs."""
    return [(rng.sample(cond, n), rng.sample(base, m or n)) for _ in range(count)]


def entry_for(samples: list[float], w: Workload):
    """A baseline entry built from N baseline runs, as --update-baselines would record it."""
    from pytest_dlperf.baselines.store import Entry

    return Entry.from_samples(model=w.model, precision=w.precision, batch_size=w.batch_size,
                              image_size=w.image_size, backend="ddp", topology="1n1g",
                              throughputs=samples, tolerance=None, versions={}, source="recorded")


def rates(pairs: list[Pair], w: Workload, tol: float, cv_bound: float, alpha: float) -> tuple[int, int, int]:
    """(regressions, noisy, trials) when gate.judge judges every pair."""
    from pytest_dlperf.baselines.rules import judge

    verdicts = [judge(m, entry_for(b, w), tol, cv_bound=cv_bound, alpha=alpha).status for m, b in pairs]
    return verdicts.count("regression"), verdicts.count("noisy"), len(verdicts)


def sweep_cell(condition: str, pairs: list[Pair], w: Workload, tol: float, cv_bound: float, alpha: float) -> str:
    """One sweep cell: for identical code the share failing CI (of which regression), else the share caught."""
    reg, noisy, total = rates(pairs, w, tol, cv_bound, alpha)
    return f"{(reg + noisy) / total:.0%} ({reg / total:.0%})" if condition == "identical" else f"{reg / total:.0%}"


def cell(k: int, n: int) -> str:
    lo, hi = wilson(k, n)
    return f"{k:2d}/{n:<3d} {k / n:4.0%} [{lo:3.0%},{hi:4.0%}]"


def analyze(doc: dict, repeats: list[int], count: int, tol: float, cv_bound: float, alpha: float,
            seed: int, sweep: list[int], baseline_runs: int | None = None) -> list[dict]:
    """Judge every trial; print the pools, one line per condition and N, and a repeats x tolerance sweep."""
    w = Workload(**doc["workload"])
    runs = {c: [r["throughput"] for r in doc["runs"][c]] for c in CONDITIONS}
    base = runs["baseline"]
    print("\npools (runs per condition; throughput in samples/s):")
    for c, xs in runs.items():
        cv = float(np.std(xs, ddof=1) / np.mean(xs)) if len(xs) > 1 else float("nan")
        line = f"  {c:9s} runs={len(xs):3d} median={np.median(xs):7.3f} run-to-run CV={cv:5.1%}"
        if c != "baseline":
            r, lo, hi = ratio_ci(xs, base, seed)
            line += f"  ratio to baseline {r:.3f} (bootstrap 95% CI {lo:.3f}-{hi:.3f})"
        print(line)
    robust = [w.batch_size / float(np.median(r["step_times"])) for r in doc["runs"]["baseline"] if r.get("step_times")]
    if len(robust) > 1:
        print(f"  (baseline runs' throughput from their median step time instead: run-to-run CV "
              f"{np.std(robust, ddof=1) / np.mean(robust):.1%}; the suite's metric is samples / wall time)")
    print(f"\ngate.judge: tolerance {tol:.0%}, CV bound {cv_bound:.0%}, alpha {alpha}; "
          "counts with Wilson 95% intervals")
    m_txt = f"{baseline_runs} runs" if baseline_runs else "N runs"
    print(f"  each session of N runs is judged against a baseline of {m_txt} (--baseline-runs)")
    print("  disjoint = independent sessions of N consecutive runs, each against a baseline taken")
    print("             half the collection apart; interleav = the same sessions against the baseline runs of")
    print("             their own blocks (an A/B session); resampled = N runs drawn from each pool per trial")
    print("             (trials share runs, so their intervals are too narrow)")
    print(f"  {'condition':9s} {'N':>2s} {'mode':9s} {'regression':>24s} {'noisy':>24s} {'fails CI (reg+noisy)':>24s}")
    rows = []
    for n in repeats:
        for c in ("identical", "slow5", "slow10"):
            rng = random.Random(f"{seed}-{c}-{n}")
            m = baseline_runs
            for mode, pairs in (("disjoint", chunked_sessions(base, runs[c], n, apart=True, m=m)),
                                ("interleav", chunked_sessions(base, runs[c], n, apart=False, m=m)),
                                ("resampled", resampled_sessions(base, runs[c], n, count, rng, m=m))):
                if not pairs:
                    continue
                k_reg, k_noisy, t = rates(pairs, w, tol, cv_bound, alpha)
                print(f"  {c:9s} {n:2d} {mode:9s} {cell(k_reg, t):>24s} {cell(k_noisy, t):>24s} "
                      f"{cell(k_reg + k_noisy, t):>24s}")
                rows.append({"condition": c, "repeats": n, "mode": mode, "trials": t, "regression": k_reg,
                             "noisy": k_noisy})
    if sweep:
        combos = [(tol, cv_bound)] + [c for c in ((0.03, cv_bound), (tol, 0.15), (tol, 0.20)) if c != (tol, cv_bound)]
        print("\nsweep (500 resampled trials each, rates only): identical code failing CI (of which regression)"
              " / 5% caught / 10% caught")
        print("  " + f"{'N':>3s} " + " ".join(f"{f'tol {t:.0%}, CV bound {c:.0%}':>26s}" for t, c in combos))
        for n in sweep:
            if n + (baseline_runs or n) > len(base):
                continue
            cells = []
            for t, cb in combos:
                out = []
                for c in ("identical", "slow5", "slow10"):
                    rng = random.Random(f"sweep-{seed}-{c}-{n}")
                    out.append(sweep_cell(c, resampled_sessions(base, runs[c], n, 500, rng, m=baseline_runs),
                                          w, t, cb, alpha))
                cells.append(" / ".join(out))
            print(f"  {n:3d} " + " ".join(f"{x:>26s}" for x in cells))
    return rows


def schedule_pairs(base: list[float], cond: list[float], n: int, m: int) -> dict[str, list[Pair]]:
    """The baseline from one half of the collection and the session from the other (both ways): within
    its half each side's runs are back to back (every window of m, of n), or spread evenly (stride
    half // m, half // n), as ``--dlperf-order rounds`` spreads a case's launches over its session."""
    half = min(len(base), len(cond)) // 2
    out: dict[str, list[Pair]] = {"back-to-back": [], "spread": []}
    for bh, sh in ((0, half), (half, 0)):
        for b0 in range(half - m + 1):
            for s0 in range(half - n + 1):
                out["back-to-back"].append((cond[sh + s0:sh + s0 + n], base[bh + b0:bh + b0 + m]))
        for o in range(half // n):
            for ob in range(half // m):
                out["spread"].append(([cond[sh + o + k * (half // n)] for k in range(n)],
                                      [base[bh + ob + k * (half // m)] for k in range(m)]))
    return out


def schedule_lines(doc: dict, n: int, m: int, tol: float, cv_bound: float, alpha: float) -> dict[str, dict]:
    """Print and return, per condition, how often the gate fails sessions taken back to back or spread."""
    w = Workload(**doc["workload"])
    ordered = {c: [r["throughput"] for r in sorted(doc["runs"][c], key=lambda r: (r.get("time", 0.0), r["block"]))]
               for c in CONDITIONS}
    half = len(ordered["baseline"]) // 2
    m = min(m, half // 2)  # spread needs a stride of 2 blocks at least
    if half < 2 * n or m < 2:
        print(f"\nschedule: too few runs for it (need {4 * n} a condition)")
        return {}
    print(f"\nschedule: a session of {n} runs against a baseline of {m}, from opposite halves of the "
          "collection; within its half")
    print("  each side back to back, or spread evenly over the half (--dlperf-order case / rounds). "
          "Trials share runs: compare the two rows, not their intervals.")
    out: dict[str, dict] = {}
    for c in ("identical", "slow5", "slow10"):
        for mode, pairs in schedule_pairs(ordered["baseline"], ordered[c], n, m).items():
            if len(pairs) > 600:  # a long collection: a fixed sample of its windows
                pairs = random.Random(f"schedule-{c}-{mode}").sample(pairs, 600)
            k_reg, k_noisy, t = rates(pairs, w, tol, cv_bound, alpha)
            print(f"  {c:9s} {mode:12s} fails CI {k_reg + k_noisy:4d}/{t:<4d} {(k_reg + k_noisy) / t:5.1%}")
            out.setdefault(c, {})[mode] = (k_reg + k_noisy) / t
    return out


def verdict_lines(rows: list[dict]) -> None:
    """Targets: <= 1 false alarm in 20 identical runs; a 10% slow-down caught >= 19 in 20."""
    print("\ntargets: <= 1 false alarm in 20 identical sessions (regression, noisy or host: each fails CI); "
          "a 10% slow-down caught >= 19 in 20")
    print("  (met: the Wilson 95% interval lies within the target; not shown: the rate does, its interval not)")
    for r in rows:
        head = f"  N={r['repeats']} {r['mode']:9s}:"
        if r["condition"] == "identical":
            k = r["regression"] + r["noisy"] + r.get("host", 0)
            lo, hi = wilson(k, r["trials"])
            rate = k / r["trials"]
            word = "met" if hi <= 0.05 else ("not shown" if rate <= 0.05 else "NOT met")
            print(f"{head} false alarms {rate:4.0%} ({k}/{r['trials']}) -> {word}")
        elif r["condition"] == "slow10":
            k = r["regression"] + r["noisy"] + r.get("host", 0)  # failing CI as noisy or host is caught too
            lo, hi = wilson(k, r["trials"])
            rate = k / r["trials"]
            word = "met" if lo >= 0.95 else ("not shown" if rate >= 0.95 else "NOT met")
            print(f"{head} 10% failing CI {rate:4.0%} ({k}/{r['trials']}) -> {word}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pool", type=int, default=24, help="runs per condition (4 conditions, ~11 s per run)")
    p.add_argument("--trials", type=int, default=20, help="trials per condition and repeat count")
    p.add_argument("--repeats", type=int, nargs="+", default=[3, 5], help="runs per session and per baseline")
    p.add_argument("--baseline-runs", type=int, default=CPU_PROFILE.record_repeats,
                   help="runs in each trial's baseline (default: the launches --update-baselines records, "
                        "the CPU profile's record_repeats; 0: as many as the session's N)")
    p.add_argument("--synthetic-cv", type=float, default=None,
                   help="run nothing: judge pools of --pool runs drawn from a log-normal model with this CV")
    p.add_argument("--synthetic-drift", type=float, default=0.0,
                   help="with --synthetic-cv: a host factor drifting from block to block with this standard deviation")
    p.add_argument("--tolerance", type=float, default=None, help="default: the CPU profile's default")
    p.add_argument("--cv-bound", type=float, default=None, help="default: the gate's default")
    p.add_argument("--alpha", type=float, default=None, help="default: the gate's default")
    p.add_argument("--pools-file", type=Path, default=Path(tempfile.gettempdir()) / "gate_power_pools.json",
                   help="where runs are saved (collection resumes from it)")
    p.add_argument("--analyze-only", action="store_true", help="judge the saved pools; run nothing")
    p.add_argument("--baseline-from", type=Path, default=None,
                   help="with --analyze-only: take the baseline pool from this pools file (another sitting of the "
                        "same workload), so sessions are judged against a baseline recorded at another time")
    p.add_argument("--baseline-sittings", type=Path, nargs="+", default=None, metavar="POOLS",
                   help="with --analyze-only: judge --pools-file's sessions against a baseline recorded over these "
                        "pools files' sittings (--baseline-runs runs of each, as --dlperf-record-sittings keeps them)")
    p.add_argument("--core", type=int, default=0)
    p.add_argument("--iters", type=int, default=Workload.iters,
                   help="measured steps per run, the least (the CPU profile's default)")
    p.add_argument("--window-seconds", type=float, default=Workload.window_seconds,
                   help="time-based window (the CPU profile's default; 0: exactly --iters)")
    p.add_argument("--warmup-iters", type=int, default=Workload.warmup_iters)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--pace-probe", action=argparse.BooleanOptionalAction, default=True,
                   help="run a same-core copy probe beside every run and also judge throughputs adjusted to the "
                        "baseline's pace, as the suite does by default (a model of the host's memory-system "
                        "speed; README, Gate power); --no-pace-probe: runs alone, judged as measured")
    p.add_argument("--sweep", type=int, nargs="*", default=[3, 5, 8, 10],
                   help="repeat counts for the repeats x tolerance sweep (empty: none)")
    p.add_argument("--window-steps", type=int, nargs="*", default=[],
                   help="also judge each run on its first K measured steps only, for each K (a shorter window "
                        "taken from the same runs: collect with --window-seconds 0 --iters as long as the longest)")
    a = p.parse_args(argv)
    if (a.baseline_from is not None or a.baseline_sittings) and not a.analyze_only:
        p.error("--baseline-from and --baseline-sittings need --analyze-only (they judge saved pools of other sittings)")
    w = Workload(core=a.core, iters=a.iters, warmup_iters=a.warmup_iters, window_seconds=a.window_seconds)
    if a.synthetic_cv is not None:
        doc = synthetic(w, a.synthetic_cv, a.pool, a.seed, a.synthetic_drift)
        print(f"MODEL, not a measurement: pools of {a.pool} log-normal runs with run-to-run CV "
              f"{a.synthetic_cv:.1%} per condition"
              + (f", host drifting with sd {a.synthetic_drift:.1%}" if a.synthetic_drift else ""), flush=True)
    elif not a.analyze_only:
        print(f"collecting {a.pool} runs per condition ({4 * a.pool} runs) into {a.pools_file}; "
              f"workload {w}", flush=True)
        doc = collect(w, a.pool, a.pools_file, pace_probe=a.pace_probe)
    else:
        doc = json.loads(a.pools_file.read_text())
    if a.baseline_from is not None:
        other = json.loads(a.baseline_from.read_text())
        if other["workload"] != doc["workload"] or other.get("pace_probe") != doc.get("pace_probe"):
            p.error(f"--baseline-from {a.baseline_from}: another workload or probe setting than {a.pools_file}")
        doc["runs"]["baseline"] = other["runs"]["baseline"]
        print(f"baseline pool from {a.baseline_from}, the other pools from {a.pools_file}: sessions judged against "
              "a baseline of another sitting (the interleav and schedule lines mean nothing here)")
    import pytest_dlperf.baselines.rules as gate
    from pytest_dlperf.baselines.profile import default_tolerances

    tol = a.tolerance if a.tolerance is not None else default_tolerances("cpu").get("throughput")
    cv_bound = a.cv_bound if a.cv_bound is not None else gate.DEFAULT_CV_BOUND
    alpha = a.alpha if a.alpha is not None else gate.DEFAULT_ALPHA
    if a.baseline_sittings:
        others = {str(f): json.loads(f.read_text()) for f in a.baseline_sittings}
        for f, other in others.items():
            if other["workload"] != doc["workload"] or not other.get("pace_probe") or not doc.get("pace_probe"):
                p.error(f"--baseline-sittings {f}: another workload than {a.pools_file}, or collected without the "
                        "pace probe (the gate fits the pace within each sitting)")
        sittings_lines(doc, others, a.repeats, a.baseline_runs, tol, cv_bound, alpha, a.seed)
        return 0
    print(f"\nslow-down planted with {doc['plant']}")
    rows = analyze(doc, a.repeats, a.trials, tol, cv_bound, alpha, a.seed, a.sweep, a.baseline_runs)
    verdict_lines(rows)
    schedule_lines(doc, a.repeats[0], a.baseline_runs or a.repeats[0], tol, cv_bound, alpha)
    if doc.get("pace_probe") and all("pace" in r for rs in doc["runs"].values() for r in rs):
        pace_lines(doc, a.sweep, tol, cv_bound, alpha, a.seed, a.baseline_runs, a.repeats)
    for k in a.window_steps:
        short = truncated(doc, k)
        print(f"\n=== each run judged on its first {k} measured steps (mean window "
              f"{short['mean_window_s']:.1f} s of the baseline runs) ===")
        verdict_lines(analyze(short, a.repeats, a.trials, tol, cv_bound, alpha, a.seed, a.sweep, a.baseline_runs))
    return 0


def truncated(doc: dict, k: int) -> dict:
    """The pools with each run's throughput taken over its first ``k`` measured steps (samples over the
    sum of those steps' times): a shorter window from the same launches, so windows compare without
    the machine's state between collections in the way."""
    bs = doc["workload"]["batch_size"]
    runs, windows = {}, []
    for cond, rs in doc["runs"].items():
        out = []
        for r in rs:
            steps = r["step_times"]
            if len(steps) < k:
                raise SystemExit(f"--window-steps {k}: a run has only {len(steps)} measured steps")
            out.append({**r, "throughput": bs * k / sum(steps[:k]), "step_times": steps[:k]})
            if cond == "baseline":
                windows.append(sum(steps[:k]))
        runs[cond] = out
    return {**doc, "runs": runs, "mean_window_s": float(np.mean(windows))}


if __name__ == "__main__":
    sys.exit(main())
