"""Install a backend's framework for the tests that train with it, from the project's own extras
(pyproject.toml), when the environment lacks it: the README's test command needs no other step."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import tomllib
from pathlib import Path

from filelock import FileLock

ROOT = Path(__file__).resolve().parent.parent


def ensure(module: str, extra: str) -> None:
    """``import module`` works after this, or the test fails saying what pip said."""
    if importlib.util.find_spec(module) is not None:
        return
    with FileLock(str(Path("/tmp") / f"dlperf-tests-pip-{extra}.lock")):  # xdist workers: one pip at a time
        importlib.invalidate_caches()
        if importlib.util.find_spec(module) is not None:
            return
        reqs = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"][extra]
        r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", *reqs], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"pip install {' '.join(reqs)} (the [{extra}] extra) failed:\n{r.stdout}{r.stderr}")
        importlib.invalidate_caches()


def ensure_horovod() -> None:
    """Horovod built for this Python's torch and TensorFlow, with Gloo and MPI (Debian's OpenMPI,
    installed by the script as root), by the project's own script: a cached wheel installs in
    seconds; the first build takes about 5 minutes on 2 cores."""
    with FileLock(str(Path("/tmp") / "dlperf-tests-pip-horovod.lock")):
        r = subprocess.run([sys.executable, "-m", "pytest_dlperf.node.install_horovod", "--mpi"], capture_output=True,
                           text=True, timeout=1800)
        if r.returncode != 0:
            raise RuntimeError(f"python -m pytest_dlperf.node.install_horovod failed:\n{r.stdout}{r.stderr}")
        importlib.invalidate_caches()
