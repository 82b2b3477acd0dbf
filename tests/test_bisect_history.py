"""``dlperf bisect`` end to end on a real git history: a user's benchmark repository whose training
script gets slower at one commit; every probe is a real A/B session (a rev= worktree per side)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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


@pytest.mark.slow  # each step a fixed sleep (20 or 30 ms): the host's speed moves no verdict
def test_bisect_names_the_commit_that_made_training_slower(tmp_path):
    repo = tmp_path / "bench"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    good = commit(repo, "train: 20 ms a step", **{"conftest.py": CONFTEST, "test_bench.py": TEST,
                                                  "train.py": TRAIN.format(step=0.020)})
    c1 = commit(repo, "README", **{"README.md": "a benchmark\n"})
    c2 = commit(repo, "train: 30 ms a step", **{"train.py": TRAIN.format(step=0.030)})
    commit(repo, "README again", **{"README.md": "a benchmark, still\n"})
    commit(repo, "train: a comment", **{"train.py": "# steps\n" + TRAIN.format(step=0.030)})
    steps = tmp_path / "steps.json"
    cmd = [sys.executable, "-m", "pytest_dlperf.cli", "bisect", "--repo", str(repo), "--good", good, "--bad", "main",
           "--steps", str(steps), "--", str(repo), *UNUSED_PLUGINS, "--rootdir", str(repo), "--backend", "steps-bench",
           "--dlperf-nodes", "1", "--dlperf-probe-seconds", "0.5", "--dlperf-reprobe-pause", "0",
           f"--dlperf-baseline-dir={tmp_path / 'none'}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"first bad: {c2}" in r.stdout and f"last good: {c1}" in r.stdout, r.stdout
    probed = json.loads(steps.read_text())
    reports = sorted((tmp_path / "steps-probes").glob("probe-*/results.json"))
    assert len(reports) == 3, r.stdout  # the bad end, then 2 probes of a binary search over 5 items
    for path in reports:
        sides = json.loads(path.read_text())["ab"]["sides"]
        assert sides["reference"]["commit"] == good and sides["candidate"]["commit"] in r.stdout + json.dumps(probed)
    again = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert again.returncode == 0 and f"first bad: {c2}" in again.stdout, again.stdout + again.stderr
    assert len(list((tmp_path / "steps-probes").glob("probe-*.log"))) == 3  # resumed: no probe again
