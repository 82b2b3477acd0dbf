"""The step-log contract between a workload and the harness, version 1. Standard library only.

Every workload writes its results through this module, and the harness parses them with it: it is
copied to the nodes next to the workload (which imports it as ``steplog``). Rank 0 writes JSON
lines to the file given by ``--output``:

1. one ``meta`` line: ``{"kind": "meta", "contract": 1, ...}`` with at least the fields of
   ``META_FIELDS`` (what ran: model, sizes, world, the warm-up and window lengths actually run,
   the window's start and end on rank 0's clock, and ``frameworks``: package -> version);
2. one ``step`` line per step, warm-up included, numbered from 0: ``step``, ``warmup``,
   ``start``/``end`` (rank 0's clock, seconds), ``rank_times`` (the step's seconds on every rank),
   ``samples`` (global samples of the step) and optionally ``loss``;
3. one ``end`` line: ``steps`` (how many step lines) and ``param_digests``: per rank, after the
   last step, ``[sum, sum of squares]`` of the model's parameters in float64. Ranks whose
   parameters disagree stopped synchronising; such a run would look like perfect scaling, so the
   harness fails it.

Optional meta fields (a log without them is still contract 1; the harness says "not measured"):
``first_step`` and ``memory`` (below; ``first_step["launched"]``: rank 0's launch start on its clock;
``first_step["start"]``: "direct" where the local cluster's direct start, not the engine's launcher, started the
ranks: its time to first step holds no launcher agent's start),
``written`` (rank 0's clock when it wrote the meta line: ``Writer.meta`` adds it; with ``launched`` and the
window, where the launch's seconds went: ``results/phases.py``), ``checkpoint`` (a launch given
``--checkpoint-dir``: the slowest rank's save and load after the window, the bytes written, the format;
``checkpoint_figures``), and ``compile`` for a model trained through a compiler
(``compiled``): the time from the first step to the end of the last warm-up step that compiled, the
compiler's own accounting, its graph breaks and recompilations with what it said of them.

A workload that fails for a reason it can name in a line (a compiler error) prints ``FAILED_MARK``
and that line (``fail``) instead of a traceback; the harness shows that line first.

A file that is empty, truncated, garbled or of another contract version is an error
(``StepLogError``) naming the file and the line. See the README's "Writing a workload".
"""
from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

VERSION = 1
FILE_NAME = "steps.jsonl"
META_FIELDS = ("model", "precision", "batch_size", "world_size", "warmup_iters", "iters", "window",
               "frameworks")
STEP_FIELDS = ("step", "warmup", "start", "end", "rank_times", "samples")
DIGEST_RTOL = 1e-6  # parameters of synchronised ranks are equal; this only absorbs summation order

# Fault hooks every workload gets through this module (for the harness's own tests):
# DLPERF_STEPLOG_FAULT=truncate stops the file in the middle of a step line, =garble writes a line
# that is not JSON. (DLPERF_FAULT and DLPERF_PLANT_SLOWDOWN are read by the workloads themselves.)
FAULT_ENV = "DLPERF_STEPLOG_FAULT"


# ---------------------------------------------------------------- the measurement rules
# Every workload sizes its warm-up and window the same way (the flags in the README's "Writing a
# workload"): warm-up until two steps agree within WARMUP_AGREE, a window of about
# --window-seconds at the warm-up's pace. Rank 0 decides with these and tells the others.
WARMUP_AGREE = 0.10


def warmup_done(times: list[float], least: int, most: int) -> bool:
    """True once ``least`` steps ran and the last two agree, or ``most`` steps ran."""
    if len(times) < least:
        return False
    if most <= least or len(times) >= most:
        return True
    return len(times) >= 2 and abs(times[-1] - times[-2]) <= WARMUP_AGREE * times[-1]


def window_iters(step_seconds: float, iters: int, window_seconds: float, max_iters: int) -> int:
    """Steps in the measured window: ``iters``, or enough to fill ``window_seconds`` at this pace."""
    n = iters
    if window_seconds > 0 and step_seconds > 0:
        n = max(iters, math.ceil(window_seconds / step_seconds))
    return min(n, max_iters) if max_iters > 0 else n


# ---------------------------------------------------------------- live progress (optional)
PROGRESS_MARK = "DLPERF-PROGRESS "


class Progress:
    """Rank 0 prints ``DLPERF-PROGRESS {"phase", "step", "of", "samples_per_s"}`` on stdout, at most
    every ``every`` seconds: the harness shows it as a live line. Host clock only, no device sync:
    the figures are the last interval's pace, for people, never for the measurement."""

    def __init__(self, enabled: bool, samples_per_step: int, every: float = 1.0) -> None:
        self.enabled, self.samples, self.every = enabled, samples_per_step, every
        self._last = (time.perf_counter(), 0)

    def __call__(self, phase: str, step: int, of: int | None = None) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        t0, s0 = self._last
        if now - t0 < self.every and step != of:
            return
        rate = (step - s0) * self.samples / (now - t0) if step > s0 and now > t0 else None
        self._last = (now, step)
        print(PROGRESS_MARK + json.dumps({"phase": phase, "step": step, "of": of, "samples_per_s": rate}),
              flush=True)


# ---------------------------------------------------------------- fault and slow-down hooks
def fault(rank: int, step: int) -> None:
    """Crash on purpose when DLPERF_FAULT='rank:step' names this rank and step (the harness's tests)."""
    spec = os.environ.get("DLPERF_FAULT", "")
    if spec and spec.split(":") == [str(rank), str(step)]:
        print(f"rank {rank}: injected fault at step {step}", file=sys.stderr, flush=True)
        raise RuntimeError(f"injected fault on rank {rank} at step {step}")


def no_sync_fault() -> bool:
    """DLPERF_FAULT=nosync: train without synchronising gradients (the digests must catch it)."""
    return os.environ.get("DLPERF_FAULT") == "nosync"


def planted_slowdown() -> float:
    """DLPERF_PLANT_SLOWDOWN=d (0 <= d < 1): sleep so that throughput drops by d (benchmarks/gate_power.py)."""
    d = float(os.environ.get("DLPERF_PLANT_SLOWDOWN", "0") or 0)
    if not 0 <= d < 1:
        raise SystemExit(f"DLPERF_PLANT_SLOWDOWN={d}: expected a fraction in [0, 1)")
    return d


# ---------------------------------------------------------------- a failure in one line
FAILED_MARK = "DLPERF-FAILED "


def fail(line: str) -> None:
    """Stop this rank with ``line`` (what failed, where, the tool's own first error line) behind
    FAILED_MARK on stderr and exit status 1, without a traceback: the harness shows the line first."""
    print(FAILED_MARK + " ".join(line.split()), file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(1)


def failed_line(text: str) -> str | None:
    """The first FAILED_MARK line of a node's output (without the mark), None where there is none."""
    i = text.find(FAILED_MARK)
    return text[i + len(FAILED_MARK):].split("\n", 1)[0].strip() if i >= 0 else None


# ---------------------------------------------------------------- start-up and memory
# Two figures every workload reports through the meta line (optional fields of contract 1; the
# harness says "not measured" where a log lacks them): "first_step", the time from the launch to the
# end of the first training step on the slowest rank with its parts, and "memory", the largest
# rank's peak memory over the window.
RUN_TAG = "DLPERF_RUN_TAG"  # every process of a launch carries it (clusters/base.py RUN_TAG_ENV)
RANK_START_ENV = "DLPERF_RANK_START"  # "direct": the local cluster's direct start started this rank (rankstart.py)
START_PHASES = ("launcher", "imports", "process_group", "model", "first_step")


def _stat(pid: int | str) -> list[str]:
    """/proc/<pid>/stat's fields from the state on (field 3 is index 0): the command name may hold spaces."""
    with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
        return fh.read().rsplit(")", 1)[1].split()


def process_started(pid: int | str = "self") -> float:
    """A process's start as wall-clock time (its starttime in clock ticks since boot, against the
    uptime: /proc/stat's btime has whole seconds only)."""
    with open("/proc/uptime", encoding="ascii") as fh:
        uptime = float(fh.read().split()[0])
    ticks = int(_stat(pid)[19])  # field 22: starttime
    return time.time() - (uptime - ticks / os.sysconf("SC_CLK_TCK"))


def _tagged(pid: int, tag: str) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return f"{RUN_TAG}={tag}".encode() in fh.read().split(b"\0")
    except OSError:
        return False


def launch_started() -> float:
    """When this rank's launch began on its node: the start of the topmost ancestor that carries the
    run's tag (the node's launch command: torchrun, the local cluster's direct start, horovodrun, the SSH
    watcher), else of this process."""
    tag, pid = os.environ.get(RUN_TAG, ""), os.getpid()
    root = pid
    try:
        while tag:
            parent = int(_stat(root)[1])
            if parent <= 1 or not _tagged(parent, tag):
                break
            root = parent
        return process_started(root)
    except (OSError, ValueError, IndexError):
        return process_started(pid)


class StartClock:
    """This rank's start-up: when its launch and its process began, and when each phase the workload
    marks ended (``mark("imports")``, ``"process_group"``, ``"model"``); the first step's end comes from
    ``Timed.first_step_end``. Wall clock of the node, so that the launcher's own start-up counts."""

    def __init__(self) -> None:
        self.launched = launch_started()
        self.process = process_started()
        self.marks: dict[str, float] = {}

    def mark(self, phase: str) -> None:
        self.marks[phase] = time.time()

    def figures(self, first_step_end: float) -> list[float]:
        """[total, launcher, imports, process group, model, first step] seconds (a phase the workload did
        not mark is 0 and its time counts in the next one), then when the launch began (wall clock)."""
        edges = [self.launched, self.process]
        for phase in START_PHASES[1:-1]:
            edges.append(self.marks.get(phase, edges[-1]))
        edges.append(first_step_end)
        return ([first_step_end - self.launched] + [max(0.0, b - a) for a, b in zip(edges, edges[1:])]
                + [self.launched])


def first_step(per_rank: list[list[float]]) -> dict:
    """The meta line's ``first_step`` from every rank's ``StartClock.figures``: the slowest rank's total
    and parts."""
    rank = max(range(len(per_rank)), key=lambda r: per_rank[r][0])
    total, parts = per_rank[rank][0], per_rank[rank][1:1 + len(START_PHASES)]
    launched = per_rank[0][1 + len(START_PHASES):]  # rank 0's launch start (figures of an older StartClock: none)
    start = os.environ.get(RANK_START_ENV, "")  # set by the direct start for every rank alike (rankstart.py)
    return {"seconds": total, "rank": rank, "parts": dict(zip(START_PHASES, parts)),
            "ranks": [r[0] for r in per_rank], **({"launched": launched[0]} if launched else {}),
            **({"start": start} if start else {})}


class MemoryProbe(Protocol):
    """A rank's peak memory over the window: ``reset()`` at its start, ``peak()`` at its end
    ({"bytes": ..., "kind": ..., "scope": "window" | "process", ...})."""

    def reset(self) -> None: ...

    def peak(self) -> dict: ...


class HostMemory:
    """The process's peak resident set size (VmHWM), its high-water mark reset at the window's start
    (/proc/self/clear_refs, Linux 4.0); where the reset is refused, the peak since the process began."""

    def __init__(self) -> None:
        self.scope = "process"

    def reset(self) -> None:
        try:
            with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
                fh.write("5")
            self.scope = "window"
        except OSError:
            self.scope = "process"

    def peak(self) -> dict:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return {"bytes": int(line.split()[1]) * 1024, "kind": "host_rss", "scope": self.scope}
        return {}


def start_and_memory(gather: Callable[[list[float]], list[list[float]]], start: StartClock, timed: Timed) -> dict:
    """The meta line's ``first_step`` and ``memory`` through a workload's float all-gather (every rank
    calls it; a collective)."""
    firsts = gather(start.figures(timed.first_step_end))
    mine = timed.peak or {}
    peaks = gather([float(mine.get("bytes", 0)), float(mine.get("reserved_bytes", 0))])
    per_rank = [{"bytes": int(b), "kind": mine.get("kind", ""), "scope": mine.get("scope", ""),
                 **({"reserved_bytes": int(r)} if r else {})} for b, r in peaks]
    return {"first_step": first_step(firsts), "memory": peak_memory(per_rank)}


def compile_figures(per_rank: list[dict]) -> dict:
    """The meta line's ``compile`` from every rank's record (``seconds``: its first steps up to the last
    compilation; ``dynamo_seconds``, ``graph_breaks``, ``recompiles`` and their ``breaks`` and
    ``recompile_reasons``: what the compiler said): the slowest rank's times, the most any rank
    counted, and every different thing said (the first ``SAID_AT_MOST``)."""
    rank = max(range(len(per_rank)), key=lambda r: per_rank[r]["seconds"])
    out = {"seconds": per_rank[rank]["seconds"], "rank": rank, "ranks": [p["seconds"] for p in per_rank],
           "steps": per_rank[rank]["steps"],
           "dynamo_seconds": max(p["dynamo_seconds"] for p in per_rank),
           "graph_breaks": max(p["graph_breaks"] for p in per_rank),
           "recompiles": max(p["recompiles"] for p in per_rank),
           "window_compiles": max(p.get("window_compiles", 0) for p in per_rank)}
    for key in ("breaks", "recompile_reasons"):
        out[key] = list(dict.fromkeys(x for p in per_rank for x in p.get(key, [])))[:SAID_AT_MOST]
    out.update({k: v for k, v in per_rank[0].items() if k not in out})  # what every rank shares (the cache)
    return out


SAID_AT_MOST = 10  # a compile record keeps this many different graph breaks and recompilation reasons


def checkpoint_figures(per_rank: list[list[float]], fmt: str, size: int, where: str) -> dict:
    """The meta line's ``checkpoint`` from every rank's ``[save seconds, load seconds]`` (``checkpoints.py``): the
    slowest rank's of each (the checkpoint is written, or read, when the last rank is done), its bytes on disk,
    what wrote it and where."""
    save = max(range(len(per_rank)), key=lambda r: per_rank[r][0])
    load = max(range(len(per_rank)), key=lambda r: per_rank[r][1])
    return {"save_seconds": per_rank[save][0], "load_seconds": per_rank[load][1], "save_rank": save,
            "load_rank": load, "ranks": [[r[0], r[1]] for r in per_rank], "bytes": size, "format": fmt, "dir": where}


def peak_memory(per_rank: list[dict]) -> dict:
    """The meta line's ``memory`` from every rank's ``MemoryProbe.peak``: the largest rank's figure."""
    if not per_rank or any(not p.get("bytes") for p in per_rank):
        return {"not_measured": "a rank reported no peak memory"}
    rank = max(range(len(per_rank)), key=lambda r: per_rank[r]["bytes"])
    out = {"peak_bytes": per_rank[rank]["bytes"], "rank": rank, "ranks": [p["bytes"] for p in per_rank],
           "kind": per_rank[rank].get("kind", ""), "scope": per_rank[rank].get("scope", "")}
    if any("reserved_bytes" in p for p in per_rank):
        out["reserved_bytes"] = max(p.get("reserved_bytes", 0) for p in per_rank)
    return out


# ---------------------------------------------------------------- the warm-up and the window
# One loop for every workload: warm-up steps each timed on their own (synchronised; nothing here is
# measured) until rank 0 says so, then the measured window: a barrier at each end (after a device
# sync), a timestamp per step on every rank, no sync inside a step.
@dataclass
class Timed:
    """One rank's timing of a run: each step's start and end (this rank's clock), own seconds and
    loss, warm-up first; how many steps warmed up and were measured; the window's two barriers."""

    warmup: int
    iters: int
    starts: list[float]
    ends: list[float]
    seconds: list[float]
    losses: list[float]
    window: tuple[float, float]
    first_step_end: float = 0.0  # wall clock (time.time) when this rank's first step ended: time to first step
    peak: dict | None = None  # this rank's peak memory over the window (``MemoryProbe.peak``)
    compile_steps: int = 0  # warm-up steps up to and including the last one that compiled (0: none did)

    @property
    def compile_seconds(self) -> float:
        """From the first step's start to the end of the last warm-up step that compiled (0: none did)."""
        return self.ends[self.compile_steps - 1] - self.starts[0] if self.compile_steps else 0.0


class DeviceClock(Protocol):
    """Device-side timestamps of the window (CUDA events): ``record(k)`` after step k (0: its
    start), ``seconds()`` each step's device time."""

    def record(self, k: int) -> None: ...

    def seconds(self) -> list[float]: ...


def _nothing() -> None:
    pass


def gather_text(gather: Callable[[list[float]], list[list[float]]], text: str) -> list[str]:
    """Every rank's short text (up to 512 bytes) through a workload's float all-gather: the text's
    bytes as floats, padded to one length, decoded back per rank."""
    codes = [float(b) for b in text.encode()[:512].ljust(512)]
    return [bytes(int(c) for c in row).decode(errors="replace").rstrip() for row in gather(codes)]


def time_steps(step: Callable[[], Any], args: Any, rank: int, samples_per_step: int, *,
               agree: Callable[[bool, int], tuple[bool, int]], barrier: Callable[[], None],
               sync: Callable[[], None] = _nothing,
               device_clock: Callable[[int], DeviceClock] | None = None,
               memory: MemoryProbe | None = None, compiled: Callable[[], bool] | None = None) -> Timed:
    """Run the warm-up and the window with the workload's ``step`` (returns its loss: a tensor, or
    a float where the float is the step's host sync) under the flags every workload takes (``args``:
    warmup_iters, max_warmup_iters, iters, window_seconds, max_iters). ``agree(done, window steps)``
    returns rank 0's decision on every rank; ``barrier`` is a collective; ``sync`` waits for the
    device; ``device_clock(steps)`` times the window's steps on the device (GPUs); ``memory`` takes the
    rank's peak memory over the window (default: the process's resident memory, ``HostMemory``);
    ``compiled()`` says whether the step just run compiled anything (a compiled model): the warm-up
    does not end on such a step (unless it reached its most), so the window starts compiled."""
    plant = planted_slowdown()
    progress = Progress(rank == 0, samples_per_step)  # the live line, rank 0 only
    t = Timed(0, args.iters, [], [], [], [], (0.0, 0.0))
    least = max(args.warmup_iters, 1 if args.window_seconds > 0 else 0)  # sizing needs one step's pace
    while least > 0:
        fault(rank, len(t.losses))
        t0 = time.perf_counter()
        t.losses.append(float(step()))  # a host sync: the time is the step's
        sync()
        t.starts.append(t0)
        t.ends.append(time.perf_counter())
        t.seconds.append(t.ends[-1] - t0)
        if len(t.losses) == 1:
            t.first_step_end = time.time()
        fresh = compiled is not None and compiled()
        if fresh:
            t.compile_steps = len(t.losses)
        progress("warmup", len(t.losses))
        # a step that compiled is not steady; an exact warm-up (no most) or its most still ends it
        settled = not fresh or args.max_warmup_iters <= args.warmup_iters or len(t.losses) >= args.max_warmup_iters
        done, t.iters = agree(warmup_done(t.seconds, args.warmup_iters, args.max_warmup_iters) and settled,
                              window_iters(min(t.seconds[-2:]), args.iters, args.window_seconds, args.max_iters))
        if done:
            break
    t.warmup = len(t.losses)
    _window(t, step, rank, plant, progress, barrier, sync, device_clock(t.iters) if device_clock else None,
            memory if memory is not None else HostMemory())
    return t


def _window(t: Timed, step: Callable[[], Any], rank: int, plant: float, progress: Progress,
            barrier: Callable[[], None], sync: Callable[[], None], clock: DeviceClock | None,
            memory: MemoryProbe) -> None:
    """The measured window, appended to ``t``: a barrier at each end, per-rank timestamps inside, the
    rank's peak memory from the first barrier to the last step."""
    step_losses = []
    sync()
    barrier()
    memory.reset()
    w0 = time.perf_counter()
    stamps = [w0]
    if clock is not None:
        clock.record(0)
    for k in range(t.iters):
        fault(rank, t.warmup + k)
        step_losses.append(step())
        if plant:  # sleep d/(1-d) x this step's time: throughput x (1-d); a device step is synced first
            sync()
            time.sleep((time.perf_counter() - stamps[-1]) * plant / (1 - plant))
        if clock is not None:
            clock.record(k + 1)
        stamps.append(time.perf_counter())
        if not t.first_step_end:
            t.first_step_end = time.time()
        progress("window", k + 1, t.iters)
    sync()
    t.peak = memory.peak()
    barrier()
    w1 = time.perf_counter()
    t.seconds += clock.seconds() if clock is not None else [b - a for a, b in zip(stamps, stamps[1:])]
    t.losses += [float(v) for v in step_losses]
    t.starts += stamps[:-1]
    t.ends += stamps[1:-1] + [w1]
    t.window = (w0, w1)


class StepLogError(ValueError):
    """The step log cannot be used; the message names the file and what is wrong with it."""


class Writer:
    """Rank 0's writer: ``meta`` once, ``step`` per step, ``end`` last. A context manager."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fh = open(path, "w", encoding="utf-8")
        self._steps = 0
        self._fault = os.environ.get(FAULT_ENV, "")

    def _write(self, record: dict) -> None:
        self._fh.write(json.dumps(record, allow_nan=False) + "\n")

    def meta(self, **fields) -> None:
        missing = [f for f in META_FIELDS if f not in fields]
        if missing:
            raise ValueError(f"step log meta line lacks {', '.join(missing)} (contract v{VERSION})")
        self._write({"kind": "meta", "contract": VERSION, "written": time.time(), **fields})

    def step(self, *, step: int, warmup: bool, start: float, end: float, rank_times: list[float],
             samples: int, loss: float | None = None) -> None:
        record = {"kind": "step", "step": step, "warmup": warmup, "start": start, "end": end,
                  "rank_times": [float(t) for t in rank_times], "samples": int(samples)}
        if loss is not None and math.isfinite(loss):
            record["loss"] = float(loss)
        if self._fh.closed:  # truncated on purpose (the fault hook): the rest is lost
            return
        if self._fault and self._steps == 1:
            text = json.dumps(record)
            if self._fault == "truncate":
                self._fh.write(text[: len(text) // 2])
                self._fh.close()
                return
            if self._fault == "garble":
                self._fh.write(text.replace('"', "'") + "\n")
                self._steps += 1
                return
        self._write(record)
        self._steps += 1

    def steps(self, timed: Timed, rank_times: list, samples: int) -> None:
        """A ``step`` line for every step of ``timed``, warm-up first; ``rank_times[r][i]``: rank
        r's seconds for step i."""
        for i in range(timed.warmup + timed.iters):
            self.step(step=i, warmup=i < timed.warmup, start=timed.starts[i], end=timed.ends[i],
                      rank_times=[r[i] for r in rank_times], samples=samples, loss=timed.losses[i])

    def end(self, param_digests: list[list[float]]) -> None:
        if not self._fh.closed:
            self._write({"kind": "end", "steps": self._steps,
                         "param_digests": [[_finite_or_none(v) for v in d] for d in param_digests]})

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _finite_or_none(v: float) -> float | None:
    """JSON has no NaN or infinity: a diverged parameter sum is written as null."""
    v = float(v)
    return v if math.isfinite(v) else None


@dataclass
class StepLog:
    """A parsed, complete step log."""

    meta: dict
    steps: list[dict]
    end: dict


def parse(text: str, source: str) -> StepLog:
    """Parse a whole step log; raise StepLogError naming ``source`` and the line at fault."""
    lines = text.splitlines()
    if not lines:
        raise StepLogError(f"{source}: the step log is empty (the workload wrote nothing)")
    if not text.endswith("\n"):
        raise StepLogError(f"{source}: line {len(lines)} is cut off (no newline): the step log is truncated")
    meta: dict | None = None
    steps: list[dict] = []
    end: dict | None = None
    for n, line in enumerate(lines, 1):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise StepLogError(f"{source}: line {n} is not JSON ({exc.msg}): {line[:80]!r}: "
                               "the step log is garbled") from None
        if not isinstance(rec, dict) or "kind" not in rec:
            raise StepLogError(f"{source}: line {n} is not a record with a 'kind': {line[:80]!r}")
        kind = rec["kind"]
        if end is not None:
            raise StepLogError(f"{source}: line {n}: {kind!r} after the 'end' line")
        if n == 1:
            if kind != "meta":
                raise StepLogError(f"{source}: line 1 is {kind!r}; the first line must be 'meta'")
            version = rec.get("contract")
            if version != VERSION:
                raise StepLogError(f"{source}: step-log contract version {version!r}; this harness reads "
                                   f"version {VERSION} (update the workload or pytest-dlperf)")
            _require(rec, META_FIELDS, source, n)
            meta = rec
        elif kind == "step":
            _require(rec, STEP_FIELDS, source, n)
            if rec["step"] != len(steps):
                raise StepLogError(f"{source}: line {n} is step {rec['step']}; expected step {len(steps)}")
            steps.append(rec)
        elif kind == "end":
            _require(rec, ("steps", "param_digests"), source, n)
            if rec["steps"] != len(steps):
                raise StepLogError(f"{source}: the 'end' line counts {rec['steps']} steps; the log has {len(steps)}")
            end = rec
        else:
            raise StepLogError(f"{source}: line {n}: unknown kind {kind!r}")
    if end is None:
        raise StepLogError(f"{source}: no 'end' line after {len(steps)} step(s): the step log is truncated "
                           "(did the workload stop early?)")
    assert meta is not None
    return StepLog(meta=meta, steps=steps, end=end)


def _require(rec: dict, fields: tuple[str, ...], source: str, n: int) -> None:
    missing = [f for f in fields if f not in rec]
    if missing:
        raise StepLogError(f"{source}: line {n} ({rec.get('kind')}) lacks {', '.join(missing)}")


def digests_disagree(digests: list[list[float]], rtol: float = DIGEST_RTOL) -> list[int]:
    """Ranks whose parameter digest differs from rank 0's (empty when all agree)."""
    if not digests:
        return []
    ref = digests[0]

    def differ(a: float | None, b: float | None) -> bool:  # null (not finite) equals only null
        if a is None or b is None:
            return (a is None) != (b is None)
        return abs(a - b) > rtol * max(1.0, abs(b))

    return [r for r, d in enumerate(digests[1:], 1) if len(d) != len(ref) or any(differ(a, b) for a, b in zip(d, ref))]


def check_in_sync(log: StepLog, source: str) -> None:
    """Raise StepLogError when the ranks ended with different parameters."""
    digests = log.end["param_digests"]
    world = log.meta.get("world_size")
    if world is not None and len(digests) != world:
        raise StepLogError(f"{source}: {len(digests)} parameter digest(s) for {world} ranks")
    bad = digests_disagree(digests)
    if bad:
        shown = "; ".join(f"rank {r}: sum {digests[r][0]}" for r in [0, *bad[:3]])
        raise StepLogError(f"{source}: the ranks' parameters disagree after the last step ({shown}): "
                           "gradients were not synchronised, so this run's scaling is not real")
