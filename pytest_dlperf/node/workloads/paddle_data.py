"""Real batches for the PaddlePaddle workload, read the way PaddleClas reads ImageNet: its list file
(``train_list.txt``: a path and a label per line), a ``paddle.io.DataLoader`` with worker processes and a
``DistributedBatchSampler`` per rank, each image decoded, randomly crop-resized and flipped
(``dataset.train_image``) and normalised on the device. Each step's wait for its batch is kept (the input
wait), and the loader alone is timed before training. Runs on the nodes; imports nothing from the harness
(``dataset.py`` is copied beside it)."""
from __future__ import annotations

import os
import random

import numpy as np
import paddle

import dataset  # copied beside this file
from workloadkit import Feed, failing, input_facts  # copied beside every workload

LIST_FILE = "train_list.txt"


def samples(root: str) -> list[tuple[str, int]]:
    """(path, label) of PaddleClas' list file where the dataset has one, else of its class folders."""
    listed = os.path.join(root, LIST_FILE)
    if not os.path.isfile(listed):
        return dataset.image_samples(root)
    out = []
    with open(listed, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            parts = line.split()
            if len(parts) != 2 or not parts[1].isdigit():
                raise dataset.DatasetError(f"{listed}:{n}: expected '<path> <label>', got {line.strip()!r}; fix the "
                                           "line or make the dataset again")
            out.append((os.path.join(root, parts[0]), int(parts[1])))
    return out


class ListSet(paddle.io.Dataset):
    """(uint8 HWC image, label) of each listed JPEG, transformed for training at ``size``."""

    def __init__(self, root: str, size: int) -> None:
        super().__init__()
        self.samples, self.size = samples(root), size

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i: int):  # noqa: ANN204 - (numpy image, numpy label)
        path, label = self.samples[i]
        return dataset.train_image(path, self.size, random), np.int64(label)


class Batches(Feed):
    """The rank's batches from its loader, epoch after epoch, normalised on the device; a file that does not
    read stops the rank naming it."""

    errors = (Exception,)  # a worker's error comes back as another type, its message ending with ours

    def __init__(self, loader: paddle.io.DataLoader, fail, ahead: int = 1) -> None:  # noqa: ANN001 - steplog.fail
        def epoch(k: int) -> paddle.io.DataLoader:
            if k:
                loader.batch_sampler.set_epoch(k)
            return loader

        super().__init__(epoch, fail, ahead)
        self.mean = paddle.to_tensor(dataset.MEAN, dtype="float32").reshape([1, 3, 1, 1])
        self.std = paddle.to_tensor(dataset.STD, dtype="float32").reshape([1, 3, 1, 1])

    def said(self, exc: BaseException) -> str:
        said = [line for line in str(exc).splitlines() if "cannot decode this JPEG" in line]
        return said[-1].split("DatasetError: ", 1)[-1] if said else super().said(exc)

    def prepare(self, batch):  # noqa: ANN001, ANN201 - [images, labels] -> (normalised NCHW, labels)
        images, labels = batch
        x = (paddle.transpose(images, [0, 3, 1, 2]).astype("float32") - self.mean) / self.std
        return x, labels.reshape([-1])


def real_batches(args, rank: int, world: int, fail) -> tuple[Batches, dict]:  # noqa: ANN001 - argparse, steplog.fail
    """The rank's loader over ``args.data_dir`` and what the meta line says of it."""
    with failing(dataset.DatasetError, fail):
        data = ListSet(args.data_dir, args.image_size)
        dataset.enough(args.data_dir, len(data), args.batch_size, world)
    sampler = paddle.io.DistributedBatchSampler(data, batch_size=args.batch_size, num_replicas=world, rank=rank,
                                                shuffle=True, drop_last=True)
    workers = max(0, args.data_workers)
    loader = paddle.io.DataLoader(data, batch_sampler=sampler, num_workers=workers, use_shared_memory=workers > 0)
    facts = input_facts(args, "jpeg", workers, sum(os.path.getsize(p) for p, _ in data.samples),
                        {"samples": len(data)})
    return Batches(loader, fail, ahead=workers * 2 + 1), facts  # (prefetch_factor 2 a worker)
