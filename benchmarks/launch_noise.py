#!/usr/bin/env python3
"""Where does launch-to-launch noise come from? The workload launched again and again under variants.

Each launch is one rank (RANK=0, WORLD_SIZE=1) of the suite's workload pinned to core 0 with one
thread; variants are interleaved in rotated order, so drift on the machine hits them alike. Prints
per launch the window throughput, the minor page faults and the step times, then per variant the
median throughput and run-to-run CV.

    python3 benchmarks/launch_noise.py plain,nommap 5 6 resnet50:8:64    # variants, launches, iters, model:bs:px
    python3 benchmarks/launch_noise.py plain,nommap,thp,both 3 6 vgg16:4:32

Variants: plain (glibc defaults), nommap (MALLOC_MMAP_MAX_=0 + a 64 GiB trim threshold, what the
launchers now export on CPU nodes), thp (glibc.malloc.hugetlb=1), both, noaslr (setarch -R), malloc
(a 32 MiB mmap threshold), thpsys (nommap with the kernel's transparent huge pages set to
"always" and defrag "defer" for that launch, so the heap is backed by 2 MiB pages without
compaction stalls; needs root; the previous settings are restored after each launch).
"""
import json, os, subprocess, sys, tempfile, time, statistics, resource
from pathlib import Path

W = str(Path(__file__).resolve().parents[1] / "pytest_dlperf" / "node" / "workloads" / "torch_ddp.py")
VARIANTS = {
 "nommap": ([], {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "68719476736"}),
 "thp": ([], {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}),
 "both": ([], {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "68719476736", "GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}),
 "plain": ([], {}),
 "noaslr": (["setarch", "x86_64", "-R"], {}),
 "malloc": ([], {"MALLOC_MMAP_THRESHOLD_": "33554432", "MALLOC_TRIM_THRESHOLD_": "17179869184", "MALLOC_TOP_PAD_": "268435456"}),
 "thpsys": ([], {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "68719476736"}),
}
THP = Path("/sys/kernel/mm/transparent_hugepage")


def thp_settings(values=None):
    """The kernel's THP (enabled, defrag) as their selected words; set them first when given."""
    if values:
        for name, value in zip(("enabled", "defrag"), values):
            (THP / name).write_text(value)
    return tuple((THP / n).read_text().split("[")[1].split("]")[0] for n in ("enabled", "defrag"))
sel = sys.argv[1].split(",") if len(sys.argv) > 1 else list(VARIANTS)
n = int(sys.argv[2]) if len(sys.argv) > 2 else 6
iters = int(sys.argv[3]) if len(sys.argv) > 3 else 20
MODEL, BS, PX = (sys.argv[4].split(":") if len(sys.argv) > 4 else ("resnet50", "8", "64"))
res = {v: [] for v in sel}
port = 29600
for i in range(n):
    order = sel[i % len(sel):] + sel[:i % len(sel)]
    for v in order:
        pre, env_add = VARIANTS[v]
        saved = thp_settings(("always", "defer")) if v == "thpsys" else None
        port += 1
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "s.jsonl")
            env = {**os.environ, "OMP_NUM_THREADS": "1", "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0",
                   "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), **env_add}
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.time()
            try:
                p = subprocess.run(["taskset", "-c", "0", *pre, sys.executable, W, "--model", MODEL, "--precision",
                                    "fp32", "--batch-size", BS, "--image-size", PX, "--warmup-iters", "2", "--iters",
                                    str(iters), "--threads", "1", "--output", out], env=env, capture_output=True, text=True)
            finally:
                if saved:
                    thp_settings(saved)
            wall = time.time() - t0
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            if p.returncode:
                print(p.stderr[-2000:]); sys.exit(1)
            steps = [json.loads(l) for l in open(out) if '"step"' in l]
            steps = [s for s in steps if s["kind"] == "step"]
            st = [s["end"] - s["start"] for s in steps]
            t6 = 6 * int(BS) / (steps[7]["end"] - steps[2]["start"])
            tall = int(BS) * iters / (steps[-1]["end"] - steps[2]["start"])
            res[v].append({"t6": t6, "tall": tall, "steps": st, "minflt": r1.ru_minflt - r0.ru_minflt, "wall": wall})
            print(f"{i} {v:7s} t6={t6:6.2f} t{iters}={tall:6.2f} minflt={r1.ru_minflt - r0.ru_minflt} wall={wall:.1f} "
                  f"steps(ms)={[round(x*1000) for x in st[:10]]}", flush=True)
for v, rs in res.items():
    for k in ("t6", "tall"):
        xs = [r[k] for r in rs]
        print(v, k, f"median {statistics.median(xs):.2f} cv {statistics.stdev(xs)/statistics.fmean(xs):.1%}")
