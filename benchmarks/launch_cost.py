"""What one launch costs on this machine before and after its steps: the imports of each framework, and a
torchrun launch of a script that trains a small MLP for a few steps, cut into its phases (the agent's start,
the worker's imports and process group, the steps, the exit). The tests' time is launches times this
(tests/census.py counts them in a run of the tests).

    python3 benchmarks/launch_cost.py [--repeats 3] [--steps 60]

Prints each figure's median over the repeats. Run it on an otherwise idle machine."""
from __future__ import annotations

import argparse
import importlib.util
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRIPT = '''\
import time
print("START", time.time(), flush=True)
import torch, torch.distributed as dist, torch.nn as nn, torch.nn.functional as F
dist.init_process_group("gloo")
net = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 10)))
opt = torch.optim.SGD(net.parameters(), lr=0.01)
x, y = torch.randn(64, 512), torch.randint(0, 10, (64,))
print("READY", time.time(), flush=True)
for _ in range({steps}):
    opt.zero_grad(); F.cross_entropy(net(x), y).backward(); opt.step()
print("END", time.time(), flush=True)
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """(start, end, stdout) of ``argv``'s wall."""
    t0 = time.time()
    out = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600).stdout
    return t0, time.time(), out


def imports(repeats: int) -> None:
    for module in ("torch", "tensorflow", "paddle", "horovod.torch"):
        if importlib.util.find_spec(module.split(".")[0]) is None:
            print(f"import {module:14s}  not installed")
            continue
        walls = []
        for _ in range(repeats):
            t0, t1, _ = timed([sys.executable, "-c", f"import {module}"])
            walls.append(t1 - t0)
        print(f"import {module:14s}  {statistics.median(walls):5.2f} s  (python's start and exit included)")


def torchrun(repeats: int, steps: int) -> None:
    phases: dict[str, list[float]] = {"agent start": [], "imports + process group": [], "steps": [],
                                      "exit": [], "launch": []}
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "train.py"
        script.write_text(SCRIPT.format(steps=steps))
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        for _ in range(repeats):
            t0, t1, out = timed([sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "1",
                                 "--master_addr", "127.0.0.1", "--master_port", str(free_port()), str(script)], env)
            mark = {ln.split()[0]: float(ln.split()[1]) for ln in out.splitlines() if ln.split()[:1] in
                    (["START"], ["READY"], ["END"])}
            if len(mark) < 3:
                sys.exit(f"launch_cost: the torchrun launch did not train (it printed {out[-300:]!r}): "
                         "is torch installed for this python?")
            phases["agent start"].append(mark["START"] - t0)
            phases["imports + process group"].append(mark["READY"] - mark["START"])
            phases["steps"].append(mark["END"] - mark["READY"])
            phases["exit"].append(t1 - mark["END"])
            phases["launch"].append(t1 - t0)
    print(f"torchrun, 1 node x 1 rank, {steps} steps of a small MLP under DDP (gloo):")
    for name, walls in phases.items():
        print(f"  {name:24s} {statistics.median(walls):5.2f} s")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--steps", type=int, default=60)
    a = p.parse_args()
    imports(a.repeats)
    torchrun(a.repeats, a.steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
