#!/usr/bin/env python3
"""PyTorch data-parallel training benchmark on synthetic data: DDP (launched by torchrun on every
node, or on the local cluster by its direct start, rankstart.py), ACSpeed (DDP after ``import acspeed``), Horovod or AIACC-Training/Perseus (``horovod.torch``,
``perseus.torch.horovod``; launched by horovodrun/perseusrun on node 0), chosen with ``--engine``.

Models: the seeds' ResNet-50, VGG-16, BERT-base and ArcFace, and ``llama``, a Llama-style decoder
trained on next-token prediction with AdamW (its step log counts tokens: a sample is a token).

This script runs on the nodes and imports nothing from the harness: it can be copied anywhere, with
the modules it imports beside it (``steplog.py``, ``nodefacts.py``, and its own ``torch_models.py``: the
models; ``torch_comm.py``: how the ranks talk; ``torch_probes.py``: what is measured beside the steps,
compile tracking too), and started by hand with the command that ``pytest --dlperf-dryrun`` prints.

Timing, as the seeds' benchmarks time: no barrier and no host synchronisation inside a measured
step. Warm-up steps run until two in a row agree within ``steplog.WARMUP_AGREE`` (at least
``--warmup-iters``, at most ``--max-warmup-iters``; rank 0 decides and tells the others). The
measured window then has ``--iters`` steps, or with ``--window-seconds S`` as many as fill about S
seconds at the warm-up's pace (at least ``--iters``, at most ``--max-iters``). The window starts
and ends with a barrier (and a device synchronisation on GPUs); inside it each rank takes a
timestamp after every step (CUDA events on GPUs), so a step's time is per rank and the window's
wall time is exact: throughput = global samples / (end barrier - start barrier).

Rank 0 writes the step log (``--output``) through ``steplog.py``, the versioned contract copied
next to this file: a ``meta`` line, a ``step`` line per step with the step time seen by every rank,
an ``end`` line with every rank's parameter digest. A window step's ``start``/``end`` are rank 0's
clock; the first window step starts at the start barrier, the last ends at the end barrier.
``--compile`` trains the model as PyTorch 2 users do, through ``torch.compile`` (inductor: C++ on
CPUs, Triton on GPUs): ddp wraps the compiled model in DDP (dynamo's DDPOptimizer splits its graphs
at DDP's buckets), fsdp compiles each block before sharding it, as torchtitan does. The meta line's
``compile`` then says how long the first steps took up to the last compilation, dynamo's own
accounting, and the graph breaks and recompilations dynamo counted, with what it said of them; a
compilation that fails stops the rank with one line naming the host and dynamo's first error line.
Inductor's caches go where ``TORCHINDUCTOR_CACHE_DIR`` says (the harness gives each launch an empty
one, ``--drop-compile-cache``, unless it was asked to keep one).
``--profile-steps N --profile-dir DIR`` (a profiled launch, never counted): N more steps after the window
under the PyTorch profiler, a Chrome trace per rank (``torchprofile.py``), said in the meta line's ``profile``.
``--checkpoint-dir DIR``: after the window, the model's and optimizer's state saved there and loaded back, each
timed on every rank (``checkpoints.py``; the engine's way, ``torch_checkpoint.py``: DCP, or rank 0's torch.save
under Horovod), then removed; said in the meta line's ``checkpoint``. DLPERF_PLANT_SAVE=x makes each save x times longer.
DLPERF_FAULT=rank:step crashes that rank at that step; DLPERF_FAULT=nosync trains without
synchronising gradients (the harness must catch the drift); DLPERF_PLANT_SLOWDOWN=d slows each step.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import platform
import shutil
import socket
import sys
from collections.abc import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.elastic.multiprocessing.errors import record

# the step-log contract and the workload's other modules, copied beside this file (the launchers' workload files)
import checkpoints
import steplog
import workloadkit
from nodefacts import cpu_model
from torch_checkpoint import checkpointer
from torch_comm import ENGINES, comm_for
from torch_models import MODELS, TOKEN_MODELS, build_model, llm_facts, optimizer_for, synthetic_batch
from torch_probes import (CudaClock, CudaMemory, Dynamo, FirstStepFlops, allreduce_bandwidth, compile_cache,
                          compile_error, parameter_digest)

START = steplog.StartClock()  # the launch's and this process's start: time to first step
START.mark("imports")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    workloadkit.add_arguments(p, MODELS, {"real": "--data-dir read by a DataLoader",
                                          "dali": "by an NVIDIA DALI pipeline (torch_data.py)"}, ENGINES)
    p.add_argument("--llm-dim", type=int, default=256, help="llama: model width (heads of 64)")
    p.add_argument("--llm-layers", type=int, default=4, help="llama: decoder blocks")
    p.add_argument("--vocab", type=int, default=32000, help="llama: vocabulary size")
    p.add_argument("--compile", action="store_true",
                   help="train through torch.compile (ddp: DDP wraps the compiled model; fsdp: each block compiled)")
    p.add_argument("--drop-compile-cache", action="store_true",
                   help="with --compile: remove inductor's cache directory (TORCHINDUCTOR_CACHE_DIR) at the end")
    p.add_argument("--profile-steps", type=int, default=0,
                   help="after the window, this many steps more under the PyTorch profiler on every rank (0: none)")
    p.add_argument("--profile-dir", default="", help="with --profile-steps: where each rank writes rank<R>.json")
    return p.parse_args(argv)


class TrainStep:
    """One training step (call it) and what it trains: the engine's wrapped model and its optimizer, whose
    state a checkpoint saves. (A plain class: the tests load this file as a module of no package, where
    dataclasses cannot resolve its annotations.)"""

    def __init__(self, run: Callable[[], torch.Tensor], net: nn.Module, opt: torch.optim.Optimizer) -> None:
        self.run, self.net, self.opt = run, net, opt

    def __call__(self) -> torch.Tensor:
        return self.run()


def make_step(args: argparse.Namespace, model: nn.Module, wrap: Callable, device: torch.device,
              cuda: bool, batches: Callable[[], tuple[torch.Tensor, torch.Tensor]]) -> TrainStep:
    """One training step on the rank's next batch (``batches``: the same synthetic one, or the loader's
    next): the model wrapped by the engine (``wrap``: DDP,
    FSDP, Horovod's optimizer), forward under autocast with amp, loss, backward, optimizer step.
    fp16 with a loss scaler on GPUs, as the seeds' AMP; bf16 for the decoder, as LLMs train, and on CPUs."""
    use_amp = args.precision == "amp"
    amp_dtype = torch.float16 if cuda and args.model not in TOKEN_MODELS else torch.bfloat16
    mixed = amp_dtype if use_amp and cuda and args.model in TOKEN_MODELS else None  # FSDP's parameter dtype
    net, opt, no_sync = wrap(model, steplog.no_sync_fault(), optimizer_for(args.model), mixed=mixed,
                             compiled=args.compile)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp and amp_dtype == torch.float16)
    arcface = args.model == "arcface"
    # Horovod's optimizer all-reduces in step(); with a loss scaler, finish that before unscaling.
    hvd_scaled = scaler.is_enabled() and hasattr(opt, "skip_synchronize")

    def step() -> torch.Tensor:
        images, labels = batches()
        net.zero_grad(set_to_none=True)  # (Horovod's optimizer has no set_to_none)
        with no_sync():
            with torch.autocast(device.type, dtype=amp_dtype, enabled=use_amp):
                logits = net(images, labels) if arcface else net(images)
                # (a decoder's logits are per token: batch x sequence rows)
                loss = F.cross_entropy(logits.float().flatten(0, -2), labels.flatten())
            scaler.scale(loss).backward()
        if hvd_scaled:
            opt.synchronize()
            scaler.unscale_(opt)
            with opt.skip_synchronize():
                scaler.step(opt)
        else:
            scaler.step(opt)
        scaler.update()
        return loss.detach()

    return TrainStep(step, net, opt)


def feed(args: argparse.Namespace, comm, device: torch.device, cuda: bool):  # noqa: ANN001, ANN201
    """The rank's batches and, for real data, what the meta line says of its input (None for synthetic):
    the loader, timed alone first on every rank at once (decoded samples/s per rank)."""
    if args.data == "synthetic":
        batch = synthetic_batch(args, device, cuda)
        return (lambda: batch), None
    from torch_data import real_batches  # copied beside this file; imports dataset.py, Pillow and numpy

    batches, data = real_batches(args, comm.rank, comm.world, device, cuda, steplog.fail)
    comm.barrier()
    alone = batches.alone(args.batch_size)
    data["loader_samples_per_s"] = [float(t.item()) for t in comm.all_gather(
        torch.tensor([alone], dtype=torch.float64, device=device))]
    return batches, data


HOST_MALLOC_ENV = "DLPERF_HOST_MALLOC"  # "keep" (the same as unset) or "default": glibc's malloc as it is


def keep_freed_memory() -> str | None:
    """On CPU nodes, have glibc's malloc keep the memory a step frees for the next step (what it did
    is returned for the meta line; None where nothing was changed).

    By default glibc hands big freed blocks back to the kernel and maps them again at the next step,
    zero-filled: on a 2-core VM a launch of the decoder took about 21 thousand minor page faults a
    step, and in a benchmark's process 30-48 thousand, a quarter of each step in the kernel, a share
    that varied from step to step (docs/measurements.md,
    2026-11-27). torch's own CPU launcher (torch.backends.xeon.run_cpu) preloads TCMalloc or JeMalloc
    for this reason; glibc's own settings do it here without a library on the node. Blocks of up to
    32 MiB (glibc's ceiling) come from the heap and freed memory is not trimmed; bigger blocks (BERT's
    94 MB embedding gradient) are still mapped afresh."""
    asked = os.environ.get(HOST_MALLOC_ENV, "")
    if asked not in ("", "keep", "default"):
        raise SystemExit(f"dlperf: {HOST_MALLOC_ENV}={asked!r} is neither 'keep' nor 'default'; "
                         "unset it to keep freed memory")
    if asked == "default":
        return None
    preload = os.environ.get("LD_PRELOAD", "")
    if any(lib in preload for lib in ("jemalloc", "tcmalloc", "mimalloc")):
        return None  # another allocator is in use: glibc's settings would not apply
    try:
        libc = ctypes.CDLL("libc.so.6")
        m_trim_threshold, m_mmap_threshold = -1, -3  # malloc.h
        if libc.mallopt(m_mmap_threshold, 32 << 20) != 1 or libc.mallopt(m_trim_threshold, 2**31 - 1) != 1:
            return None
    except (OSError, AttributeError):  # not glibc
        return None
    return "glibc: blocks to 32 MiB from the heap, freed memory kept (mallopt)"


CUDNN_BENCHMARK_ENV = "DLPERF_CUDNN_BENCHMARK"  # "1" or unset: cuDNN's autotuner on; "0": its heuristics


def cudnn_benchmark() -> bool:
    """Whether cuDNN times every convolution's algorithms in the first step and keeps the fastest
    (``torch.backends.cudnn.benchmark``). On unless DLPERF_CUDNN_BENCHMARK=0, as convolutional training
    is run (torchvision's reference scripts) and as every GPU figure so far was measured; its cost (most
    of a 23 s first step of resnet50 on an H100, in every launch) against what it buys is measured by
    ``benchmarks/gpu_check.py --only cudnn`` and by an A/B session: --dlperf-candidate
    env=DLPERF_CUDNN_BENCHMARK=0 (docs/budget.md, "GPU nodes")."""
    asked = os.environ.get(CUDNN_BENCHMARK_ENV, "")
    if asked not in ("", "0", "1"):
        raise SystemExit(f"dlperf: {CUDNN_BENCHMARK_ENV}={asked!r} is neither 1 (autotune) nor 0 (heuristics)")
    return asked != "0"


def place(args: argparse.Namespace, local_rank: int, cuda: bool) -> torch.device:
    """Threads, and this rank's device (its local GPU; cuDNN's autotuner as ``cudnn_benchmark`` says)."""
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    if not cuda:
        return torch.device("cpu")
    torch.cuda.set_device(local_rank)
    torch.backends.cudnn.benchmark = cudnn_benchmark()
    return torch.device("cuda", local_rank)


def run_steps(args: argparse.Namespace, step: Callable[[], torch.Tensor], comm, device: torch.device,  # noqa: ANN001
              sync: Callable[[], None], samples: int, dynamo: Dynamo | None) -> tuple[steplog.Timed, FirstStepFlops]:
    """The warm-up and the window on this rank (``steplog.time_steps``), rank 0 deciding for all, a
    warm-up step's FLOPs counted; with a compiled model (``dynamo``) no warm-up ends on a step that
    compiled, and a compiler error stops the rank with one line naming the host and dynamo's error."""
    cuda = device.type == "cuda"
    decide = torch.zeros(2, dtype=torch.float64, device=device)  # rank 0's [warm-up done, window steps]

    def agree(done: bool, iters: int) -> tuple[bool, int]:
        if comm.rank == 0:
            decide[0], decide[1] = float(done), iters
        comm.broadcast_(decide)
        return bool(decide[0] > 0), int(decide[1])

    warm = args.warmup_iters > 0 or args.window_seconds > 0
    if dynamo is not None and warm and args.warmup_iters < 2:
        # a compiled model warms up two steps at least: the first compiles (its time is compile time),
        # the second is counted eagerly; one step counted eagerly would leave the compile to the window
        args.warmup_iters = 2
        args.max_warmup_iters = max(args.max_warmup_iters, 2) if args.max_warmup_iters else 0
    second = max(args.warmup_iters, 1 if args.window_seconds > 0 else 0) >= 2 or (
        args.window_seconds > 0 and args.max_warmup_iters >= 2)  # a second warm-up step will come: count that one
    counted = FirstStepFlops(step, enabled=warm, cuda=cuda, after=1 if second else 0, compiled=dynamo is not None)
    failed = torch._dynamo.exc.TorchDynamoException if dynamo else ()  # a compiled model's compiler errors
    try:
        return steplog.time_steps(counted, args, comm.rank, samples, agree=agree, barrier=comm.barrier, sync=sync,
                                  device_clock=CudaClock if cuda else None,
                                  memory=CudaMemory(device) if cuda else None,
                                  compiled=dynamo.compiled if dynamo else None), counted
    except failed as exc:
        steplog.fail(f"torch.compile failed on {socket.gethostname()} (rank {comm.rank}): {compile_error(exc)}")
        raise  # (fail does not return)


def every_rank(comm, timed: steplog.Timed, device: torch.device) -> dict:  # noqa: ANN001 - DDPComm, HorovodComm
    """What rank 0's meta line takes of every rank (a collective: every rank calls it): its start-up
    figures, its peak memory, and its host, device and threads."""
    cuda = device.type == "cuda"
    starts = comm.all_gather(torch.tensor(START.figures(timed.first_step_end), dtype=torch.float64, device=device))
    return {"starts": [t.tolist() for t in starts], "peaks": comm.all_gather_object(timed.peak or {}),
            "hosts": comm.all_gather_object({"host": socket.gethostname(), "local_rank": comm.local_rank,
                                             "device": torch.cuda.get_device_name(device) if cuda else cpu_model(),
                                             "threads": torch.get_num_threads()})}


# What holds the wrapped model (DDP and its reducer) is kept until the process leaves with os._exit:
# freed when main returns, after destroy_process_group, the reducer drops the last reference to the
# Gloo process group, whose destructor joins Gloo's threads while one of them waits for the GIL to
# drop a tensor (a rank of a compiled 2-rank DDP run hung there for minutes, 2026-11-27).
KEPT: list = []


@record  # under torchrun, its "Root Cause" summary then shows this rank's traceback
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cuda = torch.cuda.is_available()
    if args.profile_steps > 0 and not args.profile_dir:
        raise SystemExit("--profile-steps: give --profile-dir, where each rank writes its trace")
    if args.compile and args.engine not in ("ddp", "fsdp"):
        raise SystemExit(f"--compile: the ddp and fsdp engines train compiled, not --engine {args.engine}")
    cache = compile_cache() if args.compile else None
    comm = comm_for(args.engine, cuda)
    rank, world, local_rank = comm.rank, comm.world, comm.local_rank
    START.mark("process_group")
    device = place(args, local_rank, cuda)
    host_malloc = None if cuda else keep_freed_memory()
    torch.manual_seed(args.seed + rank)

    model = build_model(args.model, args.num_classes, args.image_size,
                        (args.llm_dim, args.llm_layers, args.vocab)).to(device)
    if cuda and args.model not in ("bert-base", *TOKEN_MODELS):
        model = model.to(memory_format=torch.channels_last)
    batches, data = feed(args, comm, device, cuda)
    step = make_step(args, model, comm.wrap, device, cuda, batches)
    KEPT.append(step)  # (its DDP and its reducer) alive until os._exit: see KEPT
    START.mark("model")

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize(device)

    per_sample = args.image_size if args.model in TOKEN_MODELS else 1  # the step log counts tokens for the decoder
    dynamo = Dynamo(cache) if args.compile else None
    timed, counted = run_steps(args, step, comm, device, sync, args.batch_size * per_sample * world, dynamo)
    compiles = comm.all_gather_object(dynamo.record(timed)) if dynamo else None
    profiled = None
    if args.profile_steps > 0:  # a profiled launch (torchrun's): torchprofile.py is copied beside this file then
        import torchprofile
        profiled = comm.all_gather_object(torchprofile.profile_steps(
            step, args.profile_steps, args.profile_dir, rank, cuda, sync))
    if data is not None:
        data["wait_seconds"] = [w.tolist() for w in comm.all_gather(torch.tensor(
            batches.window_waits(timed.warmup, timed.iters), dtype=torch.float64, device=device))]
    gathered = comm.all_gather(torch.tensor(timed.seconds, dtype=torch.float64, device=device))
    ranks = every_rank(comm, timed, device)
    grad_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    allreduce = allreduce_bandwidth(comm, device, grad_bytes, sync) if world > 1 else []
    digests = comm.all_gather(parameter_digest(model, device))
    saved = None
    if args.checkpoint_dir:  # after the digests: a load that puts rank 0's state everywhere would hide a drift
        saved = checkpoints.time_checkpoint(args.checkpoint_dir, checkpointer(comm, step.net, step.opt), rank,
                                            comm.barrier, lambda xs: [t.tolist() for t in comm.all_gather(
                                                torch.tensor(xs, dtype=torch.float64, device=device))])

    if rank == 0:
        with steplog.Writer(args.output) as log:
            log.meta(
                model=args.model, precision=args.precision,
                batch_size=args.batch_size, image_size=args.image_size,
                warmup_iters=timed.warmup, iters=timed.iters, window_seconds=args.window_seconds,
                window={"start": timed.window[0], "end": timed.window[1]},
                world_size=world, ranks=ranks["hosts"],
                local_world_size=comm.local_size, nnodes=world // comm.local_size, engine=args.engine,
                frameworks={"torch": torch.__version__, **comm.versions}, python=platform.python_version(),
                backend=comm.name, wrapper=comm.wrapper, cuda=torch.version.cuda if cuda else None,
                nccl=".".join(map(str, torch.cuda.nccl.version())) if cuda else None,
                cudnn=str(torch.backends.cudnn.version()) if cuda and torch.backends.cudnn.is_available() else None,
                parameters=sum(p.numel() for p in model.parameters()),
                **({"flops_per_sample": counted.total / (args.batch_size * per_sample)} if counted.total else {}),
                **({"allreduce": allreduce, "gradient_bytes": grad_bytes} if allreduce else {}),
                **({"sample": "token", "llm": llm_facts(model, args)} if per_sample > 1 else {}),
                **({"host_malloc": host_malloc} if host_malloc else {}),
                **({"cudnn_benchmark": torch.backends.cudnn.benchmark} if cuda else {}),
                memory=steplog.peak_memory(ranks["peaks"]), first_step=steplog.first_step(ranks["starts"]),
                **({"compile": steplog.compile_figures(compiles)} if compiles else {}),
                **({"checkpoint": saved} if saved else {}),
                **({"input": data} if data is not None else {}),
                **({"profile": {"tool": "torch.profiler", "steps": args.profile_steps, "ranks": profiled}}
                   if profiled else {}),
            )
            log.steps(timed, gathered, args.batch_size * per_sample * world)
            log.end([d.tolist() for d in digests])
    comm.shutdown()
    if args.drop_compile_cache and cache and comm.local_rank == 0:  # after the last barrier: no rank uses it now
        shutil.rmtree(cache["dir"], ignore_errors=True)
    return 0


if __name__ == "__main__":
    code = main() or 0  # @record turns SystemExit(0) (--help) into None
    # Leave without interpreter finalization: Gloo's worker threads can still drop tensors
    # that hold Python references while the interpreter is torn down, and the GIL acquire
    # that follows aborts the process (SIGABRT after a finished run; pytorch/pytorch#190489).
    # Everything this rank writes is closed by now.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
