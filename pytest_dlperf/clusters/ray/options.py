"""The Ray cluster kind's options (--dlperf-ray-*), its plugin's ``pytest_addoption``, and
:class:`RayOptions`, their typed values resolved once per session. Light on purpose: loaded into
every pytest session, it imports neither Ray nor any of the kind's other modules."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import pytest

from ...options.argtypes import positive_seconds
from ...options.groups import OptionGroup
from .nodes import parse_labels, parse_resources

DEFAULT_WORKDIR = "/tmp/pytest-dlperf-ray"


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def add_options(parser: pytest.Parser) -> None:
    """--dlperf-cluster ray: the nodes of a running Ray cluster, reached through Ray (Ray Client from
    outside the cluster); the harness never starts or stops the cluster."""
    a = OptionGroup(parser, "dlperf-ray", "pytest-dlperf: --dlperf-cluster ray", after="dlperf-slurm")
    a("--dlperf-ray-address", default=None, metavar="ADDRESS",
      help="--dlperf-cluster ray: the Ray cluster to attach to, ray://HEAD:10001 (Ray Client, from outside "
           "the cluster) or HEAD:6379 / auto (on a node of it); default: RAY_ADDRESS")
    a("--dlperf-ray-python", default="", metavar="PATH",
      help="Python interpreter on the nodes that runs the launcher and workload (default: the Ray workers' own)")
    a("--dlperf-ray-workdir", default=DEFAULT_WORKDIR, metavar="DIR",
      help=f"directory on each node for the session's run directories, removed at the end (default {DEFAULT_WORKDIR})")
    a("--dlperf-ray-resource", default="", metavar="NAME[=N],...",
      help="only nodes with these custom resources (at least N, default 1); each node's bundle asks for them")
    a("--dlperf-ray-label", default="", metavar="KEY=VALUE,...", help="only nodes with these Ray node labels")
    a("--dlperf-ray-wait", type=positive_seconds, default=30.0, metavar="S",
      help="seconds the nodes' placement group and agents may take to be placed and start; then the "
           "session's launches fail naming what is missing (default 30)")


@dataclass(frozen=True)
class RayOptions:
    """The --dlperf-ray-* values."""

    address: str = ""
    python: str = ""
    workdir: str = DEFAULT_WORKDIR
    resources: dict[str, float] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    wait: float = 30.0

    @classmethod
    def from_config(cls, config: pytest.Config) -> RayOptions:
        get = config.getoption
        try:
            resources = parse_resources(get("dlperf_ray_resource") or "")
        except ValueError as exc:
            raise pytest.UsageError(f"--dlperf-ray-resource: {exc}") from None
        try:
            labels = parse_labels(get("dlperf_ray_label") or "")
        except ValueError as exc:
            raise pytest.UsageError(f"--dlperf-ray-label: {exc}") from None
        workdir = get("dlperf_ray_workdir") or DEFAULT_WORKDIR
        if not workdir.startswith("/"):
            raise pytest.UsageError(f"--dlperf-ray-workdir {workdir}: give an absolute path (a directory on every node)")
        return cls(address=get("dlperf_ray_address") or os.environ.get("RAY_ADDRESS", ""),
                   python=get("dlperf_ray_python") or "", workdir=workdir.rstrip("/") or "/",
                   resources=resources, labels=labels, wait=get("dlperf_ray_wait"))
