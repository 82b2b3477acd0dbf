#!/usr/bin/env python3
"""A node's real dataset: which format a directory holds, its index (file count and digest: every node of
a case must hold the same one), the samples a loader reads and the image transform the seeds' PyTorch
ResNet-50 trains with without DALI. Runs on the nodes and imports nothing from the harness (standard
library; Pillow and numpy only where images are decoded); copied beside the workloads.

Formats (``detect``):

- ``jpeg``: ImageNet as class folders of JPEGs (``train/<class>/<image>.JPEG``, or the class folders at
  the top), as torchvision's ``ImageFolder`` and NVIDIA's DeepLearningExamples read it;
- ``tfrecord``: TFRecord shards named as the NGC recipe writes them (``train-00000-of-01024``), in
  ``tfrecord/`` or at the top, with DALI's index files in ``tfrecord/idx/`` where they were made;
- ``tokens``: a token file (``tokens/train.bin``, uint16, memory-mapped as nanoGPT-style trainers read it).

``python3 dataset.py index DIR`` prints ``INDEX_MARK`` and one JSON line (``index``): the pre-launch check.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass

INDEX_MARK = "DLPERF-DATASET "
CONTRACT = 1
MANIFEST = "dlperf-dataset.json"  # what ``dlperf data make`` writes last: its presence says the build finished
IMAGE_SUFFIXES = (".jpeg", ".jpg")
TFRECORD_DIR = "tfrecord"
TOKENS_FILE = os.path.join("tokens", "train.bin")
FORMATS = ("jpeg", "tfrecord", "tokens")
# NVIDIA DeepLearningExamples' ImageNet normalisation (torchvision's), 0-255 scale
MEAN = (0.485 * 255, 0.456 * 255, 0.406 * 255)
STD = (0.229 * 255, 0.224 * 255, 0.225 * 255)


class DatasetError(ValueError):
    """A directory that holds no dataset of a known format, or a file of one that cannot be read: the
    message is one line naming the path and what was expected."""


def _files(root: str) -> list[tuple[str, int]]:
    """Every regular file under ``root`` as (path relative to it, size), sorted; the manifest left out."""
    out = []
    for here, dirs, names in os.walk(root):
        dirs.sort()
        for name in names:
            path = os.path.join(here, name)
            rel = os.path.relpath(path, root)
            if rel == MANIFEST or not os.path.isfile(path):
                continue
            out.append((rel, os.path.getsize(path)))
    return sorted(out)


def index(root: str) -> dict:
    """The dataset's index: its formats, file count, bytes, and a digest over every file's relative path
    and size (stat only: cheap on every node before a launch). Two nodes that hold the same dataset have
    the same digest; a missing, extra or truncated file changes it."""
    if not os.path.isdir(root):
        return {"contract": CONTRACT, "root": root, "missing": True}
    files = _files(root)
    h = hashlib.sha256()
    for rel, size in files:
        h.update(f"{rel}\t{size}\n".encode())
    return {"contract": CONTRACT, "root": root, "formats": formats(root), "files": len(files),
            "bytes": sum(s for _, s in files), "digest": h.hexdigest()[:16]}


def class_root(root: str) -> str | None:
    """Where the class folders are: ``root/train`` or ``root`` (None: no folder holding JPEGs)."""
    for top in (os.path.join(root, "train"), root):
        if not os.path.isdir(top):
            continue
        for entry in sorted(os.scandir(top), key=lambda e: e.name):
            if entry.is_dir() and any(n.lower().endswith(IMAGE_SUFFIXES) for n in os.listdir(entry.path)):
                return top
    return None


def _is_shard(name: str) -> bool:
    parts = name.split("-")
    return len(parts) == 4 and parts[0] == "train" and parts[2] == "of" and parts[1].isdigit() and parts[3].isdigit()


def tfrecord_shards(root: str) -> list[str]:
    """The TFRecord shards (``train-NNNNN-of-MMMMM``), sorted, in ``root/tfrecord`` or ``root``."""
    for top in (os.path.join(root, TFRECORD_DIR), root):
        if os.path.isdir(top):
            found = sorted(os.path.join(top, n) for n in os.listdir(top) if _is_shard(n))
            if found:
                return found
    return []


def formats(root: str) -> list[str]:
    """The formats ``root`` holds, in ``FORMATS`` order."""
    out = []
    if class_root(root):
        out.append("jpeg")
    if tfrecord_shards(root):
        out.append("tfrecord")
    if os.path.isfile(os.path.join(root, TOKENS_FILE)):
        out.append("tokens")
    return out


def require(root: str, fmt: str) -> None:
    """Raise DatasetError (one line) unless ``root`` holds ``fmt``."""
    if not os.path.isdir(root):
        raise DatasetError(f"{root}: no such directory; make one with `dlperf data make imagenet {root}` "
                           "or give --dlperf-data-dir your dataset")
    if fmt in formats(root):
        return
    expected = {"jpeg": "ImageNet as class folders of JPEGs (train/<class>/*.JPEG)",
                "tfrecord": "TFRecord shards train-NNNNN-of-MMMMM (in tfrecord/ or at the top)",
                "tokens": f"a uint16 token file {TOKENS_FILE}"}[fmt]
    raise DatasetError(f"{root}: holds no {expected}; make one with `dlperf data make imagenet DIR`")


def image_samples(root: str) -> list[tuple[str, int]]:
    """(path, label) of every JPEG of the class folders, sorted; labels are the classes' sorted order."""
    top = class_root(root)
    if top is None:
        require(root, "jpeg")
    # only folders that hold JPEGs are classes: a stray folder must not shift the labels
    classes = sorted(e.name for e in os.scandir(top)
                     if e.is_dir() and any(n.lower().endswith(IMAGE_SUFFIXES) for n in os.listdir(e.path)))
    out = []
    for label, name in enumerate(classes):
        folder = os.path.join(top, name)
        out += [(os.path.join(folder, n), label) for n in sorted(os.listdir(folder)) if n.lower().endswith(IMAGE_SUFFIXES)]
    return out


@dataclass(frozen=True)
class ResizedCrop:
    """torchvision's RandomResizedCrop parameters (scale 0.08-1, ratio 3/4-4/3, ten tries then the
    centre) drawn from ``rng``, on an image of ``width`` x ``height``: the box to crop."""

    scale: tuple[float, float] = (0.08, 1.0)
    ratio: tuple[float, float] = (3 / 4, 4 / 3)

    def box(self, width: int, height: int, rng) -> tuple[int, int, int, int]:  # noqa: ANN001 - random.Random
        import math

        area = width * height
        log_ratio = (math.log(self.ratio[0]), math.log(self.ratio[1]))
        for _ in range(10):
            target = area * rng.uniform(*self.scale)
            aspect = math.exp(rng.uniform(*log_ratio))
            w = int(round(math.sqrt(target * aspect)))
            h = int(round(math.sqrt(target / aspect)))
            if 0 < w <= width and 0 < h <= height:
                left = rng.randint(0, width - w)
                top = rng.randint(0, height - h)
                return left, top, left + w, top + h
        in_ratio = width / height  # the fallback: a centre crop of the whole image within the ratios
        if in_ratio < self.ratio[0]:
            w, h = width, int(round(width / self.ratio[0]))
        elif in_ratio > self.ratio[1]:
            h, w = height, int(round(height * self.ratio[1]))
        else:
            w, h = width, height
        left, top = (width - w) // 2, (height - h) // 2
        return left, top, left + w, top + h


def train_image(path: str, size: int, rng):  # noqa: ANN001, ANN201 - random.Random -> numpy uint8 HWC
    """One training image as DeepLearningExamples' PyTorch ResNet-50 reads it without DALI: decode (Pillow,
    or pillow-simd where installed: the same module), RandomResizedCrop to ``size``, horizontal flip half
    the time; a uint8 HWC array (normalised on the device, as their loader does). A file that does not
    decode raises DatasetError naming it."""
    import numpy as np
    from PIL import Image

    try:
        with Image.open(path) as im:
            img = im.convert("RGB")
            img.load()
    except (OSError, ValueError, Image.DecompressionBombError) as exc:
        raise DatasetError(f"{path}: cannot decode this JPEG ({exc}); replace or remove the file") from None
    box = ResizedCrop().box(img.width, img.height, rng)
    img = img.resize((size, size), Image.BILINEAR, box=box)
    if rng.random() < 0.5:
        img = img.transpose(Image.FLIP_LEFT_RIGHT)
    return np.array(img, dtype=np.uint8)  # a writable copy: torch.from_numpy warns of a read-only one


def enough(root: str, samples: int, batch_size: int, world: int) -> None:
    """Raise DatasetError unless ``samples`` fill one global batch (each rank's ``batch_size``)."""
    if samples < batch_size * world:
        raise DatasetError(f"{root}: {samples} samples, fewer than one global batch ({batch_size} x {world}); make a "
                           "larger dataset (`dlperf data make imagenet DIR --images N`)")


def page_cache(size: int, drop: bool = False) -> dict:
    """Whether a dataset of ``size`` bytes fits in this node's available memory, so that after its first epoch
    it is read from the page cache rather than the disk (MemAvailable of /proc/meminfo); with ``drop``, the
    page cache emptied first (root only: ``sync``, then 3 into /proc/sys/vm/drop_caches), so that the first
    epoch, and a window inside it, reads from the disk."""
    said: dict = {}
    if drop:
        try:
            os.sync()
            with open("/proc/sys/vm/drop_caches", "w", encoding="ascii") as fh:
                fh.write("3\n")
            said = {"dropped": True}
        except OSError as exc:
            said = {"dropped": False, "why": f"cannot drop the page cache here ({exc.strerror or exc}): it needs root "
                                             "and a writable /proc/sys/vm/drop_caches"}
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            avail = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("MemAvailable:"))
    except (OSError, StopIteration, ValueError):
        return {"fits": None, **said}
    return {"fits": size <= avail, "available_bytes": avail, **said}


if __name__ == "__main__":
    if sys.argv[1:2] == ["index"] and len(sys.argv) == 3:
        print(INDEX_MARK + json.dumps(index(sys.argv[2])), flush=True)
    else:
        raise SystemExit("usage: dataset.py index DIR")
