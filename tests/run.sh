#!/usr/bin/env bash
# The README's test command: set up once (tests/setup.sh), then the tests in two phases. First the
# tests that judge the machine's speed (marked `exclusive`), one after another in one process; then
# the rest under pytest-xdist on three workers, one more than the machine's cores: the cores stood 15% idle under
# two, while tests waited on daemons, sleeps and the leases (docs/testing.md). In one `-n` run of every test each
# exclusive test waited for the other workers' tests to end and left them idle while it ran (docs/measurements.md).
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
# The launch census (tests/census.py): each test's sessions log their launches into one directory for the run
census="${DLPERF_TESTS_CENSUS:-$(mktemp -d "${TMPDIR:-/tmp}/dlperf-census.XXXXXX")}"
export DLPERF_TESTS_CENSUS="$census"
DLPERF_TESTS_PHASE=exclusive python3 -m pytest tests/ -m "exclusive${tier}" "$@"
alone=$?
# The suite sessions the tests start hold a core per node of each launch (--dlperf-local-lease core): two one-node
# launches run at once, one on each core, a third waits, and a two-node launch waits for both (with a lease per
# session instead, the workers' trainings shared the 2 cores and the phase took longer: docs/testing.md)
DLPERF_TESTS_PHASE=shared DLPERF_LOCAL_LEASE="${DLPERF_LOCAL_LEASE:-core}" \
  python3 -m pytest tests/ -m "not exclusive${tier}" -n "${DLPERF_TESTS_WORKERS:-3}" "$@"
shared=$?
# what the run's launches cost, per phase and module; more real-framework launches than docs/testing.md allows fail
python3 -m tests.census "$census"
counted=$?
# pytest's exit 5 is "no test selected": fine for one phase (a -k that picks from the other), not both
if [ "$alone" -eq 5 ] && [ "$shared" -eq 5 ]; then
  exit 5
fi
for rc in "$alone" "$shared" "$counted"; do
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ]; then
    exit "$rc"
  fi
done
exit 0
