"""The order a history's lines are read in: the repository's commit order where it holds every run's commit
(topological, oldest first; the runs of one commit by time), else time order, and why. A change point then
falls between two commits as the repository orders them, not as the nights happened to run them."""
from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from .runs import Run


def by_commit(runs: Sequence[Run], repo: Path | None) -> tuple[list[Run], str]:
    """``runs`` in commit order and a line saying so, or in time order and a line saying why."""
    timed = sorted(runs, key=lambda r: (r.created, str(r.path)))
    commits = {r.commit.removesuffix("+dirty") for r in runs if r.commit}
    if not commits:
        return timed, "time order (no run recorded its commit)"
    if repo is None:
        return timed, "time order (no repository given to order the commits: --repo PATH)"
    try:
        got = subprocess.run(["git", "-C", str(repo), "rev-list", "--topo-order", "--reverse", "--all"],
                             capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return timed, f"time order (git rev-list in {repo} failed: {exc})"
    if got.returncode != 0:
        return timed, f"time order ({repo} is not a git repository holding the runs' commits)"
    position: dict[str, int] = {}
    for i, full in enumerate(got.stdout.split()):
        position.setdefault(full[:12], i)
    missing = sorted(c for c in commits if c[:12] not in position)
    if missing:
        return timed, (f"time order ({len(missing)} of the runs' {len(commits)} commits are not in {repo}, e.g. "
                       f"{missing[0]}: fetch them, or a shallow clone's history: git fetch --unshallow)")
    if any(not r.commit for r in runs):
        return timed, "time order (some runs recorded no commit)"
    ordered = sorted(runs, key=lambda r: (position[r.commit.removesuffix("+dirty")[:12]], r.created, str(r.path)))
    return ordered, f"commit order ({repo}'s history; the runs of one commit by time)"
