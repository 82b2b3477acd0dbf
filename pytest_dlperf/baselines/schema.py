"""The baseline files' building blocks: the metrics, tolerances, and field-by-field validation that
names the file and the field at fault. Shared by store.py (files) and profile.py (default tolerances)."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Mapping
from typing import Any

METRICS = ("throughput", "speedup", "efficiency")
_FIX = "the file was not modified; fix it by hand, or move it away and record again with --update-baselines"


class BaselineError(Exception):
    """A baseline file that cannot be used: the message names the file, the problem and the fix."""

    def __init__(self, path: Path | str, problem: str, fix: str = _FIX) -> None:
        self.path, self.problem, self.fix = Path(path), problem, fix
        super().__init__(f"baseline file {path}: {problem} ({fix})")


def is_number(v: Any) -> bool:
    """A finite int or float (not a bool): what a figure in a baseline or results file must be."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def positive_number(v: Any) -> bool:
    """A finite number above zero (not a bool)."""
    return is_number(v) and v > 0


class _Reader:
    """Typed field access with errors that say where in the file the bad value sits."""

    def __init__(self, path: Path, data: Mapping[str, Any], where: str) -> None:
        self.path, self.data, self.where = path, data, where

    def fail(self, name: str, problem: str) -> BaselineError:
        return BaselineError(self.path, f"{self.where}{name!r} {problem}")

    def get(self, name: str, kind: str, required: bool = True) -> Any:
        if name not in self.data:
            if required:
                raise self.fail(name, "is missing")
            return None
        v = self.data[name]
        if v is None and not required:
            return None
        checks = {
            "str": isinstance(v, str) and v != "",
            "text": isinstance(v, str),
            "int": isinstance(v, int) and not isinstance(v, bool) and v > 0,
            "number": positive_number(v),
            "number0": is_number(v) and v >= 0,
            "dict": isinstance(v, dict),
            "list": isinstance(v, list),
        }
        if not checks[kind]:
            want = {"str": "a non-empty string", "text": "a string", "int": "a whole number >= 1",
                    "number": "a number > 0", "number0": "a number >= 0", "dict": "an object",
                    "list": "a list"}[kind]
            raise self.fail(name, f"must be {want}, not {json.dumps(v)[:60]}")
        return v


@dataclass(frozen=True)
class Tolerances:
    """Allowed relative drop per metric before the gate calls it a regression (0.05 = 5%)."""

    throughput: float = 0.05
    speedup: float = 0.05
    efficiency: float = 0.05

    def __post_init__(self) -> None:
        for name in METRICS:
            v = getattr(self, name)
            if not (is_number(v) and 0 <= v < 1):
                raise ValueError(f"tolerance {name}={v!r}: expected a fraction in [0, 1)")

    def get(self, metric: str) -> float:
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}; expected one of {', '.join(METRICS)}")
        return float(getattr(self, metric))

    def override(self, **values: float | None) -> Tolerances:
        """A copy with the given metrics replaced (None keeps the current value)."""
        return Tolerances(**{m: values[m] if values.get(m) is not None else getattr(self, m) for m in METRICS})

    def to_dict(self) -> dict[str, float]:
        return {m: getattr(self, m) for m in METRICS}

    @classmethod
    def read(cls, r: _Reader, name: str, required: bool) -> Tolerances | None:
        d = r.get(name, "dict", required)
        if d is None:
            return None
        sub = _Reader(r.path, d, f"{r.where}{name}.")
        bad = sorted(set(d) - set(METRICS))
        if bad:
            raise sub.fail(bad[0], f"is not a metric; expected {', '.join(METRICS)}")
        values = {m: sub.get(m, "number0") for m in METRICS}
        try:
            return cls(**values)
        except ValueError as exc:
            raise BaselineError(r.path, f"{r.where}{name}: {exc}") from None


