"""Starts one node's ranks of a torch workload directly, as torchrun's agent would, for the local cluster.

torchrun's agent imports torch before it starts a rank (about 2 s on a CPU node) and takes most of a second to
notice the ranks' exit and shut down. On the local cluster neither is part of the training the harness measures,
so ``--dlperf-local-start direct`` (the default there) starts the ranks with this standard-library program instead:
the same ``python -u SCRIPT ARGS`` per rank, each in a session of its own, and the same environment the agent gives
its workers (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, ... below: rank 0 hosts the TCP store, as under
``init_process_group``'s ``env://`` without an agent). As torchrun's agent does, it stops every other rank when one
fails, passes SIGTERM, SIGINT, SIGHUP and SIGQUIT on to the ranks' process groups and kills what is left after a
grace period. It exits with the failed rank's code, or 128 + the signal it passed on (torchrun exits 1 for both).
A rank dies with it should it be killed (Linux's parent-death signal).

    python rankstart.py --nnodes 2 --node-rank 0 --nproc-per-node 1 --master-addr 127.0.0.1 --master-port 29500 \
        --run-id ID SCRIPT [ARGS...]

Imports nothing of the harness (node code speaks the written contract only).
"""
from __future__ import annotations

import argparse
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

# How long the ranks get to leave after a signal before they are killed (torchrun's agent waits 30 s; a rank here
# holds no state worth the wait).
GRACE_SECONDS = 5.0
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)  # torchrun's default set
PR_SET_PDEATHSIG = 1  # prctl(2)


class Forwarded(Exception):
    """A signal came while the ranks ran: it has been passed on to them."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="rankstart.py", description=__doc__.splitlines()[0])
    ap.add_argument("--nnodes", type=int, required=True)
    ap.add_argument("--node-rank", type=int, required=True)
    ap.add_argument("--nproc-per-node", type=int, required=True)
    ap.add_argument("--master-addr", required=True)
    ap.add_argument("--master-port", type=int, required=True)
    ap.add_argument("--run-id", default="none")
    ap.add_argument("script")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    return ap.parse_args(argv)


def rank_env(args: argparse.Namespace, local_rank: int) -> dict[str, str]:
    """What torchrun's agent (torch.distributed.elastic's LocalElasticAgent) sets for a worker, for a static
    launch of one role that never restarts; OMP_NUM_THREADS as the launch gave it."""
    world = args.nnodes * args.nproc_per_node
    rank = args.node_rank * args.nproc_per_node + local_rank
    return {
        "RANK": str(rank), "LOCAL_RANK": str(local_rank), "GROUP_RANK": str(args.node_rank),
        "ROLE_RANK": str(rank), "ROLE_NAME": "default", "LOCAL_WORLD_SIZE": str(args.nproc_per_node),
        "WORLD_SIZE": str(world), "GROUP_WORLD_SIZE": str(args.nnodes), "ROLE_WORLD_SIZE": str(world),
        "MASTER_ADDR": args.master_addr, "MASTER_PORT": str(args.master_port),
        "TORCHELASTIC_RESTART_COUNT": "0", "TORCHELASTIC_MAX_RESTARTS": "0",
        "TORCHELASTIC_RUN_ID": args.run_id, "TORCHELASTIC_USE_AGENT_STORE": "False",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": os.environ.get("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"),
        # torchrun exports the signals its agent passes on; these are the ones this start passes on
        "TORCHELASTIC_SIGNALS_TO_HANDLE": ",".join(signal.Signals(s).name for s in FORWARDED),
        # steplog.RANK_START_ENV (not imported: a rev= side's older steplog.py may lack it), read by steplog.first_step
        "DLPERF_RANK_START": "direct",
    }


def exit_code(status: int) -> int:
    """A child's wait status as a shell reports it: its exit code, or 128 + the signal that ended it."""
    return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


def die_with_parent() -> Callable[[], None] | None:
    """What the rank's process runs before its program: SIGKILL it should this start die (Linux's prctl, looked up
    here, before the fork; None where the C library has none)."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return lambda: prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def signal_rank(p: subprocess.Popen, signum: int) -> None:
    """``signum`` to a rank's process group (its session: what it started too), unless it was reaped already.
    Only the main loop reaps, so a pid here is the rank's or a zombie's, never reused."""
    if p.returncode is None:
        try:
            os.killpg(p.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


def reap(ranks: dict[int, subprocess.Popen], grace: float) -> None:
    """Wait up to ``grace`` seconds for every rank still running, then SIGKILL its group and reap it."""
    deadline = time.monotonic() + grace
    for p in ranks.values():
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            signal_rank(p, signal.SIGKILL)
            p.wait()


def stop(ranks: dict[int, subprocess.Popen], signum: int = signal.SIGTERM) -> None:
    """``signum`` to every rank still running, then SIGKILL what is left after GRACE_SECONDS."""
    for p in ranks.values():
        signal_rank(p, signum)
    reap(ranks, GRACE_SECONDS)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    ranks: dict[int, subprocess.Popen] = {}
    state = {"signal": 0, "waiting": False}

    def forward(signum: int, _frame: object) -> None:
        state["signal"] = signum
        for p in ranks.values():
            signal_rank(p, signum)
        if state["waiting"]:  # interrupt os.wait(): the ranks now get GRACE_SECONDS
            state["waiting"] = False
            raise Forwarded(signum)

    for sig in FORWARDED:
        signal.signal(sig, forward)
    # as torchrun: several ranks on a node each get one OpenMP thread unless the launch says how many
    threads = {"OMP_NUM_THREADS": "1"} if args.nproc_per_node > 1 and "OMP_NUM_THREADS" not in os.environ else {}
    orphaned = die_with_parent()
    for local in range(args.nproc_per_node):
        if state["signal"]:  # a signal before every rank started: the ranks started have it; nothing more starts
            reap(ranks, GRACE_SECONDS)
            return 128 + state["signal"]
        env = {**os.environ, **threads, **rank_env(args, local)}
        try:
            ranks[local] = subprocess.Popen([sys.executable, "-u", args.script, *args.args], env=env,
                                            start_new_session=True, preexec_fn=orphaned)
        except OSError as exc:
            print(f"rankstart: could not start local rank {local}: {exc}", file=sys.stderr, flush=True)
            stop(ranks)
            return 1
    by_pid = {p.pid: local for local, p in ranks.items()}
    left = set(by_pid)
    try:
        while left:
            state["waiting"] = True
            if state["signal"]:  # came between the last start and here
                raise Forwarded(state["signal"])
            try:
                pid, status = os.wait()  # the only reaper: the first rank to leave
            except ChildProcessError:  # (none left: cannot happen while `left` holds pids)
                break
            state["waiting"] = False
            if pid not in left:
                continue
            left.discard(pid)
            local = by_pid[pid]
            ranks[local].returncode = code = exit_code(status)  # so that signal_rank and wait leave it be
            if code != 0:
                print(f"rankstart: rank {args.node_rank * args.nproc_per_node + local} (local rank {local} on node "
                      f"rank {args.node_rank}) exited with code {code}; stopping the others", file=sys.stderr,
                      flush=True)
                stop(ranks)
                return code
    except Forwarded as got:
        reap(ranks, GRACE_SECONDS)
        return 128 + got.signum
    return 0


if __name__ == "__main__":
    sys.exit(main())
