"""The SSH cluster built from the --dlperf-hosts/--dlperf-hostfile/--dlperf-ssh-* options."""
from __future__ import annotations

from pathlib import Path

import pytest

from ..base import ClusterError
from ..hosts import HOSTFILE_FORM, HOSTS_FORM, HostSpec, parse_hostfile, parse_hosts
from .cluster import SSHCluster
from .connect import SSHSettings


def _host_specs(config: pytest.Config) -> list[HostSpec]:
    hosts, hostfile = config.getoption("dlperf_hosts"), config.getoption("dlperf_hostfile")
    if hosts and hostfile:
        raise pytest.UsageError("--dlperf-cluster ssh: give either --dlperf-hosts or --dlperf-hostfile, not both")
    if not hosts and not hostfile:
        raise pytest.UsageError(f"--dlperf-cluster ssh needs the nodes: --dlperf-hosts {HOSTS_FORM}, "
                                f"or --dlperf-hostfile FILE ({HOSTFILE_FORM})")
    try:
        return parse_hosts(hosts) if hosts else parse_hostfile(hostfile)
    except (ValueError, FileNotFoundError) as exc:
        raise pytest.UsageError(str(exc) if not hosts else f"--dlperf-hosts: {exc}") from None


def make_ssh_cluster(config: pytest.Config, options, frameworks: tuple[str, ...] = ()) -> SSHCluster:  # noqa: ANN001
    """The SSH cluster of the options; bad input raises pytest.UsageError (exit 4) naming it."""
    specs = _host_specs(config)
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
    settings = ssh_settings(config)
    try:
        # The backend's framework: versions that differ between nodes stop the session here; a node
        # without it has its cases skipped by the session (with the install line).
        return SSHCluster(specs, settings, slots=slots, frameworks=frameworks, require_frameworks=False)
    except ClusterError as exc:
        raise pytest.UsageError(f"--dlperf-cluster ssh: {exc}") from None


def ssh_settings(config: pytest.Config) -> SSHSettings:
    """The --dlperf-ssh-* options (every cluster reached over SSH shares them)."""
    key = config.getoption("dlperf_ssh_key")
    if key and not Path(key).expanduser().is_file():
        raise pytest.UsageError(f"--dlperf-ssh-key {key}: no such file")
    known = config.getoption("dlperf_ssh_known_hosts")
    if known and not Path(known).expanduser().is_file():
        raise pytest.UsageError(f"--dlperf-ssh-known-hosts {known}: no such file")
    return SSHSettings(
        user=config.getoption("dlperf_ssh_user"), port=config.getoption("dlperf_ssh_port"),
        key=str(Path(key).expanduser()) if key else None,
        known_hosts=str(Path(known).expanduser()) if known else None,
        config=config.getoption("dlperf_ssh_config") or None,
        host_key_checking=config.getoption("dlperf_ssh_host_key_checking"),
        python=config.getoption("dlperf_ssh_python"), workdir=config.getoption("dlperf_ssh_workdir"),
        node_key=config.getoption("dlperf_ssh_node_key"),
        connect_timeout=config.getoption("dlperf_ssh_connect_timeout"), retries=config.getoption("dlperf_ssh_retries"))
