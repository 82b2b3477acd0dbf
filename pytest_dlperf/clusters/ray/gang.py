"""The session's hold on its Ray nodes: a placement group with one bundle per node (STRICT_SPREAD, each
bundle pinned to its node by Ray's ``node:<ip>`` resource) and one agent actor per bundle
(``node/rayagent.py``), made together and removed together.

A placement group that is not placed within the wait fails at once, naming what is missing (a node
no longer alive, a node without the resources, or resources held by other work), and is removed:
nothing waits forever in Ray's queue.
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import ray
from ray.util.placement_group import PlacementGroup, placement_group, placement_group_table, remove_placement_group
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy, PlacementGroupSchedulingStrategy

from ...node import rayagent
from ..base import ClusterError, Node
from .nodes import RayNode, bundle, read_nodes

# The agent's code travels by value (pickled with the actor class), so that nodes need nothing of
# pytest-dlperf installed; Ray's cloudpickle otherwise sends a module's classes by reference.
ray.cloudpickle.register_pickle_by_value(rayagent)
WATCH_SRC = (Path(__file__).resolve().parents[2] / "node" / "sshwatch.py").read_text()
MAX_CALLS = 16  # concurrent calls an agent serves (polls of its launchers beside a kill or a sweep)


@dataclass
class Gang:
    """A placement group and its agents, by node name."""

    name: str
    group: PlacementGroup
    agents: dict[str, ray.actor.ActorHandle] = field(default_factory=dict)
    roots: dict[str, str] = field(default_factory=dict)  # each node's directory of the session, removed with the gang


def probe_nodes(nodes: Sequence[RayNode], python: str, src: str, args: Sequence[str],
                timeout: float = 180.0) -> list[tuple[str, int, str, str] | Exception]:
    """``python -c src args`` on every node at once, as Ray tasks pinned to each (no resources held, nothing
    left behind): (interpreter, exit code, stdout, stderr), or the exception that stopped it."""
    task = ray.remote(rayagent.probe)
    refs = [task.options(num_cpus=0, max_retries=0, name="dlperf-probe",
                         scheduling_strategy=NodeAffinitySchedulingStrategy(n.node_id, soft=False)).remote(
                python, src, list(args)) for n in nodes]
    out: list = []
    deadline = time.monotonic() + timeout
    for ref in refs:
        try:
            out.append(ray.get(ref, timeout=max(1.0, deadline - time.monotonic())))
        except Exception as exc:  # noqa: BLE001 - a node's failure, named by the caller
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)
            out.append(exc)
    return out


def open_gang(name: str, nodes: Sequence[Node], ray_nodes: Sequence[RayNode], resources: dict[str, float],
              root: str, wait: float, say: Callable[[str], None]) -> Gang:
    """The placement group over ``nodes`` and an agent in each bundle, ready; ClusterError naming what is
    missing (everything made so far removed) when they are not ready within ``wait`` seconds."""
    bundles = [bundle(r, resources) for r in ray_nodes]
    t0 = time.monotonic()
    try:
        group = placement_group(bundles, strategy="STRICT_SPREAD", name=name)
    except Exception as exc:  # noqa: BLE001 - Ray's own error, named
        raise ClusterError(f"ray: cannot ask for placement group {name}: {exc}") from None
    gang = Gang(name, group)
    try:
        if not group.wait(timeout_seconds=max(1, round(wait))):
            raise ClusterError(f"ray: placement group {name} was not placed within {wait:g}s (--dlperf-ray-wait): "
                               + unplaced(group, nodes, ray_nodes, bundles))
        agent_class = ray.remote(rayagent.Agent)
        for i, (node, rn) in enumerate(zip(nodes, ray_nodes)):
            gang.roots[node.name] = root  # one path on every node: run directories below it name their node
            gang.agents[node.name] = agent_class.options(
                name=f"{name}-{i}", num_cpus=rn.cpus, num_gpus=rn.gpus, resources=dict(resources) or None,
                max_restarts=0, max_task_retries=0, max_concurrency=MAX_CALLS,
                scheduling_strategy=PlacementGroupSchedulingStrategy(group, placement_group_bundle_index=i),
            ).remote(WATCH_SRC, gang.roots[node.name])
        pings = {n: a.ping.remote() for n, a in gang.agents.items()}
        left = max(1.0, wait - (time.monotonic() - t0))
        wrong = []
        for (node, rn) in zip(nodes, ray_nodes):
            try:
                where = ray.get(pings[node.name], timeout=left)
            except Exception as exc:  # noqa: BLE001
                raise ClusterError(f"ray: the agent on node {node.name} did not start: {type(exc).__name__}: "
                                   f"{str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}") from None
            if where.get("node_id") and where["node_id"] != rn.node_id:
                wrong.append(f"{node.name}'s agent runs on node {where['node_id'][:12]}, not {rn.node_id[:12]}")
        if wrong:
            raise ClusterError("ray: the placement group's bundles are not on their nodes: " + "; ".join(wrong))
        say(f"ray: placement group {name} holds {', '.join(n.name for n in nodes)} "
            f"({time.monotonic() - t0:.1f}s)")
        return gang
    except BaseException:
        close_gang(gang, remove=False)
        raise


def unplaced(group: PlacementGroup, nodes: Sequence[Node], ray_nodes: Sequence[RayNode],
             bundles: Sequence[dict]) -> str:
    """Why a placement group is not placed: nodes gone, nodes without what their bundle asks, or what the
    cluster has free now when the resources are there but held by other work."""
    found = []
    with contextlib.suppress(Exception):
        now = {r.node_id: r for r in read_nodes(ray.nodes())}
        for node, rn, b in zip(nodes, ray_nodes, bundles):
            cur = now.get(rn.node_id)
            if cur is None or not cur.alive:
                found.append(f"node {node.name} is no longer alive" + (f" ({cur.death})" if cur and cur.death else ""))
                continue
            short = [f"{k} {b[k]:g} (it has {cur.resources.get(k, 0):g})" for k in b if cur.resources.get(k, 0) < b[k]]
            if short:
                found.append(f"node {node.name} lacks " + ", ".join(short))
    if not found:
        with contextlib.suppress(Exception):
            free, total = ray.available_resources(), ray.cluster_resources()
            wanted = sorted({k for b in bundles for k in b if not k.startswith("node:")})
            found.append("the resources are held by other work; free now in the cluster: "
                         + ", ".join(f"{k} {free.get(k, 0):g} of {total.get(k, 0):g}" for k in wanted)
                         + f"; the bundles ask: {'; '.join(f'{n.name}: {_shown(b)}' for n, b in zip(nodes, bundles))}")
    with contextlib.suppress(Exception):
        state = placement_group_table(group)
        sched = (state.get("stats") or {}).get("scheduling_state")
        found.append(f"Ray says {state.get('state', '?')}" + (f" ({sched})" if sched else ""))
    return "; ".join(found) or "Ray gives no reason"


def _shown(b: dict) -> str:
    return "{" + ", ".join(f"{k}: {v:g}" for k, v in b.items()) + "}"


def close_gang(gang: Gang, remove: bool = True, timeout: float = 30.0) -> list[str]:
    """Stop what the agents run (deleting their directories when ``remove``), kill them and remove the
    placement group; the problems met, as lines (a node gone cannot be cleaned, only left)."""
    problems = []
    stops = {n: a.stop.remote(remove) for n, a in gang.agents.items()}
    deadline = time.monotonic() + timeout
    for name, ref in stops.items():
        try:
            ray.get(ref, timeout=max(0.5, deadline - time.monotonic()))
        except Exception as exc:  # noqa: BLE001 - an agent already gone: its watchdogs stop its launchers
            problems.append(f"ray: the agent on node {name} could not clean up: {type(exc).__name__}")
    for agent in gang.agents.values():
        with contextlib.suppress(Exception):
            ray.kill(agent, no_restart=True)
    try:
        remove_placement_group(gang.group)
    except Exception as exc:  # noqa: BLE001
        problems.append(f"ray: cannot remove placement group {gang.name}: {exc}")
    gang.agents.clear()
    return problems
