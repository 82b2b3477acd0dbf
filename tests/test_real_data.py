"""Real data beside synthetic (--dlperf-data): the case dimension, the dataset's index and its check on every
node, the input-pipeline figures from recorded meta lines, and (marked real) resnet50 trained on a dataset
`dlperf data make` wrote, with the seed's table; a corrupt JPEG named."""
from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_dlperf import metrics
from pytest_dlperf.metrics import NotMeasured
from pytest_dlperf.nodechecks.dataset import judge
from pytest_dlperf.results.records import RunRecord
from pytest_dlperf.specs import CPU_PROFILE, CaseSpec, Measurement, Topology

from tests.suite import QUICK_PROBES, run_suite

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "pytest_dlperf" / "node" / "workloads"))
import dataset  # noqa: E402  (node-side: imported as the nodes import it, beside the workloads)

CASE = CaseSpec("resnet50", "fp32", 8, 64, Topology(1, 1), data="real")
M = Measurement(warmup_iters=2, iters=3, repeats=1, timeout=60)


def ids(tmp_path: Path, *extra: str) -> list[str]:
    r = run_suite("--collect-only", "-k", "resnet50 or llama", *extra, f"--dlperf-report={tmp_path / 'r'}",
                  timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return [line.split("[", 1)[1].rstrip("]") for line in r.stdout.splitlines() if "::test_train[" in line]


def test_real_data_is_a_case_dimension_and_synthetic_stays_the_default(tmp_path):
    plain = ids(tmp_path)
    assert plain and not any("real" in i for i in plain)
    both = ids(tmp_path, "--dlperf-data", "synthetic,real", f"--dlperf-data-dir={tmp_path}")
    assert [i for i in both if "-real-" not in i] == plain
    assert "resnet50-fp32-bs8-64px-real-1n1g" in both and "resnet50-fp32-bs8-64px-real-2n1g" in both
    assert len(both) == 2 * len(plain)


@pytest.mark.parametrize("args, said", [
    (("--dlperf-data", "real"), "--dlperf-data real: give the dataset with --dlperf-data-dir DIR; make one with "
                                "`dlperf data make imagenet DIR`"),
    (("--dlperf-data", "real,jpeg"), "--dlperf-data: unknown jpeg; allowed: synthetic, real, dali"),
    (("--dlperf-data", "real", "--dlperf-data-dir=data/imagenet"), "--dlperf-data-dir data/imagenet: give an absolute "
                                                                  "path (the dataset's path on every node"),
])
def test_real_data_without_a_dataset_is_one_line_saying_how_to_make_one(tmp_path, args, said):
    r = run_suite("--collect-only", *args, f"--dlperf-report={tmp_path / 'r'}", timeout=120)
    assert r.returncode == 4
    assert said in r.stderr and "Traceback" not in r.stderr + r.stdout


def test_the_case_id_names_its_data_and_its_group_keeps_sources_apart():
    synthetic = replace(CASE, data="synthetic")
    assert synthetic.id == "resnet50-fp32-bs8-64px-1n1g" and CASE.id == "resnet50-fp32-bs8-64px-real-1n1g"
    assert CASE.group != synthetic.group and CASE.key == "ddp/resnet50-fp32-bs8-64px-real-1n1g"
    assert CASE.as_mode("compiled").id == "resnet50-fp32-bs8-64px-compiled-real-1n1g"
    assert CPU_PROFILE  # (the profile's sizes are those of the synthetic case)


def _images(root: Path, classes: int = 2, per: int = 3) -> None:
    from PIL import Image

    for c in range(classes):
        folder = root / "train" / f"n{c:08d}"
        folder.mkdir(parents=True)
        for k in range(per):
            Image.new("RGB", (50 + 10 * k, 40), (30 * c, 20 * k, 90)).save(folder / f"{k}.JPEG", quality=80)


def test_a_datasets_index_changes_with_a_missing_or_truncated_file(tmp_path):
    _images(tmp_path / "a")
    first = dataset.index(str(tmp_path / "a"))
    assert first["formats"] == ["jpeg"] and first["files"] == 6 and first["digest"] == dataset.index(str(tmp_path / "a"))["digest"]
    victim = tmp_path / "a" / "train" / "n00000001" / "2.JPEG"
    victim.write_bytes(victim.read_bytes()[:100])
    assert dataset.index(str(tmp_path / "a"))["digest"] != first["digest"]
    victim.unlink()
    assert dataset.index(str(tmp_path / "a"))["files"] == 5
    assert dataset.index(str(tmp_path / "none")) == {"contract": 1, "root": str(tmp_path / "none"), "missing": True}


def test_samples_are_labelled_by_their_class_folder_and_a_directory_of_nothing_known_is_named(tmp_path):
    _images(tmp_path / "a")
    samples = dataset.image_samples(str(tmp_path / "a"))
    assert [label for _, label in samples] == [0, 0, 0, 1, 1, 1]
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "notes.txt").write_text("x")
    with pytest.raises(dataset.DatasetError, match=r"b: holds no ImageNet as class folders of JPEGs"):
        dataset.image_samples(str(tmp_path / "b"))
    with pytest.raises(dataset.DatasetError, match=r"no such directory; make one with `dlperf data make imagenet"):
        dataset.require(str(tmp_path / "c"), "jpeg")


def test_a_training_image_is_cropped_to_size_and_a_corrupt_file_is_named(tmp_path):
    import random

    _images(tmp_path / "a")
    path, _ = dataset.image_samples(str(tmp_path / "a"))[0]
    assert dataset.train_image(path, 32, random.Random(0)).shape == (32, 32, 3)
    bad = tmp_path / "bad.JPEG"
    bad.write_bytes(b"\xff\xd8\xff\xe0 not a jpeg")
    with pytest.raises(dataset.DatasetError, match=rf"{bad}: cannot decode this JPEG .*replace or remove the file"):
        dataset.train_image(str(bad), 32, random.Random(0))


def test_random_resized_crop_stays_inside_the_image_within_its_scale_and_ratio():
    import random

    rng = random.Random(1)
    for _ in range(200):
        left, top, right, bottom = dataset.ResizedCrop().box(500, 375, rng)
        assert 0 <= left < right <= 500 and 0 <= top < bottom <= 375
        assert (right - left) * (bottom - top) >= 0.07 * 500 * 375


def test_the_page_cache_is_emptied_where_asked_and_said_where_it_cannot_be(monkeypatch):
    import builtins
    import io

    written = []

    class Proc(io.StringIO):
        def close(self) -> None:
            written.append(self.getvalue())
            super().close()

    def fake(path, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202 - /proc's drop_caches, else the file
        return Proc() if path == "/proc/sys/vm/drop_caches" else builtins.open(path, *args, **kwargs)

    monkeypatch.setattr(os, "sync", lambda: None)
    monkeypatch.setattr(dataset, "open", fake, raising=False)
    got = dataset.page_cache(10, drop=True)
    assert got["dropped"] is True and got["fits"] is True and written == ["3\n"]
    assert "dropped" not in dataset.page_cache(10)

    def refused(path, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        if path == "/proc/sys/vm/drop_caches":
            raise PermissionError(13, "Permission denied")
        return builtins.open(path, *args, **kwargs)

    monkeypatch.setattr(dataset, "open", refused, raising=False)
    got = dataset.page_cache(10, drop=True)
    assert got["dropped"] is False and got["why"].startswith("cannot drop the page cache here (Permission denied): it "
                                                             "needs root")


def test_the_dry_run_shows_a_real_cases_loader_flags(tmp_path):
    r = run_suite("--dlperf-dryrun", "-k", "resnet50 and 1n1g and not compiled", "--dlperf-data", "synthetic,real",
                  f"--dlperf-data-dir={tmp_path}", "--dlperf-drop-caches", "--dlperf-data-workers=2",
                  f"--dlperf-report={tmp_path / 'r'}", timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    real = r.stdout[r.stdout.index("# resnet50-fp32-bs8-64px-real-1n1g"):].split("\n# ")[0]
    synthetic = r.stdout[r.stdout.index("# resnet50-fp32-bs8-64px-1n1g"):].split("\n# ")[0]
    assert f"--data real --data-dir {tmp_path} --data-workers 2 --drop-caches" in real
    assert "--data" not in synthetic.replace("--dlperf", "")


INDEX = {"formats": ["jpeg", "tfrecord", "tokens"], "files": 10, "bytes": 1000, "digest": "aaaa"}


@pytest.mark.parametrize("found, said", [
    ({"n0": INDEX, "n1": INDEX}, None),
    ({"n0": INDEX, "n1": {"missing": True}}, "--dlperf-data-dir /d does not exist on n1: make it there "
                                             "(`dlperf data make imagenet /d`"),
    ({"n0": INDEX, "n1": {**INDEX, "formats": ["tfrecord"]}}, "--dlperf-data-dir /d on n1 holds no jpeg data "
                                                              "(found: tfrecord)"),
    ({"n0": INDEX, "n1": {**INDEX, "files": 9, "digest": "bbbb"}},
     "--dlperf-data-dir /d differs between nodes (n0: 10 files, 1000 bytes, index aaaa; n1: 9 files, 1000 bytes, "
     "index bbbb): every node must hold the same dataset"),
])
def test_every_node_must_hold_the_same_dataset_and_the_odd_one_is_named(found, said):
    got = judge(found, ["n0", "n1"], "/d", "jpeg")
    assert got == said if said is None else got.startswith(said)


def run_with(inputs: dict, window: tuple[float, float] = (0.0, 1.0)) -> RunRecord:
    return RunRecord(repeat=0, meta={"input": inputs, "window": {"start": window[0], "end": window[1]}}, steps=[],
                     commands=[], logs={}, wall_seconds=1.0)


def test_input_wait_is_the_rank_that_waited_most_and_a_tenth_of_the_window_is_data_bound():
    run = run_with({"wait_seconds": [[0.001, 0.002, 0.003], [0.010, 0.030, 0.020]], "loader_samples_per_s": [400, 410]},
                   window=(10.0, 10.5))
    wait, p95 = metrics.get("input_wait"), metrics.get("input_wait_p95")
    share, loader = metrics.get("input_share"), metrics.get("loader_throughput")
    assert wait.per_launch(run, CASE, M) == pytest.approx(0.020)
    assert p95.per_launch(run, CASE, M) == pytest.approx(0.029)
    assert share.per_launch(run, CASE, M) == pytest.approx(0.060 / 0.5)
    assert loader.per_launch(run, CASE, M) == 810
    assert share.flagged(0.12) == ("data-bound: this figure follows the input pipeline, not the model's step "
                                   "(input wait share 12.0%, above 10.0%)")
    assert share.flagged(0.05) is None
    assert wait.show(0.020) == "20 ms"


def test_input_figures_belong_to_real_data_cases_and_are_never_invented():
    synthetic = replace(CASE, data="synthetic")
    for name in ("input_wait", "input_wait_p95", "input_share", "loader_throughput"):
        m = metrics.get(name)
        assert m.has(CASE) and not m.has(synthetic)
        with pytest.raises(NotMeasured):
            m.per_launch(RunRecord(repeat=0, meta={}, steps=[], commands=[], logs={}, wall_seconds=1.0), CASE, M)
    with pytest.raises(NotMeasured, match="no input wait per step"):
        metrics.get("input_wait").per_launch(run_with({"wait_seconds": []}), CASE, M)
    assert not metrics.get("input_wait").gated and metrics.get("loader_throughput").gated


def test_a_case_that_becomes_data_bound_is_counted_and_said():
    bound = metrics.get("data_bound")
    assert bound.counted and bound.gated and bound.has(CASE) and not bound.has(replace(CASE, data="synthetic"))
    waiting = run_with({"wait_seconds": [[0.02, 0.03, 0.03]]}, window=(0.0, 0.5))  # 16% of the window
    fed = run_with({"wait_seconds": [[0.001, 0.001, 0.002]]}, window=(0.0, 0.5))
    assert bound.per_launch(waiting, CASE, M) == 1.0 and bound.per_launch(fed, CASE, M) == 0.0
    assert bound.said(waiting) == ["waited for its batches 16.0% of the window"] and bound.said(fed) == []


# ---------------------------------------------------------------- real training (CI's real tier)
SMALL_REAL = ("--dlperf-model", "resnet50", "--dlperf-precision", "fp32", "--dlperf-batch-size", "2",
              "--dlperf-image-size", "32", "--dlperf-repeats", "1", "--dlperf-budget", "0", *QUICK_PROBES)


@pytest.mark.real
def test_resnet50_trains_on_a_dataset_made_on_its_node_beside_synthetic_with_the_seeds_table(tmp_path):
    """--dlperf-data-make builds the dataset on the node (through the cluster's own channel), the real case
    reads it through a DataLoader with a worker, and the report has its input wait, its loader alone and
    the synthetic/real table."""
    data, report = tmp_path / "imagenet", tmp_path / "r"
    r = run_suite(*SMALL_REAL, "-k", "1n1g and not compiled", "--dlperf-data", "synthetic,real",
                  f"--dlperf-data-dir={data}", "--dlperf-data-make", f"--dlperf-report={report}", timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert json.loads((data / dataset.MANIFEST).read_text())["index"]["digest"] == dataset.index(str(data))["digest"]
    doc = json.loads((report / "results.json").read_text())
    real = next(c for c in doc["cases"] if c["case"]["data"] == "real")
    assert real["case"]["id"] == "resnet50-fp32-bs2-32px-real-1n1g"
    run = real["runs"][0]["meta"]["input"]
    assert run["format"] == "jpeg" and run["workers"] == 1 and run["samples"] == 512 and run["page_cache"]["fits"]
    assert len(run["wait_seconds"]) == 1 and len(run["wait_seconds"][0]) == real["runs"][0]["meta"]["iters"]
    assert real["metrics"]["input_wait"]["value"] > 0 and real["metrics"]["loader_throughput"]["value"] > 0
    assert "input_wait" not in next(c for c in doc["cases"] if c["case"]["data"] == "synthetic")["metrics"]
    table = r.stdout[r.stdout.index("data: synthetic, real and DALI"):]
    row = next(line for line in table.splitlines() if "resnet50 fp32 bs2 32px" in line)
    assert row.split()[:2] == ["ddp", "resnet50"] and "1n1g" in row and "(1.00)" in row
    assert "## Synthetic and real data" in (report / "summary.md").read_text()


@pytest.mark.real
def test_a_corrupt_jpeg_fails_its_case_naming_the_file(tmp_path):
    data = tmp_path / "imagenet"
    from pytest_dlperf.cli import main

    assert main(["data", "make", "imagenet", str(data), "--images", "8", "--classes", "2", "--tokens", "64"]) == 0
    victim = sorted((data / "train").glob("*/*.JPEG"))[3]
    victim.write_bytes(victim.read_bytes()[:200])  # truncated: Pillow cannot decode it
    r = run_suite(*SMALL_REAL, "-k", "real-1n1g and not compiled", "--dlperf-data", "real", f"--dlperf-data-dir={data}",
                  "--dlperf-data-workers=1", f"--dlperf-report={tmp_path / 'r'}", timeout=600)
    assert r.returncode == 1, r.stdout[-3000:]
    assert f"{victim}: cannot decode this JPEG" in r.stdout and "replace or remove the file" in r.stdout


@pytest.mark.real
def test_resnet50_trains_through_a_dali_pipeline_on_the_cpu(tmp_path):
    """--dlperf-data dali: DALI's file reader, its CPU image decoder, random resized crop and crop-mirror-normalize
    feed torch (the [dali] extra, nvidia-dali-cuda120, runs CPU-only pipelines); the case has its input figures."""
    from tests.frameworks import ensure

    ensure("nvidia.dali", "dali")
    from pytest_dlperf.cli import main

    data, report = tmp_path / "imagenet", tmp_path / "r"
    assert main(["data", "make", "imagenet", str(data), "--images", "32", "--classes", "4", "--tokens", "64"]) == 0
    r = run_suite(*SMALL_REAL, "-k", "dali-1n1g and not compiled", "--dlperf-data", "dali", f"--dlperf-data-dir={data}",
                  f"--dlperf-report={report}", timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    (case,) = json.loads((report / "results.json").read_text())["cases"]
    assert case["case"]["id"] == "resnet50-fp32-bs2-32px-dali-1n1g"
    got = case["runs"][0]["meta"]["input"]
    assert got["source"] == "dali" and got["decoder"] == "cpu" and got["samples"] == 32 and got["dali"].startswith("2.")
    assert len(got["wait_seconds"][0]) == case["runs"][0]["meta"]["iters"]
    assert case["metrics"]["loader_throughput"]["value"] > 0
