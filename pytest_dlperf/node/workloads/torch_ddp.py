#!/usr/bin/env python3
"""PyTorch data-parallel training benchmark on synthetic data: DDP (launched by torchrun on every
node), ACSpeed (DDP after ``import acspeed``), Horovod or AIACC-Training/Perseus (``horovod.torch``,
``perseus.torch.horovod``; launched by horovodrun/perseusrun on node 0), chosen with ``--engine``.

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
DLPERF_FAULT=rank:step crashes that rank at that step; DLPERF_FAULT=nosync trains without
synchronising gradients (the harness must catch the drift); DLPERF_PLANT_SLOWDOWN=d slows each step.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import platform
import socket
import sys
from collections.abc import Callable

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.elastic.multiprocessing.errors import record

import steplog  # the step-log contract, copied beside this file
from nodefacts import cpu_model  # copied beside this file, as steplog.py

MODELS = ("resnet50", "vgg16", "bert-base", "arcface")
ENGINES = ("ddp", "acspeed", "horovod", "perseus")


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


def build_model(name: str, num_classes: int, size: int) -> nn.Module:
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
    p.add_argument("--image-size", type=int, required=True, help="image side; sequence length for bert-base")
    p.add_argument("--num-classes", type=int, default=1000, help="classes (ArcFace: identities)")
    p.add_argument("--warmup-iters", type=int, default=5, help="warm-up steps, at least")
    p.add_argument("--max-warmup-iters", type=int, default=0,
                   help="warm-up steps at most, until two agree (0: exactly --warmup-iters)")
    p.add_argument("--iters", type=int, default=20, help="measured steps (the least, with --window-seconds)")
    p.add_argument("--window-seconds", type=float, default=0.0,
                   help="size the window to about this many seconds at the warm-up's pace (0: --iters)")
    p.add_argument("--max-iters", type=int, default=0, help="measured steps at most (0: no cap)")
    p.add_argument("--threads", type=int, default=0, help="intra-op threads per process (0: torch's default)")
    p.add_argument("--seed", type=int, default=0)
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

    def wrap(self, model: nn.Module, nosync: bool):
        """(the module to call, an optimizer over its parameters, a no-sync context factory).

        At world size 1 there is nothing to synchronise, and the model trains without the DDP
        wrapper, as NVIDIA's DeepLearningExamples train on one GPU: DDP's reducer at world 1 cost
        resnet50 bs128 2.6-3.5% (fp32) and 8.5-15% (AMP) of its throughput on an H100 (2026-11-25,
        benchmarks/gpu_reference.py), which the 1n1g figure, the base of speedup and scaling
        efficiency, must not carry."""
        if self.world == 1:
            self.wrapper = "none"
            opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
            return model, opt, contextlib.nullcontext
        self.wrapper = "DistributedDataParallel"
        ddp = nn.parallel.DistributedDataParallel(model, device_ids=[self.local_rank] if model_on_cuda(model) else None)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
        return ddp, opt, (ddp.no_sync if nosync else contextlib.nullcontext)

    def broadcast_(self, t: torch.Tensor) -> None:
        dist.broadcast(t, src=0)

    def barrier(self) -> None:
        dist.barrier()

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

    def wrap(self, model: nn.Module, nosync: bool):
        hvd = self.hvd
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
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


class FirstStepFlops:
    """The step, the first call of it counted by torch's FlopCounterMode: forward and backward
    FLOPs of one rank's batch (the optimizer's elementwise updates are not in its table). Only a
    warm-up step is counted (``enabled``): the counter's per-op bookkeeping never enters the window."""

    def __init__(self, step: Callable[[], torch.Tensor], enabled: bool) -> None:
        self.step, self.enabled, self.total = step, enabled, None

    def __call__(self) -> torch.Tensor:
        if not self.enabled or self.total is not None:
            return self.step()
        from torch.utils.flop_counter import FlopCounterMode
        with FlopCounterMode(display=False) as counter:
            loss = self.step()
        self.total = counter.get_total_flops()
        return loss


def model_on_cuda(model: nn.Module) -> bool:
    return next(model.parameters()).is_cuda


def _version(dist_name: str) -> str:
    import importlib.metadata
    try:
        return importlib.metadata.version(dist_name)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


@record  # torchrun then shows this rank's traceback in its "Root Cause" summary
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cuda = torch.cuda.is_available()
    comm = (HorovodComm if args.engine in ("horovod", "perseus") else DDPComm)(args.engine, cuda)
    rank, world, local_rank = comm.rank, comm.world, comm.local_rank
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    if cuda:
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
        torch.backends.cudnn.benchmark = True
    else:
        device = torch.device("cpu")
    torch.manual_seed(args.seed + rank)

    model = build_model(args.model, args.num_classes, args.image_size).to(device)
    if cuda and args.model != "bert-base":
        model = model.to(memory_format=torch.channels_last)
    nosync = steplog.no_sync_fault()
    net, opt, no_sync = comm.wrap(model, nosync)
    use_amp = args.precision == "amp"
    amp_dtype = torch.float16 if cuda else torch.bfloat16
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp and cuda)

    if args.model == "bert-base":  # synthetic token ids, two classes
        images = torch.randint(0, 30522, (args.batch_size, args.image_size), device=device)
        labels = torch.randint(0, 2, (args.batch_size,), device=device)
    else:
        images = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device=device)
        if cuda:
            images = images.contiguous(memory_format=torch.channels_last)
        labels = torch.randint(0, args.num_classes, (args.batch_size,), device=device)
    arcface = args.model == "arcface"
    # Horovod's optimizer all-reduces in step(); with a loss scaler, finish that before unscaling.
    hvd_scaled = scaler.is_enabled() and hasattr(opt, "skip_synchronize")

    def step() -> torch.Tensor:
        net.zero_grad(set_to_none=True)  # (Horovod's optimizer has no set_to_none)
        with no_sync():
            with torch.autocast(device.type, dtype=amp_dtype, enabled=use_amp):
                logits = net(images, labels) if arcface else net(images)
                loss = F.cross_entropy(logits.float(), labels)
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

    decide = torch.zeros(2, dtype=torch.float64, device=device)  # rank 0's [warm-up done, window steps]

    def agree(done: bool, iters: int) -> tuple[bool, int]:
        if rank == 0:
            decide[0], decide[1] = float(done), iters
        comm.broadcast_(decide)
        return bool(decide[0] > 0), int(decide[1])

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize(device)

    counted = FirstStepFlops(step, enabled=args.warmup_iters > 0 or args.window_seconds > 0)
    timed = steplog.time_steps(counted, args, rank, args.batch_size * world, agree=agree, barrier=comm.barrier,
                               sync=sync, device_clock=CudaClock if cuda else None)
    mine = torch.tensor(timed.seconds, dtype=torch.float64, device=device)
    gathered = comm.all_gather(mine)
    info = {"host": socket.gethostname(), "local_rank": local_rank,
            "device": torch.cuda.get_device_name(device) if cuda else cpu_model(),
            "threads": torch.get_num_threads()}
    hosts = comm.all_gather_object(info)
    digest = torch.zeros(2, dtype=torch.float64, device=device)
    with torch.no_grad():  # every rank's parameters after the last step: equal when in sync
        for p in model.parameters():  # in float64 slices: a copy of it all is 1.1 GB of page faults for VGG-16
            for d in p.detach().flatten().split(1 << 18):
                d = d.double()
                digest[0] += d.sum()
                digest[1] += torch.dot(d, d)
    digests = comm.all_gather(digest)

    if rank == 0:
        with steplog.Writer(args.output) as log:
            log.meta(
                model=args.model, precision=args.precision,
                batch_size=args.batch_size, image_size=args.image_size,
                warmup_iters=timed.warmup, iters=timed.iters, window_seconds=args.window_seconds,
                window={"start": timed.window[0], "end": timed.window[1]},
                world_size=world, ranks=hosts,
                local_world_size=comm.local_size, nnodes=world // comm.local_size, engine=args.engine,
                frameworks={"torch": torch.__version__, **comm.versions}, python=platform.python_version(),
                backend=comm.name, wrapper=comm.wrapper, cuda=torch.version.cuda if cuda else None,
                nccl=".".join(map(str, torch.cuda.nccl.version())) if cuda else None,
                parameters=sum(p.numel() for p in model.parameters()),
                **({"flops_per_sample": counted.total / args.batch_size} if counted.total else {}),
            )
            log.steps(timed, gathered, args.batch_size * world)
            log.end([d.tolist() for d in digests])
    comm.shutdown()
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
