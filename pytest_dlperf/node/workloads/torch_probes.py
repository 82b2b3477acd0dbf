"""What the torch workload measures beside its steps: the device clock and peak memory of a GPU's window,
a step's FLOPs (torch's FlopCounterMode), the all-reduce bus bandwidth, the ranks' parameter digest, and
what torch.compile did (dynamo's own records: compile time, graph breaks, recompilations). Node-side,
copied beside ``torch_ddp.py``; imports nothing from the harness."""
from __future__ import annotations

import contextlib
import math
import os
import time
import warnings
from collections.abc import Callable

import torch

import steplog  # the step-log contract, copied beside this file
from torch_comm import full


class CudaClock:
    """CUDA events around the window's steps (steplog.DeviceClock): a GPU step's time on the device."""

    def __init__(self, steps: int) -> None:
        self.events = [torch.cuda.Event(enable_timing=True) for _ in range(steps + 1)]

    def record(self, k: int) -> None:
        self.events[k].record()

    def seconds(self) -> list[float]:
        return [a.elapsed_time(b) / 1e3 for a, b in zip(self.events, self.events[1:])]


class CudaMemory:
    """A rank's peak GPU memory over the window (steplog.MemoryProbe): torch's allocator statistics,
    reset at the window's start; the peak allocated is the figure, the peak reserved beside it."""

    def __init__(self, device: torch.device) -> None:
        self.device = device

    def reset(self) -> None:
        torch.cuda.reset_peak_memory_stats(self.device)

    def peak(self) -> dict:
        return {"bytes": torch.cuda.max_memory_allocated(self.device), "kind": "cuda_allocated",
                "reserved_bytes": torch.cuda.max_memory_reserved(self.device), "scope": "window"}


class FirstStepFlops:
    """The step, the first call of it counted by torch's FlopCounterMode: forward and backward
    FLOPs of one rank's batch (the optimizer's elementwise updates are not in its table). Only a
    warm-up step is counted (``enabled``): the counter's per-op bookkeeping never enters the window.
    On CPUs that step's attention runs on SDPA's math kernel: the counter has no formula for the CPU
    flash kernel and would count attention as nothing (the GPU kernels it counts). A compiled model's
    counted step runs eagerly (``torch.compiler.set_stance("force_eager")``): the counter sees aten's
    operators, not the generated kernels, and counts the same FLOPs the eager model does."""

    def __init__(self, step: Callable[[], torch.Tensor], enabled: bool, cuda: bool, after: int = 0,
                 compiled: bool = False) -> None:
        self.step, self.enabled, self.cuda, self.total = step, enabled, cuda, None
        self.after = after  # calls left before the counted one: the first step stays plain (time to first step)
        self.compiled = compiled

    def __call__(self) -> torch.Tensor:
        if not self.enabled or self.total is not None:
            return self.step()
        if self.after > 0:
            self.after -= 1
            return self.step()
        from torch.nn.attention import SDPBackend, sdpa_kernel
        from torch.utils.flop_counter import FlopCounterMode
        kernel = contextlib.nullcontext() if self.cuda else sdpa_kernel([SDPBackend.MATH])
        eager = torch.compiler.set_stance("force_eager") if self.compiled else contextlib.nullcontext()
        with warnings.catch_warnings(), eager, kernel, FlopCounterMode(display=False) as counter:
            # the counter's module hooks are global: torch.compile warns of them for the compiled module
            warnings.filterwarnings("ignore", message=r"Using `torch.compile\(module\)` when there are global hooks")
            loss = self.step()
        self.total = counter.get_total_flops()
        return loss


def parameter_digest(model: torch.nn.Module, device: torch.device) -> torch.Tensor:
    """Sum and sum of squares of every parameter after the last step (equal on every rank in sync;
    a sharded parameter is gathered whole), in float64 slices: a float64 copy of all of VGG-16 at
    once is 1.1 GB of page faults."""
    digest = torch.zeros(2, dtype=torch.float64, device=device)
    with torch.no_grad():
        for p in model.parameters():
            for d in full(p.detach()).flatten().split(1 << 18):
                d = d.double()
                digest[0] += d.sum()
                digest[1] += torch.dot(d, d)
    return digest


BUCKET_BYTES = 25 * 2 ** 20  # DDP's default gradient bucket (bucket_cap_mb=25)
ALLREDUCE_SECONDS = 0.2  # each size is reduced back to back about this long (2 times at least)


def allreduce_bandwidth(comm, device: torch.device, grad_bytes: int, sync: Callable[[], None]) -> list[dict]:
    """All-reduce bus bandwidth on the case's ranks, after the window, as nccl-tests defines it:
    algbw = bytes / time, busbw = algbw x 2(n-1)/n, at the gradient bucket's size (or the whole
    gradient, if smaller) and at 4x that: one timed all-reduce sizes a run of them back to back, timed
    on rank 0's clock from a barrier to a device sync and a barrier. Every rank calls it."""
    out = []
    base = min(BUCKET_BYTES, max(grad_bytes, 4))
    for size in (base, 4 * base):
        t = torch.ones(size // 4, dtype=torch.float32, device=device)
        comm.all_reduce_(t)  # the first one sets up the buffers
        sync()
        comm.barrier()
        t0 = time.perf_counter()
        comm.all_reduce_(t)
        sync()
        one = time.perf_counter() - t0
        # rank 0 decides how many fill ALLREDUCE_SECONDS, so every rank reduces as often
        reps = torch.tensor([min(max(2, math.ceil(ALLREDUCE_SECONDS / max(one, 1e-6))), 10000)],
                            dtype=torch.float64, device=device)
        comm.broadcast_(reps)
        n = int(reps.item())
        comm.barrier()
        t0 = time.perf_counter()
        for _ in range(n):  # back to back, as nccl-tests times them
            comm.all_reduce_(t)
        sync()
        comm.barrier()
        seconds = (time.perf_counter() - t0) / n
        algbw = size / seconds
        out.append({"bytes": size, "seconds": seconds, "algbw": algbw,
                    "busbw": algbw * 2 * (comm.world - 1) / comm.world})
    return out


# ---------------------------------------------------------------- torch.compile


class Dynamo:
    """What torch.compile did in this rank, from dynamo's own records: whether the step just run
    compiled anything (its accounting of compile time grew: the forward's frames and the backward's
    graphs, compiled lazily in the first backward), and after the window the rank's compile record
    for the meta line (``steplog.compile_figures``): dynamo's seconds, the graph breaks its counters
    counted with each break's reason and user-code location, and the recompilations with the guard
    that failed."""

    def __init__(self, cache: dict) -> None:
        from torch._dynamo import utils
        self.utils, self.cache = utils, cache
        self.seen = self.seconds()

    def seconds(self) -> float:
        return float(self.utils.calculate_time_spent().get("total_wall_time", 0.0))

    def compiled(self) -> bool:
        """Whether anything compiled since the last call."""
        now = self.seconds()
        fresh, self.seen = now > self.seen, now
        return fresh

    def record(self, timed: steplog.Timed) -> dict:
        """This rank's compile record, after the window (a compilation in the window is counted)."""
        window = int(self.compiled())
        breaks = [r for r in self.utils.graph_break_reasons if r.graph_break]
        # DDPOptimizer's splits at the buckets are listed as breaks but are not counted as any: its own figure
        splits = [r for r in breaks if r.reason.startswith("DDPOptimizer")]
        said = [break_said(r) for r in breaks if r not in splits]
        failures = [str(f).strip().splitlines()[0] for fs in self.utils.guard_failures.values() for f in fs if str(f).strip()]
        return {"seconds": timed.compile_seconds, "steps": timed.compile_steps, "dynamo_seconds": self.seconds(),
                "graph_breaks": int(sum(self.utils.counters["graph_break"].values())),
                "breaks": list(dict.fromkeys(said)), "recompiles": len(failures),
                "recompile_reasons": list(dict.fromkeys(failures)), "window_compiles": window,
                "graphs": int(self.utils.counters["stats"]["unique_graphs"]), "ddp_splits": len(splits),
                "cache": self.cache}


def break_said(reason) -> str:  # noqa: ANN001 - dynamo's GraphCompileReason
    """A graph break as dynamo gives it: its reason's first line and explanation, at the innermost
    user frame (``file:line in function``)."""
    lines = [ln.strip() for ln in str(reason.reason).splitlines() if ln.strip()]
    said = lines[0] if lines else "graph break"
    explained = next((ln.split(":", 1)[1].strip() for ln in lines[1:] if ln.startswith("Explanation:")), "")
    if explained:
        said += f" ({explained})"
    if reason.user_stack:
        frame = reason.user_stack[-1]
        said += f" at {frame.filename}:{frame.lineno} in {frame.name}"
    return said


def compile_error(exc: BaseException) -> str:
    """Dynamo's first error line: the innermost cause's type and first line (a backend's failure
    wraps the compiler's own error)."""
    inner = getattr(exc, "inner_exception", None) or exc.__cause__ or exc
    first = next((ln.strip() for ln in str(inner).splitlines() if ln.strip()), "")
    return f"{type(inner).__name__}: {first}" if first else type(inner).__name__


def compile_cache() -> dict:
    """Inductor's cache directory for this launch, and whether it was empty (a cold compile): taken
    before the ranks meet, so no rank has compiled into it yet."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir
    where = cache_dir()
    return {"dir": where, "cold": not any(os.scandir(where))}
