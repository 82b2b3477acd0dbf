"""The live progress line: drawn on a terminal from rank 0's progress lines, silent under -q,
without a terminal, and in xdist workers; the workloads' progress lines are in node 0's log."""
from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

from pytest_dlperf.reporting.live import render
from pytest_dlperf.runner import last_progress

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


def test_a_terminal_sees_the_live_line_and_q_does_not(tmp_path):
    out = run_on_a_terminal(tmp_path / "tty")
    assert "dlperf resnet50-fp32-bs2-32px-1n1g  repeat 1/1  window step " in out, out[-3000:]
    assert "samples/s" in out and "1 skipped" in out
    quiet = run_on_a_terminal(tmp_path / "quiet", "-q")
    assert "repeat 1/1" not in quiet and "1 skipped" in quiet
    logs = list((tmp_path / "tty" / "runs").glob("*/r0/local0.log"))
    assert logs and "DLPERF-PROGRESS " in logs[0].read_text()
