"""The two GitHub Actions workflows ``dlperf init`` writes: the pull request against its base side by
side (A/B, no baseline), and the nightly on dedicated nodes against the committed baselines. Each says
what it measures and what it cannot."""
from __future__ import annotations

import shlex
import textwrap
from dataclasses import dataclass
from pathlib import Path

from ..ab.worktree import PROJECT_FILES  # a project pip installs

PULL_REQUEST = ".github/workflows/dlperf-pull-request.yml"
NIGHTLY = ".github/workflows/dlperf-nightly.yml"
BASE = "${{ steps.base.outputs.sha }}"  # the merge base of the pull request's head and its base branch
HEAD = "${{ github.event.pull_request.head.sha }}"
CPU_TORCH = "-m pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"  # after the python
VENV = ".venv-dlperf"  # the nightly's virtualenv, in the workspace (checkout's clean removes it each night)


@dataclass(frozen=True)
class Setup:
    """What the recipes need to know of the repository: the suite's folder, how its own code is
    installed, whether each side installs the repository at its commit (a library), and the requirement
    that installs pytest-dlperf on a runner (None: the user must fill it in)."""

    suite_dir: str
    library: bool
    installs: tuple[str, ...]  # after pytest-dlperf, the python's arguments: the repository's own requirements
    dlperf_spec: str | None

    @classmethod
    def of(cls, top: Path, suite_dir: str, library: bool, dlperf_spec: str | None) -> Setup:
        lines = []
        if (top / "requirements.txt").is_file():
            lines.append("-m pip install -r requirements.txt")
        if any((top / f).is_file() for f in PROJECT_FILES):
            lines.append("-m pip install .")
        return cls(suite_dir, library, tuple(lines), dlperf_spec)

    @property
    def side_words(self) -> str:
        """What each side adds to its rev=: the repository installed at that commit, for a library."""
        return " install=." if self.library else ""

    def measures(self) -> str:
        if self.library:
            return ("the library in this repository at the pull request's head against its base: each side installs "
                    "the repository at its commit (rev=REF install=.) into an environment made over the runner's "
                    "python, and runs the same benchmark")
        return ("this repository's training at the pull request's head against its base: each side runs the "
                "benchmark's files (the training script in the suite's conftest.py) as they are at its commit (rev=)")

    def dlperf_line(self, python: str) -> str:
        """The install of pytest-dlperf: its requirement, or a line that fails saying what to fill in."""
        if self.dlperf_spec is None:
            return ("echo 'dlperf: fill in how to install pytest-dlperf here (dlperf init --dlperf-from SPEC)' >&2"
                    " && exit 1")
        return f"{python} -m pip install {shlex.quote(self.dlperf_spec)}"

    def install_block(self, python: str, gpu_note: bool = False) -> str:
        torch = [f"{python} {CPU_TORCH}"]
        if gpu_note:
            torch = ["# On GPU nodes, the CUDA wheel instead of the CPU one (PyPI's default torch is built for CUDA):",
                     f"# {python} -m pip install torch==<the version your nodes run>", *torch]
        lines = [*torch, self.dlperf_line(python), *(f"{python} {a}" for a in self.installs)]
        return "\n".join(f"          {ln}" for ln in lines)


HISTORY_SCRIPT = """\
set -euo pipefail
if [ ! -f dlperf-report/results.json ]; then
  echo "dlperf: no results.json tonight (the session ended before writing it): nothing to keep"
  exit 0
fi
# a reused workspace (a self-hosted runner) still has last night's worktree: start from the branch as pushed
git worktree remove --force ../history 2>/dev/null || rm -rf ../history
git worktree prune
if git ls-remote --exit-code --heads origin dlperf-history >/dev/null; then
  git fetch -q origin dlperf-history
  git worktree add -q --detach ../history FETCH_HEAD
else
  git worktree add -q --detach ../history
  git -C ../history checkout -q --orphan dlperf-history
  git -C ../history rm -rqf --ignore-unmatch .
fi
night="../history/runs/$(date -u +%Y%m%dT%H%M%S)-${GITHUB_SHA::12}"
mkdir -p "$night"
cp dlperf-report/results.json "$night/"
git -C ../history add runs
git -C ../history -c user.name=dlperf -c user.email=dlperf@users.noreply.github.com \\
  commit -qm "dlperf nightly $(date -u +%F) at ${GITHUB_SHA::12}"
# another runner may have pushed since the fetch: take its nights and push again
for try in 1 2 3 4 5; do
  if git -C ../history push -q origin HEAD:dlperf-history; then
    exit 0
  fi
  sleep "$try"
  git -C ../history fetch -q origin dlperf-history
  git -C ../history -c user.name=dlperf -c user.email=dlperf@users.noreply.github.com rebase -q FETCH_HEAD
done
echo "dlperf: could not push tonight's results to dlperf-history after 5 tries" >&2
exit 1
"""


def indented(text: str, spaces: int = 10) -> str:
    """A shell script as a ``run: |`` block's lines."""
    return "\n".join(" " * spaces + ln if ln else "" for ln in text.splitlines())


def _comment(text: str) -> str:
    return "\n".join(textwrap.wrap(text, 104, initial_indent="# ", subsequent_indent="# "))


def pull_request(s: Setup) -> str:
    d = s.suite_dir
    BASE_SHA = "${{ github.event.pull_request.base.sha }}"  # noqa: N806 - as the workflow names it
    return f"""\
# dlperf: this pull request against its base, side by side on one runner (A/B). Written by `dlperf init`.
{_comment("Measures " + s.measures() + ".")}
# Both sides run in interleaved pairs of launches on the same machine, so a host that drifts meets both
# alike: no stored baseline is needed. Per case: SLOWER fails the job; SAME and FASTER pass; UNDECIDED
# passes with a warning (--dlperf-undecided fail to fail it).
# Cannot see: a change to pytest-dlperf or to anything the runner installs (one environment runs both
# sides: the nightly sees those), and scaling across nodes (-k 1n1g: one worker on one machine).
name: dlperf A/B (this change against its base)
on:
  pull_request:
jobs:
  ab:
    # A hosted runner is shared: fine for an A/B, whose pairs are adjacent in time. For GPUs use your own
    # runner's labels, e.g. [self-hosted, linux, gpu] (and drop the CPU torch line below).
    runs-on: ubuntu-latest
    timeout-minutes: 120
    steps:
      - uses: actions/checkout@v4
        with:
          fetch-depth: 0  # both commits must be in the clone: each side checks its commit out (rev=)
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - name: Install (the CPU wheel of torch on a runner without CUDA)
        run: |
{s.install_block("python")}
      # the pull request's own change: its head against where it left the base branch (the merge base), so
      # commits the base branch gained since do not count against it
      - name: The merge base
        id: base
        run: echo "sha=$(git merge-base {BASE_SHA} {HEAD})" >> "$GITHUB_OUTPUT"
      - name: The change against its base, in pairs
        run: >-
          python -m pytest {d} -k "1n1g"
          --dlperf-reference "rev={BASE}{s.side_words} name=base"
          --dlperf-candidate "rev={HEAD}{s.side_words} name=change"
          --dlperf-report=dlperf-report
      # The session appends its summary.md to the job's summary itself (GITHUB_STEP_SUMMARY).
      - uses: actions/upload-artifact@v4
        if: always()
        with:
          name: dlperf-report
          path: dlperf-report
"""


def nightly(s: Setup) -> str:
    d = s.suite_dir
    return f"""\
# dlperf: a nightly on dedicated nodes against the baselines committed in {d}/baselines/. Written by `dlperf init`.
# Measures every case of the suite (the whole ladder of topologies the nodes allow) with everything the
# nodes run: this repository's code, pytest-dlperf, torch, the drivers and libraries installed there.
# Record on these nodes first and commit the file: `pytest {d} --update-baselines`, then `git add {d}/baselines`.
# The stored baseline screens each case; a case that fails its screen while nothing recorded differs from
# the recording is HOST (it fails here: CI is set); one whose software differs (a commit, packages,
# variables) runs again side by side with the recorded software, and only a confirmed slow-down is a
# REGRESSION. Cannot see: a machine other than the one that recorded (HARDWARE): record on each.
name: dlperf nightly (stored baselines, confirmed side by side)
on:
  schedule:
    - cron: "0 2 * * *"
  workflow_dispatch:
permissions:
  contents: write  # the history branch below
jobs:
  nightly:
    # The machine that recorded {d}/baselines/<profile>.json.
    runs-on: [self-hosted, linux, dlperf]
    timeout-minutes: 360
    concurrency: dlperf-nodes  # one session at a time on the nodes
    steps:
      - uses: actions/checkout@v4
        with:
          fetch-depth: 0  # the recorded commits must be in the clone: a confirmation checks their files out (rev=)
      - name: Install into a virtualenv (a system python refuses pip installs on Debian and Ubuntu)
        run: |
          python3 -m venv {VENV}
{s.install_block(f"{VENV}/bin/python", gpu_note=True)}
      - name: Screen against the stored baselines; confirm a failure side by side
        run: {VENV}/bin/python -m pytest {d} --dlperf-report=dlperf-report
      - uses: actions/upload-artifact@v4
        if: always()
        with:
          name: dlperf-report
          path: dlperf-report
      # Every night's results.json kept on the branch dlperf-history (artifacts expire, a branch does not).
      - name: Keep tonight's results on the dlperf-history branch
        if: always()
        run: |
{indented(HISTORY_SCRIPT)}
      # A slow creep no single night's gate sees: a worse change point new tonight (found two nights running,
      # never before) fails the job once, naming the case, the size, the commits and the bisect command.
      - name: A new change point in the history fails the nightly
        if: always()
        run: |
          {VENV}/bin/python -m pip install -q --no-deps apache-otava==0.8.0
          {VENV}/bin/dlperf history ../history/runs --check -o dlperf-history-site
      - uses: actions/upload-artifact@v4
        if: always()
        with:
          name: dlperf-history-site
          path: dlperf-history-site
"""
