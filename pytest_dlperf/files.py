"""Writing files so that a reader never sees half of one (results, baselines), and refusing to write
over what is not a regular file (a link, a FIFO, a device, a directory)."""
from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


class OutputPathError(ValueError):
    """An output path that must not be written: the message is the one line to show."""


def _default_mode() -> int:
    """The mode a plain ``open(path, "w")`` gives a new file: 0666 less the umask (mkstemp's is 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def check_target(path: Path) -> None:
    """Refuses an output path where something other than a regular file is (a link is not followed
    and not replaced), or whose parent is a file; a missing path is fine (its directories are made)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        st = None  # a parent is a file: found below
    except OSError as exc:
        raise OutputPathError(f"{path}: cannot be looked at ({exc.strerror or exc})") from None
    if st is not None:
        if stat.S_ISREG(st.st_mode):
            return
        raise OutputPathError(f"{path}: {_kind(st.st_mode)}, not a regular file: dlperf writes its outputs as regular "
                              "files and does not replace anything else; give another path or remove it")
    for parent in path.parents:
        try:
            st = os.stat(parent)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise OutputPathError(f"{path}: its directory {parent} cannot be looked at "
                                  f"({exc.strerror or exc})") from None
        if not stat.S_ISDIR(st.st_mode):
            raise OutputPathError(f"{path}: {parent} is a file, not a directory: give a path in a directory")
        return


def atomic_write_bytes(path: Path, data: bytes, regular_only: bool = False) -> None:
    """Write through a temporary file in the same directory and rename: never half-written. The file
    gets the mode a plain write would (reports and baselines are meant to be shared). ``regular_only``:
    refuse (OutputPathError) a path where anything but a regular file is, checked again just before
    the rename."""
    if regular_only:
        check_target(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, _default_mode())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if regular_only:
            check_target(path)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str, regular_only: bool = False) -> None:
    """``atomic_write_bytes`` of the text in UTF-8."""
    atomic_write_bytes(path, text.encode("utf-8"), regular_only)
