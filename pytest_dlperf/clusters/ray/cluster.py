"""The Ray cluster: the alive nodes of a running Ray cluster, reached through Ray itself (Ray Client,
``ray://HEAD:10001``, from outside the cluster), which the harness never starts or stops.

Each node's part is done by an agent actor on it (``node/rayagent.py``): run directories, files sent
and fetched through Ray's object store, launchers started there as the other kinds start them (the
same argument list, environment and directory, under the SSH kind's watchdog), their output pulled
into the node's log here, the sweep by run tag (``node/killtag.py``). The agents live in a placement
group with a bundle per node, made when the nodes are leased (or first needed, as by the dry-run) and
removed at the lease's end and at close(): a session leaves no actor and no placement group.
Before the first case every node is probed once by a Ray task pinned to it (Python, frameworks, the
CPU model, GPUs), as the SSH and Slurm kinds' preflight does.
"""
from __future__ import annotations

import contextlib
import hashlib
import logging
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import ray
from filelock import FileLock

from ..base import RUN_TAG_ENV, Cluster, ClusterError, ExecResult, Node, NodeCommand, NodeProcess, cannot_sweep, swept
from ..ssh.agreement import PROBE_SRC, check_nodes, make_node, parse_probe
from . import gang as gangs
from .nodes import RayNode, Selection, choose, names, read_nodes
from .options import RayOptions

KILLTAG_SRC = (Path(__file__).resolve().parents[2] / "node" / "killtag.py").read_text()
LOST = 255  # the exit code of a node whose agent is gone, as ssh(1) reports a lost connection
POLL_EVERY = 0.5  # seconds between two pulls of a launcher's output
UNANSWERED = 30.0  # seconds an agent may take to answer a poll before its node counts as lost
CALL_TIMEOUT = 60.0
# Ray Client's head starts a server of each client's own; on a loaded head that start can fail (it timed out, or
# died before the proxier read it), which ray.init reports as ConnectionAbortedError: tries, and seconds between
ATTACH_TRIES = 3
ATTACH_PAUSE = 2.0


def _why(exc: BaseException) -> str:
    """An exception from Ray in one line: its type and its message's last line."""
    lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
    return f"{type(exc).__name__}: {lines[-1].strip()}" if lines else type(exc).__name__


class RayProcess(NodeProcess):
    """One node's launcher, run by the node's agent; ``poll`` pulls its new output into the log here."""

    def __init__(self, node: Node, agent, key: str, log_path: Path) -> None:  # noqa: ANN001 - an ActorHandle
        self.node, self.agent, self.key, self.log_path = node, agent, key, log_path
        self._code: int | None = None
        self._offset = 0
        self._ref = None  # the poll in flight
        self._asked = 0.0
        self._next = 0.0
        self._lock = threading.Lock()

    def _append(self, data: bytes) -> None:
        if data:
            with open(self.log_path, "ab") as fh:
                fh.write(data)

    def _lost(self, why: str) -> int:
        """The agent is gone (its node died, its actor was killed): the launch failed there, said in its log."""
        self._append(f"\n[dlperf] ray: lost node {self.node.name}: {why}\n".encode())
        self._code, self._ref = LOST, None
        return LOST

    def poll(self) -> int | None:
        with self._lock:
            if self._code is not None:
                return self._code
            now = time.monotonic()
            if self._ref is None:
                if now < self._next:
                    return None
                self._ref, self._asked = self.agent.poll.remote(self.key, self._offset), now
            try:
                ready, _ = ray.wait([self._ref], timeout=0)
            except Exception as exc:  # noqa: BLE001 - the connection to the cluster, say
                return self._lost(f"cannot ask its agent: {_why(exc)}")
            if not ready:
                if now - self._asked > UNANSWERED:
                    return self._lost(f"its agent has not answered for {UNANSWERED:g}s: the node or its Ray "
                                      "worker is gone or stuck")
                return None
            ref, self._ref = self._ref, None
            try:
                code, data, self._offset, more = ray.get(ref)
            except Exception as exc:  # noqa: BLE001 - RayActorError and kin: the agent died
                return self._lost(f"its agent died ({_why(exc)})")
            self._append(data)
            self._next = 0.0 if more else now + POLL_EVERY
            if code is not None and not more:
                self._code = code
            return self._code

    def kill(self) -> None:
        """The watchdog's ``kill`` (TERM to the launcher's group and descendants, KILL after a grace), then
        the output it left."""
        with self._lock:
            if self._code is not None:
                return
            self._ref = None
            try:
                ray.get(self.agent.kill.remote(self.key), timeout=CALL_TIMEOUT)
                for _ in range(64):
                    code, data, self._offset, more = ray.get(self.agent.poll.remote(self.key, self._offset),
                                                             timeout=CALL_TIMEOUT)
                    self._append(data)
                    if not more:
                        break
                self._code = LOST if code is None else code
            except Exception as exc:  # noqa: BLE001 - the agent is gone; so is its watchdog's pipe, which stops the run
                self._lost(f"its agent did not answer the kill ({_why(exc)})")


class RayCluster(Cluster):
    """The chosen alive nodes of a Ray cluster, node 0 first."""

    kind = "ray"

    def __init__(self, opts: RayOptions, want: int | None = None, slots: int | None = None, gpus: bool | None = None,
                 frameworks: Sequence[str] = ("torch",), say: Callable[[str], None] | None = None,
                 token: str = "") -> None:
        self.opts, self.want, self.slots, self.frameworks = opts, want, slots, tuple(frameworks)
        self.selection = Selection(gpus=gpus, resources=dict(opts.resources), labels=dict(opts.labels))
        self.say = say or (lambda text: None)
        self.namespace = f"dlperf-{token or uuid.uuid4().hex[:12]}"
        self.root = f"{opts.workdir}/{self.namespace}"  # on every node, removed with each placement group
        self._nodes: list[Node] | None = None
        self._ray_nodes: dict[str, RayNode] = {}
        self._gang: gangs.Gang | None = None
        self._gangs: list[str] = []  # every placement group this session made, by name
        self._depth = 0
        self._lock = threading.RLock()
        digest = hashlib.sha256(opts.address.encode()).hexdigest()[:12]
        self._lease_lock = FileLock(str(Path(tempfile.gettempdir()) / f"pytest-dlperf-ray-{digest}.lock"))
        self._procs: list[RayProcess] = []
        self._owns_ray = False

    # ------------------------------------------------------------------ attach
    def connect(self) -> None:
        """Attach to the cluster (Ray Client for a ray:// address); never starts one."""
        if ray.is_initialized():  # this process already holds a connection (a user's own): use it, keep it
            return
        for attempt in range(1, ATTACH_TRIES + 1):
            try:
                ray.init(address=self.opts.address, namespace=self.namespace, logging_level=logging.WARNING,
                         log_to_driver=False)
                break
            except ConnectionAbortedError as exc:  # the head could not start this client's own server
                with contextlib.suppress(Exception):
                    ray.shutdown()
                if attempt == ATTACH_TRIES:
                    raise self._unattached(exc) from None
                self.say(f"ray: the head at {self.opts.address} could not start this session's client server "
                         f"({_why(exc)}); attaching again, {attempt + 1} of {ATTACH_TRIES}")
                time.sleep(ATTACH_PAUSE * attempt)
            except Exception as exc:  # noqa: BLE001 - Ray's own error, named
                raise self._unattached(exc) from None
        self._owns_ray = True

    def _unattached(self, exc: BaseException) -> ClusterError:
        return ClusterError(f"cannot attach to the Ray cluster at {self.opts.address}: {_why(exc)} (give "
                            "--dlperf-ray-address ray://HEAD:10001, the head's Ray Client port, from outside "
                            "the cluster; the harness starts no cluster)")

    def nodes(self) -> list[Node]:
        with self._lock:
            if self._nodes is None:
                self._nodes = self._check_nodes()
            return list(self._nodes)

    def _check_nodes(self) -> list[Node]:
        try:
            every = read_nodes(ray.nodes())
        except Exception as exc:  # noqa: BLE001
            raise ClusterError(f"cannot list the Ray cluster's nodes: {_why(exc)}") from None
        chosen, left = choose(every, self.selection, self.want)
        alive = sum(n.alive for n in every)
        if not chosen:
            raise ClusterError(f"no node of the Ray cluster at {self.opts.address} can take the cases ({alive} alive): "
                               + "; ".join(left))
        self.say(f"ray: attached to {self.opts.address} (Ray {ray.__version__}, namespace {self.namespace}), "
                 f"{alive} alive node(s); nodes: {', '.join(n.describe() for n in chosen)}"
                 + (f"; left out: {'; '.join(left)}" if left else ""))
        named = names(chosen)
        runs = gangs.probe_nodes(chosen, self.opts.python, PROBE_SRC, self.frameworks)
        facts, pythons, bad = {}, {}, []
        for name, got in zip(named, runs):
            if isinstance(got, Exception):
                bad.append(f"--- {name}: the probe task failed: {_why(got)}")
                continue
            python, code, out, err = got
            pythons[name] = python
            try:
                facts[name] = parse_probe(code, out, (out + err).strip()[-1500:], python)
            except ClusterError as exc:
                bad.append(f"--- {name}: {exc}")
        check_nodes("ray", facts, bad, self.frameworks,
                    "--dlperf-ray-python names the nodes' Python 3; by default the Ray workers' own")
        nodes = []
        for name, rn in zip(named, chosen):
            f = dict(facts[name])
            f["cpus"] = rn.cpus or f["cpus"]  # what Ray gives the node (a pod's limit), not the host's cores
            seen = list(f["gpus"])
            f["gpus"] = (seen + [seen[0] if seen else "gpu"] * rn.gpus)[:rn.gpus]
            nodes.append(make_node(name, rn.ip, f, self.slots, pythons[name],
                                   {"ray_node_id": rn.node_id, "ray_head": "yes" if rn.head else ""}))
            self._ray_nodes[name] = rn
        return nodes

    # ------------------------------------------------------------------ the placement group and its agents
    def _held(self) -> gangs.Gang:
        """The placement group and agents, made now when none is held (a lease, or a first need outside one)."""
        with self._lock:
            if self._gang is None:
                nodes = self.nodes()
                name = f"dlperf-{uuid.uuid4().hex[:8]}-{len(self._gangs)}"
                self._gangs.append(name)
                self._gang = gangs.open_gang(name, nodes, [self._ray_nodes[n.name] for n in nodes],
                                             dict(self.opts.resources), self.root, self.opts.wait, self.say)
            return self._gang

    def _release(self) -> None:
        """Stop what runs, remove the run directories, the agents and the placement group."""
        with self._lock:
            self.kill_started()
            gang, self._gang = self._gang, None
        if gang is not None:
            for line in gangs.close_gang(gang):
                self.say(line)

    @contextlib.contextmanager
    def lease(self, what: str = "") -> Iterator[None]:
        """The nodes for this session's runs: one placement group (and one lease at a time from this machine,
        so parallel pytest workers take turns) until the outermost lease ends."""
        with self.turns.take(self._lease_lock, f"the ray cluster at {self.opts.address}", what):
            with self._lock:
                self._depth += 1
            try:
                self._held()
                yield
            finally:
                with self._lock:
                    self._depth -= 1
                    last = self._depth == 0
                if last:
                    self._release()

    def _call(self, node: Node, method: str, *args, timeout: float = CALL_TIMEOUT):  # noqa: ANN002, ANN202
        """One call to the node's agent, waited for; ClusterError naming the node when Ray cannot make it."""
        agent = self._held().agents[node.name]
        try:
            return ray.get(getattr(agent, method).remote(*args), timeout=timeout)
        except Exception as exc:  # noqa: BLE001 - RayActorError, GetTimeoutError, a lost connection
            raise ClusterError(f"{node.name}: ray: its agent failed ({method}): {_why(exc)}") from None

    # ------------------------------------------------------------------ files
    def make_run_dir(self, node: Node, run_id: str) -> str:
        path = f"{self.root}/{run_id}/{node.name}"
        err = self._call(node, "make_dir", path)
        if err:
            raise ClusterError(f"{node.name}: {err}")
        return path

    def upload(self, node: Node, local: Path, remote_dir: str) -> str:
        dest = f"{remote_dir.rstrip('/')}/{local.name}"
        err = self._call(node, "write", dest, local.read_bytes(), local.stat().st_mode)
        if err:
            raise ClusterError(f"{node.name}: cannot send {local.name}: {err}")
        return dest

    def download(self, node: Node, remote: str, local: Path) -> None:
        try:
            data, err = self._call(node, "read", remote)
        except ClusterError as exc:
            raise OSError(str(exc)) from None
        if data is None:
            raise OSError(f"{node.name}: {err}")
        local.write_bytes(data)

    # ------------------------------------------------------------------ processes
    def start(self, cmd: NodeCommand, log_path: Path) -> NodeProcess:
        if RUN_TAG_ENV not in cmd.env:
            raise ClusterError(f"{cmd.node.name}: command started without {RUN_TAG_ENV}")
        key = uuid.uuid4().hex
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.touch()
        err = self._call(cmd.node, "start", key, list(cmd.argv), dict(cmd.env), cmd.cwd)
        if err:
            raise ClusterError(f"{cmd.node.name}: {err}")
        proc = RayProcess(cmd.node, self._held().agents[cmd.node.name], key, log_path)
        self._procs.append(proc)
        return proc

    def kill_tagged(self, node: Node, tag: str) -> int:
        try:
            code, out, err = self._call(node, "run", [node.python, "-c", KILLTAG_SRC, tag], 60.0, timeout=90.0)
        except ClusterError as exc:
            raise cannot_sweep(node, tag, exc) from exc
        return swept(node, tag, ExecResult(node, code, out, err))

    def free_ports(self, node: Node, n: int = 1) -> list[int]:
        if n <= 0:
            return []
        return list(self._call(node, "free_ports", n))

    def diagnose(self, nodes: Sequence[Node]) -> list[str]:
        """Nodes Ray no longer lists as alive, and agents that do not answer (their node or worker lost)."""
        found, named = [], set()
        with contextlib.suppress(Exception):
            now = {r.node_id: r for r in read_nodes(ray.nodes())}
            for n in nodes:
                rn = now.get(n.extra.get("ray_node_id", ""))
                if rn is None or not rn.alive:
                    found.append(f"ray: node {n.name} is no longer alive in the Ray cluster"
                                 + (f" ({rn.death})" if rn is not None and rn.death else ""))
                    named.add(n.name)
        gang = self._gang
        if gang is not None:
            pings = {n.name: gang.agents[n.name].ping.remote() for n in nodes if n.name in gang.agents}

            def answer(name: str) -> str | None:
                try:
                    ray.get(pings[name], timeout=5.0)
                    return None
                except Exception as exc:  # noqa: BLE001
                    return _why(exc)

            with ThreadPoolExecutor(max_workers=max(1, len(pings))) as pool:
                answers = dict(zip(pings, pool.map(answer, pings)))
            found += [f"ray: the agent on node {name} does not answer ({why}): the node or its Ray worker was lost"
                      for name, why in answers.items() if why is not None and name not in named]
        return found

    def render(self, cmd: NodeCommand) -> str:
        """The line the node's agent runs (under its watchdog) on the Ray node that bears the node's name."""
        return cmd.shell()

    def describe(self) -> dict:
        d = super().describe()
        d["ray"] = {"address": self.opts.address, "namespace": self.namespace, "version": ray.__version__,
                    "node_ids": {name: rn.node_id for name, rn in self._ray_nodes.items()},
                    "placement_groups": list(self._gangs)}
        return d

    def close(self) -> None:
        """Stop what runs, remove the agents and the placement group, and detach (the cluster keeps running)."""
        try:
            self._release()
        finally:
            if self._owns_ray:
                self._owns_ray = False
                with contextlib.suppress(Exception):
                    ray.shutdown()
