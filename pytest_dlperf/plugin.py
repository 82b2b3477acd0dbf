"""pytest entry point (``pytest11``): options, hookspecs, and the session object."""
from __future__ import annotations

import pytest

from . import builtin, hookspecs
from .clusters.ssh_options import add_ssh_options
from .gating import add_gate_options
from .options import add_options, from_config
from .session import DLPerfSession


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)
    add_ssh_options(parser)
    add_gate_options(parser)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "dlperf(tolerance=, speedup_tolerance=, efficiency_tolerance=): per-test gate "
        "tolerances (fractions, e.g. tolerance=0.03)")
    if not config.pluginmanager.has_plugin("dlperf_builtin"):
        config.pluginmanager.register(builtin, "dlperf_builtin")
    config.pluginmanager.register(DLPerfSession(config, from_config(config)), "dlperf_session")


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.pluginmanager.get_plugin("dlperf_session")
    if session is not None:
        config.pluginmanager.unregister(session)
