"""Fixtures shared by the test modules."""
from __future__ import annotations

# --- SSH cluster: real sshd daemons on loopback (tests/sshd.py) ---------------------------------
from .sshd import fresh_ssh_nodes, ssh_nodes  # noqa: F401  (pytest fixtures)
