"""Real batches for the torch workloads, read the way PyTorch users read them (or through NVIDIA DALI,
``--data dali``): a ``DataLoader`` with worker
processes (pinned memory on GPU nodes) and a ``DistributedSampler`` per rank over ImageNet's class folders
(decode, RandomResizedCrop, flip: ``dataset.train_image``; normalised on the device, as NVIDIA's
DeepLearningExamples ResNet-50 does without DALI) or over a token file's windows (a decoder). Each step's
wait for its batch is kept (the input wait), and the loader alone is timed before training (decoded
samples/s), so a verdict can tell a slower loader from slower training. Runs on the nodes; imports nothing
from the harness (``dataset.py`` is copied beside it)."""
from __future__ import annotations

import os
import random
from collections.abc import Callable

import torch

import dataset  # copied beside this file
from workloadkit import Feed, failing, input_facts  # copied beside every workload



class ImageFolderSet(torch.utils.data.Dataset):
    """(uint8 HWC image, label) of each JPEG of the class folders, transformed for training at ``size``."""

    def __init__(self, root: str, size: int) -> None:
        self.samples, self.size = dataset.image_samples(root), size

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        path, label = self.samples[i]
        # (the DataLoader seeds ``random`` in each worker: every worker draws its own crops)
        return torch.from_numpy(dataset.train_image(path, self.size, random)), label

    def bytes(self) -> int:
        return sum(os.path.getsize(p) for p, _ in self.samples)


class TokenWindows(torch.utils.data.Dataset):
    """Windows of ``seq + 1`` tokens of a uint16 token file, memory-mapped (inputs and next-token labels)."""

    def __init__(self, root: str, seq: int, vocab: int) -> None:
        import numpy as np

        dataset.require(root, "tokens")
        self.path = os.path.join(root, dataset.TOKENS_FILE)
        self.tokens = np.memmap(self.path, dtype=np.uint16, mode="r")
        self.seq = seq
        if len(self.tokens) <= seq:
            raise dataset.DatasetError(f"{self.path}: {len(self.tokens)} tokens, fewer than one window of {seq + 1}; "
                                       "make it again with more (`dlperf data make imagenet DIR --tokens N`)")
        self.vocab = vocab

    def __len__(self) -> int:
        return (len(self.tokens) - 1) // self.seq

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        import numpy as np

        w = torch.from_numpy(np.asarray(self.tokens[i * self.seq:(i + 1) * self.seq + 1], dtype=np.int64))
        if int(w.max()) >= self.vocab:
            raise dataset.DatasetError(f"{self.path}: token {int(w.max())} at window {i} is beyond the decoder's "
                                       f"vocabulary of {self.vocab}; make the file with --vocab {self.vocab}")
        return w[:-1], w[1:]

    def bytes(self) -> int:
        return os.path.getsize(self.path)


class Batches(Feed):
    """The rank's batches from its loader (a DataLoader, or DALI's iterator), on the device (``to_device``); a
    file that does not read stops the rank naming it."""

    errors = (dataset.DatasetError, RuntimeError)

    def __init__(self, epoch: Callable[[int], object], to_device: Callable, fail: Callable[[str], None],
                 ahead: int = 1, source: str = "data loader") -> None:
        super().__init__(epoch, fail, ahead)
        self.prepare, self.source = to_device, source

    def said(self, exc: BaseException) -> str:
        if isinstance(exc, dataset.DatasetError):  # from a worker: its message ends with ours
            return str(exc).strip().splitlines()[-1].split(": ", 1)[-1] if "\n" in str(exc) else str(exc)
        # DALI's pipeline (its message names the file), a loader worker that died
        return f"the {self.source} failed: {' '.join(str(exc).split())[:500]}"


def real_batches(args, rank: int, world: int, device: torch.device, cuda: bool,  # noqa: ANN001 - argparse.Namespace
                 fail: Callable[[str], None]) -> tuple[Batches, dict]:
    """The rank's loader over ``args.data_dir`` and what the meta line says of it (source, format, workers,
    samples, bytes, whether it fits in the page cache): a DataLoader, or with ``--data dali`` a DALI pipeline."""
    if args.data == "dali":
        return dali_batches(args, rank, world, device, cuda, fail)
    with failing(dataset.DatasetError, fail):
        if args.model == "llama":
            data, fmt = TokenWindows(args.data_dir, args.image_size, args.vocab), "tokens"
        else:
            data, fmt = ImageFolderSet(args.data_dir, args.image_size), "jpeg"
        dataset.enough(args.data_dir, len(data), args.batch_size, world)
    sampler = torch.utils.data.DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True, seed=args.seed,
                                                  drop_last=True)
    workers = max(0, args.data_workers)  # as the harness derived it from the node's cores and devices
    loader = torch.utils.data.DataLoader(data, batch_size=args.batch_size, sampler=sampler, num_workers=workers,
                                         pin_memory=cuda, drop_last=True, persistent_workers=workers > 0,
                                         **({"prefetch_factor": 2} if workers else {}))
    to_device = _tokens_to(device) if fmt == "tokens" else _images_to(device, cuda)
    facts = input_facts(args, fmt, workers, data.bytes(), {"samples": len(data)})

    def epoch(k: int) -> torch.utils.data.DataLoader:
        sampler.set_epoch(k)
        return loader

    return Batches(epoch, to_device, fail, ahead=workers * 2 + 1), facts  # (prefetch_factor 2 a worker)


def dali_batches(args, rank: int, world: int, device: torch.device, cuda: bool,  # noqa: ANN001 - argparse.Namespace
                 fail: Callable[[str], None]) -> tuple[Batches, dict]:
    """The rank's batches from an NVIDIA DALI pipeline over the class folders, as DeepLearningExamples' DALI
    loader: DALI's file reader (this rank's shard, shuffled), the image decoder on the GPU ("mixed") on GPU
    nodes and on the CPU on CPU nodes, random resized crop, crop-mirror-normalize (a random flip), fed to torch
    by DALI's own iterator; ``--data-workers`` is the pipeline's threads."""
    import nvidia.dali.fn as fn
    import nvidia.dali.types as types
    from nvidia.dali import pipeline_def
    from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy

    with failing(dataset.DatasetError, fail):
        samples = dataset.image_samples(args.data_dir)
        dataset.enough(args.data_dir, len(samples), args.batch_size, world)

    @pipeline_def
    def train():  # noqa: ANN202
        jpegs, labels = fn.readers.file(file_root=dataset.class_root(args.data_dir), shard_id=rank, num_shards=world,
                                        random_shuffle=True, seed=args.seed, name="Reader")
        images = fn.decoders.image(jpegs, device="mixed" if cuda else "cpu", output_type=types.RGB)
        images = fn.random_resized_crop(images, size=args.image_size)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW", mean=list(dataset.MEAN),
                                          std=list(dataset.STD), mirror=fn.random.coin_flip())
        return images, labels

    import nvidia.dali

    threads = max(1, args.data_workers)
    size = sum(os.path.getsize(p) for p, _ in samples)
    facts = input_facts(args, "jpeg", threads, size, {"samples": len(samples)}, source="dali",  # before DALI reads
                        decoder="mixed" if cuda else "cpu", dali=nvidia.dali.__version__)
    pipe = train(batch_size=args.batch_size, num_threads=threads, device_id=device.index if cuda else None,
                 seed=args.seed + rank)
    pipe.build()
    feed = DALIGenericIterator([pipe], ["data", "label"], reader_name="Reader",
                               last_batch_policy=LastBatchPolicy.DROP, auto_reset=True)

    def to_device(batch):  # noqa: ANN001, ANN202 - DALI's [{"data", "label"}]
        x, y = batch[0]["data"], batch[0]["label"]
        x = x.to(device, non_blocking=cuda)
        return (x.contiguous(memory_format=torch.channels_last) if cuda else x), \
            y.squeeze(-1).long().to(device, non_blocking=cuda)

    return Batches(lambda k: feed, to_device, fail, ahead=3, source="DALI pipeline"), facts  # (DALI's prefetch queue: 2 batches)


def _images_to(device: torch.device, cuda: bool) -> Callable:
    """uint8 NHWC on the host -> normalised float NCHW on the device (channels-last on GPUs, as the model)."""
    mean = torch.tensor(dataset.MEAN, device=device).view(1, 3, 1, 1)
    std = torch.tensor(dataset.STD, device=device).view(1, 3, 1, 1)

    def to(batch):  # noqa: ANN001, ANN202
        images, labels = batch
        x = images.to(device, non_blocking=cuda).permute(0, 3, 1, 2).float().sub_(mean).div_(std)
        return (x if cuda else x.contiguous()), labels.to(device, non_blocking=cuda)

    return to


def _tokens_to(device: torch.device) -> Callable:
    def to(batch):  # noqa: ANN001, ANN202
        inputs, labels = batch
        return inputs.to(device, non_blocking=True), labels.to(device, non_blocking=True)

    return to
