"""The dataset builder (``node/workloads/datamake.py``, ``dlperf data``): what it writes is what
``dataset.py`` reads, TensorFlow and DALI read its TFRecords, a seed gives the same bytes, an interrupted
build leaves nothing, a rebuild is a no-op, and bad input is one line."""
from __future__ import annotations

import hashlib
import importlib.util
import json
import socket
import os
import re
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pytest_dlperf import cli

WORKLOADS = Path(__file__).resolve().parents[1] / "pytest_dlperf" / "node" / "workloads"
sys.path.insert(0, str(WORKLOADS))  # the builder imports its sibling by name, as on the nodes
try:
    import datamake
    import dataset
finally:
    sys.path.remove(str(WORKLOADS))

SMALL = datamake.Spec(images=24, classes=4, shards=3, tokens=4096, vocab=1000, seed=0)


def contents(root: Path) -> dict[str, str]:
    """Every file's relative path -> sha256 of its bytes."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def siblings(target: Path) -> list[str]:
    return sorted(p.name for p in target.parent.iterdir() if p.name.startswith(target.name))


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("data") / "imagenet"
    datamake.build(str(root), SMALL)
    return root


def test_crc32c_known_vectors_and_the_numpy_fallback():
    # RFC 3720 (iSCSI) B.4 and the common check value
    for data, crc in ((b"123456789", 0xE3069283), (b"", 0), (bytes(32), 0x8A9136AA), (b"\xff" * 32, 0x62A8AB43),
                      (bytes(range(32)), 0x46DD794E)):
        assert datamake._crc32c_py(data) == crc and datamake._crc32c_numpy(data) == crc
        assert datamake.crc32c(data) == crc
    rng = np.random.default_rng(1)
    for n in (1023, 1024, 1025, 4096, 100_003):
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        assert datamake._crc32c_numpy(data) == datamake._crc32c_py(data), n


def test_the_layout_is_what_dataset_reads(built):
    assert dataset.formats(str(built)) == ["jpeg", "tfrecord", "tokens"]
    samples = dataset.image_samples(str(built))
    assert len(samples) == 24
    for path, label in samples:
        synset = Path(path).parent.name
        assert synset == f"n{label:08d}" and Path(path).name.startswith(synset + "_")
        with Image.open(path) as im:
            assert im.format == "JPEG" and im.mode == "RGB"
    assert [os.path.basename(s) for s in dataset.tfrecord_shards(str(built))] == [
        "train-00000-of-00003", "train-00001-of-00003", "train-00002-of-00003"]
    listed = {line.split()[0]: int(line.split()[1]) for line in (built / "train_list.txt").read_text().splitlines()}
    assert listed == {os.path.relpath(p, built): label for p, label in samples}


def test_the_manifest_is_written_last_and_its_index_matches(built):
    doc = json.loads((built / dataset.MANIFEST).read_text())
    assert {k: doc[k] for k in ("contract", "kind", "images", "classes", "shards", "tokens", "vocab", "seed")} == {
        "contract": 1, "kind": "imagenet", "images": 24, "classes": 4, "shards": 3, "tokens": 4096, "vocab": 1000,
        "seed": 0}
    assert doc["index"] == dataset.index(str(built))
    sizes = [os.path.getsize(p) for p, _ in dataset.image_samples(str(built))]
    assert doc["sizes"]["bytes"]["mean"] == pytest.approx(np.mean(sizes), abs=0.1)
    assert set(doc["sizes"]) == {"width", "height", "long_side", "bytes"}
    assert set(doc["sizes"]["width"]) == {"mean", "median", "p5", "p95"}


def test_tokens_are_uint16_below_the_vocab_and_zipf_like(built):
    tokens = np.fromfile(built / dataset.TOKENS_FILE, dtype="<u2")
    assert len(tokens) == 4096 and int(tokens.max()) < 1000
    counts = np.sort(np.bincount(tokens, minlength=1000))[::-1]
    assert counts[0] > 20 * 4096 / 1000  # the commonest token: far above uniform's ~4
    assert counts[0] > 5 * counts[20]


def _records(shard: Path) -> list[tuple[int, int, bytes]]:
    """(offset, record bytes with framing, payload) of a TFRecord file, both CRCs checked."""
    data, out, pos = shard.read_bytes(), [], 0
    while pos < len(data):
        length_bytes = data[pos:pos + 8]
        (n,) = struct.unpack("<Q", length_bytes)
        assert struct.unpack("<I", data[pos + 8:pos + 12])[0] == datamake.masked_crc(length_bytes)
        payload = data[pos + 12:pos + 12 + n]
        assert struct.unpack("<I", data[pos + 12 + n:pos + 16 + n])[0] == datamake.masked_crc(payload)
        out.append((pos, n + 16, payload))
        pos += n + 16
    return out


def test_tfrecord_framing_and_dali_index_files(built):
    total = 0
    for shard in map(Path, dataset.tfrecord_shards(str(built))):
        records = _records(shard)
        lines = (shard.parent / "idx" / f"{shard.name}.idx").read_text().splitlines()
        idx = [tuple(map(int, line.split())) for line in lines]
        assert idx == [(offset, length) for offset, length, _ in records]
        total += len(records)
    assert total == 24


TF_READER = """
import hashlib, json, os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow as tf

S, I = tf.io.FixedLenFeature([], tf.string), tf.io.FixedLenFeature([], tf.int64)
SPEC = {"image/encoded": S, "image/class/label": I, "image/filename": S, "image/class/synset": S,
        "image/format": S, "image/height": I, "image/width": I}
out = []
for rec in tf.data.TFRecordDataset(sys.argv[1:]):
    ex = {k: v.numpy() for k, v in tf.io.parse_single_example(rec, SPEC).items()}
    shape = tf.io.decode_jpeg(ex["image/encoded"]).shape
    out.append({"sha": hashlib.sha256(ex["image/encoded"]).hexdigest(), "label": int(ex["image/class/label"]),
                "file": ex["image/filename"].decode(), "synset": ex["image/class/synset"].decode(),
                "format": ex["image/format"].decode(), "hw": [int(ex["image/height"]), int(ex["image/width"])],
                "decoded": list(shape)})
print(json.dumps(out))
"""


def test_tensorflow_reads_the_shards(built, tmp_path):
    """tf.data.TFRecordDataset (which checks both CRCs) and tf.io.parse_single_example: the same JPEG
    bytes, 1-based labels and sizes. In a subprocess: TensorFlow stays out of the test process."""
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("tensorflow is not installed (the [tf] extra)")
    script = tmp_path / "read.py"
    script.write_text(TF_READER)
    r = subprocess.run([sys.executable, str(script), *dataset.tfrecord_shards(str(built))], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    read = json.loads(r.stdout.strip().splitlines()[-1])
    files = {os.path.basename(p): (p, label) for p, label in dataset.image_samples(str(built))}
    assert sorted(x["file"] for x in read) == sorted(files)
    for x in read:
        path, label = files[x["file"]]
        assert x["sha"] == hashlib.sha256(Path(path).read_bytes()).hexdigest()
        assert x["label"] == label + 1 and x["synset"] == f"n{label:08d}" and x["format"] == "JPEG"
        with Image.open(path) as im:
            assert x["hw"] == [im.height, im.width] and x["decoded"] == [im.height, im.width, 3]


def test_a_seed_gives_the_same_bytes(built, tmp_path):
    again = tmp_path / "again"
    datamake.build(str(again), SMALL)
    first, second = contents(built), contents(again)
    assert first.pop(dataset.MANIFEST) and second.pop(dataset.MANIFEST) and second == first
    manifests = [json.loads((d / dataset.MANIFEST).read_text()) for d in (built, again)]
    assert manifests[1]["index"]["root"] == str(again)  # the manifests differ in the root they name, only
    assert [{**m, "index": {**m["index"], "root": None}} for m in manifests] == [manifests[0] | {
        "index": {**manifests[0]["index"], "root": None}}] * 2
    assert dataset.index(str(again))["digest"] == dataset.index(str(built))["digest"]
    other = tmp_path / "other"
    datamake.build(str(other), datamake.Spec(**{**SMALL.__dict__, "seed": 1}))
    assert contents(other).keys() == contents(built).keys()
    differ = [k for k, v in contents(other).items() if v != contents(built)[k]]
    assert len(differ) > 20


def test_the_sizes_follow_imagenet(tmp_path):
    """The documented mixture (docs/data.md): three quarters at 500 px long side, mean long side ~477,
    mean file ~107 KB (ImageNet: ~110 KB)."""
    root = tmp_path / "sizes"
    datamake.build(str(root), datamake.Spec(images=200, classes=10, shards=1, tokens=16))
    dims, sizes = [], []
    for path, _ in dataset.image_samples(str(root)):
        with Image.open(path) as im:
            dims.append(im.size)
        sizes.append(os.path.getsize(path))
    long = np.array([max(d) for d in dims])
    assert 0.65 <= np.mean(long == 500) <= 0.85
    assert 440 <= long.mean() <= 510 and np.median(long) == 500
    assert 85_000 <= np.mean(sizes) <= 135_000
    assert {(500, 375), (500, 333), (375, 500)} <= set(dims)
    summary = json.loads((root / dataset.MANIFEST).read_text())["sizes"]
    assert summary["long_side"]["mean"] == pytest.approx(long.mean(), abs=0.1)


def test_an_interrupted_build_leaves_nothing(tmp_path, monkeypatch):
    target = tmp_path / "ds"
    (tmp_path / f"ds.partial-{socket.gethostname()}-999999999").mkdir()  # a stale partial build: no such process
    other = tmp_path / "ds.partial-otherhost-999999999"  # another host's (shared storage): not this host's to judge
    other.mkdir()

    def boom(root: str, spec) -> None:  # noqa: ANN001
        raise RuntimeError("disk full")
    monkeypatch.setattr(datamake, "write_tokens", boom)
    with pytest.raises(RuntimeError, match="disk full"):
        datamake.build(str(target), SMALL)
    assert siblings(target) == [other.name]


def test_a_terminated_build_removes_its_partial_directory(tmp_path):
    target = tmp_path / "ds"
    p = subprocess.Popen([sys.executable, str(WORKLOADS / "datamake.py"), "imagenet", str(target), "--images", "2000",
                          "--tokens", "16"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not list(tmp_path.glob("ds.partial-*/train/*")) and time.monotonic() < deadline:
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 130 and "interrupted" in err and len(err.splitlines()) == 1, err
    assert siblings(target) == []


def test_a_rebuild_is_a_no_op(built, capsys):
    before = (built / dataset.MANIFEST).stat().st_mtime_ns
    assert datamake.main(["imagenet", str(built), "--images", "24", "--classes", "4", "--shards", "3", "--tokens",
                          "4096", "--vocab", "1000"]) == 0
    assert "already built" in capsys.readouterr().out
    assert (built / dataset.MANIFEST).stat().st_mtime_ns == before


@pytest.mark.parametrize("make", [
    lambda d: (d.mkdir(), (d / "x.txt").write_text("mine")),
    lambda d: datamake.build(str(d), datamake.Spec(**{**SMALL.__dict__, "seed": 7})),
])
def test_an_existing_directory_that_is_not_this_dataset_is_refused(tmp_path, capsys, make):
    target = tmp_path / "ds"
    make(target)
    capsys.readouterr()
    argv = ["imagenet", str(target), "--images", "24", "--classes", "4", "--shards", "3", "--tokens", "4096",
            "--vocab", "1000"]
    assert datamake.main(argv) == 2
    err = capsys.readouterr().err
    assert err == f"datamake.py: {target} exists and is not this dataset: remove it or choose another directory\n"


def test_a_damaged_dataset_is_not_taken_as_built(tmp_path, capsys):
    target = tmp_path / "ds"
    datamake.build(str(target), SMALL)
    next((target / "train").rglob("*.JPEG")).unlink()
    with pytest.raises(datamake.BuildError, match="its files changed .*: remove it and build again"):
        datamake.build(str(target), SMALL)


def test_cli_data_make_and_index(tmp_path, capsys):
    target = tmp_path / "ds"
    argv = ["data", "make", "imagenet", str(target), "--images", "6", "--classes", "2", "--shards", "2",
            "--tokens", "64"]
    assert cli.main(argv) == 0
    assert dataset.formats(str(target)) == ["jpeg", "tfrecord", "tokens"]
    assert cli.main(argv) == 0  # nodes may be asked twice
    capsys.readouterr()
    assert cli.main(["data", "index", str(target)]) == 0
    assert json.loads(capsys.readouterr().out) == dataset.index(str(target))


@pytest.mark.parametrize("argv, message", [
    (["--images", "0"], r"^dlperf data make: argument --images: 0: give 1 or more \(see --help\)$"),
    (["--vocab", "x"], r"^dlperf data make: argument --vocab: 'x' is not a whole number"),
    (["--images", "4", "--classes", "5"],
     r"^dlperf data make: --classes 5: out of range: give 1 to 4 \(no more than --images\)$"),
    (["--images", "4", "--vocab", "70000"], r"^dlperf data make: --vocab 70000: out of range: give 2 to 65536$"),
])
def test_cli_bad_numbers_are_one_line(tmp_path, capsys, argv, message):
    try:
        code = cli.main(["data", "make", "imagenet", str(tmp_path / "ds"), *argv])
    except SystemExit as exc:
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and re.search(message, err.strip()), err
    assert not (tmp_path / "ds").exists()


def test_cli_unwritable_places_and_missing_directories_are_one_line(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    assert cli.main(["data", "make", "imagenet", str(tmp_path / "file" / "ds"), "--images", "2", "--tokens", "8"]) == 2
    err = capsys.readouterr().err
    assert err == (f"dlperf data make: {tmp_path / 'file' / 'ds'}: its parent {tmp_path / 'file'} is not a directory: "
                   "choose a directory under a writable one\n")
    assert cli.main(["data", "index", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "no such directory" in err and "dlperf data make imagenet" in err
    assert cli.main(["data"]) == 2
    err = capsys.readouterr().err
    assert err == "dlperf data: give a command: make (build a dataset) or index (print one's index)\n"
