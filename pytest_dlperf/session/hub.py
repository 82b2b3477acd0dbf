"""The dlperf session's hub: one object per pytest session, registered as a plugin.

It wires the session's parts once (the engines, the cluster, the gate, the readiness checks, the software
identities, the mode: stored baselines or A/B, and the measuring order the mode gives), turns the
options into parametrized cases, runs each test's case (measure, summarize, judge, conclude), keeps the
results, and at the end writes the report, the xdist parts (``xdist``) and the summary (``summary``). The
orders and the A/B feature get a ``Bench`` (what they use of the session), never the session itself.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import NoReturn

import pytest

from .. import explain, matrix, reporting
from ..ab.confirm import SideBySide
from ..ab.explain import profile_once
from ..ab.options import ABOptions, ConfirmOptions
from ..baselines import BaselineError
from ..clusters.base import Cluster, ClusterError
from ..measure import Bench, Checkpoints, Measured, compile_caches
from ..measure.budget import Budget, session_seconds
from ..measure.more import more_launches
from ..measure.runner import plan_run
from ..nodechecks import software as software_probe
from ..options.core import RunOptions
from ..reporting.junit import junit_properties
from ..reporting.live import LiveLine
from ..results import environment
from ..results.cases import CaseResult, ResultSet, summarize
from ..results.mfu import utilisation
from ..results.verdict import Judgement
from ..software.identity import NodeSoftware, Software
from ..software.provenance import reachable, run_versions, suite_place
from ..specs import CaseSpec, Measurement, Profile, Topology
from . import record_modes, summary, xdist
from .cluster import ClusterHolder
from .confirm import Confirmation, Lookups
from .engines import Engines
from .failures import CaseFailures
from .gate import Gate
from .gate_options import GateOptions
from .mode import Mode, Stored
from .readiness import CaseReadiness
from .software import SoftwareIdentities


class DLPerfSession:
    """Registered as ``dlperf_session`` by the plugin's front when a test first needs it; the
    ``dlperf`` fixture binds it to each test."""

    def __init__(self, config: pytest.Config, options: RunOptions, ab_options: ABOptions | None = None,
                 confirm_options: ConfirmOptions | None = None) -> None:
        self.config = config
        self.options = options
        self.results = ResultSet()
        self.dryrun: list[tuple[str, list[str]]] = []
        self.dryrun_launches = ""  # how many times each case's commands run (launches_text)
        self.failures = CaseFailures()
        self.engines = Engines(config, options)
        self.clusters = ClusterHolder(config, options)
        self._cases: list[CaseSpec] | None = None
        self.gate = Gate(GateOptions.from_config(config), lambda case: self.engines.launcher(case).frameworks_for(case))
        self.live = LiveLine(config)
        self._budget: Budget | None = None  # made with the first case's measurement
        self._paced: dict[str, bool] = {}  # case name -> whether --dlperf-pace-probe's default probes it
        self._interpreters: dict[tuple[str, int], dict[int, NodeSoftware]] = {}  # (path, nodes) -> _interpreter
        self.software = SoftwareIdentities(lambda: self.cluster, Path(config.rootpath), self.gate.options.directory,
                                           options.report_dir / "software", self.gate.note)
        self.readiness = CaseReadiness(lambda: self.cluster, self.engines, self.gate, self.failures, options,
                                       self.software)
        self.found = self.readiness.found  # what the readiness checks found: the one result the hub reads
        self.bench = Bench(cluster=lambda: self.cluster, launcher=self.engines.launcher, name=self.engines.name,
                           measurement=self.case_measurement, ready=self.readiness.run, live=self.live,
                           budget=self.budget, report_dir=options.report_dir, launch_log=options.launch_log,
                           checkpoints=Checkpoints(said=self.gate.note))
        confirm_options = confirm_options or ConfirmOptions.from_config(config)
        self.explain = confirm_options.explain
        self.mode: Mode = self._make_mode(ab_options, confirm_options)
        self.order = self.mode.order(self.bench, options)

    def _make_mode(self, ab_options: ABOptions | None, confirm_options: ConfirmOptions) -> Mode:
        """Stored baselines (a screen failure attributed and confirmed side by side), or an A/B session with
        --dlperf-candidate."""
        if ab_options is None:
            go = self.gate.options
            sides = SideBySide(self.bench, self.engines.entry_scripts(), self.readiness.frameworks,
                               confirm_options)
            lookups = Lookups(
                recorded=lambda result, item: self.gate.recorded(result, self.cluster.nodes(), item,
                                                                 self.found.context(self.case_name(result.case))),
                reachable=lambda commit: reachable(go.root, commit), same_tree=self.software.same_tree,
                interpreter=self._interpreter)
            return Stored(Confirmation(confirm_options, sides, lookups, go.hardware_fails, go.noisy_fails,
                                       self.live.said, self.gate.note))
        from ..ab.feature import ABSession
        from ..ab.mode import ABMode

        return ABMode(ABSession(ab_options, self.bench, self.engines.entry_scripts(),
                                self.readiness.frameworks, self.gate.options.tolerance, self._recorded_words))

    def _recorded_words(self, case: CaseSpec) -> list[str]:
        """The spec words of the case's recorded software (an A/B side ``recorded``), from the baseline its
        readiness checks resolved and the nodes' software it probed; SideNotReady says why there are none."""
        from ..ab.interpreter import SideNotReady
        from ..ab.recorded import side_words

        ctx = self.found.context(self.case_name(case))
        if ctx is None or ctx.entry is None:
            where = f" in profile {ctx.profile!r}" if ctx is not None else ""
            raise SideNotReady(f"no baseline{where} to run again: record it first (pytest --update-baselines), or "
                               "name the side's software (python=, pip=)")
        nodes = self.cluster.nodes()[:case.topology.nodes]
        try:
            return side_words(ctx.file.software_for(ctx.entry), self.software.of_nodes(nodes),
                              lambda path: self._interpreter(path, case.topology.nodes))
        except ValueError as exc:
            raise SideNotReady(str(exc)) from None

    # ------------------------------------------------------------------ set-up
    @property
    def cluster(self) -> Cluster:
        """Built on first use (``ClusterHolder``): collecting touches no node."""
        return self.clusters.get()

    def case_name(self, case: CaseSpec) -> str:
        return self.engines.name(case)

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
            pace_probe=o.pace_probe == "on", compile_cache=o.compile_cache, cold_launches=o.cold_launches,
            data_dir=o.data_dir, data_workers=o.data_workers, drop_caches=o.drop_caches,
            checkpoint=o.checkpoint, checkpoint_dir=o.checkpoint_dir,
            # the profile's repeats adapt to the spread; --dlperf-repeats R runs R, a recording every repeat
            settle_launches=0 if o.repeats or recording else min(p.settle_launches, repeats),
            settle_cv=p.settle_cv)

    def case_measurement(self, case: CaseSpec, m: Measurement) -> Measurement:
        """The session's measurement for one case: with the pace probe where the option's default
        (auto) probes this case, as its baseline was recorded (``BaselineContexts.paced_baseline``).
        Decided once per case, after its readiness checks found its framework's version (its profile).
        The mode may probe only when asked (A/B: its pairs correct for the host)."""
        if self.options.pace_probe != "auto" or not self.mode.probes_by_default:
            return m
        name = self.case_name(case)
        if name not in self._paced:
            self._paced[name] = self.gate.contexts.paced_baseline(self.cluster.nodes(), case,
                                                                  self.readiness.frameworks(case))
        return replace(m, pace_probe=self._paced[name])

    def _interpreter(self, path: str, nodes: int) -> dict[int, NodeSoftware] | str:
        """The software of interpreter ``path`` on the first ``nodes`` nodes (by node order), or why it cannot
        run there: whether a recorded python still holds the recorded software. Its answer is kept for the
        session, per path and node count (every case of one recording asks the same); a failure is asked again."""
        key = (path, nodes)
        if key not in self._interpreters:
            on = [replace(n, python=path) for n in self.cluster.nodes()[:nodes]]
            got = software_probe.probe(self.cluster, on, self.options.report_dir / "software" / "recorded-python")
            if got.errors:
                return "; ".join(got.errors)
            self._interpreters[key] = {i: got.found[n.name] for i, n in enumerate(on)}
        return self._interpreters[key]

    def budget(self, m: Measurement) -> Budget:
        if self._budget is None:
            self._budget = Budget(m.budget)
        return self._budget

    def budget_line(self) -> str | None:
        """The budget's line for the terminal summary (None: no budget, or nothing measured under it)."""
        return self._budget.summary() if self._budget is not None else None

    def cases(self) -> list[CaseSpec]:
        """model x precision x topology, the ladder cut to the cluster's declared shape (matrix.py)."""
        if self._cases is None:
            shape = matrix.session_shape(self.config, self.options, lambda: self.cluster)
            self._cases = matrix.cases(self.engines.launchers.values(), self.options, shape)
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
            if self.results.results or self.dryrun or self.failures or self.mode.has_records():
                self.write_report()
        finally:
            self._drop_compile_caches(None)  # a case whose test never ended (-x, an interrupt)
            self.mode.close()
            self.clusters.close()

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
        if self.gate.recorder.pending and self.found.fingerprints is not None:
            # a short session has probed a few times, maybe all in one of the host's slow spells, and
            # a recording that keeps a slow figure makes this machine look faster than itself later
            self.readiness.look_again("at-recording")
        try:
            self.gate.recorder.flush()
        except (BaselineError, OSError, TimeoutError) as exc:
            self.gate.notes.append(f"baselines NOT updated: {exc}")
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter) -> None:  # noqa: ANN001 - pytest's TerminalReporter
        summary.write_summary(self, terminalreporter)

    def launches_text(self) -> str:
        """How many launches each case takes, for the dry-run: the command runs that many times."""
        return self.mode.launches_text() or summary.launches_text(
            self.measurement(), self.options, bool(self.config.getoption("dlperf_update_baselines")),
            self.gate.options.confirm if self.mode.records_modes else 0, self.mode.confirm_pairs)

    # ------------------------------------------------------------------ running
    def run(self, case: CaseSpec, item: pytest.Item | None = None) -> CaseResult:
        """Measure the case over its repeats, summarize, judge (the screen against its baseline, then the
        mode's settling: attribution and confirmation side by side) and conclude its test (with
        --dlperf-dryrun: print its commands)."""
        m = self.measurement()
        if self.options.dryrun:
            self._dry_run(case, m)
        try:
            got = self._measure(case, item, m)
            result = self._summarize(got, m)
            if self.gate.options.update and self.explain.mode == "always" and self.mode.records_modes:  # stored mode
                self._record_profile(result, m)
            judgement = self._judge(got, item, result, m)
        finally:
            self._drop_compile_caches(case)  # its launches are over: the compiled seeds' caches go
        self.config.pluginmanager.hook.pytest_dlperf_case_result(config=self.config, result=result)
        if item is not None:  # JUnit properties (--junitxml), as record_property writes them
            item.user_properties.extend(junit_properties(result))
        self.mode.conclude(got, item, result, judgement)
        return result

    def _drop_compile_caches(self, case: CaseSpec | None) -> None:
        """Remove the case's (None: every case's left) compiled seed launches' caches from the nodes
        (``measure.compile_caches``); where that fails, the session says which are left."""
        name = self.case_name(case) if case is not None else None
        dirs = self.bench.caches.release(name)
        if dirs:
            log_dir = self.options.report_dir / "runs" / (name or "session") / "dropcache"
            try:
                failed = compile_caches.drop(self.cluster, dirs, log_dir)
            except ClusterError as exc:  # the lease could not be taken
                failed = [str(exc)]
            if failed:
                self.gate.note(f"{case.id if case else 'session'}: inductor caches are left on the nodes ({dirs}): "
                               + "; ".join(failed))

    def _measure(self, case: CaseSpec, item: pytest.Item | None, m: Measurement) -> Measured:
        """The case's launches in the session's order; its readiness skip or fail, or a launch's error,
        ends its test here."""
        got = self.order.measure(case, item, m)
        if got.outcome is not None:  # its readiness skip or fail, raised in its own test
            raise got.outcome
        self._stop_on_error(got)
        return got

    def _summarize(self, got: Measured, m: Measurement) -> CaseResult:
        """The case's result; a recording whose launches fall into modes takes more first."""
        result = self._summarized(got, m)
        more = self.gate.options.confirm if self.mode.records_modes else 0
        if more and self.gate.options.update:
            result = self._record_every_mode(got, m, result, more)
        return result

    def _record_profile(self, result: CaseResult, m: Measurement) -> None:
        """--update-baselines --dlperf-explain always: one profiled launch of the case, never counted, whose summary
        its baseline entry keeps (a later regression that no reference confirms is explained against it)."""
        case = result.case
        got = profile_once(self.bench, case, m, self.explain.steps, "recorded")
        if got.why is None and got.ranks:
            try:
                result.trace_summary = explain.summarize(got.ranks)
            except (ValueError, ZeroDivisionError) as exc:  # a rank without steps
                got.why = f"its profile could not be summarized: {exc}"
        said = "; ".join([got.why] if got.why else got.problems)
        if said:
            self.gate.note(f"{case.id}: its profile is recorded without some ranks: {said}" if result.trace_summary
                           else f"{case.id}: no profile is recorded with its baseline: {said}")

    def _stop_on_error(self, got: Measured) -> None:
        """A launch's error fails the case's test (outside any except block: the report shows the nodes, not a chain)."""
        if got.error is not None:
            self.failures.fail(self.case_name(got.case), got.error)

    def _summarized(self, got: Measured, m: Measurement) -> CaseResult:
        self._frameworks_into(got.case, got.runs)
        return self.results.add(self.summarize(got.case, m, got.runs))

    def _record_every_mode(self, got: Measured, m: Measurement, result: CaseResult, n: int) -> CaseResult:
        """--update-baselines: a case whose launches split into modes takes ``n`` more before it is recorded,
        and the session says what they found (``confirm``); one whose launches are one mode spread beyond
        the gate's bound takes none, and the session says why."""
        why = record_modes.unsettled(result, self.gate.options.cv_bound)
        if why is None or not result.throughputs:
            return result
        if isinstance(why, str):  # one mode, spread by the host: more launches would not make them agree
            self.gate.note(record_modes.host_spread(got.case.id, why))
            return result
        name = self.case_name(got.case)
        self.live.said(f"dlperf {name}: its launches are not one mode yet: {n} more before it is recorded")
        more_launches(self.bench, got, m, n, "m")
        self._stop_on_error(got)
        result = self._summarized(got, m)
        self.gate.note(record_modes.recorded_in_modes(got.case.id, got.case.unit, why, result, n,
                                                 self.gate.options.cv_bound))
        return result

    def summarize(self, case: CaseSpec, m: Measurement, runs: list) -> CaseResult:
        """The case's runs summarized, with its MFU against the peak of the nodes it ran on."""
        result = summarize(case, self.case_measurement(case, m), runs)
        result.utilisation = utilisation(result.median, [r.meta for r in runs], case.model, case.precision,
                                         case.topology.devices_per_node, self.found.probes())
        return result

    def _dry_run(self, case: CaseSpec, m: Measurement) -> NoReturn:
        """--dlperf-dryrun: keep the case's per-node commands for the summary, and skip its test (a multi-node
        case's network interfaces are found first: its commands show the sockets' variables; a compiled
        case's are its first launch's, which keeps its cache for the later ones)."""
        self.readiness.dry_run_ready(case)
        cm = self.case_measurement(case, m)
        for label, side in self.mode.dry_run_sides(self.case_name(case)):
            first = self.bench.caches.next(compile_caches.launch_key(self.case_name(case), side), case, cm)
            _, cmds = plan_run(self.cluster, self.engines.launcher(case), case, cm, side=side, cache=first)
            self.dryrun.append((label, [f"{c.node.name}: {self.cluster.render(c)}" for c in cmds]))
        self.dryrun_launches = self.launches_text()
        pytest.skip("dry-run: the per-node commands are printed in the summary")

    def _judge(self, got: Measured, item: pytest.Item | None, result: CaseResult, m: Measurement) -> Judgement:
        """The gate's screen of the case against the baseline context its readiness checks resolved, then the mode's
        settling of it: a stored session
        attributes and confirms a screen failure side by side; an A/B session's pairs decide in ``conclude``."""
        case = got.case
        software = self._software_of(case, item, result)
        screen = self.gate.judge(result, self.cluster.nodes(), item, self.found.fingerprints,
                                 reference=self.results.find(case, Topology(1, 1)),
                                 context=self.found.context(self.case_name(case)), software=software)
        return self.mode.settle(got, item, result, screen, software, m)

    def _software_of(self, case: CaseSpec, item: pytest.Item | None, result: CaseResult) -> Software | None:
        """What the case ran: its nodes' software, its files, the repository, the stack its runs report."""
        return self.software.for_case(case, self.cluster.nodes(), self.engines.launcher(case).workload_paths(),
                                      Path(str(item.path)) if item is not None and getattr(item, "path", None) else None,
                                      result.runs, run_versions(result.runs[0].meta) if result.runs else {})

    def _frameworks_into(self, case: CaseSpec, runs: list) -> None:
        """A program the project did not write reports no versions (no meta line): the readiness
        probe's versions on node 0 stand in, so its profile and what-changed name them too."""
        for run in runs:
            if "frameworks" not in run.meta:
                run.meta["frameworks"] = self.readiness.frameworks(case)

    def write_report(self) -> Path:
        env = environment.collect(self.results, self.clusters.built)
        env.update(self.found.environment())
        env["software"] = dict(self.software.table)  # each case's "software" names one
        if self.gate.git:  # the repository under test, read once by the gate ("+dirty": uncommitted changes)
            env["git"] = {"commit": self.gate.git.removesuffix("+dirty"), "dirty": self.gate.git.endswith("+dirty")}
            # where the repository and the session's tests are: a printed bisect command runs as printed
            env["git"].update(suite_place(Path(self.config.rootpath), Path(self.config.invocation_params.dir),
                                          list(self.config.args)) or {})
        if self._budget is not None and self._budget.seconds > 0:
            b = self._budget
            env["budget"] = {"seconds": b.seconds, "used": round(b.used, 1),
                             "cut": {k: {"repeats": t, "planned": n} for k, (t, n) in b.cut.items()}}
        return reporting.write_results(self.options.report_dir, self.results, env, self.options.to_dict(),
                                       self.failures, ab=self.mode.section())


class BoundRunner:
    """The ``dlperf`` fixture: the session bound to the requesting test (for its dlperf marker)."""

    def __init__(self, session: DLPerfSession, item: pytest.Item) -> None:
        self.session, self.item = session, item

    def run(self, case: CaseSpec) -> CaseResult:
        return self.session.run(case, self.item)
