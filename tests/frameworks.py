"""The other engines' frameworks for the tests that train with them: installed by tests/setup.sh
(the project's own extras, pyproject.toml; Horovod built by node/install_horovod.py)."""
from __future__ import annotations

from .installed import require_module


def ensure(module: str, extra: str) -> None:
    """``import module`` works (the [extra] extra), or the test fails saying to run tests/setup.sh."""
    require_module(module, f"the [{extra}] extra")


def ensure_horovod() -> None:
    """Horovod built for this Python's torch and TensorFlow, with Gloo and MPI."""
    require_module("horovod", "Horovod, built by python -m pytest_dlperf.node.install_horovod --mpi")
