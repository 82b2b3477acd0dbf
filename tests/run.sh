#!/usr/bin/env bash
# The README's test command: set up once (tests/setup.sh), then the tests in two phases. First the
# tests that judge the machine's speed (marked `exclusive`), one after another in one process; then
# the rest under pytest-xdist on two workers. In one `-n 2` run each exclusive test waited for the
# other worker's test to end and left that worker idle while it ran (docs/measurements.md, CI).
# Arguments go to both pytest runs (for example --durations=25, or -x).
set -uo pipefail
cd "$(dirname "$0")/.."
# Hundreds of pytest subprocesses import the project: let Python keep their compiled modules (and
# pytest its assertion-rewritten ones) in __pycache__, where a PYTHONDONTWRITEBYTECODE in the
# environment would have every process compile them again (docs/measurements.md, CI).
unset PYTHONDONTWRITEBYTECODE
bash tests/setup.sh || exit 1
# DLPERF_TESTS_TIER: a marker expression both phases keep to (e.g. "not real"); unset, every test runs once
tier="${DLPERF_TESTS_TIER:+ and (${DLPERF_TESTS_TIER})}"
python3 -m pytest tests/ -m "exclusive${tier}" "$@"
alone=$?
# The suite sessions the tests start take turns on the machine's one local lease: with a lease each, the two
# workers' trainings shared the 2 cores and the phase took longer (docs/testing.md)
python3 -m pytest tests/ -m "not exclusive${tier}" -n 2 "$@"
shared=$?
# pytest's exit 5 is "no test selected": fine for one phase (a -k that picks from the other), not both
if [ "$alone" -eq 5 ] && [ "$shared" -eq 5 ]; then
  exit 5
fi
for rc in "$alone" "$shared"; do
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ]; then
    exit "$rc"
  fi
done
exit 0
