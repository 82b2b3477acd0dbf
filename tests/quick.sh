#!/usr/bin/env bash
# The quick tier for the inner loop: every test not marked `real` (trains a real framework or starts sshd,
# Slurm, Ray or the ECS emulator), `exclusive` (judges the machine's speed), `needs_setup` (needs chromium,
# Apache Otava or the tf/paddle/ray extras) or `slow` (10 s or more alone), on three pytest-xdist workers (as CI's
# shared phase: one more than the project VM's 2 cores, docs/testing.md).
# It needs only `python3 -m pip install -e '.[test]'`: it does not run tests/setup.sh (no system package,
# daemon or Horovod build). CI runs every test (tests/run.sh); docs/testing.md has its time.
# Arguments go to pytest (e.g. -x, -k gate, --durations=30).
set -uo pipefail
cd "$(dirname "$0")/.."
# as tests/run.sh: the pytest subprocesses keep their compiled modules in __pycache__
unset PYTHONDONTWRITEBYTECODE
if ! python3 -c "import pytest_dlperf, xdist, importlinter, uv, six" 2>/dev/null; then
  echo "tests/quick.sh: the test extra is missing: run python3 -m pip install -e '.[test]' first" >&2
  exit 1
fi
# each launch of the suite sessions the tests start holds a core per node (--dlperf-local-lease core), as in CI's
# shared phase: two one-node launches run at once, and no two launches share a core
DLPERF_LOCAL_LEASE="${DLPERF_LOCAL_LEASE:-core}" exec python3 -m pytest tests/ -m "not real and not exclusive and not needs_setup and not slow" -n 3 "$@"
