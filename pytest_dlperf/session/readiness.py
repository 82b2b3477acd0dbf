"""Whether a case is ready for its first launch (its readiness check): its framework on every node (and, for
an engine that spans nodes, their reach), a real-data case's dataset on every node, its baseline file and context, a hardware probe and its
nodes' software; and the probes again before a recording is written (it keeps each node's best). What they find
goes into one ``Found``; a case that is not ready skips, or fails through the session's ``CaseFailures``."""
from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

import pytest

from ..baselines import BaselineError
from ..baselines.store import SittingsError
from ..clusters.base import Cluster, ClusterError
from ..nodechecks import compiler, dataset, frameworks, hardware, interfaces, reach
from ..options.core import RunOptions
from ..specs import COMPILED, CaseSpec
from .engines import Engines
from .failures import CaseFailures
from .found import Found
from .gate import Gate
from .software import SoftwareIdentities

RECHECKS = 3  # more probes, --dlperf-reprobe-pause s apart, before a recording keeps its fingerprints


class CaseReadiness:
    """The session's readiness checks; what they found is ``found`` (each node's framework versions and best
    hardware fingerprint, each case's baseline context, resolved once)."""

    def __init__(self, cluster: Callable[[], Cluster], engines: Engines, gate: Gate, failures: CaseFailures,
                 options: RunOptions, software: SoftwareIdentities) -> None:
        self.cluster, self.engines, self.gate, self.failures, self.options = cluster, engines, gate, failures, options
        self.software = software
        self.found = Found()
        self._framework_checked: dict[tuple[str, ...], tuple[str, str] | None] = {}
        self._data_checked: dict[tuple[str, ...], str | None] = {}  # (format, nodes) -> the problem, if any
        self._interfaces_checked: dict[tuple[str, ...], str | None] = {}  # nodes -> the problem, if any

    def run(self, case: CaseSpec) -> None:
        """Before the case's first launch: framework, baseline file, hardware probe (skip or fail raised),
        and its nodes' software (once per node set: what its verdicts compare with the recording's)."""
        self.framework_ready(case)
        self.interfaces_ready(case)
        self.data_ready(case)
        self.baseline_ready(case)
        self.probe_hardware(self.engines.name(case))
        self.software.probe(self.cluster().nodes()[:case.topology.nodes])

    def framework_ready(self, case: CaseSpec) -> None:
        """The backend's framework on every node of the case, in one version (and a compiled case's
        compiler): else skip (missing, with the install line) or fail (versions differ), naming the nodes.
        Asked once per node set."""
        cluster, name = self.cluster(), self.engines.name(case)
        nodes = cluster.nodes()[:case.topology.nodes]
        launcher = self.engines.launcher(case)
        fws = launcher.frameworks_for(case)
        key = (*fws, *(n.name for n in nodes), *([COMPILED] if case.compiled else []))
        if key not in self._framework_checked:
            problem = None
            for fw in fws:  # in order: horovod before the framework it was built for
                found = frameworks.check(cluster, nodes, fw, self.options.report_dir / "frameworks" / "-".join(key) / fw)
                for node, version in found.versions.items():
                    self.found.node_frameworks.setdefault(node, {})[fw] = version
                problem = problem or found.problem(launcher.install_hint_for(fw))
            if problem is None and launcher.spans_nodes and len(nodes) > 1:
                problem = reach.check(cluster, nodes, self.options.report_dir / "reach" / "-".join(key))
            if problem is None and case.compiled:  # torch.compile's compiler on every node
                problem = compiler.check(cluster, nodes, self.options.report_dir / "compiler" / "-".join(key))
            self._framework_checked[key] = problem
        problem = self._framework_checked[key]
        if problem is not None:
            outcome, why = problem
            if outcome == "skip":
                pytest.skip(f"--backend {case.backend}: {why}")
            self.failures.fail(name, f"--backend {case.backend}: {why}")

    def interfaces_ready(self, case: CaseSpec) -> None:
        """A multi-node case: each node's network interface for its sockets found (once per node set; kept on
        the cluster for the launches), or the case fails naming the nodes where Gloo would use loopback."""
        nodes = self.cluster().nodes()[:case.topology.nodes]
        if len(nodes) < 2:
            return
        key = tuple(n.name for n in nodes)
        if key not in self._interfaces_checked:
            self._interfaces_checked[key] = interfaces.check(self.cluster(), nodes,
                                                             self.options.report_dir / "interfaces" / "-".join(key))
        problem = self._interfaces_checked[key]
        if problem is not None:
            self.failures.fail(self.engines.name(case), problem)

    def dry_run_ready(self, case: CaseSpec) -> None:
        """A dry-run's checks: the case's data supported (else skipped) and, for a multi-node case, its nodes'
        network interfaces found (its commands show the sockets' variables)."""
        self.data_supported(case)
        self.interfaces_ready(case)

    def data_supported(self, case: CaseSpec) -> None:
        """Skip a real-data case whose engine reads no such data for its model, saying so (also in a dry-run)."""
        reason = self.engines.launcher(case).no_data_reason(case)
        if reason is not None:
            pytest.skip(f"{reason}; its synthetic cases run as before")

    def data_ready(self, case: CaseSpec) -> None:
        """A real-data case: skipped where its engine reads no such data for its model; else the same dataset
        of its format on every node (``nodechecks.dataset``), or the case fails naming the nodes and the fix.
        Asked once per format and node set."""
        self.data_supported(case)
        fmt = self.engines.launcher(case).data_format(case)
        if fmt is None:
            return
        nodes = self.cluster().nodes()[:case.topology.nodes]
        key = (fmt, *(n.name for n in nodes))
        if key not in self._data_checked:
            self._data_checked[key] = dataset.check(self.cluster(), nodes, self.options.data_dir, fmt,
                                                    self.options.report_dir / "dataset" / "-".join(key),
                                                    make=self.options.data_make)
        problem = self._data_checked[key]
        if problem is not None:
            self.failures.fail(self.engines.name(case), problem)

    def baseline_ready(self, case: CaseSpec) -> None:
        """The case's baseline file reads cleanly, else the case fails before its first launch,
        naming the file, what is wrong and the fix (the file is never written). Keeps the case's
        baseline context for the judge."""
        try:
            context = self.gate.contexts.check_file(self.cluster().nodes(), case, self.frameworks(case))
            self.found.contexts[self.engines.name(case)] = context
            return
        except BaselineError as exc:
            why = f"{case.id}: {exc}"
        except SittingsError as exc:
            why = f"{case.id}: not recorded: {exc}"
        self.failures.fail(self.engines.name(case), why)  # outside the except block: the report shows no chain

    def frameworks(self, case: CaseSpec) -> dict[str, str]:
        """The case's frameworks as the readiness probe found them on node 0: name -> version."""
        probed = self.found.node_frameworks.get(self.cluster().nodes()[0].name, {})
        return {fw: probed[fw] for fw in self.engines.launcher(case).frameworks_for(case) if fw in probed}

    def look_again(self, label: str, wanted: Callable[[], bool] = lambda: True) -> None:
        """Probe up to RECHECKS more times, --dlperf-reprobe-pause s apart, while ``wanted()``: this host has
        been seen running 20-50% slower for whole seconds, and the session keeps each node's best."""
        for i in range(RECHECKS):
            if not wanted():
                return
            time.sleep(self.options.reprobe_pause)
            with contextlib.suppress(ClusterError), self.cluster().lease(what=f"the hardware probe {label}{i + 1}"):
                self.probe_hardware(f"{label}{i + 1}")

    def probe_hardware(self, label: str) -> None:
        """Fingerprint the nodes (before every case: the best each node showed is its capability)."""
        self.found.keep(hardware.measure(self.cluster(), self.options.report_dir / "hwprobe" / label,
                                         seconds=self.options.probe_seconds))
