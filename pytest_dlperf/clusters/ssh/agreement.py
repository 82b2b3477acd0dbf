"""Whether SSH nodes agree: what each node has (Python, frameworks, CPUs, GPUs), asked before any
training, and whether they agree (the preflight of the SSH, Slurm and Ray kinds).

PROBE_SRC (``node/workloads/nodefacts.py``) runs on every node (``python3 -c PROBE_SRC torch ...``) and prints
one JSON line (the frameworks are import names; none is imported); ``problems`` compares the nodes, so that a node
with another version fails before any training. The CPU model is reported too: a CPU node's
profile is named after the node's processor, not the harness machine's. The node's own IPv4
addresses (/proc/net/fib_trie) tell a cloud cluster whether an instance's VPC address is real there.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from ..base import ClusterError, Node

# node/workloads/nodefacts.py, run as ``python3 -c PROBE_SRC torch ...``: nothing of ours is on the node yet.
PROBE_SRC = (Path(__file__).resolve().parents[2] / "node" / "workloads" / "nodefacts.py").read_text(encoding="utf-8")


def parse_probe(returncode: int, stdout: str, tail: str, python: str) -> dict:
    """The probe's facts, or ClusterError saying how to fix the interpreter."""
    if returncode != 0:
        raise ClusterError(f"cannot run {python!r} there (exit {returncode}); pass --dlperf-ssh-python with the "
                           f"node's Python 3: {tail}")
    try:
        return json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise ClusterError(f"unexpected preflight output from {python!r}: {tail!r}") from None


def problems(facts: dict[str, dict], frameworks: Sequence[str], require: bool = True) -> list[str]:
    """Nodes missing a framework (when ``require``), and versions that differ between nodes (each named)."""
    found = []
    for name, f in facts.items():
        missing = [d for d in frameworks if not f["frameworks"].get(d)]
        if missing and require:
            found.append(f"{name}: {', '.join(missing)} not installed for {f['executable']}; install it there "
                         "or point --dlperf-ssh-python at an interpreter that has it")
    checks = [("Python", lambda f: f["python"])]
    checks += [(d, lambda f, d=d: f["frameworks"].get(d)) for d in frameworks]
    for what, get in checks:
        seen = {name: get(f) for name, f in facts.items()}
        if len(set(seen.values())) > 1:
            found.append(f"{what} versions differ: " + ", ".join(f"{n} {v}" for n, v in seen.items())
                         + "; install the same version on every node")
    return found


def check_nodes(kind: str, facts: dict[str, dict], failed: list[str], frameworks: Sequence[str], hint: str) -> None:
    """The end of a scheduler kind's preflight (Slurm, Ray): ClusterError naming every node whose probe
    failed (``failed``, a line each, then ``hint``), else naming the versions that differ between the
    nodes (``problems``, frameworks not required)."""
    if failed:
        raise ClusterError(f"{kind} preflight failed on:\n" + "\n".join(failed) + f"\n({hint})")
    found = problems(facts, frameworks, require=False)
    if found:
        raise ClusterError("; ".join(found))


def make_node(name: str, address: str, facts: dict, slots: int | None, python: str,
              extra: dict[str, str]) -> Node:
    """A node with the probe's CPUs and GPUs; slots default to the GPUs, else one worker."""
    gpus = facts["gpus"]
    return Node(name=name, address=address, slots=slots or max(1, len(gpus)), cpus=int(facts["cpus"]),
                gpus=len(gpus), python=python,
                extra={**extra, "hostname": facts["hostname"], "python_version": facts["python"],
                       **{d: str(v) for d, v in facts["frameworks"].items()},
                       "gpu_name": gpus[0] if gpus else "", "cpu_model": facts.get("cpu_model") or "",
                       "local_addresses": ",".join(facts.get("addresses") or [])})
