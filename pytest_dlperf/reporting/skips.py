"""The terminal's answer to "why N skipped?": the session's skip reasons grouped (a case id in a
reason does not split a group), how many cases each, and the command to run next where the reason
names one (record baselines, install a framework). Without it the reason sat in ``-rs`` and summary.md."""
from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

# A case id or key inside a reason: "resnet50-fp32-bs8-64px-1n1g", "ddp/bert-base-fp32-bs4-seq32-2n1g"
_CASE = re.compile(r"(?:[\w.]+/)?[\w.]+(?:-[\w.]+)*-\d+n\d+g\b")
_INSTALL = re.compile(r"is not installed on (?P<nodes>[^:]+): install it there with (?P<cmd>.+?)\.?$")
SHOWN = 6  # case names listed per group, then "and N more"


@dataclass
class SkipGroup:
    """Skips for one reason: the reason with case ids as <case>, the cases, what to run next."""

    reason: str
    cases: list[str] = field(default_factory=list)
    next_step: str | None = None


def reason_of(report: object) -> str:
    """The skip message of a pytest report (its longrepr is (path, line, "Skipped: message"))."""
    longrepr = getattr(report, "longrepr", None)
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr or "")
    return text.removeprefix("Skipped: ").strip()


def _name(nodeid: str) -> str:
    m = re.search(r"\[(.+)\]$", nodeid)
    return m[1] if m else nodeid


def next_step(reason: str, args: Sequence[str]) -> str | None:
    """The command the reason asks for, filled with this session's own arguments where it is pytest."""
    if "--update-baselines" in reason and "--update-baselines" not in args:
        return shlex.join(["pytest", *args, "--update-baselines"])
    m = _INSTALL.search(reason)
    if m:
        return f"on {m['nodes']}: {m['cmd']}"
    return None


def group(reports: Sequence[object], args: Sequence[str] = ()) -> list[SkipGroup]:
    """The skips grouped by reason, the largest group first."""
    groups: dict[str, SkipGroup] = {}
    for r in reports:
        reason = reason_of(r)
        key = re.sub(r"^<case> \w+: ", "", _CASE.sub("<case>", reason))  # "<case> throughput: no baseline..."
        g = groups.setdefault(key, SkipGroup(key, next_step=next_step(reason, args)))
        g.cases.append(_name(getattr(r, "nodeid", "?")))
    return sorted(groups.values(), key=lambda g: -len(g.cases))


def lines(reports: Sequence[object], args: Sequence[str] = ()) -> list[str]:
    """The summary's lines: per reason, the count and cases, and the next command."""
    out = []
    for g in group(reports, args):
        shown = ", ".join(g.cases[:SHOWN]) + (f" and {len(g.cases) - SHOWN} more" if len(g.cases) > SHOWN else "")
        out += [f"{len(g.cases)} skipped: {g.reason}", f"  cases: {shown}"]
        if g.next_step:
            out.append(f"  next: {g.next_step}")
    return out


def write(terminalreporter: object, args: Sequence[str] = ()) -> None:
    """The section in pytest's terminal summary, when anything was skipped."""
    tr = terminalreporter
    found = lines(tr.stats.get("skipped", []), args)
    if found:
        tr.write_sep("=", "dlperf: why cases were skipped, and what to run next")
        for line in found:
            tr.write_line(line)
