"""What the session prints: the terminal summary (dry-run commands, results, the gate's verdicts
and notes, the budget) and the dry-run's line on how many times each case's commands run."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import reporting
from ..baselines import verdict_table
from ..options.core import RunOptions
from ..reporting import skips
from ..specs import Measurement

if TYPE_CHECKING:
    from .hub import DLPerfSession

ORDER_TEXT = {"rounds": ", in rounds (every case once a round, --dlperf-order rounds)",
              "case": ", back to back (--dlperf-order case)"}

# What the dry-run says of the pace probe (pace.py) in front of CPU nodes' commands.
PACE_TEXT = {"on": "; the pace probe in front of each CPU node's command (--dlperf-pace-probe)",
             "off": "",
             "auto": ("; the pace probe in front of each CPU node's command as for a case with no baseline or "
                      "one recorded with the probe; a case whose baseline was recorded without it runs "
                      "without it (--dlperf-no-pace-probe: never)")}


def launches_text(m: Measurement, options: RunOptions, recording: bool, confirm: int = 0, pairs: int = 0) -> str:
    """How many launches each case takes, for the dry-run: the command runs that many times (and
    ``confirm`` more for a recording whose launches fall into modes; up to ``pairs`` pairs side by side
    with the recorded software for a gated case that fails its stored baseline with a software difference)."""
    more = (f"; {confirm} more for a case whose launches fall into separate modes (--dlperf-confirm)"
            if recording and confirm else
            f"; a case that fails its stored baseline while its software differs from the recording's runs again "
            f"side by side with the recorded software, up to {pairs} pairs of launches (--dlperf-confirm-pairs)"
            if not recording and pairs else "")
    if m.budget and m.min_repeats < m.repeats:
        spread = (f" where the first {m.settle_launches} spread beyond CV {m.settle_cv:.1%}"
                  if m.settle_launches else "")
        return (f"each case runs {m.min_repeats}-{m.repeats} times: further launches{spread} while the "
                f"{m.budget:g} s budget affords them" + ORDER_TEXT[options.order]
                + PACE_TEXT[options.pace_probe] + more)
    what = ": recording a baseline" if recording else ""
    text = f"each case runs {m.repeats} time{'s' if m.repeats != 1 else ''}{what}"
    return (text + ORDER_TEXT[options.order] if m.repeats > 1 else text) + PACE_TEXT[options.pace_probe] + more


def write_summary(session: DLPerfSession, tr) -> None:  # noqa: ANN001 - pytest's TerminalReporter
    """The session's tables at the end of pytest's output (nothing when no case ran or was planned)."""
    s = session
    skips.write(tr, s.config.invocation_params.args)
    if not (s.results.results or s.dryrun or s.failures or s.mode.has_records()):
        return
    if s.dryrun:
        how = f" ({s.dryrun_launches})" if s.dryrun_launches else ""  # unknown on an xdist controller
        tr.write_sep("=", f"dlperf dry-run: per-node commands{how}")
        for case_id, lines in s.dryrun:
            tr.write_line(f"# {case_id}")
            for line in lines:
                tr.write_line(line)
    if s.results.results:
        tr.write_sep("=", "dlperf results")
        for line in reporting.summary_tables(s.results).splitlines():
            tr.write_line(line)
        for line in reporting.engine_table(s.results).splitlines():
            tr.write_line(line)
        for line in reporting.compiled_table(s.results).splitlines():
            tr.write_line(line)
        for line in reporting.data_table(s.results).splitlines():
            tr.write_line(line)
    _gate_summary(s, tr)
    table = s.mode.terminal()
    if table:
        tr.write_sep("=", "dlperf A/B")
        for line in table.splitlines():
            tr.write_line(line)
    line = s.budget_line()
    if line:
        tr.write_line(line)
    tr.write_line(f"dlperf report: {s.options.report_dir / 'results.json'}")


def _gate_summary(s: DLPerfSession, tr) -> None:  # noqa: ANN001
    """The verdict table, the gate's notes and what --update-baselines wrote."""
    # Derived from the results, so xdist workers' verdicts (merged as results) are included.
    verdicts = [v for r in s.results.results for v in (r.verdict or {}).values()]
    table = verdict_table(verdicts)
    if table or s.gate.notes or s.gate.recorder.written:
        tr.write_sep("=", "dlperf baseline gate")
        for line in table.splitlines():
            tr.write_line(line)
        for note in s.gate.notes:
            tr.write_line(note)
        for profile, n in s.gate.recorder.written.items():
            tr.write_line(f"baselines updated: {n} case(s) written to "
                          f"{s.gate.store.path(profile)}")
