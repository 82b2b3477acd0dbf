"""The SSH cluster kind's options (--dlperf-hosts/--dlperf-hostfile/--dlperf-ssh-*), its plugin's
``pytest_addoption``, and :class:`SSHOptions`, their typed values resolved once per session.
Light on purpose: loaded into every pytest session, it imports no SSH library."""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ...options.argtypes import non_negative_int, positive_seconds
from ...options.groups import OptionGroup

if TYPE_CHECKING:
    from .connect import SSHSettings

HOST_KEY_CHECKING = ("strict", "accept-new", "off")
DEFAULT_SSH_CONFIG = "~/.ssh/config"


def _port(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"expected a TCP port 1-65535, got {text!r}")
    return int(text)


def _hosts(text: str) -> str:
    """Checked when the command line is read, so a bad host list is a usage error (exit 4)."""
    from ..hosts import parse_hosts

    try:
        parse_hosts(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _hostfile(text: str) -> str:
    from ..hosts import parse_hostfile

    try:
        parse_hostfile(text)
    except (ValueError, FileNotFoundError) as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def add_options(parser: pytest.Parser) -> None:
    """The nodes of ``--dlperf-cluster ssh`` and how to reach them (aliyun's instances too)."""
    a = OptionGroup(parser, "dlperf-ssh", "pytest-dlperf: --dlperf-cluster ssh (and the SSH of aliyun)",
                    after="dlperf-gate")
    a("--dlperf-hosts", type=_hosts, default=None, metavar="HOST:SLOTS,...",
      help="--dlperf-cluster ssh: the nodes, horovodrun style: host:slots[,host:slots...], e.g. "
           "10.0.0.2:8,10.0.0.3:8 (also user@host:slots, [v6]:slots). A host is an address or an alias of the ssh "
           "config; node 0 (the "
           "first) is the rendezvous master")
    a("--dlperf-hostfile", type=_hostfile, default=None, metavar="FILE",
      help="--dlperf-cluster ssh: the nodes from a file, one host per line: 'host slots=N' "
           "(MPI/Horovod hostfile), '#' starts a comment")
    a("--dlperf-ssh-user", default=None, metavar="USER",
      help="login name on every node (default: the ssh config's User, else yours)")
    a("--dlperf-ssh-port", type=_port, default=None, metavar="PORT",
      help="sshd port on every node (default: the ssh config's Port, else 22)")
    a("--dlperf-ssh-key", default=None, metavar="FILE",
      help="private key (identity file) to log in with (default: the ssh config's IdentityFile, "
           "~/.ssh/id_* and the agent)")
    a("--dlperf-ssh-node-key", default=None, metavar="FILE",
      help="backends that start every node from node 0 (horovod, perseus): the key file ON NODE 0 "
           "that logs in to the other nodes (default: node 0's own ssh defaults)")
    a("--dlperf-ssh-known-hosts", default=None, metavar="FILE",
      help="known_hosts file the host keys are checked against (default: ~/.ssh/known_hosts or the "
           "ssh config's UserKnownHostsFile)")
    a("--dlperf-ssh-config", default=DEFAULT_SSH_CONFIG, metavar="FILE",
      help="OpenSSH client config for per-host HostName, Port, User, IdentityFile and ProxyJump "
           f"(default {DEFAULT_SSH_CONFIG}; /dev/null reads none)")
    a("--dlperf-ssh-host-key-checking", choices=HOST_KEY_CHECKING, default="strict",
      help="strict (default): refuse hosts whose key is unknown or changed. accept-new: INSECURE, "
           "trust unknown hosts for this session (changed keys are still refused). off: INSECURE, "
           "accept any host key, even a changed one")
    a("--dlperf-ssh-python", default="python3", metavar="PATH",
      help="Python interpreter on the nodes that runs the launcher and workload, one that has torch (default "
           "python3)")
    a("--dlperf-ssh-workdir", default=None, metavar="DIR",
      help="directory on the nodes for per-run directories (default /tmp/pytest-dlperf-<user>; "
           "relative paths are under the login's home)")
    a("--dlperf-ssh-connect-timeout", type=positive_seconds, default=10.0, metavar="S",
      help="seconds to wait for a node to answer (default 10)")
    a("--dlperf-ssh-retries", type=non_negative_int, default=3, metavar="N",
      help="extra connection attempts after a network error, with doubling backoff (default 3)")


@dataclass(frozen=True)
class SSHOptions:
    """The --dlperf-hosts/--dlperf-hostfile/--dlperf-ssh-* values (every cluster reached over SSH shares
    the --dlperf-ssh-* ones)."""

    hosts: str | None = None
    hostfile: str | None = None
    user: str | None = None
    port: int | None = None
    key: str | None = None
    node_key: str | None = None
    known_hosts: str | None = None
    config: str = DEFAULT_SSH_CONFIG
    host_key_checking: str = "strict"
    python: str = "python3"
    workdir: str | None = None
    connect_timeout: float = 10.0
    retries: int = 3

    @classmethod
    def from_config(cls, config: pytest.Config) -> SSHOptions:
        get = config.getoption
        return cls(hosts=get("dlperf_hosts"), hostfile=get("dlperf_hostfile"), user=get("dlperf_ssh_user"),
                   port=get("dlperf_ssh_port"), key=get("dlperf_ssh_key"), node_key=get("dlperf_ssh_node_key"),
                   known_hosts=get("dlperf_ssh_known_hosts"), config=get("dlperf_ssh_config"),
                   host_key_checking=get("dlperf_ssh_host_key_checking"), python=get("dlperf_ssh_python"),
                   workdir=get("dlperf_ssh_workdir"), connect_timeout=get("dlperf_ssh_connect_timeout"),
                   retries=get("dlperf_ssh_retries"))

    def settings(self) -> SSHSettings:
        """The connection settings; a key or known_hosts file that is not there is a usage error."""
        from .connect import SSHSettings

        for option, path in (("--dlperf-ssh-key", self.key), ("--dlperf-ssh-known-hosts", self.known_hosts)):
            if path and not Path(path).expanduser().is_file():
                raise pytest.UsageError(f"{option} {path}: no such file")
        return SSHSettings(
            user=self.user, port=self.port, key=str(Path(self.key).expanduser()) if self.key else None,
            known_hosts=str(Path(self.known_hosts).expanduser()) if self.known_hosts else None,
            config=self.config or None, host_key_checking=self.host_key_checking, python=self.python,
            workdir=self.workdir, node_key=self.node_key, connect_timeout=self.connect_timeout,
            retries=self.retries)
