"""pytest-dlperf in a user's own repository, as a user meets it: installed from a built wheel (not this
checkout) into a virtualenv, `dlperf init` in a new git repository, the first run, a recording, a gated
run, the pull-request recipe's own command between commits, and `dlperf bisect`, for training code in the
repository (the sides are its commits, rev=); and the recipe for a library (each side installs the
library at its commit, rev=REF install=.).

The user's training script is a standard-library loop printing DLLogger lines, launched on every node as it is
(``dlperf init --launch per-node``): what is tested is the harness around it, and its slow commit takes twice the
time a step (a fixed sleep), which no host's speed hides. An external program trains torch for real under torchrun
in tests/test_external.py."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.suite import QUICK_PROBES, ROOT, UNUSED_PLUGINS, python_over_this_one
from tests.test_bisect_history import commit, git
from tests.wheels import pyproject

# A user's training script: DLLogger records as NVIDIA's DeepLearningExamples print them. STEP is how the step is
# computed (a step sleeps a fixed time); a slow commit computes it twice.
TRAIN = '''\
import argparse, json, time
{imports}

def dllogger(step, data):
    print("DLLL " + json.dumps({{"timestamp": f"{{time.time()}}", "type": "LOG", "step": step, "data": data}}), flush=True)

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch-size", type=int)
    p.add_argument("--warmup", type=int)
    p.add_argument("--iters", type=int)
    a = p.parse_args()
    rates = []
    for i in range(a.warmup + a.iters):
        t0 = time.perf_counter()
        loss = {step}
        rate = a.batch_size / (time.perf_counter() - t0)
        if i >= a.warmup:
            rates.append(rate)
        dllogger([0, i], {{"train.loss": loss, "train.total_ips": rate}})
    dllogger([], {{"train.total_ips": sum(rates) / len(rates)}})

if __name__ == "__main__":
    main()
'''
STEP = "train_step(a.batch_size)"
STEP_FN = '''
import time

def train_step(batch, repeat={repeat}):
    for _ in range(repeat):
        time.sleep(0.01)
    return 1.0 / batch
'''
WORKLOAD = "python {script} --batch-size {{batch_size}} --warmup {{warmup_iters}} --iters {{iters}}"
# The script imports nothing but the standard library: the "framework" every node must have is one of its modules
INIT = ("--format", "dllogger", "--batch-size", "64", "--launch", "per-node", "--framework", "json")
# Sessions short enough for a test: the step is the script's, the counts are the harness's.
FAST = (*UNUSED_PLUGINS, *QUICK_PROBES, "--dlperf-plots=off", "--dlperf-warmup-iters", "3", "--dlperf-iters", "30",
        "--dlperf-timeout", "180")


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv holding pytest-dlperf from a wheel built of this checkout (the rest from the packages of the
    interpreter running the tests, which it sees: a virtualenv's own where the tests run in one): what
    `pip install pytest-dlperf` gives a user."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"  # a copy: building in the checkout would leave build/ there
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", "__pycache__", "build", "*.egg-info", ".dlperf",
                                                             "tests", "benchmarks", ".venv"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    str(tmp / "dist"), str(src)], check=True, capture_output=True, timeout=300)
    wheel = next((tmp / "dist").glob("pytest_dlperf-*.whl"))
    env = tmp / "venv"
    python_over_this_one(env)
    subprocess.run([str(env / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
                   check=True, capture_output=True, timeout=300)
    where = subprocess.run([str(env / "bin" / "python"), "-c", "import pytest_dlperf, importlib.metadata as m; "
                            "print(pytest_dlperf.__file__); print(m.distribution('pytest-dlperf').read_text("
                            "'direct_url.json'))"], capture_output=True, text=True, cwd=tmp, env=user_env(env))
    path, direct = where.stdout.splitlines()
    # the wheel's files in the virtualenv (PEP 610: installed from an archive, not an editable directory)
    assert Path(path).is_relative_to(env) and json.loads(direct)["url"].endswith(wheel.name), where.stdout + where.stderr
    assert "dir_info" not in json.loads(direct), direct
    return env


def user_env(venv: Path) -> dict[str, str]:
    """A user's shell with the virtualenv active: nothing of this checkout on the path, no CI (a HOST verdict
    of the gated run is skipped, as on a terminal)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CI", "BUILD_NUMBER", "GITHUB_ACTIONS",
                                                            "GITHUB_STEP_SUMMARY", "VIRTUAL_ENV")}
    return {**env, "PATH": f"{venv / 'bin'}:{env.get('PATH', '')}", "VIRTUAL_ENV": str(venv)}


def run(venv: Path, repo: Path, *argv: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """``argv`` in the repository, in the user's shell; its wall time printed (shown on a failure, and with -s)."""
    t0 = time.monotonic()
    r = subprocess.run(list(argv), cwd=repo, capture_output=True, text=True, env=user_env(venv), timeout=timeout)
    print(f"{time.monotonic() - t0:6.1f}s rc={r.returncode} {shlex.join(argv[:12])}")
    return r


def recipe_command(repo: Path, base: str, head: str) -> list[str]:
    """The pull-request workflow's own A/B command, as GitHub would run it for a pull request base..head."""
    lines = (repo / ".github/workflows/dlperf-pull-request.yml").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if "- name: The change against its base" in line)
    assert lines[at + 1].strip() == "run: >-", lines[at + 1]
    indent = len(lines[at + 1]) - len(lines[at + 1].lstrip())
    folded = []
    for line in lines[at + 2:]:
        if len(line) - len(line.lstrip()) <= indent or line.lstrip().startswith("#"):
            break
        folded.append(line.strip())
    text = " ".join(folded).replace("${{ steps.base.outputs.sha }}", base)  # the merge base, as its step says
    text = text.replace("${{ github.event.pull_request.head.sha }}", head)
    assert "${{" not in text, text
    return shlex.split(text)


def verdicts(report: Path) -> dict[str, str]:
    doc = json.loads((report / "results.json").read_text())
    return {case: got.get("verdict", "error") for case, got in doc["ab"]["cases"].items()}


def new_repo(tmp: Path, name: str) -> Path:
    repo = tmp / name
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    return repo


def init(venv: Path, repo: Path, *args: str) -> None:
    r = run(venv, repo, "dlperf", "init", *args, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "pytest perf --update-baselines" in r.stdout, r.stdout  # the next commands
    collected = run(venv, repo, "python", "-m", "pytest", "perf", "--collect-only", "-q", *UNUSED_PLUGINS, timeout=120)
    assert collected.returncode == 0 and "2 tests collected" in collected.stdout, collected.stdout + collected.stderr


def ab(venv: Path, repo: Path, tmp: Path, base: str, head: str, *more: str) -> tuple[int, dict[str, str], str]:
    """The recipe's command for base..head, with a tolerance that leaves a harmless change inside whatever the
    host does (the step sleeps); the slow commits are twice as slow."""
    report = tmp / f"ab-{base[:7]}-{head[:7]}"
    cmd = [*recipe_command(repo, base, head), *FAST, f"--dlperf-report={report}", "--dlperf-ab-tolerance", "0.1", *more]
    r = run(venv, repo, *cmd)
    return r.returncode, verdicts(report) if (report / "results.json").exists() else {}, r.stdout + r.stderr


def bisect(venv: Path, repo: Path, tmp: Path, good: str, bad: str, *more: str) -> subprocess.CompletedProcess[str]:
    # From the harmless commit before the slow one: every probe is of a slow commit (the recipe's own command
    # shows a harmless change is not SLOWER); each probe an A/B session.
    return run(venv, repo, "dlperf", "bisect", "--repo", ".", "--good", good, "--bad", bad, *more,
               "--steps", str(tmp / "steps.json"), "--", "perf", "-k", "1n1g", *FAST, "--dlperf-ab-tolerance", "0.25",
               "--dlperf-ab-max-pairs", "6", f"--dlperf-env-cache={tmp / 'envs'}", timeout=1500)


@pytest.mark.slow  # a wheel, a virtualenv and about 30 launches: a minute or more
def test_training_code_in_a_users_repository(venv, tmp_path):
    """init, first run (skips, naming the next command), record, gate; the pull-request recipe flags the
    commit that slowed the script and not a harmless one; bisect names that commit."""
    repo = new_repo(tmp_path, "user")
    script = TRAIN.format(imports=STEP_FN.format(repeat=1), step=STEP)
    commit(repo, "train.py", **{"train.py": script})
    init(venv, repo, "--workload", WORKLOAD.format(script="train.py"), *INIT)
    commit(repo, "dlperf init")

    first = run(venv, repo, "python", "-m", "pytest", "perf", "-k", "1n1g", *FAST, "--dlperf-repeats", "1")
    assert first.returncode == 0 and "1 skipped" in first.stdout, first.stdout + first.stderr
    assert "Record one with --update-baselines" in first.stdout, first.stdout

    rec = run(venv, repo, "python", "-m", "pytest", "perf", "-k", "1n1g", "--update-baselines", *FAST,
              "--dlperf-repeats", "4")
    assert rec.returncode == 0, rec.stdout + rec.stderr
    assert len(list((repo / "perf" / "baselines").glob("*.json"))) == 1, rec.stdout
    gated = run(venv, repo, "python", "-m", "pytest", "perf", "-k", "1n1g", *FAST, "--dlperf-report=gated")
    assert gated.returncode == 0, gated.stdout + gated.stderr
    doc = json.loads((repo / "gated" / "results.json").read_text())
    assert [c["verdict"]["throughput"]["status"] for c in doc["cases"]] != ["missing"], gated.stdout  # judged
    shutil.rmtree(repo / "gated")
    good = commit(repo, "baselines: this machine")

    harmless = commit(repo, "README", **{"README.md": "our training\n"})
    slow = commit(repo, "train_step: two passes", **{"train.py": TRAIN.format(imports=STEP_FN.format(repeat=2),
                                                                              step=STEP)})

    rc, got, out = ab(venv, repo, tmp_path, harmless, slow)
    assert rc == 1 and list(got.values()) == ["slower"], out
    rc, got, out = ab(venv, repo, tmp_path, good, harmless, "--dlperf-ab-max-pairs", "3")
    assert rc == 0 and "slower" not in got.values() and got, out

    # from the user's repository, through the installed wheel: one probe, of the bad end (the search between
    # the ends is tests/test_bisect_history.py's and tests/test_side_envs.py's; here it took two more minutes)
    found = bisect(venv, repo, tmp_path, harmless, slow)
    assert found.returncode == 0 and f"first bad: {slow}" in found.stdout, found.stdout + found.stderr
    assert f"last good: {harmless}" in found.stdout, found.stdout


LIBRARY = pyproject("fasttrain", "fasttrain")


@pytest.mark.slow
def test_a_library_in_a_users_repository(venv, tmp_path):
    """A library's repository: its benchmark script calls the library, installed into the user's
    environment; the pull-request recipe installs each commit (rev=REF install=.) and flags the commit that
    slowed the library, and not a harmless one."""
    repo = new_repo(tmp_path, "fasttrain")
    script = TRAIN.format(imports="from fasttrain import train_step", step=STEP)
    lib = STEP_FN.format(repeat=1)
    good = commit(repo, "fasttrain 1.0", **{"pyproject.toml": LIBRARY, "fasttrain.py": lib, "bench.py": script})
    installed = run(venv, repo, "python", "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", ".",
                    timeout=300)
    assert installed.returncode == 0, installed.stdout + installed.stderr  # the recipe's `pip install .`
    init(venv, repo, "--workload", WORKLOAD.format(script="bench.py"), *INIT, "--library")
    assert "install=. name=base" in (repo / ".github/workflows/dlperf-pull-request.yml").read_text()
    commit(repo, "dlperf init")
    harmless = commit(repo, "README", **{"README.md": "fast training steps\n"})
    slow = commit(repo, "train_step: two passes", **{"fasttrain.py": lib.replace("repeat=1", "repeat=2")})

    cache = f"--dlperf-env-cache={tmp_path / 'envs'}"
    rc, got, out = ab(venv, repo, tmp_path, harmless, slow, cache)
    assert rc == 1 and list(got.values()) == ["slower"], out
    rc, got, out = ab(venv, repo, tmp_path, good, harmless, cache, "--dlperf-ab-max-pairs", "3")
    assert rc == 0 and "slower" not in got.values() and got, out
    # `dlperf bisect --install .` over a library's commits: tests/test_side_envs.py (each probe is this A/B)
