"""The SSH cluster built from the --dlperf-hosts/--dlperf-hostfile/--dlperf-ssh-* options (SSHOptions)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from ..base import ClusterError
from ..hosts import HOSTFILE_FORM, HOSTS_FORM, HostSpec, parse_hostfile, parse_hosts
from .cluster import SSHCluster
from .options import SSHOptions

if TYPE_CHECKING:
    from ...options import RunOptions


def _host_specs(ssh: SSHOptions) -> list[HostSpec]:
    hosts, hostfile = ssh.hosts, ssh.hostfile
    if hosts and hostfile:
        raise pytest.UsageError("--dlperf-cluster ssh: give either --dlperf-hosts or --dlperf-hostfile, not both")
    if not hosts and not hostfile:
        raise pytest.UsageError(f"--dlperf-cluster ssh needs the nodes: --dlperf-hosts {HOSTS_FORM}, "
                                f"or --dlperf-hostfile FILE ({HOSTFILE_FORM})")
    try:
        return parse_hosts(hosts) if hosts else parse_hostfile(hostfile)
    except (ValueError, FileNotFoundError) as exc:
        raise pytest.UsageError(str(exc) if not hosts else f"--dlperf-hosts: {exc}") from None


def make_ssh_cluster(options: RunOptions, ssh: SSHOptions, frameworks: tuple[str, ...] = ()) -> SSHCluster:
    """The SSH cluster of the options; bad input raises pytest.UsageError (exit 4) naming it."""
    specs = _host_specs(ssh)
    names = ", ".join(s.name for s in specs)
    if options.nodes and options.nodes > len(specs):
        raise pytest.UsageError(f"--nodes {options.nodes}: only {len(specs)} host(s) given: {names}")
    specs = specs[:options.nodes] if options.nodes else specs
    slots = options.gpus_per_node
    if slots:
        short = [s.name for s in specs if s.slots is not None and s.slots < slots]
        if short:
            raise pytest.UsageError(f"--dlperf-gpus-per-node {slots}: more than the slots given for "
                                    f"{', '.join(short)}")
    settings = ssh.settings()
    try:
        # The backend's framework: versions that differ between nodes stop the session here; a node
        # without it has its cases skipped by the session (with the install line).
        return SSHCluster(specs, settings, slots=slots, frameworks=frameworks, require_frameworks=False)
    except ClusterError as exc:
        raise pytest.UsageError(f"--dlperf-cluster ssh: {exc}") from None
