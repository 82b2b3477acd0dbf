"""The dlperf session's hub: one object per pytest session, registered as a plugin.

It owns the cluster and the launchers (one per --backend), turns the options into parametrized
cases, runs each test's case through the measuring order (``orders``), its preflight
(``preflight``) and the baseline gate, keeps the results, and at the end writes the report, the
xdist parts (``xdist``) and the summary (``summary``).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import NoReturn

import pytest

from .. import environment, matrix, reporting
from ..ab.feature import ABSession
from ..ab.options import ABOptions
from ..ab.order import PairedOrder
from ..ab.pairs import PairedCase
from ..ab.preflight import SideNotReady
from ..ab.report import ab_junit_properties
from ..baselines import BaselineError
from ..budget import Budget, session_seconds
from ..clusters.base import Cluster
from .gate import Gate, Outcome
from .gate_options import GateOptions
from ..launchers.base import Launcher
from ..mfu import utilisation
from ..options import RunOptions
from ..reporting.junit import junit_properties
from ..reporting.live import LiveLine
from ..results import CaseResult, ResultSet, summarize
from ..runner import plan_run
from ..specs import CaseSpec, Measurement, Profile, Topology
from . import summary, xdist
from .orders import MeasuringOrder, make_order
from .preflight import CasePreflight
from .signals import sigterm_ignored, sigterm_until_restored


class DLPerfSession:
    """Registered as ``dlperf_session`` by the plugin's front when a test first needs it; the
    ``dlperf`` fixture binds it to each test."""

    def __init__(self, config: pytest.Config, options: RunOptions, ab_options: ABOptions | None = None) -> None:
        self.config = config
        self.options = options
        self.results = ResultSet()
        self.dryrun: list[tuple[str, list[str]]] = []
        self.dryrun_launches = ""  # how many times each case's commands run (launches_text)
        self.failures: dict[str, str] = {}
        self.launchers = self._make_launchers()
        self._check_models()
        self._cluster: Cluster | None = None
        self._restore_sigterm: Callable[[], None] = lambda: None
        self._cases: list[CaseSpec] | None = None
        self.gate = Gate(GateOptions.from_config(config), lambda case: self.launcher(case).frameworks_for(case))
        self.live = LiveLine(config)
        self._budget: Budget | None = None  # made with the first case's measurement
        self._paced: dict[str, bool] = {}  # case name -> whether --dlperf-pace-probe's default probes it
        self.preflight = CasePreflight(self)
        self.ab = ABSession(self, ab_options) if ab_options is not None else None
        self.order: MeasuringOrder = PairedOrder(self, self.ab) if self.ab else make_order(self, options.order)

    # ------------------------------------------------------------------ set-up
    def _make_launchers(self) -> dict[str, Launcher]:
        """One launcher per engine of ``--backend A,B``, in that order (each gets its own matrix)."""
        hook = self.config.pluginmanager.hook
        out = {}
        for backend in self.options.backends:
            launcher = hook.pytest_dlperf_make_launcher(config=self.config, backend=backend)
            if launcher is None:
                known = sorted({b for names in hook.pytest_dlperf_backends(config=self.config) for b in names})
                raise pytest.UsageError(f"--backend: unknown {backend!r}; available: {', '.join(known)}")
            out[backend] = launcher
        return out

    def launcher(self, case: CaseSpec) -> Launcher:
        return self.launchers[case.backend]

    def case_name(self, case: CaseSpec) -> str:
        """The test id and run directory: the case id, after its engine's name when several run."""
        return case.id if len(self.launchers) == 1 else f"{case.backend}-{case.id}"

    def _check_models(self) -> None:
        offered = {m for launcher in self.launchers.values() for m in launcher.models}
        bad = [m for m in self.options.models or [] if m not in offered]
        if bad:
            raise pytest.UsageError(f"--dlperf-model: {', '.join(bad)} not available with --backend "
                                    f"{','.join(self.launchers)}; allowed: {', '.join(sorted(offered))}")

    @property
    def cluster(self) -> Cluster:
        """Built on first use (when the first case runs: the matrix is built from the kind's declared
        shape, not from the cluster), so that collecting touches no node; then checked against that
        shape (matrix.check_built: a mismatch is a one-line usage error, on every use)."""
        if self._cluster is None:
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
            self._cluster = cluster
        matrix.check_built(self.config, self.options, self._cluster)
        return self._cluster

    def profile(self) -> Profile:
        """The profile of the shape the matrix is built from (the cluster is not built for it)."""
        return matrix.profile_of_shape(matrix.session_shape(self.config, self.options, lambda: self.cluster))

    def measurement(self) -> Measurement:
        p, o = self.profile(), self.options
        # An explicit --dlperf-warmup-iters or --dlperf-iters means exactly that many (unless --dlperf-window-seconds).
        warm = p.warmup_iters if o.warmup_iters is None else o.warmup_iters
        window = o.window_seconds if o.window_seconds is not None else (0.0 if o.iters else p.window_seconds)
        recording = bool(self.config.getoption("dlperf_update_baselines"))
        repeats = o.repeats or (p.record_repeats if recording and p.record_repeats else p.repeats)
        budget = session_seconds(o.budget, o.repeats is not None, recording, p.budget)
        return Measurement(
            warmup_iters=warm, iters=o.iters or p.iters, repeats=repeats, timeout=o.timeout,
            max_warmup_iters=p.max_warmup_iters if o.warmup_iters is None else warm,
            window_seconds=window, max_iters=p.max_iters if window else 0,
            min_repeats=min(p.min_repeats or 1, repeats) if budget else 0, budget=budget,
            pace_probe=o.pace_probe == "on")

    def case_measurement(self, case: CaseSpec, m: Measurement) -> Measurement:
        """The session's measurement for one case: with the pace probe where the option's default
        (auto) probes this case, as its baseline was recorded (``Gate.paced_baseline``). Decided
        once per case, after its preflight has found its framework's version (its profile). An A/B
        session probes only when asked (--dlperf-pace-probe): its pairs are what correct for the
        host, and the probe would share each launch's core (docs/ab.md)."""
        if self.options.pace_probe != "auto" or self.ab is not None:
            return m
        name = self.case_name(case)
        if name not in self._paced:
            self._paced[name] = self.gate.contexts.paced_baseline(self.cluster.nodes(), case, self._probed_frameworks(case))
        return replace(m, pace_probe=self._paced[name])

    def budget(self, m: Measurement) -> Budget:
        if self._budget is None:
            self._budget = Budget(m.budget)
        return self._budget

    @staticmethod
    def cases_after(item: pytest.Item | None) -> list[str]:
        """The topologies of the dlperf tests the session runs after this one (what the budget keeps
        time for; "" for a test that does not take its case from the matrix)."""
        items = item.session.items if item is not None else []
        if item not in items:
            return []
        after = [it for it in items[items.index(item) + 1:] if "dlperf" in getattr(it, "fixturenames", ())]
        cases = [getattr(it, "callspec", None) and it.callspec.params.get("dlperf_case") for it in after]
        return [c.topology.name if isinstance(c, CaseSpec) else "" for c in cases]

    def cases(self) -> list[CaseSpec]:
        """model x precision x topology, the ladder cut to the cluster's declared shape (matrix.py)."""
        if self._cases is None:
            shape = matrix.session_shape(self.config, self.options, lambda: self.cluster)
            self._cases = matrix.cases(self.launchers.values(), self.options, shape)
        return self._cases

    # ------------------------------------------------------------------ pytest hooks
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call":
            self.gate.recorder.test_finished(report.nodeid, report.passed)

    @property
    def worker_id(self) -> str | None:
        return getattr(self.config, "workerinput", {}).get("workerid")

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        try:
            self._report_unjudged()
            self._flush_baselines(session)
            if self.worker_id is not None:
                xdist.write_part(self, self.worker_id)
                return
            merged = xdist.merge_parts(self)
            if merged and self.gate.recorder.written:  # a serial session stored its speedups when it wrote
                try:
                    self.gate.recorder.fill_scaling(self.results)
                except (BaselineError, OSError, TimeoutError) as exc:
                    self.gate.notes.append(
                        f"baselines: speedups NOT added to the entries written by xdist workers: {exc}")
                    session.exitstatus = pytest.ExitCode.TESTS_FAILED
            if self.results.results or self.dryrun or self.failures or (self.ab is not None and self.ab.records):
                self.write_report()
        finally:
            if self.ab is not None:
                self.ab.close()
            if self._cluster is not None:
                # A second SIGTERM (CI runners send one to the whole group) must not cut the clean-up short.
                ignore = sigterm_ignored()
                try:
                    self._cluster.close()
                finally:
                    ignore()
                    self._restore_sigterm()

    def _report_unjudged(self) -> None:
        """Cases measured in rounds whose tests never judged them (an interrupt, ``-x``, a test that
        failed before its run): their runs go into the report unjudged, their errors into failures."""
        unjudged = self.order.unjudged()
        if not unjudged:
            return
        m = self.measurement()
        for name, got in unjudged.items():
            if got.runs:
                self.results.add(self.summarize(got.case, m, got.runs))
            if got.error is not None:
                self.failures[name] = got.error
        self.gate.notes.append(f"{len(unjudged)} case(s) measured in rounds were not judged (their tests did "
                               f"not run to their measurement): {', '.join(unjudged)}")

    def _flush_baselines(self, session: pytest.Session) -> None:
        """--update-baselines: write the passed cases; a store that cannot be written fails the run."""
        if self.gate.recorder.pending and self.preflight.fingerprints is not None:
            # a short session has probed a few times, maybe all in one of the host's slow spells, and
            # a recording that keeps a slow figure makes this machine look faster than itself later
            self.preflight.look_again("at-recording")
        try:
            self.gate.recorder.flush()
        except (BaselineError, OSError, TimeoutError) as exc:
            self.gate.notes.append(f"baselines NOT updated: {exc}")
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter) -> None:  # noqa: ANN001 - pytest's TerminalReporter
        summary.write_summary(self, terminalreporter)

    def launches_text(self) -> str:
        """How many launches each case takes, for the dry-run: the command runs that many times."""
        if self.ab is not None:
            return self.ab.launches_text()
        return summary.launches_text(self.measurement(), self.options,
                                     bool(self.config.getoption("dlperf_update_baselines")))

    # ------------------------------------------------------------------ running
    def run(self, case: CaseSpec, item: pytest.Item | None = None) -> CaseResult:
        """Measure the case over its repeats and gate it (with --dlperf-dryrun: print its commands)."""
        m = self.measurement()
        if self.options.dryrun:
            self._dry_run(case, m)
        got = self.order.measure(case, item, m)
        if got.outcome is not None:  # its preflight's skip or fail, raised in its own test
            raise got.outcome
        if got.error is not None:  # outside the except block: the report shows the nodes, not a chain
            self.failures[self.case_name(case)] = got.error
            pytest.fail(got.error, pytrace=False)
        self._frameworks_into(case, got.runs)
        result = self.results.add(self.summarize(case, m, got.runs))
        self.config.pluginmanager.hook.pytest_dlperf_case_result(config=self.config, result=result)
        return self._judge(case, item, result, got.paired)

    def summarize(self, case: CaseSpec, m: Measurement, runs: list) -> CaseResult:
        """The case's runs summarized, with its MFU against the peak of the nodes it ran on."""
        result = summarize(case, self.case_measurement(case, m), runs)
        probes = list(self.preflight.fingerprints.nodes.values()) if self.preflight.fingerprints else []
        result.utilisation = utilisation(result.median, [r.meta for r in runs], case.model, case.precision,
                                         case.topology.devices_per_node, probes)
        return result

    def _dry_run(self, case: CaseSpec, m: Measurement) -> NoReturn:
        """--dlperf-dryrun: keep the case's per-node commands for the summary, and skip its test."""
        name = self.case_name(case)
        try:
            sides = [(f"{name} [{side.label}{f' files at {side.commit[:12]}' if side.commit else ''}]", side)
                     for side in self.ab.sides.values()] if self.ab else [(name, None)]
        except SideNotReady as exc:
            pytest.fail(str(exc), pytrace=False)
        for label, side in sides:
            _, cmds = plan_run(self.cluster, self.launcher(case), case, self.case_measurement(case, m), side=side)
            self.dryrun.append((label, [f"{c.node.name}: {self.cluster.render(c)}" for c in cmds]))
        self.dryrun_launches = self.launches_text()
        pytest.skip("dry-run: the per-node commands are printed in the summary")

    def _judge(self, case: CaseSpec, item: pytest.Item | None, result: CaseResult,
               paired: PairedCase | None = None) -> CaseResult:
        """The gate's judgement of the case, against the baseline context its preflight resolved; in
        an A/B session (``paired``) the paired verdict too, and a missing baseline skips nothing."""
        self.preflight.second_look(case, result)
        judgement = self.gate.judge(result, self.cluster.nodes(), item, self.preflight.fingerprints,
                                    reference=self.results.find(case, Topology(1, 1)),
                                    context=self.preflight.contexts.get(self.case_name(case)))
        if item is not None:  # JUnit properties (--junitxml), as record_property writes them
            item.user_properties.extend(junit_properties(result))
            if paired is not None:
                item.user_properties.extend(ab_junit_properties(paired))
        if paired is not None:  # an A/B session's case (PairedOrder)
            fails, said = self.ab.judge(paired)
            if judgement.outcome is Outcome.FAIL:
                pytest.fail(f"{judgement.message}\n{said}", pytrace=False)
            if fails:
                pytest.fail(said, pytrace=False)
            return result
        if judgement.outcome is Outcome.FAIL:
            pytest.fail(judgement.message, pytrace=False)
        if judgement.outcome is Outcome.SKIP:
            pytest.skip(judgement.message)
        return result

    def _frameworks_into(self, case: CaseSpec, runs: list) -> None:
        """A program the project did not write reports no versions (no meta line): the preflight
        probe's versions on node 0 stand in, so its profile and what-changed name them too."""
        for run in runs:
            if "frameworks" not in run.meta:
                run.meta["frameworks"] = self._probed_frameworks(case)

    def _probed_frameworks(self, case: CaseSpec) -> dict[str, str]:
        """The case's frameworks as the preflight probe found them on node 0: name -> version."""
        return self.preflight.probed_frameworks(case)

    def write_report(self) -> Path:
        env = environment.collect(self.results, self.cluster if self._cluster else None)
        pf = self.preflight
        env["hardware_fingerprints"] = pf.fingerprints.to_dict() if pf.fingerprints else None
        env["node_frameworks"] = pf.node_frameworks
        if self.gate.git:  # the repository under test, read once by the gate ("+dirty": uncommitted changes)
            env["git"] = {"commit": self.gate.git.removesuffix("+dirty"), "dirty": self.gate.git.endswith("+dirty")}
        if self._budget is not None and self._budget.seconds > 0:
            b = self._budget
            env["budget"] = {"seconds": b.seconds, "used": round(b.used, 1),
                             "cut": {k: {"repeats": t, "planned": n} for k, (t, n) in b.cut.items()}}
        return reporting.write_results(self.options.report_dir, self.results, env, self.options.to_dict(),
                                       self.failures, ab=self.ab.section() if self.ab is not None else None)


class BoundRunner:
    """The ``dlperf`` fixture: the session bound to the requesting test (for its dlperf marker)."""

    def __init__(self, session: DLPerfSession, item: pytest.Item) -> None:
        self.session, self.item = session, item

    def run(self, case: CaseSpec) -> CaseResult:
        return self.session.run(case, self.item)
