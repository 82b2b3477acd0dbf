"""The SSH cluster built from the --dlperf-hosts/--dlperf-hostfile/--dlperf-ssh-* options (SSHOptions)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from ..base import ClusterError
from .cluster import SSHCluster
from .given import host_specs
from .options import SSHOptions

if TYPE_CHECKING:
    from ...options.core import RunOptions


def make_ssh_cluster(options: RunOptions, ssh: SSHOptions, frameworks: tuple[str, ...] = ()) -> SSHCluster:
    """The SSH cluster of the options; bad input raises pytest.UsageError (exit 4) naming it."""
    specs = host_specs(options, ssh)
    slots = options.gpus_per_node
    settings = ssh.settings()
    try:
        # The backend's framework: versions that differ between nodes stop the session here; a node
        # without it has its cases skipped by the session (with the install line).
        return SSHCluster(specs, settings, slots=slots, frameworks=frameworks, require_frameworks=False)
    except ClusterError as exc:
        raise pytest.UsageError(f"--dlperf-cluster ssh: {exc}") from None
