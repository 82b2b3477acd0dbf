"""How the torch workload's ranks talk (``--engine``): torch.distributed with DDP or FSDP2 (ACSpeed is
DDP after ``import acspeed``), or Horovod's API (AIACC-Training/Perseus's copy of it). Node-side, copied
beside ``torch_ddp.py``; imports nothing from the harness."""
from __future__ import annotations

import contextlib
import os
from collections.abc import Callable

import torch
import torch.distributed as dist
import torch.nn as nn

ENGINES = ("ddp", "fsdp", "acspeed", "horovod", "perseus")


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


def comm_for(engine: str, cuda: bool) -> DDPComm | HorovodComm:
    """The engine's communication, its process group joined."""
    return (HorovodComm if engine in ("horovod", "perseus") else DDPComm)(engine, cuda)


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


def model_on_cuda(model: nn.Module) -> bool:
    return next(model.parameters()).is_cuda


def _version(dist_name: str) -> str:
    import importlib.metadata
    try:
        return importlib.metadata.version(dist_name)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
