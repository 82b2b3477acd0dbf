"""What the tests need is installed by tests/setup.sh, once, before they run; a test finds it or
says to run that script (tests install nothing themselves)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

SETUP = "bash tests/setup.sh"


def require_program(path: Path, package: str) -> Path:
    """``path`` exists, else RuntimeError naming the package and the set-up step."""
    if not path.exists():
        raise RuntimeError(f"{path} is missing: run `{SETUP}` (it installs Debian's {package})")
    return path


def require_module(module: str, what: str) -> None:
    """``import module`` works, else RuntimeError naming what installs it."""
    importlib.invalidate_caches()
    if importlib.util.find_spec(module) is None:
        raise RuntimeError(f"Python module {module!r} is missing: run `{SETUP}` (it installs {what})")
