"""What got slower, measured (issue #57; docs/measurements.md, "What got slower").

A/B sessions of the decoder (llama, ddp) on this machine, the candidate a second environment the project knows
nothing of (``python=``):

- planted: every attention block also computes K products of its queries and keys (slowenv/
  dlperf_extramatmul.py); ``--dlperf-explain auto``. Counted: the verdict, the block's top line (is it the
  matmul family: aten::bmm / aten::matmul?), and the profiled launches each side took.
- twin: the same environment without the slow-down; ``--dlperf-explain always`` (its verdict is rarely
  SLOWER): the operators its block names beyond the noise it states (the target: none).
- quiet: the twin under ``auto``: the profiled launches taken (the target: none).

    python3 benchmarks/explain.py [--sessions 10] [--repeat 6] [--topology 1n1g] [--work /tmp/explain-bench]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAMILY = ("bmm", "matmul")


def make_env(where: Path, *flags: str) -> str:
    if not (where / "bin" / "python").exists():
        subprocess.run(["bash", str(ROOT / "benchmarks" / "slowenv" / "make_env.sh"), str(where), *flags], check=True,
                       capture_output=True)
    return str(where / "bin" / "python")


def session(work: Path, label: str, python: str, explain: str, topology: str) -> dict:
    report = work / label
    cmd = [sys.executable, "-m", "pytest", str(ROOT / "suites"), "-p", "no:cacheprovider", "-q", "--rootdir", str(ROOT),
           f"--dlperf-report={report}", f"--dlperf-baseline-dir={work / 'baselines'}", "--backend", "ddp",
           "--dlperf-model", "llama", "--dlperf-warmup-iters", "2", "--dlperf-iters", "8", "-k",
           f"{topology} and not compiled", "--dlperf-nodes", topology[0], "--dlperf-candidate", f"python={python}",
           "--dlperf-ab-max-pairs", "8", "--dlperf-explain", explain]
    t0 = time.monotonic()
    subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    doc = json.loads((report / "results.json").read_text())
    (name, case), = doc["ab"]["cases"].items()
    e = case.get("explanation") or {}
    d = e.get("diff") or {}
    top = d.get("top") or []
    beyond = [c for c in top if c["beyond_noise"]]
    runs = report / "runs" / name
    profiled = sorted(p.name for p in runs.iterdir() if p.name.startswith("explain-")) if runs.is_dir() else []
    return {"verdict": case["verdict"], "ratio": case.get("ratio"), "pairs": case["pairs"],
            "top": top[0]["name"] if top else None, "top_beyond": bool(top and top[0]["beyond_noise"]),
            "beyond": d.get("beyond_noise"), "beyond_names": [c["name"] for c in beyond][:4],
            "host": d.get("host"), "launch_noise": d.get("launch_noise"), "profiled": profiled,
            "why": e.get("why"), "seconds": round(time.monotonic() - t0)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=10)
    p.add_argument("--repeat", type=int, default=6, help="the planted environment's extra products per block")
    p.add_argument("--topology", default="1n1g")
    p.add_argument("--quiet", type=int, default=2, help="twin sessions under auto (profiled launches: none)")
    p.add_argument("--work", type=Path, default=Path("/tmp/explain-bench"))
    a = p.parse_args()
    a.work.mkdir(parents=True, exist_ok=True)
    planted = make_env(a.work / f"env-matmul{a.repeat}", "--extra-matmul", str(a.repeat))
    twin = make_env(a.work / "env-twin", "--twin")
    hits, twin_clean, rows = 0, 0, []
    for i in range(a.sessions):
        for kind, python, mode in (("planted", planted, "auto"), ("twin", twin, "always")):
            got = session(a.work, f"{kind}-{i}", python, mode, a.topology)
            rows.append((kind, got))
            if kind == "planted":
                hits += bool(got["top"] and any(f in got["top"] for f in FAMILY))
            else:
                twin_clean += got["beyond"] == 0
            print(kind, i, json.dumps(got), flush=True)
    for i in range(a.quiet):
        got = session(a.work, f"quiet-{i}", twin, "auto", a.topology)
        print("quiet", i, json.dumps(got), flush=True)
    print(f"planted: the matmul family the top line in {hits} of {a.sessions} sessions")
    print(f"twin: no operator beyond the noise in {twin_clean} of {a.sessions} sessions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
