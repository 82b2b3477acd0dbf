#!/usr/bin/env bash
# The quick tier for the inner loop: every unit and tiny-engine test, i.e. every test not marked `real`
# (none trains a real framework or starts sshd, Slurm or the ECS emulator), in tests/run.sh's two
# phases. CI runs every test (tests/run.sh). Arguments go to both pytest runs (e.g. -x, -k gate).
exec env DLPERF_TESTS_TIER="not real" bash "$(dirname "$0")/run.sh" "$@"
