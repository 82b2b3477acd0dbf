"""Which network interface holds each node's address, asked of the nodes before a multi-node case's first launch
(``node/workloads/nodefacts.py --interface ADDRESS``). Gloo opens its sockets on the address the node's
hostname resolves to unless GLOO_SOCKET_IFNAME names an interface: where the hostname resolves to a loopback
address (Debian's 127.0.1.1 default) every rank advertises 127.0.0.1 and the ranks of other nodes are refused
("connectFullMesh ... Connection refused"). On such a node the launchers set GLOO_SOCKET_IFNAME to the
interface found here, where the node's environment sets none itself; elsewhere nothing changes. (NCCL picks
its own interface and never loopback by default: it is left alone.)"""
from __future__ import annotations

from pathlib import Path

from ..clusters.base import Cluster, Node, NodeCommand
from ..node.workloads.nodefacts import INTERFACE_MARK
from .frameworks import PROBE, TIMEOUT


def check(cluster: Cluster, nodes: list[Node], log_dir: Path) -> str | None:
    """Find each node's interface (kept for its launches: ``Cluster.socket_interfaces``); one line naming
    the nodes where none holds their address and the hostname resolves to loopback, with the fix; else None."""
    runs = cluster.run_everywhere(nodes, lambda node, run_dir, script: NodeCommand(
        node, [node.python, script, "--interface", node.address], cwd=run_dir), log_dir, TIMEOUT,
        name="interface", tag="dlperf-iface", script=PROBE, expect=INTERFACE_MARK)
    found, broken = runs.marked(INTERFACE_MARK, "interface")
    if broken:
        return "the network interface check failed: " + "; ".join(broken)
    return keep(cluster, found, gloo=not any(n.gpus for n in nodes))


def keep(cluster: Cluster, found: dict[str, dict], gloo: bool = True) -> str | None:
    """Keep each node's interface, whether its hostname resolves to loopback and the socket variables its
    environment sets; the problem line where Gloo (``gloo``: CPU nodes) would advertise loopback, if any."""
    held = cluster.socket_interfaces()
    lost = []
    for name, f in found.items():
        loopback = str(f.get("resolves_to") or "").startswith("127.")
        held[name] = {"interface": f.get("interface") or "", "set": dict(f.get("set") or {}), "loopback": loopback}
        if gloo and loopback and not f.get("interface") and "GLOO_SOCKET_IFNAME" not in (f.get("set") or {}):
            lost.append(f"{name} (address {f['address']}; hostname {f.get('hostname')} resolves to "
                        f"{f.get('resolves_to')})")
    if not lost:
        return None
    return (f"no network interface holds the address of {', '.join(lost)}: Gloo would advertise a loopback "
            "address there and the other nodes could not connect; set GLOO_SOCKET_IFNAME to the node's interface "
            "in its environment, or give the node the address it holds")
