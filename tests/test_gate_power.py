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


def schedule_rates(out: str) -> dict[tuple[str, str], float]:
    rates = {}
    for line in out.split("\nschedule:")[1].splitlines()[2:]:
        cond, mode, _, _, _, pct = line.split()
        rates[(cond, mode)] = float(pct.rstrip("%")) / 100
    return rates


def test_spreading_runs_in_time_removes_the_false_alarms_a_drifting_host_causes_and_nothing_else():
    """The schedule rows on the model: with independent runs the two orders fail alike; with a host
    that drifts over blocks, back-to-back sessions and baselines raise several times the false alarms."""
    args = ["--synthetic-cv", "0.04", "--pool", "120", "--trials", "20", "--repeats", "3", "--sweep"]
    r = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    still = schedule_rates(r.stdout)
    assert still[("identical", "back-to-back")] < 0.02 and still[("identical", "spread")] < 0.02, still
    assert abs(still[("slow10", "back-to-back")] - still[("slow10", "spread")]) < 0.05, still
    r = subprocess.run([sys.executable, str(SCRIPT), *args, "--synthetic-drift", "0.05"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "host drifting with sd 5.0%" in r.stdout
    drift = schedule_rates(r.stdout)
    assert drift[("identical", "back-to-back")] > 0.04, drift
    assert drift[("identical", "back-to-back")] > 3 * drift[("identical", "spread")], drift
    assert abs(drift[("slow10", "back-to-back")] - drift[("slow10", "spread")]) < 0.05, drift
