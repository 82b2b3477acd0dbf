"""What a run ran on and what changed: the versions a workload's meta line reports, pytest-dlperf's own
version and the repository's commit. Compared between a baseline and a session ("what changed since
the baseline"), between an A/B session's sides, and shown by dlperf history."""
from __future__ import annotations

import functools
import subprocess
from importlib import metadata
from pathlib import Path

from .identity import Repository, digest


def run_versions(meta: dict, git: str | None = None) -> dict[str, str]:
    """What a run ran on, as the workload's meta line says (frameworks, Python, CUDA, NCCL, the
    engine's communication backend, the device model), pytest-dlperf's version and the repository's
    commit: compared between baselines and sessions, and between an A/B session's sides."""
    out = {k: str(meta[k]) for k in ("python", "backend", "cuda", "cudnn", "nccl", "driver") if meta.get(k)}
    out.update({k: str(v) for k, v in (meta.get("frameworks") or {}).items()})
    ranks = [r for r in meta.get("ranks") or [] if isinstance(r, dict) and r.get("device")]
    if ranks:
        out["device"] = str(ranks[0]["device"])
    own = own_version()
    if own:
        out["pytest_dlperf"] = own
    if git:
        out["git"] = git
    return out


@functools.lru_cache(maxsize=1)
def own_version() -> str | None:
    """The installed pytest-dlperf's version, read once (a metadata lookup costs about 1 ms)."""
    try:
        return metadata.version("pytest-dlperf")
    except metadata.PackageNotFoundError:
        return None


def git_commit(root: Path | None) -> str | None:
    """The repository's commit (12 hex digits, "+dirty" with uncommitted changes), None outside git."""
    if root is None:
        return None
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


GIT_TIMEOUT = 30


def _git(root: Path, *args: str) -> subprocess.CompletedProcess | None:
    """``git -C root ARGS``; None where git is missing or hangs."""
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, timeout=GIT_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        return None


def _toplevel(root: Path | None) -> Path | None:
    """The top of the git repository that holds ``root`` (None: none, or git missing)."""
    if root is None:
        return None
    top = _git(root, "rev-parse", "--show-toplevel")
    return Path(top.stdout.decode().strip()) if top is not None and top.returncode == 0 else None


def _outside(root: Path, exclude: Path | None) -> list[str]:
    """The pathspec of the whole tree but ``exclude`` (the baseline store) where it lies inside it."""
    if exclude is None:
        return ["--", "."]
    try:
        rel = Path(exclude).resolve().relative_to(Path(root).resolve())
    except ValueError:
        return ["--", "."]
    return ["--", ".", f":(exclude){rel.as_posix()}"] if str(rel) != "." else ["--", "."]


def repository(root: Path | None, exclude: Path | None = None) -> Repository | None:
    """The repository under test: its full commit and a digest of its uncommitted changes to tracked
    files outside ``exclude`` (the baseline store: a new recording is not a software change); None
    outside git."""
    top_dir = _toplevel(root)
    head = _git(top_dir, "rev-parse", "--verify", "HEAD") if top_dir is not None else None
    if top_dir is None or head is None or head.returncode != 0:
        return None
    diff = _git(top_dir, "diff", "HEAD", "--binary", *_outside(top_dir, exclude))
    if diff is None or diff.returncode != 0:
        return None
    return Repository(head.stdout.decode().strip(), digest(diff.stdout.decode(errors="replace")) if diff.stdout else None)


def same_tree(root: Path | None, a: str, b: str, exclude: Path | None = None) -> bool:
    """Whether commits ``a`` and ``b`` hold the same files outside ``exclude`` (False where either is
    not in the repository: nothing can be proven equal)."""
    if a == b:
        return True
    top_dir = _toplevel(root)  # the whole repository, not the rootdir's part of it
    if top_dir is None:
        return False
    res = _git(top_dir, "diff", "--quiet", a, b, *_outside(top_dir, exclude))
    return res is not None and res.returncode == 0


def reachable(root: Path | None, commit: str) -> bool:
    """Whether the repository at ``root`` holds ``commit`` (a shallow clone may not)."""
    if root is None:
        return False
    res = _git(root, "cat-file", "-e", f"{commit}^{{commit}}")
    return res is not None and res.returncode == 0


def changes(before: dict[str, str], now: dict[str, str]) -> list[str]:
    """``name before -> now`` for every fact that differs or appeared (pytest-dlperf's own version last)."""
    keys = sorted(set(before) | set(now), key=lambda k: (k == "pytest_dlperf", k))
    return [f"{k} {before.get(k, '(not recorded)')} -> {now.get(k, '(none)')}"
            for k in keys if before.get(k) != now.get(k) and k in now]


def suite_place(root: Path, invocation_dir: Path, args: list[str]) -> dict[str, object] | None:
    """Where a session's tests live, for the commands printed later (``dlperf history --check``'s bisect):
    the repository's top and the session's test paths relative to it (pytest's positional arguments, a
    node id's ``::`` part dropped); None outside git or where a path lies outside the repository."""
    top = _toplevel(root)
    if top is None:
        return None
    paths = []
    for arg in args:
        where = Path(str(arg).split("::", 1)[0])
        where = where if where.is_absolute() else invocation_dir / where
        try:
            paths.append(where.resolve().relative_to(top.resolve()).as_posix())
        except ValueError:
            return None
    return {"top": str(top), "paths": paths}
