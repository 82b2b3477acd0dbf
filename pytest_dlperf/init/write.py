"""Writes a plan's files, all or none: a file that cannot be written takes back those written before it."""
from __future__ import annotations

from pathlib import Path

from .plan import InitError, Plan


def write(p: Plan) -> list[Path]:
    """The written paths; raises InitError (nothing left behind) where one cannot be written."""
    written: list[Path] = []
    made: list[Path] = []
    try:
        for rel, text in p.files.items():
            path = p.root / rel
            for parent in reversed(path.relative_to(p.root).parents[:-1]):
                if not (p.root / parent).exists():
                    (p.root / parent).mkdir()
                    made.append(p.root / parent)
            with open(path, "x", encoding="utf-8") as f:  # "x": never over a file that appeared meanwhile
                written.append(path)
                f.write(text)
    except OSError as exc:
        for path in written:
            path.unlink(missing_ok=True)
        for folder in reversed(made):
            try:
                folder.rmdir()
            except OSError:
                pass
        raise InitError(f"cannot write {exc.filename or p.root}: {exc.strerror or exc}; nothing written") from None
    return written
