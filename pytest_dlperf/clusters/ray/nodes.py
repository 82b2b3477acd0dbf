"""A Ray cluster's nodes as the harness takes them: read from ``ray.nodes()``, chosen (alive, with the
CPUs or GPUs a case needs, the custom resources and labels asked for), put in order (the head first
where it takes work, then by address) and named by address; and the placement group's bundle for each.

Plain data: nothing here imports Ray, so that it is read and tested without a cluster.
"""
from __future__ import annotations

import ipaddress
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

HEAD_RESOURCE = "node:__internal_head__"  # Ray's own resource on the head node
NODE_RESOURCE = "node:{ip}"  # Ray's own resource on every node, 1.0 of it: asking 0.001 pins a bundle there
PIN = 0.001


@dataclass(frozen=True)
class RayNode:
    """One node as Ray lists it."""

    node_id: str
    ip: str
    hostname: str
    alive: bool
    head: bool
    cpus: int  # Ray's CPU resource (what the node was started with), whole cores
    gpus: int
    resources: Mapping[str, float] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    death: str = ""  # why Ray says it died

    def describe(self) -> str:
        """``10.0.0.2 (head, 8 CPU, 1 GPU)``."""
        parts = (["head"] if self.head else []) + [f"{self.cpus} CPU"] + ([f"{self.gpus} GPU"] if self.gpus else [])
        return f"{self.ip} ({', '.join(parts)})"


def read_nodes(raw: Sequence[Mapping]) -> list[RayNode]:
    """``ray.nodes()``'s entries as RayNodes (dead ones too: the caller chooses)."""
    out = []
    for d in raw:
        res = {str(k): float(v) for k, v in (d.get("Resources") or {}).items()}
        ip = str(d.get("NodeManagerAddress") or "")
        death = " ".join(str(d.get(k) or "") for k in ("DeathReason", "DeathReasonMessage")).strip()
        out.append(RayNode(node_id=str(d.get("NodeID") or ""), ip=ip, hostname=str(d.get("NodeManagerHostname") or ""),
                           alive=bool(d.get("Alive", d.get("alive", False))), head=HEAD_RESOURCE in res,
                           cpus=int(math.floor(res.get("CPU", 0.0) + 1e-9)),
                           gpus=int(math.floor(res.get("GPU", 0.0) + 1e-9)), resources=res,
                           labels={str(k): str(v) for k, v in (d.get("Labels") or {}).items()}, death=death))
    return out


def _ip_key(ip: str) -> tuple:
    try:
        return (0, ipaddress.ip_address(ip))
    except ValueError:
        return (1, ip)


def order(nodes: Sequence[RayNode]) -> list[RayNode]:
    """The head first (it is node 0 when it takes work: the rendezvous sits beside Ray's own head), then
    by address: the same order in every session of an unchanged cluster."""
    return sorted(nodes, key=lambda n: (not n.head, _ip_key(n.ip), n.node_id))


@dataclass(frozen=True)
class Selection:
    """What the nodes must have: GPUs (True), CPUs only (False) or either (None); custom resources
    (each at least the amount, which every bundle also asks for); labels (each equal)."""

    gpus: bool | None = None
    resources: Mapping[str, float] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)

    def why_not(self, node: RayNode) -> str | None:
        """Why the node is left out, or None when it is chosen."""
        if not node.alive:
            return "not alive" + (f" ({node.death})" if node.death else "")
        if self.gpus is True and node.gpus < 1:
            return "no GPU"
        if self.gpus is False and node.cpus < 1:
            return "no CPU resource"
        if self.gpus is None and node.cpus < 1 and node.gpus < 1:
            return "no CPU or GPU resource (a head that takes no work)"
        for name, amount in self.resources.items():
            if node.resources.get(name, 0.0) < amount:
                return f"no {name} resource" if name not in node.resources else \
                    f"{name} {node.resources[name]:g} < {amount:g}"
        for key, value in self.labels.items():
            if node.labels.get(key) != value:
                return f"label {key}={node.labels[key]}" if key in node.labels else f"no label {key}"
        return None


def choose(nodes: Sequence[RayNode], sel: Selection, want: int | None = None) -> tuple[list[RayNode], list[str]]:
    """The chosen nodes in order (the first ``want`` of them when given) and a line per node left out."""
    chosen, left = [], []
    for node in order(nodes):
        why = sel.why_not(node)
        if why is None:
            chosen.append(node)
        else:
            left.append(f"{node.ip or node.node_id}: {why}")
    return (chosen[:want] if want else chosen), left


def names(nodes: Sequence[RayNode]) -> list[str]:
    """A name per node: its address, with the start of its node id where two nodes share one address."""
    count: dict[str, int] = {}
    for n in nodes:
        count[n.ip] = count.get(n.ip, 0) + 1
    return [n.ip if count[n.ip] == 1 else f"{n.ip}-{n.node_id[:8]}" for n in nodes]


def bundle(node: RayNode, resources: Mapping[str, float] | None = None) -> dict[str, float]:
    """The node's bundle: all of its CPUs and GPUs (a benchmark has the node to itself, as Slurm's
    --exclusive gives it), the custom resources asked for, and a sliver of Ray's ``node:<ip>`` resource,
    which only that node has, so that bundle i lands on node i."""
    out = {"CPU": float(node.cpus)} if node.cpus else {}
    if node.gpus:
        out["GPU"] = float(node.gpus)
    out.update({k: float(v) for k, v in (resources or {}).items()})
    out[NODE_RESOURCE.format(ip=node.ip)] = PIN
    return out


def parse_resources(text: str) -> dict[str, float]:
    """``--dlperf-ray-resource a100=1,spot`` -> {"a100": 1.0, "spot": 1.0}; ValueError naming a bad item."""
    out: dict[str, float] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, _, amount = item.partition("=")
        try:
            value = float(amount) if amount else 1.0
        except ValueError:
            raise ValueError(f"{item!r}: the amount is not a number (NAME or NAME=AMOUNT)") from None
        if not name or value <= 0:
            raise ValueError(f"{item!r}: give NAME or NAME=AMOUNT with an amount above 0")
        out[name.strip()] = value
    return out


def parse_labels(text: str) -> dict[str, str]:
    """``--dlperf-ray-label pool=train,zone=a`` -> {"pool": "train", "zone": "a"}; ValueError naming a bad item."""
    out: dict[str, str] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"{item!r}: give KEY=VALUE")
        out[key.strip()] = value.strip()
    return out
