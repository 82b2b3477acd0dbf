"""Extension points: other plugins add cluster kinds and launch backends through these hooks."""
from __future__ import annotations

import pytest


@pytest.hookspec(firstresult=True)
def pytest_dlperf_make_cluster(config, options):
    """Return a Cluster for ``options.cluster``, or None when this plugin does not provide it.

    :param pytest.Config config: the pytest config.
    :param pytest_dlperf.options.core.RunOptions options: the validated options.
    """


@pytest.hookspec(firstresult=True)
def pytest_dlperf_cluster_shape(config, options):
    """Return the shape (``pytest_dlperf.ClusterShape``) the ``options.cluster`` kind's
    nodes will have, or None when this plugin does not provide the kind.

    Answered from the options alone, with no side effect (no connection, no allocation, no instance):
    the case matrix is built from it while pytest collects, and the cluster, built only when the
    first case runs, is compared with it (a difference in node count, slots or GPU/CPU stops the
    session naming the option that fixes it). ``--dlperf-devices`` overrides the GPU/CPU answer.
    A kind whose plugin implements no shape hook keeps the old behaviour: its cluster is built at
    collection and the matrix is taken from its nodes.

    :param pytest.Config config: the pytest config.
    :param pytest_dlperf.options.core.RunOptions options: the validated options.
    """


@pytest.hookspec
def pytest_dlperf_cluster_kinds(config):
    """Return the cluster kinds this plugin provides (``--dlperf-cluster`` names one of them)."""


@pytest.hookspec(firstresult=True)
def pytest_dlperf_make_launcher(config, backend):
    """Return a Launcher for the backend name, or None when this plugin does not provide it."""


@pytest.hookspec
def pytest_dlperf_backends(config):
    """Return the backend names this plugin provides (for help and usage errors)."""


@pytest.hookspec
def pytest_dlperf_case_result(config, result):
    """Called with every CaseResult as soon as its repeats are measured (before the gate)."""
