"""The Slurm cluster: the nodes of one allocation, every command a job step started with ``srun``.

Each node's launcher runs as ``srun --jobid J --overlap -N1 -n1 -w NODE ...`` from this machine,
so Slurm accounts for it and kills it with the job; a step's output comes back through srun into
the node's log here. The nodes reach each other at their Slurm addresses (NodeAddr, the
hostname unless the site set another). Files reach the nodes through the work directory when
every node sees it (a shared file system, checked once with a marker file), else with ``sbcast``
into the same node-local path on every node of the job. Nothing connects before the nodes are
first needed; then every node is probed once (Python, frameworks, CPUs, GPUs from Slurm's GRES
or nvidia-smi, the CPU model, the node's Slurm features), as the SSH cluster's preflight does.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from filelock import FileLock

from ..base import RUN_TAG_ENV, Cluster, ClusterError, ExecResult, Node, NodeCommand, NodeProcess, SpanAccess, \
    cannot_sweep, ports_printed, swept
from ..local import LOCALSH
from ...node.localsh import SRUN_ENV
from ..ssh.cluster import FREE_PORT_SRC, KILLTAG_SRC
from ..ssh.agreement import PROBE_SRC, check_nodes, make_node, parse_probe
from . import commands
from .allocation import Allocation
from .commands import STEP_PREFIX, SlurmError, StepSpec

GRES_GPUS = re.compile(r"gpu(?::([A-Za-z0-9_.-]+?))?:(\d+)")
BAD_STATES = ("DOWN", "DRAIN", "FAIL", "NOT_RESPONDING", "POWER")


def gres_gpus(gres: str) -> tuple[int, str]:
    """GPUs and their type from a node's Gres (``gpu:a100:8(S:0-1)``, ``gpu:4``); (0, "") if none."""
    m = GRES_GPUS.search(gres or "")
    return (int(m.group(2)), m.group(1) or "") if m else (0, "")


class SlurmProcess(NodeProcess):
    """One node's launcher: an srun process here, its step on the node."""

    def __init__(self, node: Node, popen: subprocess.Popen, log_path: Path, job_id: str, step_name: str) -> None:
        self.node, self.popen, self.log_path = node, popen, log_path
        self.job_id, self.step_name = job_id, step_name

    def poll(self) -> int | None:
        return self.popen.poll()

    def kill(self) -> None:
        """SIGTERM to srun (it passes it to the step's tasks), SIGKILL after a grace, then scancel
        any step of this name that survived srun."""
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout=8)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.popen.pid, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.popen.wait(timeout=5)
        with contextlib.suppress(SlurmError):
            for step in commands.steps(self.job_id, self.step_name):
                commands.run(["scancel", step], check=False)


class SlurmCluster(Cluster):
    """The nodes of a Slurm allocation (the caller's, or one the session made and releases)."""

    kind = "slurm"

    def __init__(self, allocation: Allocation, workdir: str | Path | None = None, slots: int | None = None,
                 frameworks: Sequence[str] = ("torch",), python: str = "python3",
                 say: Callable[[str], None] | None = None, node_dir: str = "/tmp") -> None:
        """``workdir``: where run directories go when every node sees it; else ``node_dir`` on each node."""
        self.allocation = allocation
        self.workdir = Path(workdir).expanduser().resolve() if workdir else Path(tempfile.mkdtemp(prefix="dlperf-slurm-"))
        self.node_dir = f"{node_dir.rstrip('/')}/dlperf-slurm-{allocation.job_id}"
        self.slots, self.frameworks, self.python = slots, tuple(frameworks), python
        self.say = say or (lambda text: print(text, file=sys.stderr, flush=True) if text else None)
        self.shared: bool | None = None
        self._nodes: list[Node] | None = None
        self._lock = threading.Lock()
        self._made: set[str] = set()  # node-local run directories made on every node
        # destination -> the file last broadcast there (an A/B session's sides send their own
        # revision of a workload to the same path in turn: each change is sent again)
        self._sent: dict[str, str] = {}
        self._procs: list[SlurmProcess] = []

    # ------------------------------------------------------------------ steps
    def step(self, nodes: Sequence[str], argv: Sequence[str], name: str = STEP_PREFIX, env=None,  # noqa: ANN001
             cwd: str | None = None, gres: str = "") -> StepSpec:
        return StepSpec(self.allocation.job_id, list(nodes), list(argv), name=name, env=dict(env or {}),
                        cwd=cwd, gres=gres)

    def exec(self, node: str | Sequence[str], argv: Sequence[str], timeout: float = 120.0) -> ExecResult:
        """Run a short command as a step on one node (or several) and wait for it."""
        names = [node] if isinstance(node, str) else list(node)
        spec = self.step(names, argv, name=f"{STEP_PREFIX}-exec")
        try:
            done = commands.run(spec.srun_argv(), timeout=timeout, check=False)
        except SlurmError as exc:
            raise ClusterError(f"{','.join(names)}: {exc}") from None
        ref = next((n for n in self._nodes or [] if n.name == names[0]), None) or Node(names[0], names[0], 1, 1)
        return ExecResult(ref, done.returncode, done.stdout.decode(errors="replace"),
                          done.stderr.decode(errors="replace"))

    # ------------------------------------------------------------------ preflight
    def nodes(self) -> list[Node]:
        with self._lock:
            if self._nodes is None:
                self._nodes = self._check_nodes()
            return list(self._nodes)

    def _check_nodes(self) -> list[Node]:
        names = self.allocation.nodes
        self.say(f"slurm: checking {len(names)} node(s) of job {self.allocation.job_id}: {','.join(names)}")

        def probe(name: str) -> tuple[dict, dict]:
            info = commands.node_info(name)
            res = self.exec(name, [self.python, "-c", PROBE_SRC, *self.frameworks], timeout=120)
            tail = (res.stdout + res.stderr).strip()[-1500:]
            return info, parse_probe(res.returncode, res.stdout, tail, self.python)

        with ThreadPoolExecutor(max_workers=min(32, len(names))) as pool:
            futures = {n: pool.submit(probe, n) for n in names}
        facts, infos, bad = {}, {}, []
        for name, fut in futures.items():
            try:
                infos[name], facts[name] = fut.result()
            except (ClusterError, SlurmError) as exc:
                bad.append(f"--- {name}: {str(exc).removeprefix(f'{name}: ')}")
        check_nodes("slurm", facts, bad, self.frameworks, "--dlperf-slurm-python names the nodes' Python 3")
        nodes = []
        for name in names:
            info, f = infos[name], facts[name]
            gpus, gpu_type = gres_gpus(info.get("Gres", ""))
            features = info.get("AvailableFeatures", "")
            if not f["gpus"] and gpus:  # GRES says the GPUs where nvidia-smi is not on the step's PATH
                f = {**f, "gpus": [gpu_type or "gpu"] * gpus}
            nodes.append(make_node(name, info.get("NodeAddr") or name, f, self.slots, self.python, {
                "slurm_job": self.allocation.job_id, "slurm_gres_gpus": str(gpus),
                "slurm_features": "" if features in ("(null)", "") else features}))
        self.shared = self._sees_workdir(names)
        where = (f"work directory {self.workdir} (shared by every node)" if self.shared else
                 f"{self.node_dir} on each node (files sent with sbcast; {self.workdir} is not shared)")
        self.say(f"slurm: nodes {', '.join(f'{n.name}={n.address}' for n in nodes)}; runs in {where}")
        return nodes

    def _sees_workdir(self, names: Sequence[str]) -> bool:
        """Whether every node reads a marker file written here into the work directory."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        token = uuid.uuid4().hex
        marker = self.workdir / f".dlperf-shared-{token[:8]}"
        marker.write_text(token + "\n")
        try:
            res = self.exec(names, ["cat", str(marker)], timeout=60)
            return res.returncode == 0 and res.stdout.split().count(token) == len(names)
        finally:
            marker.unlink(missing_ok=True)

    # ------------------------------------------------------------------ files
    def make_run_dir(self, node: Node, run_id: str) -> str:
        self.nodes()
        if self.shared:
            path = self.workdir / run_id / node.name
            path.mkdir(parents=True, exist_ok=False)
            return str(path)
        # node-local: one path on every node of the job, so that sbcast can fill it
        path = f"{self.node_dir}/{run_id}"
        with self._lock:
            if path not in self._made:
                names = self.allocation.nodes
                res = self.exec(names, ["mkdir", "-p", path], timeout=60)
                if res.returncode != 0:
                    raise ClusterError(f"{','.join(names)}: cannot make {path}: {res.tail(5)}")
                self._made.add(path)
        return path

    def upload(self, node: Node, local: Path, remote_dir: str) -> str:
        dest = f"{remote_dir.rstrip('/')}/{local.name}"
        if self.shared:
            if Path(dest).resolve() != local.resolve():
                shutil.copy2(local, dest)
            return dest
        with self._lock:
            if self._sent.get(dest) != str(local):
                try:
                    commands.run(["sbcast", f"--jobid={self.allocation.job_id}", "--force", "--preserve",
                                  str(local), dest], timeout=120)
                except SlurmError as exc:
                    raise ClusterError(f"{node.name}: cannot send {local.name} to {dest}: {exc}") from None
                self._sent[dest] = str(local)
        return dest

    def download(self, node: Node, remote: str, local: Path) -> None:
        if self.shared:
            if Path(remote).resolve() != local.resolve():
                shutil.copy2(remote, local)
            return
        res = self.exec(node.name, ["cat", remote], timeout=120)
        if res.returncode != 0:
            raise OSError(f"{node.name}: cannot read {remote}: {res.tail(3)}")
        local.write_text(res.stdout)

    # ------------------------------------------------------------------ processes
    def _spec(self, cmd: NodeCommand) -> StepSpec:
        tag = cmd.env.get(RUN_TAG_ENV, "")
        gpus = int(cmd.node.extra.get("slurm_gres_gpus", "0") or 0)
        return self.step([cmd.node.name], cmd.argv, name=f"{STEP_PREFIX}-{tag.removeprefix('dlperf-')[:12]}",
                         env=cmd.env, cwd=cmd.cwd, gres=f"gpu:{gpus}" if gpus else "")

    def start(self, cmd: NodeCommand, log_path: Path) -> NodeProcess:
        if RUN_TAG_ENV not in cmd.env:
            raise ClusterError(f"{cmd.node.name}: command started without {RUN_TAG_ENV}")
        spec = self._spec(cmd)
        log = open(log_path, "ab")
        try:
            popen = subprocess.Popen([commands.which("srun"), *spec.srun_argv()[1:]], stdout=log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        except (OSError, SlurmError) as exc:
            raise ClusterError(f"{cmd.node.name}: could not start srun: {exc}") from exc
        finally:
            log.close()
        proc = SlurmProcess(cmd.node, popen, log_path, self.allocation.job_id, spec.name)
        self._procs.append(proc)
        return proc

    def render(self, cmd: NodeCommand) -> str:
        return shlex.join(self._spec(cmd).srun_argv())

    def diagnose(self, nodes: Sequence[Node]) -> list[str]:
        """Nodes Slurm took away (DOWN, DRAIN, FAIL, NOT_RESPONDING) with Slurm's reason, and the
        job's end when it ended under the run (NODE_FAIL, TIMEOUT)."""
        found = []
        for node in nodes:
            with contextlib.suppress(SlurmError):
                info = commands.node_info(node.name)
                state, reason = info.get("State", ""), info.get("Reason", "")
                if any(b in state for b in BAD_STATES):
                    found.append(f"slurm: node {node.name} is {state}"
                                 + (f" (Reason={reason})" if reason and reason != "(null)" else ""))
        with contextlib.suppress(SlurmError):
            job = self.allocation.job_id
            if commands.job_state(job) is None:
                end = commands.run(["scontrol", "--oneliner", "show", "job", job], check=False)
                state = re.search(r"JobState=(\S+)", end.stdout.decode(errors="replace"))
                found.append(f"slurm: job {job} has ended" + (f" ({state.group(1)})" if state else "")
                             + ": the session's remaining runs cannot start")
        return found

    def kill_tagged(self, node: Node, tag: str) -> int:
        try:
            res = self.exec(node.name, [node.python, "-c", KILLTAG_SRC, tag], timeout=60)
        except ClusterError as exc:
            raise cannot_sweep(node, tag, exc) from exc
        if res.returncode != 0 and commands.job_state(self.allocation.job_id) is None:
            return 0  # the job has ended: Slurm killed every process of its steps with it
        return swept(node, tag, res)

    def free_ports(self, node: Node, n: int = 1) -> list[int]:
        if n <= 0:
            return []
        return ports_printed(node, n, self.exec(node.name, [node.python, "-c", FREE_PORT_SRC, str(n)], timeout=60))

    def span_access(self, nodes: Sequence[Node], run_dir: str) -> SpanAccess:
        """Launchers that start the other nodes from node 0 (horovodrun, mpirun) get an ``ssh`` first
        on their PATH (node/localsh.py) that runs each node's share as a step of this job there:
        compute nodes often accept no SSH, and Slurm then accounts for and kills every rank."""
        script = self.upload(nodes[0], LOCALSH, run_dir)
        with tempfile.TemporaryDirectory(prefix="dlperf-srunsh-") as tmp:
            agent = Path(tmp) / "ssh"
            agent.write_text(f"#!/bin/sh\nexec {shlex.quote(nodes[0].python)} {shlex.quote(script)} \"$@\"\n")
            agent.chmod(0o755)
            self.upload(nodes[0], agent, run_dir)
        where = {"job": self.allocation.job_id, "nodes": {n.address: n.name for n in nodes}}
        return SpanAccess(env={"PATH": f"{run_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
                               SRUN_ENV: json.dumps(where, separators=(",", ":"))}, check_reach=False)

    @contextlib.contextmanager
    def lease(self, what: str = "") -> Iterator[None]:
        """One run at a time in this allocation (parallel pytest workers and sessions take turns)."""
        lock = Path(tempfile.gettempdir()) / f"pytest-dlperf-slurm-{self.allocation.job_id}.lock"
        with self.turns.take(FileLock(str(lock)), f"slurm allocation {self.allocation.job_id}", what):
            yield

    def describe(self) -> dict:
        d = super().describe()
        d["slurm"] = {"job": self.allocation.job_id, "owned": self.allocation.owned,
                      "shared_workdir": bool(self.shared),
                      "features": {n.name: n.extra.get("slurm_features", "") for n in (self._nodes or [])}}
        return d

    def close(self) -> None:
        """Kill what still runs, remove the node-local run directories, release the allocation."""
        try:
            self.kill_started()
            if self._made:
                with contextlib.suppress(ClusterError, SlurmError):
                    self.exec(self.allocation.nodes, ["rm", "-rf", self.node_dir], timeout=60)
        finally:
            try:
                self.allocation.release(self.say)
            except SlurmError as exc:
                raise ClusterError(f"slurm: {exc}") from None
