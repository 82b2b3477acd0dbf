"""Measuring: a case's launches in the session's order (``orders``: rounds or back to back; the A/B
pairs order is ab/order.py), each launch through ``launch``, rounds through ``take_rounds``, every
order given a ``Bench`` (what it uses of the session) instead of the session."""
from __future__ import annotations

from .bench import Bench
from .checkpoints import Checkpoints
from .launch import launch
from .measured import Measured, cases_after, cases_from, matrix_case, own_case, skipped
from .orders import CaseOrder, MeasuringOrder, RoundsOrder, make_order, ready_first
from .rounds import Unit, take_rounds

__all__ = ["Bench", "CaseOrder", "Checkpoints", "Measured", "MeasuringOrder", "RoundsOrder", "Unit", "cases_after", "cases_from",
           "launch", "make_order", "matrix_case", "own_case", "ready_first", "skipped", "take_rounds"]
