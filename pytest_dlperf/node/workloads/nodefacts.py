"""What a node has: its frameworks (without importing them: they take seconds to import), its CPU
model, GPUs, cores and addresses. Runs on the nodes and imports nothing from the harness (standard
library only); the harness imports it too, for this machine's CPU model.

Three ways it is used:

- ``python3 -c "$(cat nodefacts.py)" torch ...``: the SSH and Slurm clusters' preflight, before
  anything is copied to the node, prints one JSON line of facts (``facts``);
- ``python3 nodefacts.py --frameworks paddle``: the framework readiness check prints ``MARK`` and one JSON
  line: import name -> {"dist": distribution, "version": ...} or null (not importable);
- ``python3 nodefacts.py --compiler cpu|gpu``: the readiness check of a compiled case prints
  ``COMPILER_MARK`` and one JSON line: the compiler torch.compile's inductor runs on such a node;
- ``python3 nodefacts.py --software``: the software probe prints ``SOFTWARE_MARK`` and one JSON line
  (``software``, contract ``SOFTWARE_CONTRACT``): the interpreter, every installed distribution and the
  variables that change training, as a node's launches will run with them;
- ``python3 nodefacts.py --interface ADDRESS``: before a multi-node case, prints ``INTERFACE_MARK`` and one
  JSON line: the network interface that holds ADDRESS (the node's address as the others reach it), for
  GLOO_SOCKET_IFNAME, and the socket variables the node's environment already sets;
- ``from nodefacts import cpu_model``: the workloads name a CPU rank's device (copied beside them).
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import shutil
import socket
import subprocess
import sys

MARK = "DLPERF-FRAMEWORKS "
COMPILER_MARK = "DLPERF-COMPILER "
SOFTWARE_MARK = "DLPERF-SOFTWARE "
SOFTWARE_CONTRACT = 1
INTERFACE_MARK = "DLPERF-INTERFACE "
SOCKET_ENV = ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")  # where Gloo and NCCL open their sockets

# The environment variables that change training, by prefix (and the devices a process sees, by suffix):
# what the software probe reports of a node's environment (docs/gate.md, "Software identity").
TRAINING_ENV_PREFIXES = ("NCCL_", "OMP_", "MKL_", "KMP_", "CUDA_", "TORCH_", "PYTORCH_", "TF_", "FLAGS_",
                         "HOROVOD_", "DLPERF_")
TRAINING_ENV_SUFFIXES = ("_VISIBLE_DEVICES",)
# DLPERF_ variables of the harness itself, which no training reads: each launch's tag, the options'
# environment defaults (the launch log's too) and the project's test tier and launch census.
HARNESS_ENV = frozenset({"DLPERF_RUN_TAG", "DLPERF_CONFIRM", "DLPERF_CONFIRM_PAIRS", "DLPERF_TESTS_TIER",
                         "DLPERF_LOCAL_LEASE", "DLPERF_LAUNCH_LOG", "DLPERF_TESTS_CENSUS", "DLPERF_TESTS_PHASE"})
# Terraform's variables share TensorFlow's prefix and carry tokens and passwords: not training's, left out.
NOT_TRAINING_PREFIXES = ("TF_VAR_", "TF_TOKEN_", "TF_CLI_", "TF_WORKSPACE")
# A variable whose name says it holds a secret is kept as a digest of its value (a change is still seen,
# the value never written): SECRET_MARK + the first 16 hex digits of its sha256.
SECRET_WORDS = ("TOKEN", "SECRET", "PASSW", "PASSPHRASE", "KEY", "CRED", "AUTH", "COOKIE", "SESSION")
SECRET_MARK = "secret:sha256:"


def cpu_model() -> str:
    """The processor's model name from /proc/cpuinfo (platform.processor() is empty on Linux)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def frameworks(names: list[str]) -> dict[str, dict | None]:
    """Per import name: the distribution that provides it and its version (the one of the same name
    first: tensorflow before tensorflow-cpu), {"dist": None, "version": the module's own} where no distribution
    provides it, None when not importable."""
    dists = importlib.metadata.packages_distributions()
    out: dict[str, dict | None] = {}
    for name in names:
        if importlib.util.find_spec(name) is None:
            out[name] = None
            continue
        found = None
        # a dotted name (nvidia.dali) shares its top package with others' (nvidia-nvjpeg-cu12): the distribution
        # named for its last part (nvidia-dali-cuda120)
        owners = dists.get(name) or [d for d in dists.get(name.split(".")[0], []) if name.split(".")[-1] in d.lower()]
        for dist in sorted(owners, key=lambda d: d != name):
            try:
                found = {"dist": dist, "version": importlib.metadata.version(dist)}
                break
            except importlib.metadata.PackageNotFoundError:
                continue
        out[name] = found or {"dist": None, "version": _module_version(name)}
    return out


def _module_version(name: str) -> str | None:
    """The version a module says of itself (``__version__``) where no installed distribution provides it (a
    framework built in place, a module of the standard library); None where it says none."""
    try:
        version = getattr(importlib.import_module(name), "__version__", None)
    except Exception:  # noqa: BLE001 - a module that fails to import says no version
        return None
    return str(version) if version is not None else None


def compiler(kind: str) -> dict:
    """The compiler torch.compile's inductor runs on a ``kind`` ("cpu" or "gpu") node, found as inductor
    and Triton find it: on CPUs the C++ compiler of its generated kernels ($CXX, else g++); on GPUs the
    C compiler Triton builds its launcher with ($CC, else gcc, else clang). {"needs", "path" (None: none
    runs), "version": its first line}."""
    names = [os.environ.get("CXX") or "g++"] if kind == "cpu" else (
        [os.environ["CC"]] if os.environ.get("CC") else ["gcc", "clang"])
    for name in names:
        path = shutil.which(name)
        if not path:
            continue
        try:
            out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=20, check=True).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        return {"needs": names[0], "path": path, "version": (out.splitlines() or [""])[0].strip()}
    return {"needs": " or ".join(names), "path": None, "version": None}


def training_env(environ: dict[str, str]) -> dict[str, str]:
    """The variables of ``environ`` that change training (``TRAINING_ENV_PREFIXES``), the harness's own and
    Terraform's left out, a secret's value as its digest."""
    return {k: (SECRET_MARK + hashlib.sha256(v.encode()).hexdigest()[:16] if any(w in k for w in SECRET_WORDS) else v)
            for k, v in sorted(environ.items())
            if (k.startswith(TRAINING_ENV_PREFIXES) or k.endswith(TRAINING_ENV_SUFFIXES)) and k not in HARNESS_ENV
            and not k.startswith(NOT_TRAINING_PREFIXES)}


def distribution_key(name: str) -> str:
    """A distribution's name as PEP 503 compares them: ``Torch_Vision`` and ``torch-vision`` are one."""
    out, dash = [], False
    for ch in name.lower():
        if ch in "-_.":
            dash = True
            continue
        if dash and out:
            out.append("-")
        dash = False
        out.append(ch)
    return "".join(out)


def software() -> dict:
    """What this interpreter runs training with: its path and version, every distribution it can import
    (name -> version; where two paths hold one, the first on sys.path, as an import finds it) and the
    training variables of its environment."""
    dists: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"] if dist.metadata else None
        if name:
            dists.setdefault(distribution_key(name), str(dist.version))
    return {"contract": SOFTWARE_CONTRACT, "executable": sys.executable, "python": platform.python_version(),
            "implementation": platform.python_implementation(), "distributions": dict(sorted(dists.items())),
            "env": training_env(dict(os.environ))}


def local_addresses() -> list[str]:
    """The node's own IPv4 addresses (/proc/net/fib_trie's local host routes)."""
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


def _resolved(address: str) -> set[str]:
    """The IP addresses ``address`` stands for on this node (itself, or a hostname's addresses)."""
    try:
        return {info[4][0] for info in socket.getaddrinfo(address, None)} | {address}
    except OSError:
        return {address}


def _held() -> list[tuple[str, str]]:
    """(interface, address) of every IPv4 and IPv6 address of this node's interfaces: ``ip -o addr`` where
    iproute2 is there (secondary addresses too), else each interface's primary IPv4 address (SIOCGIFADDR)."""
    ip = shutil.which("ip")
    if ip:
        try:
            out = subprocess.run([ip, "-o", "addr", "show"], capture_output=True, text=True, timeout=10).stdout
            pairs = [(f[1], f[3].split("/")[0]) for f in (line.split() for line in out.splitlines())
                     if len(f) > 3 and f[2] in ("inet", "inet6")]
            if pairs:
                return pairs
        except (OSError, subprocess.SubprocessError):
            pass
    import fcntl
    import struct

    pairs = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            try:
                got = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name[:15].encode()))  # SIOCGIFADDR
            except OSError:  # no IPv4 address
                continue
            pairs.append((name, socket.inet_ntoa(got[20:24])))
    return pairs


def interface_of(address: str) -> str | None:
    """The network interface that holds ``address`` (an IP address or a name resolving to one), loopback's
    for any 127.0.0.0/8 address; None where none holds it."""
    wanted = _resolved(address)
    held = _held()
    for name, addr in held:
        if addr in wanted:
            return name
    if any(w.startswith("127.") for w in wanted):
        return next((name for name, addr in held if addr.startswith("127.")), None)
    return None


def interface(address: str) -> dict:
    """What a multi-node case needs of the node's sockets: the interface holding ``address``, what the
    node's hostname resolves to (Gloo's default address), and the socket variables already set."""
    try:
        resolved = socket.gethostbyname(socket.gethostname())
    except OSError:
        resolved = None
    return {"address": address, "interface": interface_of(address), "hostname": socket.gethostname(),
            "resolves_to": resolved, "set": {k: os.environ[k] for k in SOCKET_ENV if os.environ.get(k)}}


def gpu_names() -> list[str]:
    """GPU names from nvidia-smi, or [] when there is none (or it fails): the preflight's and the
    local cluster's."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    try:
        out = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20, check=False).stdout
    except (OSError, ValueError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.splitlines() if line.strip()]


def facts(names: list[str]) -> dict:
    """The preflight's facts: Python, the frameworks' versions (None: not installed), CPUs, GPUs."""
    versions = {name: (f or {}).get("version") for name, f in frameworks(names).items()}
    return {"python": platform.python_version(), "executable": sys.executable, "frameworks": versions,
            "hostname": socket.gethostname(), "cpus": len(os.sched_getaffinity(0)), "gpus": gpu_names(),
            "cpu_model": cpu_model(), "addresses": local_addresses()}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--frameworks"]:
        print(MARK + json.dumps(frameworks(sys.argv[2:])), flush=True)
    elif sys.argv[1:2] == ["--software"]:
        print(SOFTWARE_MARK + json.dumps(software()), flush=True)
    elif sys.argv[1:2] == ["--interface"]:
        print(INTERFACE_MARK + json.dumps(interface(sys.argv[2])), flush=True)
    elif sys.argv[1:2] == ["--compiler"]:
        print(COMPILER_MARK + json.dumps(compiler(sys.argv[2])), flush=True)
    else:
        print(json.dumps(facts(sys.argv[1:])), flush=True)
