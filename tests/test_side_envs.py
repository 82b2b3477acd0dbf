"""Side environments (issue #64): ``pip=`` words make an environment over the session's python on every
node, cached per node; the node script's make, reuse, lock, failures and cache verbs on this machine, and
an A/B session whose candidate installs a library that slows training, on both nodes of the local cluster."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import zlib
from pathlib import Path

import pytest

from pytest_dlperf.ab.sides import SpecError, parse_side
from pytest_dlperf.node.makeenv import ERROR_MARK, MARK
from tests.suite import QUICK_PROBES, SMALL_CASE, TINY_ENGINE, run_suite
from tests.wheels import make_wheel, pyproject, slowing_wheel

SCRIPT = Path(__file__).resolve().parents[1] / "pytest_dlperf" / "node" / "makeenv.py"


def uv_here() -> bool:
    """Whether this machine's python has uv (the test extra installs it), as the node script looks for it."""
    from pytest_dlperf.node.makeenv import _uv

    return _uv("auto", sys.executable) is not None


def own_build() -> str | None:
    """How this interpreter holds pytest-dlperf, as a made environment says it keeps the base's local builds:
    "editable" or "local" (installed from its checkout), else None (from a wheel or an index). Asked of the
    interpreter outside the checkout, as a node runs it: in the checkout, its pytest_dlperf.egg-info (which
    an editable install leaves there) is found first and has no direct_url.json."""
    ask = "from importlib.metadata import distribution as d; print(d('pytest-dlperf').read_text('direct_url.json') or '{}')"
    url = json.loads(subprocess.run([sys.executable, "-c", ask], capture_output=True, text=True, check=True,
                                    cwd="/").stdout)
    return ("editable" if url["dir_info"].get("editable") else "local") if "dir_info" in url else None


def makeenv(cache: Path, *reqs: str, base: str = sys.executable, verb: str = "make", extra: tuple[str, ...] = (),
            timeout: float = 300, installer: str = "pip") -> tuple[subprocess.CompletedProcess, dict | str | None]:
    """Run the node script here; its result line (JSON), or its error line (str)."""
    argv = [sys.executable, str(SCRIPT), verb, "--cache", str(cache), *extra]
    if verb == "make":
        argv += ["--base", base, "--installer", installer, "--", *reqs]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    for line in r.stdout.splitlines():
        if line.startswith(MARK):
            return r, json.loads(line[len(MARK):])
        if line.startswith(ERROR_MARK):
            return r, line[len(ERROR_MARK):]
    return r, None


# ---------------------------------------------------------------- the words
def test_pip_words_are_installer_arguments_with_paths_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = parse_side("pip=numpy==1.26.4 pip=-r req.txt pip=./dist/x-1.0-py3-none-any.whl pip=-rmore.txt name=next",
                   "candidate")
    assert s.pip == ("numpy==1.26.4", "-r", str(tmp_path / "req.txt"), str(tmp_path / "dist/x-1.0-py3-none-any.whl"),
                     "-r", str(tmp_path / "more.txt")), s.pip
    assert parse_side("current", "reference").pip == ()


@pytest.mark.parametrize("text, said", [
    ("pip=", "'pip=' gives no value"), ("pip=-r", "pip=-r names no file"),
    ("pip=--pre", "an installer option is not a requirement")])
def test_a_bad_pip_word_is_one_line_naming_it(text, said):
    with pytest.raises(SpecError) as info:
        parse_side(text, "candidate")
    assert said in str(info.value) and "\n" not in str(info.value) and "--dlperf-candidate" in str(info.value)


# ---------------------------------------------------------------- the node script
@pytest.mark.parametrize("installer", [pytest.param("pip", marks=pytest.mark.slow), "uv"])
def test_an_environment_is_made_once_reused_and_holds_the_base_with_the_wheel_over_it(tmp_path, installer):
    if installer == "uv" and not uv_here():
        pytest.skip("uv is not installed here (the test extra installs it: pip install -e .[test])")
    wheel = make_wheel(tmp_path / "wheels", "six", "1.10.0", {"six.py": "__version__ = '1.10.0'\n"})
    cache = tmp_path / "cache"
    r, got = makeenv(cache, str(wheel), installer=installer)
    assert isinstance(got, dict), r.stdout + r.stderr
    assert got["builder"] == installer and not got["reused"] and got["seconds"] > 0
    assert got["added"] == {"six": "1.10.0"}
    import six  # the session's own, which the environment shadows
    assert got["moved"] == {"six": [six.__version__, "1.10.0"]}
    # the base's build of a local directory (pytest-dlperf itself, where it is installed from its checkout) is
    # taken as the base has it, and said
    assert got["kept"].get("pytest-dlperf") == own_build(), got
    python = got["python"]
    assert Path(python).parent.parent == cache / got["digest"] and not list(cache.glob("*.partial-*"))
    out = subprocess.run([python, "-c", "import six, pytest_dlperf, pytest; print(six.__version__)"],
                         capture_output=True, text=True)
    assert out.stdout.strip() == "1.10.0", out.stderr  # the wheel over the base's packages, which it still sees
    r, again = makeenv(cache, str(wheel), installer=installer)
    assert again["reused"] and again["seconds"] == 0 and again["python"] == python, r.stdout
    # another wheel's content is another environment
    other = make_wheel(tmp_path / "other", "six", "1.10.0", {"six.py": "__version__ = '1.10.0'  # changed\n"})
    _, third = makeenv(cache, str(other), installer=installer)
    assert third["digest"] != got["digest"] and not third["reused"]
    # dlperf env list / prune, as the node script answers them
    _, listed = makeenv(cache, verb="list")
    assert sorted(e["digest"] for e in listed) == sorted([got["digest"], third["digest"]])
    os.utime(Path(python).parents[1] / "dlperf-env.json", (time.time() - 7200, time.time() - 7200))
    _, gone = makeenv(cache, verb="prune", extra=("--older-than", "3600"))
    assert [e["digest"] for e in gone] == [got["digest"]] and not (cache / got["digest"]).exists()
    assert (cache / third["digest"]).is_dir()


def test_dlperf_env_lists_and_prunes_this_machines_cache(tmp_path, capsys):
    from pytest_dlperf import cli

    cache = tmp_path / "cache"
    _, got = makeenv(cache, str(slowing_wheel(tmp_path / "w", 0.0)))
    assert cli.main(["env", "list", "--cache", str(cache)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{cache / got['digest']}  pip  {tmp_path / 'w' / 'quicklog-1.0-py3-none-any.whl'}  "), out
    assert cli.main(["env", "prune", "--cache", str(cache), "--older-than", "1d"]) == 0
    assert capsys.readouterr().out == "" and (cache / got["digest"]).is_dir()  # used a moment ago
    assert cli.main(["env", "prune", "--cache", str(cache)]) == 0
    assert "removed" in capsys.readouterr().out and not (cache / got["digest"]).exists()
    with pytest.raises(SystemExit):
        cli.main(["env", "prune", "--older-than", "soon"])
    assert "expected a duration such as 7d, 12h or 30m, got 'soon'" in capsys.readouterr().err


def test_a_prune_skips_what_a_node_sharing_the_cache_removed_first(tmp_path, monkeypatch):
    """The local cluster's nodes (or SSH nodes with an NFS home) share one cache, and `dlperf env prune` asks
    them at once: an environment another node removed after this one listed it is skipped, not an error
    (CI 2026-11-30: a FileNotFoundError on one node)."""
    from pytest_dlperf.node import makeenv as node_side

    cache = tmp_path / "cache"
    (cache / "gone").mkdir(parents=True)
    (cache / "kept").mkdir()
    for key in ("gone", "kept"):
        (cache / key / node_side.INFO).write_text("{}")
    seen = node_side.listed(cache)
    assert [Path(e["path"]).name for e in seen] == ["gone", "kept"]
    (cache / "gone" / node_side.INFO).unlink()  # the other node's prune, between this one's list and its lock
    (cache / "gone").rmdir()
    monkeypatch.setattr(node_side, "listed", lambda c: seen)
    assert [Path(e["path"]).name for e in node_side.prune(cache, 0.0)] == ["kept"]


@pytest.mark.slow
def test_dlperf_env_after_pytests_arguments_asks_every_node_of_their_cluster(tmp_path, capfd):
    """``dlperf env list -- ARGS``: each node of the cluster the arguments name answers through its channel (the
    local cluster's two nodes here; over SSH: test_ssh_training), and no test runs."""
    from pytest_dlperf import cli

    cache = tmp_path / "cache"
    _, got = makeenv(cache, str(slowing_wheel(tmp_path / "w", 0.0)))
    where = ["--", "--dlperf-nodes", "2", f"--dlperf-report={tmp_path / 'report'}"]
    assert cli.main(["env", "list", "--cache", str(cache), *where]) == 0
    out = capfd.readouterr().out
    for node in ("local0", "local1"):
        assert f"{node}: {cache / got['digest']}  pip  " in out and f"{node}: 1 environment(s) cached" in out, out
    assert (tmp_path / "report" / "env-cache" / "commands.sh").is_file()
    assert cli.main(["env", "prune", "--cache", str(cache), "--older-than", "0", *where]) == 0
    assert f"removed {cache / got['digest']}" in capfd.readouterr().out and not (cache / got["digest"]).exists()


@pytest.mark.slow
def test_what_cannot_be_made_is_one_line_and_leaves_nothing(tmp_path):
    cache = tmp_path / "cache"
    _, said = makeenv(cache, str(tmp_path / "missing-1.0-py3-none-any.whl"))
    assert said == f"pip={tmp_path / 'missing-1.0-py3-none-any.whl'}: no such file on this node: put it at that path " \
                   "on every node"
    r, said = makeenv(cache, "dlperf-no-such-package==9.9", extra=())
    assert r.returncode == 2 and "No matching distribution found for dlperf-no-such-package==9.9" in said, said
    _, said = makeenv(cache, "six", base=str(tmp_path / "nopython"))
    assert said.startswith(f"the base python {tmp_path / 'nopython'} does not exist on this node"), said
    locked = tmp_path / "readonly"
    locked.mkdir()
    locked.chmod(0o500)
    if os.access(locked, os.W_OK):  # root writes anywhere: a file where the directory should be
        locked.chmod(0o700)
        locked.rmdir()
        locked.write_text("")
    _, said = makeenv(locked / "cache", "six")
    assert "is not writable" in said and "--dlperf-env-cache=DIR" in said, said
    # a node that reaches no index: the installer's reason, and what it means (pip retries, then finds nothing)
    _, said = makeenv(cache, "dlperf-no-such-package==9.9", extra=("--index-url", "http://127.0.0.1:9/simple"))
    assert "a package index could not be reached from this node: [Errno 111] Connection refused" in said, said
    assert "--dlperf-env-find-links DIR" in said
    assert not [p for p in cache.iterdir() if not p.name.endswith(".lock")]  # no environment, no partial one


def test_a_disk_that_fills_while_installing_is_one_line_and_leaves_nothing(tmp_path):
    """The cache on a 300 KiB file system (a tmpfs mounted here): the wheel does not fit; the installer's reason,
    what it means, and no partial environment."""
    full = tmp_path / "full"
    full.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(full)], capture_output=True,
                             text=True)
    if mounted.returncode != 0:
        pytest.skip(f"a small file system for the cache needs mount (root): {mounted.stderr.strip()}")
    try:
        r, said = makeenv(full / "cache", str(make_wheel(tmp_path / "w", "bulky", "1.0",
                                                         {"bulky/data.txt": "x" * (1 << 20)})))
        assert r.returncode == 2 and "No space left on device" in said, said
        assert "the disk that holds the cache is full on this node" in said and "--dlperf-env-cache=DIR" in said
        assert not [p for p in (full / "cache").iterdir() if not p.name.endswith(".lock")]
    finally:
        subprocess.run(["umount", str(full)], check=True)


def _pause(tmp_path: Path, seconds: int) -> str:
    """``sleep``'s argument for ``seconds``, told apart from any other process's (``pgrep -f`` looks at every
    process of the machine: a plain "sleep 60" matched a shell's beside the tests)."""
    return f"{seconds}.{zlib.crc32(str(tmp_path).encode()):010d}"


def _slow_python(tmp_path: Path, seconds: int) -> Path:
    """The session's python, whose pip takes ``seconds`` before it installs (a download in progress)."""
    wrapper = tmp_path / "python"
    wrapper.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        case "$*" in *"-m pip"*) sleep {_pause(tmp_path, seconds)};; esac
        exec {sys.executable} "$@"
        """))
    wrapper.chmod(0o755)
    return wrapper


def test_a_make_stopped_midway_leaves_no_partial_environment_and_no_installer(tmp_path):
    cache = tmp_path / "cache"
    wheel = slowing_wheel(tmp_path / "wheels", 0.0)
    p = subprocess.Popen([sys.executable, str(SCRIPT), "make", "--cache", str(cache), "--base",
                          str(_slow_python(tmp_path, 60)), "--installer", "pip", "--", str(wheel)],
                         stdout=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while not list(cache.glob("*.partial-*")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list(cache.glob("*.partial-*")), "the make never started"
    time.sleep(1.0)
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=30)
    assert p.returncode == 130 and f"{ERROR_MARK}interrupted: the partial environment was removed" in out, out
    assert not list(cache.glob("*.partial-*")) and not [d for d in cache.iterdir() if d.is_dir()]
    still = subprocess.run(["pgrep", "-f", f"sleep {_pause(tmp_path, 60)}"], capture_output=True, text=True).stdout.split()
    assert not still, f"the installer outlived its make: {still}"


def test_two_sessions_making_one_environment_make_it_once_and_the_second_waits(tmp_path):
    cache = tmp_path / "cache"
    wheel = slowing_wheel(tmp_path / "wheels", 0.0)
    argv = [sys.executable, str(SCRIPT), "make", "--cache", str(cache), "--base", str(_slow_python(tmp_path, 3)),
            "--installer", "pip", "--", str(wheel)]
    first = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    while not list(cache.glob("*.partial-*")):
        time.sleep(0.05)
    second = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    out1, _ = first.communicate(timeout=120)
    assert "waiting for another session making the same environment" in second.stdout, second.stdout
    a, b = (json.loads(next(ln for ln in o.splitlines() if ln.startswith(MARK))[len(MARK):]) for o in (out1, second.stdout))
    assert not a["reused"] and b["reused"] and a["python"] == b["python"]


# ---------------------------------------------------------------- an A/B session
# Each tiny step a fixed 20 ms (tests/tiny/workload.py): a library that costs nothing is SAME, and one that slows
# the steps is SLOWER, whatever the host's speed does from launch to launch.
FIXED_STEPS = {"TINY_STEP_SECONDS": "0.02"}
TWO_NODES = [*TINY_ENGINE, *SMALL_CASE, *QUICK_PROBES, "--dlperf-nodes", "2", "--dlperf-iters", "4",
             "--dlperf-timeout", "120", "-k", "2n1g"]


def ab(tmp_path: Path, candidate: str, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    report = tmp_path / "report"
    r = run_suite(f"--dlperf-report={report}", f"--dlperf-baseline-dir={tmp_path / 'baselines'}", *TWO_NODES,
                  "--dlperf-candidate", candidate, f"--dlperf-env-cache={tmp_path / 'envs'}", *args, env=FIXED_STEPS)
    path = report / "results.json"
    return r, (json.loads(path.read_text()) if path.exists() else {})


@pytest.mark.slow  # the library halves each step: no host's move hides it
def test_a_library_that_slows_training_installed_on_one_side_is_slower_on_both_nodes(tmp_path):
    wheel = slowing_wheel(tmp_path / "slow", 0.5)
    r, doc = ab(tmp_path, f"pip={wheel}")
    assert r.returncode == 1, r.stdout + r.stderr
    case = "resnet50-fp32-bs2-32px-2n1g"
    assert f"{case}: A/B SLOWER" in r.stdout, r.stdout
    said = re.search(r"packages \(the nodes' own\) -> pip=(\S+) \((.*?)\)(?:;|$)", r.stdout, re.M)
    assert said is not None and said.group(1) == str(wheel), r.stdout
    changes = said.group(2).split("; the base's local builds as it has them: ")
    assert changes[0] == "quicklog (none) -> 1.0", said.group(0)
    assert ("pytest-dlperf (" + str(own_build()) + ")" in changes[1]) if own_build() else len(changes) == 1, said.group(0)
    made = doc["ab"]["sides"]["candidate"]["environment"]
    assert made["requirements"] == [str(wheel)] and sorted(made["nodes"]) == ["local0", "local1"], made
    builder = "uv" if uv_here() else "pip"  # auto: uv where the node has it
    assert all(n["builder"] == builder and n["python"].startswith(str(tmp_path / "envs")) for n in made["nodes"].values())
    assert "dlperf env --dlperf-candidate" in r.stdout and "not counted in any measurement" in r.stdout
    assert doc["ab"]["sides"]["reference"]["environment"] is None


@pytest.mark.slow  # the steps take a fixed time: SAME whatever the host does
def test_the_same_library_without_its_cost_is_not_slower(tmp_path):
    wheel = slowing_wheel(tmp_path / "plain", 0.0)
    r, doc = ab(tmp_path, f"pip={wheel}", "--dlperf-ab-tolerance", "0.2")
    assert r.returncode == 0, r.stdout + r.stderr
    assert doc["ab"]["cases"]["resnet50-fp32-bs2-32px-2n1g"]["verdict"] != "slower"


def test_an_environment_that_cannot_be_made_fails_the_case_before_any_launch_naming_the_node(tmp_path):
    r, doc = ab(tmp_path, "pip=dlperf-no-such-package==9.9")
    assert r.returncode == 1, r.stdout + r.stderr
    (line,) = [ln for ln in r.stdout.splitlines()
               if ln.startswith("--dlperf-candidate pip=dlperf-no-such-package==9.9: on node ")][:1] or [""]
    assert ": the installer failed (exit " in line and "dlperf-no-such-package" in line.split("failed", 1)[1], r.stdout
    assert "Traceback" not in r.stdout
    case = doc["ab"]["cases"]["resnet50-fp32-bs2-32px-2n1g"]
    assert case["pairs"] == 0 and "the installer failed" in case["error"], case
    assert not [p for p in (tmp_path / "envs").iterdir() if p.is_dir()]


# ---------------------------------------------------------------- a library's commits
LIBRARY = pyproject("quicklog", "sitecustomize")
# the library's start-up module: at SHARE > 0 it slows each training step of the workload processes
HOOK = '''\
import os, sys
SHARE = {share}
if SHARE and os.path.basename((sys.argv or [""])[0]) in {workloads!r}:
    os.environ.setdefault("DLPERF_PLANT_SLOWDOWN", str(SHARE))
'''


@pytest.mark.slow  # the steps take a fixed time: the harmless commits are SAME whatever the host does
def test_bisect_installs_each_commit_of_a_library_and_names_the_one_that_slowed_training(tmp_path):
    """``dlperf bisect --install .``: each probed commit of a library (not of the benchmarks) is installed
    into an environment made on the node, and the commit whose start-up hook slows training is named."""
    from tests.suite import ROOT, UNUSED_PLUGINS
    from tests.test_bisect_history import commit, git
    from tests.wheels import WORKLOADS

    lib = tmp_path / "quicklog"
    lib.mkdir()
    git(lib, "init", "-q", "-b", "main")
    good = commit(lib, "quicklog 1.0", **{"pyproject.toml": LIBRARY, "sitecustomize.py": HOOK.format(share=0, workloads=WORKLOADS)})
    c1 = commit(lib, "README", **{"README.md": "a logging helper\n"})
    c2 = commit(lib, "log at start-up", **{"sitecustomize.py": HOOK.format(share=0.6, workloads=WORKLOADS)})
    commit(lib, "README again", **{"README.md": "a logging helper, still\n"})
    commit(lib, "a comment", **{"sitecustomize.py": "# hook\n" + HOOK.format(share=0.6, workloads=WORKLOADS)})
    steps = tmp_path / "steps.json"
    cmd = [sys.executable, "-m", "pytest_dlperf.cli", "bisect", "--repo", str(lib), "--good", good, "--bad", "main",
           "--install", ".", "--steps", str(steps), "--", str(ROOT / "suites"), *UNUSED_PLUGINS, "--rootdir", str(ROOT),
           *TINY_ENGINE, *SMALL_CASE, *QUICK_PROBES, "--dlperf-nodes", "1", "-k", "1n1g", "--dlperf-iters", "10",
           # a tolerance an A/A probe settles as SAME in a few pairs, and a slowing well beyond it
           "--dlperf-ab-tolerance", "0.3",
           f"--dlperf-baseline-dir={tmp_path / 'none'}", f"--dlperf-env-cache={tmp_path / 'envs'}"]
    r = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=900,
                       env={**os.environ, "PYTHONPATH": str(ROOT), **FIXED_STEPS})
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"first bad: {c2}" in r.stdout and f"last good: {c1}" in r.stdout, r.stdout
    probes = sorted((tmp_path / "steps-probes").glob("probe-*/results.json"))
    sides = json.loads(probes[0].read_text())["ab"]["sides"]
    assert sides["reference"]["install"] == "." and sides["reference"]["environment"]["requirements"][0].endswith("/tree")
    # the good commit's environment is made once and reused by every later probe (keyed by the project's content)
    assert len([d for d in (tmp_path / "envs").iterdir() if d.is_dir()]) == len(probes) + 1


def test_install_needs_a_rev_and_a_project_at_it(tmp_path):
    with pytest.raises(SpecError, match="install=. without rev=REF"):
        parse_side("install=.", "candidate")
    r, _ = ab(tmp_path, "rev=HEAD install=no/such/dir")
    assert r.returncode == 1 and "--dlperf-candidate install=no/such/dir: no project there at " in r.stdout, r.stdout
