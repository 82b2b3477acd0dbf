"""The suite's files ``dlperf init`` writes: pytest.ini (the folder is pytest's rootdir, so its
baselines and options are its own), the conftest declaring the user's command, the test, and
the baselines folder's note."""
from __future__ import annotations

from ..launchers.external import ExternalBenchmark
from .workload import Workload

GITIGNORE = ("# the sessions' reports (--dlperf-report moves them)\n.dlperf/\n"
             "# the lock a recording takes on its baseline file (filelock leaves it there): not a baseline\n"
             "baselines/*.lock\n")


def pytest_ini(backend: str | None) -> str:
    opts = f"\naddopts = --dlperf-backend={backend}" if backend else ""
    return f"""\
# pytest-dlperf's suite, written by `dlperf init`: run it from the repository's root as `pytest <this folder>`.
# This file makes the folder pytest's rootdir: its baselines live in baselines/ beside it, and the
# repository's own tests (test_*.py) are not collected with it, nor it with them (python_files).
[pytest]
python_files = dlperf_*.py{opts}
"""


def conftest(bench: ExternalBenchmark, work: Workload, suite_dir: str) -> str:
    """The user's command as an external benchmark (docs/external-benchmarks.md), in plain Python they own."""
    program = _wrapped([repr(a) for a in bench.program], "    program=(")
    models = bench.models
    sizes = ", ".join(f"{m!r}: ({bench.sizes['cpu'][m][0]}, {bench.sizes['cpu'][m][1]})" for m in models)
    return f'''\
"""This repository's training as a pytest-dlperf benchmark (written by `dlperf init`; edit it freely).

For every case (model x precision x topology, e.g. 1n1g: one node with one worker) the harness launches
the command below over the cluster's nodes ({bench.launch}), reads the throughput from node 0's output with
the {bench.format!r} parser, and gates it against this folder's baselines/. The placeholders are filled
per case: {{model_name}}, {{batch_size}} (per device), {{image_size}}, {{iters}}, {{world_size}} ...
(pytest-dlperf's docs/external-benchmarks.md).

    pytest {suite_dir}                        # gate (the first run skips every case: nothing recorded yet)
    pytest {suite_dir} --update-baselines     # record this machine's baselines
"""
from __future__ import annotations

from pathlib import Path

from pytest_dlperf.launchers.external import ExternalBenchmark, hookimpls

ROOT = Path(__file__).resolve().parent.parent  # the repository's root

TRAIN = ExternalBenchmark(
    name={bench.name!r},  # the --backend value ({suite_dir}/pytest.ini selects it)
    # the command's arguments; "{{script}}" is the first of files, as copied to each node
{program}
    format={bench.format!r},
    launch={bench.launch!r},  # torchrun on every node; per-node: the script itself, told its place by placeholders
    framework={bench.framework!r},  # the package every node must have, in one version
    # Copied to every node beside each other: add the repository's modules the script imports
    # (a library installed into the environment needs nothing here).
    files=(ROOT / {str(work.script)!r},),
    models={models!r},  # {{model}} and {{model_name}}: one case each
    # per device (batch, image or sequence size), on CPU nodes and on GPU nodes
    sizes={{"cpu": {{{sizes}}}, "gpu": {{{sizes}}}}},
)

pytest_dlperf_backends, pytest_dlperf_make_launcher = hookimpls(TRAIN)
'''


def _wrapped(items: list[str], head: str, width: int = 110) -> str:
    """``head`` then the items, comma-separated, wrapped under the first at ``width``, closing ``),``."""
    lines, line = [], head
    for i, item in enumerate(items):
        piece = item + (("),", ",),")[len(items) == 1] if i == len(items) - 1 else ", ")
        if len(line) + len(piece) > width and line.strip() != head.strip():
            lines.append(line.rstrip())
            line = " " * len(head)
        line += piece
    return "\n".join([*lines, line])


def external_test() -> str:
    return '''\
"""Every case of this repository's benchmark trains and is gated (written by `dlperf init`)."""
from __future__ import annotations


def test_train(dlperf_case, dlperf):
    result = dlperf.run(dlperf_case)
    assert result.median > 0
    if result.world_size_seen:  # formats that print the number of workers
        assert result.world_size_seen == dlperf_case.topology.world_size
'''


def builtin_test() -> str:
    return '''\
"""pytest-dlperf's built-in suite against this environment's stack (written by `dlperf init --builtin`):
every model x precision x topology trains for real and is gated against baselines/."""
from __future__ import annotations


def test_train(dlperf_case, dlperf):
    result = dlperf.run(dlperf_case)
    assert result.world_size_seen == dlperf_case.topology.world_size
    assert result.median > 0
'''


def baselines_readme(suite_dir: str) -> str:
    return f"""\
# Baselines

`pytest {suite_dir} --update-baselines` writes one file per hardware profile here (`<profile>.json`: the
machine's CPU or GPU model, cores or GPUs, and the framework's major version). A baseline is a fact of the
machine that recorded it: record on the machine that gates, and commit the file.
"""
