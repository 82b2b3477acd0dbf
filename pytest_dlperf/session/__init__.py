"""The dlperf session, one small module per job: ``hub`` (the session registered as a plugin, and
the ``dlperf`` fixture's BoundRunner), ``engines`` (the launchers), ``cluster`` (built on first use),
``mode`` (stored baselines or A/B), ``gate`` with its ``gate_options``, ``contexts`` and ``recording``
(the baseline gate in the session), ``readiness`` (a case's readiness check and the probes again before a recording writes), ``signals``
(SIGTERM), ``xdist`` (workers' parts) and ``summary`` (the terminal summary and the dry-run's text).
The measuring orders are ``pytest_dlperf.measure``'s."""
from __future__ import annotations

from .hub import BoundRunner, DLPerfSession
from .readiness import RECHECKS, CaseReadiness
from .summary import ORDER_TEXT, PACE_TEXT

__all__ = ["ORDER_TEXT", "PACE_TEXT", "RECHECKS", "BoundRunner", "CaseReadiness", "DLPerfSession"]
