"""``dlperf bisect``: its arguments, the probe loop, and what it prints.

Exit status: 0 a first bad item was found; 1 undecided, or the bad endpoint is not slower (nothing to
bisect); 2 a usage error (arguments, refs, a foreign steps file); 3 a probe failed; 130 interrupted."""
from __future__ import annotations

import argparse
import math
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from . import BisectError, UsageError
from .evidence import ItemVerdict
from .items import Item, git_items, python_items
from .probe import CANDIDATE, REFERENCE, REPORT, Probe, ProbeOutcome, SessionProbe
from .steps import Found, Next, NotBad, ProbeRecord, Steps, next_step, now

MAX_PAIRS = "--dlperf-ab-max-pairs"  # a resume may change it (to take more pairs); the identity leaves it out
DEFAULT_STEPS = "dlperf-bisect.json"

USAGE = """dlperf bisect --repo PATH --good REF --bad REF [--install PATH] [--steps FILE] -- <pytest arguments>
       dlperf bisect --pythons PY1,PY2,... [--steps FILE] -- <pytest arguments>"""

EPILOG = """\
Each probe is one A/B pytest session (docs/ab.md): the good item is the reference, the probed one
the candidate; a case "slower" makes the item bad. With --install, each probed commit of the repository
is installed into an environment made on the nodes (install=PATH of the A/B spec), so a library's
history is bisected, not only a suite's. The bad endpoint is probed first. Session logs
and reports go to <steps file>-probes/ (without .json). Running the same command again resumes:
decided probes are kept. When a probe is undecided the bisect stops and prints the command that
takes more pairs (--dlperf-ab-max-pairs, bigger, after --), which resumes.
Exit: 0 found, 1 undecided or nothing to bisect, 2 usage error, 3 a probe failed, 130 interrupted."""


def add_parser(sub) -> argparse.ArgumentParser:  # noqa: ANN001 - argparse's subparsers
    b = sub.add_parser("bisect", help="the first commit or interpreter that made the benchmarks slower (A/B probes)",
                       usage=USAGE, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    b.add_argument("--repo", type=Path, default=None, metavar="PATH", help="the git repository of the benchmarks")
    b.add_argument("--good", default=None, metavar="REF", help="a commit that is not slower (item 0, the reference)")
    b.add_argument("--bad", default=None, metavar="REF", help="a later commit that is slower (--good's descendant)")
    b.add_argument("--install", default=None, metavar="PATH",
                   help="a project's path in --repo (. for its root): each probed commit of it is installed into an "
                        "environment made on every node, and the benchmarks run there (a library's history)")
    b.add_argument("--pythons", action="append", default=None, metavar="PY1,PY2,...",
                   help="interpreters in order, the first good, the last bad (instead of --repo/--good/--bad)")
    b.add_argument("--steps", type=Path, default=None, metavar="FILE",
                   help=f"the steps file to write and resume from (default ./{DEFAULT_STEPS})")
    return b


def identity_args(args: Sequence[str]) -> list[str]:
    """The pytest arguments less ``--dlperf-ab-max-pairs`` and its value: a resume may take more pairs."""
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a == MAX_PAIRS:
            skip = True
        elif not a.startswith(MAX_PAIRS + "="):
            out.append(a)
    return out


@dataclass(frozen=True)
class Request:
    """One ``dlperf bisect`` command: the items' source, the steps file and pytest's arguments."""

    steps: Path
    pytest_args: list[str]
    repo: Path | None = None
    good: str | None = None
    bad: str | None = None
    pythons: list[str] | None = None
    install: str | None = None
    cwd: Path = field(default_factory=Path.cwd)

    @classmethod
    def from_args(cls, args: argparse.Namespace, pytest_args: Sequence[str]) -> Request:
        """Checked: git or interpreters, not both; no option a probe sets itself."""
        git = (args.repo, args.good, args.bad)
        if args.pythons and any(v is not None for v in git):
            raise UsageError("give either --pythons or --repo/--good/--bad, not both")
        if not args.pythons and None in git:
            raise UsageError("give --repo PATH --good REF --bad REF (a git range) or --pythons PY1,PY2,...")
        if args.install is not None and args.pythons:
            raise UsageError("--install PATH goes with --repo/--good/--bad (a library's commits), not --pythons")
        for a in pytest_args:
            for opt in (REFERENCE, CANDIDATE, REPORT):
                if a == opt or a.startswith(opt + "="):
                    raise UsageError(f"{a}: dlperf bisect sets {opt} for each probe; leave it out of the "
                                     "pytest arguments")
        pythons = [p for word in args.pythons for p in word.split(",")] if args.pythons else None
        steps = (args.steps or Path(DEFAULT_STEPS)).expanduser().absolute()
        repo = args.repo.expanduser().resolve() if args.repo else None
        return cls(steps, list(pytest_args), repo, args.good, args.bad, pythons, args.install)

    def items(self) -> list[Item]:
        if self.pythons is not None:
            return python_items(self.pythons)
        assert self.repo is not None and self.good is not None and self.bad is not None
        return git_items(self.repo, self.good, self.bad, self.install)

    def identity(self) -> dict[str, object]:
        """What makes two commands the same bisect (the steps file keeps it)."""
        source: dict[str, object] = ({"kind": "pythons", "pythons": self.pythons} if self.pythons is not None else
                                     {"kind": "git", "repo": str(self.repo), "good": self.good, "bad": self.bad,
                                      **({"install": self.install} if self.install is not None else {})})
        return {**source, "pytest_args": identity_args(self.pytest_args), "cwd": str(self.cwd)}

    def rerun(self, max_pairs: int | None) -> str:
        """This command again with twice the pairs the undecided session allowed (N where unknown)."""
        words = ["dlperf", "bisect"]
        if self.pythons is not None:
            words += ["--pythons", ",".join(self.pythons)]
        else:
            words += ["--repo", str(self.repo), "--good", str(self.good), "--bad", str(self.bad),
                      *(["--install", self.install] if self.install is not None else [])]
        pairs = str(2 * max_pairs) if max_pairs else "N"
        return shlex.join([*words, "--steps", str(self.steps), "--", *identity_args(self.pytest_args),
                           f"{MAX_PAIRS}={pairs}"])

    @property
    def probes_dir(self) -> Path:
        return self.steps.with_name(self.steps.stem + "-probes")


@dataclass(frozen=True)
class Stopped:
    """A probe was undecided: the search stops there and names no first bad item."""

    index: int
    outcome: ProbeOutcome


def _summary(outcome: ProbeOutcome) -> str:
    """The probe's verdict and the cases that decided it, for its one progress line."""
    deciding = {ItemVerdict.BAD: "slower", ItemVerdict.UNDECIDED: "undecided"}.get(outcome.verdict)
    shown = [(n, c) for n, c in outcome.cases.items() if deciding is None or c.verdict == deciding]
    text = "; ".join(f"{n} {c.describe()}" for n, c in shown[:2])
    more = f"; {len(shown) - 2} more" if len(shown) > 2 else ""
    return f"{outcome.verdict.value.upper()} ({len(shown)} of {len(outcome.cases)} case(s): {text}{more})"


def search(steps: Steps, probe: Probe, pytest_args: Sequence[str], out: TextIO) -> Found | NotBad | Stopped:
    """Probe until the search ends or a probe is undecided; each probe is written to the steps file
    (with ``pytest_args``, the arguments its session had)."""
    while True:
        step = next_step(len(steps.items), steps.decided())
        if not isinstance(step, Next):
            return step
        item = steps.items[step.index]
        out.write(f"dlperf bisect: probe {len(steps.probes) + 1}: item {step.index}/{len(steps.items) - 1} "
                  f"{item.describe()} ... ")
        out.flush()
        started = now()
        try:
            outcome = probe(item)
        except KeyboardInterrupt:
            out.write("interrupted\n")
            raise
        except BaseException:
            out.write("failed\n")
            raise
        steps.record(ProbeRecord(step.index, item.key, outcome.verdict, outcome.cases,
                                 None if outcome.report_dir is None else str(outcome.report_dir),
                                 None if outcome.log is None else str(outcome.log), list(pytest_args),
                                 started, now()))
        out.write(_summary(outcome) + "\n")
        if outcome.verdict is ItemVerdict.UNDECIDED:
            return Stopped(step.index, outcome)


def _evidence(out: TextIO, record: ProbeRecord | None) -> None:
    for name, case in (record.cases.items() if record else ()):
        out.write(f"    {name}: {case.describe()}\n")
    if record and record.report_dir:
        out.write(f"    report: {record.report_dir}\n")


def _print_end(end: Found | NotBad | Stopped, steps: Steps, request: Request, out: TextIO) -> int:
    """The answer and its evidence; the exit status."""
    items, last = steps.items, len(steps.items) - 1
    if isinstance(end, Found):
        out.write(f"dlperf bisect: first bad: {items[end.first_bad].full()}\n")
        _evidence(out, steps.latest(end.first_bad))
        good = items[end.last_good].full()
        out.write(f"dlperf bisect: last good: {good}" + (" (--good, every probe's reference)\n"
                                                         if end.last_good == 0 else "\n"))
        _evidence(out, steps.latest(end.last_good))
        return 0
    if isinstance(end, NotBad):
        out.write(f"dlperf bisect: nothing to bisect: {items[last].describe()} (the bad end) is not slower "
                  f"than {items[0].describe()}:\n")
        _evidence(out, steps.latest(last))
        return 1
    o = end.outcome
    out.write(f"dlperf bisect: stopped undecided at item {end.index}/{last} {items[end.index].describe()}: no "
              f"first bad item is named. Its undecided case(s):\n")
    for name, case in o.cases.items():
        if case.verdict == "undecided":
            out.write(f"    {name}: {case.describe()}\n")
    out.write(f"    log: {o.log}, report: {o.report_dir}\n" if o.log else "")
    out.write(f"Take more pairs (this resumes; the decided probes are kept):\n    {request.rerun(o.max_pairs)}\n")
    return 1


def run(request: Request, probe: Probe | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """The whole command: items, steps file, probes, answer (on ``out``, default stdout). Errors are
    one line on ``err`` (default stderr)."""
    from ..session.signals import sigterm_until_restored  # the session package: imported only to run

    out, err = out or sys.stdout, err or sys.stderr
    steps: Steps | None = None
    restore = sigterm_until_restored()  # SIGTERM ends the probe's session cleanly, as Ctrl-C does
    try:
        items = request.items()
        steps = Steps.open(request.steps, request.identity(), items)
        if probe is None:
            probe = SessionProbe(items[0], request.pytest_args, request.probes_dir, cwd=request.cwd)
        most = 1 + math.ceil(math.log2(len(items) - 1))
        out.write(f"dlperf bisect: {len(items)} items, at most {most} probes ({len(steps.decided())} decided "
                  f"already); steps in {steps.path}\n")
        return _print_end(search(steps, probe, request.pytest_args, out), steps, request, out)
    except BisectError as exc:
        err.write(f"dlperf bisect: {exc}\n")
        return exc.code
    except KeyboardInterrupt:
        where = (f"; the probes so far are in {steps.path}: run the same command to resume" if steps and steps.probes
                 else "; no probe was decided")
        err.write(f"dlperf bisect: interrupted{where}\n")
        return 130
    finally:
        restore()
