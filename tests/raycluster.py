"""A real Ray cluster for the Ray cluster tests: a head and worker nodes started with ``ray start``, each
in a network namespace of its own (as tests/slurmctl.py builds them) with its own hostname and /tmp, reached from
here through Ray Client (``ray://<head>:10001``) as a harness outside a cluster reaches it.

The namespaces join a bridge (10.232.<block>.1, this machine's end) through veth pairs (tests/netns.py);
node i is 10.232.<block>.<10+i>, the head node 0. No namespace has a route off the machine: Ray's node start
looks up a route to a public address to guess its own IP even when given one (issue #51), and every
node is given its address. Each node's /tmp is its own (Ray's session files and the harness's run
directories stay on their node: files must travel through Ray). Every Ray process of a node runs in
its namespace, so stopping a node is killing the namespace's processes; nothing is left at teardown.
Ray comes from tests/setup.sh (the project's ``ray`` extra).
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .installed import require_module
from .netns import NodeNet, hosts_file, kill_namespace, node_argv, private_tmp_script
from .sshd import DIE_WITH_PARENT, address_block

CLIENT_PORT = 10001
GCS_PORT = 6379
NET = NodeNet("dlperf-ray", 232, "dlpry", "dlpr")  # node i: dlperf-ray-<block>-n<i> at 10.232.<block>.<10+i>
# Ray's health checks of the nodes, more often than its defaults (3 s apart, 5 missed), so that a node
# killed by a test (its port closed: each check fails at once) is declared dead in about 2 s rather than
# 15-25 s; read by every Ray process. A live node has Ray's own 10 s to answer each check: with 1 s, a head
# starved of the CPU beside the other xdist worker's training could be declared dead, the likely reason the Ray
# Client's server for the harness did not start in CI on 2026-11-29 ("Starting Ray client server failed").
RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_health_check_period_ms": "500",
           "RAY_health_check_timeout_ms": "10000", "RAY_health_check_failure_threshold": "3"}

# Attaches through Ray Client (retrying while the head's client server starts), waits until N nodes
# are alive, prints ray.nodes() as one JSON line.
WAIT_SRC = r"""
import json, sys, time
import ray
address, want, deadline = sys.argv[1], int(sys.argv[2]), time.monotonic() + float(sys.argv[3])
while True:
    try:
        ray.init(address=address, logging_level="ERROR", log_to_driver=False)
        break
    except Exception as exc:
        if time.monotonic() > deadline:
            sys.exit(f"cannot attach to {address}: {exc}")
        time.sleep(0.5)
while True:
    nodes = ray.nodes()
    if sum(bool(n["Alive"]) for n in nodes) >= want or time.monotonic() > deadline:
        break
    time.sleep(0.3)
print(json.dumps([{"ip": n["NodeManagerAddress"], "alive": bool(n["Alive"]), "id": n["NodeID"]} for n in nodes]))
"""

# What a session may have left in the cluster: live named actors (every namespace) and placement
# groups not removed, as one JSON line.
LEFT_SRC = r"""
import json, sys
import ray
from ray.util.placement_group import placement_group_table
ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
actors = ray.util.list_named_actors(all_namespaces=True)
groups = {k: {"name": v.get("name"), "state": v.get("state")} for k, v in placement_group_table().items()}
print(json.dumps({"actors": actors, "groups": groups}))
"""


def _clear_stale(block: int) -> None:
    """What a dead test run left under this process's block (held by it alone): processes, namespaces, links."""
    NET.clear_stale(block)
    for marker in Path("/var/tmp").glob("dlperf-ray-*/block"):
        with contextlib.suppress(OSError):
            if marker.read_text().strip() == str(block):
                shutil.rmtree(marker.parent, ignore_errors=True)


@dataclass
class RayTestCluster:
    """A running test cluster: node 0 is the head."""

    base: Path
    block: int
    addresses: list[str]
    starters: dict[int, subprocess.Popen] = field(default_factory=dict)

    @property
    def head(self) -> str:
        return self.addresses[0]

    @property
    def address(self) -> str:
        """The Ray Client address a harness outside the cluster gives."""
        return f"ray://{self.head}:{CLIENT_PORT}"

    def namespace(self, i: int) -> str:
        return NET.namespace(self.block, i)

    def hostname(self, i: int) -> str:
        return f"ray-n{i}"

    def _start_node(self, i: int) -> None:
        ip = self.addresses[i]
        common = [f"--node-ip-address={ip}", "--num-cpus=1", "--num-gpus=0", "--object-store-memory=80000000",
                  "--disable-usage-stats", "--block"]
        if i == 0:
            ray_args = ["--head", f"--port={GCS_PORT}", f"--ray-client-server-port={CLIENT_PORT}",
                        "--include-dashboard=false", *common]
        else:
            ray_args = [f"--address={self.head}:{GCS_PORT}", *common]
        ray_bin = str(Path(sys.executable).with_name("ray"))
        if not Path(ray_bin).exists():
            ray_bin = shutil.which("ray") or "ray"
        tmp = self.base / "tmp" / str(i)
        tmp.mkdir(parents=True, exist_ok=True)
        tmp.chmod(0o1777)
        hold = Path(tempfile.mkdtemp(prefix=f"env{i}-", dir=self.base))  # a fresh one when a node starts again
        # the node's own hostname and /etc/hosts (bound in its mount namespace) as Debian's installer writes it:
        # its own name on 127.0.1.1, the others' on their addresses (as DNS would give them); gloo, which takes
        # its address from the hostname, would advertise loopback there unless the harness names the interface
        # (nodechecks/interfaces.py); and its own /tmp
        script = 'mount --bind "$2" /etc/hosts && hostname "$3" && ' + private_tmp_script(hold) + 'shift 3 && exec "$@"'
        argv = [*DIE_WITH_PARENT, *node_argv(self.namespace(i), script, str(tmp), str(self.base / f"hosts{i}"),
                                             self.hostname(i), ray_bin, "start", *ray_args)]
        log = open(self.base / f"node{i}.log", "ab")
        try:
            self.starters[i] = subprocess.Popen(argv, env={**os.environ, **RAY_ENV}, stdin=subprocess.DEVNULL,
                                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        finally:
            log.close()

    def logs(self) -> str:
        """The tail of each node's ``ray start`` output and of the head's GCS, raylet and Ray Client server logs."""
        head = sorted(self.base.glob("tmp/0/ray/session_latest/logs"))
        files = [*sorted(self.base.glob("node*.log")),
                 *(f for d in head[-1:] for pattern in ("gcs_server.err", "raylet.err", "ray_client_server*.err")
                   for f in sorted(d.glob(pattern)))]
        return "\n".join(f"--- {p.name}:\n{p.read_text(errors='replace')[-1500:]}" for p in files)

    def wait_alive(self, n: int, timeout: float = 90.0) -> list[dict]:
        """Until ``n`` nodes are alive, seen through Ray Client; ray.nodes() in short."""
        done = subprocess.run([sys.executable, "-c", WAIT_SRC, self.address, str(n), str(timeout)], capture_output=True,
                              text=True, timeout=timeout + 60, env={**os.environ, **RAY_ENV})
        if done.returncode != 0:
            raise RuntimeError(f"the Ray test cluster did not come up: {done.stderr[-2000:]}\n{self.logs()}")
        nodes = json.loads(done.stdout.strip().splitlines()[-1])
        alive = [x for x in nodes if x["alive"]]
        if len(alive) < n:
            raise RuntimeError(f"only {len(alive)} of {n} Ray test nodes alive: {nodes}\n{self.logs()}")
        return nodes

    def leftovers(self) -> dict:
        """Live named actors and placement groups not removed, in the whole cluster."""
        for _ in range(3):  # the proxier gives each client a server of its own: on a loaded host its start can time out
            done = subprocess.run([sys.executable, "-c", LEFT_SRC, self.address], capture_output=True, text=True,
                                  timeout=120, env={**os.environ, **RAY_ENV})
            if done.returncode == 0 or "Starting Ray client server failed" not in done.stderr:
                break
        assert done.returncode == 0, done.stderr[-3000:]
        got = json.loads(done.stdout.strip().splitlines()[-1])
        return {"actors": got["actors"],
                "groups": {k: v for k, v in got["groups"].items() if v["state"] != "REMOVED"}}

    def kill_node(self, i: int) -> None:
        """The node dies at once: every process of its namespace (raylet, workers, launchers) gets SIGKILL."""
        kill_namespace(self.namespace(i), grace=0.0)
        starter = self.starters.pop(i, None)
        if starter is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                starter.wait(timeout=10)

    def restart_node(self, i: int) -> None:
        self._start_node(i)
        self.wait_alive(len(self.addresses))

    def stop(self) -> None:
        for i in reversed(range(len(self.addresses))):  # the workers first, the head last
            with contextlib.suppress(OSError):
                kill_namespace(self.namespace(i))
        for p in self.starters.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=10)
        NET.remove(self.block, list(range(len(self.addresses))))
        shutil.rmtree(self.base, ignore_errors=True)


def start(workers: int = 3) -> RayTestCluster:
    """A head and ``workers`` worker nodes, 1 CPU each, every one alive (seen through Ray Client) when it returns."""
    require_module("ray", "Ray, the project's ray extra")
    if os.geteuid() != 0:
        raise RuntimeError("the Ray test cluster needs root (network namespaces)")
    block = address_block()
    _clear_stale(block)
    base = Path(tempfile.mkdtemp(prefix="dlperf-ray-", dir="/var/tmp"))  # not under /tmp: each node has its own
    (base / "block").write_text(f"{block}\n")
    cluster = RayTestCluster(base, block, [NET.address(block, i) for i in range(workers + 1)])
    try:
        NET.build(block, dict(enumerate(cluster.addresses)))
        for i in range(workers + 1):
            hosts_file(base / f"hosts{i}", {cluster.hostname(k): "127.0.1.1" if k == i else ip
                                            for k, ip in enumerate(cluster.addresses)})
        cluster._start_node(0)
        cluster.wait_alive(1)
        for i in range(1, workers + 1):
            cluster._start_node(i)
        cluster.wait_alive(workers + 1)
        return cluster
    except BaseException:
        cluster.stop()
        raise


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[RayTestCluster]:
    """A head and three workers (four 1-CPU nodes: the ladder 1n1g, 2n1g, 4n1g), for one test module."""
    cluster = start(3)
    try:
        yield cluster
    finally:
        cluster.stop()
