"""The logs the watchers beside a launch write on each node (the pace probe, the GPU watcher): a header
``# dlperf-<kind> <contract> key=value ...`` carrying the node's clock pair, and ``# error <why>`` where
the watcher could not run. Their headers are read here, for both."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ClockPair:
    """A node's monotonic clock (``perf_counter``, the step logs') and its Unix time, read together: a
    window on one node's clock is placed on another's through the Unix time the nodes share."""

    perf: float
    wall: float

    def to_node_clock(self, wall: float) -> float:
        """A Unix time on this node's perf_counter."""
        return wall - self.wall + self.perf

    def to_wall(self, perf: float) -> float:
        return perf - self.perf + self.wall


@dataclass(frozen=True)
class LogKind:
    """How a watcher's log is named in its header and in messages."""

    tag: str  # the header's first word: "dlperf-pace"
    what: str  # "pace probe log"
    contract: str  # "pace log contract"
    failed: str  # "the probe could not run"


def read_header(lines: list[str], kind: LogKind, contract: int, source: str, error: type[ValueError]) -> ClockPair:
    """The clock pair of a watcher's log (its lines), or ``error`` naming ``source`` and what is wrong:
    not such a log, another contract, the watcher's own error, no clock pair."""
    if not lines or not lines[0].startswith(f"# {kind.tag} "):
        raise error(f"{source}: not a {kind.what} (no '# {kind.tag}' header)")
    head = lines[0].split()
    if len(head) < 3 or head[2] != str(contract):
        raise error(f"{source}: {kind.contract} {head[2] if len(head) > 2 else '?'}, this harness reads "
                    f"{contract}: install the same pytest-dlperf on the nodes' side")
    errors = [line[len("# error "):] for line in lines[1:] if line.startswith("# error ")]
    if errors:
        raise error(f"{source}: {kind.failed}: {errors[0]}")
    fields = dict(tok.split("=", 1) for tok in head[3:] if "=" in tok)
    try:
        return ClockPair(float(fields["perf"]), float(fields["wall"]))
    except (KeyError, ValueError):
        raise error(f"{source}: the header has no clock pair (perf=, wall=): {lines[0]!r}") from None
