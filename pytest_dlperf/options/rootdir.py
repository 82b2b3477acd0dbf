"""Catch an option value that pytest took for a test path when it chose the rootdir.

pytest finds its rootdir and configuration file before it loads plugins, so it does not yet know
that ``--dlperf-baseline-dir /data/bl`` takes a value: ``/data/bl``, a path that exists, counts as a
test path there (pytest's docs, "Finding the rootdir"). The session then runs with rootdir
``/data/bl`` (or ``/``) and no configuration file: ``testpaths`` is not read, so ``pytest
--update-baselines --dlperf-baseline-dir /data/bl`` at a project's root collects every test under
it, and the reports and the default baseline store move. Where that changed the rootdir or the
configuration file, the session stops with a usage error that gives the ``--option=value`` form.
"""
from __future__ import annotations

import inspect
import os
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest


def _exists(value: str) -> bool:
    """pytest's test for a path argument (``safe_exists``: a name too long for the OS is no path)."""
    try:
        return Path(value.split("::")[0]).exists()
    except (OSError, ValueError):
        return False


def separate_path_values(args: Sequence[str], value_options: Iterable[str]) -> list[tuple[str, str]]:
    """The ``(option, value)`` pairs of ``args`` where one of ``value_options`` is followed by its
    value as a separate argument that pytest's rootdir search reads as an existing path."""
    names, found, i = set(value_options), [], 0
    while i < len(args):
        if args[i] == "--":
            break
        if args[i] in names and i + 1 < len(args):
            value = args[i + 1]
            if not value.startswith("-") and _exists(value):
                found.append((args[i], value))
            i += 2
            continue
        i += 1
    return found


def _setup(config: pytest.Config, args: Sequence[str]) -> tuple[Path, Path | None]:
    """(rootdir, configuration file) as pytest determines them from these arguments, now that every
    option is known: their positional arguments only, with their -c, -o and --rootdir."""
    from _pytest.config.findpaths import determine_setup  # no public API computes it

    # pytest's early parse of these arguments, had it known every option (Config keeps its parser private)
    ns = config._parser.parse_known_args(list(args))
    given = {"inifile": ns.inifilename, "override_ini": ns.override_ini,
             "args": list(getattr(ns, "file_or_dir", None) or []), "rootdir_cmd_arg": ns.rootdir or None,
             "invocation_dir": config.invocation_params.dir}
    wanted = inspect.signature(determine_setup).parameters
    result = determine_setup(**{k: v for k, v in given.items() if k in wanted})
    return Path(result[0]), (Path(result[1]) if result[1] else None)


def _where(rootdir: Path, inifile: Path | None) -> str:
    return f"rootdir {rootdir} and " + (f"configuration file {inifile}" if inifile else "no configuration file")


def check(config: pytest.Config, value_options: Iterable[str]) -> None:
    """Raise pytest.UsageError (exit 4) where a dlperf option's value moved the rootdir or the
    configuration file; costs a scan of the arguments otherwise."""
    if hasattr(config, "workerinput") or config.option.help or config.option.version:
        return  # an xdist worker (the controller checked), or a session that runs nothing
    # what pytest's rootdir search read: PYTEST_ADDOPTS, then the command line (ini addopts come later)
    args = [*shlex.split(os.environ.get("PYTEST_ADDOPTS", "")), *map(str, config.invocation_params.args)]
    found = separate_path_values(args, value_options)
    if not found:
        return
    meant_root, meant_ini = _setup(config, args)
    root, ini = Path(config.rootpath), config.inipath
    if (meant_root, meant_ini) == (root, ini):
        return
    opts = ", ".join(f"{opt} {value}" for opt, value in found)
    fixed = " ".join(shlex.quote(f"{opt}={value}") for opt, value in found)
    raise pytest.UsageError(
        f"{opts}: pytest read {'this value' if len(found) == 1 else 'these values'} as a test path when it "
        f"chose its rootdir, before plugin options are known, so this session would run with {_where(root, ini)} "
        f"instead of {_where(meant_root, meant_ini)} (other tests collected, reports and the default baseline "
        f"store elsewhere). Write the value with '=': {fixed}")
