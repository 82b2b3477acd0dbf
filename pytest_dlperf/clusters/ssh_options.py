"""Command-line options of the SSH cluster (in the "dlperf" group) and the cluster built from them."""
from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from ..options import non_negative_int, positive_seconds
from .base import ClusterError
from .hosts import HOSTFILE_FORM, HOSTS_FORM, HostSpec, parse_hostfile, parse_hosts
from .ssh import SSHCluster
from .ssh_connect import DEFAULT_CONFIG, HOST_KEY_CHECKING, SSHSettings


def _port(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"expected a TCP port 1-65535, got {text!r}")
    return int(text)




def _hosts(text: str) -> str:
    """Checked when the command line is read, so a bad host list is a usage error (exit 4)."""
    try:
        parse_hosts(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _hostfile(text: str) -> str:
    try:
        parse_hostfile(text)
    except (ValueError, FileNotFoundError) as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def add_ssh_options(parser: pytest.Parser) -> None:
    """Add --hosts, --hostfile and the --ssh-* options to the dlperf group."""
    g = parser.getgroup("dlperf")
    g.addoption("--hosts", type=_hosts, default=None, metavar="HOST:SLOTS,...",
                help=f"--cluster ssh: the nodes, horovodrun style: {HOSTS_FORM}. A host is an address "
                     "or an alias of the ssh config; node 0 (the first) is the rendezvous master")
    g.addoption("--hostfile", type=_hostfile, default=None, metavar="FILE",
                help=f"--cluster ssh: the nodes from a file, {HOSTFILE_FORM}")
    g.addoption("--ssh-user", default=None, dest="ssh_user",
                help="login name on every node (default: the ssh config's User, else yours)")
    g.addoption("--ssh-port", type=_port, default=None, dest="ssh_port",
                help="sshd port on every node (default: the ssh config's Port, else 22)")
    g.addoption("--ssh-key", default=None, dest="ssh_key", metavar="FILE",
                help="private key (identity file) to log in with (default: the ssh config's "
                     "IdentityFile, ~/.ssh/id_* and the agent)")
    g.addoption("--ssh-known-hosts", default=None, dest="ssh_known_hosts", metavar="FILE",
                help="known_hosts file the host keys are checked against (default: ~/.ssh/known_hosts "
                     "or the ssh config's UserKnownHostsFile)")
    g.addoption("--ssh-config", default=DEFAULT_CONFIG, dest="ssh_config", metavar="FILE",
                help="OpenSSH client config for per-host HostName, Port, User, IdentityFile and ProxyJump "
                     f"(default {DEFAULT_CONFIG}; {Path('/dev/null')} reads none)")
    g.addoption("--ssh-host-key-checking", choices=HOST_KEY_CHECKING, default="strict",
                dest="ssh_host_key_checking",
                help="strict (default): refuse hosts whose key is unknown or changed. "
                     "accept-new: INSECURE, trust unknown hosts for this session (changed keys are still "
                     "refused). off: INSECURE, accept any host key, even a changed one")
    g.addoption("--ssh-python", default="python3", dest="ssh_python", metavar="PATH",
                help="Python interpreter on the nodes that runs the launcher and workload (default python3)")
    g.addoption("--ssh-workdir", default=None, dest="ssh_workdir", metavar="DIR",
                help="directory on the nodes for per-run directories (default /tmp/pytest-dlperf-<user>; "
                     "relative paths are under the login's home)")
    g.addoption("--ssh-connect-timeout", type=positive_seconds, default=10.0, dest="ssh_connect_timeout",
                help="seconds to wait for a node to answer (default 10)")
    g.addoption("--ssh-retries", type=non_negative_int, default=3, dest="ssh_retries",
                help="extra connection attempts after a network error, with doubling backoff (default 3)")


def _host_specs(config: pytest.Config) -> list[HostSpec]:
    hosts, hostfile = config.getoption("hosts"), config.getoption("hostfile")
    if hosts and hostfile:
        raise pytest.UsageError("--cluster ssh: give either --hosts or --hostfile, not both")
    if not hosts and not hostfile:
        raise pytest.UsageError(f"--cluster ssh needs the nodes: --hosts {HOSTS_FORM}, "
                                f"or --hostfile FILE ({HOSTFILE_FORM})")
    try:
        return parse_hosts(hosts) if hosts else parse_hostfile(hostfile)
    except (ValueError, FileNotFoundError) as exc:
        raise pytest.UsageError(str(exc) if not hosts else f"--hosts: {exc}") from None


def make_ssh_cluster(config: pytest.Config, options) -> SSHCluster:  # noqa: ANN001 - RunOptions
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
            raise pytest.UsageError(f"--gpus-per-node {slots}: more than the slots given for "
                                    f"{', '.join(short)}")
    key = config.getoption("ssh_key")
    if key and not Path(key).expanduser().is_file():
        raise pytest.UsageError(f"--ssh-key {key}: no such file")
    known = config.getoption("ssh_known_hosts")
    if known and not Path(known).expanduser().is_file():
        raise pytest.UsageError(f"--ssh-known-hosts {known}: no such file")
    settings = SSHSettings(
        user=config.getoption("ssh_user"), port=config.getoption("ssh_port"),
        key=str(Path(key).expanduser()) if key else None,
        known_hosts=str(Path(known).expanduser()) if known else None,
        config=config.getoption("ssh_config") or None,
        host_key_checking=config.getoption("ssh_host_key_checking"),
        python=config.getoption("ssh_python"), workdir=config.getoption("ssh_workdir"),
        connect_timeout=config.getoption("ssh_connect_timeout"), retries=config.getoption("ssh_retries"))
    try:
        return SSHCluster(specs, settings, slots=slots)
    except ClusterError as exc:
        raise pytest.UsageError(f"--cluster ssh: {exc}") from None
