"""Baselines: the per-profile store, the profile rule and the noise-aware regression gate."""
from __future__ import annotations

from .rules import (DEFAULT_ALPHA, DEFAULT_CV_BOUND, ScalingRuns, Verdict, VerdictStatus, judge, judge_scalar,
                   resolve_tolerances, verdict_from_dict)
from .profile import check_profile_name, default_tolerances, detect_profile
from .report import verdict_table
from .schema import BaselineError, Tolerances
from .store import SCHEMA, BaselineFile, BaselineStore, Entry

__all__ = [
    "DEFAULT_ALPHA", "DEFAULT_CV_BOUND", "SCHEMA", "BaselineError", "BaselineFile", "BaselineStore",
    "Entry", "ScalingRuns", "Tolerances", "Verdict", "VerdictStatus", "check_profile_name", "default_tolerances", "detect_profile",
    "judge", "judge_scalar", "resolve_tolerances", "verdict_from_dict", "verdict_table",
]
