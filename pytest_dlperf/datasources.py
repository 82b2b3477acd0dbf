"""What a case can train on (``--dlperf-data``), one declaration each, as metrics/catalog.py declares the
metrics: its word (the option's value, and in a real-data case's id before the topology), the dataset format
each workload's loader reads for each model, what the nodes need installed beside the engine's framework and the line
that installs it, and whether the nodes must hold the dataset (checked before a case's first launch,
nodechecks/dataset.py). A new source is one declaration here and its loader on the nodes
(node/workloads/*_data.py, on ``workloadkit.Feed``)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

SYNTHETIC = "synthetic"
REAL = "real"  # the engine's own loader: the real-data figures' first source (real over synthetic)


@dataclass(frozen=True)
class DataSource:
    """One source. ``formats``: a workload's loader (a launcher's ``loader``: torch, tf, paddle) -> model -> the
    dataset format (node/workloads/dataset.py FORMATS) it reads; ``frameworks``: import name -> install line of
    what every node needs beside the engine's; ``lacking``: the skip's words where an engine reads none for a
    model ({backend}, {model}, {models})."""

    name: str
    said: str  # what it is, in --dlperf-data's help
    formats: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    frameworks: Mapping[str, str] = field(default_factory=dict)
    lacking: str = ""

    @property
    def reads_dataset(self) -> bool:
        """Whether a case reads a dataset the nodes must hold (every source but synthetic batches)."""
        return bool(self.formats)

    def format_for(self, loader: str | None, model: str) -> str | None:
        """The dataset format ``loader`` reads for ``model`` from this source (None: it does not)."""
        return self.formats.get(loader or "", {}).get(model)

    def why_not(self, backend: str, loader: str | None, model: str) -> str | None:
        """Why ``backend`` (its workload's ``loader``) cannot train ``model`` on this source (None: it can)."""
        if not self.reads_dataset or self.format_for(loader, model) is not None:
            return None
        models = ", ".join(self.formats.get(loader or "", {})) or "none of its models"
        return self.lacking.format(backend=backend, model=model, models=models)


IMAGES = {"resnet50": "jpeg", "vgg16": "jpeg", "arcface": "jpeg"}  # class folders of JPEGs

SOURCES: dict[str, DataSource] = {s.name: s for s in (
    DataSource(SYNTHETIC, "batches made once on the device (the default)"),
    DataSource(REAL, "the dataset of --dlperf-data-dir read by the engine's own loader (the case id gains -real)",
               # torch: a DataLoader (and the decoder's token file); TF: the NGC recipe's shards through
               # tf.data; Paddle: PaddleClas' list through paddle.io.DataLoader
               formats={"torch": {**IMAGES, "llama": "tokens"}, "tf": {"resnet50": "tfrecord", "vgg16": "tfrecord"},
                        "paddle": IMAGES},
               lacking="--backend {backend} reads no real dataset for {model} (it does for {models})"),
    DataSource("dali", "the same dataset read by an NVIDIA DALI pipeline",
               formats={"torch": IMAGES},
               frameworks={"nvidia.dali": "pip install 'pytest-dlperf[dali]' (NVIDIA DALI for CUDA 12; it runs "
                                          "CPU-only pipelines too)"},
               lacking="--backend {backend} has no DALI pipeline for {model} (it has for {models})"),
)}
DATA_SOURCES = tuple(SOURCES)


def source(name: str) -> DataSource:
    """The declaration of a source named by --dlperf-data (already checked against DATA_SOURCES)."""
    return SOURCES[name]


def install_line(framework: str) -> str | None:
    """The line that installs a source's framework on a node (None: no source needs it)."""
    return next((s.frameworks[framework] for s in SOURCES.values() if framework in s.frameworks), None)
