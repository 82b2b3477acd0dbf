#!/usr/bin/env python3
"""Build Horovod from source against this Python's torch and TensorFlow, cache the wheel, install it.

Horovod publishes no wheels: pip builds it from the sdist, and 0.28.1 (the last release) does not
build against torch 2.x or TensorFlow 2.21 unpatched. This script applies the patches (README,
"Horovod"), builds once (about 5 minutes on 2 cores) and keeps the wheel in a cache keyed by the
Horovod, Python, torch and TensorFlow versions, so a second install takes seconds.

    python -m pytest_dlperf.node.install_horovod            # Gloo; torch and/or TF, whichever is installed
    python -m pytest_dlperf.node.install_horovod --mpi      # also MPI (installs Debian's openmpi as root)

Standard library only, imports nothing from the harness: copy it to a node and run it there.
"""
from __future__ import annotations

import argparse
import contextlib
import fcntl
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
from pathlib import Path

VERSION = "0.28.1"
# Run-time requirements Horovod's wheel declares (numpy it needs but does not declare).
RUNTIME = ["cloudpickle", "psutil", "pyyaml", "packaging", "cffi", "numpy"]
# Build requirements: setup.py imports these before it starts (built without isolation, so that it
# compiles against the torch and TensorFlow installed here, not fresh copies).
BUILD = ["wheel", "setuptools", *RUNTIME]
# Patches for 0.28.1 with torch 2.x and TensorFlow 2.21 (file, old text, new text).
PATCHES = [
    # torch 2.x headers need C++17
    ("CMakeLists.txt", "set(CMAKE_CXX_STANDARD 14)", "set(CMAKE_CXX_STANDARD 17)"),
    ("horovod/torch/CMakeLists.txt", "set(CMAKE_CXX_STANDARD 14)", "set(CMAKE_CXX_STANDARD 17)"),
    # gloo must be built with the same standard, or linking fails on gloo::rendezvous::Store::kDefaultTimeout
    ("third_party/gloo/CMakeLists.txt", "-std=c++11 -fPIC", "-std=c++17 -fPIC"),
    # TF 2.21 moved the XLA headers (they need highwayhash, which the wheel lacks); that code is GPU-only
    ("horovod/tensorflow/xla_mpi_ops.cc", "#if TENSORFLOW_VERSION >= 2006000000\n",
     "#if TENSORFLOW_VERSION >= 2006000000 && HAVE_GPU\n"),
]
# Extension libraries of a build, per framework (found without importing the framework).
EXTENSIONS = {"torch": "torch/mpi_lib_v2", "tensorflow": "tensorflow/mpi_lib"}


def log(msg: str) -> None:
    print(f"install_horovod: {msg}", flush=True)


def version_of(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def frameworks() -> dict[str, str]:
    """Frameworks installed here that Horovod can be built for: import name -> version."""
    found = {}
    if importlib.util.find_spec("torch") is not None:
        found["torch"] = version_of("torch") or "unknown"
    if importlib.util.find_spec("tensorflow") is not None:
        found["tensorflow"] = next((v for d in ("tensorflow-cpu", "tensorflow", "tensorflow-gpu")
                                    if (v := version_of(d))), "unknown")
    return found


def built_for() -> set[str]:
    """Frameworks the installed Horovod has extensions for (empty: none installed)."""
    spec = importlib.util.find_spec("horovod")
    if spec is None or not spec.submodule_search_locations:
        return set()
    root = Path(next(iter(spec.submodule_search_locations)))
    return {fw for fw, stem in EXTENSIONS.items() if list(root.glob(stem + "*.so"))}


def has_mpi_controller() -> bool:
    """An MPI build's extension libraries link libmpi (found without importing torch or TensorFlow,
    which ``horovodrun --check-build`` does, for 20 s here)."""
    spec = importlib.util.find_spec("horovod")
    if spec is None or not spec.submodule_search_locations:
        return False
    root = Path(next(iter(spec.submodule_search_locations)))
    libs = [p for stem in EXTENSIONS.values() for p in root.glob(stem + "*.so")]
    return bool(libs) and all(b"libmpi.so" in p.read_bytes() for p in libs)


def cache_dir(fws: dict[str, str], mpi: bool) -> Path:
    base = Path(os.environ.get("DLPERF_CACHE") or Path.home() / ".cache" / "pytest-dlperf") / "wheels"
    key = "-".join([f"horovod{VERSION}", f"py{sys.version_info.major}{sys.version_info.minor}",
                    sysconfig.get_platform(), *(f"{k}{v}" for k, v in sorted(fws.items())),
                    "gloo-mpi" if mpi else "gloo"])
    return base / re.sub(r"[^A-Za-z0-9._+-]", "_", key)


@contextlib.contextmanager
def locked(path: Path):
    """One build per cache key at a time (pytest-xdist workers may all ask)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def pip(*args: str) -> None:
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"install_horovod: `{' '.join(cmd)}` failed:\n{(r.stdout + r.stderr)[-4000:]}")


def ensure_mpi() -> None:
    """mpicxx for HOROVOD_WITH_MPI: Debian's openmpi, installed when missing and we are root."""
    if shutil.which("mpicxx"):
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise SystemExit("install_horovod: --mpi needs mpicxx: install OpenMPI (Debian: "
                         "apt-get install openmpi-bin libopenmpi-dev) and run this again")
    log("installing openmpi-bin libopenmpi-dev (apt)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "openmpi-bin", "libopenmpi-dev"]):
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if r.returncode != 0:
            raise SystemExit(f"install_horovod: {' '.join(cmd)} failed:\n{(r.stdout + r.stderr)[-2000:]}")


def build(fws: dict[str, str], mpi: bool, out: Path) -> Path:
    """Download the sdist, patch it, build a wheel into out; return the wheel's path."""
    if not (shutil.which("c++") or shutil.which("g++")):
        raise SystemExit("install_horovod: building Horovod needs a C++ compiler "
                         "(Debian: apt-get install g++)")
    pip("install", "-q", *BUILD, *([] if shutil.which("cmake") else ["cmake"]))
    if mpi:
        ensure_mpi()
    with tempfile.TemporaryDirectory(prefix="dlperf-horovod-") as tmp:
        pip("download", "-q", "--no-deps", "--no-binary", ":all:", f"horovod=={VERSION}", "-d", tmp)
        sdist = next(Path(tmp).glob("horovod-*.tar.gz"))
        with tarfile.open(sdist) as tar:
            tar.extractall(tmp, filter="data")
        src = Path(tmp) / f"horovod-{VERSION}"
        for rel, old, new in PATCHES:
            path = src / rel
            text = path.read_text()
            if old not in text:
                raise SystemExit(f"install_horovod: patch target not found in {rel} (expected {old!r}); "
                                 f"this script knows Horovod {VERSION} only")
            path.write_text(text.replace(old, new))
        env = {**os.environ, "HOROVOD_WITH_GLOO": "1", "HOROVOD_WITHOUT_MXNET": "1",
               "HOROVOD_WITH_MPI" if mpi else "HOROVOD_WITHOUT_MPI": "1",
               "CMAKE_POLICY_VERSION_MINIMUM": "3.5",  # cmake 4 refuses gloo's old minimum
               "MAKEFLAGS": f"-j{os.cpu_count() or 1}"}
        env["HOROVOD_WITH_PYTORCH" if "torch" in fws else "HOROVOD_WITHOUT_PYTORCH"] = "1"
        env["HOROVOD_WITH_TENSORFLOW" if "tensorflow" in fws else "HOROVOD_WITHOUT_TENSORFLOW"] = "1"
        log(f"building Horovod {VERSION} for {', '.join(f'{k} {v}' for k, v in fws.items())}"
            f"{' with MPI' if mpi else ''} (about 5 minutes on 2 cores)")
        t0 = time.monotonic()
        wheels = Path(tmp) / "wheels"
        r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
                            "-w", str(wheels), str(src)], capture_output=True, text=True, env=env)
        if r.returncode != 0:
            raise SystemExit(f"install_horovod: the build failed:\n{(r.stdout + r.stderr)[-6000:]}")
        wheel = next(wheels.glob("horovod-*.whl"))
        out.mkdir(parents=True, exist_ok=True)
        part = out / (wheel.name + ".part")
        shutil.copyfile(wheel, part)
        os.replace(part, out / wheel.name)  # a cache entry is whole or absent
        log(f"built in {time.monotonic() - t0:.0f} s: {out / wheel.name}")
        return out / wheel.name


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mpi", action="store_true", help="build with MPI too (HOROVOD_WITH_MPI)")
    p.add_argument("--rebuild", action="store_true", help="ignore the cached wheel")
    args = p.parse_args(argv)
    fws = frameworks()
    if not fws:
        raise SystemExit("install_horovod: neither torch nor tensorflow is installed in "
                         f"{sys.executable}: install the frameworks first, then Horovod")
    have = version_of("horovod")
    if (have == VERSION and built_for() >= set(fws) and not args.rebuild
            and (not args.mpi or (shutil.which("mpirun") and has_mpi_controller()))):
        log(f"Horovod {have} is installed for {', '.join(sorted(fws))}: nothing to do")
        return 0
    out = cache_dir(fws, args.mpi)
    with locked(out.with_name(out.name + ".lock")):
        wheel = None if args.rebuild else next(out.glob("horovod-*.whl"), None)
        if wheel is None:
            wheel = build(fws, args.mpi, out)
        else:
            log(f"using the cached wheel {wheel}")
        pip("install", "-q", *RUNTIME)
        pip("install", "-q", "--no-deps", "--force-reinstall", str(wheel))
    missing = set(fws) - built_for()
    if args.mpi and not has_mpi_controller():
        missing.add("MPI")
    if missing:
        raise SystemExit(f"install_horovod: the installed Horovod lacks the {', '.join(sorted(missing))} "
                         f"extension; run again with --rebuild")
    log(f"installed Horovod {VERSION} for {', '.join(sorted(fws))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
