"""A side's benchmark files at a git revision: a detached worktree of their repository, made
before the first launch and removed when the session ends."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from .sides import Side, SideSpec

GIT_TIMEOUT = 120
PROJECT_FILES = ("pyproject.toml", "setup.py")  # what makes a directory a project pip installs


class WorktreeError(RuntimeError):
    """A side's revision cannot be made ready: names the side, the repository and the fix."""


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=GIT_TIMEOUT)
    except FileNotFoundError:
        raise WorktreeError("git is not installed on this machine: install it (apt install git) for rev=") from None
    except subprocess.TimeoutExpired:
        raise WorktreeError(f"git {' '.join(args)} in {repo} took over {GIT_TIMEOUT}s") from None


def repository_of(path: Path) -> Path | None:
    """The top of the git work tree holding ``path``, or None."""
    res = _git(path.parent, "rev-parse", "--show-toplevel")
    return Path(res.stdout.strip()).resolve() if res.returncode == 0 and res.stdout.strip() else None


def _shallow(top: Path) -> str:
    """The fix for a revision the clone lacks: a shallow clone (CI's default) holds one commit."""
    if _git(top, "rev-parse", "--is-shallow-repository").stdout.strip() == "true":
        return (": the clone is shallow and holds only its last commits; fetch the history (actions/checkout: "
                "fetch-depth: 0; or git fetch --unshallow)")
    return ": give a branch, tag or commit of that repository (one only on the remote: git fetch it first)"


def make_ready(spec: SideSpec, entry_files: list[Path]) -> Side:
    """The side with its worktree at ``spec.rev`` (none without a rev). ``entry_files``: each
    engine's benchmark files, which must all lie in the side's repository."""
    side = Side(spec)
    if spec.rev is None:
        return side
    where = f"--dlperf-{spec.role} rev={spec.rev}"
    if spec.repo is not None:
        repo = Path(spec.repo)
        top = repository_of(repo / "x") if repo.is_dir() else None
        if top is None:
            raise WorktreeError(f"{where}: repo={spec.repo} is not a git repository: name the repository "
                                "that holds the benchmark's files")
    else:
        # install= measures the library in the repository the session runs in (a user's own, where the
        # built-in workloads lie in the installed package); rev= alone, the benchmark's own files
        here = repository_of(Path.cwd() / "x") if spec.install is not None else None
        top = here or (repository_of(entry_files[0]) if entry_files else None)
        if top is None:
            raise WorktreeError(f"{where}: the benchmark's files ({entry_files[0] if entry_files else 'none'}) "
                                "are not in a git repository: give repo=PATH")
    outside = [str(f) for f in entry_files if not Path(f).resolve().is_relative_to(top)]
    if outside and spec.install is None:  # install= measures a library's commit: the benchmark's files stay
        raise WorktreeError(f"{where}: {', '.join(outside)} not in {top}, so rev= would not change them: "
                            "give repo=PATH of the repository that holds them")
    res = _git(top, "rev-parse", "--verify", "--quiet", f"{spec.rev}^{{commit}}")
    if res.returncode != 0:
        raise WorktreeError(f"{where}: no such commit in {top}{_shallow(top)}")
    side.commit, side.repo_root = res.stdout.strip(), top
    tmp = Path(tempfile.mkdtemp(prefix=f"dlperf-{spec.role}-"))
    res = _git(top, "worktree", "add", "--detach", str(tmp / "tree"), side.commit)
    if res.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise WorktreeError(f"{where}: git worktree add failed in {top}: {(res.stderr.strip().splitlines() or ['no message'])[-1]}")
    side.files_root = tmp / "tree"
    if spec.install is not None:
        project = (side.files_root / spec.install).resolve()
        if not project.is_relative_to(side.files_root) or not any((project / f).is_file() for f in PROJECT_FILES):
            remove(side)
            raise WorktreeError(f"--dlperf-{spec.role} install={spec.install}: no project there at {side.commit[:12]} "
                                f"(no {' or '.join(PROJECT_FILES)}): give the project's path in that repository")
        side.project = project
    missing = [str(f) for f in entry_files if not side.file(Path(f)).is_file()]
    if missing:
        remove(side)
        raise WorktreeError(f"{where}: {', '.join(missing)} does not exist at {side.commit[:12]}: "
                            "choose a revision that has the benchmark's files")
    return side


def remove(side: Side) -> None:
    """Remove the side's worktree (and its temporary folder); never raises."""
    if side.files_root is None or side.repo_root is None:
        return
    _git(side.repo_root, "worktree", "remove", "--force", str(side.files_root))
    shutil.rmtree(side.files_root.parent, ignore_errors=True)
    _git(side.repo_root, "worktree", "prune")
    side.files_root = None
