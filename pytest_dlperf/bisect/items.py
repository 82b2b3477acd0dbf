"""The items a bisect searches: the first-parent commits from GOOD to BAD (GOOD first), or a list of
interpreters as given (the first is the good one, the last the bad one). Each item knows its A/B side
(docs/ab.md's SPEC words)."""
from __future__ import annotations

import shlex
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from . import UsageError


@dataclass(frozen=True)
class Item:
    """One thing to probe: ``key`` is the full commit hash or the interpreter's path."""

    key: str
    label: str  # the commit's subject; "" for an interpreter
    spec: str  # the A/B side: ``rev=<hash> repo=<path>`` or ``python=<path>``

    def describe(self) -> str:
        """``0123456789ab subject`` for a commit, the path for an interpreter."""
        return f"{self.key[:12]} {self.label}" if self.label else self.key

    def full(self) -> str:
        """The full hash and subject for a commit, the path for an interpreter."""
        return f"{self.key} {self.label}" if self.label else self.key


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise UsageError("git is not installed (on PATH): install it, or bisect --pythons instead") from None


def _commit(repo: Path, flag: str, ref: str) -> str:
    """The full hash ``ref`` names in ``repo``, or a UsageError naming the option."""
    if ref.startswith("-"):
        raise UsageError(f"{flag} {ref}: not a commit (a ref cannot start with '-')")
    r = _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if r.returncode != 0 or not r.stdout.strip():
        raise UsageError(f"{flag} {ref}: no such commit in {repo}: give a commit, branch or tag of that repository")
    return r.stdout.strip()


def _log(repo: Path, *args: str) -> list[tuple[str, str]]:
    """(hash, subject) per commit of ``git log args``."""
    r = _git(repo, "log", "--format=%H%x1f%s", *args)
    if r.returncode != 0:
        why = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
        raise UsageError(f"git log {' '.join(args)} failed in {repo}: {why}")
    return [tuple(line.split("\x1f", 1)) for line in r.stdout.splitlines() if line]  # type: ignore[misc]


def git_items(repo: Path, good: str, bad: str, install: str | None = None) -> list[Item]:
    """GOOD, then ``git rev-list --first-parent --reverse GOOD..BAD``: full hashes and subjects; with
    ``install``, each side installs that project of the repository at its commit (``install=``)."""
    repo = repo.expanduser().resolve()
    if not repo.is_dir():
        raise UsageError(f"--repo {repo}: no such directory: give the git repository the benchmarks are in")
    if _git(repo, "rev-parse", "--git-dir").returncode != 0:
        raise UsageError(f"--repo {repo}: not a git repository: give the one the benchmarks are in")
    good_hash, bad_hash = _commit(repo, "--good", good), _commit(repo, "--bad", bad)
    if good_hash == bad_hash:
        raise UsageError(f"--good {good} and --bad {bad} are the same commit: nothing lies between them")
    if _git(repo, "merge-base", "--is-ancestor", good_hash, bad_hash).returncode != 0:
        raise UsageError(f"--good {good} is not an ancestor of --bad {bad}: give a good commit that --bad descends from")
    commits = _log(repo, "-1", good_hash) + _log(repo, "--first-parent", "--reverse", f"{good_hash}..{bad_hash}")
    extra = [f"install={install}"] if install is not None else []
    return [Item(h, subject or "(no subject)", shlex.join([f"rev={h}", f"repo={repo}", *extra])) for h, subject in commits]


def python_items(pythons: Sequence[str]) -> list[Item]:
    """The interpreters as given, first good and last bad. Their paths are not checked here: they name
    the interpreter on every node of the session's cluster, which need not be this machine."""
    paths = [p.strip() for p in pythons]
    if any(not p for p in paths):
        raise UsageError(f"--pythons {','.join(pythons)}: an empty path; give paths separated by commas")
    twice = sorted({p for p in paths if paths.count(p) > 1})
    if twice:
        raise UsageError(f"--pythons: {', '.join(twice)} given twice; give each interpreter once, oldest first")
    if len(paths) < 2:
        raise UsageError("--pythons: give at least 2 interpreters (the first good, the last bad), separated by commas")
    return [Item(p, "", shlex.join([f"python={p}"])) for p in paths]
