#!/usr/bin/env python3
"""The GPU path in one short run (issue #50, part 2): one H100 or H200, a bare machine, under 10 minutes.

    python3 benchmarks/gpu_check.py [--out DIR] [--minutes 9.5]

Its steps, in this order; each starts only where the time left affords its planned seconds, and a
step that cannot start, fails or runs out of time is said, with why, in place of its figures:

1. the machine: the GPU, driver, torch, CUDA, nvidia-ml-py. Without a CUDA GPU nothing else runs and
   every figure is "not taken: no CUDA GPU", said once per figure; nothing is made up;
2. the install: ``pip install --no-deps --no-build-isolation -e .`` (nothing is fetched; the machine's
   own torch, numpy, scipy, pytest ... are used), then the modules the steps need;
3. every default GPU case at one launch (``pytest suites/ --nodes 1 --dlperf-gpus-per-node 1
   --dlperf-repeats 1``, no baselines; the suite's window of about 5 s, which holds at least 4 of
   NVML's utilisation samples where the driver takes one a second, its longest period):
   throughput, MFU, GPU busy share (host-bound or not), energy per sample, time to first step, and in
   results.json's figures the checkpoint after the window (its save and load from the GPU, its size);
4. the decoder's step against a plain loop of it on the GPU (``benchmarks/llm_plain_loop.py``, bf16,
   the default GPU size);
5. a planted 2% slow-down of resnet50 fp32 1n1g, an A/B session, pairs until decided (at most 6;
   tolerance 1%, so that 2% is beyond it); 6. an A/A of the same case, likewise;
7. on request (``--only data``): resnet50 fp32 1n1g on synthetic, real and DALI data (``dlperf data make``
   first; DALI where the machine has it installed, else said): throughput, input wait, the loader alone;
8. on request (``--only cudnn``; not in 10 minutes with the rest): what cuDNN's autotuner buys and
   costs, ``DLPERF_CUDNN_BENCHMARK=0`` (off) against the default (on), 3 pairs (throughput, time to first
   step): the candidate's time to first step lower and its throughput lower or the same is what the
   autotuner buys and costs;
9. on request (``--only explain``): what got slower on a GPU: resnet50 fp32 1n1g against an environment whose
   Conv2d computes every 4th convolution twice, three pairs, ``--dlperf-explain always``: the block's top kernel
   and each side's compute, communication, memory and idle shares.

Sized from the recorded parts of a launch (docs/budget.md, "GPU nodes"): about 20-25 s a launch, so
the cases take about 4 minutes, the decoder's loops under one, each A/B session 2-3. ``--only`` takes
some steps again (``--only aa,cudnn``) in a later run.

Prints one table and writes DIR/gpu_check.json (every figure, or why it was not taken) and
DIR/gpu_check-logs.tar.gz (each step's output, its results.json and the GPU watcher's logs: real NVML
recordings to set beside the tests' recorded-shape ones).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASE = "resnet50 and fp32 and 1n1g"
ONE_GPU = ["--nodes", "1", "--dlperf-gpus-per-node", "1"]
NEEDED = ("pytest", "numpy", "scipy", "rich", "filelock", "psutil", "matplotlib", "pytest_benchmark", "pynvml")
COLUMNS = ("what", "throughput", "MFU", "GPU busy", "energy", "1st step", "result")


@dataclass
class Check:
    """The run: where it writes, its deadline, the figures taken and what was not taken and why."""

    out: Path
    deadline: float
    rows: list[dict] = field(default_factory=list)
    not_taken: list[dict] = field(default_factory=list)
    steps: dict[str, dict] = field(default_factory=dict)

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def skip(self, what: str, why: str) -> None:
        self.not_taken.append({"what": what, "why": why})
        self.rows.append({"what": what, "result": f"not taken: {why}"})


def machine() -> dict:
    """What the machine has: torch and its GPU, the driver and nvidia-ml-py (errors as text)."""
    facts: dict = {"python": sys.version.split()[0]}
    try:
        import torch
        facts.update(torch=torch.__version__, cuda=torch.version.cuda, gpu=None)
        if torch.cuda.is_available():
            facts.update(gpu=torch.cuda.get_device_name(0), gpus=torch.cuda.device_count())
        else:
            facts["no_gpu"] = f"torch {torch.__version__} sees no CUDA GPU (torch.cuda.is_available() is False)"
    except ImportError as exc:
        facts.update(gpu=None, no_gpu=f"torch does not import: {exc}")
    try:
        import pynvml
        pynvml.nvmlInit()
        facts["driver"] = pynvml.nvmlSystemGetDriverVersion()
        pynvml.nvmlShutdown()
    except Exception as exc:  # noqa: BLE001 - said, not raised: no NVML is a fact of the machine
        facts["nvml"] = f"{type(exc).__name__}: {exc}"
    return facts


def run_step(check: Check, name: str, planned: float, argv: list[str], env: dict | None = None) -> bool:
    """Run one step's command (its output to DIR/<name>.log) if the time left affords ``planned``
    seconds; whether it ran to a zero exit. What stopped it is kept in ``check.steps``."""
    log = check.out / f"{name}.log"
    step = check.steps[name] = {"command": " ".join(argv), "planned_s": planned, "log": log.name}
    if check.left() < planned:
        step["not_run"] = f"{check.left():.0f} s were left, under the step's planned {planned:.0f} s"
        return False
    t0 = time.monotonic()
    with open(log, "w", encoding="utf-8") as fh:
        try:
            rc = subprocess.run(argv, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, timeout=max(1.0, check.left()),
                                env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}).returncode
        except subprocess.TimeoutExpired:
            rc = None
    step["seconds"] = round(time.monotonic() - t0, 1)
    step["returncode"] = rc
    if rc is None:
        step["not_run"] = f"stopped at the run's time limit after {step['seconds']:.0f} s"
    return rc == 0


def why_not(check: Check, name: str) -> str:
    """Why a step gave no figures, in one line: not started, stopped, or its last output line."""
    step = check.steps.get(name, {})
    if "not_run" in step:
        return step["not_run"]
    tail = (check.out / step.get("log", "-")).read_text(errors="replace").strip().splitlines() if step else []
    return f"exit {step.get('returncode')}: {tail[-1] if tail else 'no output'} (see {step.get('log')})"


def install(check: Check) -> bool:
    """This checkout installed without fetching anything, and the modules the steps need present."""
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "-e", str(ROOT)]
    if not run_step(check, "install", 30, pip):
        check.skip("install", why_not(check, "install"))
        return False
    missing = [m for m in NEEDED if importlib.util.find_spec(m) is None]
    check.steps["install"]["missing"] = missing
    if "pynvml" in missing:
        check.not_taken.append({"what": "GPU busy share and energy of every case",
                                "why": "nvidia-ml-py (pynvml) is not installed here: the GPU watcher says so per case"})
    if [m for m in missing if m != "pynvml"]:
        check.skip("install", f"missing on this machine: {', '.join(missing)}")
        return False
    return True


def _metric(case: dict, name: str) -> tuple[float | None, str]:
    """A case's figure of a metric from results.json, or None and why it has none."""
    got = (case.get("metrics") or {}).get(name) or {}
    return got.get("value"), got.get("not_measured") or got.get("flag") or ""


def case_row(case: dict) -> dict:
    """One default case's figures as the table shows them."""
    unit = case["case"].get("unit", "samples/s")
    row = {"what": case["case"]["id"], "throughput": f"{case['median']:.1f} {unit}",
           "cudnn_benchmark": ((case.get("runs") or [{}])[0].get("meta") or {}).get("cudnn_benchmark")}
    mfu = case.get("mfu") or {}
    row["MFU"] = f"{mfu['mfu']:.1%}" if mfu.get("mfu") else f"- ({(mfu.get('peak') or {}).get('label', 'not known')})"
    busy, said = _metric(case, "busy_share")
    row["GPU busy"] = f"{busy:.1%}" if busy else "-"
    energy, e_said = _metric(case, "energy_per_sample")
    row["energy"] = f"{energy * 1e3:.4g} mJ/{unit.removesuffix('s/s')}" if energy else "-"
    first, _ = _metric(case, "time_to_first_step")
    row["1st step"] = f"{first:.1f} s" if first else "-"
    notes = [n for n in (said, e_said if e_said != said else "") if n]
    row["result"] = "; ".join(notes) or "measured"
    row["figures"] = {m: _metric(case, m)[0] for m in ("throughput", "mfu", "busy_share", "energy_per_sample",
                                                       "time_to_first_step", "peak_memory", "checkpoint_save",
                                                       "checkpoint_load", "checkpoint_size")}
    return row


def one_launch(check: Check, report: Path, *extra: str) -> list[str]:
    """The suite on the one GPU, one launch a case, no baselines, into ``report``; ``extra`` picks the cases."""
    return [sys.executable, "-m", "pytest", "suites/", "-q", "-p", "no:cacheprovider", *ONE_GPU, *extra,
            "--dlperf-repeats", "1", f"--dlperf-report={report}", f"--dlperf-baseline-dir={check.out / 'no-baselines'}",
            "--dlperf-baseline-missing", "skip"]


def cases(check: Check) -> None:
    """Every default GPU case, one launch each; what each could not measure is in its row."""
    report = check.out / "cases"
    run_step(check, "cases", 240, one_launch(check, report))
    doc = _results(report)
    if doc is None:
        check.skip("every default GPU case", why_not(check, "cases"))
        return
    for case in doc.get("cases", []):
        check.rows.append(case_row(case))
    for name, why in (doc.get("failures") or {}).items():
        check.skip(name, f"the launch failed: {why.strip().splitlines()[0] if why.strip() else '?'}")


def _results(report: Path) -> dict | None:
    try:
        return json.loads((report / "results.json").read_text())
    except (OSError, ValueError):
        return None


def decoder(check: Check) -> None:
    """The decoder's step against a plain loop of it, on the GPU, in bf16 at the default GPU size."""
    out = check.out / "decoder-plain-loop.json"
    argv = [sys.executable, "benchmarks/llm_plain_loop.py", "--device", "cuda", "--precision", "amp", "--dim", "2048",
            "--layers", "16", "--batch-size", "4", "--seq", "2048", "--pairs", "6", "--steps", "10", "--json", str(out)]
    what = "decoder d2048l16 bs4 seq2048 bf16: workload / plain loop"
    if not run_step(check, "decoder", 60, argv):
        check.skip(what, why_not(check, "decoder"))
        return
    got = json.loads(out.read_text())
    check.rows.append({"what": what, "result": f"ratio {got['ratio']:.4f} (95% {got['low']:.4f}-{got['high']:.4f}, "
                                               f"{len(got['pairs'])} pairs)", "figures": got})


def ab(check: Check, name: str, what: str, candidate: str, pairs: int, planned: float) -> None:
    """An A/B session on resnet50 fp32 1n1g: the candidate against the current code, pairs until decided."""
    report = check.out / name
    argv = [sys.executable, "-m", "pytest", "suites/", "-q", "-p", "no:cacheprovider", *ONE_GPU, "-k", CASE,
            f"--dlperf-report={report}", f"--dlperf-candidate={candidate}", "--dlperf-ab-tolerance", "0.01",
            "--dlperf-ab-max-pairs", str(pairs)]
    run_step(check, name, planned, argv)
    cases_ = ((_results(report) or {}).get("ab") or {}).get("cases") or {}
    if not cases_:
        check.skip(what, why_not(check, name))
        return
    (got,) = cases_.values()
    ratio = f"ratio {got['ratio']:.4f} ({got['low']:.4f}-{got['high']:.4f})" if got.get("ratio") else ""
    firsts = {side: [p[side].get("figures", {}).get("time_to_first_step") for p in got.get("pairs_taken", [])]
              for side in ("reference", "candidate")}
    check.rows.append({"what": what, "result": f"{str(got.get('verdict')).upper()} after {got.get('pairs')} pair(s)"
                                                + (f", {ratio}" if ratio else ""),
                       "figures": {"verdict": got.get("verdict"), "pairs": got.get("pairs"), "ratio": got.get("ratio"),
                                   "low": got.get("low"), "high": got.get("high"), "time_to_first_step": firsts}})


def data(check: Check) -> None:
    """resnet50 fp32 1n1g on synthetic, real and DALI data (issue #56): the dataset made first (2560 JPEGs: ten
    batches of 256 an epoch), one launch each; throughput, input wait and the loader alone in each row."""
    where = check.out / "imagenet"
    if not run_step(check, "data-make", 60, [sys.executable, "-m", "pytest_dlperf.cli", "data", "make", "imagenet",
                                             str(where), "--images", "2560"]):
        check.skip("resnet50 on real and DALI data", why_not(check, "data-make"))
        return
    report = check.out / "data"
    run_step(check, "data", 150, one_launch(check, report, "-rs", "-k", f"{CASE} and not compiled", "--dlperf-data",
                                            "synthetic,real,dali", f"--dlperf-data-dir={where}"))
    doc = _results(report)
    if doc is None:
        check.skip("resnet50 on real and DALI data", why_not(check, "data"))
        return
    seen = set()
    for case in doc.get("cases", []):
        row = case_row(case)
        wait, _ = _metric(case, "input_wait")
        loader, _ = _metric(case, "loader_throughput")
        share, flag = _metric(case, "input_share")
        if wait is not None:
            row["result"] = (f"input wait {wait * 1e3:.3g} ms, share {share:.1%}, loader alone {loader:.0f} samples/s"
                             + (f"; {flag}" if flag else ""))
        row["figures"].update({"input_wait": wait, "input_share": share, "loader_throughput": loader})
        check.rows.append(row)
        seen.add(case["case"].get("data", "synthetic"))
    for source in ("real", "dali"):
        if source not in seen:
            check.skip(f"resnet50 fp32 1n1g on {source} data", f"no case measured: {why_not(check, 'data')}")


def explained(check: Check) -> None:
    """What got slower on a GPU (issue #57): resnet50 fp32 1n1g against an environment whose Conv2d computes every
    4th convolution twice (benchmarks/slowenv), three pairs, --dlperf-explain always: the block's top kernel, the
    kernels beyond the noise and the device's compute/communication/memory/idle shares of each side."""
    what = "what got slower: resnet50 fp32 1n1g, every 4th convolution twice (expect a convolution kernel on top)"
    env = check.out / "slowconv-env"
    if not run_step(check, "explain-env", 30, ["bash", "benchmarks/slowenv/make_env.sh", str(env), "--every", "4"]):
        check.skip(what, why_not(check, "explain-env"))
        return
    report = check.out / "explain"
    run_step(check, "explain", 150, [sys.executable, "-m", "pytest", "suites/", "-q", "-p", "no:cacheprovider", *ONE_GPU,
                                     "-k", f"{CASE} and not compiled", f"--dlperf-report={report}",
                                     f"--dlperf-candidate=python={env}/bin/python", "--dlperf-ab-max-pairs", "3",
                                     "--dlperf-explain", "always"])
    cases_ = ((_results(report) or {}).get("ab") or {}).get("cases") or {}
    e = next(iter(cases_.values()), {}).get("explanation") or {}
    d = e.get("diff")
    if not d:
        check.skip(what, e.get("why") or why_not(check, "explain"))
        return
    top = d["top"][0] if d["top"] else {}
    check.rows.append({"what": what, "result": f"{d['unit']}: top {top.get('name', '-')[:60]} "
                                               f"{top.get('change_ms', 0):+.2f} ms/step ({top.get('calls') or 'same calls'}); "
                                               f"{d['beyond_noise']} beyond the noise",
                       "figures": {"top": d["top"][:3], "ranks": d["ranks"], "problems": e.get("problems")}})


def table(check: Check) -> str:
    """The one table: a row per case and per comparison; '-' where a row has no such figure."""
    cells = [[str(r.get(c, "-")) for c in COLUMNS] for r in check.rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) if cells else len(c) for i, c in enumerate(COLUMNS)]
    line = lambda row: "  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip()  # noqa: E731
    return "\n".join([line(list(COLUMNS)), line(["-" * w for w in widths]), *(line(r) for r in cells)])


def pack_logs(check: Check) -> Path:
    """Each step's output, results.json files and the GPU watcher's logs, in one archive."""
    path = check.out / "gpu_check-logs.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for f in sorted(check.out.rglob("*")):
            if f.is_file() and f != path and (f.suffix in (".log", ".json") or f.name.endswith("gpu.log")):
                tar.add(f, arcname=str(f.relative_to(check.out)))
    return path


STEPS = {  # name -> (what it gives, how it is taken), in the order they run
    "cases": ("every default GPU case", lambda c: cases(c)),
    "decoder": ("decoder plain-loop ratio", lambda c: decoder(c)),
    "planted": ("A/B planted 2%", lambda c: ab(c, "ab-planted-2pct", "A/B resnet50 fp32 1n1g, planted 2% (expect SLOWER)",
                                                "env=DLPERF_PLANT_SLOWDOWN=0.02", 6, 150)),
    "aa": ("A/A", lambda c: ab(c, "aa", "A/A resnet50 fp32 1n1g (expect SAME)", "env=DLPERF_PLANT_SLOWDOWN=0", 6, 150)),
    "cudnn": ("cudnn.benchmark", lambda c: ab(c, "cudnn-benchmark", "cudnn.benchmark off (candidate) / on, resnet50 fp32 1n1g",
                                              "env=DLPERF_CUDNN_BENCHMARK=0", 3, 150)),
    "data": ("resnet50 on synthetic, real and DALI data", lambda c: data(c)),
    "explain": ("what got slower on a GPU", lambda c: explained(c)),
}


DEFAULT = ("cases", "decoder", "planted", "aa")  # what issue #50 asks of 10 minutes


def plan(check: Check, only: list[str]) -> None:
    """The install, then the steps asked for, in their order (the module doc)."""
    if not install(check):
        for name in only:
            check.skip(STEPS[name][0], "the install step did not complete (above)")
        return
    for name in only:
        STEPS[name][1](check)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="gpu-check", help="the folder for gpu_check.json and the logs (default gpu-check)")
    p.add_argument("--minutes", type=float, default=9.5, help="the whole run's time, install included (default 9.5)")
    p.add_argument("--only", default=",".join(DEFAULT), help=f"the steps to take, of {','.join(STEPS)} "
                                                             f"(default {','.join(DEFAULT)})")
    a = p.parse_args(argv)
    only = [s for s in a.only.split(",") if s]
    if not 0 < a.minutes <= 60:
        p.error(f"--minutes must be above 0 and at most 60, got {a.minutes:g}")
    if not only or set(only) - set(STEPS):
        p.error(f"--only {a.only!r}: name steps of {', '.join(STEPS)}")
    check = Check(Path(a.out).resolve(), time.monotonic() + a.minutes * 60)
    check.out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    facts = machine()
    if facts.get("gpu"):
        plan(check, [n for n in STEPS if n in only])
    else:
        for what in ["install", *(STEPS[n][0] for n in STEPS if n in only)]:
            check.skip(what, f"no CUDA GPU here: {facts['no_gpu']}")
    print(f"gpu_check: {facts.get('gpu') or 'no GPU'}; torch {facts.get('torch')}, CUDA {facts.get('cuda')}, "
          f"driver {facts.get('driver', '? (' + facts.get('nvml', '') + ')')}\n")
    print(table(check))
    logs = pack_logs(check)
    doc = {"started": started, "seconds": round(time.time() - started, 1), "machine": facts, "rows": check.rows,
           "not_taken": check.not_taken, "steps": check.steps}
    (check.out / "gpu_check.json").write_text(json.dumps(doc, indent=1))
    print(f"\n{len(check.not_taken)} figure(s) not taken, each with why, above and in {check.out / 'gpu_check.json'}; "
          f"logs: {logs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
