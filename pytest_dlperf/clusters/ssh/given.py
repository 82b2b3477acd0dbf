"""The nodes the SSH options name (--dlperf-hosts or --dlperf-hostfile, cut to --nodes), and the shape
they declare, read from the options alone: no connection, no SSH library imported."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from ..hosts import HOSTFILE_FORM, HOSTS_FORM, HostSpec, parse_hostfile, parse_hosts
from ..shape import ClusterShape

if TYPE_CHECKING:
    from ...options.core import RunOptions
    from .options import SSHOptions


def _listed(ssh: SSHOptions) -> list[HostSpec]:
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


def host_specs(options: RunOptions, ssh: SSHOptions) -> list[HostSpec]:
    """The hosts the session uses; bad input raises pytest.UsageError (exit 4) naming it."""
    specs = _listed(ssh)
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
    return specs


def ssh_shape(options: RunOptions, ssh: SSHOptions) -> ClusterShape:
    """The hosts' count and slots as given (a host without slots: 1, as a CPU node has); whether the
    nodes have GPUs the options do not say (--dlperf-devices does)."""
    specs = host_specs(options, ssh)
    where = "--dlperf-hosts" if ssh.hosts else "--dlperf-hostfile"
    return ClusterShape(nodes=len(specs), slots=min(options.gpus_per_node or s.slots or 1 for s in specs),
                        gpus=False, source=f"the hosts and slots of {where}, --dlperf-gpus-per-node")
