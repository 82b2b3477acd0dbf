"""What got slower, measured (issue #57; docs/measurements.md, "What got slower").

A/B sessions of the decoder (llama, ddp) on this machine, the candidate a second environment the project knows
nothing of (``python=``):

- planted: every attention block also computes K products of its queries and keys (slowenv/
  dlperf_extramatmul.py); ``--dlperf-explain auto``. Counted: the verdict, the block's top line (is it the
  matmul family: aten::bmm / aten::matmul?), and the profiled launches each side took.
- twin: the same environment without the slow-down; ``--dlperf-explain always`` (its verdict is rarely
  SLOWER): the operators its block names beyond the noise it states (the target: none).
- quiet: the twin under ``auto``: the profiled launches taken (the target: none).

    python3 benchmarks/explain.py rescore [WORK]     # the saved traces diffed again with this checkout's diff
    python3 benchmarks/explain.py [--plant matmul|conv] [--sessions 10] [--twins N] [--quiet 2] [--repeat K]
                                  [--topology 1n1g] [--work /tmp/explain-bench]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLANTS = {  # --plant: the model, make_env.sh's flags for the planted environment, and the operator family planted
    "matmul": ("llama", ("--extra-matmul", "{k}"), ("bmm", "matmul")),
    "conv": ("resnet50", ("--every", "{k}"), ("conv", "convolution")),
}


def make_env(where: Path, *flags: str) -> str:
    if not (where / "bin" / "python").exists():
        subprocess.run(["bash", str(ROOT / "benchmarks" / "slowenv" / "make_env.sh"), str(where), *flags], check=True,
                       capture_output=True)
    return str(where / "bin" / "python")


def session(work: Path, label: str, python: str, explain: str, topology: str, model: str = "llama") -> dict:
    report = work / label
    cmd = [sys.executable, "-m", "pytest", str(ROOT / "suites"), "-p", "no:cacheprovider", "-q", "--rootdir", str(ROOT),
           f"--dlperf-report={report}", f"--dlperf-baseline-dir={work / 'baselines'}", "--backend", "ddp",
           "--dlperf-model", model, "--dlperf-warmup-iters", "2", "--dlperf-iters", "8", "-k",
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


def rescore(work: Path) -> int:
    """Diff the saved profiled launches of every session under ``work`` again, with this checkout's diff (each
    session's pairs' spread and ratio), and count as main() does: a change to the statistics, tried on the same
    traces without measuring again."""
    from pytest_dlperf import explain
    from pytest_dlperf.ab.explain import DEFAULT_LAUNCH_NOISE

    hits, clean, planted, twins = 0, 0, 0, 0
    for path in sorted(work.glob("*/results.json")):
        (name, case), = json.loads(path.read_text())["ab"]["cases"].items()
        e = case.get("explanation") or {}
        if not e.get("traces"):
            continue
        d = explain.explanation(*(explain.from_dir(Path(e["traces"][r]), r) for r in ("reference", "candidate")),
                                (e.get("diff") or {}).get("launch_noise", DEFAULT_LAUNCH_NOISE), case.get("ratio"))
        top = (d.get("diff") or {}).get("top") or [{}]
        beyond = (d.get("diff") or {}).get("beyond_noise")
        label = path.parent.name
        if "planted" in label:
            planted += 1
            hits += any(f in str(top[0].get("name", "")).lower() for _, _, fam in PLANTS.values() for f in fam)
        elif "twin" in label:
            twins += 1
            clean += beyond == 0
        print(label, case["verdict"], top[0].get("name"), "beyond", beyond, "noise used",
              round((d.get("diff") or {}).get("noise_used", 0.0), 3))
    print(f"planted: the planted family the top line in {hits} of {planted}; twin: none beyond the noise in {clean} of {twins}")
    return 0


def main() -> int:
    if sys.argv[1:2] == ["rescore"]:
        return rescore(Path(sys.argv[2]) if len(sys.argv) > 2 else Path("/tmp/explain-bench"))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=10)
    p.add_argument("--plant", choices=sorted(PLANTS), default="matmul",
                   help="matmul: the decoder's attention computes --repeat more query-key products (default); conv: "
                        "resnet50's every --repeat-th convolution is computed twice")
    p.add_argument("--repeat", type=int, default=None, help="the plant's size (matmul: 6 products; conv: every 4th)")
    p.add_argument("--twins", type=int, default=None, help="twin sessions (default: --sessions)")
    p.add_argument("--topology", default="1n1g")
    p.add_argument("--quiet", type=int, default=2, help="twin sessions under auto (profiled launches: none)")
    p.add_argument("--work", type=Path, default=Path("/tmp/explain-bench"))
    a = p.parse_args()
    a.work.mkdir(parents=True, exist_ok=True)
    model, flags, family = PLANTS[a.plant]
    k = a.repeat if a.repeat is not None else (6 if a.plant == "matmul" else 4)
    planted = make_env(a.work / f"env-{a.plant}{k}", *(f.format(k=k) for f in flags))
    twin = make_env(a.work / "env-twin", "--twin")
    twins = a.sessions if a.twins is None else a.twins
    hits, twin_clean = 0, 0
    for i in range(max(a.sessions, twins)):
        for kind, python, mode, n in (("planted", planted, "auto", a.sessions), ("twin", twin, "always", twins)):
            if i >= n:
                continue
            got = session(a.work, f"{a.plant}-{kind}-{i}", python, mode, a.topology, model)
            if kind == "planted":
                hits += bool(got["top"] and any(f in got["top"].lower() for f in family))
            else:
                twin_clean += got["beyond"] == 0
            print(kind, i, json.dumps(got), flush=True)
    for i in range(a.quiet):
        got = session(a.work, f"{a.plant}-quiet-{i}", twin, "auto", a.topology, model)
        print("quiet", i, json.dumps(got), flush=True)
    print(f"planted ({a.plant}): the {'/'.join(family)} family the top line in {hits} of {a.sessions} sessions")
    print(f"twin: no operator beyond the noise in {twin_clean} of {twins} sessions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
