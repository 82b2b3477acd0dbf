"""The tests' launch census: every launch the tests' sessions make, counted per phase and per test module, real
(an engine that imports a framework on the nodes: torch, TensorFlow, Paddle, Horovod) apart from tiny (the tiny
engine, a test's standard-library program), with their seconds; and the budget of real launches docs/testing.md sets.

tests/run.sh gives both phases one census directory (``DLPERF_TESTS_CENSUS``) and names each phase
(``DLPERF_TESTS_PHASE``); tests/conftest.py points each test's sessions at a launch log of its own there
(``DLPERF_LAUNCH_LOG``: the product's own, measure/launchlog.py), and a test that runs a real workload without a
session (a dry-run's lines pasted into shells) notes it with ``shell_launch``. At the end::

    python3 -m tests.census DIR            # the table, then the budget's check: exit 1 over it
"""
from __future__ import annotations

import os
import re
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pytest_dlperf.measure.launchlog import ENV as LAUNCH_LOG
from pytest_dlperf.measure.launchlog import LaunchLine, append, read
from pytest_dlperf.software.frameworks import TRAINING, short

CENSUS_ENV = "DLPERF_TESTS_CENSUS"  # the run's census directory (tests/run.sh)
PHASE_ENV = "DLPERF_TESTS_PHASE"  # exclusive or shared (tests/run.sh); unset: "run"
TESTING_MD = Path(__file__).resolve().parent.parent / "docs" / "testing.md"
BUDGET_LINE = re.compile(r"^Real-framework launches in one run of the tests, both phases together: (\d+)\.?$", re.M)


def log_path(nodeid: str) -> Path | None:
    """The launch log of the test ``nodeid`` in this run's census (None: no census asked for)."""
    base = os.environ.get(CENSUS_ENV)
    if not base:
        return None
    phase = os.environ.get(PHASE_ENV) or "run"
    where = Path(base) / phase
    where.mkdir(parents=True, exist_ok=True)
    return where / (re.sub(r"[^A-Za-z0-9._\[\]-]+", "_", nodeid.replace("::", "--"))[:200] + ".jsonl")


@contextmanager
def launches_of(nodeid: str) -> Iterator[None]:
    """While the test runs, the sessions it starts (and pytester's in-process ones) log their launches to its file."""
    path = log_path(nodeid)
    if path is None:
        yield
        return
    before = os.environ.get(LAUNCH_LOG)
    os.environ[LAUNCH_LOG] = str(path)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(LAUNCH_LOG, None)
        else:
            os.environ[LAUNCH_LOG] = before


@contextmanager
def shell_launch(case: str, engine: str, frameworks: tuple[str, ...], nodes: int) -> Iterator[None]:
    """A real workload a test runs without a session (a dry-run's lines pasted into shells): counted as a launch."""
    t0, at, ok = time.monotonic(), time.time(), False
    try:
        yield
        ok = True
    finally:
        path = os.environ.get(LAUNCH_LOG)
        append(Path(path) if path else None, LaunchLine(case=case, label="shell", engine=engine, frameworks=frameworks,
                                                       cluster="shell", nodes=nodes,
                                                       seconds=round(time.monotonic() - t0, 3), ok=ok, at=at))


@dataclass
class Tally:
    """Launches and their seconds."""

    n: int = 0
    seconds: float = 0.0

    def add(self, line: LaunchLine) -> None:
        self.n += 1
        self.seconds += line.seconds


REAL = (*TRAINING, "horovod", "perseus", "acspeed")  # what a real engine imports on its nodes


def is_real(line: LaunchLine) -> bool:
    """A launch whose engine imports a training framework (or Horovod) on its nodes: not the tiny engine, nor a
    test's standard-library program whose "framework" is a module of the standard library (json)."""
    return any(short(fw) in REAL for fw in line.frameworks)


def tally(base: Path) -> dict[str, dict[str, dict[str, Tally]]]:
    """phase -> module -> "real"/"tiny" -> Tally, from a census directory."""
    out: dict[str, dict[str, dict[str, Tally]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(Tally)))
    for phase_dir in sorted(p for p in base.iterdir() if p.is_dir()):
        for log in sorted(phase_dir.glob("*.jsonl")):
            module = log.name.split("--", 1)[0].replace("tests_", "", 1)
            for line in read(log):
                out[phase_dir.name][module]["real" if is_real(line) else "tiny"].add(line)
    return out


def budget(text: str | None = None) -> int:
    """The real-framework launch budget docs/testing.md sets (its line ``BUDGET_LINE``)."""
    text = TESTING_MD.read_text() if text is None else text
    m = BUDGET_LINE.search(text)
    if m is None:
        raise ValueError(f"{TESTING_MD}: no line 'Real-framework launches in one run of the tests, both phases "
                         "together: N.' (the launch budget)")
    return int(m.group(1))


def render(counts: dict[str, dict[str, dict[str, Tally]]]) -> list[str]:
    lines = [f"{'phase':<10} {'module':<28} {'real':>5} {'real s':>7} {'tiny':>5} {'tiny s':>7}"]
    total: dict[str, Tally] = defaultdict(Tally)
    for phase, modules in counts.items():
        per: dict[str, Tally] = defaultdict(Tally)
        for module in sorted(modules, key=lambda m: -sum(t.seconds for t in modules[m].values())):
            got = modules[module]
            r, t = got.get("real", Tally()), got.get("tiny", Tally())
            lines.append(f"{phase:<10} {module:<28} {r.n:5d} {r.seconds:7.0f} {t.n:5d} {t.seconds:7.0f}")
            for kind, x in (("real", r), ("tiny", t)):
                per[kind].n += x.n
                per[kind].seconds += x.seconds
        r, t = per["real"], per["tiny"]
        lines.append(f"{phase:<10} {'(the phase)':<28} {r.n:5d} {r.seconds:7.0f} {t.n:5d} {t.seconds:7.0f}")
        for kind in ("real", "tiny"):
            total[kind].n += per[kind].n
            total[kind].seconds += per[kind].seconds
    r, t = total["real"], total["tiny"]
    lines.append(f"{'all':<10} {'':<28} {r.n:5d} {r.seconds:7.0f} {t.n:5d} {t.seconds:7.0f}")
    return lines


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print("usage: python3 -m tests.census DIR (the census directory tests/run.sh gave the tests)", file=sys.stderr)
        return 2
    counts = tally(Path(argv[0]))
    print("launch census (tests/census.py): launches and their seconds, real (a framework on the nodes) and tiny")
    print("\n".join(render(counts)))
    real = sum(t.n for modules in counts.values() for got in modules.values() for k, t in got.items() if k == "real")
    allowed = budget()
    if real > allowed:
        print(f"launch census: {real} real-framework launches, over the budget of {allowed} (docs/testing.md): "
              "move the new ones to the tiny engine or recorded runs, or raise the budget there saying why",
              file=sys.stderr)
        return 1
    print(f"launch census: {real} real-framework launches of the {allowed} docs/testing.md allows")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
