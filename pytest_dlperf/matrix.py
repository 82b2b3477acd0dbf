"""The case matrix (model x precision x variant x the topology ladder) and the cluster shape it is
built from.

The shape is the cluster kind's declaration (``pytest_dlperf_cluster_shape``), read from the options
while pytest collects, so that collecting, ``--collect-only``, ``--help`` and a session whose tests
are all deselected touch no node. The cluster, built when the first case runs, is checked against
it (:func:`check_built`). A kind that declares no shape is built at collection, as before, and the
matrix is taken from its nodes.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

import pytest

from .clusters.shape import ClusterShape, mismatch, of_nodes
from .specs import COMPILED, CaseSpec, Profile, Topology, ladder, profile_for

if TYPE_CHECKING:
    from .clusters.base import Cluster
    from .launchers.base import Launcher
    from .options.core import RunOptions

# This session's declared shape (None: the kind declares none), and the verdict on the built cluster
# ("" when it fits the shape, else the mismatch line, raised again on every later use).
_DECLARED = pytest.StashKey[ClusterShape | None]()
_CHECKED = pytest.StashKey[str]()


def declared_shape(config: pytest.Config, options: RunOptions) -> ClusterShape | None:
    """The kind's shape from its options (asked once a session), with --dlperf-devices over its GPU/CPU answer."""
    if _DECLARED not in config.stash:
        shape = config.pluginmanager.hook.pytest_dlperf_cluster_shape(config=config, options=options)
        if shape is not None and options.devices:
            shape = replace(shape, gpus=options.devices == "gpu",
                            source=f"{shape.source}; --dlperf-devices {options.devices}")
        config.stash[_DECLARED] = shape
    return config.stash[_DECLARED]


def session_shape(config: pytest.Config, options: RunOptions, cluster: Callable[[], Cluster]) -> ClusterShape:
    """The shape the matrix is built from: the declared one, else the built cluster's (``cluster()`` builds it)."""
    shape = declared_shape(config, options)
    if shape is not None:
        return shape
    built = cluster()
    return of_nodes(built.nodes(), options.nodes, built.kind)


def check_built(config: pytest.Config, options: RunOptions, cluster: Cluster) -> None:
    """The built cluster against the declared shape: a difference the matrix depends on (node count,
    slots, GPU/CPU) raises pytest.UsageError with one line naming the option that fixes it, on this
    and every later call. Its nodes are asked for once (an SSH cluster's preflight runs then)."""
    if _CHECKED not in config.stash:
        declared = declared_shape(config, options)
        line = None
        if declared is not None:
            line = mismatch(declared, of_nodes(cluster.nodes(), options.nodes, cluster.kind), options.cluster)
        config.stash[_CHECKED] = line or ""
    if config.stash[_CHECKED]:
        raise pytest.UsageError(config.stash[_CHECKED])


def profile_of_shape(shape: ClusterShape) -> Profile:
    """The measurement profile (precisions, sizes, lengths) of the shape's nodes: GPU or CPU."""
    return profile_for(shape.gpus)


def compile_modes(launcher: Launcher, options: RunOptions, profile: Profile, model: str, topology: Topology) -> list[str]:
    """How the engine trains ``model`` on ``topology``: the modes --dlperf-compile names (that the engine
    has), else eager, and compiled too where the profile's default matrix compiles it."""
    if options.compile:
        return [m for m in options.compile if m in launcher.compile_modes]
    compiled = COMPILED in launcher.compile_modes and profile.compiles(model, topology)
    return ["eager", *([COMPILED] if compiled else [])]


def cases(launchers: Iterable[Launcher], options: RunOptions, shape: ClusterShape) -> list[CaseSpec]:
    """model x precision x variant x topology x data x compile mode for each engine, the ladder cut to the shape's
    nodes and slots (a model's precisions: the options', else its default sizes', else the profile's)."""
    profile = profile_of_shape(shape)
    out = []
    for launcher in launchers:
        models = [m for m in options.models or launcher.models if m in launcher.models]
        for model in models:
            try:
                d = launcher.model_defaults(profile.name, model)
            except (KeyError, ValueError) as exc:
                raise pytest.UsageError(f"--backend {launcher.name}: {exc}") from None
            precisions = [p for p in options.precisions or d.precisions or profile.precisions
                          if p in launcher.precisions]
            for precision, variant, topo in itertools.product(precisions, launcher.variants(profile.name, model),
                                                              ladder(shape.nodes, shape.slots)):
                case = CaseSpec(model=model, precision=precision, batch_size=options.batch_size or d.batch_size,
                                image_size=options.image_size or d.image_size, topology=topo,
                                backend=launcher.name, variant=variant)
                for data in options.data:
                    out += [replace(case, data=data).as_mode(mode)
                            for mode in compile_modes(launcher, options, profile, model, topo)]
    return out
