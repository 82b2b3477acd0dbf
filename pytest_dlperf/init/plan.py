"""What ``dlperf init`` writes, resolved from its request: the suite's files and the two CI recipes,
each with its content, checked before anything is written."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..ab.worktree import PROJECT_FILES, WorktreeError, repository_of
from ..formats import FORMATS
from ..launchers.external import ExternalBenchmark
from . import origin, recipes, suite
from .workload import Workload, WorkloadError, parse

NAME = "train"  # the suite's --dlperf-backend name
WORKLOAD_ONLY = ("--format", "--model", "--batch-size", "--size", "--launch", "--framework")  # of --workload


class InitError(ValueError):
    """A request ``dlperf init`` cannot carry out: one line naming the problem and the fix."""


@dataclass(frozen=True)
class InitRequest:
    """The command line of ``dlperf init``."""

    root: Path
    workload: str | None = None
    format: str | None = None
    builtin: bool = False
    library: bool = False
    models: tuple[str, ...] = ()
    batch_size: int = 8
    size: int = 32
    launch: str | None = None
    framework: str = "torch"
    suite_dir: str = "perf"
    dlperf_from: str | None = None  # the pip requirement the recipes install pytest-dlperf with (None: as installed)
    given: tuple[str, ...] = ()  # the options given on the command line, for those --builtin has no use for


@dataclass(frozen=True)
class Plan:
    """The files to write (relative to ``root``, each with its text) and the commands to run next."""

    root: Path
    files: dict[str, str] = field(default_factory=dict)
    suite_dir: str = "perf"
    notes: tuple[str, ...] = ()  # what it did not write, and why

    @property
    def next_commands(self) -> list[tuple[str, str]]:
        d = self.suite_dir
        return [(f"pytest {d}", "the first run: trains every case and skips each, naming the next command"),
                (f"pytest {d} --update-baselines", f"record this machine's baselines into {d}/baselines/"),
                (f"pytest {d}", "the gated run: a slow-down beyond the tolerance, confirmed, fails (exit 1)"),
                (f"git add {d} .github && git commit -m 'dlperf: training benchmarks'", "")]


def _top(root: Path) -> Path:
    if not root.is_dir():
        raise InitError(f"{root} is not a directory: give the repository's root (dlperf init [DIR])")
    try:
        top = repository_of(root / "x")  # (it asks of a file's folder)
    except WorktreeError as exc:  # no git, or it hung
        raise InitError(str(exc)) from None
    if top is None:
        raise InitError(f"{root} is not in a git repository: the pull-request recipe compares its commits; "
                        f"run `git init {root}` first")
    if top != root.resolve():
        raise InitError(f"{root} is inside the repository {top}, not its root: run `dlperf init {top}` (the "
                        "recipes go to its .github/workflows/)")
    return top


def _workload(req: InitRequest, top: Path) -> tuple[Workload, ExternalBenchmark]:
    try:
        work = parse(req.workload or "", top, req.launch)
    except WorkloadError as exc:
        raise InitError(str(exc)) from None
    if req.format is None:
        raise InitError(f"--workload needs --format: the parser of its output, one of {', '.join(FORMATS)}")
    if req.format not in FORMATS:
        raise InitError(f"--format {req.format}: no such parser; one of {', '.join(FORMATS)}")
    models = req.models or (work.script.stem,)
    try:  # the harness's own checks, so that what is written loads
        bench = ExternalBenchmark(name=NAME, program=work.program, format=req.format, framework=req.framework,
                                  launch=work.launch, files=(top / work.script,), models=models,
                                  sizes={p: {m: (req.batch_size, req.size) for m in models} for p in ("cpu", "gpu")})
    except ValueError as exc:
        raise InitError(f"--workload: {exc}") from None
    return work, bench


def plan(req: InitRequest) -> Plan:
    """Every file ``req`` asks for, with its text; raises InitError before anything is written."""
    if req.builtin == (req.workload is not None):
        raise InitError("give --workload \"python train.py ...\" (your training command) or --builtin (the "
                        "built-in suite), one of the two")
    if req.batch_size < 1 or req.size < 1:
        raise InitError("--batch-size and --size are per-device counts: give whole numbers of at least 1")
    if "/" in req.suite_dir.strip("/") or req.suite_dir in ("", ".", ".."):
        raise InitError(f"--suite-dir {req.suite_dir!r}: give one folder name under the repository's root, e.g. perf")
    unused = [o for o in req.given if o in WORKLOAD_ONLY] if req.builtin else []
    if unused:
        raise InitError(f"{', '.join(unused)}: --builtin runs the built-in suite, whose models and sizes are its own; "
                        f"leave {'it' if len(unused) == 1 else 'them'} out, or give --workload instead")
    top = _top(req.root)
    library = req.library
    if library and not any((top / f).is_file() for f in PROJECT_FILES):
        raise InitError(f"--library: {top} has no {' or '.join(PROJECT_FILES)}: the recipe installs the repository "
                        "as a project at each commit (rev=REF install=.); leave --library out for training code")
    d = req.suite_dir.strip("/")
    files: dict[str, str] = {}
    if req.builtin:
        files[f"{d}/pytest.ini"] = suite.pytest_ini(backend=None)
        files[f"{d}/dlperf_train.py"] = suite.builtin_test()
    else:
        work, bench = _workload(req, top)
        files[f"{d}/pytest.ini"] = suite.pytest_ini(backend=NAME)
        files[f"{d}/conftest.py"] = suite.conftest(bench, work, d)
        files[f"{d}/dlperf_train.py"] = suite.external_test()
    files[f"{d}/baselines/README.md"] = suite.baselines_readme(d)
    files[f"{d}/.gitignore"] = suite.GITIGNORE
    notes = []
    if req.dlperf_from is not None:
        spec = req.dlperf_from.strip()
        if not spec:
            raise InitError("--dlperf-from '': give the pip requirement that installs pytest-dlperf on a runner, e.g. "
                            "'pytest-dlperf @ git+https://github.com/ORG/pytest-dlperf@COMMIT'")
    else:
        got = origin.installed()
        spec = got.spec
        if spec is None:
            notes.append(f"pytest-dlperf was installed {got.how}: the workflows' install step says to fill in its line "
                         "and fails until you do (or run dlperf init again with --dlperf-from SPEC, a pip requirement)")
    setup = recipes.Setup.of(top, d, library=library, dlperf_spec=spec)
    if req.builtin and not library:
        notes.append(f"no {recipes.PULL_REQUEST}: the built-in suite runs none of this repository's files, so its "
                     "commits would run the same; with --library each side installs the repository at its commit")
    else:
        files[recipes.PULL_REQUEST] = recipes.pull_request(setup)
    files[recipes.NIGHTLY] = recipes.nightly(setup)
    there = [rel for rel in files if (top / rel).exists() or (top / rel).is_symlink()]
    if there:
        raise InitError(f"{', '.join(there)} already exist{'s' if len(there) == 1 else ''} in {top}: nothing written "
                        "(move them away, or give another --suite-dir)")
    return Plan(top, files, d, tuple(notes))
