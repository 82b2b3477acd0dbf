"""Host lists for the SSH cluster: horovodrun's ``host:slots,...`` and MPI/Horovod hostfiles.

``--dlperf-hosts 10.0.0.2:8,10.0.0.3:8`` and a hostfile with lines ``10.0.0.2 slots=8`` give the same
specs. A host may carry a user (``alice@10.0.0.2:8``); IPv6 addresses go in brackets
(``[fe80::1]:8``). Slots may be left out (``10.0.0.2``): the node's GPUs are used, else 1.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

HOSTS_FORM = "host:slots[,host:slots...], e.g. 10.0.0.2:8,10.0.0.3:8"
HOSTFILE_FORM = "one host per line: 'host slots=N' (MPI/Horovod hostfile), '#' starts a comment"
_BAD_HOST_CHARS = re.compile(r"[/\x00-\x1f\x7f]")


@dataclass(frozen=True)
class HostSpec:
    """One host as the user named it: an address or ~/.ssh/config alias, its slots and user."""

    host: str
    slots: int | None = None  # None: the node's GPU count, else 1
    user: str | None = None

    @property
    def name(self) -> str:
        """How reports and errors name the node."""
        return f"{self.user}@{self.host}" if self.user else self.host


def _check_host(host: str, entry: str, form: str) -> str:
    host = host.strip()
    if not host:
        raise ValueError(f"{entry!r}: no host name; expected {form}")
    if host.startswith("-"):
        raise ValueError(f"{entry!r}: a host name cannot start with '-'; expected {form}")
    if _BAD_HOST_CHARS.search(host):
        raise ValueError(f"{entry!r}: a host name cannot hold '/' or control characters; expected {form}")
    return host


def _slots(text: str, entry: str, form: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{entry!r}: slots must be a whole number >= 1, got {text!r}; expected {form}")
    return int(text)


def _split_user(text: str, entry: str, form: str) -> tuple[str | None, str]:
    if "@" not in text:
        return None, text
    user, host = text.rsplit("@", 1)
    if not user or user.startswith("-") or _BAD_HOST_CHARS.search(user) or " " in user:
        raise ValueError(f"{entry!r}: bad user name {user!r}; expected {form}")
    return user, host


def parse_host(entry: str, form: str = HOSTS_FORM) -> HostSpec:
    """One ``[user@]host[:slots]`` entry (``[v6addr]:slots`` for IPv6)."""
    text = entry.strip()
    user, rest = _split_user(text, entry, form)
    slots: int | None = None
    if rest.startswith("["):
        close = rest.find("]")
        if close < 0:
            raise ValueError(f"{entry!r}: missing ']' after an IPv6 address; expected {form}")
        host, tail = rest[1:close], rest[close + 1:]
        if tail:
            if not tail.startswith(":"):
                raise ValueError(f"{entry!r}: expected ':slots' after ']'; expected {form}")
            slots = _slots(tail[1:], entry, form)
    elif rest.count(":") > 1:
        raise ValueError(f"{entry!r}: put an IPv6 address in brackets, e.g. [fe80::1]:8; expected {form}")
    elif ":" in rest:
        host, _, tail = rest.partition(":")
        slots = _slots(tail, entry, form)
    else:
        host = rest
    return HostSpec(_check_host(host, entry, form), slots, user)


def _unique(specs: list[HostSpec], where: str) -> list[HostSpec]:
    seen: dict[tuple[str | None, str], HostSpec] = {}
    for s in specs:
        key = (s.user, s.host)
        if key in seen:
            raise ValueError(f"{where}: host {s.name} is listed twice; list each node once with its slots")
        seen[key] = s
    if not specs:
        raise ValueError(f"{where}: no hosts; expected {HOSTS_FORM}")
    return specs


def parse_hosts(text: str) -> list[HostSpec]:
    """``--dlperf-hosts`` (horovodrun's ``-H``): comma-separated ``host:slots``."""
    entries = [e for e in text.split(",")]
    if any(not e.strip() for e in entries):
        raise ValueError(f"--dlperf-hosts {text!r}: empty entry; expected {HOSTS_FORM}")
    return _unique([parse_host(e) for e in entries], f"--dlperf-hosts {text!r}")


def parse_hostfile_text(text: str, source: str = "hostfile") -> list[HostSpec]:
    """Hostfile lines ``host slots=N`` (``max_slots=`` is accepted and ignored)."""
    specs = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{source}:{number}"
        words = line.split()
        try:
            spec = parse_host(words[0], HOSTFILE_FORM)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        slots = spec.slots
        for word in words[1:]:
            key, eq, value = word.partition("=")
            if eq and key == "slots":
                try:
                    slots = _slots(value, raw.strip(), HOSTFILE_FORM)
                except ValueError as exc:
                    raise ValueError(f"{where}: {exc}") from None
            elif eq and key == "max_slots":
                continue
            else:
                raise ValueError(f"{where}: {raw.strip()!r}: unknown field {word!r}; expected {HOSTFILE_FORM}")
        specs.append(HostSpec(spec.host, slots, spec.user))
    return _unique(specs, source)


def parse_hostfile(path: str | Path) -> list[HostSpec]:
    """Read and parse a hostfile; a missing file raises FileNotFoundError naming it."""
    p = Path(path).expanduser()
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise FileNotFoundError(f"--dlperf-hostfile {p}: no such file") from None
    except OSError as exc:
        raise FileNotFoundError(f"--dlperf-hostfile {p}: cannot read it: {exc}") from None
    return parse_hostfile_text(text, str(p))
