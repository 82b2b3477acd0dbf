"""``dlperf init``: a benchmark suite and its two CI recipes written into a user's own repository.

``plan`` resolves what to write from the request (never touching the disk beyond reading it),
``write`` writes it, all or nothing; ``command`` is the command line around them."""
from __future__ import annotations

from .plan import InitError, InitRequest, Plan, plan
from .write import write

__all__ = ["InitError", "InitRequest", "Plan", "plan", "write"]
