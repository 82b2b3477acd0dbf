#!/usr/bin/env python3
"""Real data on this machine (issue #56): the suite's synthetic and real cases side by side, a starved loader,
and the real case's step against a plain DataLoader loop.

- ``suite``: builds the default dataset (``dlperf data make imagenet``) in --work, runs resnet50 1n1g and 2n1g
  with ``--dlperf-data synthetic,real`` (the seed's table, the input wait, the loaders alone, any data-bound
  flag), then the real cases again with the loader starved (``--dlperf-data-workers 0``: decoding in the
  training process).
- ``plain``: in one process pinned to one core, resnet50's real-data step as the workload runs it
  (``torch_ddp.make_step`` over ``torch_data.Batches``, timed by ``steplog.time_steps``) against a plain loop
  over its own DataLoader of the same files and transform (``next(loader)``, normalise, forward, backward,
  step), timed from outside; in ABBA pairs, the ratio of samples/s with a 95% t interval.

- ``ab``: a second environment whose Pillow decodes every JPEG twice (``slowenv/make_env.sh --slow-jpeg``: a
  slower decoder the project knows nothing of) and its twin (the same without it), each an A/B candidate
  (``python=``) against this interpreter on resnet50 1n1g with synthetic and real data: the slower decoder must
  be named on the real case (its throughput, its loader alone) and leave the synthetic case alone.

    python3 benchmarks/real_data.py suite --work /tmp/realdata
    python3 benchmarks/real_data.py plain --work /tmp/realdata --pairs 12 --steps 8
    python3 benchmarks/real_data.py ab --work /tmp/realdata --sessions 3
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
WORKLOADS = ROOT / "pytest_dlperf" / "node" / "workloads"


def make_dataset(work: Path) -> Path:
    data = work / "imagenet"
    subprocess.run([sys.executable, "-m", "pytest_dlperf.cli", "data", "make", "imagenet", str(data)], cwd=ROOT,
                   check=True)
    return data


def suite(a: argparse.Namespace) -> None:
    data = make_dataset(a.work)
    runs = {"workers": [], "starved": ["--dlperf-data-workers=0"]}
    for name, extra in runs.items():
        report = a.work / f"report-{name}"
        sources = "synthetic,real" if name == "workers" else "real"
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "pytest", "suites/", "-q", "-p", "no:randomly", "-k",
                            "resnet50 and not compiled", "--dlperf-data", sources, f"--dlperf-data-dir={data}",
                            f"--dlperf-repeats={a.repeats}", f"--dlperf-report={report}", *extra],
                           cwd=ROOT, capture_output=True, text=True)
        print(f"== {name} ({time.perf_counter() - t0:.0f} s, exit {r.returncode})")
        out = r.stdout
        if "data: synthetic" in out:
            print(out[out.index("data: synthetic"):].split("=====")[0].rstrip())
        doc = json.loads((report / "results.json").read_text())
        for c in doc["cases"]:
            if c["case"]["data"] != "real":
                continue
            m = c["metrics"]
            figure = {k: (m.get(k) or {}).get("value") for k in ("throughput", "input_wait", "input_wait_p95",
                                                                 "input_share", "loader_throughput")}
            flags = c.get("flags") or {}
            workers = c["runs"][0]["meta"]["input"]["workers"]
            print(f"{c['case']['id']}: workers {workers}, " + ", ".join(
                f"{k} {v:.4g}" for k, v in figure.items() if v is not None) + (f"; flags {flags}" if flags else ""))


def ab(a: argparse.Namespace) -> None:
    data = make_dataset(a.work)
    envs = {}
    for name, flag in (("slow-jpeg", "--slow-jpeg"), ("twin", "--twin")):
        envs[name] = a.work / "envs" / name
        if not (envs[name] / "bin" / "python").exists():
            subprocess.run(["bash", str(ROOT / "benchmarks" / "slowenv" / "make_env.sh"), str(envs[name]), flag],
                           check=True, capture_output=True)
    for session in range(a.sessions):
        for name, env in envs.items():
            report = a.work / f"ab-{name}-{session}"
            t0 = time.perf_counter()
            r = subprocess.run([sys.executable, "-m", "pytest", "suites/", "-q", "-p", "no:randomly", "-k",
                                "resnet50 and 1n1g and not compiled", "--dlperf-data", "synthetic,real",
                                f"--dlperf-data-dir={data}", f"--dlperf-candidate=python={env / 'bin' / 'python'}",
                                f"--dlperf-report={report}"], cwd=ROOT, capture_output=True, text=True)
            section = json.loads((report / "results.json").read_text()).get("ab") or {}
            print(f"== session {session + 1} {name} ({time.perf_counter() - t0:.0f} s, exit {r.returncode})")
            for case, c in section.get("cases", {}).items():
                shown = [f"throughput {str(c.get('verdict')).upper()} {c['ratio'] - 1:+.1%} in {len(c.get('pairs_taken', []))} pairs"
                         if c.get("ratio") else f"throughput {c.get('verdict')}"]
                shown += [f"{m} {str(v.get('verdict')).upper()} {v['ratio'] - 1:+.1%}" if v.get("ratio") else
                          f"{m} {v.get('verdict')}" for m, v in (c.get("metrics") or {}).items()]
                print(f"  {case}: " + "; ".join(shown), flush=True)


def plain(a: argparse.Namespace) -> None:
    sys.path.insert(0, str(WORKLOADS))
    import torch
    import torch.nn.functional as F
    from scipy import stats

    import steplog
    import torch_data
    import torch_ddp
    from llm_plain_loop import Bare  # noqa: E402 - benchmarks/ is on sys.path as this script's directory

    data = make_dataset(a.work)
    os.sched_setaffinity(0, {a.core})
    torch.set_num_threads(1)
    device = torch.device("cpu")
    malloc = torch_ddp.keep_freed_memory()
    args = argparse.Namespace(model="resnet50", precision="fp32", batch_size=a.batch_size, image_size=a.image_size,
                              num_classes=1000, vocab=32000, llm_dim=0, llm_layers=0, warmup_iters=0,
                              max_warmup_iters=0, iters=a.steps, window_seconds=0.0, max_iters=0, compile=False,
                              data_dir=str(data), data_workers=a.workers, seed=0, drop_caches=False)
    torch.manual_seed(0)
    model, bare = torch_ddp.build_model("resnet50", 1000, a.image_size, (0, 0, 0)).to(device), Bare()
    batches, facts = torch_data.real_batches(args, 0, 1, device, False, steplog.fail)
    step = torch_ddp.make_step(args, model, bare, device, False, batches)
    own, _ = torch_data.real_batches(args, 0, 1, device, False, steplog.fail)  # the plain loop's own loader
    net, opt = bare.net, bare.optimizer
    mean = torch.tensor(torch_data.dataset.MEAN).view(1, 3, 1, 1)
    std = torch.tensor(torch_data.dataset.STD).view(1, 3, 1, 1)
    loader = iter(own.loader)

    def plain_step() -> None:
        nonlocal loader
        try:
            images, labels = next(loader)
        except StopIteration:
            loader = iter(own.loader)
            images, labels = next(loader)
        x = images.permute(0, 3, 1, 2).float().sub_(mean).div_(std).contiguous()
        net.zero_grad(set_to_none=True)
        F.cross_entropy(net(x), labels).backward()
        opt.step()

    samples = a.batch_size * a.steps

    def workload() -> float:
        t = steplog.time_steps(step, args, 1, a.batch_size, agree=lambda d, i: (d, i), barrier=lambda: None)
        return samples / (t.window[1] - t.window[0])

    def plain_window() -> float:
        t0 = time.perf_counter()
        for _ in range(a.steps):
            plain_step()
        return samples / (time.perf_counter() - t0)

    for _ in range(3):
        step()
        plain_step()
    logs, pairs = [], []
    for i in range(a.pairs):
        w, q = (workload(), plain_window()) if i % 2 == 0 else tuple(reversed((plain_window(), workload())))
        logs.append(math.log(w / q))
        pairs.append({"workload": w, "plain": q})
        print(f"pair {i + 1:2d}: workload {w:7.2f} samples/s  plain {q:7.2f} samples/s  ratio {w / q:.4f}", flush=True)
    mu, sd = statistics.fmean(logs), statistics.stdev(logs)
    half = stats.t.ppf(0.975, len(logs) - 1) * sd / math.sqrt(len(logs))
    print(f"\nresnet50 fp32 bs{a.batch_size} {a.image_size}px on real data ({facts['samples']} JPEGs, {a.workers} "
          f"worker(s)), {a.steps} steps a window, {a.pairs} pairs on core {a.core}, host malloc: {malloc or 'as is'}:")
    print(f"ratio workload / plain: {math.exp(mu):.4f} (95% interval {math.exp(mu - half):.4f} .. "
          f"{math.exp(mu + half):.4f}); spread of the pairs' log ratios {sd:.2%}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=("suite", "plain", "ab"))
    p.add_argument("--work", type=Path, default=Path("/tmp/dlperf-realdata"))
    p.add_argument("--repeats", type=int, default=3, help="suite: launches per case")
    p.add_argument("--pairs", type=int, default=12)
    p.add_argument("--steps", type=int, default=8, help="plain: steps per window")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--image-size", type=int, default=64)
    p.add_argument("--workers", type=int, default=1, help="plain: each loader's workers (the suite's default here)")
    p.add_argument("--core", type=int, default=0)
    p.add_argument("--sessions", type=int, default=3, help="ab: A/B sessions per environment")
    a = p.parse_args()
    a.work.mkdir(parents=True, exist_ok=True)
    {"suite": suite, "plain": plain, "ab": ab}[a.what](a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
