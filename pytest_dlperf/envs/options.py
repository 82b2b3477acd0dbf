"""The side environments' options (--dlperf-env-*): where each node caches the environments a ``pip=``
side makes, which installer makes them, and the index they install from; listing or pruning those caches on
every node in place of the tests (``plugin.pytest_cmdline_main``). Light: loaded into every pytest session, it
imports nothing heavy and touches nothing."""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from ..options.argtypes import duration
from ..options.groups import OptionGroup

DEFAULT_CACHE = "~/.cache/pytest-dlperf/envs"  # on each node, in the home of the user the cluster runs as
INSTALLERS = ("auto", "uv", "pip")


@dataclass(frozen=True)
class EnvOptions:
    """How a side's environment is made on every node (docs/ab.md, "Compare two stacks")."""

    cache: str = DEFAULT_CACHE
    installer: str = "auto"
    index_url: str = ""
    find_links: str = ""

    @classmethod
    def from_config(cls, config: pytest.Config) -> EnvOptions:
        get = config.getoption
        return cls(get("dlperf_env_cache"), get("dlperf_env_installer"), get("dlperf_env_index_url") or "",
                   get("dlperf_env_find_links") or "")


def pytest_addoption(parser: pytest.Parser) -> None:
    e = OptionGroup(parser, "dlperf-env", "pytest-dlperf: the environments a side's pip= words make on every node "
                    "(docs/ab.md)")
    e("--dlperf-env-cache", default=DEFAULT_CACHE, metavar="DIR",
      help="where each node keeps the environments made for pip= sides, keyed by the base python and what was "
           "installed, and reused by later sessions (default %(default)s, on each node; dlperf env list|prune)")
    e("--dlperf-env-installer", choices=INSTALLERS, default="auto",
      help="auto (default): uv where the node has it, else the base python's pip; uv or pip: that one")
    e("--dlperf-env-index-url", default=None, metavar="URL",
      help="the package index the nodes install from (default: each node's own pip.conf, PIP_* and UV_* settings)")
    e("--dlperf-env-find-links", default=None, metavar="DIR",
      help="a wheelhouse on each node to install from (with --dlperf-env-index-url, or for nodes offline)")
    e("--dlperf-env-list", action="store_true",
      help="list the environments cached on every node of the cluster the other options name, and run no test "
           "(`dlperf env list -- ARGS` runs it)")
    e("--dlperf-env-prune", type=duration, default=None, metavar="D",
      help="remove the environments unused for D (7d, 12h, 30m; 0: every one not in use) on every node of the "
           "cluster, and run no test (`dlperf env prune --older-than D -- ARGS` runs it)")

