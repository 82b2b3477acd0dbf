"""Preflight of SSH nodes: what each node has (Python, frameworks, CPUs, GPUs) and whether they agree.

PROBE_SRC runs on every node (``python3 -c PROBE_SRC torch ...``) and prints one JSON line (the
frameworks are import names; none is imported); ``problems`` compares the nodes, so that a node
with another version fails before any training. The CPU model is reported too: a CPU node's
profile is named after the node's processor, not the harness machine's. The node's own IPv4
addresses (/proc/net/fib_trie) tell a cloud cluster whether an instance's VPC address is real there.
"""
from __future__ import annotations

import json
from collections.abc import Sequence

from ..base import ClusterError, Node

PROBE_SRC = r"""
import json, os, platform, shutil, socket, subprocess, sys
from importlib import metadata
def version(name):
    try:
        return metadata.version(name)
    except Exception:
        pass
    for dist in metadata.packages_distributions().get(name, []):  # tensorflow from tensorflow-cpu
        try:
            return metadata.version(dist)
        except Exception:
            pass
    return None
def cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()
def local_addresses():
    found, last = set(), None
    try:
        with open("/proc/net/fib_trie", encoding="ascii", errors="replace") as fh:
            for line in fh:
                text = line.strip()
                if text.startswith("|--"):
                    last = text[3:].strip()
                elif "/32 host LOCAL" in text and last:
                    found.add(last)
    except OSError:
        pass
    return sorted(found)
gpus = []
smi = shutil.which("nvidia-smi")
if smi:
    try:
        out = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20).stdout
        gpus = [line.strip() for line in out.splitlines() if line.strip()]
    except Exception:
        gpus = []
print(json.dumps({"python": platform.python_version(), "executable": sys.executable,
                  "frameworks": {d: version(d) for d in sys.argv[1:]}, "hostname": socket.gethostname(),
                  "cpus": len(os.sched_getaffinity(0)), "gpus": gpus, "cpu_model": cpu_model(),
                  "addresses": local_addresses()}))
"""


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
