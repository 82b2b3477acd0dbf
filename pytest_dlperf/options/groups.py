"""The plugin's option groups: each feature (the core's measurement, gate and reports, each cluster
kind) adds its own options in its own group through :class:`OptionGroup`, which records what the
plugin needs later: the keywords each option was added with, and the short alias it may have.

Every option is --dlperf-*, so the plugin (loaded into every session of the environment) never
takes a name a repository's conftest uses (--model, --iters, --hosts, --tolerance ...). The short
names (the design card's --nodes/--backend/--update-baselines, and the names the cluster kinds were
specified with, ``--cluster slurm --slurm-partition gpu``) are added as aliases by
:func:`add_short_names`, only where no conftest or plugin took them.
"""
from __future__ import annotations

from typing import Any
from weakref import WeakKeyDictionary

import pytest

FLAG_ACTIONS = ("store_true", "store_false", "count")
# The keywords each option was added with, by option string (aliases too). Read from here, not from
# pytest's Argument.attrs(): which keywords that returns differs between pytest versions (9.1 and
# later return the argparse action's __dict__, which has no 'action'; on a GPU machine, 2026-11-25,
# --update-baselines copied from it became an option taking a value).
OPTION_KWARGS: dict[str, dict[str, Any]] = {}
# The short alias of a --dlperf-* option, by the long name (added where free: add_short_names).
ALIASES: dict[str, str] = {}
# The plugin's groups in each parser (a parser's own list: tests build parsers of their own).
_GROUPS: WeakKeyDictionary[pytest.Parser, list[Any]] = WeakKeyDictionary()


class OptionGroup:
    """One option group of the plugin; calling it adds an option (dest ``dlperf_*``) to the group."""

    def __init__(self, parser: pytest.Parser, name: str, description: str, after: str | None = None) -> None:
        self.group = parser.getgroup(name, description, after=after)
        groups = _GROUPS.setdefault(parser, [])
        if not any(g is self.group for g in groups):
            groups.append(self.group)

    def __call__(self, name: str, *, alias: str | None = None, **kwargs: Any) -> None:
        """Add ``name``; ``alias``: its short name, added by add_short_names where free."""
        OPTION_KWARGS[name] = kwargs
        if alias:
            ALIASES[name] = alias
        self.group.addoption(name, **kwargs)


def _plugin_options(parser: pytest.Parser) -> list[tuple[Any, Any]]:
    """(group, option) for every option the plugin's groups hold in this parser."""
    return [(g, opt) for g in _GROUPS.get(parser, []) for opt in g.options]


def value_options(parser: pytest.Parser) -> frozenset[str]:
    """The plugin's option strings (long names and the short aliases added) that take a value."""
    return frozenset(name for _, opt in _plugin_options(parser) for name in opt.names()
                     if OPTION_KWARGS.get(name, {}).get("action") not in FLAG_ACTIONS)


def _names_taken(parser: pytest.Parser) -> set[str]:
    """Option strings already defined by pytest, plugins and the initial conftests."""
    groups = [getattr(parser, "_anonymous", None), *getattr(parser, "_groups", [])]
    return {name for g in groups if g is not None for opt in g.options for name in opt.names()}


def add_short_names(parser: pytest.Parser) -> list[str]:
    """Add the ALIASES of the plugin's options as aliases (same type, default, choices and dest, in
    the option's group), each only where no plugin or conftest took it (called after the initial
    conftests were loaded). Returns the short names left out."""
    taken, skipped = _names_taken(parser), []
    for group, opt in _plugin_options(parser):
        for long in opt.names():
            short = ALIASES.get(long)
            if short is None:
                continue
            if short in taken:
                skipped.append(short)
                continue
            attrs = {k: v for k, v in OPTION_KWARGS[long].items()
                     if k in ("type", "default", "action", "choices", "metavar")}
            attrs["dest"] = opt.dest
            OPTION_KWARGS[short] = attrs
            group.addoption(short, **attrs, help=f"same as {long}")
    return skipped
