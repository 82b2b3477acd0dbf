"""``dlperf bisect`` end to end on a real git history: a user's benchmark repository whose training
script gets slower at one commit; every probe is a real A/B session (a rev= worktree per side)."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.history_runs import Plan, write
from tests.suite import ROOT, UNUSED_PLUGINS

TRAIN = '''\
"""A user's training loop (standard library): one step is STEP seconds; DLLogger lines."""
import json, sys, time
STEP = {step}
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
batch, iters = int(args["--batch-size"]), int(args["--iters"])
for i in range(iters):
    t0 = time.perf_counter()
    time.sleep(STEP)
    print("DLLL " + json.dumps({{"type": "LOG", "step": [0, i],
                                "data": {{"train.total_ips": batch / (time.perf_counter() - t0)}}}}), flush=True)
'''
CONFTEST = '''\
from pathlib import Path
from pytest_dlperf.launchers.external import ExternalBenchmark, hookimpls
BENCH = ExternalBenchmark(name="steps-bench", launch="per-node", format="dllogger", framework="json",
                          files=(str(Path(__file__).parent / "train.py"),), models=("resnet50",),
                          sizes={"cpu": {"resnet50": (2, 32)}}, warmup_iters=2,
                          program=("{script}", "--batch-size", "{batch_size}", "--iters", "12"))
pytest_dlperf_backends, pytest_dlperf_make_launcher = hookimpls(BENCH)
'''
TEST = '''\
def test_bench(dlperf_case, dlperf):
    assert dlperf.run(dlperf_case).median > 0
'''


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@localhost", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def commit(repo: Path, message: str, **files: str) -> str:
    for name, text in files.items():
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD")


# the suite's own options, as a user's pytest.ini holds them: the printed bisect command adds none
PYTEST_INI = f"""\
[pytest]
python_files = test_bench.py
addopts = {" ".join(UNUSED_PLUGINS)} --dlperf-backend=steps-bench --dlperf-nodes=1 --dlperf-probe-seconds=0.5
  --dlperf-reprobe-pause=0 --dlperf-plots=off --dlperf-ab-max-pairs=40
"""
# 40 pairs, not 20: a commit that changed nothing must be shown the same, and on a loaded 2-core host (three
# test workers) its ratio's interval was still wider than the margin after 20 pairs ([0.976, 1.008])


@pytest.mark.needs_setup  # Apache Otava's change points find the nightly's step (tests/setup.sh installs it)
@pytest.mark.slow  # each step a fixed sleep (20 or 30 ms): the host's speed moves no verdict
def test_the_bisect_the_nightly_check_prints_runs_as_printed_and_names_the_commit(tmp_path):
    """A nightly history of the repository's suite (one real session's results.json, made nights at the good
    commit and then at main), ``dlperf history --check`` over it, and the bisect line it prints run as printed
    (its --repo and the suite's path are the runs' own): the commit that made training slower is named."""
    repo = tmp_path / "bench"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    good = commit(repo, "train: 20 ms a step", **{"conftest.py": CONFTEST, "test_bench.py": TEST, "pytest.ini": PYTEST_INI,
                                                  "train.py": TRAIN.format(step=0.020)})
    c1 = commit(repo, "README", **{"README.md": "a benchmark\n"})
    c2 = commit(repo, "train: 30 ms a step", **{"train.py": TRAIN.format(step=0.030)})
    commit(repo, "README again", **{"README.md": "a benchmark, still\n"})
    bad = commit(repo, "train: a comment", **{"train.py": "# steps\n" + TRAIN.format(step=0.030)})
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    night = subprocess.run([sys.executable, "-m", "pytest", "bench", f"--dlperf-report={tmp_path / 'night'}"],
                           cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert night.returncode == 0, night.stdout + night.stderr
    recorded = json.loads((tmp_path / "night" / "results.json").read_text())["environment"]["git"]
    assert recorded["top"] == str(repo) and recorded["paths"] == ["."], recorded
    write(Plan(nights=10, regression_at=6, drop=0.67, noise=0.01, commits=(good,) * 6 + (bad,) * 4),
          tmp_path / "history", template=tmp_path / "night" / "results.json")
    check = subprocess.run([sys.executable, "-m", "pytest_dlperf.cli", "history", str(tmp_path / "history"), "--check"],
                           cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert check.returncode == 1, check.stdout + check.stderr
    said = [ln for ln in check.stdout.splitlines() if "WORSE" in ln and "] throughput" in ln]
    assert len(said) == 1, check.stdout + check.stderr
    line = said[0]
    printed = line.split(f"commits {good[:12]}..{bad[:12]}: ", 1)[1]
    assert printed == shlex.join(["dlperf", "bisect", "--repo", str(repo), "--good", good[:12], "--bad", bad[:12], "--",
                                  str(repo), "-k", "resnet50-fp32-bs2-32px-1n1g"]), printed
    r = subprocess.run(shlex.split(printed), cwd=tmp_path, capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"first bad: {c2}" in r.stdout and f"last good: {c1}" in r.stdout, r.stdout
    steps = tmp_path / "dlperf-bisect.json"  # the default steps file, in the directory it ran in
    probed = json.loads(steps.read_text())
    reports = sorted((tmp_path / "dlperf-bisect-probes").glob("probe-*/results.json"))
    assert len(reports) == 3, r.stdout  # the bad end, then 2 probes of a binary search over 5 items
    for path in reports:
        sides = json.loads(path.read_text())["ab"]["sides"]
        assert sides["reference"]["commit"] == good and sides["candidate"]["commit"] in r.stdout + json.dumps(probed)
    again = subprocess.run(shlex.split(printed), cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert again.returncode == 0 and f"first bad: {c2}" in again.stdout, again.stdout + again.stderr
    assert len(list((tmp_path / "dlperf-bisect-probes").glob("probe-*.log"))) == 3  # resumed: no probe again
