"""The baseline files' building blocks: tolerances per gated metric (the metrics are declared in
``metrics``), and field-by-field validation that names the file and the field at fault. Shared by
store.py (files) and profile.py (default tolerances)."""
from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import metrics
from ..metrics import DeviceKind

SCHEMA_1_METRICS = ("throughput", "speedup", "efficiency")  # the gated metrics of schema 1: every file names them

# Schema 1 and 2 kept throughput's runs, its median and mean, and the two scaling figures in fields of their own,
# and schema 2 the other gated per-launch metrics' runs under "figures". Schema 3 keeps every gated metric alike:
# its runs under "runs" or its one figure under "stated". The old fields are read here and nowhere else.
_OLD_RUNS = "throughputs"  # schema 1 and 2: throughput's runs
_OLD_FIGURES = {"median": "throughput", "speedup": "speedup", "efficiency": "efficiency"}  # field -> metric
_OLD_OTHER_RUNS = "figures"  # schema 2: the other gated per-launch metrics' runs

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

    def positives(self, name: str, required: bool = True) -> list[float]:
        """A list of numbers > 0 (absent and not required: []), a bad item named by its index."""
        values = self.get(name, "list", required=required) or []
        for i, x in enumerate(values):
            if not positive_number(x):
                raise self.fail(name, f"item {i} must be a number > 0, not {json.dumps(x)}")
        return [float(x) for x in values]


class Tolerances:
    """Allowed relative change per gated metric before the gate calls it worse (0.05 = 5%): a drop of
    a higher-is-better metric, a rise of a lower-is-better one (``metrics.Direction``). It may hold
    some metrics only (a layer: an entry's, the command line's, a test marker's); the gate judges with
    one that the profile's defaults complete (``resolve_tolerances``)."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, float | None] | None = None, /, **given: float | None) -> None:
        merged = {k: v for k, v in {**(values or {}), **given}.items() if v is not None}
        for name, v in merged.items():
            metric = metrics.get(name)  # ValueError naming the known metrics
            if not metric.tolerated:
                why = "a count, judged without a tolerance" if metric.gated else "reported, not gated"
                raise ValueError(f"tolerance {name}: {metric.title} is {why}; metrics with a tolerance: "
                                 f"{', '.join(metrics.names(metrics.tolerated()))}")
            if not (is_number(v) and 0 <= v < 1):
                raise ValueError(f"tolerance {name}={v!r}: expected a fraction in [0, 1)")
        self._values = {m.name: float(merged[m.name]) for m in metrics.tolerated() if m.name in merged}

    @classmethod
    def defaults(cls, kind: DeviceKind) -> Tolerances:
        """Every gated metric's declared default for the device kind."""
        return cls({m.name: m.default_tolerance(kind) for m in metrics.tolerated()})

    def get(self, metric: str) -> float:
        if metric not in self._values:
            metrics.get(metric)  # an unknown name says so
            raise ValueError(f"no tolerance for {metric} (known: {', '.join(self._values) or 'none'})")
        return self._values[metric]

    def __contains__(self, metric: object) -> bool:
        return metric in self._values

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tolerances) and self._values == other._values

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._values.items())))

    def __repr__(self) -> str:
        return f"Tolerances({', '.join(f'{k}={v:g}' for k, v in self._values.items())})"

    def override(self, values: Mapping[str, float | None] | None = None, /, **given: float | None) -> Tolerances:
        """A copy with the given metrics replaced (None keeps the current value)."""
        return Tolerances({**self._values, **{k: v for k, v in {**(values or {}), **given}.items() if v is not None}})

    def to_dict(self) -> dict[str, float]:
        return dict(self._values)

    @classmethod
    def read(cls, r: _Reader, name: str, required: bool, defaults: Tolerances | None = None) -> Tolerances | None:
        """The file's tolerances under ``name``; metrics it does not name take ``defaults`` (the profile's
        declared defaults: a metric declared after the file was written has none in it)."""
        d = r.get(name, "dict", required)
        if d is None:
            return None
        sub = _Reader(r.path, d, f"{r.where}{name}.")
        known = metrics.names(metrics.tolerated())
        bad = sorted(set(d) - set(known))
        if bad:
            raise sub.fail(bad[0], f"is not a metric with a tolerance; expected {', '.join(known)}")
        # the metrics of schema 1 are named in every file; a metric declared later takes the profile's
        # default where a file written before it does not name it
        values = {m.name: sub.get(m.name, "number0", required=m.name in SCHEMA_1_METRICS) for m in metrics.tolerated()
                  if m.name in d or m.name in SCHEMA_1_METRICS}
        try:
            got = cls(values)
        except ValueError as exc:
            raise BaselineError(r.path, f"{r.where}{name}: {exc}") from None
        return defaults.override(got.to_dict()) if defaults is not None else got


def entry_as_schema_3(path: Path, key: str, d: Any) -> Any:
    """An entry of a schema 1 or 2 file as schema 3 keeps it, its old fields checked under their own names
    first. A median or mean is kept only where it is not its runs' own (a published table's, beside runs
    printed rounded): the median as throughput's stated figure, the mean as a field of the entry's own."""
    if not isinstance(d, dict):
        return d  # Entry.from_dict names it
    r = _Reader(path, d, f"entries[{key!r}].")
    runs = r.positives(_OLD_RUNS)
    stated = {metric: r.get(name, "number", required=name == "median") for name, metric in _OLD_FIGURES.items()}
    if runs and stated["throughput"] == statistics.median(runs):
        del stated["throughput"]
    mean = r.get("mean", "number", required=False)
    out = {k: v for k, v in d.items() if k not in (_OLD_RUNS, _OLD_OTHER_RUNS, "mean", *_OLD_FIGURES)}
    others = r.get(_OLD_OTHER_RUNS, "dict", required=False) or {}
    if "throughput" in others:
        raise _Reader(path, others, f"entries[{key!r}].{_OLD_OTHER_RUNS}.").fail(
            "throughput", f"is kept in {_OLD_RUNS!r} in a schema 1 or 2 file")
    out["runs"] = {**({"throughput": runs} if runs else {}), **others}
    out["stated"] = {k: v for k, v in stated.items() if v is not None}
    if mean is not None and not (runs and mean == statistics.fmean(runs)):
        out["mean"] = mean
    return out
