"""Kineto's Chrome trace format, as ``torch.profiler`` exports it (``rank<R>.json``, or ``.json.gz``), read
per profiled step (``ProfilerStep#k``): each CPU operator's self time and count, each GPU kernel's time and
count, the time inside collectives, and on GPUs the step's compute, communication, memory-copy and idle
shares (Holistic Trace Analysis's temporal breakdown, computed the same way)."""
from __future__ import annotations

import gzip
import json
import re
import zlib
from collections import defaultdict
from pathlib import Path

from ..profile import BETWEEN, OpFigure, RankProfile, StepProfile, TraceError, is_collective, is_comm_kernel

STEP_PREFIX = "ProfilerStep#"
CPU_CATS = ("cpu_op", "user_annotation", "python_function")
MARK_CATS = ("user_annotation", "cpu_op")  # where the profiler's step markers are the steps
KERNEL_CATS = ("kernel",)
MEMORY_CATS = ("gpu_memcpy", "gpu_memset")
RUNTIME_CATS = ("cuda_runtime", "cuda_driver")
RANK_FILE = re.compile(r"^rank(\d+)\.json(\.gz)?$")  # torch.profiler's export per rank (node/workloads/torchprofile.py)


class KinetoReader:
    """The TraceReader of torch.profiler's Chrome traces: ``rank<R>.json`` or ``rank<R>.json.gz``."""

    format = "kineto"
    files = "rank<R>.json (or .json.gz)"

    def rank_of(self, path: Path) -> int | None:
        m = RANK_FILE.match(path.name)
        return int(m.group(1)) if m else None

    def read(self, path: Path, rank: int) -> RankProfile:
        return read(path, rank)


def read(path: Path, rank: int) -> RankProfile:
    """The trace at ``path`` (JSON, or gzipped JSON where its name ends in .gz, as the profiler writes either)
    as rank ``rank``'s profile; TraceError names the file and what is wrong."""
    try:
        raw = path.read_bytes()
        doc = json.loads(gzip.decompress(raw) if path.name.endswith(".gz") else raw)
    except (OSError, EOFError, zlib.error, UnicodeDecodeError, json.JSONDecodeError, RecursionError,
            MemoryError) as exc:
        raise TraceError(f"rank {rank}'s trace {path}: cannot be read ({exc})") from None
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc if isinstance(doc, list) else None
    if not isinstance(events, list):
        raise TraceError(f"rank {rank}'s trace {path}: not a Chrome trace (no traceEvents list)")
    try:
        return RankProfile(rank, profile_events(events, f"rank {rank}'s trace {path}"), str(path))
    except TraceError:
        raise  # (a ValueError: said as it is)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise TraceError(f"rank {rank}'s trace {path}: an event the reader does not understand ({exc})") from None


def profile_events(events: list, source: str) -> list[StepProfile]:
    """The steps of a trace's events (complete events, ``ph`` X)."""
    spans = [e for e in events if isinstance(e, dict) and e.get("ph") == "X" and _timed(e)]
    # the CPU's markers: a CUDA trace also has each step's copy on the GPU's timeline (gpu_user_annotation)
    marks = sorted((e for e in spans if str(e.get("name", "")).startswith(STEP_PREFIX) and e.get("cat") in MARK_CATS),
                   key=lambda e: e["ts"])
    if not marks:
        raise TraceError(f"{source}: no {STEP_PREFIX} markers (profile with a schedule and call prof.step())")
    steps = [StepProfile(float(m["dur"]) / 1e6) for m in marks]
    bounds = [(float(m["ts"]), float(m["ts"]) + float(m["dur"])) for m in marks]
    _cpu(spans, steps, bounds)
    _gpu(spans, events, steps, bounds)
    return steps


def _timed(e: dict) -> bool:
    return isinstance(e.get("ts"), (int, float)) and isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0


def _step_of(ts: float, bounds: list[tuple[float, float]]) -> int | None:
    for i, (lo, hi) in enumerate(bounds):
        if lo <= ts < hi:
            return i
    return None


def _cpu(spans: list[dict], steps: list[StepProfile], bounds: list[tuple[float, float]]) -> None:
    """Self time per operator, thread by thread; collectives' union per step."""
    threads: dict[tuple, list[dict]] = defaultdict(list)
    for e in spans:
        if e.get("cat") in CPU_CATS:
            threads[(e.get("pid"), e.get("tid"))].append(e)
    collectives: list[list[tuple[float, float]]] = [[] for _ in steps]
    for evs in threads.values():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack: list[list] = []  # [end, event, children's time]
        done: list[tuple[dict, float]] = []
        for e in evs:
            ts, end = float(e["ts"]), float(e["ts"]) + float(e["dur"])
            while stack and stack[-1][0] <= ts:
                top = stack.pop()
                done.append((top[1], top[2]))
            if stack:
                stack[-1][2] += float(e["dur"])
            stack.append([end, e, 0.0])
        done += [(top[1], top[2]) for top in stack]
        for e, inner in done:
            k = _step_of(float(e["ts"]), bounds)
            if k is None:
                continue
            name = str(e.get("name", ""))
            own = max(0.0, float(e["dur"]) - inner) / 1e6
            if name.startswith(STEP_PREFIX):
                name = BETWEEN
            fig = steps[k].ops.setdefault(name, OpFigure())
            fig.seconds += own
            fig.count += 0 if name == BETWEEN else 1
            if is_collective(name):
                lo, hi = float(e["ts"]), min(float(e["ts"]) + float(e["dur"]), bounds[k][1])
                collectives[k].append((lo, hi))
    for k, spans_k in enumerate(collectives):
        steps[k].collective = _union(spans_k) / 1e6


def _gpu(spans: list[dict], events: list, steps: list[StepProfile], bounds: list[tuple[float, float]]) -> None:
    """Kernels per step (by the step that launched them: the runtime call of the same correlation), and the
    step's temporal breakdown on the device: compute, communication not hidden by compute, memory copies
    not hidden by either, idle the rest of the step's time."""
    device = [e for e in spans if e.get("cat") in KERNEL_CATS + MEMORY_CATS]
    if not device:
        return
    launched = {}
    for e in spans:
        if e.get("cat") in RUNTIME_CATS:
            c = (e.get("args") or {}).get("correlation")
            if c is not None:
                launched[c] = float(e["ts"])
    per_step: list[dict[str, list[tuple[float, float]]]] = [defaultdict(list) for _ in steps]
    for e in device:
        c = (e.get("args") or {}).get("correlation")
        k = _step_of(launched.get(c, float(e["ts"])), bounds)
        if k is None:
            continue
        name = str(e.get("name", ""))
        fig = steps[k].kernels.setdefault(name, OpFigure())
        fig.seconds += float(e["dur"]) / 1e6
        fig.count += 1
        kind = "memory" if e.get("cat") in MEMORY_CATS else "communication" if is_comm_kernel(name) else "compute"
        per_step[k][kind].append((float(e["ts"]), float(e["ts"]) + float(e["dur"])))
    for k, kinds in enumerate(per_step):
        if not kinds:
            continue
        total = steps[k].seconds * 1e6
        compute = _union(kinds["compute"])
        comm = _union(kinds["compute"] + kinds["communication"]) - compute
        memory = _union(kinds["compute"] + kinds["communication"] + kinds["memory"]) - compute - comm
        busy = compute + comm + memory
        if kinds["communication"]:  # on GPUs a collective waits in its kernels: the CPU's spans only queue it
            steps[k].collective = _union(kinds["communication"]) / 1e6
        steps[k].shares = {"compute": compute / total, "communication": comm / total, "memory": memory / total,
                           "idle": max(0.0, total - busy) / total}


def _union(spans: list[tuple[float, float]]) -> float:
    """The length of the union of intervals."""
    out, end = 0.0, float("-inf")
    for lo, hi in sorted(spans):
        if hi <= end:
            continue
        out += hi - max(lo, end)
        end = hi
    return out
