"""The dlperf session: one object per pytest session, registered as a plugin.

It owns the cluster and the launchers (one per --backend), turns the options into parametrized cases, runs them
(by default in rounds: the first matrix test launches every case once a round, and each test judges its own
case's runs; ``--dlperf-order case``: each test its case's launches back to back), keeps the results, and at
the end writes the report and prints the summary tables.
"""
from __future__ import annotations

import contextlib
import signal
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from . import environment, matrix, reporting
from .baselines import BaselineError, verdict_table
from .baselines.store import SittingsError
from .budget import Budget, session_seconds
from .clusters.base import Cluster, ClusterError
from .gating import Gate, GateOptions, verdict_from_dict
from .launchers.base import Launcher
from .reporting.live import LiveLine
from .options import RunOptions
from .preflight import frameworks, hardware, reach
from .results import CaseResult, ResultSet, result_from_dict, summarize
from .runner import RunFailed, plan_run, run_case
from .specs import CaseSpec, Measurement, Profile, Topology

RECHECKS = 3  # more probes, --dlperf-reprobe-pause s apart, before a HARDWARE verdict on probe figures alone


def _sigterm(handler) -> Callable[[], None]:  # noqa: ANN001 - a signal handler or SIG_IGN
    """Set SIGTERM's handler (main thread only); the returned function puts the previous one back."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.signal(signal.SIGTERM, handler)
    return lambda: signal.signal(signal.SIGTERM, previous)


def _interrupt(signum, frame):  # noqa: ANN001
    raise KeyboardInterrupt(f"signal {signum}")


def sigterm_until_restored() -> Callable[[], None]:
    """SIGTERM raises KeyboardInterrupt (pytest then ends the session through sessionfinish) until
    the returned function restores the previous handler."""
    return _sigterm(_interrupt)


def sigterm_ignored() -> Callable[[], None]:
    """Ignore SIGTERM until the returned function puts the previous handler back."""
    return _sigterm(signal.SIG_IGN)


ORDER_TEXT = {"rounds": ", in rounds (every case once a round, --dlperf-order rounds)",
              "case": ", back to back (--dlperf-order case)"}

# What the dry-run says of the pace probe (pace.py) in front of CPU nodes' commands.
PACE_TEXT = {"on": "; the pace probe in front of each CPU node's command (--dlperf-pace-probe)",
             "off": "",
             "auto": ("; the pace probe in front of each CPU node's command as for a case with no baseline or "
                      "one recorded with the probe; a case whose baseline was recorded without it runs "
                      "without it (--dlperf-no-pace-probe: never)")}


@dataclass
class Measured:
    """One case's launches, taken in rounds before its test ran: its runs and the error that
    stopped them, or the skip or fail its preflight raised (raised again in its own test)."""

    case: CaseSpec
    runs: list = field(default_factory=list)
    taken: list[float] = field(default_factory=list)  # seconds of each launch
    error: str | None = None
    outcome: BaseException | None = None


def _skipped(item: pytest.Item) -> bool:
    """A test marked skip, or skipif on a plain true condition: the rounds do not measure its case."""
    if item.get_closest_marker("skip") is not None:
        return True
    return any(m.args and all(isinstance(a, bool) and a for a in m.args) for m in item.iter_markers("skipif"))


class DLPerfSession:
    """Registered as ``dlperf_session`` by the plugin's front when a test first needs it; the
    ``dlperf`` fixture binds it to each test."""

    def __init__(self, config: pytest.Config, options: RunOptions) -> None:
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
        self.fingerprints: hardware.Fingerprints | None = None
        self.node_frameworks: dict[str, dict[str, str]] = {}  # node -> framework -> version
        self._framework_checked: dict[tuple[str, ...], tuple[str, str] | None] = {}
        self.gate = Gate(GateOptions.from_config(config))
        self.live = LiveLine(config)
        self._budget: Budget | None = None  # made with the first case's measurement
        self._measured: dict[str, Measured] = {}  # case name -> launches taken in rounds, until its test runs
        self._rounds_taken = False  # rounds run once a session, from the first matrix test on
        self._paced: dict[str, bool] = {}  # case name -> whether --dlperf-pace-probe's default probes it

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
        once per case, after its preflight has found its framework's version (its profile)."""
        if self.options.pace_probe != "auto":
            return m
        name = self.case_name(case)
        if name not in self._paced:
            self._paced[name] = self.gate.paced_baseline(self.cluster.nodes(), case, self._probed_frameworks(case))
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
            self.gate.test_finished(report.nodeid, report.passed)

    @property
    def worker_id(self) -> str | None:
        return getattr(self.config, "workerinput", {}).get("workerid")

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        try:
            self._report_unjudged()
            self._flush_baselines(session)
            if self.worker_id is not None:
                if self.results.results or self.dryrun or self.failures or self.gate.notes:
                    reporting.write_part(self.options.report_dir, self.options.session_token, self.worker_id,
                                         self.results, self.failures, self.dryrun,
                                         {"notes": self.gate.notes, "written": self.gate.written,
                                          "fingerprints": self.fingerprints.to_dict() if self.fingerprints else None,
                                          "node_frameworks": self.node_frameworks})
                return
            merged = self._merge_worker_parts()
            if merged and self.gate.written:  # a serial session stored its speedups when it wrote
                try:
                    self.gate.fill_scaling(self.results)
                except (BaselineError, OSError, TimeoutError) as exc:
                    self.gate.notes.append(
                        f"baselines: speedups NOT added to the entries written by xdist workers: {exc}")
                    session.exitstatus = pytest.ExitCode.TESTS_FAILED
            if self.results.results or self.dryrun or self.failures:
                self.write_report()
        finally:
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
        if not self._measured:
            return
        m = self.measurement()
        for name, got in self._measured.items():
            if got.runs:
                self.results.add(summarize(got.case, self.case_measurement(got.case, m), got.runs))
            if got.error is not None:
                self.failures[name] = got.error
        self.gate.notes.append(f"{len(self._measured)} case(s) measured in rounds were not judged (their tests did "
                               f"not run to their measurement): {', '.join(self._measured)}")
        self._measured.clear()

    def _merge_worker_parts(self) -> int:
        """Under pytest-xdist, fold the workers' results into this (the controller's) session;
        returns how many workers' parts there were (0 outside xdist)."""
        parts = reporting.read_parts(self.options.report_dir, self.options.session_token)
        for part in parts:
            for case in part["cases"]:
                self.results.add(result_from_dict(case))
            self.failures.update(part["failures"])
            self.dryrun.extend((c, lines) for c, lines in part["dryrun"])
            extra = part.get("extra", {})
            self.gate.notes.extend(n for n in extra.get("notes", []) if n not in self.gate.notes)
            for profile, n in extra.get("written", {}).items():
                self.gate.written[profile] = self.gate.written.get(profile, 0) + n
            for node, fws in (extra.get("node_frameworks") or {}).items():
                self.node_frameworks.setdefault(node, {}).update(fws)
            if extra.get("fingerprints"):  # each worker probed the nodes: keep each node's best
                self._keep(hardware.Fingerprints.from_dict(extra["fingerprints"]))
        return len(parts)

    def _flush_baselines(self, session: pytest.Session) -> None:
        """--update-baselines: write the passed cases; a store that cannot be written fails the run."""
        if self.gate.pending and self.fingerprints is not None:
            # a short session has probed a few times, maybe all in one of the host's slow spells, and
            # a recording that keeps a slow figure makes this machine look faster than itself later
            self._look_again("at-recording")
        try:
            self.gate.flush()
        except (BaselineError, OSError, TimeoutError) as exc:
            self.gate.notes.append(f"baselines NOT updated: {exc}")
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not (self.results.results or self.dryrun or self.failures):
            return
        tr = terminalreporter
        if self.dryrun:
            how = f" ({self.dryrun_launches})" if self.dryrun_launches else ""  # unknown on an xdist controller
            tr.write_sep("=", f"dlperf dry-run: per-node commands{how}")
            for case_id, lines in self.dryrun:
                tr.write_line(f"# {case_id}")
                for line in lines:
                    tr.write_line(line)
        if self.results.results:
            tr.write_sep("=", "dlperf results")
            for line in reporting.summary_tables(self.results).splitlines():
                tr.write_line(line)
            for line in reporting.engine_table(self.results).splitlines():
                tr.write_line(line)
        # Derived from the results, so xdist workers' verdicts (merged as results) are included.
        verdicts = [verdict_from_dict(v) for r in self.results.results for v in (r.verdict or {}).values()]
        table = verdict_table(verdicts)
        if table or self.gate.notes or self.gate.written:
            tr.write_sep("=", "dlperf baseline gate")
            for line in table.splitlines():
                tr.write_line(line)
            for note in self.gate.notes:
                tr.write_line(note)
            for profile, n in self.gate.written.items():
                tr.write_line(f"baselines updated: {n} case(s) written to "
                              f"{self.gate.store.path(profile)}")
        line = self._budget.summary() if self._budget is not None else None
        if line:
            tr.write_line(line)
        tr.write_line(f"dlperf report: {self.options.report_dir / 'results.json'}")

    def launches_text(self) -> str:
        """How many launches each case takes, for the dry-run: the command runs that many times."""
        m = self.measurement()
        if m.budget and m.min_repeats < m.repeats:
            return (f"each case runs {m.min_repeats}-{m.repeats} times: further launches while the "
                    f"{m.budget:g} s budget affords them" + ORDER_TEXT[self.options.order]
                    + PACE_TEXT[self.options.pace_probe])
        what = ": recording a baseline" if self.config.getoption("dlperf_update_baselines") else ""
        text = f"each case runs {m.repeats} time{'s' if m.repeats != 1 else ''}{what}"
        return (text + ORDER_TEXT[self.options.order] if m.repeats > 1 else text) + PACE_TEXT[self.options.pace_probe]

    # ------------------------------------------------------------------ running
    def run(self, case: CaseSpec, item: pytest.Item | None = None) -> CaseResult:
        """Measure the case over its repeats and gate it (with --dlperf-dryrun: print its commands)."""
        m = self.measurement()
        if self.options.dryrun:
            _, cmds = plan_run(self.cluster, self.launcher(case), case, self.case_measurement(case, m))
            self.dryrun.append((self.case_name(case), [f"{c.node.name}: {self.cluster.render(c)}" for c in cmds]))
            self.dryrun_launches = self.launches_text()
            pytest.skip("dry-run: the per-node commands are printed in the summary")
        name = self.case_name(case)
        if self._in_rounds(case, item) and name not in self._measured:
            self._measure_in_rounds(item, m)
        own = item is not None and self._matrix_case(item) == case  # another test's run() measures anew
        got = self._measured.pop(name, None) if own else None
        if got is None:
            runs, error = self._measure(case, item, m)
        elif got.outcome is not None:  # its preflight's skip or fail, raised in its own test
            raise got.outcome
        else:
            runs, error = got.runs, got.error
        if error is not None:  # outside the except block: the report shows the nodes, not a chain
            self.failures[self.case_name(case)] = error
            pytest.fail(error, pytrace=False)
        self._frameworks_into(case, runs)
        result = self.results.add(summarize(case, self.case_measurement(case, m), runs))
        self.config.pluginmanager.hook.pytest_dlperf_case_result(config=self.config, result=result)
        self._second_look(case, result)
        judgement = self.gate.judge(result, self.cluster.nodes(), case.backend, item, self.fingerprints,
                                    reference=self.results.find(case, Topology(1, 1)))
        if item is not None:  # JUnit properties (--junitxml), as record_property writes them
            item.user_properties.extend(junit_properties(result))
        if judgement.outcome == "fail":
            pytest.fail(judgement.message, pytrace=False)
        if judgement.outcome == "skip":
            pytest.skip(judgement.message)
        return result

    @staticmethod
    def _matrix_case(item: pytest.Item) -> CaseSpec | None:
        """The case a test takes from the matrix (its ``dlperf_case`` parameter), if it is a dlperf test."""
        if "dlperf" not in getattr(item, "fixturenames", ()):
            return None
        case = getattr(item, "callspec", None) and item.callspec.params.get("dlperf_case")
        return case if isinstance(case, CaseSpec) else None

    def _in_rounds(self, case: CaseSpec, item: pytest.Item | None) -> bool:
        """Whether this test starts the session's rounds: the order is rounds, none ran yet, and the
        test measures its own matrix case (a test that builds another case is measured on its own)."""
        return (self.options.order == "rounds" and not self._rounds_taken and item is not None
                and item in item.session.items and self._matrix_case(item) == case)

    def _measure_in_rounds(self, item: pytest.Item, m: Measurement) -> None:
        """``--dlperf-order rounds``: launch every matrix case still to run in this session once per
        round, this test's first, for as many rounds as the repeats (or the budget) allow, and keep
        each case's runs for its own test to judge.

        Why: on a shared VM the host's speed drifts over minutes, and a case's launches back to back
        share one spell, so their agreement says nothing about the next sitting; measured on
        gate_power's pools (README), sessions and baselines spread in time raised fewer false alarms.
        A case's preflight (its framework, then the hardware probe) runs just before its first launch."""
        self._rounds_taken = True
        items = item.session.items
        cases = list({self.case_name(c): c for c in (self._matrix_case(it) for it in items[items.index(item):]
                                                     if not _skipped(it)) if c is not None}.values())
        budget = self.budget(m)
        started = budget.begin_case()
        state = {self.case_name(c): Measured(c) for c in cases}
        done = 0
        try:
            with self.cluster.lease():
                while True:
                    going = [c for c in cases if state[self.case_name(c)].error is None
                             and state[self.case_name(c)].outcome is None]
                    costs = [statistics.fmean(state[self.case_name(c)].taken) for c in going
                             if state[self.case_name(c)].taken]
                    if not going or not budget.another_round(done, m.repeats, m.min_repeats, costs):
                        break
                    short = False  # a case that did not fit: this round is the last
                    for case in going:
                        got = state[self.case_name(case)]
                        if got.taken and not budget.launch_in_round(done, m.min_repeats, statistics.fmean(got.taken)):
                            short = True
                            continue
                        self._launch_in_round(case, got, done, m, first=done == 0)
                    done += 1
                    if short:
                        break
        except ClusterError as exc:  # the lease itself: every case not yet stopped says why
            for got in state.values():
                if got.error is None and got.outcome is None:
                    got.error = str(exc)
        finally:
            ran = [(name, got.taken, c.topology.name) for (name, got), c in zip(state.items(), cases) if got.runs]
            if ran:
                budget.end_rounds(started, ran, m.repeats)
            self._measured.update(state)

    def _launch_in_round(self, case: CaseSpec, got: Measured, rep: int, m: Measurement, first: bool) -> None:
        """One launch of a case in a round (its preflight before the first); what went wrong stops it."""
        name = self.case_name(case)
        if first:
            try:
                self._framework_ready(case)
                self._baseline_ready(case)
                self.probe_hardware(name)
            except (pytest.skip.Exception, pytest.fail.Exception) as exc:
                got.outcome = exc
                return
            except ClusterError as exc:
                got.error = str(exc)
                return
        show = (lambda info: self.live.update(name, rep, m.repeats, info)) if self.live.enabled else None
        t0 = self.budget(m).clock()
        try:
            got.runs.append(run_case(self.cluster, self.launcher(case), case, self.case_measurement(case, m),
                                     self.options.report_dir / "runs" / name / f"r{rep}", rep, on_progress=show))
        except (RunFailed, ClusterError) as exc:
            got.error = str(exc)
        except Exception as exc:  # noqa: BLE001 - anything else stops this case alone, in its own test
            got.error = f"{case.id}: the launch raised {type(exc).__name__}: {exc}"
        finally:
            self.live.clear()
            got.taken.append(self.budget(m).clock() - t0)

    def _measure(self, case: CaseSpec, item: pytest.Item | None, m: Measurement) -> tuple[list, str | None]:
        """The case's launches back to back (``--dlperf-order case``): its runs, or the error that stopped them."""
        case_dir = self.options.report_dir / "runs" / self.case_name(case)
        runs, error = [], None
        name, budget, after = self.case_name(case), self.budget(m), self.cases_after(item)
        started, taken = budget.begin_case(), []
        try:
            with self.cluster.lease():
                self._framework_ready(case)
                self._baseline_ready(case)
                self.probe_hardware(name)
                while budget.another(taken, m.repeats, m.min_repeats, after, case.topology.name):
                    rep, t0 = len(taken), budget.clock()
                    show = (lambda info, rep=rep: self.live.update(name, rep, m.repeats, info)) if self.live.enabled else None
                    try:
                        runs.append(run_case(self.cluster, self.launcher(case), case, self.case_measurement(case, m),
                                             case_dir / f"r{rep}", rep,
                                             on_progress=show))
                    finally:
                        self.live.clear()
                        taken.append(budget.clock() - t0)
        except (RunFailed, ClusterError) as exc:
            error = str(exc)
        finally:
            if runs:
                budget.end_case(name, started, taken, m.repeats, case.topology.name)
        return runs, error

    def _framework_ready(self, case: CaseSpec) -> None:
        """The backend's framework on every node of the case, in one version: else skip (missing,
        with the install line) or fail (versions differ), naming the nodes. Asked once per node set."""
        nodes = self.cluster.nodes()[:case.topology.nodes]
        launcher = self.launcher(case)
        fws = launcher.frameworks_for(case)
        key = (*fws, *(n.name for n in nodes))
        if key not in self._framework_checked:
            problem = None
            for fw in fws:  # in order: horovod before the framework it was built for
                found = frameworks.check(self.cluster, nodes, fw,
                                         self.options.report_dir / "frameworks" / "-".join(key) / fw)
                for node, version in found.versions.items():
                    self.node_frameworks.setdefault(node, {})[fw] = version
                problem = problem or found.problem(launcher.install_hint_for(fw))
            if problem is None and launcher.spans_nodes and len(nodes) > 1:
                problem = reach.check(self.cluster, nodes, self.options.report_dir / "reach" / "-".join(key))
            self._framework_checked[key] = problem
        problem = self._framework_checked[key]
        if problem is not None:
            outcome, why = problem
            if outcome == "skip":
                pytest.skip(f"--backend {case.backend}: {why}")
            self.failures[self.case_name(case)] = f"--backend {case.backend}: {why}"  # in results.json too
            pytest.fail(f"--backend {case.backend}: {why}", pytrace=False)

    def _baseline_ready(self, case: CaseSpec) -> None:
        """The case's baseline file reads cleanly, else the case fails before its first launch,
        naming the file, what is wrong and the fix (the file is never written)."""
        try:
            self.gate.check_file(self.cluster.nodes(), case, self._probed_frameworks(case))  # as judge()
            return
        except BaselineError as exc:
            why = f"{case.id}: {exc}"
        except SittingsError as exc:
            why = f"{case.id}: not recorded: {exc}"
        self.failures[self.case_name(case)] = why  # outside the except block: the report shows no chain
        pytest.fail(why, pytrace=False)

    def _frameworks_into(self, case: CaseSpec, runs: list) -> None:
        """A program the project did not write reports no versions (no meta line): the preflight
        probe's versions on node 0 stand in, so its profile and what-changed name them too."""
        for run in runs:
            if "frameworks" not in run.meta:
                run.meta["frameworks"] = self._probed_frameworks(case)

    def _probed_frameworks(self, case: CaseSpec) -> dict[str, str]:
        """The case's frameworks as the preflight probe found them on node 0: name -> version."""
        probed = self.node_frameworks.get(self.cluster.nodes()[0].name, {})
        return {fw: probed[fw] for fw in self.launcher(case).frameworks_for(case) if fw in probed}

    def _second_look(self, case: CaseSpec, result: CaseResult) -> None:
        """Before calling the hardware different on probe figures alone, probe again a few times."""
        self._look_again(f"{self.case_name(case)}-again", lambda: self.gate.probe_again(
            result, self.cluster.nodes(), case.backend, self.fingerprints))

    def _look_again(self, label: str, wanted: Callable[[], bool] = lambda: True) -> None:
        """Probe up to RECHECKS more times, --dlperf-reprobe-pause s apart, while ``wanted()``: this host has
        been seen running 20-50% slower for whole seconds, and the session keeps each node's best."""
        for i in range(RECHECKS):
            if not wanted():
                return
            time.sleep(self.options.reprobe_pause)
            with contextlib.suppress(ClusterError), self.cluster.lease():
                self.probe_hardware(f"{label}{i + 1}")

    def probe_hardware(self, label: str) -> None:
        """Fingerprint the nodes (before every case: the best each node showed is its capability)."""
        self._keep(hardware.measure(self.cluster, self.options.report_dir / "hwprobe" / label,
                                    seconds=self.options.probe_seconds))

    def _keep(self, fp: hardware.Fingerprints) -> None:
        """Fold fingerprints into the session's: per node, the best probe seen so far."""
        if self.fingerprints is None:
            self.fingerprints = fp
        else:
            self.fingerprints.merge(fp)

    def write_report(self) -> Path:
        env = environment.collect(self.results, self.cluster if self._cluster else None)
        env["hardware_fingerprints"] = self.fingerprints.to_dict() if self.fingerprints else None
        env["node_frameworks"] = self.node_frameworks
        if self._budget is not None and self._budget.seconds > 0:
            b = self._budget
            env["budget"] = {"seconds": b.seconds, "used": round(b.used, 1),
                             "cut": {k: {"repeats": t, "planned": n} for k, (t, n) in b.cut.items()}}
        return reporting.write_results(self.options.report_dir, self.results, env,
                                       self.options.to_dict(), self.failures)


def junit_properties(result: CaseResult) -> list[tuple[str, object]]:
    """The case's key figures, one JUnit property each."""
    c = result.case
    props: list[tuple[str, object]] = [
        ("dlperf_backend", c.backend), ("dlperf_case", c.id), ("dlperf_topology", c.topology.name),
        ("dlperf_samples_per_s", round(result.median, 4)), ("dlperf_repeats", len(result.throughputs)),
        ("dlperf_step_p50_s", round(result.step_time["p50"], 6)), ("dlperf_step_p95_s", round(result.step_time["p95"], 6)),
    ]
    for name in ("speedup", "efficiency", "multi_node_efficiency"):
        value = getattr(result, name)
        if value is not None:
            props.append((f"dlperf_{name}", round(value, 4)))
    for metric, v in (result.verdict or {}).items():
        props.append((f"dlperf_verdict_{metric}", v.get("status", "")))
    return props


class BoundRunner:
    """The ``dlperf`` fixture: the session bound to the requesting test (for its dlperf marker)."""

    def __init__(self, session: DLPerfSession, item: pytest.Item) -> None:
        self.session, self.item = session, item

    def run(self, case: CaseSpec) -> CaseResult:
        return self.session.run(case, self.item)
