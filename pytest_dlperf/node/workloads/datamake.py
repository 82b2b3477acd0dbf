#!/usr/bin/env python3
"""A deterministic, ImageNet-shaped dataset for the nodes: what ``dataset.py`` reads, built from a seed so
every node of a case makes the same files (same seed, same Pillow build: byte-identical) without a
download. Runs on the nodes and imports nothing from the harness (numpy and Pillow; ``dataset.py`` is
copied beside it); ``dlperf data make`` runs it locally.

``python3 datamake.py imagenet DIR [--images N] [--classes C] [--shards S] [--tokens T] [--vocab V]
[--seed K]`` writes, in ``DIR.partial-<host>-<pid>`` renamed to DIR when whole:

- ``train/<class>/<class>_<k>.JPEG``: N photo-like JPEGs round-robin over C classes ``n%08d``, their pixel
  sizes and file sizes drawn to follow ImageNet-1k's train set (``SHAPES_500``, ``TAIL_*``, ``QUALITY``);
- ``tfrecord/train-NNNNN-of-MMMMM``: the same images as the NGC/TF-slim recipe's tf.train.Examples (label
  1-based), written by hand (protobuf wire format, TFRecord framing, masked CRC-32C), and DALI's index
  files ``tfrecord/idx/<shard>.idx`` ("offset length" per record);
- ``train_list.txt``: PaddleClas' list, "train/<class>/<file>.JPEG <label>" (0-based);
- ``tokens/train.bin``: T uint16 tokens below V with a Zipf-like frequency (nanoGPT's layout);
- ``dlperf-dataset.json`` last: the parameters, ``dataset.index`` of the tree and a summary of the sizes.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import signal
import socket
import struct
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass

try:
    import numpy as np
    from PIL import Image
    from PIL import __version__ as PILLOW_VERSION
except ImportError as _exc:  # one line, not a traceback, on a node without them
    raise SystemExit(f"datamake.py needs numpy and Pillow ({_exc}): pip install numpy Pillow") from None

import dataset  # copied beside this file

KIND = "imagenet"
PROG = "datamake.py"  # the prefix of its one-line errors (``dlperf data make`` puts its own)
PARTIAL = ".partial-"  # DIR.partial-<host>-<pid>: the build in progress, beside DIR
TRAIN_LIST = "train_list.txt"
IDX_DIR = "idx"

# ImageNet-1k train (1,281,167 JPEGs, ~140 GB: ~110 KB each; docs/data.md names the sources): most images
# are 500 px on the long side; the rest are drawn log-normally. (width, height, share of the 500 px ones)
SHARE_500 = 0.75
SHAPES_500 = ((500, 375, 0.45), (500, 333, 0.20), (500, 500, 0.10), (375, 500, 0.15), (333, 500, 0.10))
TAIL_MEDIAN, TAIL_SIGMA, TAIL_MIN, TAIL_MAX = 350.0, 0.55, 100, 2000  # long side, px
TAIL_ASPECT = (0.5, 1.0)  # short/long side, uniform
TAIL_LANDSCAPE = 0.7
# Most ImageNet JPEGs are quality 96 without chroma subsampling; the content's noise is calibrated so a
# 500x375 image is ~114 KB and the mixture averages ~107 KB (about 0.6 byte a pixel).
QUALITY = 96
SUBSAMPLING = 0  # 4:4:4
NOISE = 6.0  # luminance noise (std, 0-255): the file-size knob
# (cell px or None for half the long side, amplitude) of the value-noise octaves: a 1/f-like spectrum
LUMA_OCTAVES = ((None, 0.9), (64, 0.45), (16, 0.3), (4, 0.15))
CHROMA_OCTAVES = ((None, 0.5), (48, 0.2))
ZIPF_EXPONENT = 1.0
TOKEN_CHUNK = 1 << 20
STREAM_IMAGE, STREAM_SHARDS, STREAM_TOKENS = 1, 2, 3  # the seed's independent random streams


class BuildError(ValueError):
    """A request the builder cannot carry out: the message is one line naming the problem and the fix."""


@dataclass(frozen=True)
class Spec:
    """What to build: the parameters the manifest records and a rebuild compares."""

    images: int = 512
    classes: int = 16
    shards: int = 4
    tokens: int = 1 << 20
    vocab: int = 32000
    seed: int = 0

    def check(self) -> None:
        """Raise BuildError naming the first parameter out of range."""
        limits = (("images", 1, None), ("classes", 1, min(self.images, 10 ** 8)),
                  ("shards", 1, min(self.images, 99999)), ("tokens", 1, None), ("vocab", 2, 65536),
                  ("seed", 0, None))
        for name, least, most in limits:
            value = getattr(self, name)
            if value < least or (most is not None and value > most):
                span = f"{least} to {most}" if most is not None else f"{least} or more"
                why = " (no more than --images)" if name in ("classes", "shards") and most == self.images else ""
                raise BuildError(f"--{name} {value}: out of range: give {span}{why}")

    def params(self) -> dict:
        """The manifest's parameter fields."""
        return {"contract": dataset.CONTRACT, "kind": KIND, **asdict(self)}


@dataclass(frozen=True)
class Written:
    """One JPEG written: its path relative to the root, class, label (0-based) and sizes."""

    rel: str
    synset: str
    label: int
    width: int
    height: int
    size: int


def class_name(c: int) -> str:
    """A synthetic WordNet id: ``n%08d``."""
    return f"n{c:08d}"


def rng_for(seed: int, stream: int, item: int = 0) -> np.random.Generator:
    """An independent generator per (seed, stream, item): an image's draws depend on nothing else."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence((seed, stream, item))))


# --- the images --------------------------------------------------------------------------------------


def image_size(rng: np.random.Generator) -> tuple[int, int]:
    """(width, height) drawn from the ImageNet-like mixture: 500 px long side, else log-normal."""
    if rng.random() < SHARE_500:
        cum = np.cumsum([s[2] for s in SHAPES_500])
        w, h, _ = SHAPES_500[min(int(np.searchsorted(cum / cum[-1], rng.random(), side="right")), len(cum) - 1)]
        return w, h
    long = int(np.clip(round(TAIL_MEDIAN * np.exp(TAIL_SIGMA * rng.standard_normal())), TAIL_MIN, TAIL_MAX))
    short = max(1, round(long * rng.uniform(*TAIL_ASPECT)))
    return (long, short) if rng.random() < TAIL_LANDSCAPE else (short, long)


def _octave(rng: np.random.Generator, w: int, h: int, cell: int) -> np.ndarray:
    """Value noise: a coarse random grid upsampled bicubically to w x h, centred on 0 (float32)."""
    gw, gh = w // cell + 3, h // cell + 3
    grid = Image.fromarray(rng.integers(0, 256, (gh, gw), dtype=np.uint8))
    return np.asarray(grid.resize((w, h), Image.BICUBIC, box=(1, 1, gw - 2, gh - 2)), np.float32) - 128.0


def _plane(rng: np.random.Generator, w: int, h: int, octaves: tuple) -> np.ndarray:
    """A sum of octaves around mid-grey."""
    out = np.full((h, w), 128.0, np.float32)
    for cell, amp in octaves:
        out += _octave(rng, w, h, cell or max(2, max(w, h) // 2)) * amp
    return out


def photo(rng: np.random.Generator, w: int, h: int) -> Image.Image:
    """Photo-like content: luminance with a 1/f-like spectrum plus sensor-like noise, smoother chroma."""
    y = _plane(rng, w, h, LUMA_OCTAVES)
    y += rng.standard_normal((h, w), dtype=np.float32) * NOISE
    planes = [y, _plane(rng, w, h, CHROMA_OCTAVES), _plane(rng, w, h, CHROMA_OCTAVES)]
    return Image.fromarray(np.stack([np.clip(p, 0, 255) for p in planes], axis=-1).astype(np.uint8), "YCbCr")


def encode_jpeg(img: Image.Image) -> bytes:
    """A baseline JFIF JPEG at ImageNet's usual quality and subsampling (decodes as RGB)."""
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=QUALITY, subsampling=SUBSAMPLING)
    return buf.getvalue()


def write_images(root: str, spec: Spec) -> list[Written]:
    """Write the N JPEGs round-robin over the classes; what was written, in image order."""
    out = []
    for i in range(spec.images):
        label, k = i % spec.classes, i // spec.classes
        synset = class_name(label)
        rel = os.path.join("train", synset, f"{synset}_{k}.JPEG")
        rng = rng_for(spec.seed, STREAM_IMAGE, i)
        w, h = image_size(rng)
        data = encode_jpeg(photo(rng, w, h))
        os.makedirs(os.path.join(root, "train", synset), exist_ok=True)
        with open(os.path.join(root, rel), "wb") as f:
            f.write(data)
        out.append(Written(rel, synset, label, w, h, len(data)))
    return out


# --- CRC-32C (Castagnoli), for the TFRecord framing ----------------------------------------------------

_POLY = 0x82F63B78  # reflected
_TABLE = []
for _n in range(256):
    for _ in range(8):
        _n = (_n >> 1) ^ _POLY if _n & 1 else _n >> 1
    _TABLE.append(_n)
_TABLE_NP = np.array(_TABLE, dtype=np.uint32)
_CHUNK = 256  # the numpy fallback runs the table over columns of 256-byte rows, then combines the rows
_SHIFT: list[list[int]] = []  # four byte tables: a register advanced over _CHUNK zero bytes


def _crc32c_py(data: bytes, reg: int = 0xFFFFFFFF) -> int:
    """CRC-32C, byte at a time (short inputs and the reference)."""
    for b in data:
        reg = _TABLE[(reg ^ b) & 0xFF] ^ (reg >> 8)
    return reg ^ 0xFFFFFFFF


def _shift_tables() -> list[list[int]]:
    """The linear map "advance the register over _CHUNK zero bytes" as four 256-entry byte tables."""
    if not _SHIFT:
        cols = []
        for bit in range(32):
            reg = 1 << bit
            for _ in range(_CHUNK):
                reg = _TABLE[reg & 0xFF] ^ (reg >> 8)
            cols.append(reg)
        for k in range(4):
            t = [0] * 256
            for v in range(1, 256):
                low = (v & -v).bit_length() - 1
                t[v] = t[v & (v - 1)] ^ cols[8 * k + low]
            _SHIFT.append(t)
    return _SHIFT


def _crc32c_numpy(data: bytes) -> int:
    """CRC-32C without a C module: the table over every row's column at once, the rows then combined.
    The initial all-ones register is the message's first four bytes inverted with a zero register, and
    leading zero bytes leave a zero register alone, so the rows are zero-padded in front."""
    if len(data) < 4 * _CHUNK:
        return _crc32c_py(data)
    buf = np.frombuffer(data, np.uint8).copy()
    buf[:4] ^= 0xFF
    rows = np.concatenate([np.zeros(-len(buf) % _CHUNK, np.uint8), buf]).reshape(-1, _CHUNK)
    reg = np.zeros(len(rows), np.uint32)
    for j in range(_CHUNK):
        reg = _TABLE_NP[(reg ^ rows[:, j]) & 0xFF] ^ (reg >> 8)
    t0, t1, t2, t3 = _shift_tables()
    crc = 0
    for r in reg.tolist():
        crc = t0[crc & 0xFF] ^ t1[(crc >> 8) & 0xFF] ^ t2[(crc >> 16) & 0xFF] ^ t3[crc >> 24] ^ r
    return crc ^ 0xFFFFFFFF


def _crc32c_impl() -> Callable[[bytes], int]:
    """google_crc32c or crc32c (C) where importable, else the numpy fallback."""
    try:
        import google_crc32c

        return lambda data: int(google_crc32c.value(bytes(data)))
    except ImportError:
        pass
    try:
        import crc32c as crc32c_module

        return lambda data: int(crc32c_module.crc32c(bytes(data)))
    except ImportError:
        return _crc32c_numpy


crc32c: Callable[[bytes], int] = _crc32c_impl()


def masked_crc(data: bytes) -> int:
    """TFRecord's masked CRC-32C: rotated right by 15 bits plus a constant."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord_frame(data: bytes) -> bytes:
    """One TFRecord: uint64 length, masked CRC of the length, the data, masked CRC of the data (LE)."""
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked_crc(length)) + data + struct.pack("<I", masked_crc(data))


# --- tf.train.Example, by hand (protobuf wire format) ------------------------------------------------------


def _varint(n: int) -> bytes:
    """A protobuf varint (negative int64 as its 64-bit two's complement)."""
    n &= 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def bytes_feature(value: bytes) -> bytes:
    """Feature{bytes_list(1): BytesList{value(1): value}}."""
    return _field(1, _field(1, value))


def int64_feature(value: int) -> bytes:
    """Feature{int64_list(3): Int64List{value(1), packed}}."""
    return _field(3, _field(1, _varint(value)))


def example(features: dict[str, bytes]) -> bytes:
    """Example{features(1): Features{feature(1): map<string, Feature>}}, the map's entries sorted by key."""
    entries = b"".join(_field(1, _field(1, key.encode()) + _field(2, feature))
                       for key, feature in sorted(features.items()))
    return _field(1, entries)


def image_example(w: Written, jpeg: bytes) -> bytes:
    """An image as the NGC/TF-slim ImageNet recipe writes it (label 1-based: 0 is its background class)."""
    return example({
        "image/encoded": bytes_feature(jpeg), "image/format": bytes_feature(b"JPEG"),
        "image/class/label": int64_feature(w.label + 1), "image/class/synset": bytes_feature(w.synset.encode()),
        "image/height": int64_feature(w.height), "image/width": int64_feature(w.width),
        "image/colorspace": bytes_feature(b"RGB"), "image/channels": int64_feature(3),
        "image/filename": bytes_feature(os.path.basename(w.rel).encode()),
    })


def shard_name(s: int, shards: int) -> str:
    """``train-%05d-of-%05d``, as the NGC recipe names its shards."""
    return f"train-{s:05d}-of-{shards:05d}"


def write_tfrecords(root: str, spec: Spec, written: list[Written]) -> None:
    """The images, shuffled by the seed (each shard mixes the classes), in S contiguous shards, with
    DALI's index files (``tfrecord2idx``: "<offset> <record bytes with framing>" per record)."""
    order = rng_for(spec.seed, STREAM_SHARDS).permutation(len(written)).tolist()
    os.makedirs(os.path.join(root, dataset.TFRECORD_DIR, IDX_DIR), exist_ok=True)
    for s in range(spec.shards):
        name = shard_name(s, spec.shards)
        lo, hi = s * len(order) // spec.shards, (s + 1) * len(order) // spec.shards
        with open(os.path.join(root, dataset.TFRECORD_DIR, name), "wb") as shard, \
                open(os.path.join(root, dataset.TFRECORD_DIR, IDX_DIR, name + ".idx"), "w") as idx:
            for i in order[lo:hi]:
                with open(os.path.join(root, written[i].rel), "rb") as f:
                    record = tfrecord_frame(image_example(written[i], f.read()))
                idx.write(f"{shard.tell()} {len(record)}\n")
                shard.write(record)


def write_train_list(root: str, written: list[Written]) -> None:
    """PaddleClas' list: "train/<class>/<file>.JPEG <label>" per image, paths relative to the root."""
    with open(os.path.join(root, TRAIN_LIST), "w") as f:
        f.writelines(f"{w.rel.replace(os.sep, '/')} {w.label}\n" for w in written)


# --- tokens -------------------------------------------------------------------------------------------


def token_chunks(spec: Spec) -> Iterator[np.ndarray]:
    """T tokens in chunks: rank r drawn with frequency ~ 1/(r+1) (Zipf), mapped to an id by a seeded
    permutation of the vocabulary (inverse CDF: no numpy sampler whose algorithm may change)."""
    rng = rng_for(spec.seed, STREAM_TOKENS)
    ids = rng.permutation(spec.vocab).astype(np.uint16)
    cdf = np.cumsum(1.0 / np.arange(1, spec.vocab + 1) ** ZIPF_EXPONENT)
    cdf /= cdf[-1]
    for start in range(0, spec.tokens, TOKEN_CHUNK):
        u = rng.random(min(TOKEN_CHUNK, spec.tokens - start))
        yield ids[np.minimum(np.searchsorted(cdf, u, side="right"), spec.vocab - 1)]


def write_tokens(root: str, spec: Spec) -> None:
    """``tokens/train.bin``: uint16 little-endian, as nanoGPT-style trainers memory-map it."""
    path = os.path.join(root, dataset.TOKENS_FILE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        for chunk in token_chunks(spec):
            chunk.astype("<u2").tofile(f)


# --- the manifest and the build -----------------------------------------------------------------------


def _stats(values: list[int]) -> dict:
    """mean, median, p5, p95."""
    a = np.asarray(values, np.float64)
    return {"mean": round(float(a.mean()), 1), "median": round(float(np.median(a)), 1),
            "p5": round(float(np.percentile(a, 5)), 1), "p95": round(float(np.percentile(a, 95)), 1)}


def size_summary(written: list[Written]) -> dict:
    """The pixel and file sizes actually written."""
    return {"width": _stats([w.width for w in written]), "height": _stats([w.height for w in written]),
            "long_side": _stats([max(w.width, w.height) for w in written]),
            "bytes": _stats([w.size for w in written])}


def write_manifest(root: str, target: str, spec: Spec, written: list[Written]) -> dict:
    """``dlperf-dataset.json``, written last: the parameters, the finished tree's index (its root named
    as the directory it becomes) and the sizes."""
    index = {**dataset.index(root), "root": target}
    doc = {**spec.params(), "index": index, "sizes": size_summary(written),
           "encoder": f"Pillow {PILLOW_VERSION}, JPEG quality {QUALITY}, 4:4:4"}
    with open(os.path.join(root, dataset.MANIFEST), "w") as f:
        f.write(json.dumps(doc, indent=1) + "\n")
    return doc


def already_built(target: str, spec: Spec) -> bool:
    """False where ``target`` does not exist; True where it holds this dataset, whole; else BuildError."""
    if not os.path.lexists(target):
        return False
    try:
        with open(os.path.join(target, dataset.MANIFEST)) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        doc = None
    if not isinstance(doc, dict) or {k: doc.get(k) for k in spec.params()} != spec.params():
        raise BuildError(f"{target} exists and is not this dataset: remove it or choose another directory")
    now, then = dataset.index(target).get("digest"), (doc.get("index") or {}).get("digest")
    if now != then:
        raise BuildError(f"{target} holds this dataset but its files changed (index {now}, built as {then}): "
                         "remove it and build again")
    return True


def _pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _own_prefix(target: str) -> str:
    """``DIR.partial-<host>-``: this host's partial directories (on storage several nodes share, a pid says
    nothing of another host's builds)."""
    return f"{os.path.basename(target)}{PARTIAL}{socket.gethostname()}-"


def clear_stale_partials(target: str) -> None:
    """Remove this host's ``DIR.partial-<host>-<pid>`` left by a build whose process is gone (a concurrent one,
    and any other host's, is left alone)."""
    parent = os.path.dirname(target)
    prefix = _own_prefix(target)
    for name in os.listdir(parent or "."):
        pid = name[len(prefix):]
        if name.startswith(prefix) and pid.isdigit() and not _pid_alive(int(pid)):
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)


def make_partial(target: str) -> str:
    """Create ``DIR.partial-<host>-<pid>`` beside DIR (and DIR's parent where missing); BuildError where it cannot."""
    parent = os.path.dirname(target)
    partial = os.path.join(parent, f"{_own_prefix(target)}{os.getpid()}")
    if os.path.lexists(parent) and not os.path.isdir(parent):
        raise BuildError(f"{target}: its parent {parent} is not a directory: choose a directory under a writable one")
    try:
        os.makedirs(parent, exist_ok=True)
        clear_stale_partials(target)
        shutil.rmtree(partial, ignore_errors=True)
        os.mkdir(partial)
    except OSError as exc:
        raise BuildError(f"{target}: cannot create a directory in {parent} ({exc.strerror or exc}): choose a "
                         "directory under a writable one") from None
    return partial


def _total_bytes(root: str) -> int:
    """The bytes of every file under ``root``."""
    return sum(os.path.getsize(os.path.join(here, n)) for here, _, names in os.walk(root) for n in names)


def build(target: str, spec: Spec) -> str:
    """Build the dataset at ``target`` atomically (a sibling partial directory renamed when whole); the
    summary line. An exception mid-build removes the partial directory and leaves no ``target``."""
    spec.check()
    target = os.path.abspath(target)
    if already_built(target, spec):
        return f"{target}: already built ({KIND}, {spec.images} images, {spec.classes} classes, seed {spec.seed})"
    partial = make_partial(target)
    started = time.perf_counter()
    try:
        written = write_images(partial, spec)
        write_tfrecords(partial, spec, written)
        write_train_list(partial, written)
        write_tokens(partial, spec)
        write_manifest(partial, target, spec, written)
        total = _total_bytes(partial)
        try:
            os.rename(partial, target)
        except OSError:
            if already_built(target, spec):  # a concurrent build finished first
                shutil.rmtree(partial, ignore_errors=True)
                return f"{target}: already built ({KIND}, {spec.images} images, seed {spec.seed}, by another build)"
            raise
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return (f"built {spec.images} images in {spec.classes} classes ({spec.shards} TFRecord shards, {spec.tokens} "
            f"tokens): {total / 1e6:.1f} MB in {target} ({time.perf_counter() - started:.1f} s)")


class _OneLineParser(argparse.ArgumentParser):
    """argparse whose errors are one line (the problem and the fix), exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"{PROG}: {message} (see --help)", file=sys.stderr)
        raise SystemExit(2)


def parse(argv: list[str]) -> tuple[str, Spec]:
    """(DIR, Spec) from the command line; --classes and --shards default to at most --images."""
    p = _OneLineParser(prog=PROG, description="Build a deterministic ImageNet-shaped dataset (docs/data.md).")
    p.add_argument("kind", choices=[KIND])
    p.add_argument("dir", metavar="DIR")
    d = Spec()
    for name in ("images", "classes", "shards", "tokens", "vocab", "seed"):
        p.add_argument(f"--{name}", type=int, default=None, help=f"default {getattr(d, name)}")
    a = p.parse_args(argv)
    images = d.images if a.images is None else a.images
    fallback = {"classes": min(d.classes, max(images, 1)), "shards": min(d.shards, max(images, 1))}
    values = {k: v if v is not None else fallback.get(k, getattr(d, k)) for k, v in vars(a).items()
              if k not in ("kind", "dir")}
    return a.dir, Spec(**{**values, "images": images})


def _on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM as an interruption, so the build removes its partial directory."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Build, print one line; problems are one line on stderr, exit 2."""
    target, spec = parse(sys.argv[1:] if argv is None else argv)
    try:
        print(build(target, spec), flush=True)
    except BuildError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: {target}: build interrupted; nothing was left behind: run it again", file=sys.stderr)
        return 130
    except OSError as exc:
        print(f"{PROG}: {target}: cannot write the dataset ({exc}): free space or choose another directory",
              file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _on_sigterm)  # a killed build removes its partial directory too
    sys.exit(main())
