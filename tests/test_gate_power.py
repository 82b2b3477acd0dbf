"""benchmarks/gate_power.py's analysis, on its log-normal model (no training): the verdict lines can
say met and NOT met, and a session is judged against a baseline of the launches a recording takes."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "gate_power.py"


def model(cv: float, *args: str) -> str:
    r = subprocess.run([sys.executable, str(SCRIPT), "--synthetic-cv", str(cv), "--pool", "200", "--trials", "150",
                        "--repeats", "3", "--sweep", *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


@pytest.mark.slow  # 10 s or more alone on a 2-core VM: not in the quick tier (tests/quick.sh), CI runs it
def test_quiet_model_meets_both_targets_at_the_defaults():
    out = model(0.01)
    assert "MODEL, not a measurement" in out
    assert "judged against a baseline of 8 runs" in out  # the CPU profile's record_repeats
    assert "N=3 resampled: false alarms   0% (0/150) -> met" in out
    assert "N=3 resampled: 10% failing CI 100% (150/150) -> met" in out


@pytest.mark.slow  # 10 s or more alone on a 2-core VM: not in the quick tier (tests/quick.sh), CI runs it
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


@pytest.mark.slow  # 10 s or more alone on a 2-core VM: not in the quick tier (tests/quick.sh), CI runs it
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


def _pools(path: Path, level: float, seed: int, pace: bool = True) -> Path:
    """A pools file of one modelled sitting: log-normal runs (CV 1%) at ``level``, paces alike."""
    import json
    import random

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from gate_power import CONDITIONS, Workload

    rng = random.Random(seed)
    runs = {c: [{"throughput": level * (1 - d) * rng.lognormvariate(0, 0.01),
                 **({"pace": 50 * rng.lognormvariate(0, 0.03)} if pace else {})} for _ in range(24)]
            for c, d in CONDITIONS.items()}
    path.write_text(json.dumps({"workload": Workload().__dict__, "pace_probe": "model" if pace else None,
                                "plant": "model", "runs": runs}))
    return path


@pytest.mark.slow  # 10 s or more alone on a 2-core VM: not in the quick tier (tests/quick.sh), CI runs it
def test_a_baseline_over_sittings_is_judged_as_the_gate_judges_it(tmp_path):
    """--baseline-sittings: sessions of one sitting against runs of several, in sittings; a session at
    the others' mean level passes when unchanged and is caught at 10%; one 6% below them is not told
    from a slow-down (the limit the README reports across hours)."""
    def lines(session: Path, *others: Path) -> list[str]:
        r = subprocess.run([sys.executable, str(SCRIPT), "--analyze-only", "--pools-file", str(session),
                            "--baseline-sittings", *map(str, others)], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "against a baseline of 2 sittings" in r.stdout and ", 8 runs of each" in r.stdout
        return [ln for ln in r.stdout.splitlines() if ln.startswith("  N=3 sittings")]

    low, high = _pools(tmp_path / "low.json", 15.0, 1), _pools(tmp_path / "high.json", 16.0, 2)
    mean, slow = _pools(tmp_path / "mean.json", 15.5, 3), _pools(tmp_path / "slow.json", 14.6, 4)
    assert lines(mean, low, high) == ["  N=3 sittings : false alarms   0% (0/500) -> met",
                                      "  N=3 sittings : 10% failing CI 100% (500/500) -> met"]
    assert lines(slow, low, high)[0].endswith("-> NOT met")
    bare = _pools(tmp_path / "bare.json", 15.5, 5, pace=False)
    r = subprocess.run([sys.executable, str(SCRIPT), "--analyze-only", "--pools-file", str(mean),
                        "--baseline-sittings", str(bare)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "collected without the pace probe" in r.stderr, r.stderr
