"""A probe: one A/B pytest session, the known-good item as the reference and the probed item as the
candidate, run as a subprocess whose output goes to a log file; its verdict is read from the
session's results.json."""
from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from . import ProbeError
from .evidence import AbEvidence, CaseEvidence, EvidenceError, ItemVerdict, read_ab
from .items import Item

# The options a probe sets itself: given among the pytest arguments they are refused.
REFERENCE, CANDIDATE, REPORT = "--dlperf-reference", "--dlperf-candidate", "--dlperf-report"
# pytest's exit codes a session that measured ends with: all passed, or some tests failed (a slower case)
MEASURED = {0: "passed", 1: "tests failed"}
PYTEST_EXITS = {2: "interrupted", 3: "internal error", 4: "usage error", 5: "no tests collected"}


def _wait(proc: subprocess.Popen[bytes]) -> int:
    """The session's exit status. Interrupted (Ctrl-C, or SIGTERM made one), the session gets SIGTERM,
    which a dlperf session unwinds like Ctrl-C, releasing its cluster, and is waited for: never killed
    mid-clean-up, which would leave training processes behind; a second interrupt kills it."""
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        try:
            proc.wait()
        except KeyboardInterrupt:
            proc.kill()
            proc.wait()
        raise


@dataclass(frozen=True)
class ProbeOutcome:
    """What one probe found: the item's verdict and, per case, the evidence for it."""

    verdict: ItemVerdict
    cases: dict[str, CaseEvidence]
    max_pairs: int | None = None  # the session's --dlperf-ab-max-pairs, where it reported it
    report_dir: Path | None = None
    log: Path | None = None

    @classmethod
    def of(cls, evidence: AbEvidence, report_dir: Path | None = None, log: Path | None = None) -> ProbeOutcome:
        return cls(evidence.verdict, evidence.cases, evidence.max_pairs, report_dir, log)


class Probe(Protocol):
    """Judges one item against the known-good one; raises ProbeError where it cannot."""

    def __call__(self, item: Item) -> ProbeOutcome: ...


@dataclass
class SessionProbe:
    """Runs ``python -m pytest <args> --dlperf-reference=<good> --dlperf-candidate=<item>
    --dlperf-report=<dir>/probe-<k>`` in ``cwd``, its output in ``<dir>/probe-<k>.log``. The options are
    written with '=' so that pytest never reads a value as a test path when it chooses its rootdir."""

    reference: Item
    pytest_args: Sequence[str]
    probes_dir: Path
    cwd: Path | None = None
    python: str = field(default_factory=lambda: sys.executable)

    def command(self, item: Item, report_dir: Path) -> list[str]:
        return [self.python, "-m", "pytest", *self.pytest_args, f"{REFERENCE}={self.reference.spec}",
                f"{CANDIDATE}={item.spec}", f"{REPORT}={report_dir}"]

    def _fresh(self) -> tuple[str, Path, Path]:
        """The next probe-<k> whose report directory and log do not exist yet (never a stale results.json)."""
        k = 1
        while (self.probes_dir / f"probe-{k}").exists() or (self.probes_dir / f"probe-{k}.log").exists():
            k += 1
        return f"probe-{k}", self.probes_dir / f"probe-{k}", self.probes_dir / f"probe-{k}.log"

    def __call__(self, item: Item) -> ProbeOutcome:
        name, report_dir, log = self._fresh()
        cmd = self.command(item, report_dir)
        try:
            self.probes_dir.mkdir(parents=True, exist_ok=True)
            with open(log, "x", encoding="utf-8") as fh:
                fh.write(f"# dlperf bisect {name}: {item.describe()}\n$ {shlex.join(cmd)}\n")
                fh.flush()
                code = _wait(subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                              cwd=self.cwd))
        except OSError as exc:
            raise ProbeError(f"{name} ({item.describe()}): cannot run the session ({exc.strerror or exc}); "
                             f"log {log}") from None
        if code not in MEASURED:
            why = PYTEST_EXITS.get(code, f"killed by signal {-code}" if code < 0 else "an error")
            raise ProbeError(f"{name} ({item.describe()}): pytest exited {code} ({why}); see {log} "
                             f"(report dir {report_dir})")
        try:
            evidence = read_ab(report_dir / "results.json")
        except EvidenceError as exc:
            raise ProbeError(f"{name} ({item.describe()}): {exc}; see {log}") from None
        return ProbeOutcome.of(evidence, report_dir, log)
