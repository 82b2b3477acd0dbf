"""The baseline gate through pytest: record, judge real runs, fail on regressions, keep files safe."""
from __future__ import annotations

import json
import platform
import re
import shutil
import statistics
import subprocess
import sys
import types
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_dlperf.clusters.base import Node
from pytest_dlperf.results.cases import result_from_dict
from pytest_dlperf.session.gate import Gate
from pytest_dlperf.session.gate_options import GateOptions

from tests import cgroup
from tests.suite import QUICK_PROBES, SMALL_CASE, TINY_ENGINE, python_holding_more, run_suite

# The tiny engine (tests/tiny): the gate's mechanisms on real launches that start in milliseconds.
TINY = [*TINY_ENGINE, *SMALL_CASE, *QUICK_PROBES, "--dlperf-iters", "3", "--dlperf-repeats", "3", "--dlperf-timeout", "240"]
CASE = "resnet50-fp32-bs2-32px-1n1g"
# Its verdicts rest on planted factors (x4, x0.25, identity facts) that no move of the host hides or fakes
# (HOST_MOVES): they need not run alone. Its sessions take seconds each, a minute or more in all.
pytestmark = pytest.mark.slow
KEY = f"tiny/{CASE}"


# For tests whose verdict does not rest on the runs' statistics (HARDWARE from the probes, a skip or
# a failure for want of a usable baseline file): one launch instead of TINY's three, the same check.
ONE = ("--dlperf-repeats", "1")


def run(tmp: Path, store: Path, *args: str, suite: Path | None = None, env: dict | None = None,
        prefix: list[str] = (), python: str | None = None) -> subprocess.CompletedProcess:
    return run_suite(f"--dlperf-report={tmp / 'report'}", f"--dlperf-baseline-dir={store}", *TINY, *args,
                     suite=suite, env=env, prefix=prefix, python=python)


def record(tmp: Path) -> Path:
    """A store (tmp/store) with a real recording of the 1n1g case (five repeats: on 2026-11-24 a recording
    of three had one run in a slow spell, [10.2, 14.8, 13.3] samples/s, and a planted 30% drop against
    it was rightly not significant: three runs give a rank test little to stand on)."""
    store = tmp / "store"
    r = run(tmp, store, "-k", "1n1g", "--update-baselines", "--dlperf-repeats", "5")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "baselines updated: 1 case(s) written" in r.stdout
    return store


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """The module's recording (``record``), shared by the tests that judge against it."""
    return record(tmp_path_factory.mktemp("recorded"))


def profile_file(store: Path) -> Path:
    (path,) = [p for p in store.glob("*.json")]
    return path


def scaled_store(recorded: Path, tmp: Path, factor: float) -> Path:
    """A copy of the recording whose baseline throughputs are scaled by factor. Scaled figures are no
    recording of any software: the entry's software identity is dropped, so a screen failure against it is
    a REGRESSION "not confirmed", as against a baseline recorded before software was recorded (a recording
    kept whole, met on unchanged software, is HOST: tests/test_confirm.py).

    The host's speed moves between the module's recording and a later session (a fresh 2-core shared VM
    ran the same sessions at half the speed, or twice it, minutes apart: ../shared/tools/drifting-host emulates it),
    so a test whose verdict rests on a planted factor plants one that a host moving by half either way
    cannot hide or fake: x4 for a drop that must fail, x0.25 for a rise that must pass (HOST_MOVES)."""
    store = tmp / "store"
    shutil.copytree(recorded, store)
    path = profile_file(store)
    doc = json.loads(path.read_text())
    e = doc["entries"][KEY]
    e["runs"]["throughput"] = [t * factor for t in e["runs"]["throughput"]]
    e.pop("software", None)
    doc.pop("software", None)
    path.write_text(json.dumps(doc, indent=1))
    return store


# How far the host's speed may move between the module's recording and a test's session, either way: a
# planted factor a verdict rests on is HOST_MOVES ** 2 (x4, x0.25), so that at the worst move it is still x2.
HOST_MOVES = 2.0


def test_recording_keeps_raw_repeats_tolerance_and_versions(recorded):
    path = profile_file(recorded)
    assert path.name.startswith("cpu-") and "tiny" not in path.name  # the tiny engine has no framework to name
    doc = json.loads(path.read_text())
    assert doc["schema"] == 3 and doc["profile"] == path.stem
    e = doc["entries"][KEY]
    # every gated per-launch metric's runs, one per launch, alike: throughput, peak memory (bytes), time to first
    # step and the checkpoint's save and load (s); a 1n1g's scaling figures stated beside them, its median derived
    # from its runs
    assert set(e["runs"]) == {"throughput", "peak_memory", "time_to_first_step", "checkpoint_save", "checkpoint_load"}
    assert all(len(v) == 5 and all(x > 0 for x in v) for v in e["runs"].values())
    assert e["stated"] == {"speedup": 1.0, "efficiency": 1.0} and "median" not in e and "throughputs" not in e
    assert e["versions"]["python"] == platform.python_version() and e["recorded_at"] and e["source"] == "recorded"
    assert e["tolerance"]["throughput"] > 0
    # recorded with the pace probe by default (CPU nodes): one pace per run, taken under contract 2
    assert len(e["paces"]) == 5 and all(p > 0 for p in e["paces"]) and e["pace_contract"] == 2


def test_a_baseline_recorded_without_the_pace_probe_is_met_without_it_by_default(recorded, tmp_path):
    """The probe costs a launch about 3%: a session judged against an unprobed recording must not
    probe (its throughputs would be judged as measured, 3% down); --dlperf-pace-probe still does.

    The throughput's tolerance is 0.9 here: what is checked is the verdict's own sentence on the pace, which a
    failure's attribution replaces (HOST, where nothing recorded differs), and a host at half the speed it had
    at the module's recording failed the default 5% (on a fresh 2-core shared VM). No host's move fails 0.9."""
    store = tmp_path / "store"
    shutil.copytree(recorded, store)
    path = profile_file(store)
    doc = json.loads(path.read_text())
    del doc["entries"][KEY]["paces"], doc["entries"][KEY]["pace_contract"]
    path.write_text(json.dumps(doc, indent=1))
    for args, probed in (((), False), (("--dlperf-pace-probe",), True)):
        r = run(tmp_path / str(probed), store, "-k", "1n1g", *ONE, "--dlperf-tolerance", "0.9", *args)
        (case,) = json.loads((tmp_path / str(probed) / "report" / "results.json").read_text())["cases"]
        assert case["measurement"]["pace_probe"] is probed, r.stdout + r.stderr
        assert case["verdict"]["throughput"]["status"] in ("pass", "improvement"), r.stdout
        assert ("paceprobe.py" in case["runs"][0]["commands"][0]) is probed
        message = case["verdict"]["throughput"]["message"]
        assert ("only this session's runs carry the pace probe's figure" in message) is probed, message


def test_pace_probe_on_and_off_together_is_a_usage_error(tmp_path):
    r = run(tmp_path, tmp_path / "store", "--dlperf-pace-probe", "--dlperf-no-pace-probe", "--dlperf-dryrun")
    assert r.returncode == 4 and "--dlperf-pace-probe and --dlperf-no-pace-probe: give one of them" in r.stderr


def test_a_real_slowdown_against_the_baseline_fails_like_a_reviewers_note(recorded, tmp_path):
    # The stored baseline says this case used to run 4x as fast: today's real runs are a regression.
    # (1.5x until 2026-11-23, when a run came out 23% faster than the recording minutes before it,
    # and its change read -17.8%; 2x until issue #63's review, when a fresh 2-core VM's host ran the session
    # 1.5x as fast as the module's recording and the change read -26.1%. At x4 a host twice as fast
    # leaves -50%, and every run below every recorded one.)
    store = scaled_store(recorded, tmp_path, HOST_MOVES ** 2)
    before = profile_file(store).read_bytes()
    r = run(tmp_path, store, "-k", "1n1g")
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout
    assert f"REGRESSION {CASE} throughput" in out
    for words in ("measured", "baseline", "%", "p=", "Rule: median below baseline x (1 - 0.05)"):
        assert words in out, words
    assert "dlperf baseline gate" in out and "REGRESSION" in out.rsplit("dlperf baseline gate", 1)[1]
    doc = json.loads((tmp_path / "report" / "results.json").read_text())
    verdict = doc["cases"][0]["verdict"]
    assert verdict["throughput"]["status"] == "regression"
    assert verdict["throughput"]["change"] < -0.3  # -75% planted: -50% on a host twice as fast
    # what dlperf history draws its lines and commits by: the profile judged under, the commit
    assert doc["cases"][0]["profile"] == profile_file(store).stem
    assert len(doc["environment"]["git"]["commit"]) == 12 and isinstance(doc["environment"]["git"]["dirty"], bool)
    assert profile_file(store).read_bytes() == before  # judging never writes


def test_a_python_holding_more_memory_is_a_peak_memory_regression_and_the_same_python_is_not(recorded, tmp_path):
    """A second Python environment the project knows nothing of, holding 24 MiB more in every process (the
    tiny workload peaks at about 19 MiB), gated against the stored baseline: its verdict names peak
    memory. The same session on this environment's python says nothing of memory.

    Throughput's tolerance is 0.9 in these sessions: the claim is peak memory's, and a host at half the
    module recording's speed (a fresh 2-core VM) made the throughput fail too, a failure of its own in
    the summary. Peak memory does not follow the host's speed."""
    store = tmp_path / "store"
    shutil.copytree(recorded, store)
    loose = ("--dlperf-tolerance", "0.9")
    same = run(tmp_path / "same", store, "-k", "1n1g", *loose)
    verdict = json.loads((tmp_path / "same" / "report" / "results.json").read_text())["cases"][0]["verdict"]
    assert verdict["peak_memory"]["status"] in ("pass", "improvement"), same.stdout
    assert verdict["throughput"]["status"] in ("pass", "improvement") and same.returncode == 0, same.stdout
    assert "peak_memory" not in same.stdout.split("dlperf baseline gate")[-1]
    # time to first step is reported on CPU nodes, not judged, unless its tolerance is given
    assert "time_to_first_step" not in verdict
    asked = run(tmp_path / "asked", store, "-k", "1n1g", "--dlperf-time-to-first-step-tolerance", "0.9")
    verdict = json.loads((tmp_path / "asked" / "report" / "results.json").read_text())["cases"][0]["verdict"]
    assert verdict["time_to_first_step"]["tolerance"] == 0.9, asked.stdout
    hungry = run(tmp_path / "hungry", store, "-k", "1n1g", *loose, python=python_holding_more(tmp_path / "venv", 24))
    assert hungry.returncode == 1, hungry.stdout + hungry.stderr
    # another interpreter is a software difference, named; with confirmation off (the tests' default) it is
    # not confirmed side by side, and the screen's figures follow
    assert f"REGRESSION {CASE} peak_memory (not confirmed side by side: confirmation is off" in hungry.stdout
    assert f"python {sys.executable} -> {tmp_path / 'venv'}/bin/python" in hungry.stdout
    assert f"{CASE} peak_memory: measured median" in hungry.stdout
    assert "Rule: median above baseline x (1 + 0.1) and the rise is significant" in hungry.stdout
    verdict = json.loads((tmp_path / "hungry" / "report" / "results.json").read_text())["cases"][0]["verdict"]
    assert verdict["peak_memory"]["status"] == "regression" and verdict["peak_memory"]["change"] > 0.5
    assert verdict["throughput"]["status"] in ("pass", "improvement")  # the failure is the memory's alone


def test_a_schema_1_baseline_is_read_as_it_is_and_only_the_new_metrics_are_missing(recorded, tmp_path):
    """A baseline file recorded before peak memory and time to first step were measured (schema 1: no
    entry 'figures', tolerances of three metrics): its case is judged as before and passes; the new
    metrics are MISSING for themselves alone, saying how to gate them, and nothing is written.

    Throughput's tolerance is 0.9: "passes" is the file's being read as before, and a host at half the
    module recording's speed failed the default 5%, its failure then the host's (HOST, skipped outside CI)."""
    store = tmp_path / "store"
    shutil.copytree(recorded, store)
    path = profile_file(store)
    doc = json.loads(path.read_text())
    doc["schema"] = 1
    doc["default_tolerance"] = {m: doc["default_tolerance"][m] for m in ("throughput", "speedup", "efficiency")}
    for e in doc["entries"].values():  # as schema 1 wrote it: throughput's runs, median and mean, the scaling figures
        runs = e.pop("runs")["throughput"]
        e.update(throughputs=runs, median=statistics.median(runs), mean=statistics.fmean(runs), **e.pop("stated"))
        e["tolerance"] = {m: e["tolerance"][m] for m in ("throughput", "speedup", "efficiency")}
    path.write_text(json.dumps(doc, indent=1))
    before = path.read_bytes()
    r = run(tmp_path, store, "-k", "1n1g", "--dlperf-repeats", "2", "--dlperf-tolerance", "0.9")
    assert r.returncode == 0, r.stdout + r.stderr
    verdict = json.loads((tmp_path / "report" / "results.json").read_text())["cases"][0]["verdict"]
    assert verdict["peak_memory"]["status"] == "missing" and "time_to_first_step" not in verdict, verdict
    assert "the baseline entry has no peak_memory (recorded before pytest-dlperf measured its peak memory" \
        in verdict["peak_memory"]["message"] and "--update-baselines" in verdict["peak_memory"]["message"]
    assert verdict["throughput"]["status"] not in ("missing", "hardware"), verdict["throughput"]["message"]
    assert "skipped" not in r.stdout.splitlines()[-1], r.stdout  # the case is judged, not skipped
    assert path.read_bytes() == before


def test_higher_throughput_passes_and_suggests_updating(recorded, tmp_path):
    # A quarter of today's throughput recorded (a half until issue #63's review: a host at half the speed of the
    # module's recording made that no rise at all): at the worst move still twice the recording.
    store = scaled_store(recorded, tmp_path, 1 / HOST_MOVES ** 2)
    r = run(tmp_path, store, "-k", "1n1g")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "IMPROVEMENT" in r.stdout
    verdict = json.loads((tmp_path / "report" / "results.json").read_text())["cases"][0]["verdict"]
    assert verdict["throughput"]["status"] == "improvement"
    assert "consider --update-baselines" in verdict["throughput"]["rule"]


def test_marker_tolerance_applies_to_its_test(recorded, tmp_path):
    # A 75% drop planted and a marker that allows 95%: on a host twice as fast as the module's recording
    # it reads -50%, ten times the file's tolerance, and at half the speed -87.5%, inside the marker's.
    # (A 33% drop and 0.6 until issue #63's review: a host at half the speed read -67%, beyond the marker's too.)
    store = scaled_store(recorded, tmp_path, HOST_MOVES ** 2)
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_tolerant.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.dlperf(tolerance=0.95)\n"
        "def test_train(dlperf_case, dlperf):\n"
        "    dlperf.run(dlperf_case)\n")
    r = run(tmp_path, store, "-k", "1n1g", suite=suite)
    assert r.returncode == 0, r.stdout + r.stderr
    verdict = json.loads((tmp_path / "report" / "results.json").read_text())["cases"][0]["verdict"]
    assert verdict["throughput"]["tolerance"] == 0.95 and verdict["throughput"]["status"] == "pass"
    # the drop is one the file's own tolerance fails: the marker's decided
    file_tolerance = json.loads(profile_file(store).read_text())["entries"][KEY]["tolerance"]["throughput"]
    change = verdict["throughput"]["change"]
    assert change < -0.3 and file_tolerance < 0.3, (change, file_tolerance)


@pytest.mark.parametrize("mode, code", [("skip", 0), ("fail", 1), ("record", 0)])
def test_missing_baseline_modes(tmp_path, mode, code):
    store = tmp_path / "empty-store"
    r = run(tmp_path, store, "-k", "1n1g", "--dlperf-baseline-missing", mode, *(ONE if mode != "record" else ()))
    assert r.returncode == code, r.stdout + r.stderr
    if mode == "skip":
        assert "1 skipped" in r.stdout and "Record one with --update-baselines" in r.stdout
    if mode == "fail":
        assert "no baseline file for this machine's profile" in r.stdout
    assert (list(store.glob("*.json")) != []) == (mode == "record")


@pytest.mark.parametrize("order", ["rounds", "case"])
def test_corrupt_baseline_is_named_before_any_launch_and_left_byte_for_byte(recorded, tmp_path, order):
    """A broken file fails its cases before they are measured (until 2026-11-25 only after: a
    recording's minutes of launches were thrown away), and is never written."""
    store = tmp_path / "store"
    shutil.copytree(recorded, store)
    path = profile_file(store)
    broken = path.read_bytes()[:-40] + b"\n{oops"
    path.write_bytes(broken)
    r = run(tmp_path, store, "--update-baselines", "--dlperf-order", order)
    assert r.returncode == 1, r.stdout + r.stderr
    assert str(path) in r.stdout and "not valid JSON at line" in r.stdout
    assert "2 failed" in r.stdout, r.stdout
    assert not (tmp_path / "report" / "runs").exists()  # nothing was launched
    assert path.read_bytes() == broken


def test_named_profile_mismatch_is_said_plainly(recorded, tmp_path):
    store = tmp_path / "store"
    shutil.copytree(recorded, store)
    r = run(tmp_path, store, "-k", "1n1g", "--dlperf-baseline-profile", "ecs.ebmgn6v.24xlarge", *ONE)
    assert r.returncode == 0, r.stdout + r.stderr  # missing there: skipped, with the reason
    assert "(named with --dlperf-baseline-profile); this machine's profile is" in r.stdout
    assert "1 skipped" in r.stdout


def test_update_under_xdist_workers_loses_no_case_and_a_speedup_loss_is_judged_on_its_runs(tmp_path):
    store = tmp_path / "store"
    r = run(tmp_path, store, "-n", "2", "--update-baselines", "--dlperf-repeats", "1")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(profile_file(store).read_text())
    key2 = KEY.replace("1n1g", "2n1g")
    assert sorted(doc["entries"]) == [KEY, key2]
    # Each xdist worker measured one case without the other's median; the controller, which has
    # both, added the speedup to the 2n1g's entry (until 2026-11-24 it stayed empty: never gated).
    e, e1 = doc["entries"][key2], doc["entries"][KEY]
    speedup = e["stated"]["speedup"]
    assert speedup == pytest.approx(statistics.median(e["runs"]["throughput"])
                                    / statistics.median(e1["runs"]["throughput"]))
    assert e["stated"]["efficiency"] == pytest.approx(speedup / 2)
    # Plant a baseline whose 2n1g scaled far better; in one process the session's 1n1g
    # is there for the 2n1g's speedup, and the drop is judged through both cases' runs. Three runs
    # each: with two (and one recorded) the t test had about 1.5 degrees of freedom, and on a busy CI
    # machine (2026-11-24 22:00) the 67% drop came out not significant.
    # Twelve times perfect scaling (a speedup of 24 on 2 devices), not a multiple of the recording: in CI
    # (2026-11-26) the recording's single 2n1g run came out at a speedup of 1.26, and three times that
    # against today's 2.29 was not significant. Twelve, not three (until issue #63's review): the host's
    # speed may move by half between this session's 1n1g runs and its 2n1g runs, so its speedup may read
    # twice the machine's (2.29 -> 4.6); against 24 that is still -81%.
    factor = 24 / speedup
    e.pop("software")  # doctored figures are no recording of any software (scaled_store)
    for k in ("speedup", "efficiency"):
        e["stated"][k] *= factor
    e["runs"]["throughput"] = [t * factor for t in e["runs"]["throughput"]]
    profile_file(store).write_text(json.dumps(doc, indent=1))
    assert len(list((tmp_path / "report" / "parts").glob("*.json"))) == 2  # the workers' parts
    r = run(tmp_path, store, "--dlperf-repeats", "3")  # into the same report directory
    assert r.returncode == 1, r.stdout + r.stderr
    cases = {c["case"]["id"]: c for c in json.loads((tmp_path / "report" / "results.json").read_text())["cases"]}
    # The xdist session's worker parts are still there: this session's report is its own (until
    # 2026-11-24 the parts were merged over it, and the report showed the recording's single runs).
    assert [len(c["throughputs"]) for c in cases.values()] == [3, 3]
    sp = cases[CASE.replace("1n1g", "2n1g")]["verdict"].get("speedup")
    assert sp is not None, r.stdout
    assert sp["status"] == "regression" and sp["test"] == "t-test on log speedup", (sp["status"], sp["message"])
    assert "from 3 and 3 runs vs 1 and 1" in sp["message"] and sp["change"] < -0.5


def test_record_sittings_adds_each_sessions_runs_keeps_the_last_k_and_refuses_other_software(tmp_path):
    """--dlperf-record-sittings K: a baseline over several sittings (across hours on a shared VM one
    hour's recording failed identical code of another in up to 60% of trials: README "Gate power")."""
    store = tmp_path / "store"
    # The sittings must be of one machine, by its identity (issue #63). Until then a probe that read
    # slower refused a sitting too, and one of these is an xdist session whose other worker starts and
    # reports beside a probe (in CI the tiny engine's short probe read 45-48% slower there, 2026-11-26):
    # the test trained with torch, full-length probes, three minutes. The tiny engine's sessions now.
    key2 = KEY.replace("1n1g", "2n1g")
    r = run(tmp_path / "a", store, "--update-baselines", *ONE)
    assert r.returncode == 0, r.stdout + r.stderr
    a = json.loads(profile_file(store).read_text())["entries"]
    assert "sittings" not in a[KEY]  # one sitting, as before
    # under xdist the 2n1g's worker has no 1n1g: the controller gives the speedup from the merged medians
    r = run(tmp_path / "b", store, "-n", "2", "--update-baselines", "--dlperf-record-sittings", "3", *ONE)
    assert r.returncode == 0, r.stdout + r.stderr
    b = json.loads(profile_file(store).read_text())["entries"]
    runs = {k: e["runs"]["throughput"] for k, e in b.items()}
    for k in (KEY, key2):
        assert len(runs[k]) == len(b[k]["paces"]) == 2 and runs[k][0] == a[k]["runs"]["throughput"][0]
        assert [s["runs"] for s in b[k]["sittings"]] == [1, 1] and b[k]["sittings"][0]["recorded_at"] == a[k]["recorded_at"]
        assert "throughput" not in b[k]["stated"]  # the median is the merged runs' own
    assert b[key2]["stated"]["speedup"] == pytest.approx(statistics.median(runs[key2]) / statistics.median(runs[KEY]))
    assert b[key2]["stated"]["efficiency"] == pytest.approx(b[key2]["stated"]["speedup"] / 2)
    # in one process, K=2: the first sitting leaves; the speedup from this session's merged 1n1g
    r = run(tmp_path / "c", store, "--update-baselines", "--dlperf-record-sittings", "2", *ONE)
    assert r.returncode == 0, r.stdout + r.stderr
    c = json.loads(profile_file(store).read_text())["entries"]
    for k in (KEY, key2):
        assert c[k]["runs"]["throughput"][0] == runs[k][1] and len(c[k]["runs"]["throughput"]) == 2
        assert [s["recorded_at"] for s in c[k]["sittings"]][0] == b[k]["sittings"][1]["recorded_at"]
    assert c[key2]["stated"]["speedup"] == pytest.approx(statistics.median(c[key2]["runs"]["throughput"])
                                                         / statistics.median(c[KEY]["runs"]["throughput"]))
    # runs of other software are not added, and nothing is written
    doc = json.loads(profile_file(store).read_text())
    doc["entries"][KEY]["versions"]["python"] = "3.9.0"
    profile_file(store).write_text(json.dumps(doc, indent=1))
    before = profile_file(store).read_bytes()
    r = run(tmp_path / "d", store, "-k", "1n1g", "--update-baselines", "--dlperf-record-sittings", "2", *ONE)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "resnet50-fp32-bs2-32px-1n1g: not recorded: the recorded runs were taken with other software " \
           f"(python 3.9.0 -> {platform.python_version()}" in r.stdout and "without --dlperf-record-sittings" in r.stdout
    assert profile_file(store).read_bytes() == before
    # what is known before a launch (the commit, pytest-dlperf's version) is refused before the first one
    doc["entries"][KEY]["versions"]["git"] = "0123456789ab"
    profile_file(store).write_text(json.dumps(doc, indent=1))
    before = profile_file(store).read_bytes()
    r = run(tmp_path / "f", store, "-k", "1n1g", "--update-baselines", "--dlperf-record-sittings", "2", *ONE)
    assert r.returncode == 1 and "taken with other software (git 0123456789ab -> " in r.stdout, r.stdout + r.stderr
    assert "1 failed" in r.stdout and not (tmp_path / "f" / "report" / "runs").exists()  # nothing was launched
    assert profile_file(store).read_bytes() == before
    r = run(tmp_path / "e", store, "-k", "1n1g", "--dlperf-record-sittings", "2")
    assert r.returncode == 4 and "give it with --update-baselines" in r.stderr, r.stdout + r.stderr


def test_recording_keeps_the_machines_fingerprint(recorded):
    doc = json.loads(profile_file(recorded).read_text())
    e = doc["entries"][KEY]
    fps = doc["machines"][e["machine"]]
    assert list(fps) == ["local0", "local1"]  # every node of the cluster, probed together
    cpu = fps["local0"]["cpu"]
    assert cpu["model_name"] and cpu["cpus"] >= 1 and fps["local0"]["compute"]["median"] > 0


def copied(recorded: Path, store: Path) -> Path:
    """A copy of the recording's store at ``store``, as it is."""
    shutil.copytree(recorded, store)
    return store


def plant_machine(store: Path, change: Callable[[dict], None]) -> Path:
    """The store's recording as if its machine were another, or the same at another moment: ``change``
    edits each node's stored fingerprint in place."""
    path = profile_file(store)
    doc = json.loads(path.read_text())
    for fp in doc["machines"][doc["entries"][KEY]["machine"]].values():
        change(fp)
    path.write_text(json.dumps(doc, indent=1))
    return store


def probe_scaled(probe: float) -> Callable[[dict], None]:
    """A fingerprint's change: its matmul probe's figures by ``probe``, every identity fact as recorded (the
    same machine at another speed, issue #63)."""
    def change(fp: dict) -> None:
        fp["compute"]["trials"] = [t * probe for t in fp["compute"]["trials"]]
        fp["compute"]["median"] *= probe
        fp["compute"]["best"] *= probe
        # the planted machine's cores were its own while it probed: whether the fixture's real probe
        # happened to share them (cpu/wall 0.43 in CI on 2026-11-26: then nothing is compared) is
        # not what these tests are about
        for part in (fp.get("contention"), fp["compute"]):
            if isinstance(part, dict) and "cpu_wall" in part:
                part["cpu_wall"] = 1.0
    return change


OTHER_CPU = "Other CPU 9000"


def other_cpu(fp: dict) -> None:
    """A fingerprint's change: another CPU model (an identity fact)."""
    fp["cpu"]["model_name"] = OTHER_CPU


def this_cpu(recorded: Path) -> str:
    """The CPU model the module's recording probed on node local0 (this machine's)."""
    doc = json.loads(profile_file(recorded).read_text())
    return doc["machines"][doc["entries"][KEY]["machine"]]["local0"]["cpu"]["model_name"]


def other_machine(recorded: Path, tmp: Path, change: Callable[[dict], None] = other_cpu) -> Path:
    """The recording as if made on another machine (``change``: an identity fact of its fingerprints) that
    ran the case 4x as fast: a drop that no move of the host explains, still not judged on this machine."""
    return plant_machine(scaled_store(recorded, tmp, HOST_MOVES ** 2), change)


def looks(report: Path) -> list[str]:
    """The hardware probes a session took, by label (report/hwprobe)."""
    return sorted(p.name for p in (report / "hwprobe").iterdir())


def probe_said(out: str, said: str, word: str) -> None:
    """``said`` gives each node's matmul probe figure ``word`` ("faster", "slower") than at the recording,
    except a node whose probe this session ran on busy cores (``out``'s note says so: its speed was not
    compared). On a host whose speed moves (../shared/tools/drifting-host: busy processes come and go) a session's one
    probe may run while the cores are shared; where it does not, the figure must be said."""
    for node in ("local0", "local1"):
        busy = f"{node}: the cores were busy during the probe" in out
        assert (f"{node}: matmul probe " in said) is not busy, (node, said, out)
        if not busy:
            assert re.search(rf"{node}: matmul probe \d+% {word} than at the recording", said), (node, said)


@pytest.mark.parametrize("probe, word", [(1 / HOST_MOVES ** 2, "faster"), (HOST_MOVES ** 2, "slower")],
                         ids=["probed-in-a-slow-spell", "probed-faster"])
def test_a_recording_whose_probe_alone_moved_is_judged(recorded, tmp_path, probe, word):
    """The same machine at another speed is the same machine (issue #63). A recording whose matmul probe ran
    at a quarter of the host's speed (a slow spell: later sessions probe 4x as fast; seen in CI on 2026-11-24,
    79.9 GFLOP/s per core at the recording, 101.7 later), or at 4 times it (later sessions probe at a
    quarter), is judged: a planted drop is a REGRESSION, a rise passes, nothing is called HARDWARE and no
    more probes are taken before the verdict. The probe's figures go with the verdict (host_speed: HOST
    says them). x4 either way: a host that moves by half leaves the probe beyond its 25% noise."""
    store = plant_machine(scaled_store(recorded, tmp_path / "drop", HOST_MOVES ** 2), probe_scaled(probe))
    r = run(tmp_path / "drop", store, "-k", "1n1g", "--dlperf-hardware", "fail")
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"REGRESSION {CASE} throughput" in r.stdout and "HARDWARE" not in r.stdout, r.stdout
    assert "not the one that recorded" not in r.stdout and "NOT JUDGED" not in r.stdout
    verdict = json.loads((tmp_path / "drop" / "report" / "results.json").read_text())["cases"][0]["verdict"]
    assert verdict["throughput"]["status"] == "regression" and verdict["throughput"]["change"] < -0.3
    probe_said(r.stdout, "; ".join(verdict["throughput"]["host_speed"]), word)
    assert looks(tmp_path / "drop" / "report") == [CASE]  # no second look before the verdict
    # ... and a rise there passes (4x the recorded throughput), judged
    store = plant_machine(scaled_store(recorded, tmp_path / "pass", 1 / HOST_MOVES ** 2), probe_scaled(probe))
    r = run(tmp_path / "pass", store, "-k", "1n1g", "--dlperf-hardware", "fail", *ONE)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "HARDWARE" not in r.stdout and "not the one that recorded" not in r.stdout, r.stdout
    verdict = json.loads((tmp_path / "pass" / "report" / "results.json").read_text())["cases"][0]["verdict"]
    assert verdict["throughput"]["status"] in ("pass", "improvement") and verdict["peak_memory"]["status"] != "hardware"
    assert looks(tmp_path / "pass" / "report") == [CASE]


def test_recording_probes_again_before_it_writes(recorded):
    # the recording session's probes: one before its case, then three more, seconds apart
    looks = sorted(p.name for p in (recorded.parent / "report" / "hwprobe").iterdir())
    assert looks == [f"at-recording{i}" for i in (1, 2, 3)] + [CASE], looks


def test_a_recording_from_runs_that_disagree_says_so(recorded, tmp_path):
    # The real recording's case, its runs replaced by the ones CI recorded in a slow spell
    doc = json.loads((recorded.parent / "report" / "results.json").read_text())
    result = result_from_dict(doc["cases"][0])
    gate = Gate(GateOptions(update=True, profile=None, directory=tmp_path, tolerance={}, missing="record",
                            noisy_fails=True), lambda case: ("torch",))
    item = types.SimpleNamespace(nodeid="suite::case", get_closest_marker=lambda name: None)
    nodes = [Node("local0", "127.0.0.1", 1, cpus=1)]
    for runs, said in (([14.1, 14.5, 14.3], False), ([10.18, 14.79, 13.30], True)):
        result.throughputs = runs
        gate.notes.clear()
        assert gate.judge(result, nodes, item).outcome == "pass"
        # a spread more launches do not narrow: it is not told to take more of them
        assert any("recorded from runs that disagree (robust CV 16.6%" in n and "10.18, 14.79, 13.3 samples/s"
                   in n and "catch a 10% slow-down in about 0% of sessions" in n and "--dlperf-repeats" not in n
                   and "Record it again at a quieter moment;" in n for n in gate.notes) == said, gate.notes
    # runs within the bound, but spread enough that a later 10% slow-down would often pass: said too
    result.throughputs = [15.0, 16.6, 14.2, 15.9, 13.9, 16.8, 15.2, 14.4]
    gate.notes.clear()
    assert gate.judge(result, nodes, item).outcome == "pass"
    (note,) = [n for n in gate.notes if "recorded from runs" in n]
    assert "recorded from runs of robust CV 8.3% (15, 16.6," in note and "disagree" not in note, note
    assert "a session of 3 runs as spread would catch a 10% slow-down in about 62% of sessions" in note, note
    assert "or with more --dlperf-repeats" in note, note


@pytest.mark.parametrize("mode, code", [("skip", 0), ("fail", 1)])
def test_other_hardware_is_not_called_a_regression(recorded, tmp_path, mode, code):
    """A recording made on another CPU model (an identity fact) that ran the case 4x as fast: not judged
    (HARDWARE), the drop not called a regression; every metric the case measured keeps its figures in its
    verdict (time to first step too, asked for), and no more probes are taken."""
    store = other_machine(recorded, tmp_path)
    r = run(tmp_path, store, "-k", "1n1g", "--dlperf-hardware", mode, "--dlperf-time-to-first-step-tolerance", "0.9",
            *ONE)
    assert r.returncode == code, r.stdout + r.stderr
    assert "REGRESSION" not in r.stdout
    assert f"HARDWARE {CASE} throughput: not judged: this machine is not the one that recorded the baseline" in r.stdout
    assert f"local0: CPU {this_cpu(recorded)} vs {OTHER_CPU}" in r.stdout, r.stdout
    assert "NOT JUDGED (hardware differs" in r.stdout and "--update-baselines" in r.stdout
    verdict = json.loads((tmp_path / "report" / "results.json").read_text())["cases"][0]["verdict"]
    assert set(verdict) == {"throughput", "peak_memory", "time_to_first_step", "checkpoint_save", "checkpoint_load"}, verdict
    for metric, v in verdict.items():
        assert v["status"] == "hardware" and "not the one that recorded" in v["message"], (metric, v["message"])
        assert v["measured_median"] > 0 and v["baseline_median"] > 0 and v["change"] is not None, (metric, v)
    assert verdict["throughput"]["change"] < -0.3  # the drop as measured, kept: -75% planted
    assert looks(tmp_path / "report") == [CASE]  # an identity does not change on a second look


def test_a_sitting_is_refused_on_another_machine_only_and_added_at_another_speed(tmp_path):
    """--dlperf-record-sittings adds a session's runs to the recorded ones only on the machine that recorded
    them: refused where an identity fact differs (here a CPU flag the recording machine had), with no more
    probes; added where only the probe's speed moved (issue #63: until then that was refused too, and in CI
    on 2026-11-26, twice, on a probe taken while the session's other xdist worker started beside it)."""
    # The first sitting is recorded here, seconds before the next: a sitting must also run the recorded
    # software, and the module's recording is minutes old (a commit or an edit of the work tree since, in
    # a shared checkout, refused the sitting for its software before the hardware was looked at).
    first = tmp_path / "first" / "store"
    r = run(tmp_path / "first", first, "-k", "1n1g", "--update-baselines", *ONE)
    assert r.returncode == 0, r.stdout + r.stderr
    store = plant_machine(copied(first, tmp_path / "other"),
                          lambda fp: fp["cpu"]["flags"].append("dlperf_planted_flag"))
    before = profile_file(store).read_bytes()
    r = run(tmp_path / "refused", store, "-k", "1n1g", "--update-baselines", "--dlperf-record-sittings", "2", *ONE)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"{CASE}: not recorded: the recorded runs were taken on other hardware (local0: CPU flags missing " \
           "dlperf_planted_flag (vs the recording machine)" in r.stdout, r.stdout
    assert "would mix two machines in one baseline" in r.stdout
    assert profile_file(store).read_bytes() == before
    assert looks(tmp_path / "refused" / "report") == [CASE]  # no second look, and no recording's
    # the recording machine, its probe in a slow spell (a quarter of the host's speed): the sitting is added
    store = plant_machine(first, probe_scaled(1 / HOST_MOVES ** 2))
    old = json.loads(profile_file(store).read_text())["entries"][KEY]
    r = run(tmp_path / "added", store, "-k", "1n1g", "--update-baselines", "--dlperf-record-sittings", "2", *ONE)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "not recorded" not in r.stdout and "other hardware" not in r.stdout, r.stdout
    e = json.loads(profile_file(store).read_text())["entries"][KEY]
    assert [s["runs"] for s in e["sittings"]] == [1, 1], e
    assert e["runs"]["throughput"][0] == old["runs"]["throughput"][0], e
    # the note says the speed, unless this session's probe ran on busy cores on every node (nothing compared)
    note = next((line for line in r.stdout.splitlines() if "recorded on the machine of its last recording" in line), "")
    probe_said(r.stdout, note, "faster")
    if note:
        assert f"{CASE}: recorded on the machine of its last recording, at another speed by the hardware probe " \
               "(local" in note and "its probe figures only say how fast the host was" in note, note
    assert looks(tmp_path / "added" / "report") == sorted([CASE, *(f"at-recording{i}" for i in (1, 2, 3))])


def test_hardware_verdict_fails_by_default_under_ci(recorded, tmp_path):
    # twice the CPUs the module's recording machine has: another machine's shape
    store = other_machine(recorded, tmp_path, lambda fp: fp["cpu"].update(cpus=fp["cpu"]["cpus"] * 2))
    r = run(tmp_path, store, "-k", "1n1g", *ONE, env={"CI": "true"})
    assert r.returncode == 1 and "HARDWARE" in r.stdout and "REGRESSION" not in r.stdout, r.stdout
    assert "not the one that recorded" in r.stdout and " CPUs vs " in r.stdout, r.stdout
    r = run(tmp_path, store, "-k", "1n1g", *ONE, env={"CI": "", "BUILD_NUMBER": ""})
    assert r.returncode == 0 and "1 skipped" in r.stdout, r.stdout


@pytest.mark.skipif(not cgroup.available(), reason="needs a writable cgroup cpu controller (root)")
def test_a_slower_machine_of_the_same_name_is_not_a_regression(recorded, tmp_path):
    # The same CPU model, cores and flags, with half the CPU time: a cloud machine that shares the name.
    # Its quota is an identity fact (issue #63 keeps it one): HARDWARE, whatever speed the host has.
    with cgroup.cpu_quota(1.0) as prefix:
        r = run(tmp_path, recorded, "-k", "1n1g", "--dlperf-hardware", "fail", *ONE, prefix=prefix)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "REGRESSION" not in r.stdout
    assert f"HARDWARE {CASE} throughput: not judged" in r.stdout and "cpu quota 1 cores vs unlimited" in r.stdout
    assert "not the one that recorded" in r.stdout
    verdict = json.loads((tmp_path / "report" / "results.json").read_text())["cases"][0]["verdict"]
    assert {v["status"] for v in verdict.values()} == {"hardware"} and "peak_memory" in verdict, verdict


def test_a_case_whose_test_failed_is_neither_recorded_nor_its_groups_reference(tmp_path):
    """A 1n1g whose test failed is not written, so a 2n1g recorded over sittings after it must not take
    its speedup from that 1n1g's merged runs either."""
    from pytest_dlperf.baselines import Entry

    gate = Gate(GateOptions(update=True, profile=None, directory=tmp_path, tolerance={}, missing="skip",
                            noisy_fails=True, sittings=2), lambda case: ("torch",))
    e = Entry.from_samples(model="resnet50", precision="fp32", batch_size=2, image_size=32, backend="ddp",
                           topology="1n1g", throughputs=[10.0], tolerance=None, versions={})
    for nodeid, passed in (("suites/t.py::ok", True), ("suites/t.py::bad", False)):
        gate.recorder.pending[nodeid] = ("p", e.key, e, None)
        gate.recorder.recorded[e.key] = e
        gate.recorder.test_finished(nodeid, passed)
        assert (nodeid in gate.recorder.pending, e.key in gate.recorder.recorded) == (passed, passed)
