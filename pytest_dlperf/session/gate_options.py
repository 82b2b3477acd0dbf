"""The session gate's options (--update-baselines, the store, tolerances, what an unjudgeable case does)
and a test's own tolerances (``@pytest.mark.dlperf``), read once per session."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from .. import metrics
from ..baselines.rules import DEFAULT_ALPHA, DEFAULT_CV_BOUND
from ..options.argtypes import count_or_env
from ..options.core import CONFIRM_LAUNCHES


def in_ci() -> bool:
    """The same test pytest uses for CI runs: CI or BUILD_NUMBER set."""
    return bool(os.environ.get("CI") or os.environ.get("BUILD_NUMBER"))


@dataclass(frozen=True)
class GateOptions:
    update: bool
    profile: str | None
    directory: Path
    tolerance: dict[str, float | None]
    missing: str
    noisy_fails: bool
    hardware_fails: bool = False
    cv_bound: float = DEFAULT_CV_BOUND
    alpha: float = DEFAULT_ALPHA
    root: Path | None = None  # the repository under test: its git commit is recorded and compared
    sittings: int = 1  # --dlperf-record-sittings: the sittings an entry keeps when recorded (1: replace)
    confirm: int = 0  # --dlperf-confirm: launches a case that looks regressed (or recorded in modes) takes more

    @classmethod
    def from_config(cls, config: pytest.Config) -> GateOptions:
        get = config.getoption
        d = get("dlperf_baseline_dir")
        directory = Path(d).expanduser().resolve() if d else Path(config.rootpath) / "baselines"
        if directory.exists() and not directory.is_dir():
            raise pytest.UsageError(f"--dlperf-baseline-dir: {directory} exists and is not a directory")
        if get("dlperf_record_sittings") and not get("dlperf_update_baselines"):
            raise pytest.UsageError("--dlperf-record-sittings K says how many sittings --update-baselines keeps: "
                                    "give it with --update-baselines, or leave it out to gate")
        return cls(update=get("dlperf_update_baselines"), profile=get("dlperf_baseline_profile"), directory=directory,
                   tolerance={m.name: get(m.option_dest) for m in metrics.tolerated()},
                   missing=get("dlperf_baseline_missing"), noisy_fails=get("dlperf_noisy") == "fail",
                   hardware_fails=(get("dlperf_hardware") or ("fail" if in_ci() else "skip")) == "fail",
                   root=Path(config.rootpath), sittings=get("dlperf_record_sittings") or 1,
                   confirm=confirm_launches(get("dlperf_confirm")))


def confirm_launches(given: int | None) -> int:
    """--dlperf-confirm, else DLPERF_CONFIRM (a CI image's own default), else CONFIRM_LAUNCHES."""
    return count_or_env(given, "DLPERF_CONFIRM", CONFIRM_LAUNCHES, "launches")


def marker_tolerances(item: pytest.Item | None) -> dict[str, float]:
    """``@pytest.mark.dlperf(tolerance=0.03, speedup_tolerance=.., peak_memory_tolerance=..)``: each gated
    metric's tolerance under its declared keyword."""
    if item is None:
        return {}
    marker = item.get_closest_marker("dlperf")
    if marker is None:
        return {}
    names = {m.marker_key: m.name for m in metrics.tolerated()}
    unknown = sorted(set(marker.kwargs) - set(names))
    if unknown or marker.args:
        raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.dlperf takes only "
                                f"{', '.join(names)} (got {', '.join(unknown) or marker.args})")
    out = {}
    for k, metric in names.items():
        if k in marker.kwargs:
            v = marker.kwargs[k]
            if not isinstance(v, (int, float)) or not 0 <= v < 1:
                raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.dlperf({k}={v!r}): expected a fraction in [0, 1)")
            out[metric] = float(v)
    return out
