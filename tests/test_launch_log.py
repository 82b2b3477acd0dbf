"""The launch log (``--dlperf-launch-log``, measure/launchlog.py): a JSON line per launch across sessions; and the
tests' launch census over it (tests/census.py), with the real-launch budget docs/testing.md sets."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_dlperf.measure.launchlog import LaunchLine, append, read
from tests import census
from tests.suite import QUICK_PROBES, ROOT, SMALL_CASE, TINY_ENGINE, run_suite


def line(frameworks: tuple[str, ...] = (), seconds: float = 2.0, ok: bool = True) -> LaunchLine:
    return LaunchLine(case="resnet50-fp32-bs2-32px-1n1g", label="r0", engine="tiny", frameworks=frameworks,
                      cluster="local", nodes=1, seconds=seconds, ok=ok, at=1.0)


@pytest.mark.slow
def test_each_launch_of_a_session_is_a_line_and_a_failed_one_says_so(tmp_path):
    log = tmp_path / "launches.jsonl"
    r = run_suite(*TINY_ENGINE, *SMALL_CASE, *QUICK_PROBES, "--dlperf-iters", "2", "--dlperf-repeats", "2",
                  f"--dlperf-report={tmp_path / 'ok'}", f"--dlperf-baseline-dir={tmp_path / 'none'}",
                  env={"DLPERF_LAUNCH_LOG": str(log)})  # the variable: what CI images set
    assert r.returncode == 0, r.stdout + r.stderr
    got = read(log)
    assert sorted((x.case, x.label) for x in got) == [(f"resnet50-fp32-bs2-32px-{t}", f"r{k}")
                                                      for t in ("1n1g", "2n1g") for k in (0, 1)]
    assert all(x.engine == "tiny" and x.frameworks == () and x.cluster == "local" and x.ok and x.seconds > 0
               for x in got)
    assert {x.nodes for x in got} == {1, 2}
    r = run_suite(*TINY_ENGINE, *SMALL_CASE, *QUICK_PROBES, "--dlperf-iters", "2", "--dlperf-repeats", "1", "-k", "2n1g",
                  f"--dlperf-report={tmp_path / 'bad'}", f"--dlperf-launch-log={log}",
                  env={"DLPERF_FAULT": "1:1"})
    assert r.returncode == 1, r.stdout + r.stderr
    failed = read(log)[4:]
    assert [(x.nodes, x.ok) for x in failed] == [(2, False)], failed  # appended: the earlier lines kept


@pytest.mark.parametrize("given, said", [
    ("{tmp}/no/such/dir/log.jsonl", "--dlperf-launch-log {tmp}/no/such/dir/log.jsonl: no such directory {tmp}/no/such/dir"),
    ("{tmp}", "--dlperf-launch-log {tmp}: is a directory; give a file in it"),
])
def test_a_launch_log_that_cannot_be_written_is_one_line_before_any_launch(tmp_path, given, said):
    r = run_suite(*TINY_ENGINE, *SMALL_CASE, f"--dlperf-report={tmp_path / 'r'}",
                  f"--dlperf-launch-log={given.format(tmp=tmp_path)}")
    assert r.returncode == 4, r.stdout + r.stderr
    assert said.format(tmp=tmp_path) in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "r" / "runs").exists()


def test_a_log_line_is_read_back_and_a_line_of_another_version_is_named(tmp_path):
    log = tmp_path / "log.jsonl"
    assert append(log, line(("torch",))) == "" and append(None, line()) == ""
    assert read(log) == [line(("torch",))]
    with log.open("a") as f:
        f.write(json.dumps({"v": 9, "case": "x"}) + "\n")
    with pytest.raises(ValueError, match=r"log.jsonl:2: not a launch log line \(version 9, expected 1\)"):
        read(log)
    assert append(tmp_path / "gone" / "log.jsonl", line()).startswith(f"launch log {tmp_path / 'gone'}")


def test_the_census_counts_real_and_tiny_launches_per_phase_and_module_and_fails_over_its_budget(tmp_path):
    shared = tmp_path / "census" / "shared"
    shared.mkdir(parents=True)
    for name, lines in (("tests_test_a.py--test_one.jsonl", [line(("torch",), 20.0), line((), 1.5)]),
                        ("tests_test_a.py--test_two[x].jsonl", [line(("horovod", "torch"), 30.0)]),
                        ("tests_test_b.py--test_three.jsonl", [line(("json",), 1.0), line(("tensorflow",), 40.0)])):
        for x in lines:
            append(shared / name, x)
    got = census.tally(tmp_path / "census")
    a, b = got["shared"]["test_a.py"], got["shared"]["test_b.py"]
    assert (a["real"].n, a["real"].seconds, a["tiny"].n) == (2, 50.0, 1)
    assert (b["real"].n, b["tiny"].n) == (1, 1)  # a standard-library "framework" (json) is no real launch
    text = "\n".join(census.render(got))
    assert "shared     test_a.py" in text and text.splitlines()[-1].split()[1:3] == ["3", "90"]
    assert census.budget("...\nReal-framework launches in one run of the tests, both phases together: 2.\n") == 2
    with pytest.raises(ValueError, match="no line 'Real-framework launches"):
        census.budget("no budget here")
    assert census.budget() >= 1  # docs/testing.md has one
    low = tmp_path / "testing.md"
    low.write_text("Real-framework launches in one run of the tests, both phases together: 2.\n")
    r = subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; from tests import census; "
                        f"census.TESTING_MD = Path({str(low)!r}); sys.exit(census.main([{str(tmp_path / 'census')!r}]))"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 1 and "3 real-framework launches, over the budget of 2 (docs/testing.md)" in r.stderr, r.stderr
    assert "launch census" in r.stdout


def test_a_tests_sessions_log_into_its_own_file_of_the_phases_census(tmp_path, monkeypatch):
    monkeypatch.setenv(census.CENSUS_ENV, str(tmp_path))
    monkeypatch.setenv(census.PHASE_ENV, "shared")
    monkeypatch.delenv(census.LAUNCH_LOG, raising=False)
    import os

    with census.launches_of("tests/test_x.py::test_y[a/b c]"):
        path = Path(os.environ[census.LAUNCH_LOG])
    assert path == tmp_path / "shared" / "tests_test_x.py--test_y[a_b_c].jsonl"
    assert census.LAUNCH_LOG not in os.environ
    with census.shell_launch("c", "ddp", ("torch",), 2):
        pass  # no log asked: nothing written
    monkeypatch.setenv(census.LAUNCH_LOG, str(path))
    with census.shell_launch("c", "ddp", ("torch",), 2):
        pass
    (x,) = read(path)
    assert (x.cluster, x.frameworks, x.nodes, x.ok) == ("shell", ("torch",), 2, True)
