#!/usr/bin/env python3
"""PaddlePaddle data-parallel training benchmark on synthetic data (or a real dataset, --data real), launched by
``python -m paddle.distributed.launch`` on every node (one process per device, per slot on CPU).

Runs on the nodes and imports nothing from the harness. Models: ResNet-50 and VGG-16 from
``paddle.vision.models`` (no weights downloaded) and ArcFace in PLSC's shape: a ResNet-50 backbone,
a 512-d embedding, an additive angular margin head (s=64, m=0.5) over ``--num-classes`` classes.
Timing, warm-up and the step log (through ``steplog.py``, beside this file) as the torch workload:
no sync inside a measured step, a barrier at each end of the window, a parameter digest per rank.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import sys

import paddle
import paddle.distributed as dist
import paddle.nn as nn
import paddle.nn.functional as F

import checkpoints  # the timed checkpoint, copied beside this file
import steplog  # the step-log contract, copied beside this file
import workloadkit  # the flags every workload takes, copied beside it as steplog.py
from nodefacts import cpu_model  # copied beside this file, as steplog.py

START = steplog.StartClock()  # the launch's and this process's start: time to first step
START.mark("imports")


class PaddleGpuMemory:
    """A rank's peak GPU memory over the window (steplog.MemoryProbe): Paddle's allocator statistics
    (paddle.device.cuda.reset_max_memory_allocated / _reserved, max_memory_allocated / _reserved)."""

    def reset(self) -> None:
        paddle.device.cuda.reset_max_memory_allocated()
        paddle.device.cuda.reset_max_memory_reserved()

    def peak(self) -> dict:
        return {"bytes": int(paddle.device.cuda.max_memory_allocated()), "kind": "paddle_gpu_allocated",
                "reserved_bytes": int(paddle.device.cuda.max_memory_reserved()), "scope": "window"}

MODELS = ("resnet50", "vgg16", "arcface")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    workloadkit.add_arguments(p, MODELS, {"real": "--data-dir through paddle.io.DataLoader (paddle_data.py)"})
    return p.parse_args(argv)


class ArcFace(nn.Layer):
    """PLSC's ArcFace: ResNet-50 features -> 512-d embedding -> cos(theta + m) margin logits x s."""

    def __init__(self, num_classes: int, embedding: int = 512, s: float = 64.0, m: float = 0.5) -> None:
        super().__init__()
        self.backbone = paddle.vision.models.resnet50(num_classes=0, with_pool=True)
        self.embed = nn.Sequential(nn.Flatten(), nn.Linear(2048, embedding), nn.BatchNorm1D(embedding))
        self.weight = self.create_parameter([embedding, num_classes],
                                            default_initializer=nn.initializer.Normal(std=0.01))
        self.s, self.m = s, m

    def forward(self, x: paddle.Tensor, label: paddle.Tensor) -> paddle.Tensor:
        emb = F.normalize(self.embed(self.backbone(x)), axis=1)
        cos = paddle.matmul(emb, F.normalize(self.weight, axis=0)).clip(-1 + 1e-7, 1 - 1e-7)
        target = F.one_hot(label, cos.shape[1]).astype(cos.dtype)
        margin = paddle.cos(paddle.acos(cos) + self.m)
        return self.s * (target * margin + (1 - target) * cos)


def build_model(args: argparse.Namespace) -> nn.Layer:
    if args.model == "arcface":
        return ArcFace(args.num_classes)
    return {"resnet50": paddle.vision.models.resnet50, "vgg16": paddle.vision.models.vgg16}[args.model](
        num_classes=args.num_classes)


class Group:
    """This rank's place in the job and its float all-gather (the barrier, the stop decision and the
    gathered results all go through it)."""

    def __init__(self) -> None:
        dist.init_parallel_env()
        self.rank, self.world = dist.get_rank(), dist.get_world_size()

    def gather(self, values: list[float]) -> list[list[float]]:
        if self.world == 1:  # one process: Paddle sets up no communication group
            return [list(values)]
        t = paddle.to_tensor(values, dtype="float64")
        out: list = []
        dist.all_gather(out, t)
        return [o.numpy().tolist() for o in out]

    def barrier(self) -> None:
        if self.world > 1:
            dist.barrier()

    def agree(self, done: bool, iters: int) -> tuple[bool, int]:
        """Rank 0 decides for everyone whether the warm-up or the window is over."""
        decide = self.gather([float(done), float(iters)])[0]
        return decide[0] > 0, int(decide[1])

    def gather_json(self, info: dict) -> list[dict]:
        """Every rank's short JSON, through the float all-gather."""
        return [json.loads(text) for text in steplog.gather_text(self.gather, json.dumps(info))]


class PaddleCheckpoint:
    """Paddle's way (``checkpoints.Checkpointer``): rank 0 writes the model's and the optimizer's state dicts
    (``paddle.save``: model.pdparams, model.pdopt); every rank reads them back (``paddle.load``, ``set_state_dict``)."""

    format = "paddle.save"

    def __init__(self, model: nn.Layer, opt, rank: int) -> None:  # noqa: ANN001
        self.model, self.opt, self.rank = model, opt, rank

    def save(self, path: str) -> None:
        if self.rank == 0:
            os.makedirs(path, exist_ok=True)
            paddle.save(self.model.state_dict(), os.path.join(path, "model.pdparams"))
            paddle.save(self.opt.state_dict(), os.path.join(path, "model.pdopt"))

    def load(self, path: str) -> None:
        self.model.set_state_dict(paddle.load(os.path.join(path, "model.pdparams")))
        self.opt.set_state_dict(paddle.load(os.path.join(path, "model.pdopt")))


def make_step(args: argparse.Namespace, model: nn.Layer, rank: int, cuda: bool, batches=None):  # noqa: ANN001
    """One training step of DataParallel(model) on this rank's own synthetic batch (or the loader's next,
    ``batches``), under AMP with --precision amp; with the no-sync fault each rank keeps its own gradients.
    Returns (the step, its optimizer)."""
    dp = paddle.DataParallel(model)
    opt = paddle.optimizer.Momentum(0.01, momentum=0.9, parameters=model.parameters(), weight_decay=1e-4)
    use_amp = args.precision == "amp"
    amp_dtype = "float16" if cuda else "bfloat16"
    scaler = paddle.amp.GradScaler(enable=use_amp and cuda)
    paddle.seed(args.seed + 1 + rank)  # each rank its own synthetic batch
    images = paddle.randn([args.batch_size, 3, args.image_size, args.image_size])
    labels = paddle.randint(0, args.num_classes, [args.batch_size])
    nosync = steplog.no_sync_fault()

    def step() -> paddle.Tensor:
        nonlocal images, labels
        if batches is not None:
            images, labels = batches()
        opt.clear_grad()
        with paddle.amp.auto_cast(enable=use_amp, dtype=amp_dtype, level="O1"):
            if nosync:
                with dp.no_sync():
                    loss = _loss(model, images, labels, args.model)
            else:
                loss = _loss(dp, images, labels, args.model)
        if nosync:
            loss.backward()
            opt.step()
        else:
            scaled = scaler.scale(loss)
            scaled.backward()
            scaler.step(opt)
            scaler.update()
        return loss
    return step, opt


def parameter_digest(model: nn.Layer) -> list[float]:
    """Sum and sum of squares of the trainable parameters, in float64 slices (a float64 copy of all of
    VGG-16 at once would be 1.1 GB). Trainable only: BatchNorm's running statistics are parameters in
    Paddle, and each rank keeps its own (DataParallel does not synchronise them)."""
    digest = [0.0, 0.0]
    with paddle.no_grad():
        for p in model.parameters():
            if p.stop_gradient:
                continue
            flat = p.flatten()
            for i in range(0, int(flat.shape[0]), 1 << 18):
                d = flat[i:i + (1 << 18)].astype("float64")
                digest[0] += float(d.sum())
                digest[1] += float((d * d).sum())
    return digest


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cuda = paddle.device.is_compiled_with_cuda() and paddle.device.cuda.device_count() > 0
    paddle.set_device(f"gpu:{int(os.environ.get('FLAGS_selected_gpus', '0').split(',')[0])}" if cuda else "cpu")
    if args.threads > 0:
        os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    group = Group()
    START.mark("process_group")
    rank, world = group.rank, group.world
    paddle.seed(args.seed)  # the same initial parameters on every rank
    model = build_model(args)
    batches, data = None, None
    if args.data == "real":
        from paddle_data import real_batches  # copied beside this file; imports dataset.py

        batches, data = real_batches(args, rank, world, steplog.fail)
        data["loader_samples_per_s"] = [r[0] for r in group.gather([batches.alone(args.batch_size)])]
    step, opt = make_step(args, model, rank, cuda, batches)
    START.mark("model")

    def sync() -> None:
        if cuda:
            paddle.device.synchronize()

    timed = steplog.time_steps(step, args, rank, args.batch_size * world, agree=group.agree,
                               barrier=group.barrier, sync=sync, memory=PaddleGpuMemory() if cuda else None)
    started = steplog.start_and_memory(group.gather, START, timed)
    gathered = group.gather(timed.seconds)
    if data is not None:
        data["wait_seconds"] = group.gather(batches.window_waits(timed.warmup, timed.iters))
    digests = group.gather(parameter_digest(model))
    saved = None
    if args.checkpoint_dir:  # after the digests: a load that puts rank 0's state everywhere would hide a drift
        saved = checkpoints.time_checkpoint(args.checkpoint_dir, PaddleCheckpoint(model, opt, rank), rank,
                                            group.barrier, group.gather)
    ranks = group.gather_json({"host": socket.gethostname(),
                               "device": paddle.device.get_device() if cuda else cpu_model(), "threads": args.threads})
    if rank == 0:
        with steplog.Writer(args.output) as log:
            log.meta(model=args.model, precision=args.precision, batch_size=args.batch_size,
                     image_size=args.image_size, num_classes=args.num_classes,
                     warmup_iters=timed.warmup, iters=timed.iters, window_seconds=args.window_seconds,
                     window={"start": timed.window[0], "end": timed.window[1]}, world_size=world, ranks=ranks,
                     nnodes=int(os.environ.get("PADDLE_NNODES", "1") or 1),
                     frameworks={"paddle": paddle.__version__}, python=platform.python_version(),
                     backend="nccl" if cuda else "gloo",
                     parameters=int(sum(int(p.numel()) for p in model.parameters())), **started,
                     **({"checkpoint": saved} if saved else {}),
                     **({"input": data} if data is not None else {}))
            log.steps(timed, gathered, args.batch_size * world)
            log.end(digests)
    group.barrier()
    return 0


def _loss(net: nn.Layer, images: paddle.Tensor, labels: paddle.Tensor, model: str) -> paddle.Tensor:
    logits = net(images, labels) if model == "arcface" else net(images)
    return F.cross_entropy(logits.astype("float32"), labels)


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
