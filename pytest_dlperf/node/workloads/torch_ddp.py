#!/usr/bin/env python3
"""PyTorch data-parallel training benchmark on synthetic data: DDP (launched by torchrun on every
node), ACSpeed (DDP after ``import acspeed``), Horovod or AIACC-Training/Perseus (``horovod.torch``,
``perseus.torch.horovod``; launched by horovodrun/perseusrun on node 0), chosen with ``--engine``.

Models: the seeds' ResNet-50, VGG-16, BERT-base and ArcFace, and ``llama``, a Llama-style decoder
trained on next-token prediction with AdamW (its step log counts tokens: a sample is a token).

This script runs on the nodes and imports nothing from the harness: it can be copied anywhere
and started by hand with the command that ``pytest --dlperf-dryrun`` prints.

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
DLPERF_FAULT=rank:step crashes that rank at that step; DLPERF_FAULT=nosync trains without
synchronising gradients (the harness must catch the drift); DLPERF_PLANT_SLOWDOWN=d slows each step.
"""
from __future__ import annotations

import argparse
import contextlib
import ctypes
import math
import os
import platform
import shutil
import socket
import sys
import time
import warnings
from collections.abc import Callable

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.elastic.multiprocessing.errors import record

import steplog  # the step-log contract, copied beside this file
from nodefacts import cpu_model  # copied beside this file, as steplog.py

START = steplog.StartClock()  # the launch's and this process's start: time to first step
START.mark("imports")

MODELS = ("resnet50", "vgg16", "bert-base", "arcface", "llama")
TOKEN_MODELS = ("llama",)  # a sample is a token: the step log counts tokens, the throughput is tokens/s
ENGINES = ("ddp", "fsdp", "acspeed", "horovod", "perseus")


# ---------------------------------------------------------------- models (torchvision layouts)
class Bottleneck(nn.Module):
    """ResNet v1.5 bottleneck block: the stride sits on the 3x3 convolution."""

    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        width = planes
        self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, planes * self.expansion, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.downsample = None
        if stride != 1 or inplanes != planes * self.expansion:
            self.downsample = nn.Sequential(
                nn.Conv2d(inplanes, planes * self.expansion, 1, stride=stride, bias=False),
                nn.BatchNorm2d(planes * self.expansion),
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = F.relu(self.bn1(self.conv1(x)), inplace=True)
        out = F.relu(self.bn2(self.conv2(out)), inplace=True)
        out = self.bn3(self.conv3(out))
        return F.relu(out + identity, inplace=True)


class ResNet50(nn.Module):
    """ResNet-50 v1.5 (25.6 M parameters with 1000 classes)."""

    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, stride=2, padding=1),
        )
        layers: list[nn.Module] = []
        inplanes = 64
        for planes, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for i in range(blocks):
                layers.append(Bottleneck(inplanes, planes, stride if i == 0 else 1))
                inplanes = planes * Bottleneck.expansion
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512 * Bottleneck.expansion, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class VGG16(nn.Module):
    """VGG-16 (configuration D, 138 M parameters with 1000 classes): the all-reduce dominates."""

    CFG = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M")

    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        channels = 3
        for v in self.CFG:
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(channels, int(v), 3, padding=1), nn.ReLU(inplace=True)]
                channels = int(v)
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(inplace=True), nn.Dropout(),
            nn.Linear(4096, 4096), nn.ReLU(inplace=True), nn.Dropout(),
            nn.Linear(4096, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


class BertBase(nn.Module):
    """BERT-base (12 layers, hidden 768, 12 heads, GELU FFN 3072) for sequence classification."""

    def __init__(self, seq_len: int, num_classes: int = 2, vocab: int = 30522) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, 768)
        self.positions = nn.Embedding(512, 768)
        self.norm = nn.LayerNorm(768, eps=1e-12)
        layer = nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.1, activation="gelu", batch_first=True,
                                           layer_norm_eps=1e-12)
        self.encoder = nn.TransformerEncoder(layer, 12, enable_nested_tensor=False)
        self.pool = nn.Linear(768, 768)
        self.classifier = nn.Linear(768, num_classes)
        self.register_buffer("pos_ids", torch.arange(seq_len)[None, :], persistent=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.norm(self.tokens(ids) + self.positions(self.pos_ids))
        x = self.encoder(x)
        return self.classifier(torch.tanh(self.pool(x[:, 0])))


class ArcFace(nn.Module):
    """PLSC's ArcFace: ResNet-50 features -> 512-d embedding -> cos(theta + m) margin logits x s."""

    def __init__(self, num_classes: int, embedding: int = 512, s: float = 64.0, m: float = 0.5) -> None:
        super().__init__()
        self.backbone = ResNet50(num_classes=1)
        self.backbone.fc = nn.Identity()
        self.embed = nn.Sequential(nn.Linear(2048, embedding), nn.BatchNorm1d(embedding))
        self.weight = nn.Parameter(torch.randn(num_classes, embedding) * 0.01)
        self.s, self.m = s, m

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        emb = F.normalize(self.embed(self.backbone(x)), dim=1)
        cos = F.linear(emb, F.normalize(self.weight, dim=1)).float().clamp(-1 + 1e-7, 1 - 1e-7)
        target = F.one_hot(labels, cos.shape[1]).to(cos.dtype)
        return self.s * (target * torch.cos(torch.acos(cos) + self.m) + (1 - target) * cos)


class Rotary(nn.Module):
    """Rotary position embeddings (RoFormer; Llama's rotate-half form) for heads of ``head_dim``."""

    def __init__(self, seq_len: int, head_dim: int, base: float = 10000.0) -> None:
        super().__init__()
        inv = 1.0 / base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
        angles = torch.outer(torch.arange(seq_len, dtype=torch.float32), inv)
        self.register_buffer("cos", torch.cat([angles.cos()] * 2, dim=-1), persistent=False)
        self.register_buffer("sin", torch.cat([angles.sin()] * 2, dim=-1), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (batch, heads, seq, head_dim)
        half = x.shape[-1] // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return x * self.cos.to(x.dtype) + rotated * self.sin.to(x.dtype)


class DecoderBlock(nn.Module):
    """Pre-norm Llama block: RMSNorm, causal self-attention with rotary positions through
    ``scaled_dot_product_attention``, RMSNorm, SwiGLU feed-forward; no biases."""

    def __init__(self, dim: int, heads: int, hidden: int) -> None:
        super().__init__()
        self.heads = heads
        self.attn_norm, self.ffn_norm = nn.RMSNorm(dim, eps=1e-5), nn.RMSNorm(dim, eps=1e-5)
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)
        self.gate_up = nn.Linear(dim, 2 * hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor, rotary: Rotary) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.attn_norm(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(rotary(q), rotary(k), v, is_causal=True)
        x = x + self.out(y.transpose(1, 2).reshape(b, t, d))
        gate, up = self.gate_up(self.ffn_norm(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up)


class Llama(nn.Module):
    """A Llama-style decoder for next-token prediction: token embedding, ``layers`` blocks of width
    ``dim`` (heads of 64), a final RMSNorm and an untied output projection over ``vocab``."""

    def __init__(self, seq_len: int, dim: int, layers: int, vocab: int) -> None:
        super().__init__()
        heads = max(dim // 64, 1)
        hidden = 256 * -(-(8 * dim // 3) // 256)  # SwiGLU's 8/3 d, rounded up to 256 as Llama does
        self.embed = nn.Embedding(vocab, dim)
        self.rotary = Rotary(seq_len, dim // heads)
        self.blocks = nn.ModuleList(DecoderBlock(dim, heads, hidden) for _ in range(layers))
        self.norm = nn.RMSNorm(dim, eps=1e-5)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x, self.rotary)
        return self.head(self.norm(x))


def build_model(name: str, num_classes: int, size: int, llm: tuple[int, int, int] = (256, 4, 32000)) -> nn.Module:
    """The named model; ``size`` is the image side or the sequence length, ``llm`` the decoder's
    (width, layers, vocabulary)."""
    if name == "llama":
        return Llama(size, *llm)
    if name == "resnet50":
        return ResNet50(num_classes)
    if name == "vgg16":
        return VGG16(num_classes)
    if name == "bert-base":
        return BertBase(size)
    if name == "arcface":
        return ArcFace(num_classes)
    raise SystemExit(f"unknown model {name!r}; choose from {', '.join(MODELS)}")


# ---------------------------------------------------------------- benchmark
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=MODELS, required=True)
    p.add_argument("--engine", choices=ENGINES, default="ddp",
                   help="how gradients are synchronised (horovod, perseus: started by horovodrun/perseusrun)")
    p.add_argument("--precision", choices=("fp32", "amp"), default="fp32")
    p.add_argument("--batch-size", type=int, required=True, help="samples per device per step")
    p.add_argument("--image-size", type=int, required=True, help="image side; sequence length for bert-base and llama")
    p.add_argument("--num-classes", type=int, default=1000, help="classes (ArcFace: identities)")
    p.add_argument("--llm-dim", type=int, default=256, help="llama: model width (heads of 64)")
    p.add_argument("--llm-layers", type=int, default=4, help="llama: decoder blocks")
    p.add_argument("--vocab", type=int, default=32000, help="llama: vocabulary size")
    p.add_argument("--warmup-iters", type=int, default=5, help="warm-up steps, at least")
    p.add_argument("--max-warmup-iters", type=int, default=0,
                   help="warm-up steps at most, until two agree (0: exactly --warmup-iters)")
    p.add_argument("--iters", type=int, default=20, help="measured steps (the least, with --window-seconds)")
    p.add_argument("--window-seconds", type=float, default=0.0,
                   help="size the window to about this many seconds at the warm-up's pace (0: --iters)")
    p.add_argument("--max-iters", type=int, default=0, help="measured steps at most (0: no cap)")
    p.add_argument("--threads", type=int, default=0, help="intra-op threads per process (0: torch's default)")
    p.add_argument("--compile", action="store_true",
                   help="train through torch.compile (ddp: DDP wraps the compiled model; fsdp: each block compiled)")
    p.add_argument("--drop-compile-cache", action="store_true",
                   help="with --compile: remove inductor's cache directory (TORCHINDUCTOR_CACHE_DIR) at the end")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", choices=("synthetic", "real", "dali"), default="synthetic",
                   help="synthetic: one batch made on the device, trained on every step; real: --data-dir read by a "
                        "DataLoader; dali: by an NVIDIA DALI pipeline (torch_data.py)")
    p.add_argument("--data-dir", default="", help="real: the dataset (class folders of JPEGs; a token file for llama)")
    p.add_argument("--data-workers", type=int, default=0, help="real: the DataLoader's worker processes per rank")
    p.add_argument("--drop-caches", action="store_true",
                   help="real: empty the page cache before reading (root), so that the first epoch reads the disk")
    p.add_argument("--profile-steps", type=int, default=0,
                   help="after the window, this many steps more under the PyTorch profiler on every rank (0: none)")
    p.add_argument("--profile-dir", default="", help="with --profile-steps: where each rank writes rank<R>.json")
    p.add_argument("--output", required=True, help="JSON lines written by rank 0")
    return p.parse_args(argv)

# ---------------------------------------------------------------- engines: how ranks talk
class DDPComm:
    """torch.distributed (gloo on CPU, NCCL on GPUs) with DistributedDataParallel; ACSpeed is this
    after ``import acspeed``, which replaces DDP's communication underneath (Alibaba's docs)."""

    def __init__(self, engine: str, cuda: bool) -> None:
        if engine == "acspeed":
            import acspeed  # noqa: F401  (patches torch.distributed; not on PyPI)
        dist.init_process_group(backend="nccl" if cuda else "gloo")
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        self.local_size = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
        self.name = ("acspeed+" if engine == "acspeed" else "") + dist.get_backend()
        self.versions = {"acspeed": _version("acspeed")} if engine == "acspeed" else {}
        self.engine = engine

    def wrap(self, model: nn.Module, nosync: bool, optimizer: Callable, mixed: torch.dtype | None = None,
             compiled: bool = False):
        """(the module to call, ``optimizer`` over its parameters, a no-sync context factory); with
        ``compiled``, DDP wraps ``torch.compile(model)``, as Lightning and Accelerate do: the compiled
        forward runs inside DDP's, where dynamo's DDPOptimizer (on by default) splits its graph at the
        gradient buckets so that their all-reduces overlap the backward.

        At world size 1 there is nothing to synchronise, and the model trains without the DDP
        wrapper, as NVIDIA's DeepLearningExamples train on one GPU: DDP's reducer at world 1 cost
        resnet50 bs128 2.6-3.5% (fp32) and 8.5-15% (AMP) of its throughput on an H100 (2026-11-25,
        benchmarks/gpu_reference.py), which the 1n1g figure, the base of speedup and scaling
        efficiency, must not carry."""
        if self.engine == "fsdp":
            return self.fully_shard(model, nosync, optimizer, mixed, compiled)
        inner = torch.compile(model) if compiled else model
        if self.world == 1:
            self.wrapper = "torch.compile" if compiled else "none"
            return inner, optimizer(model.parameters()), contextlib.nullcontext
        self.wrapper = "DistributedDataParallel" + ("(torch.compile)" if compiled else "")
        ddp = nn.parallel.DistributedDataParallel(inner, device_ids=[self.local_rank] if model_on_cuda(model) else None)
        return ddp, optimizer(ddp.parameters()), (ddp.no_sync if nosync else contextlib.nullcontext)

    def fully_shard(self, model: nn.Module, nosync: bool, optimizer: Callable, mixed: torch.dtype | None,
                    compiled: bool = False):
        """FSDP2 (``torch.distributed.fsdp.fully_shard``): each block, then the root, sharded over the
        ranks, at every world size (the engine's own overhead is part of its figure); with ``compiled``
        each block is compiled first and the compiled block sharded, as torchtitan does (a model without
        blocks, VGG-16, is compiled whole); with ``mixed``
        (a decoder's amp on GPUs) parameters gathered and computed in that dtype, gradients reduced in
        fp32. The seeds' models keep fp32 parameters under autocast: their BatchNorm takes fp16
        input only beside fp32 weights."""
        if nosync:
            raise SystemExit("DLPERF_FAULT=nosync has nothing to show under --engine fsdp: each shard lives "
                             "on one rank, so the ranks' parameters cannot drift apart; use --engine ddp")
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
        kw = {"mp_policy": MixedPrecisionPolicy(param_dtype=mixed, reduce_dtype=torch.float32)} if mixed else {}
        blocks = unit_container(model)
        if compiled and blocks is not None:
            for i, block in enumerate(list(blocks)):
                blocks[i] = torch.compile(block)
        elif compiled:
            model = torch.compile(model)
        for block in shard_units(model):
            fully_shard(block, **kw)
        fully_shard(model, **kw)
        self.wrapper = "fully_shard" + ("(torch.compile per block)" if compiled and blocks is not None else
                                        "(torch.compile)" if compiled else "")
        return model, optimizer(model.parameters()), contextlib.nullcontext

    def broadcast_(self, t: torch.Tensor) -> None:
        dist.broadcast(t, src=0)

    def barrier(self) -> None:
        dist.barrier()

    def all_reduce_(self, t: torch.Tensor) -> None:
        dist.all_reduce(t)

    def all_gather(self, t: torch.Tensor) -> list[torch.Tensor]:
        out = [torch.zeros_like(t) for _ in range(self.world)]
        dist.all_gather(out, t)
        return out

    def all_gather_object(self, obj) -> list:
        out: list = [None] * self.world
        dist.all_gather_object(out, obj)
        return out

    def shutdown(self) -> None:
        dist.barrier()
        dist.destroy_process_group()


class HorovodComm:
    """Horovod's PyTorch API, or AIACC-Training's copy of it (``perseus.torch.horovod``)."""

    def __init__(self, engine: str, cuda: bool) -> None:
        if engine == "perseus":
            import perseus.torch.horovod as hvd  # AIACC-Training, not on PyPI
        else:
            import horovod.torch as hvd
        self.hvd = hvd
        hvd.init()
        self.rank, self.world = hvd.rank(), hvd.size()
        self.local_rank, self.local_size = hvd.local_rank(), hvd.local_size()
        how = "mpi" if hvd.mpi_enabled() else "gloo"
        self.name = f"{engine}-{how}" + ("+nccl" if cuda and hvd.nccl_built() else "")
        self.versions = {engine: _version(engine)}

    def wrap(self, model: nn.Module, nosync: bool, optimizer: Callable, mixed: torch.dtype | None = None,
             compiled: bool = False):
        hvd = self.hvd
        opt = optimizer(model.parameters())
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        hvd.broadcast_optimizer_state(opt, root_rank=0)
        self.wrapper = "none" if nosync else "DistributedOptimizer"
        if not nosync:  # the fault keeps the plain optimizer: every rank steps on its own gradients
            opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters())
        return model, opt, contextlib.nullcontext

    def broadcast_(self, t: torch.Tensor) -> None:
        self.hvd.broadcast_(t, root_rank=0)

    def barrier(self) -> None:
        self.hvd.barrier()

    def all_reduce_(self, t: torch.Tensor) -> None:
        self.hvd.allreduce_(t, op=self.hvd.Sum)

    def all_gather(self, t: torch.Tensor) -> list[torch.Tensor]:
        return list(self.hvd.allgather(t[None].cpu()).to(t.device).unbind(0))

    def all_gather_object(self, obj) -> list:
        return self.hvd.allgather_object(obj)

    def shutdown(self) -> None:
        self.hvd.barrier()
        self.hvd.shutdown()


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


def make_step(args: argparse.Namespace, model: nn.Module, wrap: Callable, device: torch.device,
              cuda: bool, batches: Callable[[], tuple[torch.Tensor, torch.Tensor]]) -> Callable[[], torch.Tensor]:
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

    return step


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


def synthetic_batch(args: argparse.Namespace, device: torch.device, cuda: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(inputs, labels) of one rank's batch, made once: the step trains on it every time."""
    b, size = args.batch_size, args.image_size
    if args.model in TOKEN_MODELS:  # next-token prediction: the labels are the inputs shifted by one
        ids = torch.randint(0, args.vocab, (b, size + 1), device=device)
        return ids[:, :-1].contiguous(), ids[:, 1:].contiguous()
    if args.model == "bert-base":  # token ids, two classes
        return (torch.randint(0, 30522, (b, size), device=device), torch.randint(0, 2, (b,), device=device))
    images = torch.randn(b, 3, size, size, device=device)
    if cuda:
        images = images.contiguous(memory_format=torch.channels_last)
    return images, torch.randint(0, args.num_classes, (b,), device=device)


def llm_facts(model: nn.Module, args: argparse.Namespace) -> dict:
    """The decoder's shape and PaLM's analytic training FLOPs per token, 6N + 12·L·H·Q·T, with N the
    parameters but the input embedding's (a lookup: no FLOPs), as torchtitan counts them."""
    n = sum(p.numel() for p in model.parameters()) - model.embed.weight.numel()
    heads = model.blocks[0].heads
    attention = 12 * args.llm_layers * heads * (args.llm_dim // heads) * args.image_size
    return {"dim": args.llm_dim, "layers": args.llm_layers, "heads": heads, "vocab": args.vocab,
            "non_embedding_parameters": n, "analytic_flops_per_token": 6 * n + attention}


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


def unit_container(model: nn.Module) -> nn.ModuleList | nn.Sequential | None:
    """The container of the model's blocks: a decoder's or BERT's layers, ResNet's bottlenecks; None
    for VGG-16."""
    for owner in (model, getattr(model, "encoder", None), getattr(model, "backbone", None)):
        for name in ("blocks", "layers"):
            found = getattr(owner, name, None) if owner is not None else None
            if isinstance(found, (nn.ModuleList, nn.Sequential)):
                return found
    return None


def shard_units(model: nn.Module) -> list[nn.Module]:
    """The blocks FSDP shards one by one (each gathered only while it runs); none for VGG-16 (its
    root is the unit)."""
    blocks = unit_container(model)
    return list(blocks) if blocks is not None else []


def full(p: torch.Tensor) -> torch.Tensor:
    """A parameter whole: a sharded one (a DTensor) gathered from every rank (a collective)."""
    return p.full_tensor() if hasattr(p, "full_tensor") else p


def optimizer_for(model: str) -> Callable:
    """AdamW for the decoder (as LLM pretraining trains), SGD with momentum for the others (as the
    seeds' image and BERT benchmarks do)."""
    if model in TOKEN_MODELS:
        return lambda params: torch.optim.AdamW(params, lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1)
    return lambda params: torch.optim.SGD(params, lr=0.01, momentum=0.9, weight_decay=1e-4)


def model_on_cuda(model: nn.Module) -> bool:
    return next(model.parameters()).is_cuda


def _version(dist_name: str) -> str:
    import importlib.metadata
    try:
        return importlib.metadata.version(dist_name)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


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


@record  # torchrun then shows this rank's traceback in its "Root Cause" summary
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cuda = torch.cuda.is_available()
    if args.profile_steps > 0 and not args.profile_dir:
        raise SystemExit("--profile-steps: give --profile-dir, where each rank writes its trace")
    if args.compile and args.engine not in ("ddp", "fsdp"):
        raise SystemExit(f"--compile: the ddp and fsdp engines train compiled, not --engine {args.engine}")
    cache = compile_cache() if args.compile else None
    comm = (HorovodComm if args.engine in ("horovod", "perseus") else DDPComm)(args.engine, cuda)
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
            batches.waits[timed.warmup:timed.warmup + timed.iters], dtype=torch.float64, device=device))]
    gathered = comm.all_gather(torch.tensor(timed.seconds, dtype=torch.float64, device=device))
    ranks = every_rank(comm, timed, device)
    grad_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    allreduce = allreduce_bandwidth(comm, device, grad_bytes, sync) if world > 1 else []
    digests = comm.all_gather(parameter_digest(model, device))

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
