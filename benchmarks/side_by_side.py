#!/usr/bin/env python3
"""The stored gate as screen, attribution and side-by-side confirmation (issue #55), measured on this
machine with real torch training in a clone of this repository: how many verdicts of unchanged software
are REGRESSION (none is the target) and how many name the host; whether a real commit that slows one
model's workload is confirmed side by side, and a harmless commit is not; whether a second Python
environment whose workers pay a hidden cost is confirmed and its identical twin is not; and what the
confirmations cost.

Phases (WORK holds them all; ``all`` runs them in order):
  setup   clone this repository at HEAD into WORK/repo (C0); commit on branch ``slow`` a real change to
          the workload (resnet50's step runs an extra no-grad forward over a quarter of its batch, as a
          training-accuracy check would) and on branch ``docs`` a change to docs/ alone; make the second
          environments WORK/slowenv (every 2nd Conv2d forward computed twice, set inside the environment:
          benchmarks/slowenv) and its twin WORK/twinenv (the same packages, no slow-down)
  record  ``pytest suites/ --update-baselines`` at C0 (the README's newcomer path), into WORK/store
  now     --gates gated sessions of the suite at C0 right after the recording
  sitting one sitting of a second recording of the resnet50 cases, WORK/sittings-store, kept over three
          sittings (``--dlperf-record-sittings 3``): ``all`` takes one after the recording, one after the
          ``now`` phase and one after ``envs``; it calibrates the band within which a change cannot be
          told from the host (baselines/drift.py), against every session of unchanged workload
  envs    the slowed environment's and its twin's sessions at C0 (``-k resnet50``)
  rounds  --rounds rounds, each a session at ``slow`` and one at ``docs`` (``-k resnet50``), a round
          starting at least --spacing minutes after the one before; the ``later`` phase runs in between
          once --after-minutes have passed since the recording ended
  later   --gates gated sessions of the suite at C0 an hour after the recording
  noisy   --noisy sessions at ``docs`` (``-k resnet50``) whose screen meets a noisy neighbour: a busy loop
          on each core for the session's first --hog-seconds, so that the screen flags the harmless commit
          and the confirmation side by side, after it, decides (not part of ``all``)
  show    the table of every session so far

Every session is a plain ``pytest suites/`` from WORK/repo with the default confirmation (up to 20 pairs).

    python3 benchmarks/side_by_side.py all --work /tmp/sbs
    python3 benchmarks/side_by_side.py show --work /tmp/sbs
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import host_check  # noqa: E402  (benchmarks/host_check.py: the host's speed per kind of work, around sessions)

STEP_END = "        scaler.update()\n        return loss.detach()\n"
SLOW_STEP = ("        scaler.update()\n"
             "        if args.model == \"resnet50\":  # training accuracy on a quarter of the batch, for the logs\n"
             "            with torch.no_grad():\n"
             "                model(images[: max(1, images.shape[0] // 4)])\n"
             "        return loss.detach()\n")
WORKLOAD = "pytest_dlperf/node/workloads/torch_ddp.py"
RESNET = ("-k", "resnet50")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def setup(work: Path) -> None:
    """The clone, its two branches and the two environments (see the module doc)."""
    repo = work / "repo"
    if repo.exists():
        sys.exit(f"side_by_side.py: {repo} exists: setup runs once per work directory (use another --work)")
    subprocess.run(["git", "clone", "-q", str(ROOT), str(repo)], check=True)
    for k, v in (("user.name", "side_by_side"), ("user.email", "bench@localhost")):
        git(repo, "config", k, v)
    base = git(repo, "rev-parse", "HEAD")
    path = repo / WORKLOAD
    text = path.read_text()
    if text.count(STEP_END) != 1:
        sys.exit(f"side_by_side.py: {WORKLOAD}'s step no longer ends as this benchmark expects: update STEP_END")
    git(repo, "checkout", "-q", "-b", "slow")
    path.write_text(text.replace(STEP_END, SLOW_STEP))
    git(repo, "commit", "-q", "-am", "resnet50: log training accuracy on a quarter of each batch")
    git(repo, "checkout", "-q", "-b", "docs", base)
    with (repo / "docs" / "README.md").open("a") as fh:
        fh.write("\n<!-- a harmless change, made by benchmarks/side_by_side.py -->\n")
    git(repo, "commit", "-q", "-am", "docs: a harmless change")
    git(repo, "checkout", "-q", base)
    for env, how in (("slowenv", ["--every", "2"]), ("twinenv", ["--twin"])):
        subprocess.run(["bash", str(ROOT / "benchmarks" / "slowenv" / "make_env.sh"), str(work / env), *how], check=True)
    (work / "setup.json").write_text(json.dumps({"base": base, "slow": git(repo, "rev-parse", "slow"),
                                                 "docs": git(repo, "rev-parse", "docs")}))


def session(work: Path, label: str, commit: str, *args: str, python: str | None = None, store: str = "store",
            hog: float = 0.0) -> dict:
    """One session from WORK/repo at ``commit`` into WORK/label: wall time, exit code, host checks kept;
    ``hog``: seconds of a busy loop on every core from the session's start (a noisy neighbour)."""
    repo, report = work / "repo", work / label
    git(repo, "checkout", "-q", commit)
    cmd = [python or sys.executable, "-m", "pytest", "suites/", "-q", "-p", "no:cacheprovider",
           f"--dlperf-baseline-dir={work / store}", f"--dlperf-report={report}", *args]
    env = {k: v for k, v in os.environ.items() if k not in ("DLPERF_CONFIRM_PAIRS", "DLPERF_CONFIRM")}
    before = host_check.check()
    t0 = time.time()
    busy = f"import time\nend = time.time() + {hog}\nwhile time.time() < end:\n    pass\n"
    hogs = [subprocess.Popen([sys.executable, "-c", busy]) for _ in range(os.cpu_count() or 1)] if hog else []
    r = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, env=env)
    for h in hogs:
        h.wait()
    wall = time.time() - t0
    report.mkdir(parents=True, exist_ok=True)
    (report / "stdout.txt").write_text(r.stdout + r.stderr)
    got = {"label": label, "started": t0, "wall": round(wall, 1), "rc": r.returncode, "commit": commit,
           "python": python or sys.executable, "args": list(args), "host": {"before": before, "after": host_check.check()}}
    (work / f"{label}.json").write_text(json.dumps(got))
    print(row(work, got), flush=True)
    return got


def cases_of(work: Path, label: str) -> list[dict]:
    path = work / label / "results.json"
    return json.loads(path.read_text())["cases"] if path.exists() else []


def row(work: Path, meta: dict) -> str:
    """A session's line: its verdicts' statuses, what the confirmations made of the screen's failures, and
    what they cost (pairs, seconds)."""
    statuses: dict[str, int] = {}
    outcomes: dict[str, int] = {}
    regressions, pairs, seconds = [], 0, 0.0
    for c in cases_of(work, meta["label"]):
        seen = set()
        for m, v in (c.get("verdict") or {}).items():
            statuses[v["status"]] = statuses.get(v["status"], 0) + 1
            if v["status"] == "regression":
                regressions.append(f"{c['case']['id']}:{m}")
            conf = v.get("confirmation") or {}
            if conf:
                outcomes[conf["outcome"]] = outcomes.get(conf["outcome"], 0) + 1
                if conf.get("pairs") and c["case"]["id"] not in seen:  # one side-by-side run per case
                    seen.add(c["case"]["id"])
                    pairs += conf["pairs"]["pairs"]
                    seconds += conf.get("seconds") or 0
    when = time.strftime("%H:%M", time.localtime(meta["started"]))
    said = " ".join(f"{k}={n}" for k, n in sorted(statuses.items()))
    conf = " ".join(f"{k}={n}" for k, n in sorted(outcomes.items())) or "-"
    return (f"{meta['label']:12s} {when} rc={meta['rc']} {meta['wall']:5.0f} s  [{said}]  confirmations [{conf}]  "
            f"side by side {pairs} pairs {seconds:.0f} s  REGRESSION {','.join(regressions) or '-'}")


def confirmations(work: Path, meta: dict) -> list[str]:
    """Each screen failure's line: the screen's change, what side by side said (ratio, interval, pairs) and
    what it cost."""
    out = []
    for c in cases_of(work, meta["label"]):
        for m, v in (c.get("verdict") or {}).items():
            conf = v.get("confirmation") or {}
            if not conf:
                continue
            sbs = conf.get("side_by_side") or {}
            said = (f"{sbs['verdict'].upper()} {sbs['ratio'] - 1:+.1%} [{sbs['low'] - 1:+.1%}, {sbs['high'] - 1:+.1%}] "
                    f"in {sbs['pairs']} pairs, {conf.get('seconds') or 0:.0f} s" if sbs.get("ratio") else "-")
            out.append(f"  {meta['label']:10s} {c['case']['id'].split('-')[-1]} {m}: screen {conf['screen_change']:+.1%}"
                       f" -> {conf['outcome']}; side by side {said}")
    return out


def show(work: Path) -> None:
    metas = sorted((json.loads(p.read_text()) for p in work.glob("*.json") if p.name != "setup.json"),
                   key=lambda m: m["started"])
    for meta in metas:
        print(row(work, meta), flush=True)
    print("screen failures:")
    for meta in metas:
        print("\n".join(confirmations(work, meta)) or f"  {meta['label']:10s} none", flush=True)
    calibrate(work, [m["label"] for m in metas if m["label"].startswith(UNCHANGED)])


UNCHANGED = ("now-", "later-", "docs-", "twinenv")  # the sessions whose workload is the recorded one
SIGMAS = (1.0, 2.0, 2.5, 3.0, 5.0)  # the bands tried: chromeperf's 2.5, Conbench's 5


def sitting_step(k: int) -> tuple[str, tuple[str, ...]]:
    return f"sitting-{k}", ("--update-baselines", "--dlperf-record-sittings", "3", *RESNET)


def calibrate(work: Path, labels: list[str]) -> None:
    """Against the 3-sitting recording of the resnet50 cases: each unchanged session's change, in units of
    the sittings' spread (sd of their log medians), and how many fall within each band."""
    path = next((work / "sittings-store").glob("*.json"), None) if (work / "sittings-store").is_dir() else None
    if path is None:
        return
    sys.path.insert(0, str(ROOT))
    import math

    from pytest_dlperf.baselines.drift import FLOOR, sigmas, sitting_drift
    from pytest_dlperf.baselines.store import parse

    entries = parse(path, path.read_text()).entries
    z, moved = [], {}
    for label in labels:
        for c in cases_of(work, label):
            e = entries.get(f"{c['case']['backend']}/{c['case']['id']}")
            d = sitting_drift(e, "throughput") if e is not None else None
            if d is None or d.sigma <= 0:
                continue
            moved[e.key] = d
            change = math.log(sorted(c["throughputs"])[len(c["throughputs"]) // 2] / e.figure("throughput"))
            z.append((label, c["case"]["id"], change, change / d.sigma, d))
    if not z:
        return
    for key, d in moved.items():
        print(f"sittings {key}: {d.sittings} sittings, medians moved by up to {d.moved:.1%}, sd {d.sigma:.2%}, "
              f"band {d.band:.1%}")
    print(f"unchanged sessions' changes against the sittings' recording ({len(z)} cases): "
          + ", ".join(f"{label}:{case.split('-')[-1]} {math.expm1(ch):+.1%} ({zz:+.1f} sd)" for label, case, ch, zz, _ in z))
    for k in SIGMAS:
        within = sum(abs(ch) <= max(k * d.sigma, math.log1p(FLOOR)) for _, _, ch, _, d in z)
        print(f"  within max({k:g} sd, {FLOOR:.0%}): {within} of {len(z)}")
    within = sum(d.within(math.expm1(ch)) for _, _, ch, _, d in z)
    print(f"  within the gate's band (95% prediction interval, {sigmas(3):.2f} sd at 3 sittings): {within} of {len(z)}")


def later(work: Path, gates: int, base: str) -> None:
    for k in range(gates):
        session(work, f"later-{k}", base)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("phase", choices=["setup", "record", "sitting", "now", "envs", "rounds", "later", "noisy", "all",
                                     "show"])
    p.add_argument("--work", type=Path, required=True)
    p.add_argument("--gates", type=int, default=3)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--spacing", type=float, default=12.0, help="minutes from one round's start to the next's")
    p.add_argument("--after-minutes", type=float, default=60.0)
    p.add_argument("--noisy", type=int, default=3)
    p.add_argument("--hog-seconds", type=float, default=50.0)
    a = p.parse_args()
    a.work.mkdir(parents=True, exist_ok=True)
    if a.phase in ("setup", "all"):
        setup(a.work)
    if a.phase == "show":
        show(a.work)
        return 0
    if not (a.work / "setup.json").exists():
        sys.exit(f"side_by_side.py: no setup in {a.work}: run the setup phase first")
    commits = json.loads((a.work / "setup.json").read_text())
    if a.phase in ("record", "all"):
        shutil.rmtree(a.work / "store", ignore_errors=True)
        session(a.work, "record", commits["base"], "--update-baselines")
    if a.phase == "sitting":
        label, args = sitting_step(len(list(a.work.glob("sitting-*.json"))))
        session(a.work, label, commits["base"], *args, store="sittings-store")
    if a.phase == "all":
        label, args = sitting_step(0)
        session(a.work, label, commits["base"], *args, store="sittings-store")
    if a.phase in ("now", "all"):
        for k in range(a.gates):
            session(a.work, f"now-{k}", commits["base"])
    if a.phase == "all":
        label, args = sitting_step(1)
        session(a.work, label, commits["base"], *args, store="sittings-store")
    if a.phase in ("envs", "all"):
        session(a.work, "slowenv", commits["base"], *RESNET, python=str(a.work / "slowenv" / "bin" / "python"))
        session(a.work, "twinenv", commits["base"], *RESNET, python=str(a.work / "twinenv" / "bin" / "python"))
    if a.phase == "all":
        label, args = sitting_step(2)
        session(a.work, label, commits["base"], *args, store="sittings-store")
    rec = json.loads((a.work / "record.json").read_text()) if (a.work / "record.json").exists() else None
    later_done = a.phase not in ("all", "rounds") or any(a.work.glob("later-*.json"))
    if a.phase in ("rounds", "all"):
        first = len(list(a.work.glob("slow-*.json")))  # a later call goes on where an earlier one stopped
        for k in range(first, first + a.rounds):
            t0 = time.time()
            session(a.work, f"slow-{k}", commits["slow"], *RESNET)
            session(a.work, f"docs-{k}", commits["docs"], *RESNET)
            if not later_done and rec and time.time() >= rec["started"] + rec["wall"] + a.after_minutes * 60:
                later(a.work, a.gates, commits["base"])
                later_done = True
            rest = t0 + a.spacing * 60 - time.time()
            if rest > 0 and k + 1 < first + a.rounds:
                time.sleep(rest)
    if a.phase == "later" or (a.phase == "all" and not later_done):
        if rec is None:
            sys.exit("side_by_side.py: no recording: run the record phase first")
        wait = rec["started"] + rec["wall"] + a.after_minutes * 60 - time.time()
        if wait > 0:
            print(f"waiting {wait / 60:.1f} min for the hour after the recording", flush=True)
            time.sleep(wait)
        later(a.work, a.gates, commits["base"])
    if a.phase == "noisy":
        done = len(list(a.work.glob("noisy-*.json")))
        for k in range(done, done + a.noisy):
            session(a.work, f"noisy-{k}", commits["docs"], *RESNET, hog=a.hog_seconds)
    git(a.work / "repo", "checkout", "-q", commits["base"])
    show(a.work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
