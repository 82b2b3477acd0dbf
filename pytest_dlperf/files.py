"""Writing files so that a reader never sees half of one (results, baselines)."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _default_mode() -> int:
    """The mode a plain ``open(path, "w")`` gives a new file: 0666 less the umask (mkstemp's is 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def atomic_write_text(path: Path, text: str) -> None:
    """Write through a temporary file in the same directory and rename: never half-written. The file
    gets the mode a plain write would (reports and baselines are meant to be shared)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, _default_mode())
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
