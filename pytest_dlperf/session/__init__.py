"""The dlperf session, one small module per job: ``hub`` (the session registered as a plugin,
and the ``dlperf`` fixture's BoundRunner), ``orders`` (the measuring orders), ``preflight`` (a
case's preflight and the probes again), ``signals`` (SIGTERM), ``xdist`` (workers' parts) and
``summary`` (the terminal summary and the dry-run's text)."""
from __future__ import annotations

from ..reporting.junit import junit_properties
from .hub import BoundRunner, DLPerfSession
from .orders import CaseOrder, Measured, MeasuringOrder, RoundsOrder, make_order
from .preflight import RECHECKS, CasePreflight
from .signals import sigterm_ignored, sigterm_until_restored
from .summary import ORDER_TEXT, PACE_TEXT

__all__ = ["ORDER_TEXT", "PACE_TEXT", "RECHECKS", "BoundRunner", "CaseOrder", "CasePreflight", "DLPerfSession",
           "Measured", "MeasuringOrder", "RoundsOrder", "junit_properties", "make_order", "sigterm_ignored",
           "sigterm_until_restored"]
