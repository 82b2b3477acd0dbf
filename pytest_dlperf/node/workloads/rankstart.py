"""Starts one node's ranks of a torch workload directly, as torchrun's agent would, for the local cluster.

torchrun's agent imports torch before it starts a rank (about 2 s on a CPU node) and takes most of a second to
notice the ranks' exit and shut down. On the local cluster neither is part of the training the harness measures,
so ``--dlperf-local-start direct`` (the default there) starts the ranks with this standard-library program instead:
the same ``python -u SCRIPT ARGS`` per rank and the same environment the agent gives its workers (RANK,
LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, ... below: rank 0 hosts the TCP store, as under ``init_process_group``'s
``env://`` without an agent). As torchrun does, it stops every other rank when one fails and exits with that rank's
code, and passes SIGTERM, SIGINT, SIGHUP and SIGQUIT on to the ranks.

    python rankstart.py --nnodes 2 --node-rank 0 --nproc-per-node 1 --master-addr 127.0.0.1 --master-port 29500 \
        --run-id ID SCRIPT [ARGS...]

Imports nothing of the harness (node code speaks the written contract only).
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time

# How long the other ranks get to leave after a SIGTERM before they are killed (torchrun waits 30 s; a rank here
# holds no state worth the wait).
GRACE_SECONDS = 5.0
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)  # torchrun's default set


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
    }


def exit_code(status: int) -> int:
    """A child's wait status as a shell reports it: its exit code, or 128 + the signal that ended it."""
    return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


def stop(ranks: dict[int, subprocess.Popen]) -> None:
    """SIGTERM every rank still running, then SIGKILL what is left after GRACE_SECONDS."""
    for p in ranks.values():
        if p.poll() is None:
            p.terminate()
    deadline = time.monotonic() + GRACE_SECONDS
    for p in ranks.values():
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    ranks: dict[int, subprocess.Popen] = {}

    def forward(signum: int, _frame: object) -> None:
        for p in ranks.values():
            if p.poll() is None:
                p.send_signal(signum)

    for sig in FORWARDED:
        signal.signal(sig, forward)
    # as torchrun: several ranks on a node each get one OpenMP thread unless the launch says how many
    threads = {"OMP_NUM_THREADS": "1"} if args.nproc_per_node > 1 and "OMP_NUM_THREADS" not in os.environ else {}
    for local in range(args.nproc_per_node):
        env = {**os.environ, **threads, **rank_env(args, local)}
        ranks[local] = subprocess.Popen([sys.executable, "-u", args.script, *args.args], env=env)
    by_pid = {p.pid: local for local, p in ranks.items()}
    left, code = set(by_pid), 0
    while left:
        pid, status = os.wait()  # the first rank to leave; a forwarded signal's handler runs in between
        if pid not in left:
            continue
        left.discard(pid)
        ranks[by_pid[pid]].returncode = exit_code(status)  # so that poll() and stop() leave it be
        code = exit_code(status)
        if code != 0:
            local = by_pid[pid]
            print(f"rankstart: rank {args.node_rank * args.nproc_per_node + local} (local rank {local} on node "
                  f"rank {args.node_rank}) exited with code {code}; stopping the others", file=sys.stderr, flush=True)
            stop(ranks)
            return code
    return code


if __name__ == "__main__":
    sys.exit(main())
