#!/usr/bin/env python3
"""Hardware fingerprint of one node: what the machine is and how fast its cores and memory are now.

Runs ON THE NODES as a standalone script (standard library only; numpy is used when it can be
imported, lazily, after the BLAS thread variables are forced to 1)::

    python3 hwprobe.py [--seconds 1.5] [--output FILE]

It prints (or writes to FILE) exactly one JSON object on one line and exits 0. Missing /proc,
sysfs or cgroup files, or a missing nvidia-smi, turn the fields they feed into null; a probe
section that fails is null too and its error is listed under ``errors``. The harness compares
two of these objects with ``pytest_dlperf.baselines.fingerprint.compare``.

Contract, ``probe_version`` 1 (fields in the order they are written):

- ``probe_version``: 1.
- ``host``: ``socket.gethostname()``.
- ``cpu``: the processor as /proc/cpuinfo, sysfs and cgroups describe it to this process.
    - ``model_name``, ``vendor``, ``family``, ``model``, ``stepping``: the strings of
      /proc/cpuinfo's "model name", "vendor_id", "cpu family", "model", "stepping" lines for
      the first CPU this process may use (null where absent, e.g. on ARM).
    - ``flags``: the sorted subset of the CPU flags that change which deep-learning kernels run:
      avx, avx2, fma, f16c, avx512f, avx512bw, avx512vl, avx512_vnni, avx512_bf16,
      avx512_fp16, amx_tile, amx_bf16, amx_int8, avx_vnni, sse4_2 (only those present).
    - ``cpus``: how many CPUs this process may use (``len(os.sched_getaffinity(0))``).
    - ``cpu_list``: those CPUs' numbers, sorted.
    - ``threads_per_core``: the most CPUs of the allowed set that share one physical core
      (sysfs ``topology/thread_siblings_list`` intersected with the allowed set; 1 when sysfs
      does not say).
    - ``mhz``: the median of the "cpu MHz" lines of the allowed CPUs (float; null when absent).
      It fluctuates and is reported, not compared.
    - ``max_mhz``: sysfs ``cpufreq/cpuinfo_max_freq`` / 1000 of the first allowed CPU, or null.
    - ``cpu_quota``: the CPU quota in cores that cgroups impose on this process: the smallest
      quota / period over this process's cgroup and its ancestors (cgroup v2 ``cpu.max``; v1
      ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``); null when unlimited or unknown.
    - ``hypervisor``: true when the "hypervisor" flag is present (a virtual machine).
- ``memory_gib``: MemTotal of /proc/meminfo in GiB, 1 decimal (null when absent).
- ``gpus``: one dict per GPU from ``nvidia-smi --query-gpu=...`` (``[]`` when nvidia-smi is
  absent or fails): ``index``, ``name``, ``memory_mib``, ``sm_clock_max_mhz``,
  ``mem_clock_max_mhz``, ``power_limit_w``, ``ecc``, ``pcie_gen``, ``pcie_width``, ``driver``,
  ``mig``. Numbers are numbers where they parse; "[N/A]"-style values are null.
- ``gpu_topology``: the text of ``nvidia-smi topo -m``, or null.
- ``compute``: a timed BLAS probe that does not use torch. One thread per allowed CPU, each
  pinned to its CPU, repeats a float32 matmul of two 384x384 matrices; every trial is
  calibrated to about seconds / 14 s and the threads start each trial together.
    - ``kind``: "numpy-sgemm-384"; without numpy "python-loop" (a pure-Python integer loop in
      one thread on the first allowed CPU, since Python code in several threads would only
      take turns on the GIL).
    - ``unit``: "GFLOP/s per core" (2 * 384**3 flops per matmul); "Mops/s per core" for
      "python-loop" (loop iterations).
    - ``threads``: how many threads ran the probe.
    - ``trials``: one figure per trial (7): the median over the threads of that trial's rate.
    - ``median``: the median of ``trials``.
    - ``best``: the highest of ``trials``: what the cores can do when the host lends them fully
      (on a shared VM whole seconds run 20-50% slower while the guest sees no steal).
    - ``cpu_wall``: the threads' CPU time (``time.thread_time()``) over their wall time, summed
      over the timed trials: 1.0 when nothing else competed for the cores; lower when they were
      shared with other work, throttled by a cgroup quota, or stolen by the hypervisor.
- ``memory``: a bandwidth probe, one thread pinned to the first allowed CPU: ``np.copyto``
  between two 64 MiB float32 arrays, 7 trials of about seconds / 56 s each. ``kind``
  "numpy-copy-64MiB", ``unit`` "GB/s" (bytes read + written per second, 1e9), ``trials``,
  ``median``. Null without numpy.
- ``contention``: what competed with the probe while it ran (compute and memory sections).
    - ``steal_fraction``: the change of the steal column of /proc/stat's "cpu" line over the
      change of its time columns user .. steal (guest and guest_nice are left out of the total:
      the kernel already counts them in user and nice); null when unavailable.
    - ``throttled_s``: seconds this process's cgroups were throttled by their CPU quota during
      the probe: the largest change over the cgroup and its ancestors of ``cpu.stat``'s
      ``throttled_usec`` (v2) or ``throttled_time`` (v1, ns); null when unavailable.
    - ``cpu_wall``: ``compute.cpu_wall`` (null when the compute probe failed).
- ``seconds``: the wall time the whole probe took.
- ``errors``: one string per probe section that failed (usually empty).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

PROBE_VERSION = 1
TRIALS = 7
MATMUL_N = 384
COPY_BYTES = 64 * 1024 * 1024
BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
DL_FLAGS = frozenset({
    "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16",
    "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8", "avx_vnni", "sse4_2",
})
GPU_QUERY = ("index,name,memory.total,clocks.max.sm,clocks.max.mem,power.limit,ecc.mode.current,"
             "pcie.link.gen.max,pcie.link.width.max,driver_version,mig.mode.current")
GPU_KEYS = ("index", "name", "memory_mib", "sm_clock_max_mhz", "mem_clock_max_mhz", "power_limit_w",
            "ecc", "pcie_gen", "pcie_width", "driver", "mig")
GPU_TEXT_KEYS = frozenset({"name", "ecc", "driver", "mig"})
NVIDIA_SMI_TIMEOUT_S = 20.0
SYS_CPU = "/sys/devices/system/cpu"
Trials = tuple[list[float], float, float]  # rates per trial, CPU seconds, wall seconds
Worker = Callable[[int, int, threading.Barrier], Any]  # (slot, cpu, barrier) -> result
CGROUP_ROOT = "/sys/fs/cgroup"


# --- small readers ----------------------------------------------------------------------------

def read_text(path: str) -> str | None:
    """The file's text, or None when it cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None


def parse_cpu_list(text: str) -> set[int]:
    """CPU numbers from a kernel list such as "0-3,8,10-11"."""
    out: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def allowed_cpus() -> list[int]:
    """The CPUs this process may run on, sorted."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def pin_current_thread(cpu: int) -> None:
    """Pin the calling thread to one CPU (on Linux pid 0 names the calling thread); best effort."""
    try:
        os.sched_setaffinity(0, {cpu})
    except (AttributeError, OSError, ValueError):
        pass


# --- cpu ------------------------------------------------------------------------------------

def parse_cpuinfo(text: str) -> dict[int, dict[str, str]]:
    """/proc/cpuinfo's blocks keyed by their "processor" number."""
    blocks: dict[int, dict[str, str]] = {}
    current: dict[str, str] = {}
    for line in text.splitlines() + [""]:
        if not line.strip():
            proc = current.get("processor", "")
            if proc.isdigit():
                blocks[int(proc)] = current
            current = {}
            continue
        key, sep, value = line.partition(":")
        if sep:
            current[key.strip()] = value.strip()
    return blocks


def threads_per_core(cpus: Iterable[int]) -> int:
    """The most CPUs of the allowed set that share one physical core (1 without sysfs)."""
    allowed = set(cpus)
    best = 1
    for cpu in allowed:
        text = read_text(f"{SYS_CPU}/cpu{cpu}/topology/thread_siblings_list")
        if text is None:
            continue
        try:
            best = max(best, len(parse_cpu_list(text) & allowed))
        except ValueError:
            continue
    return best


def max_mhz(cpu: int) -> float | None:
    """cpuinfo_max_freq (kHz) / 1000 of one CPU, or None."""
    text = read_text(f"{SYS_CPU}/cpu{cpu}/cpufreq/cpuinfo_max_freq")
    try:
        return round(int(text.strip()) / 1000.0, 1) if text else None
    except ValueError:
        return None


def cgroup_cpu_dirs() -> tuple[str, list[str]] | None:
    """("v1" or "v2", this process's cpu cgroup directories from its own up to the root).

    Levels that do not exist in this mount namespace are skipped, so in a container without a
    cgroup namespace the walk still ends at the mount's root, which is the container's cgroup.
    """
    text = read_text("/proc/self/cgroup")
    if text is None:
        return None
    v2_path: str | None = None
    for line in text.splitlines():
        parts = line.strip().split(":", 2)
        if len(parts) != 3:
            continue
        hier, controllers, path = parts
        if hier == "0" and controllers == "":
            v2_path = path
            continue
        if "cpu" in controllers.split(","):
            for mount in ("cpu,cpuacct", "cpu", "cpuacct,cpu"):
                base = f"{CGROUP_ROOT}/{mount}"
                if os.path.exists(f"{base}/cpu.cfs_quota_us"):
                    return "v1", _levels(base, path)
    if v2_path is not None:
        for base in (CGROUP_ROOT, f"{CGROUP_ROOT}/unified"):
            if os.path.exists(f"{base}/cgroup.controllers"):
                return "v2", _levels(base, v2_path)
    return None


def _levels(base: str, path: str) -> list[str]:
    parts = [p for p in path.split("/") if p and p not in (".", "..")]
    dirs = [os.path.join(base, *parts[:i]) for i in range(len(parts), -1, -1)]
    return [d for d in dirs if os.path.isdir(d)]


def cpu_quota(cgroup: tuple[str, list[str]] | None) -> float | None:
    """The smallest CPU quota in cores over the cgroup levels; None when unlimited or unknown."""
    if cgroup is None:
        return None
    version, dirs = cgroup
    quotas: list[float] = []
    for d in dirs:
        try:
            if version == "v2":
                text = read_text(f"{d}/cpu.max")
                if text is None:
                    continue
                fields = text.split()
                if len(fields) < 2 or fields[0] == "max":
                    continue
                quota, period = float(fields[0]), float(fields[1])
                if quota > 0 and period > 0:
                    quotas.append(quota / period)
            else:
                q, p = read_text(f"{d}/cpu.cfs_quota_us"), read_text(f"{d}/cpu.cfs_period_us")
                if q is None or p is None:
                    continue
                if int(q) > 0 and int(p) > 0:
                    quotas.append(int(q) / int(p))
        except ValueError:
            continue
    return round(min(quotas), 2) if quotas else None


def throttled_seconds(cgroup: tuple[str, list[str]] | None) -> dict[str, float]:
    """Cumulative throttled seconds per cgroup level (from cpu.stat), where readable."""
    out: dict[str, float] = {}
    if cgroup is None:
        return out
    version, dirs = cgroup
    key, scale = ("throttled_usec", 1e-6) if version == "v2" else ("throttled_time", 1e-9)
    for d in dirs:
        text = read_text(f"{d}/cpu.stat")
        for line in (text or "").splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                try:
                    out[d] = int(value) * scale
                except ValueError:
                    pass
    return out


def proc_stat_cpu() -> tuple[int, int] | None:
    """(steal, total of user .. steal) jiffies from /proc/stat's "cpu" line, or None."""
    text = read_text("/proc/stat")
    for line in (text or "").splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu" and len(fields) >= 9:
            try:
                values = [int(v) for v in fields[1:9]]
            except ValueError:
                return None
            return values[7], sum(values)
    return None


def cpu_facts(cpus: list[int], cgroup: tuple[str, list[str]] | None) -> dict[str, Any]:
    """The ``cpu`` section."""
    blocks = parse_cpuinfo(read_text("/proc/cpuinfo") or "")
    first = blocks.get(cpus[0]) if cpus else None
    if first is None and blocks:
        first = blocks[min(blocks)]
    first = first or {}
    flags = set((first.get("flags") or first.get("Features") or "").split())
    mhz: list[float] = []
    for cpu in cpus:
        try:
            mhz.append(float(blocks[cpu]["cpu MHz"]))
        except (KeyError, ValueError):
            continue
    return {
        "model_name": first.get("model name"),
        "vendor": first.get("vendor_id"),
        "family": first.get("cpu family"),
        "model": first.get("model"),
        "stepping": first.get("stepping"),
        "flags": sorted(flags & DL_FLAGS),
        "cpus": len(cpus),
        "cpu_list": cpus,
        "threads_per_core": threads_per_core(cpus),
        "mhz": round(statistics.median(mhz), 1) if mhz else None,
        "max_mhz": max_mhz(cpus[0]) if cpus else None,
        "cpu_quota": cpu_quota(cgroup),
        "hypervisor": "hypervisor" in flags,
    }


def memory_gib() -> float | None:
    """MemTotal in GiB (1 decimal), or None."""
    for line in (read_text("/proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            try:
                return round(int(line.split()[1]) / (1024 * 1024), 1)
            except (IndexError, ValueError):
                return None
    return None


# --- gpus -----------------------------------------------------------------------------------

def _gpu_value(key: str, raw: str) -> Any:
    value = raw.strip()
    if not value or value.upper() in ("N/A", "NA") or (value.startswith("[") and value.endswith("]")):
        return None
    if key in GPU_TEXT_KEYS:
        return value
    try:
        return int(value)
    except ValueError:
        try:
            return float(value)
        except ValueError:
            return value


def parse_gpu_csv(text: str) -> list[dict[str, Any]]:
    """The ``gpus`` list from nvidia-smi's csv,noheader,nounits answer to GPU_QUERY."""
    gpus = []
    for row in csv.reader(text.splitlines(), skipinitialspace=True):
        if len(row) != len(GPU_KEYS):
            continue
        gpus.append({key: _gpu_value(key, raw) for key, raw in zip(GPU_KEYS, row)})
    return gpus


def _nvidia_smi(args: list[str]) -> str | None:
    try:
        proc = subprocess.run(["nvidia-smi", *args], capture_output=True, text=True,
                              timeout=NVIDIA_SMI_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def gpu_facts() -> tuple[list[dict[str, Any]], str | None]:
    """(``gpus``, ``gpu_topology``)."""
    text = _nvidia_smi([f"--query-gpu={GPU_QUERY}", "--format=csv,noheader,nounits"])
    if text is None:
        return [], None
    gpus = parse_gpu_csv(text)
    topo = _nvidia_smi(["topo", "-m"]) if gpus else None
    return gpus, (topo.rstrip() if topo else None)


# --- timed probes -------------------------------------------------------------------------

def load_numpy() -> ModuleType | None:
    """numpy with single-threaded BLAS (the variables are forced to 1 before its first import)."""
    if "numpy" not in sys.modules:
        for var in BLAS_THREAD_VARS:
            os.environ[var] = "1"
    try:
        import numpy
    except ImportError:
        return None
    return numpy


def calibrate(step: Callable[[], object], target_s: float) -> int:
    """How many calls of ``step`` take about ``target_s`` seconds (at least 1)."""
    step()  # warm-up: first-touch pages, BLAS initialisation
    reps = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(reps):
            step()
        elapsed = time.perf_counter() - t0
        if elapsed >= target_s / 4 or reps >= 1 << 24:
            return max(1, round(reps * target_s / max(elapsed, 1e-9)))
        reps *= 2


def _run_threads(cpus: list[int], worker: Worker) -> list[Any]:
    """Run ``worker(slot, cpu, barrier)`` in one thread per CPU; re-raise a worker's error."""
    barrier = threading.Barrier(len(cpus))
    results: list[Any] = [None] * len(cpus)
    errors: list[BaseException] = []

    def body(slot: int, cpu: int) -> None:
        pin_current_thread(cpu)
        try:
            results[slot] = worker(slot, cpu, barrier)
        except BaseException as exc:  # noqa: BLE001 - reported by the caller
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=body, args=(i, c), daemon=True) for i, c in enumerate(cpus)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    real = [e for e in errors if not isinstance(e, threading.BrokenBarrierError)]
    if real or errors:
        raise (real or errors)[0]
    return results


def _timed_trials(step: Callable[[], object], reps: int, work: float,
                  barrier: threading.Barrier) -> Trials:
    """(rate per trial, CPU seconds, wall seconds) of TRIALS trials of ``reps`` steps."""
    rates: list[float] = []
    cpu_s = wall_s = 0.0
    for _ in range(TRIALS):
        barrier.wait(timeout=120)
        w0, c0 = time.perf_counter(), time.thread_time()
        for _ in range(reps):
            step()
        c1, w1 = time.thread_time(), time.perf_counter()
        rates.append(work * reps / max(w1 - w0, 1e-9))
        cpu_s += c1 - c0
        wall_s += w1 - w0
    return rates, cpu_s, wall_s


def compute_probe(np: ModuleType | None, cpus: list[int], seconds: float) -> dict[str, Any]:
    """The ``compute`` section."""
    trial_s = seconds / (2 * TRIALS)
    if np is not None:
        n = MATMUL_N
        kind, unit, work = f"numpy-sgemm-{n}", "GFLOP/s per core", 2.0 * n ** 3 / 1e9

        def worker(slot: int, cpu: int, barrier: threading.Barrier) -> Trials:
            rng = np.random.default_rng(slot)
            a = rng.standard_normal((n, n), dtype=np.float32)
            b = rng.standard_normal((n, n), dtype=np.float32)
            c = np.empty((n, n), dtype=np.float32)

            def step() -> None:
                np.matmul(a, b, out=c)

            return _timed_trials(step, calibrate(step, trial_s), work, barrier)
        threads = cpus
    else:
        loop = 10_000
        kind, unit, work = "python-loop", "Mops/s per core", loop / 1e6

        def worker(slot: int, cpu: int, barrier: threading.Barrier) -> Trials:
            def step() -> None:
                x = 0
                for i in range(loop):
                    x += i

            return _timed_trials(step, calibrate(step, trial_s), work, barrier)
        threads = cpus[:1]
    per_thread = _run_threads(threads, worker)
    trials = [round(statistics.median(r[0][t] for r in per_thread), 3) for t in range(TRIALS)]
    cpu_s = sum(r[1] for r in per_thread)
    wall_s = sum(r[2] for r in per_thread)
    return {
        "kind": kind, "unit": unit, "threads": len(threads), "trials": trials,
        "median": round(statistics.median(trials), 3),
        "best": round(max(trials), 3),
        "cpu_wall": round(cpu_s / wall_s, 3) if wall_s > 0 else None,
    }


def memory_probe(np: ModuleType, cpu: int, seconds: float) -> dict[str, Any]:
    """The ``memory`` section: np.copyto between two 64 MiB float32 arrays on one pinned thread."""
    trial_s = seconds / (8 * TRIALS)

    def worker(slot: int, cpu_: int, barrier: threading.Barrier) -> list[float]:
        count = COPY_BYTES // 4
        src = np.ones(count, dtype=np.float32)
        dst = np.empty(count, dtype=np.float32)
        dst.fill(0.0)

        def step() -> None:
            np.copyto(dst, src)

        return _timed_trials(step, calibrate(step, trial_s), 2.0 * COPY_BYTES / 1e9, barrier)[0]

    rates = _run_threads([cpu], worker)[0]
    trials = [round(r, 3) for r in rates]
    return {"kind": "numpy-copy-64MiB", "unit": "GB/s", "trials": trials,
            "median": round(statistics.median(trials), 3)}


# --- main -----------------------------------------------------------------------------------

def probe(seconds: float = 1.5) -> dict[str, Any]:
    """Run every section and return the JSON object (see the module docstring)."""
    start = time.perf_counter()
    errors: list[str] = []

    def guarded(name: str, fn: Callable[[], Any], default: Any = None) -> Any:
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - a failed section is reported, not fatal
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
            return default

    cpus = allowed_cpus()
    cgroup = guarded("cgroup", cgroup_cpu_dirs)
    cpu = guarded("cpu", lambda: cpu_facts(cpus, cgroup))
    mem = guarded("memory_gib", memory_gib)
    gpus, topo = guarded("gpus", gpu_facts, ([], None))
    np = guarded("numpy", load_numpy)

    stat0, thr0 = proc_stat_cpu(), throttled_seconds(cgroup)
    compute = guarded("compute", lambda: compute_probe(np, cpus, seconds))
    memory = None
    if np is not None:
        memory = guarded("memory", lambda: memory_probe(np, cpus[0], seconds))
    stat1, thr1 = proc_stat_cpu(), throttled_seconds(cgroup)

    steal = None
    if stat0 and stat1 and stat1[1] > stat0[1]:
        steal = round((stat1[0] - stat0[0]) / (stat1[1] - stat0[1]), 4)
    deltas = [thr1[d] - thr0[d] for d in thr1 if d in thr0]
    return {
        "probe_version": PROBE_VERSION,
        "host": socket.gethostname(),
        "cpu": cpu,
        "memory_gib": mem,
        "gpus": gpus,
        "gpu_topology": topo,
        "compute": compute,
        "memory": memory,
        "contention": {
            "steal_fraction": steal,
            "throttled_s": round(max(deltas), 4) if deltas else None,
            "cpu_wall": compute.get("cpu_wall") if compute else None,
        },
        "seconds": round(time.perf_counter() - start, 3),
        "errors": errors,
    }


def main(argv: list[str] | None = None) -> int:
    """Command line: print or write the probe's JSON object."""
    parser = argparse.ArgumentParser(
        description="Hardware fingerprint of this node (one JSON object).")
    parser.add_argument("--seconds", type=float, default=1.5, help="about how long the probe takes")
    parser.add_argument("--output", help="write the JSON here instead of stdout")
    args = parser.parse_args(argv)
    if not args.seconds > 0:
        parser.error("--seconds must be positive")
    text = json.dumps(probe(args.seconds)) + "\n"
    if args.output:
        tmp = f"{args.output}.tmp{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, args.output)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
