"""Hardware profiles: which baseline file a machine's measurements are gated against.

The rule (documented here and in ``detect_profile``):

- GPU nodes: ``gpu-<G>x-<gpu model>`` with G the GPUs per node, e.g. ``gpu-8x-tesla-v100-sxm2-16gb``.
- CPU nodes: ``cpu-<cpu model>-<C>c`` with C the cores a node's workers may use (the node's share:
  the local cluster splits the machine between its nodes, and a worker's speed depends on its
  share, not on the machine's total), e.g. ``cpu-amd-epyc-1c``.
- Nodes that differ are joined with ``_`` in node order, so a mixed cluster never shares a file
  with a uniform one.
- Then the major version of each framework the backend trains with, e.g. ``-torch2``: a new
  major version changes kernels and defaults, so its numbers are a new baseline. The number of
  nodes is not part of the profile: the topology is part of each case's key.

Model names are lower-cased, trademarks, "CPU", "Processor", "N-Core" and clock speeds removed,
and anything but letters, digits, ``.`` and ``-`` turned into ``-``: the name is a file name.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Protocol

from ..metrics import DeviceKind
from ..software import frameworks
from .schema import Tolerances


class NodeFacts(Protocol):
    """What a profile reads of a node (``clusters.base.Node`` has it)."""

    gpus: int
    cpus: int
    extra: dict[str, Any]


_PROFILE_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,127}$")
_NOISE = re.compile(
    r"\(r\)|\(tm\)|\bcpu\b|\bprocessor\b|\b\d+-core\b|@\s*[\d.]+\s*[gm]hz|\bwith radeon graphics\b",
    re.IGNORECASE,
)
_VERSION = re.compile(r"^\s*([A-Za-z][\w.-]*?)\s*(?:==|=|\s)\s*v?(\d+)(?:[.+\w-]*)\s*$")


def slug(text: str) -> str:
    """A hardware model name as a file-name-safe, lower-case word list: 'AMD EPYC 7B13' -> 'amd-epyc-7b13'."""
    cleaned = _NOISE.sub(" ", text).lower()
    return re.sub(r"[^a-z0-9.]+", "-", cleaned).strip("-.") or "unknown"


def framework_majors(framework_versions: Sequence[str], wanted: Sequence[str] | None = None) -> list[str]:
    """['torch 2.13.0'] -> ['torch2'] (short names: tensorflow 2.21 -> 'tf2', as the seeds write TF2),
    kept to the ``wanted`` frameworks (the case's launcher's ``frameworks_for``; None: every one)."""
    keep = None if wanted is None else {frameworks.short(slug(w)) for w in wanted if w}
    out = set()
    for text in framework_versions:
        m = _VERSION.match(text)
        if not m:
            raise ValueError(f"framework version {text!r}: expected 'name version' such as 'torch 2.13.0'")
        name = frameworks.short(slug(m.group(1)))
        if keep is None or name in keep:
            out.add(f"{name}{int(m.group(2))}")
    return sorted(out)


def node_descriptor(node: NodeFacts, cpu_model: str | None = None) -> str:
    """One node's hardware: 'gpu-8x-<gpu model>' or 'cpu-<cpu model>-<cores>c'. A Slurm node's
    features (``slurm_features``, e.g. ``a100,sxm4``: the site's own names for its node classes)
    stand for the model where the site set them."""
    features = "-".join(sorted(f for f in node.extra.get("slurm_features", "").split(",") if f))
    if node.gpus > 0:
        return f"gpu-{node.gpus}x-{slug(features or node.extra.get('gpu_name', '') or 'unknown-gpu')}"
    model = features or cpu_model or node.extra.get("cpu_model", "")
    if not model:
        from ..node.workloads.nodefacts import cpu_model as local_cpu_model

        model = local_cpu_model()
    return f"cpu-{slug(model)}-{node.cpus}c"


def detect_profile(nodes: Sequence[NodeFacts], framework_versions: Sequence[str], wanted: Sequence[str] | None = None,
                   cpu_model: str | None = None) -> str:
    """The profile name of a cluster: its nodes' hardware plus the major versions of the frameworks the
    case's engine trains with (``wanted``: its launcher's; None: every one given).

    ``cpu_model`` names the CPU of nodes that do not say (``node.extra['cpu_model']``); by default
    this machine's, which is right for local nodes. Cloud instances of one type (``node.extra
    ['instance_type']``, e.g. ``ecs.gn6v-c8g1.16xlarge``) are profiled by that type alone.
    """
    if not nodes:
        raise ValueError("a profile needs at least one node")
    types = {node.extra.get("instance_type", "") for node in nodes}
    if len(types) == 1 and "" not in types:  # provisioned instances of one type: the type names the
        return check_profile_name(types.pop().lower())  # hardware, as the shipped ecs.* files are named
    parts: list[str] = []
    for node in nodes:
        d = node_descriptor(node, cpu_model)
        if d not in parts:
            parts.append(d)
    name = "_".join(parts)
    majors = framework_majors(framework_versions, wanted)
    if majors:
        name += "-" + "-".join(majors)
    return check_profile_name(name)


def check_profile_name(name: str) -> str:
    """A profile name is a file name: lower-case letters, digits, '.', '_' and '-'; else ValueError."""
    if not _PROFILE_RE.match(name) or ".." in name:
        raise ValueError(f"profile name {name!r}: use lower-case letters, digits, '.', '_' and '-' "
                         "(it names the file <baseline-dir>/<profile>.json)")
    return name


# ECS GPU instance families (gn6v, gn7i, ebmgn6v, sgn7i, vgn6i ...); other ecs.* types are CPU machines.
_ECS_GPU = re.compile(r"^ecs\.(ebm|s|v)?gn")


def device_kind(profile: str) -> DeviceKind:
    """The device kind a profile's nodes have: CPU for ``cpu-*`` and the ECS families without GPUs."""
    if profile.startswith("cpu") or (profile.startswith("ecs.") and not _ECS_GPU.match(profile)):
        return DeviceKind.CPU
    return DeviceKind.GPU


def default_tolerances(profile: str) -> Tolerances:
    """The built-in tolerances of a new profile file: each gated metric's declared default for the
    profile's device kind (``metrics.catalog``: e.g. throughput 3% on GPUs, where DLPerf's repeated
    runs agree within about 1%, and 5% on CPUs; speedup and efficiency 15% on CPUs, ratios of two
    medians that move by tens of percent between sessions on a few shared cores)."""
    return Tolerances.defaults(device_kind(profile))
