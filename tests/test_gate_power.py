"""benchmarks/gate_power.py's analysis, on its log-normal model (no training): the verdict lines can
say met and NOT met, and a session is judged against a baseline of the launches a recording takes."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "gate_power.py"


def model(cv: float, *args: str) -> str:
    r = subprocess.run([sys.executable, str(SCRIPT), "--synthetic-cv", str(cv), "--pool", "200", "--trials", "150",
                        "--repeats", "3", "--sweep", *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_quiet_model_meets_both_targets_at_the_defaults():
    out = model(0.01)
    assert "MODEL, not a measurement" in out
    assert "judged against a baseline of 8 runs" in out  # the CPU profile's record_repeats
    assert "N=3 resampled: false alarms   0% (0/150) -> met" in out
    assert "N=3 resampled: 10% failing CI 100% (150/150) -> met" in out


def test_noisy_model_meets_neither_and_says_so():
    out = model(0.15, "--baseline-runs", "0")
    assert "judged against a baseline of N runs" in out
    lines = [ln for ln in out.splitlines() if ln.startswith("  N=3 resampled:")]
    assert len(lines) == 2 and all(ln.endswith("-> NOT met") for ln in lines), lines
