"""SSH connections for the SSH cluster: settings, ~/.ssh/config resolution, host keys, retries.

Options given on the command line win over the OpenSSH client config, as with ``ssh``; the
config gives per-host HostName, Port, User, IdentityFile, UserKnownHostsFile and ProxyJump
(read with paramiko's SSHConfig). Host keys are checked against known_hosts: an unknown or a
changed key is refused unless the user asked for an insecure mode by name. Network errors are
retried with exponential backoff; a refused key or failed login is not (it would fail again).
"""
from __future__ import annotations

import contextlib
import getpass
import logging
import socket
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import paramiko

from ..base import ClusterError
from ..hosts import HostSpec
from .options import DEFAULT_SSH_CONFIG

log = logging.getLogger("pytest_dlperf.ssh")

DEFAULT_KNOWN_HOSTS = "~/.ssh/known_hosts"


@dataclass(frozen=True)
class SSHSettings:
    """How to reach the hosts: the --ssh-* options (None: from ~/.ssh/config, then defaults)."""

    user: str | None = None
    port: int | None = None
    key: str | None = None
    known_hosts: str | None = None  # None: ~/.ssh/known_hosts or the config's UserKnownHostsFile
    config: str | None = DEFAULT_SSH_CONFIG  # None: read no client config
    host_key_checking: str = "strict"
    python: str = "python3"
    workdir: str | None = None  # None: /tmp/pytest-dlperf-<user> on each node
    node_key: str | None = None  # on node 0: how a spanning launcher (horovodrun) logs in to the others
    connect_timeout: float = 10.0
    retries: int = 3
    backoff: float = 0.5  # seconds before the first retry; doubles each time
    keepalive: float = 5.0  # seconds between keepalives on an idle connection
    dead_after: float = 30.0  # seconds of unacknowledged data before a connection counts as dead


@dataclass(frozen=True)
class Target:
    """One host resolved against the settings and the client config: where and as whom."""

    spec: HostSpec
    hostname: str
    port: int
    user: str
    keys: tuple[str, ...] = ()
    known_hosts: tuple[str, ...] = ()
    proxy_jump: str | None = None
    config: str | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def key_name(self) -> str:
        """The host's name in known_hosts: ``host`` on port 22, else ``[host]:port``."""
        return self.hostname if self.port == 22 else f"[{self.hostname}]:{self.port}"


def load_config(path: str | None) -> paramiko.SSHConfig | None:
    """The OpenSSH client config at path, or None when there is none."""
    if not path:
        return None
    p = Path(path).expanduser()
    if not p.is_file():
        return None
    try:
        return paramiko.SSHConfig.from_path(str(p))
    except (OSError, paramiko.ssh_exception.ConfigParseError) as exc:
        raise ClusterError(f"--dlperf-ssh-config {p}: cannot read it: {exc}") from exc


def resolve(spec: HostSpec, settings: SSHSettings, config: paramiko.SSHConfig | None) -> Target:
    """Apply the command line, then the client config, then OpenSSH's defaults."""
    cfg = config.lookup(spec.host) if config is not None else {}
    try:
        port = int(settings.port or cfg.get("port") or 22)
    except ValueError:
        raise ClusterError(f"{spec.name}: bad Port {cfg.get('port')!r} in the ssh config") from None
    user = spec.user or settings.user or cfg.get("user") or getpass.getuser()
    keys = (settings.key,) if settings.key else tuple(cfg.get("identityfile", ()))
    if settings.known_hosts:
        known = (settings.known_hosts,)
    else:
        known = tuple(str(cfg.get("userknownhostsfile", DEFAULT_KNOWN_HOSTS)).split())
    jump = cfg.get("proxyjump")
    if jump and jump.lower() == "none":
        jump = None
    return Target(spec=spec, hostname=cfg.get("hostname", spec.host), port=port, user=user,
                  keys=tuple(str(Path(k).expanduser()) for k in keys),
                  known_hosts=tuple(str(Path(k).expanduser()) for k in known),
                  proxy_jump=jump, config=settings.config if config is not None else None)


def fingerprint(key: paramiko.PKey) -> str:
    return f"{key.get_name()} {key.fingerprint}"


class UnknownHostKey(paramiko.SSHException):
    """The server's key is in no known_hosts file."""

    def __init__(self, name: str, key: paramiko.PKey) -> None:
        super().__init__(f"{name} not in known_hosts")
        self.name, self.key = name, key


class _Policy(paramiko.MissingHostKeyPolicy):
    """Refuse unknown host keys, or (insecure, asked for by name) accept them for this session."""

    def __init__(self, accept: bool) -> None:
        self.accept = accept

    def missing_host_key(self, client, hostname, key):  # noqa: ANN001 - paramiko's signature
        if not self.accept:
            raise UnknownHostKey(hostname, key)
        log.warning("accepting unknown host key %s for %s (insecure host key checking)",
                    fingerprint(key), hostname)
        client.get_host_keys().add(hostname, key.get_name(), key)


def _tcp(hostname: str, port: int, settings: SSHSettings) -> socket.socket:
    """A TCP connection with Nagle off (no 40 ms stalls) and bounded detection of a dead peer."""
    sock = socket.create_connection((hostname, port), timeout=settings.connect_timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for opt, value in (("TCP_KEEPIDLE", settings.keepalive), ("TCP_KEEPINTVL", settings.keepalive),
                       ("TCP_KEEPCNT", 3), ("TCP_USER_TIMEOUT", settings.dead_after * 1000)):
        if hasattr(socket, opt):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, opt), max(1, int(value)))
    return sock


@dataclass
class Connection:
    """An open SSH connection to one host (and the jump hosts it goes through)."""

    target: Target
    client: paramiko.SSHClient
    jumps: list[paramiko.SSHClient] = field(default_factory=list)

    @property
    def transport(self) -> paramiko.Transport:
        t = self.client.get_transport()
        if t is None:
            raise ClusterError(f"{self.target.name}: the SSH connection is closed")
        return t

    def alive(self) -> bool:
        t = self.client.get_transport()
        return bool(t is not None and t.is_active())

    def close(self) -> None:
        for c in [self.client, *reversed(self.jumps)]:
            with contextlib.suppress(Exception):
                c.close()


def _client(target: Target, settings: SSHSettings, sock) -> paramiko.SSHClient:  # noqa: ANN001
    """Log in over an open socket or channel, checking the host key."""
    client = paramiko.SSHClient()
    if settings.host_key_checking != "off":
        for path in target.known_hosts:
            if Path(path).is_file():
                try:
                    client.get_host_keys().load(path)
                except (OSError, paramiko.SSHException) as exc:
                    raise ClusterError(f"{target.name}: cannot read known_hosts {path}: {exc}") from exc
    client.set_missing_host_key_policy(_Policy(settings.host_key_checking != "strict"))
    t = settings.connect_timeout
    try:
        client.connect(target.hostname, target.port, username=target.user, sock=sock,
                       key_filename=list(target.keys) or None, look_for_keys=not target.keys,
                       allow_agent=True, timeout=t, banner_timeout=t, auth_timeout=t, channel_timeout=t)
    except BaseException:
        failed = client.get_transport()
        client.close()
        with contextlib.suppress(Exception):
            sock.close()
        if failed is not None:
            # Its thread may still be logging the failure with a traceback, which on Python 3.11 runs
            # ast.parse: at the same time as another thread's (pytest rewriting a module it imports
            # while the session ends), that is a SystemError (CPython's shared AST recursion counter).
            failed.join(t)
        raise
    transport = client.get_transport()
    if transport is not None and settings.keepalive:
        transport.set_keepalive(max(1, int(settings.keepalive)))
    return client


def _explain(target: Target, exc: BaseException) -> str:
    """An error message for a refused host key or a failed login, with the fix."""
    files = ", ".join(target.known_hosts) or DEFAULT_KNOWN_HOSTS
    if isinstance(exc, UnknownHostKey):
        return (f"{target.name}: host key of {target.key_name} ({fingerprint(exc.key)}) is not in "
                f"known_hosts ({files}); refusing to connect. Check the fingerprint with the host's "
                f"administrator, then add it: ssh-keyscan -p {target.port} {target.hostname} >> "
                f"{files.split(', ')[0]} (or pass --dlperf-ssh-known-hosts FILE). "
                "--dlperf-ssh-host-key-checking accept-new skips this check (insecure).")
    if isinstance(exc, paramiko.BadHostKeyException):
        return (f"{target.name}: HOST KEY CHANGED for {target.key_name}: it offered "
                f"{fingerprint(exc.key)}, known_hosts ({files}) has {fingerprint(exc.expected_key)}. "
                "Someone may be intercepting the connection, or the host was reinstalled; refusing "
                f"to connect. If the change is expected: ssh-keygen -R '{target.key_name}' -f "
                f"{files.split(', ')[0]}, then add the new key.")
    if isinstance(exc, paramiko.AuthenticationException):
        keys = ", ".join(target.keys) or "the default keys and the agent"
        return (f"{target.name}: login as {target.user!r} on {target.hostname}:{target.port} failed "
                f"({exc}) with {keys}; pass --dlperf-ssh-user and --dlperf-ssh-key, or set User/IdentityFile for "
                "the host in the ssh config.")
    return f"{target.name}: {exc}"


def _jump_targets(target: Target, settings: SSHSettings, config: paramiko.SSHConfig | None) -> list[Target]:
    """The ProxyJump chain, each hop ([ssh://][user@]host[:port] or an alias) resolved like a host.

    As with ``ssh -J``, --dlperf-ssh-port and --dlperf-ssh-user apply to the destination only; --dlperf-ssh-key is
    offered to a jump host that has no IdentityFile of its own.
    """
    hops = []
    for hop in (target.proxy_jump or "").split(","):
        hop = hop.strip().removeprefix("ssh://")
        if not hop:
            continue
        user, _, rest = hop.rpartition("@")
        host, port = rest, ""
        if rest.startswith("[") and "]" in rest:
            host, _, tail = rest[1:].partition("]")
            port = tail[1:] if tail.startswith(":") else ""
        elif rest.count(":") == 1:
            host, _, port = rest.partition(":")
        if port and not port.isdigit():
            raise ClusterError(f"{target.name}: bad ProxyJump {target.proxy_jump!r} in the ssh config")
        hop_target = resolve(HostSpec(host), replace(settings, port=int(port) if port else None,
                                                     user=user or None, key=None), config)
        if not hop_target.keys and settings.key:
            hop_target = replace(hop_target, keys=(settings.key,))
        hops.append(hop_target)
    return hops


def connect(target: Target, settings: SSHSettings, config: paramiko.SSHConfig | None) -> Connection:
    """Open a connection, retrying network errors with backoff; errors name the host and the fix."""
    delay = settings.backoff
    last: BaseException | None = None
    for attempt in range(settings.retries + 1):
        if attempt:
            time.sleep(delay)
            delay *= 2
        jumps: list[paramiko.SSHClient] = []
        hop = target
        try:
            for i, hop in enumerate([*_jump_targets(target, settings, config), target]):
                if i == 0:
                    sock = _tcp(hop.hostname, hop.port, settings)
                else:
                    sock = jumps[-1].get_transport().open_channel(
                        "direct-tcpip", (hop.hostname, hop.port), ("127.0.0.1", 0),
                        timeout=settings.connect_timeout)
                client = _client(hop, settings, sock)
                if hop is target:
                    return Connection(target, client, jumps)
                jumps.append(client)
        except (UnknownHostKey, paramiko.BadHostKeyException, paramiko.AuthenticationException) as exc:
            for j in jumps:
                j.close()
            msg = _explain(hop, exc)
            raise ClusterError(msg if hop is target else f"{target.name}: jump host {msg}") from exc
        except ClusterError:
            for j in jumps:
                j.close()
            raise
        except (OSError, EOFError, paramiko.SSHException) as exc:
            for j in jumps:
                j.close()
            last = exc
            log.info("%s: connect attempt %d failed: %s", target.name, attempt + 1, exc)
    via = f" via {target.proxy_jump}" if target.proxy_jump else ""
    raise ClusterError(f"{target.name}: cannot reach {target.user}@{target.hostname}:{target.port}{via} "
                       f"after {settings.retries + 1} attempt(s): {last}. Check that the host is up, "
                       "sshd runs there and the address/port are right (--dlperf-hosts, --dlperf-ssh-port, ssh config).")
