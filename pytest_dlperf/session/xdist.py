"""Under pytest-xdist: each worker writes its part of the session (results, failures, dry-run
commands, gate notes and writes, probes) and the controller merges the parts into its own."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import reporting
from ..results.cases import result_from_dict

if TYPE_CHECKING:
    from .hub import DLPerfSession


def write_part(session: DLPerfSession, worker_id: str) -> None:
    """A worker's part, where it has anything to say."""
    s = session
    if s.results.results or s.dryrun or s.failures or s.gate.notes:
        reporting.write_part(s.options.report_dir, s.options.session_token, worker_id,
                             s.results, s.failures, s.dryrun,
                             {"notes": s.gate.notes, "written": s.gate.recorder.written, **s.found.to_part(),
                              "software": s.software.table})


def merge_parts(session: DLPerfSession) -> int:
    """Fold the workers' parts into this (the controller's) session; how many there were (0 outside xdist).
    Each part's results come back as CaseResults with their Verdicts (``result_from_dict``)."""
    s = session
    parts = reporting.read_parts(s.options.report_dir, s.options.session_token)
    for part in parts:
        for case in part["cases"]:
            s.results.add(result_from_dict(case))
        s.failures.update(part["failures"])
        s.dryrun.extend((c, lines) for c, lines in part["dryrun"])
        extra = part.get("extra", {})
        s.gate.notes.extend(n for n in extra.get("notes", []) if n not in s.gate.notes)
        for profile, n in extra.get("written", {}).items():
            s.gate.recorder.written[profile] = s.gate.recorder.written.get(profile, 0) + n
        s.software.table.update(extra.get("software") or {})
        s.found.merge_part(extra)
    return len(parts)
