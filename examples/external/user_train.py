"""A user's own training script, as the project did not write it (the external-benchmark tests):
a ResNet-18 (torchvision's layout, defined here) trained on synthetic images with PyTorch DDP
under torchrun, or with Horovod under horovodrun, printing its throughput the way NVIDIA's
DeepLearningExamples do (DLLogger ``DLLL {json}`` records) or Horovod's synthetic benchmark does
(``Iter #i: R img/sec per GPU``, ``Total img/sec on N GPU(s): X +-Y``).

USER_TRAIN_SLOWDOWN=f (0 <= f < 1) makes every step slower by that fraction, as a slower release of
the user's software would be (the gate tests)."""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


def resnet18(classes: int = 1000) -> nn.Module:
    layers, cin = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)], 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
        cin = cout
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, classes))


def dllogger(step, data: dict) -> None:
    now = time.time()
    print("DLLL " + json.dumps({"timestamp": f"{now}", "type": "LOG", "step": step, "data": data}), flush=True)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--arch", default="resnet18")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--amp", action="store_true")
    p.add_argument("--dist", choices=("torch", "horovod"), default="torch")
    p.add_argument("--print", dest="fmt", choices=("dllogger", "horovod"), default="dllogger")
    args = p.parse_args()
    if args.arch != "resnet18":
        raise SystemExit(f"--arch {args.arch}: this script trains resnet18 only")
    slow = float(os.environ.get("USER_TRAIN_SLOWDOWN", "0"))

    model = resnet18()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    if args.dist == "horovod":
        import horovod.torch as hvd

        hvd.init()
        rank, world = hvd.rank(), hvd.size()
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters())
        net = model
    else:
        import torch.distributed as dist

        dist.init_process_group("gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
        net = nn.parallel.DistributedDataParallel(model)
    x = torch.randn(args.batch_size, 3, args.image_size, args.image_size)
    y = torch.randint(0, 1000, (args.batch_size,))
    if rank == 0 and args.fmt == "horovod":
        print(f"Model: {args.arch}\nBatch size: {args.batch_size}\nNumber of GPUs: {world}", flush=True)

    rates = []
    for i in range(args.warmup + args.iters):
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.amp):
            loss = F.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if slow:
            time.sleep((time.perf_counter() - t0) * slow / (1 - slow))
        dt = time.perf_counter() - t0
        per_gpu = args.batch_size / dt
        if i >= args.warmup:
            rates.append(per_gpu)
        if rank == 0 and args.fmt == "dllogger":
            dllogger([0, i], {"train.loss": float(loss), "train.total_ips": per_gpu * world})
        elif rank == 0:
            print(f"Iter #{i}: {per_gpu:.1f} img/sec per GPU", flush=True)
    if rank == 0 and args.fmt == "dllogger":
        dllogger([], {"train.total_ips": statistics.fmean(rates) * world})
    elif rank == 0:
        mean, dev = statistics.fmean(rates), 1.96 * statistics.pstdev(rates)
        print(f"Img/sec per GPU: {mean:.1f} +-{dev:.1f}")
        print(f"Total img/sec on {world} GPU(s): {world * mean:.1f} +-{world * dev:.1f}", flush=True)


if __name__ == "__main__":
    main()
