"""The plugin through pytester: options, parametrized ids, the ladder, usage errors, dry-run."""
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import sys

import pytest

from .procs import signal_when

pytest_plugins = ["pytester"]

SUITE = """
def test_train(dlperf_case, dlperf):
    result = dlperf.run(dlperf_case)
    assert result.median > 0
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_suite=SUITE)
    return pytester


def collected(result: pytest.RunResult) -> list[str]:
    return [line.split("[", 1)[1].rstrip("]") for line in result.outlines if "::test_train[" in line]


def test_default_matrix_is_models_x_precisions_x_ladder(suite):
    r = suite.runpytest("--collect-only", "-q")
    assert r.ret == 0
    assert collected(r) == [  # the CPU profile: fp32 (amp on request), every model of ddp; the decoder compiled at 1n1g
        "resnet50-fp32-bs8-64px-1n1g", "resnet50-fp32-bs8-64px-2n1g",
        "vgg16-fp32-bs4-32px-1n1g", "vgg16-fp32-bs4-32px-2n1g",
        "bert-base-fp32-bs2-seq32-1n1g", "bert-base-fp32-bs2-seq32-2n1g",
        "arcface-fp32-bs8-64px-cls4096-1n1g", "arcface-fp32-bs8-64px-cls4096-2n1g",
        "llama-fp32-bs2-seq64-d256l4-1n1g", "llama-fp32-bs2-seq64-d256l4-compiled-1n1g",
        "llama-fp32-bs2-seq64-d256l4-2n1g",
    ]
    r = suite.runpytest("--collect-only", "-q", "--dlperf-compile", "eager,compiled", "--dlperf-model", "resnet50",
                        "--backend", "ddp,fsdp,acspeed")  # compiled: every model and topology of the torch engines
    assert collected(r) == [f"{e}-resnet50-fp32-bs8-64px-{v}{t}" for e in ("ddp", "fsdp") for t in ("1n1g", "2n1g")
                            for v in ("", "compiled-")] + [f"acspeed-resnet50-fp32-bs8-64px-{t}" for t in ("1n1g", "2n1g")]
    r = suite.runpytest("--collect-only", "-q", "--dlperf-compile", "compiled", "-k", "compile")
    assert collected(r) == [f"{m}-compiled-{t}" for m in ("resnet50-fp32-bs8-64px", "vgg16-fp32-bs4-32px",
                                                           "bert-base-fp32-bs2-seq32", "arcface-fp32-bs8-64px-cls4096",
                                                           "llama-fp32-bs2-seq64-d256l4") for t in ("1n1g", "2n1g")]
    r = suite.runpytest("--collect-only", "-q", "--dlperf-compile", "jit")
    assert r.ret == 4 and "--dlperf-compile: unknown jit; allowed: eager, compiled" in r.stderr.str()
    r = suite.runpytest("--collect-only", "-q", "--dlperf-compile-cache=cache")
    assert r.ret == 4 and "--dlperf-compile-cache cache: give an absolute path (a directory on every node" in r.stderr.str()
    r = suite.runpytest("--collect-only", "-q", "--dlperf-precision", "fp32,amp", "--dlperf-model", "vgg16")
    assert collected(r) == ["vgg16-fp32-bs4-32px-1n1g", "vgg16-fp32-bs4-32px-2n1g",
                            "vgg16-amp-bs4-32px-1n1g", "vgg16-amp-bs4-32px-2n1g"]
    r = suite.runpytest("--collect-only", "-q", "--backend", "tf", "--dlperf-model", "bert-base")
    assert collected(r) == ["bert-base-fp32-bs2-seq32-noxla-1n1g", "bert-base-fp32-bs2-seq32-noxla-2n1g"]


def test_options_shape_the_ids(suite):
    r = suite.runpytest("--collect-only", "-q", "--nodes", "4", "--dlperf-gpus-per-node", "2",
                        "--dlperf-model", "resnet50", "--dlperf-precision", "amp", "--dlperf-batch-size", "16",
                        "--dlperf-image-size", "96")
    assert r.ret == 0
    assert collected(r) == [f"resnet50-amp-bs16-96px-{t}" for t in ("1n1g", "1n2g", "2n2g", "4n2g")]


def test_k_selects_cases(suite):
    r = suite.runpytest("--collect-only", "-q", "-k", "resnet50 and fp32 and 2n1g")
    assert collected(r) == ["resnet50-fp32-bs8-64px-2n1g"]


@pytest.mark.parametrize("args, words", [
    (["--nodes", "0"], ["--nodes", ">= 1"]),
    (["--nodes", "two"], ["--nodes", "'two'"]),
    (["--dlperf-gpus-per-node", "-1"], ["--dlperf-gpus-per-node"]),
    (["--dlperf-precision", "fp16"], ["--dlperf-precision", "fp16", "fp32, amp"]),
    (["--backend", "mxnet"], ["--backend", "mxnet", "ddp"]),
    (["--dlperf-model", "alexnet"], ["--dlperf-model", "alexnet", "resnet50, vgg16"]),
    (["--dlperf-cluster", "kubernetes"], ["--dlperf-cluster: unknown kind 'kubernetes'; installed: aliyun, local, ray, slurm, ssh"]),
    (["--dlperf-repeats", "0"], ["--dlperf-repeats"]),
    (["--dlperf-warmup-iters", "-3"], ["--dlperf-warmup-iters", ">= 0"]),
    (["--dlperf-timeout", "0"], ["--dlperf-timeout", "> 0"]),
])
def test_bad_values_are_usage_errors_naming_the_option(suite, args, words):
    r = suite.runpytest("--collect-only", "-q", *args)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    err = r.stderr.str()
    for w in words:
        assert w in err, err


def test_report_path_that_is_a_file_is_a_usage_error(suite):
    f = suite.path / "taken"
    f.write_text("x")
    r = suite.runpytest("--collect-only", f"--dlperf-report={f}")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert "not a directory" in r.stderr.str()


def test_a_path_value_that_moved_the_rootdir_is_refused_with_the_equals_form(pytester, tmp_path_factory, monkeypatch):
    """pytest picks its rootdir before plugin options are known: `--dlperf-baseline-dir /elsewhere` made
    /elsewhere a test path there, the project's configuration was not read (testpaths lost), and
    `pytest --update-baselines --dlperf-baseline-dir D` at a project's root collected every test."""
    pytester.makepyprojecttoml('[tool.pytest.ini_options]\ntestpaths = ["suite"]\n')
    pytester.mkpydir("suite").joinpath("test_in.py").write_text("def test_in():\n    pass\n")
    pytester.makepyfile(test_out="def test_out():\n    assert False, 'collected outside testpaths'\n")
    store = tmp_path_factory.mktemp("store")  # outside the project
    r = pytester.runpytest("--dlperf-baseline-dir", str(store))
    assert r.ret == pytest.ExitCode.USAGE_ERROR, r.stdout.str()
    err = " ".join(r.stderr.str().split())
    assert f"--dlperf-baseline-dir {store}: pytest read this value as a test path" in err
    assert f"instead of rootdir {pytester.path} and configuration file {pytester.path / 'pyproject.toml'}" in err
    assert f"Write the value with '=': --dlperf-baseline-dir={store}" in err
    r = pytester.runpytest(f"--dlperf-baseline-dir={store}")
    r.assert_outcomes(passed=1)  # testpaths read: test_out not collected
    # a separate value that leaves the rootdir where it was (inside the project), or no path at all: as before
    (pytester.path / "baselines").mkdir()
    pytester.runpytest("--dlperf-baseline-dir", "baselines", "--dlperf-model", "resnet50").assert_outcomes(passed=1)
    # short aliases and several at once are named together
    r = pytester.runpytest("--dlperf-report", str(store), "--cluster", str(store))
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert f"--dlperf-report={store} --cluster={store}" in " ".join(r.stderr.str().split())
    # what is not a path is not one: a value too long for a file name, --help
    pytester.runpytest("--dlperf-hosts", ",".join(f"node{i:03d}.{'x' * 40}.example.com:8" for i in range(8)),
                       "--dlperf-ssh-user", "u" * 300).assert_outcomes(passed=1)
    assert pytester.runpytest("--help", "--dlperf-report", str(store)).ret == pytest.ExitCode.OK
    monkeypatch.setenv("PYTEST_ADDOPTS", f"--dlperf-baseline-dir {store}")  # read before the rootdir too
    assert pytester.runpytest().ret == pytest.ExitCode.USAGE_ERROR


def test_explicit_lengths_are_exact_unless_a_window_is_asked_for(suite):
    def argv(*opts):
        r = suite.runpytest("-q", "--dlperf-dryrun", "--dlperf-model", "resnet50", "--dlperf-precision", "fp32",
                            "-k", "1n1g", *opts)
        assert r.ret == 0
        line = next(ln for ln in r.outlines if ln.startswith("local0: "))
        args = shlex.split(line.split(": ", 1)[1])
        return {k: args[args.index(k) + 1] for k in ("--warmup-iters", "--max-warmup-iters", "--iters",
                                                      "--window-seconds", "--max-iters")}

    fixed = argv("--dlperf-warmup-iters", "3", "--dlperf-iters", "7")
    assert fixed == {"--warmup-iters": "3", "--max-warmup-iters": "3", "--iters": "7",
                     "--window-seconds": "0", "--max-iters": "0"}
    timed = argv("--dlperf-iters", "7", "--dlperf-window-seconds", "2.5")
    assert timed["--iters"] == "7" and timed["--window-seconds"] == "2.5" and timed["--max-iters"] == "40"
    r = suite.runpytest("-q", "--dlperf-dryrun", "--dlperf-window-seconds", "-1")
    assert r.ret == 4 and "expected seconds >= 0, got '-1'" in r.stderr.str()


def test_plugin_is_quiet_in_sessions_without_benchmarks(pytester):
    pytester.makepyfile("def test_plain():\n    assert True\n")
    r = pytester.runpytest("-q")
    assert r.ret == 0
    assert "dlperf" not in r.stdout.str()
    assert not (pytester.path / ".dlperf").exists()
    # loaded by its entry point in a fresh interpreter, as in a user's session: not a warning either
    r = pytester.runpytest_subprocess("-q")
    assert r.ret == 0 and "warning" not in r.stdout.str().lower(), r.stdout.str()


def test_dryrun_prints_per_node_commands_and_trains_nothing(suite):
    """The local cluster starts the ranks directly by default (rankstart.py), under torchrun's agent when asked."""
    report = suite.path / "rep"
    r = suite.runpytest("-q", "--dlperf-dryrun", "--dlperf-model", "resnet50", "--dlperf-precision", "fp32",
                        f"--dlperf-report={report}")
    assert r.ret == 0
    r.assert_outcomes(skipped=2)
    out = r.stdout.str()
    assert "dlperf dry-run: per-node commands" in out
    lines = [ln for ln in r.outlines if ln.startswith("local")]
    assert len(lines) == 3  # 1n1g: one node; 2n1g: two nodes
    node0, node1 = lines[1].split(": ", 1)[1], lines[2].split(": ", 1)[1]
    argv0, argv1 = shlex.split(node0), shlex.split(node1)
    assert argv0[argv0.index("--node-rank") + 1] == "0" and argv1[argv1.index("--node-rank") + 1] == "1"
    assert argv0[argv0.index("--nnodes") + 1] == "2"
    assert argv0[argv0.index("--master-addr") + 1] == "127.0.0.1"
    assert argv0[argv0.index("--master-port") + 1] == argv1[argv1.index("--master-port") + 1]
    start = next(i for i, a in enumerate(argv0) if a.endswith("/rankstart.py"))
    assert argv0[argv0.index("--nnodes") - 1].endswith("/rankstart.py") and argv0[start - 1].endswith("python3")
    assert "torch.distributed.run" not in node0 and "--batch-size" in argv0
    # the CPU profile: warm-up until steps settle (2..4), a window of about 1.5 s (3..40 steps)
    flag = lambda name: argv0[argv0.index(name) + 1]  # noqa: E731
    assert [flag("--warmup-iters"), flag("--max-warmup-iters")] == ["2", "4"]
    assert [flag("--iters"), flag("--window-seconds"), flag("--max-iters")] == ["3", "1.5", "40"]
    assert not list(report.glob("runs/*"))  # nothing trained
    assert json.loads((report / "results.json").read_text())["cases"] == []

    r = suite.runpytest("-q", "--dlperf-dryrun", "--dlperf-model", "resnet50", "--dlperf-precision", "fp32",
                        "--dlperf-local-start", "torchrun", f"--dlperf-report={suite.path / 'rep2'}")
    assert r.ret == 0
    lines = [ln for ln in r.outlines if ln.startswith("local")]
    argv0, argv1 = (shlex.split(ln.split(": ", 1)[1]) for ln in lines[1:3])
    assert "torch.distributed.run" in argv0 and not any(a.endswith("rankstart.py") for a in argv0)
    assert argv0[argv0.index("--node_rank") + 1] == "0" and argv1[argv1.index("--node_rank") + 1] == "1"
    assert argv0[argv0.index("--master_port") + 1] == argv1[argv1.index("--master_port") + 1]


# A repository's own conftest with the option names ML repositories commonly define.
USER_CONFTEST = """
def pytest_addoption(parser):
    for name in ("--model", "--iters", "--precision", "--hosts", "--tolerance", "--nodes", "--backend",
                 "--batch-size", "--cluster", "--repeats"):
        parser.addoption(name, default="theirs-" + name[2:])
"""

# The cluster kinds' packages themselves load (their options are read in every session), their
# clusters do not.
HEAVY = ("paramiko", "scipy", "numpy", "rich", "torch", "filelock", "pytest_dlperf.session", "pytest_dlperf.envs.make",
         "pytest_dlperf.clusters.ssh.cluster", "pytest_dlperf.clusters.ssh.connect",
         "pytest_dlperf.clusters.slurm.cluster", "pytest_dlperf.clusters.slurm.allocation",
         "pytest_dlperf.clusters.aliyun.cluster", "pytest_dlperf.clusters.aliyun.api", "alibabacloud_ecs20140526")

PLAIN_TEST = f"""
import sys

def test_their_options_are_theirs(request):
    get = request.config.getoption
    assert get("model") == "resnet-from-cli" and get("iters") == "theirs-iters"
    assert get("nodes") == "7" and get("tolerance") == "theirs-tolerance"
    assert not [m for m in {HEAVY!r} if m in sys.modules], "heavy imports in a session without benchmarks"
"""


def test_plugin_leaves_a_repositorys_own_options_alone(pytester):
    """pytest-dlperf loads by entry point into every session: it must not clash with a conftest's
    --model/--iters/--nodes..., nor import SSH, cloud or numeric libraries where no benchmark runs."""
    pytester.makeconftest(USER_CONFTEST)
    pytester.makepyfile(test_theirs=PLAIN_TEST)
    r = pytester.runpytest_subprocess("-q", "--model", "resnet-from-cli", "--nodes", "7", "-p", "no:cacheprovider")
    assert r.ret == 0, r.stdout.str() + r.stderr.str()
    r.assert_outcomes(passed=1)
    assert not (pytester.path / ".dlperf").exists()


def test_dlperf_options_still_work_beside_such_a_conftest(pytester):
    """The short --nodes is the repository's here; --dlperf-nodes reaches the benchmark."""
    pytester.makeconftest(USER_CONFTEST)
    pytester.makepyfile(test_suite=SUITE)
    r = pytester.runpytest("--collect-only", "-q", "--nodes", "7", "--dlperf-nodes", "1",
                           "--dlperf-model", "resnet50", "--dlperf-precision", "fp32")
    assert r.ret == 0, r.stdout.str()
    assert collected(r) == ["resnet50-fp32-bs8-64px-1n1g"]


def test_short_names_are_aliases_where_free(suite):
    r = suite.runpytest("--collect-only", "-q", "--nodes", "1", "--dlperf-model", "vgg16",
                        "--dlperf-precision", "amp")
    assert collected(r) == ["vgg16-amp-bs4-32px-1n1g"]
    r = suite.runpytest("--help")
    assert "--nodes=N" in r.stdout.str() and "same as --dlperf-nodes" in r.stdout.str()
    for short in ("--cluster=KIND", "--slurm-partition=NAME", "--slurm-time=TIME"):
        assert short in r.stdout.str()
    r = suite.runpytest("--collect-only", "-q", "--cluster", "local", "--slurm-wait", "x")
    assert r.ret == 4 and "--slurm-wait" in r.stderr.str()  # the long option's type checks the alias


def test_flag_aliases_stay_flags_whatever_pytest_argument_attrs_returns(monkeypatch):
    """pytest 9.1's Argument.attrs() returns the argparse action's __dict__, which has no 'action':
    copying the alias's keywords from it made --update-baselines an option taking a value (seen on
    a GPU machine, 2026-11-25: 'argument --update-baselines: expected one argument')."""
    from _pytest.config import argparsing

    from pytest_dlperf.clusters.slurm.options import add_options as add_slurm_options
    from pytest_dlperf.options.core import add_options, add_short_names, value_options

    parser = argparsing.Parser(_ispytest=True)
    add_options(parser)
    add_slurm_options(parser)  # a cluster kind's options, in its own group, with its own aliases
    real = argparsing.Argument.attrs

    def attrs_91(self):  # pytest 9.1's answer, to the plugin's own calls (pytest's own need the real one here)
        got = real(self)
        if sys._getframe(1).f_globals.get("__name__", "").startswith("pytest_dlperf"):
            return {k: v for k, v in got.items() if k != "action"}
        return got

    with monkeypatch.context() as m:
        m.setattr(argparsing.Argument, "attrs", attrs_91)
        assert add_short_names(parser) == []
        takes_value = value_options(parser)
    # The alias as argparse holds it (pytest 9.2's attrs() is that action's __dict__, with no 'action'
    # either: asking it failed this test there with KeyError: 'action' while the alias worked).
    alias = parser.optparser._option_string_actions["--update-baselines"]
    assert isinstance(alias, argparse._StoreTrueAction) and alias.dest == "dlperf_update_baselines"
    assert "--update-baselines" not in takes_value and "--dlperf-update-baselines" not in takes_value
    assert {"--nodes", "--dlperf-nodes", "--cluster", "--slurm-wait", "--dlperf-slurm-wait"} <= takes_value
    ns = parser.parse(["--update-baselines", "--nodes", "2", "x.py"])
    assert ns.dlperf_update_baselines is True and ns.dlperf_nodes == 2



def test_each_cluster_kind_reads_its_own_options_into_its_dataclass(tmp_path):
    """The kinds' options, parsed as pytest parses them, come back typed from the kind's from_config;
    a salloc argument string the shell could not split is a usage error naming the option."""
    from types import SimpleNamespace

    from _pytest.config import argparsing

    from pytest_dlperf.clusters.aliyun import options as aliyun
    from pytest_dlperf.clusters.slurm import options as slurm
    from pytest_dlperf.clusters.ssh import options as ssh

    parser = argparsing.Parser(_ispytest=True)
    for kind in (ssh, aliyun, slurm):
        kind.pytest_addoption(parser)

    def config(*args: str) -> SimpleNamespace:
        ns = parser.parse([*args, "x.py"])
        return SimpleNamespace(getoption=lambda name: getattr(ns, name))

    key = tmp_path / "id_ed25519"
    key.write_text("k")
    got = ssh.SSHOptions.from_config(config("--dlperf-hosts", "a:2,b:2", "--dlperf-ssh-port", "2222",
                                            "--dlperf-ssh-key", str(key), "--dlperf-ssh-retries", "0"))
    assert (got.hosts, got.port, got.retries, got.config) == ("a:2,b:2", 2222, 0, "~/.ssh/config")
    assert got.settings().key == str(key) and got.settings().host_key_checking == "strict"
    with pytest.raises(pytest.UsageError, match="--dlperf-ssh-known-hosts /nonexistent: no such file"):
        ssh.SSHOptions.from_config(config("--dlperf-ssh-known-hosts", "/nonexistent")).settings()
    got = aliyun.AliyunOptions.from_config(config("--dlperf-aliyun-spot", "price-limit",
                                                  "--dlperf-aliyun-spot-price-limit", "0.5"))
    assert (got.spot_strategy, got.spot_price_limit, got.after, got.wait) == ("SpotWithPriceLimit", 0.5, "stop", 600.0)
    got = slurm.SlurmOptions.from_config(config("--dlperf-slurm-partition", "gpu", "--dlperf-slurm-salloc-args",
                                                "--exclusive --comment 'a b'", "--dlperf-slurm-wait", "30"))
    assert (got.partition, got.salloc_args, got.wait) == ("gpu", ("--exclusive", "--comment", "a b"), 30.0)
    assert got.allocation_options_given() == ["--dlperf-slurm-partition"]
    with pytest.raises(pytest.UsageError, match="--dlperf-slurm-salloc-args: No closing quotation"):
        slurm.SlurmOptions.from_config(config("--dlperf-slurm-salloc-args", "--comment 'a"))

PLUGIN_CLUSTER = """
import os
from pytest_dlperf.clusters.local import LocalCluster


class MarkedLocal(LocalCluster):
    kind = "marked"

    def close(self):
        super().close()
        with open(os.environ["CLOSED_MARK"], "w") as fh:
            fh.write("closed")


def pytest_dlperf_cluster_kinds(config):
    return ["marked"]


def pytest_dlperf_make_cluster(config, options):
    if options.cluster == "marked":
        return MarkedLocal(nodes=options.nodes or 2, slots=options.gpus_per_node, base_dir=options.report_dir / "nodes")
"""


def test_a_plugin_adds_a_cluster_kind_and_sigterm_between_cases_still_closes_it(tmp_path):
    """The cluster kinds are open (a conftest adds one through the hooks); a SIGTERM that comes while
    no run is in flight (a CI job's timeout between cases) ends the session through clean-up."""
    (tmp_path / "conftest.py").write_text(PLUGIN_CLUSTER)
    (tmp_path / "test_wait.py").write_text(
        "import os, time\n"
        "def test_wait(dlperf_case):\n"
        "    open(os.environ['CASE_MARK'], 'w').write(dlperf_case.id)\n"
        "    time.sleep(120)\n")
    case_mark, closed = tmp_path / "case", tmp_path / "closed"
    env = {**os.environ, "CASE_MARK": str(case_mark), "CLOSED_MARK": str(closed)}
    code, out = signal_when([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_wait.py",
                             "--dlperf-cluster", "marked", "-k", "resnet50 and 1n1g"],
                            tmp_path, case_mark.exists, signal.SIGTERM, start_timeout=120, env=env)
    assert code == pytest.ExitCode.INTERRUPTED, out
    assert closed.read_text() == "closed", out


def test_the_local_lease_is_the_machines_unless_a_session_asks_for_its_own(tmp_path, monkeypatch):
    """--dlperf-local-lease (else DLPERF_LOCAL_LEASE): machine, every session here takes turns on one lock;
    session, a lock in the session's report directory, which only its own xdist workers share."""
    from types import SimpleNamespace

    from filelock import FileLock, Timeout

    from pytest_dlperf import builtin
    from pytest_dlperf.clusters.local import MACHINE_LEASE
    from pytest_dlperf.options import core as options

    monkeypatch.delenv("DLPERF_LOCAL_LEASE", raising=False)
    assert options._local_lease(None) == "machine"
    monkeypatch.setenv("DLPERF_LOCAL_LEASE", "session")
    assert options._local_lease(None) == "session" and options._local_lease("machine") == "machine"
    monkeypatch.setenv("DLPERF_LOCAL_LEASE", "nobody")
    with pytest.raises(pytest.UsageError, match="DLPERF_LOCAL_LEASE='nobody': expected one of machine, session, core"):
        options._local_lease(None)

    def cluster(lease: str, name: str):  # noqa: ANN202
        given = SimpleNamespace(cluster="local", nodes=2, gpus_per_node=None, report_dir=tmp_path / name,
                                local_lease=lease, local_start="direct")
        return builtin.pytest_dlperf_make_cluster(config=None, options=given)

    machine = cluster("machine", "a").leases
    assert machine.kind == "machine" and machine.path == MACHINE_LEASE
    mine, other = cluster("session", "a"), cluster("session", "b")
    assert mine.leases.path == tmp_path / "a" / "nodes" / "lease.lock"
    with mine.lease():
        with pytest.raises(Timeout):  # this session's other workers wait for it
            FileLock(str(mine.leases.path), timeout=0).acquire()
        with other.lease():  # another session's does not
            pass


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2 or not shutil.which("taskset"), reason="needs 2 cores and taskset")
def test_a_core_lease_pins_each_launch_to_free_cores_and_a_machine_lease_waits_for_them(tmp_path, monkeypatch):
    """--dlperf-local-lease core: each launch holds one free core per node, chosen when it starts (its commands
    pinned there), so two sessions' one-node launches run at once on two cores; a two-node launch waits for both,
    and a machine lease (a session that measures) waits until no core is held."""
    import threading

    from pytest_dlperf.clusters import local_leases
    from pytest_dlperf.clusters.local import LocalCluster
    from pytest_dlperf.clusters.turns import Turns

    monkeypatch.setattr(local_leases, "CORE_LOCKS", tmp_path / "cores")
    one, two = (LocalCluster(nodes=2, base_dir=tmp_path / n, lease="core") for n in ("one", "two"))
    assert [n.cpus for n in one.nodes()] == [1, 1]  # a core a node, whichever it gets

    def core(cluster: LocalCluster) -> str:
        argv = cluster.wrap(cluster.nodes()[0], ["train"])
        assert argv[:2] == ["taskset", "-c"] and argv[3:] == ["train"], argv
        return argv[2]

    started: list[tuple[threading.Thread, threading.Event]] = []

    def waits(block, seconds: float = 0.5) -> bool:  # noqa: ANN001
        """Whether ``block`` (a context manager's maker), entered in a thread of its own, still waits after
        ``seconds``; it goes on once it can (``started``)."""
        entered = threading.Event()

        def take() -> None:
            with block():
                entered.set()
        t = threading.Thread(target=take, daemon=True)
        t.start()
        started.append((t, entered))
        return not entered.wait(seconds)

    with one.hold(one.nodes()[:1]):
        first = core(one)
        with one.hold(one.nodes()[:1]):  # the launch's own node scripts run inside its hold
            assert core(one) == first
        with two.hold(two.nodes()[:1]):
            assert core(two) != first  # the other core, at once
        assert waits(lambda: two.hold(two.nodes()))  # both cores: after this launch
        assert waits(lambda: local_leases.MachineLease([0, 1], tmp_path / "machine.lock").lease(Turns(), ""))
    for t, entered in started:  # once the core is free, each took its turn
        t.join(30)
        assert entered.is_set()
    with two.hold(two.nodes()):
        assert {two.cpuset(n) for n in two.nodes()} == {"0", "1"}
    assert one.cpuset(one.nodes()[0]) == one.nodes()[0].extra["cpuset"]  # outside a launch: its share (dry-run)
