"""The session's cluster, built on first use (when the first case runs; the matrix is built from the
kind's declared shape), so that collecting touches no node; then checked against that shape on every
use; closed at the session's end, SIGTERM unwinding like Ctrl-C from its build until then."""
from __future__ import annotations

from collections.abc import Callable

import pytest

from .. import matrix
from ..clusters.base import Cluster
from ..clusters.progress import shown
from ..clusters.turns import Turns
from ..options.core import RunOptions
from .signals import sigterm_ignored, sigterm_until_restored


class ClusterHolder:
    """The cluster of ``--dlperf-cluster KIND``, made through the plugins' hook on first ``get``."""

    def __init__(self, config: pytest.Config, options: RunOptions) -> None:
        self.config, self.options = config, options
        self.built: Cluster | None = None
        self._restore_sigterm: Callable[[], None] = lambda: None

    def get(self) -> Cluster:
        """The cluster (a mismatch with the matrix's shape is a one-line usage error, on every use)."""
        if self.built is None:
            self.built = self._make()
        matrix.check_built(self.config, self.options, self.built)
        return self.built

    def _make(self) -> Cluster:
        hook = self.config.pluginmanager.hook
        kinds = sorted({k for names in hook.pytest_dlperf_cluster_kinds(config=self.config) for k in names})
        if self.options.cluster not in kinds:
            raise pytest.UsageError(f"--dlperf-cluster: unknown kind {self.options.cluster!r}; installed: "
                                    f"{', '.join(kinds)} (a plugin adds one through pytest_dlperf_cluster_kinds "
                                    "and pytest_dlperf_make_cluster)")
        # From now until the session ends, SIGTERM (a CI job's timeout) unwinds like Ctrl-C, while a
        # cluster is provisioned and between cases too, so that what it holds is stopped (close()).
        restore = sigterm_until_restored()
        try:
            cluster = hook.pytest_dlperf_make_cluster(config=self.config, options=self.options)
        except BaseException:
            restore()
            raise
        if cluster is None:
            restore()
            raise pytest.UsageError(f"--dlperf-cluster {self.options.cluster}: the plugin that names this "
                                    "kind made no cluster")
        self._restore_sigterm = restore
        cluster.turns = Turns(say=shown(self.config))  # a session that waits for its nodes says who holds them
        return cluster

    def close(self) -> None:
        """Stop what the cluster holds; a second SIGTERM (CI runners send one to the whole group) must not
        cut the clean-up short."""
        if self.built is None:
            return
        ignore = sigterm_ignored()
        try:
            self.built.close()
        finally:
            ignore()
            self._restore_sigterm()
