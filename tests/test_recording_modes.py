"""A recording whose launches fall into two modes (issue #48): it takes more launches and says how closely
the case can be gated; one whose launches are one mode spread wide takes none (issue #66). Which launches fall in
which mode is what it checks: each tiny step takes a fixed time (TINY_STEP_SECONDS), so the launches' figures are
the planted ones whatever the host's speed does (a neighbour test's load on this 2-core machine slowed one
unplanted launch 3.3 times in CI, and a quiet host halved three launches of the spread ladder)."""
from __future__ import annotations

import json
import re

import pytest

from tests.test_gate_plugin import CASE, KEY, profile_file, run

FIXED_STEPS = {"TINY_STEP_SECONDS": "0.02"}  # each tiny step 20 ms


@pytest.mark.slow  # eight tiny launches
def test_a_recording_whose_launches_fall_into_two_modes_takes_more_and_says_how_closely_it_gates(tmp_path):
    """Two of five launches in a slow spell: the recording sees two modes, takes three more, keeps all.
    The spell is -90%: at -50% a launch the shared host slowed by 30% on its own (2026-11-28) sat nearer
    the planted two than the rest, and the slow mode held three. The two planted launches may differ by
    up to about 2.2x between themselves (a host that moves): ``baselines.modes`` measures each mode's spread
    against its own level, in logs. Measured against the fast mode's median (until 2026-11-29), two planted
    launches over about 30% apart hid the gap (CI, 2026-11-29)."""
    slow = f"{tmp_path / 'launches'}:2:0.9"
    r = run(tmp_path, tmp_path / "store", "-k", "1n1g", "--update-baselines", "--dlperf-repeats", "5",
            "--dlperf-confirm", "3", env={"TINY_SLOW_FIRST": slow, **FIXED_STEPS})
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{CASE}: its recording's launches fell into 2 launch(es) at " in r.stdout, r.stdout
    assert "3 more launch(es) taken, and all 8 still split" in r.stdout, r.stdout
    assert re.search(r"a drop is called only from about \d+% below its median on", r.stdout), r.stdout
    entry = json.loads(profile_file(tmp_path / "store").read_text())["entries"][KEY]
    assert len(entry["runs"]["throughput"]) == 8


@pytest.mark.slow  # nine tiny launches
def test_a_recording_whose_launches_are_one_mode_spread_wide_takes_no_more_and_points_to_side_by_side(tmp_path):
    """Six launches, each planted a fifth slower than the one before (to a third of the first's speed): one mode
    spread far above the 10% CV bound, with no gap that stands out against the spread on either side of it.
    More launches would spread as wide, so none are taken, and the note says where a smaller slow-down is
    told. (Until issue #66 it took three more, which in the default suite's recording left three of four such
    cases as spread as before.) The ladder is steep because the tiny engine's 3-step window moves by 10-40%
    from launch to launch on a busy host: a first ladder of 0-30% planted drops came out at
    a robust CV of 8.3% in CI (2026-11-30), under the bound."""
    spread = f"{tmp_path / 'launches'}:0,0.2,0.36,0.49,0.59,0.67"
    r = run(tmp_path, tmp_path / "store", "-k", "1n1g", "--update-baselines", "--dlperf-repeats", "6",
            "--dlperf-confirm", "3", env={"TINY_SLOWDOWNS": spread, **FIXED_STEPS})
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{CASE}: its recording's launches are one mode with a robust CV of " in r.stdout, r.stdout
    assert "more launches do not narrow, so none were taken" in r.stdout and "--dlperf-confirm-when weak" in r.stdout
    assert "not one mode yet" not in r.stdout and "more launch(es) taken" not in r.stdout, r.stdout
    assert len((tmp_path / "launches").read_text().splitlines()) == 6
    entry = json.loads(profile_file(tmp_path / "store").read_text())["entries"][KEY]
    assert len(entry["runs"]["throughput"]) == 6
