"""pytest entry point (``pytest11``).

Installed by entry point, this module loads into every pytest session of the environment, so it
is light: options, hookspecs and a small front object. The dlperf session (launchers, gate;
numpy, scipy) is built only when a test asks for ``dlperf_case`` or ``dlperf``, so a session that
runs no benchmark imports none of that; its matrix comes from the cluster kind's declared shape,
and the cluster (paramiko, salloc, ECS) is built only when benchmarks are about to run.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from . import hookspecs
from .options import rootdir
from .options.core import add_options, add_short_names, from_config, value_options

if TYPE_CHECKING:
    from .session import BoundRunner, DLPerfSession

# The built-in cluster kinds' option plugins: each adds its own options (its ``pytest_addoption``) in
# its own group and reads them back into its typed options when its cluster is made (builtin.py).
# pytest registers them with this module; each is light (no SSH, Slurm, Ray or cloud library).
# Each is imported here first, so that pytest rewrites its asserts (one imported by another plugin first is
# warned of in every session): envs.options before ab.options, which imports it.
pytest_plugins = ("pytest_dlperf.clusters.ssh.options", "pytest_dlperf.clusters.aliyun.options",
                  "pytest_dlperf.clusters.slurm.options", "pytest_dlperf.clusters.ray.options",
                  "pytest_dlperf.envs.options", "pytest_dlperf.ab.options")
# The options that take a value, as this session's parser has them (short aliases only where added).
VALUE_OPTIONS = pytest.StashKey[frozenset]()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    """The core's options (options.py); the cluster kinds add theirs through their plugins (pytest_plugins)."""
    add_options(parser)


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]):
    """After the root conftests have added their options: the short aliases that are still free."""
    result = yield
    add_short_names(parser)
    early_config.stash[VALUE_OPTIONS] = value_options(parser)
    return result


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    rootdir.check(config, config.stash.get(VALUE_OPTIONS, frozenset()))  # `--dlperf-report DIR` moved no rootdir
    from .metrics import tolerated  # the declarations alone: light

    config.addinivalue_line(
        "markers", f"dlperf({', '.join(f'{m.marker_key}=' for m in tolerated())}): per-test gate "
        "tolerances (fractions, e.g. tolerance=0.03)")
    config.pluginmanager.register(DLPerfFront(config), "dlperf_front")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """--dlperf-env-list or --dlperf-env-prune D: the side environments' caches on every node of the cluster,
    in place of the tests (``envs.cache``)."""
    if not config.getoption("dlperf_env_list") and config.getoption("dlperf_env_prune") is None:
        return None
    from _pytest.main import wrap_session  # what pytest's own --fixtures runs in place of the tests

    return wrap_session(config, _env_caches)


def _register_builtin(pm: pytest.PytestPluginManager) -> None:
    """The built-in engines and cluster kinds (``builtin``), once, where a session or a command needs them."""
    from . import builtin

    if not pm.has_plugin("dlperf_builtin"):
        pm.register(builtin, "dlperf_builtin")


def _env_caches(config: pytest.Config, session: pytest.Session) -> int:
    from .envs.cache import on_every_node
    from .session.cluster import ClusterHolder

    pm = config.pluginmanager
    _register_builtin(pm)
    options = pm.get_plugin("dlperf_front").options
    holder = ClusterHolder(config, options)
    try:
        cluster = holder.get()
        said, answered = on_every_node(cluster, cluster.nodes(), config.getoption("dlperf_env_cache"),
                                       config.getoption("dlperf_env_prune"), options.report_dir / "env-cache")
    finally:
        holder.close()
    tw = config.get_terminal_writer()
    for line in said:
        tw.line(line)
    return 0 if answered else 1


def pytest_unconfigure(config: pytest.Config) -> None:
    for name in ("dlperf_session", "dlperf_front"):
        plugin = config.pluginmanager.get_plugin(name)
        if plugin is not None:
            config.pluginmanager.unregister(plugin)


def _benchmark(item: pytest.Item) -> bool:
    """A test that measures on the cluster (takes ``dlperf_case`` or ``dlperf``) and is not marked skip."""
    names = getattr(item, "fixturenames", ())
    return ("dlperf_case" in names or "dlperf" in names) and item.get_closest_marker("skip") is None


class DLPerfFront:
    """Registered in every session; builds the DLPerfSession on first need and hands over to it."""

    def __init__(self, config: pytest.Config) -> None:
        from .ab.options import ABOptions, ConfirmOptions  # a plugin of its own (pytest_plugins), imported by then

        self.config = config
        self.options = from_config(config)  # validates the values given (exit 4 on a bad one)
        self.ab_options = ABOptions.from_config(config)  # None unless --dlperf-candidate (A/B)
        self.confirm_options = ConfirmOptions.from_config(config)  # a stored-baseline failure, side by side
        self.session: DLPerfSession | None = None
        self._usage_error: pytest.UsageError | None = None
        self._build_error: str | None = None  # an xdist worker's: the cluster could not be built (pytest_runtestloop)

    def ensure_session(self) -> DLPerfSession:
        if self.session is None:
            from .session import DLPerfSession

            pm = self.config.pluginmanager
            _register_builtin(pm)
            self.session = DLPerfSession(self.config, self.options, self.ab_options, self.confirm_options)
            pm.register(self.session, "dlperf_session")
        return self.session

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if "dlperf_case" not in metafunc.fixturenames:
            return
        from .clusters.base import ClusterError

        names = None
        try:
            dl = self.ensure_session()
            cases = dl.cases()
            names = [dl.case_name(c) for c in cases]
        except ClusterError as exc:
            cases, self._usage_error = [], self._usage_error or pytest.UsageError(
                f"--dlperf-cluster {self.options.cluster}: {exc}")
        except pytest.UsageError as exc:
            cases, self._usage_error = [], self._usage_error or exc
        metafunc.parametrize("dlperf_case", cases, ids=names or [])

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """A bad host list or node count found while building the matrix (from the options, or from
        the nodes of a kind that declares no shape) stops the session as a usage error (exit 4);
        raised inside a module's collection it would be that module's error."""
        if self._usage_error is not None:
            raise self._usage_error

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        """The cluster is built here, when the tests are about to run and one of them is a benchmark:
        collecting, --collect-only and a session whose benchmarks are all deselected touch no node.
        A node that cannot be reached, or nodes unlike the shape the matrix was built for, stop the
        session here as a usage error (exit 4), in one line, before the first case."""
        if session.config.option.collectonly or not any(_benchmark(it) for it in getattr(session, "items", [])):
            return
        if session.testsfailed and not session.config.option.continue_on_collection_errors:
            return  # pytest's own loop stops the session for the collection errors
        from .clusters.base import ClusterError

        try:
            self.ensure_session().cluster  # noqa: B018 - built, and checked against the matrix's shape
            return
        except ClusterError as exc:
            error = pytest.UsageError(f"--dlperf-cluster {self.options.cluster}: {exc}")
        except pytest.UsageError as exc:
            error = exc
        if getattr(self.config, "workerinput", None) is None:
            raise error
        # An xdist worker's usage error would only crash the worker (its line lost): each benchmark fails with it.
        self._build_error = str(error)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Under xdist, a cluster that could not be built fails each benchmark with the one line."""
        if self._build_error is not None and _benchmark(item):
            pytest.fail(self._build_error, pytrace=False)

    @pytest.fixture
    def dlperf(self, request: pytest.FixtureRequest) -> BoundRunner:
        """``dlperf.run(case)`` measures a case over its repeats and gates it against its baseline."""
        from .session import BoundRunner

        return BoundRunner(self.ensure_session(), request.node)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node) -> None:
        """pytest-xdist controller: every worker reports into this session's directory."""
        node.workerinput["dlperf_report_dir"] = str(self.options.report_dir)
        node.workerinput["dlperf_session_token"] = self.options.session_token

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """An xdist controller collects nothing: where workers left parts, it builds the session to
        merge them (the session, registered now, then prints the summary)."""
        if self.session is None and any((self.options.report_dir / "parts").glob(f"{self.options.session_token}-*.json")):
            self.ensure_session().pytest_sessionfinish(session)
