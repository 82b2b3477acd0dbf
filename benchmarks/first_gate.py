#!/usr/bin/env python3
"""A newcomer's record-then-gate path, repeated (issue #48 item 0, #55): how many case verdicts of unchanged
software are REGRESSION right after recording and an hour later (and how many name the host: HOST), whether
a planted slow-down is still caught, and what confirming a screen failure side by side costs.

Phases (one work directory holds them all; run them in order):
  record  ``pytest suites/ --update-baselines`` into WORK/store
  now     N gates right after (WORK/now-K), then one with DLPERF_PLANT_SLOWDOWN (WORK/planted)
  later   N gates once --after-minutes have passed since the recording ended (WORK/later-K), then one
          with DLPERF_PLANT_SLOWDOWN (WORK/planted-later)
  check   the host alone (benchmarks/host_check.py), between sessions (WORK/check-HHMM)
  show    the table of every session so far (each phase prints it too)

Every gate is the README's plain ``pytest suites/`` against the stored baselines, with the default
confirmation; what the screen said of each case is read back from its verdict's confirmation, so one
session gives both figures: what the screen failed, and what failed. Nothing is modelled. Each line also
says how many cases the gate before issue #63 would have stopped as HARDWARE on the same machine (its probe
moved: ``moved``), and how many of those the attribution now confirms side by side. To try a host whose
speed moves, run every phase under ``../shared/tools/drifting-host --``. (The planted
sessions plant a variable, DLPERF_PLANT_SLOWDOWN, which the recording did not have: a software difference,
confirmed side by side with the variable unset. benchmarks/side_by_side.py plants commits and environments.)

    python3 benchmarks/first_gate.py record --work /tmp/fg [-- EXTRA PYTEST ARGS]
    python3 benchmarks/first_gate.py now --work /tmp/fg --gates 3 --plant 0.10
    python3 benchmarks/first_gate.py later --work /tmp/fg --gates 3 --after-minutes 60
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from pytest_dlperf import metrics  # noqa: E402  (the declarations: which metrics a tolerance judges)
import host_check  # noqa: E402  (benchmarks/host_check.py: the host's speed per kind of work, between sessions)

TOLERATED = tuple(metrics.names(metrics.tolerated()))


def session(work: Path, label: str, extra: list[str], *args: str, env: dict | None = None) -> dict:
    """One ``pytest suites/`` session into WORK/label; its wall time, exit code and results.json kept."""
    report = work / label
    cmd = [sys.executable, "-m", "pytest", "suites/", "-q", "-p", "no:cacheprovider",
           f"--dlperf-baseline-dir={work / 'store'}", f"--dlperf-report={report}", *args, *extra]
    before = host_check.check()
    t0 = time.time()
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={**os.environ, **(env or {})})
    wall = time.time() - t0
    after = host_check.check()
    report.mkdir(parents=True, exist_ok=True)
    (report / "stdout.txt").write_text(r.stdout + r.stderr)
    got = {"label": label, "started": t0, "wall": round(wall, 1), "rc": r.returncode, "args": list(args),
           "env": env or {},
           "host": {"before": before, "after": after}}
    (work / f"{label}.json").write_text(json.dumps(got))
    return got


def read_json(path: Path) -> dict:
    """A file this benchmark wrote; one that cannot be read ends the run in one line naming it."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        sys.exit(f"first_gate.py: cannot read {path} ({exc}): run its phase again, or move it out of --work")


META_KEYS = ("label", "started", "wall", "rc")  # what ``session`` and the check phase write of each session


def read_meta(path: Path) -> dict:
    """A session's WORK/label.json; any other JSON there ends the run in one line naming it."""
    meta = read_json(path)
    missing = [k for k in META_KEYS if k not in meta] if isinstance(meta, dict) else list(META_KEYS)
    if missing:
        sys.exit(f"first_gate.py: {path} is not a session's record (no {', '.join(missing)}): move it out of --work")
    return meta


def cases_of(work: Path, label: str) -> list[dict]:
    """The cases of a session's results.json (none where the session wrote none: a host check)."""
    path = work / label / "results.json"
    if not path.exists():
        return []
    doc = read_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("cases"), list):
        sys.exit(f"first_gate.py: {path} has no cases list: not a dlperf results.json; run its phase again")
    return doc["cases"]


def moved(v: dict) -> bool:
    """Whether a primary verdict's host moved as the gate before issue #63 called another machine (HARDWARE,
    not judged, before any attribution): the hardware probe beyond 25% on the same identity (``host_speed``),
    or the pace probe slower beyond its spread (``pace.host_slower``). An upper bound for the old rule: it
    also probed up to three more times before such a verdict and kept the best figure."""
    return bool(v.get("host_speed")) or bool((v.get("pace") or {}).get("host_slower"))


def verdicts(cases: list[dict]) -> list[dict]:
    """Per case: its tolerated verdicts, what the attribution and confirmation made of a screen failure
    (host, confirmed, cleared, undecided, not confirmed), the launches its side-by-side pairs added, and
    whether the gate before issue #63 would have stopped it as HARDWARE (``moved``)."""
    out = []
    for c in cases:
        v = c.get("verdict") or {}
        said = {m: v[m]["status"] for m in TOLERATED if m in v}
        confirmation = next((v[m]["confirmation"] for m in v if isinstance(v[m].get("confirmation"), dict)), None)
        pairs = (confirmation or {}).get("pairs") or {}
        primary = v.get(metrics.PRIMARY.name) or {}
        out.append({"case": c["case"]["id"], "status": said, "launches": len(c["runs"]),
                    "confirmation": (confirmation or {}).get("outcome", ""), "added": 2 * pairs.get("pairs", 0),
                    "old_hardware": moved(primary)})
    return out


def row(meta: dict, results: list[dict]) -> str:
    """A session's line: when, exit code, wall time, and its verdicts (``verdicts``)."""
    label = meta["label"]
    cases = verdicts(results)
    regression = [c["case"] for c in cases if "regression" in c["status"].values()]
    noisy = [c["case"] for c in cases if "noisy" in c["status"].values() and c["case"] not in regression]
    screened = [c for c in cases if c["confirmation"]]  # each failed its screen (REGRESSION or NOISY)
    extra = sum(c["added"] for c in screened)
    outcome = {k: sum(c["confirmation"] == k for c in screened) for k in ("host", "confirmed", "cleared", "undecided")}
    hardware = sum("hardware" in c["status"].values() for c in cases)
    old = [c for c in cases if c["old_hardware"]]
    when = time.strftime("%H:%M", time.localtime(meta["started"]))
    return (f"{label:10s} {when}  rc={meta['rc']}  {meta['wall']:6.0f} s  cases {len(cases):2d}  "
            f"HARDWARE {hardware}  screen fails {len(screened):2d}  host {outcome['host']:2d}  "
            f"confirmed {outcome['confirmed']:2d}  cleared {outcome['cleared']:2d}  undecided {outcome['undecided']:2d}  "
            f"REGRESSION {len(regression):2d} {','.join(regression) or '-'}  NOISY {len(noisy)}  "
            f"side-by-side launches {extra}  before #63: HARDWARE {len(old)} "
            f"(of them confirmed now {sum(c['confirmation'] == 'confirmed' for c in old)})")


def case_medians(cases: list[dict]) -> dict[str, tuple[float, float | None]]:
    """Per case: the median throughput of all its launches, and the median pace where every launch has one."""
    out = {}
    for c in cases:
        paces = c.get("paces") or []
        out[c["case"]["id"]] = (statistics.median(c["throughputs"]),
                                statistics.median(paces) if paces and None not in paces else None)
    return out


def level_row(now: dict[str, tuple[float, float | None]], ref: dict[str, tuple[float, float | None]]) -> str:
    """A session's throughput and pace (``case_medians``) against the recording's: geometric means over the
    cases of the ratios of their medians."""
    common = [c for c in now if c in ref]
    if not common:
        return "tput -"
    tput = math.exp(statistics.fmean(math.log(now[c][0] / ref[c][0]) for c in common))
    paced = [c for c in common if now[c][1] and ref[c][1]]
    pace = math.exp(statistics.fmean(math.log(now[c][1] / ref[c][1]) for c in paced)) if paced else None
    return f"tput x{tput:.3f} pace " + (f"x{pace:.3f}" if pace else "-")


def host_level(meta: dict) -> dict[str, float]:
    """Each kernel's geometric mean over the cores and over the checks before and after the session."""
    checks = [per_core for side in ("before", "after") for per_core in (meta.get("host") or {}).get(side, {}).values()]
    if not checks:
        return {}
    return {k: math.exp(statistics.fmean(math.log(c[k]) for c in checks))
            for k in host_check.KERNELS if all(k in c for c in checks)}


def host_row(now: dict[str, float], ref: dict[str, float]) -> str:
    """A session's host speed (``host_level``) against the reference levels, kernel by kernel."""
    said = [f"{k.split('_')[0]} x{now[k] / ref[k]:.3f}" for k in host_check.KERNELS if k in now and k in ref]
    return "host " + (" ".join(said) or "-")


def show(work: Path) -> None:
    """Every session in the order they started, each against the recording: the gate's verdicts, the
    throughput and pace, and the host's speed (a kernel the recording's checks did not run against the
    first session's that did)."""
    metas = sorted((read_meta(p) for p in work.glob("*.json")), key=lambda m: m["started"])
    results = [cases_of(work, m["label"]) for m in metas]
    recorded = next((case_medians(r) for m, r in zip(metas, results) if m["label"] == "record"), {})
    hosts = [host_level(m) for m in metas]
    first = {}
    for level in hosts:
        for k, v in level.items():
            first.setdefault(k, v)
    for meta, cases, host in zip(metas, results, hosts):
        print(f"{row(meta, cases)}  {level_row(case_medians(cases), recorded)}  {host_row(host, first)}", flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("phase", choices=["record", "now", "later", "check", "show"])
    p.add_argument("--work", type=Path, required=True)
    p.add_argument("--gates", type=int, default=3)
    p.add_argument("--plant", type=float, default=0.10)
    p.add_argument("--after-minutes", type=float, default=60.0)
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)  # argparse took "-- -k X" after the phase for its own
    a = p.parse_args(argv[:cut])
    a.extra = argv[cut + 1:]  # more pytest arguments for every session (after --)
    a.work.mkdir(parents=True, exist_ok=True)
    if a.phase == "record":
        session(a.work, "record", a.extra, "--update-baselines")
    elif a.phase == "now":
        for k in range(a.gates):
            session(a.work, f"now-{k}", a.extra)
        if a.plant:
            session(a.work, "planted", a.extra, env={"DLPERF_PLANT_SLOWDOWN": str(a.plant)})
    elif a.phase == "check":  # the host alone, between sessions (WORK/check-HHMM)
        t0 = time.time()
        label = "check-" + time.strftime("%H%M", time.localtime(t0))
        (a.work / f"{label}.json").write_text(json.dumps({"label": label, "started": t0, "wall": 0, "rc": 0, "args": [],
                                                          "env": {}, "host": {"before": host_check.check()}}))
    elif a.phase == "later":
        if not (a.work / "record.json").exists():
            sys.exit(f"first_gate.py: no recording in {a.work}: run the record phase first "
                     f"(first_gate.py record --work {a.work})")
        rec = read_meta(a.work / "record.json")
        wait = rec["started"] + rec["wall"] + a.after_minutes * 60 - time.time()
        if wait > 0:
            print(f"waiting {wait / 60:.1f} min for the hour after the recording", flush=True)
            time.sleep(wait)
        for k in range(a.gates):
            session(a.work, f"later-{k}", a.extra)
        if a.plant:
            session(a.work, "planted-later", a.extra, env={"DLPERF_PLANT_SLOWDOWN": str(a.plant)})
    show(a.work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
