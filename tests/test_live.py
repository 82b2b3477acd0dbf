"""The live progress line: drawn on a terminal from rank 0's progress lines, silent under -q,
without a terminal, and in xdist workers; the workloads' progress lines are in node 0's log."""
from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_dlperf.measure.runner import last_progress
from pytest_dlperf.reporting import live
from pytest_dlperf.reporting.live import render

from tests.suite import QUICK_PROBES, SMALL_CASE, TINY_ENGINE, UNUSED_PLUGINS

ROOT = Path(__file__).resolve().parent.parent
# The tiny engine (the line is the harness's, drawn from the step-log contract's progress lines). A window
# of about 3 s whatever the machine's speed: rank 0 prints its progress once a second and the harness looks
# twice a second, and 30 steps took 1.1 s on a faster VM (2026-11-27), over before the line was drawn.
ARGS = ["-m", "pytest", str(ROOT / "suites"), *UNUSED_PLUGINS, *TINY_ENGINE, *SMALL_CASE, *QUICK_PROBES,
        "--dlperf-repeats", "1", "--dlperf-window-seconds", "3", "--dlperf-baseline-missing", "skip", "-k", "1n1g"]


def test_the_line_says_case_repeat_step_and_pace():
    line = render("resnet50-fp32-bs8-64px-2n1g", 1, 3, {"phase": "window", "step": 12, "of": 40, "samples_per_s": 26.12})
    assert line == "dlperf resnet50-fp32-bs8-64px-2n1g  repeat 2/3  window step 12/40  26.1 samples/s"
    assert render("x", 0, 1, {"phase": "warmup", "step": 2, "of": None, "samples_per_s": None}) == \
        "dlperf x  repeat 1/1  warmup step 2"
    # a decoder's workload counts its steps in tokens: the line says its case's unit
    assert render("llama-fp32-bs2-seq64-d256l4-1n1g", 0, 1, {"phase": "window", "step": 3, "of": 9,
                                                             "samples_per_s": 1024.0}, "tokens/s").endswith("  1024.0 tokens/s")


def test_progress_lines_are_read_behind_a_launchers_prefix(tmp_path):
    log = tmp_path / "local0.log"
    log.write_text('noise\n[0]<stdout>:DLPERF-PROGRESS {"phase": "window", "step": 3, "of": 9, "samples_per_s": 5.0}\n'
                   '[0]<stdout>:DLPERF-PROGRESS {"phase": "window", "step": 4, "of": 9, "samples_per_s": 6.0}\nmore\n')
    assert last_progress(log) == {"phase": "window", "step": 4, "of": 9, "samples_per_s": 6.0}
    assert last_progress(tmp_path / "none.log") is None


def run_on_a_terminal(report: Path, *extra: str) -> str:
    """The suite with its output on a pseudo-terminal (isatty true); everything it wrote."""
    main, sub = pty.openpty()
    proc = subprocess.Popen([sys.executable, *ARGS, f"--dlperf-report={report}",
                             f"--dlperf-baseline-dir={report.parent / 'nb'}", *extra],
                            cwd=ROOT, stdin=subprocess.DEVNULL, stdout=sub, stderr=sub, env={**os.environ, "COLUMNS": "160"})
    os.close(sub)
    out = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=300)
    os.close(main)
    return out.decode(errors="replace")


@pytest.mark.slow  # 10 s or more alone on a 2-core VM: not in the quick tier (tests/quick.sh), CI runs it
def test_a_terminal_sees_the_live_line_and_q_does_not(tmp_path):
    out = run_on_a_terminal(tmp_path / "tty")
    assert "dlperf resnet50-fp32-bs2-32px-1n1g  repeat 1/1  window step " in out, out[-3000:]
    assert "samples/s" in out and "1 skipped" in out
    quiet = run_on_a_terminal(tmp_path / "quiet", "-q")
    assert "repeat 1/1" not in quiet and "1 skipped" in quiet
    logs = list((tmp_path / "tty" / "runs").glob("*/r0/local0.log"))
    assert logs and "DLPERF-PROGRESS " in logs[0].read_text()


@pytest.mark.slow  # 10 s or more alone on a 2-core VM: not in the quick tier (tests/quick.sh), CI runs it
def test_without_a_terminal_each_launch_and_pair_says_a_line_and_a_long_launch_its_progress(tmp_path):
    """A CI log is never silent for a minute of work: a line as each launch and each A/B pair ends, and
    a long launch's progress every LOG_EVERY seconds (output to a file, as a CI runner takes it)."""
    report = tmp_path / "r"
    r = subprocess.run([sys.executable, *ARGS, f"--dlperf-report={report}", f"--dlperf-baseline-dir={tmp_path / 'nb'}",
                        "--dlperf-candidate", "current", "--dlperf-ab-max-pairs", "3"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    lines = r.stdout.splitlines()
    case = "resnet50-fp32-bs2-32px-1n1g"
    for k, first in enumerate(("reference", "candidate", "candidate")):
        assert any(ln.startswith(f"dlperf {case} p{k}-{first} ({k + 1} of 3): ") and " samples/s in " in ln
                   for ln in lines), r.stdout
    # and where its seconds went (issue #77): phases that add up to the launch's seconds
    for ln in (ln for ln in lines if ln.startswith(f"dlperf {case} p")):
        went = re.fullmatch(r".* samples/s in ([\d.]+) s: harness [\d.]+, before [\d.]+, start [\d.]+ \(launcher [\d.]+, "
                            r"imports [\d.]+, group [\d.]+, model [\d.]+, first step [\d.]+\), warm-up [\d.]+, "
                            r"window [\d.]+, checkpoint [\d.]+, after [\d.]+, exit [\d.]+", ln)
        assert went, ln
        parts = [float(x) for x in re.findall(r"(?:harness|before|launcher|imports|group|model|first step|warm-up|"
                                              r"window|checkpoint|after|exit) ([\d.]+)", ln)]
        assert len(parts) == 12 and abs(sum(parts) - float(went[1])) < 0.05 * 12 + 0.2, ln
        assert float(re.search(r"window ([\d.]+)", ln)[1]) >= 1.0, ln  # the window of about 3 s, as it ran
    pairs = [ln for ln in lines if ln.startswith(f"dlperf A/B {case} pair ")]
    assert [p.split(" pair ")[1].split(":")[0] for p in pairs] == ["1 of at most 3", "2 of at most 3", "3 of at most 3"]
    assert "candidate/reference " in pairs[-1] and ", interval " in pairs[-1]
    # a launch's progress in a log, once LOG_EVERY has passed since the session last said anything
    from types import SimpleNamespace

    written: list[str] = []
    tr = SimpleNamespace(isatty=False, ensure_newline=lambda: None, write_line=written.append)
    config = SimpleNamespace(get_verbosity=lambda: 0,
                             pluginmanager=SimpleNamespace(getplugin=lambda name: tr if name == "terminalreporter" else None))
    now = [0.0]
    line = live.LiveLine(config, clock=lambda: now[0])
    assert line.logging and not line.enabled and line.watching
    info = {"phase": "window", "step": 3, "of": 90, "samples_per_s": 12.0}
    line.update("c", 0, 3, info)
    now[0] = live.LOG_EVERY - 1
    line.update("c", 0, 3, info)
    assert written == []
    now[0] = live.LOG_EVERY + 0.5
    line.update("c", 0, 3, info)
    line.update("c", 0, 3, info)
    assert written == ["dlperf c  repeat 1/3  window step 3/90  12.0 samples/s"]
