"""The tiny engine's node program: real ranks that exchange gradients over TCP, no framework.

Standard library only, plus the step-log contract (``steplog.py``) and the flags every workload takes
(``workloadkit.py``), copied beside it. It speaks the
contract as every workload does and honours the same switches: DLPERF_FAULT=rank:step crashes a
rank, DLPERF_FAULT=nosync keeps each rank's gradient to itself (the digests then disagree),
DLPERF_PLANT_SLOWDOWN=d slows each window step by d, DLPERF_STEPLOG_FAULT damages the log. A step is
a fixed amount of pure-Python arithmetic per sample, so its time follows the host's CPU speed, and
an all-gather through rank 0 (the "all-reduce") per step, so a rank that stops stops the others.

    python workload.py --nnodes N --node-rank R --nproc-per-node D --master-addr A --master-port P \
        --model resnet50 --precision fp32 --batch-size 2 --image-size 32 --warmup-iters 1 ...
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import time

import checkpoints
import nodefacts
import steplog
import workloadkit

START = steplog.StartClock()  # the launch's and this process's start: time to first step
START.mark("imports")

VERSION = "1.0"  # in the meta line as "tiny"; no framework: the profile names none
# Work units per sample at 32 px (or sequence 32): one unit is one multiply-add of the loop below.
COST = {"resnet50": 800_000, "vgg16": 1_200_000, "bert-base": 600_000, "arcface": 700_000}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    workloadkit.add_arguments(p, sorted(COST), {})  # the flags every workload takes; synthetic data only
    for flag in ("--nnodes", "--node-rank", "--master-port"):  # its own launcher's, as torchrun's
        p.add_argument(flag, type=int, required=True)
    p.add_argument("--nproc-per-node", type=int, default=0)
    p.add_argument("--master-addr", required=True)
    p.add_argument("--local-rank", type=int, default=-1, help="set by the node process for its ranks")
    p.add_argument("--compile", action="store_true", help="as torch_ddp.py's: a compiled model (Compiled, below)")
    p.add_argument("--drop-compile-cache", action="store_true", help="with --compile: remove its cache at the end")
    p.add_argument("--profile-steps", type=int, default=0, help="as torch_ddp.py's: steps more, traced (Profiler)")
    p.add_argument("--profile-dir", default="", help="with --profile-steps: where each rank writes rank<R>.json")
    return p.parse_args(argv)


class Ops:
    """A step's work as named operators, as a profiler sees them: "aten::mm" the step's arithmetic, the extra
    operator TINY_EXTRA_OP plants (``NAME:SHARE``: SHARE more work a step in NAME; a Python environment's
    sitecustomize sets it, as a library that adds work would), "gloo:all_gather" the step's exchange. While
    ``events`` is a list, each operator's span is kept there in Kineto's Chrome trace format (``Profiler``).

    TINY_STEP_SECONDS=S makes the arithmetic a fixed S seconds a step (a sleep), as a step bound by its device
    takes whatever the host's CPU does: for tests whose planted figures must not move with the host's speed."""

    def __init__(self, units: int) -> None:
        name, _, share = os.environ.get("TINY_EXTRA_OP", "").rpartition(":")
        fixed = float(os.environ.get("TINY_STEP_SECONDS", "0") or 0)
        self.run, self.size = (time.sleep, fixed) if fixed > 0 else (work, units)
        self.extra = (name, type(self.size)(self.size * float(share))) if name else None
        self.events: list[dict] | None = None

    def span(self, name: str, cat: str, fn, *args):  # noqa: ANN001, ANN202
        t0 = time.perf_counter()
        out = fn(*args)
        if self.events is not None:
            self.events.append({"ph": "X", "cat": cat, "name": name, "pid": os.getpid(), "tid": os.getpid(),
                                "ts": t0 * 1e6, "dur": (time.perf_counter() - t0) * 1e6})
        return out

    def compute(self) -> None:
        self.span("aten::mm", "cpu_op", self.run, self.size)
        if self.extra:
            self.span(self.extra[0], "cpu_op", self.run, self.extra[1])


class Profiler:
    """A profiled launch's extra steps (``--profile-steps N --profile-dir DIR``) as torchprofile.py takes them on
    torch: one step first, then N steps each inside ``ProfilerStep#k``, the rank's trace written as Kineto's
    Chrome trace to DIR/rank<R>.json; what it did is the rank's entry of the meta line's ``profile``."""

    def __init__(self, ops: Ops, steps: int, directory: str, rank: int) -> None:
        self.ops, self.steps, self.path, self.rank = ops, steps, os.path.join(directory, f"rank{rank}.json"), rank

    def run(self, step) -> dict:  # noqa: ANN001
        said = {"rank": self.rank, "host": socket.gethostname(), "steps": self.steps}
        step()
        self.ops.events = events = []
        for k in range(self.steps):
            t0 = time.perf_counter()
            step()
            events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k + 1}", "pid": os.getpid(),
                           "tid": os.getpid(), "ts": t0 * 1e6, "dur": (time.perf_counter() - t0) * 1e6})
        self.ops.events = None
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            with open(self.path, "w") as f:
                json.dump({"schemaVersion": 1, "traceEvents": events}, f)
            said["file"] = self.path
        except OSError as exc:
            said["error"] = f"could not write {self.path}: {type(exc).__name__}: {exc}"
        return said


class Compiled:
    """A compiled model as the tiny engine plays one (``--compile``): its cache is TORCHINDUCTOR_CACHE_DIR, as
    inductor's; the first step compiles, for COLD seconds into an empty cache (it fills it) or WARM from a filled
    one; the graph breaks are those TINY_GRAPH_BREAKS plants (``N|what dynamo said``: a Python environment's
    sitecustomize sets it, as a library that breaks the graph would), no recompilation. Its record is the
    meta line's ``compile`` as torch_ddp.py writes it (``steplog.compile_figures``)."""

    COLD, WARM = 0.3, 0.02

    def __init__(self) -> None:
        self.dir = os.environ["TORCHINDUCTOR_CACHE_DIR"]
        self.cold = not (os.path.isdir(self.dir) and any(os.scandir(self.dir)))
        self.fresh = True  # the next step compiles

    def step(self) -> None:
        if self.fresh:
            time.sleep(self.COLD if self.cold else self.WARM)
            os.makedirs(self.dir, exist_ok=True)
            with open(os.path.join(self.dir, "tiny-graph"), "w") as f:
                f.write("compiled\n")

    def compiled(self) -> bool:
        fresh, self.fresh = self.fresh, False
        return fresh

    def record(self, timed: steplog.Timed) -> dict:
        count, _, said = os.environ.get("TINY_GRAPH_BREAKS", "0").partition("|")
        compile_seconds = self.COLD if self.cold else self.WARM
        return {"seconds": timed.compile_seconds, "steps": timed.compile_steps, "dynamo_seconds": compile_seconds,
                "graph_breaks": int(count), "breaks": [said] if said else [], "recompiles": 0,
                "recompile_reasons": [], "window_compiles": 0, "graphs": 1 + int(count), "ddp_splits": 0,
                "cache": {"dir": self.dir, "cold": self.cold}}


def work(units: int) -> float:
    """A step's compute: ``units`` dependent multiply-adds (about 50-100 ns each in CPython)."""
    x = 1.0
    for _ in range(units):
        x = x * 0.999999 + 1e-6
    return x


class Ring:
    """Rank 0 holds one connection per other rank; ``allgather`` goes through it (a star, not a ring)."""

    def __init__(self, rank: int, world: int, addr: str, port: int, timeout: float = 120.0) -> None:
        self.rank, self.world, self.peers = rank, world, []
        if world == 1:
            return
        if rank == 0:
            server = socket.create_server((addr, port))
            server.settimeout(timeout)
            got = {}
            while len(got) < world - 1:
                conn, _ = server.accept()
                f = conn.makefile("rw")
                got[int(f.readline())] = f
            server.close()
            self.peers = [got[r] for r in range(1, world)]
        else:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    conn = socket.create_connection((addr, port), timeout=timeout)
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            self.peers = [conn.makefile("rw")]
            self._send(self.peers[0], self.rank)

    @staticmethod
    def _send(f, value) -> None:  # noqa: ANN001
        f.write(json.dumps(value) + "\n")
        f.flush()

    @staticmethod
    def _recv(f):  # noqa: ANN001, ANN205
        line = f.readline()
        if not line:
            raise ConnectionError("a peer rank stopped")
        return json.loads(line)

    def allgather(self, value) -> list:  # noqa: ANN001
        if self.world == 1:
            return [value]
        if self.rank == 0:
            values = [value, *(self._recv(f) for f in self.peers)]
            for f in self.peers:
                self._send(f, values)
            return values
        self._send(self.peers[0], value)
        return self._recv(self.peers[0])


class Checkpoint:
    """The tiny engine's checkpoint (``checkpoints.Checkpointer``): each rank writes its parameter and its share of
    the model's state (a byte for every 25 work units of a step, split over the ranks) to ``rank<R>.bin`` and reads
    its parameter back from it. Each takes TINY_CHECKPOINT_SECONDS (default 0.02) at least, a sleep after the file's
    few milliseconds, as a write bound by its disk: a fixed figure the harness's tests can plant a change in."""

    format = "tiny"

    def __init__(self, rank: int, world: int, units: int, get, put) -> None:  # noqa: ANN001
        self.rank, self.size, self.get, self.put = rank, units // 25 // max(1, world), get, put
        self.floor = float(os.environ.get("TINY_CHECKPOINT_SECONDS", "0.02") or 0)

    def _file(self, path: str) -> str:
        return os.path.join(path, f"rank{self.rank}.bin")

    def _at_least(self, t0: float) -> None:
        time.sleep(max(0.0, self.floor - (time.perf_counter() - t0)))

    def save(self, path: str) -> None:
        t0 = time.perf_counter()
        os.makedirs(path, exist_ok=True)
        with open(self._file(path), "wb") as f:
            f.write(json.dumps(self.get()).encode().ljust(64) + bytes(self.size))
        self._at_least(t0)

    def load(self, path: str) -> None:
        t0 = time.perf_counter()
        with open(self._file(path), "rb") as f:
            head = f.read(64)
            rest = len(f.read())
        if rest != self.size:
            raise SystemExit(f"{self._file(path)}: {rest} bytes of state where {self.size} were written")
        self.put(json.loads(head.decode()))
        self._at_least(t0)


def rank_main(args: argparse.Namespace) -> int:
    world = args.nnodes * args.nproc_per_node
    rank = args.node_rank * args.nproc_per_node + args.local_rank
    ring = Ring(rank, world, args.master_addr, args.master_port)
    START.mark("process_group")
    units = COST[args.model] * args.batch_size * max(1, (args.image_size // 32) ** 2)
    START.mark("model")
    nosync = steplog.no_sync_fault()
    param, done = 1.0, [0]
    compiled = Compiled() if args.compile else None
    ops = Ops(units)

    def step() -> float:
        nonlocal param
        if compiled is not None:
            compiled.step()
        ops.compute()
        grad = ((rank + 1) * (done[0] + 1)) % 7 / 10
        grads = ops.span("gloo:all_gather", "user_annotation", ring.allgather, grad)  # a rank that stopped stops all
        param -= 0.01 * (grad if nosync else sum(grads) / world)
        done[0] += 1
        return param  # the "loss"

    timed = steplog.time_steps(step, args, rank, args.batch_size * world,
                               agree=lambda ok, n: tuple(ring.allgather((ok, n))[0]),
                               barrier=lambda: ring.allgather(None),
                               compiled=compiled.compiled if compiled is not None else None)
    started = steplog.start_and_memory(ring.allgather, START, timed)
    compiles = ring.allgather(compiled.record(timed)) if compiled is not None else None
    profiled = (ring.allgather(Profiler(ops, args.profile_steps, args.profile_dir, rank).run(step))
                if args.profile_steps > 0 else None)
    gathered = ring.allgather({"times": timed.seconds, "digest": [param, param * param],
                               "host": socket.gethostname(), "device": nodefacts.cpu_model()})
    saved = None
    if args.checkpoint_dir:  # after the digests, as every workload takes it

        def put(value: float) -> None:
            nonlocal param
            param = value

        saved = checkpoints.time_checkpoint(args.checkpoint_dir, Checkpoint(rank, world, units, lambda: param, put),
                                            rank, lambda: ring.allgather(None), ring.allgather)
    if rank == 0:
        with steplog.Writer(args.output) as log:
            log.meta(model=args.model, precision=args.precision, batch_size=args.batch_size,
                     image_size=args.image_size, warmup_iters=timed.warmup, iters=timed.iters,
                     window_seconds=args.window_seconds, window={"start": timed.window[0], "end": timed.window[1]},
                     world_size=world, ranks=[{"host": g["host"], "device": g["device"]} for g in gathered],
                     local_world_size=args.nproc_per_node, nnodes=args.nnodes, engine="tiny",
                     frameworks={}, tiny=VERSION, python=platform.python_version(), backend="tcp",
                     wrapper="none" if world == 1 else "allgather", **started,
                     **({"compile": steplog.compile_figures(compiles)} if compiles else {}),
                     **({"checkpoint": saved} if saved else {}),
                     **({"profile": {"tool": "tiny", "steps": args.profile_steps, "ranks": profiled}} if profiled else {}))
            log.steps(timed, [g["times"] for g in gathered], args.batch_size * world)
            log.end([g["digest"] for g in gathered])
    if compiled is not None and args.drop_compile_cache and args.local_rank == 0:  # after the last exchange
        shutil.rmtree(compiled.dir, ignore_errors=True)
    return 0


def launches_before(path: str) -> int:
    """How many launches counted themselves in the file at ``path`` before this one, which counts itself."""
    with open(path, "a+", encoding="utf-8") as f:
        f.seek(0)
        before = len(f.read().splitlines())
        f.write("launch\n")
    return before


def slow_first_launches() -> None:
    """TINY_SLOW_FIRST=FILE:N:D: the first N launches that count themselves in FILE run D slower
    (DLPERF_PLANT_SLOWDOWN for their ranks), the later ones at full speed: a host's slow spell that
    covers a case's first launches and is gone minutes later (tests of --dlperf-confirm)."""
    spec = os.environ.get("TINY_SLOW_FIRST")
    if not spec:
        return
    path, n, d = spec.rsplit(":", 2)
    os.environ["DLPERF_PLANT_SLOWDOWN"] = d if launches_before(path) < int(n) else "0"


def spread_launches() -> None:
    """TINY_SLOWDOWNS=FILE:D0,D1,...: the k-th launch that counts itself in FILE runs Dk slower, the ones
    past the list at full speed: a host whose speed differs from launch to launch, one mode spread wide."""
    spec = os.environ.get("TINY_SLOWDOWNS")
    if not spec:
        return
    path, ds = spec.rsplit(":", 1)
    before, got = launches_before(path), ds.split(",")
    os.environ["DLPERF_PLANT_SLOWDOWN"] = got[before] if before < len(got) else "0"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.local_rank >= 0:
        return rank_main(args)
    # The node process: one child per local rank (each inherits the run tag), the first failure wins.
    argv = sys.argv[1:] if argv is None else argv
    if args.node_rank == 0:
        slow_first_launches()
        spread_launches()
    # a line in every node's log, as a framework's launcher writes one (a node's output comes back to the harness)
    print(f"tiny: node {args.node_rank} of {args.nnodes} starts {max(1, args.nproc_per_node)} rank(s)", flush=True)
    children = [subprocess.Popen([sys.executable, "-u", os.path.abspath(__file__), *argv, "--local-rank", str(i)])
                for i in range(max(1, args.nproc_per_node))]
    codes = [c.wait() for c in children]
    return next((c for c in codes if c != 0), 0)


if __name__ == "__main__":
    sys.exit(main())
