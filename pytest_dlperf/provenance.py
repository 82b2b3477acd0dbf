"""What a run ran on and what changed: the versions a workload's meta line reports, pytest-dlperf's own
version and the repository's commit. Compared between a baseline and a session ("what changed since
the baseline"), between an A/B session's sides, and shown by dlperf history."""
from __future__ import annotations

import functools
from importlib import metadata
from pathlib import Path


def run_versions(meta: dict, git: str | None = None) -> dict[str, str]:
    """What a run ran on, as the workload's meta line says (frameworks, Python, CUDA, NCCL, the
    engine's communication backend, the device model), pytest-dlperf's version and the repository's
    commit: compared between baselines and sessions, and between an A/B session's sides."""
    out = {k: str(meta[k]) for k in ("python", "backend", "cuda", "nccl", "driver") if meta.get(k)}
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
    import subprocess

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


def changes(before: dict[str, str], now: dict[str, str]) -> list[str]:
    """``name before -> now`` for every fact that differs or appeared (pytest-dlperf's own version last)."""
    keys = sorted(set(before) | set(now), key=lambda k: (k == "pytest_dlperf", k))
    return [f"{k} {before.get(k, '(not recorded)')} -> {now.get(k, '(none)')}"
            for k in keys if before.get(k) != now.get(k) and k in now]
