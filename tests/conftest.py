"""Fixtures shared by the test modules."""
from __future__ import annotations

# --- SSH cluster: real sshd daemons on loopback (tests/sshd.py) ---------------------------------
from .sshd import fresh_ssh_nodes, ssh_nodes  # noqa: F401  (pytest fixtures)

# The plugin imports its heavy parts (numpy, scipy, rich) only when a session runs a benchmark.
# pytester's in-process runs drop the modules a run imported afterwards, and numpy cannot be
# imported twice in one process: import them here, once, before any pytester run.
import pytest_dlperf.builtin  # noqa: E402,F401
import pytest_dlperf.session  # noqa: E402,F401
