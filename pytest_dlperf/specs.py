"""Dataclass specs: topologies, benchmark cases and the settings a run is measured with."""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from enum import Enum
from typing import TYPE_CHECKING

from .datasources import SYNTHETIC

if TYPE_CHECKING:
    from .clusters.base import Node

PRECISIONS = ("fp32", "amp")
SEQUENCE_MODELS = ("bert-base", "llama")  # their input size is a sequence length, shown as seqN in case ids
TOKEN_MODELS = ("llama",)  # their throughput counts tokens (batch x sequence per device and step), not samples
# How a case's model runs: as written, or through torch.compile. A compiled case's variant ends in COMPILED
# (``llama-fp32-bs2-seq64-d256l4-compiled-1n1g``); an eager case's id is as it always was.
COMPILE_MODES = ("eager", "compiled")
COMPILED = "compiled"
# What a case trains on (--dlperf-data): batches made on the device once (synthetic, as every seed's default),
# a real dataset read by the engine's own loader (real), or by an NVIDIA DALI pipeline (dali). A real or
# dali case's id carries it before the topology (``resnet50-fp32-bs8-64px-real-1n1g``).
# Each source is declared in datasources.py.

_TOPO_RE = re.compile(r"^(\d+)n(\d+)g$")


@dataclass(frozen=True, order=True)
class Topology:
    """Nodes x devices per node, named as DLPerf names it (``2n8g``)."""

    nodes: int
    devices_per_node: int

    @property
    def name(self) -> str:
        return f"{self.nodes}n{self.devices_per_node}g"

    @property
    def world_size(self) -> int:
        return self.nodes * self.devices_per_node

    @classmethod
    def parse(cls, text: str) -> Topology:
        m = _TOPO_RE.match(text.strip())
        if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
            raise ValueError(f"bad topology {text!r}: expected NnGg such as 1n1g or 2n8g")
        return cls(int(m.group(1)), int(m.group(2)))

    def __str__(self) -> str:
        return self.name


def _powers_of_two_upto(n: int) -> list[int]:
    out, k = [], 1
    while k < n:
        out.append(k)
        k *= 2
    out.append(n)
    return out


def ladder(nodes: int, devices_per_node: int) -> list[Topology]:
    """DLPerf's ladder: 1n1g, 1n2g, 1n4g ... 1nGg, then 2nGg, 4nGg ... NnGg (N always included)."""
    if nodes < 1 or devices_per_node < 1:
        raise ValueError("nodes and devices per node must be at least 1")
    steps = [Topology(1, g) for g in _powers_of_two_upto(devices_per_node)]
    steps += [Topology(n, devices_per_node) for n in _powers_of_two_upto(nodes)[1:]]
    return steps


@dataclass(frozen=True)
class CaseSpec:
    """One benchmark case: what trains, how, and on which topology."""

    model: str
    precision: str
    batch_size: int  # per device
    image_size: int
    topology: Topology
    backend: str = "ddp"
    variant: str = ""  # a backend's own case dimension: "xla"/"noxla" (tf), "cls4096" (ArcFace classes)
    data: str = SYNTHETIC  # what it trains on (DATA_SOURCES)

    @property
    def size_label(self) -> str:
        return f"seq{self.image_size}" if self.model in SEQUENCE_MODELS else f"{self.image_size}px"

    @property
    def id(self) -> str:
        """The pytest id, e.g. ``resnet50-fp32-bs8-64px-2n1g``, ``resnet50-fp32-bs8-64px-noxla-2n1g``,
        ``resnet50-fp32-bs8-64px-real-2n1g`` (a synthetic case's id names no data)."""
        variant = f"-{self.variant}" if self.variant else ""
        data = f"-{self.data}" if self.data != SYNTHETIC else ""
        return (f"{self.model}-{self.precision}-bs{self.batch_size}-{self.size_label}{variant}{data}"
                f"-{self.topology.name}")

    @property
    def real_data(self) -> bool:
        """Whether it reads a dataset (real or dali), not batches made on the device."""
        return self.data != SYNTHETIC

    @property
    def compiled(self) -> bool:
        """Whether the model trains through torch.compile (the variant's last part is ``compiled``)."""
        return self.variant.split("-")[-1] == COMPILED

    @property
    def compile_mode(self) -> str:
        return COMPILED if self.compiled else "eager"

    def as_mode(self, mode: str) -> CaseSpec:
        """This case eager or compiled (``COMPILE_MODES``), everything else the same."""
        parts = [p for p in self.variant.split("-") if p and p != COMPILED]
        return replace(self, variant="-".join(parts + ([COMPILED] if mode == COMPILED else [])))

    @property
    def unit(self) -> str:
        """What the case's throughput counts per second: ``tokens/s`` for a decoder, else ``samples/s``."""
        return "tokens/s" if self.model in TOKEN_MODELS else "samples/s"

    @property
    def items_per_sample(self) -> int:
        """Throughput items in one sample: a decoder's sequence is that many tokens."""
        return self.image_size if self.model in TOKEN_MODELS else 1

    @property
    def group(self) -> tuple[str, str, int, int, str, str, str]:
        """Cases that share everything but the topology; speedup is taken within a group."""
        return (self.model, self.precision, self.batch_size, self.image_size, self.backend, self.variant, self.data)

    @property
    def key(self) -> str:
        """Baseline key: every field that changes what is measured."""
        return f"{self.backend}/{self.id}"

    def to_dict(self) -> dict:
        d = asdict(self)
        d["topology"] = self.topology.name
        d["id"] = self.id
        d["unit"] = self.unit
        return d


class CheckpointMode(str, Enum):
    """--dlperf-checkpoint: which launches take a checkpoint after their window (measure/checkpoints.py decides
    auto's per launch: a launch runs ON or OFF)."""

    AUTO = "auto"
    ON = "on"
    OFF = "off"


@dataclass(frozen=True)
class Measurement:
    """How each run of a case is measured (the workload reports the lengths it actually ran)."""

    warmup_iters: int  # warm-up steps, at least
    iters: int  # measured steps; the least when window_seconds is set
    repeats: int
    timeout: float  # seconds for one run, start to finish
    max_warmup_iters: int = 0  # warm up until two steps agree, at most this many (0: exactly warmup_iters)
    window_seconds: float = 0.0  # size the window to about this long at the warm-up's pace (0: iters)
    max_iters: int = 0  # measured steps at most (0: no cap)
    min_repeats: int = 0  # under a budget, the fewest launches a case takes (0: always repeats)
    budget: float = 0.0  # the session's measuring seconds, which set how many launches (measure/budget.py; 0: none)
    pace_probe: bool = False  # the pace probe beside every node's launch on CPU nodes (watchers/pace.py)
    # launches adapted to their spread: a case stops at this many launches where their throughputs'
    # CV is at most settle_cv, else goes on to ``repeats`` (0: every case takes its repeats)
    settle_launches: int = 0
    settle_cv: float = 0.0
    # a compiled case's inductor caches: "" (each launch compiles into an empty cache of its own, removed
    # after it), else a directory on every node that the launches share and keep (--dlperf-compile-cache)
    compile_cache: str = ""
    # without a kept cache, a compiled case's first cold_launches launches compile cold (compile time, time to
    # first step and peak memory are taken from them); the later ones start from the first's cache, so they
    # measure the same compiled program's window without compiling it again (--dlperf-cold-launches)
    cold_launches: int = 3
    # a real-data case's dataset: its directory on every node (--dlperf-data-dir) and the loader's worker
    # processes per rank (None: from the node's cores and devices; --dlperf-data-workers)
    data_dir: str = ""
    data_workers: int | None = None
    drop_caches: bool = False  # empty each node's page cache before a real-data launch reads (--dlperf-drop-caches)
    # a profiled launch (--dlperf-explain): this many steps after the window under the framework's profiler,
    # a trace per rank; such a launch is never counted (0: an ordinary launch)
    profile_steps: int = 0
    # after the window, the model's and optimizer's state saved and loaded back, each timed on every rank
    # (--dlperf-checkpoint: "on", "off", or the session's "auto", which measure/checkpoints.py decides per launch);
    # where: a directory every node reaches (--dlperf-checkpoint-dir; "": the run's own)
    checkpoint: str = CheckpointMode.OFF.value
    checkpoint_dir: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class ModelDefaults:
    """A model's default per-device batch and input size (image side; a sequence length for text)."""

    batch_size: int
    image_size: int
    precisions: tuple[str, ...] = ()  # the precisions it trains in by default (): the profile's


@dataclass(frozen=True)
class Profile:
    """Measurement lengths for a kind of node (per-model sizes are the launcher's)."""

    name: str
    precisions: tuple[str, ...] = PRECISIONS  # the default precisions
    warmup_iters: int = 5
    iters: int = 20
    repeats: int = 5
    max_warmup_iters: int = 0
    window_seconds: float = 0.0
    max_iters: int = 0
    min_repeats: int = 0
    budget: float = 0.0
    record_repeats: int = 0  # launches a case takes when --update-baselines records it (0: repeats)
    settle_launches: int = 0  # a session's case stops at this many launches where they agree (Measurement)
    settle_cv: float = 0.0  # ... within this CV of their throughputs
    # the compiled cases of a session without --dlperf-compile, as (model, topology) ("*": any); every
    # case is eager too
    compiled: tuple[tuple[str, str], ...] = (("*", "*"),)

    def compiles(self, model: str, topology: Topology) -> bool:
        """Whether the profile's default matrix has the compiled case of ``model`` on ``topology``."""
        return any(m in ("*", model) and t in ("*", topology.name) for m, t in self.compiled)


# Small enough that a backend's whole default suite (its models x fp32 x 1n1g, 2n1g x 3 repeats)
# finishes within six minutes on 2 CPU cores: the window is time-based (about 1.5 s of steps, at least 3,
# whatever the machine's pace), the warm-up lasts until the steps settle (VGG's first steps pay
# for first-touch memory for seconds), and on a slower machine a budget of 330 s of measuring
# gives up repeats where the time runs short (measure/budget.py; 1 launch a case at least).
CPU_PROFILE = Profile(
    name="cpu",
    precisions=("fp32",),  # AMP (bf16 autocast) on CPU nodes with --dlperf-precision amp
    warmup_iters=2,
    iters=3,
    repeats=3,
    max_warmup_iters=4,
    window_seconds=1.5,
    max_iters=40,
    min_repeats=1,
    budget=330.0,
    # A baseline is recorded once and judged against in every later session, so it takes more
    # launches than a session does: with its median and spread known better, a session of 3
    # launches catches a given slow-down more often (benchmarks/gate_power.py --baseline-runs;
    # the README's gate section has the figures).
    record_repeats=8,
    # One compiled case: the decoder (what people compile: torchtitan, Hugging Face) at 1n1g. Each of its
    # launches compiles cold for about 25 s on one core (docs/measurements.md); a compiled 2n1g would pay
    # that again on the other core, and the budget takes the time from the other cases' repeats.
    # --dlperf-compile eager,compiled runs every model and topology both ways.
    compiled=(("llama", "1n1g"),),
)
# The default GPU suite on one GPU in under 12 minutes (docs/budget.md, "GPU nodes", has the sums):
# a window of about 5 s (resnet50 fp32's 100 steps of 53 ms ran at CV 0.1-0.2% on an H100 and an H200)
# at the warm-up's pace, 10 steps at least; a warm-up until two steps agree (5 to 20); 3 launches a
# case, and up to 5 only where the first 3 spread beyond CV 0.5% (up to there three say what five do:
# against a 5-launch baseline the rank test finds a 3% drop in every simulated session either way;
# docs/budget.md), within 600 s of measuring; a baseline records 5.
GPU_PROFILE = Profile(
    name="gpu",
    warmup_iters=5,
    max_warmup_iters=20,
    iters=10,
    window_seconds=5.0,
    max_iters=500,
    repeats=5,
    min_repeats=3,
    budget=600.0,
    settle_launches=3,
    settle_cv=0.005,
    # one compiled case, as on CPU nodes: every case compiled too would double the launches and add each
    # compile, and the default GPU suite is held to 12 minutes on one GPU (issue #50); --dlperf-compile
    # eager,compiled runs every model and topology both ways
    compiled=(("llama", "1n1g"),),
)


def profile_for(gpus: bool) -> Profile:
    """The measurement profile of GPU nodes (GPU_PROFILE) or CPU nodes (CPU_PROFILE)."""
    return GPU_PROFILE if gpus else CPU_PROFILE


def profile_of(nodes: Sequence[Node]) -> Profile:
    """The measurement profile of a set of nodes: GPU_PROFILE where the first node has GPUs, else CPU_PROFILE."""
    return profile_for(bool(nodes and nodes[0].gpus))
