"""Run the benchmark suite in a pytest subprocess, as a user would: the one helper every test module uses."""
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUITES = ROOT / "suites"

# The tiny engine (tests/tiny): the harness's mechanisms without importing torch in every launch.
TINY_ENGINE = ("-p", "tests.tiny.plugin", "--backend", "tiny")
# One small case of the ddp model names: resnet50 fp32, batch 2, 32 px, one warm-up step.
SMALL_CASE = ("--dlperf-model", "resnet50", "--dlperf-precision", "fp32", "--dlperf-batch-size", "2",
              "--dlperf-image-size", "32", "--dlperf-warmup-iters", "1")
# Short hardware probes, and no pause between re-probes, where a test does not judge the hardware.
QUICK_PROBES = ("--dlperf-probe-seconds", "0.5", "--dlperf-reprobe-pause", "0")


# Plugins of this environment that the suite does not use and each subprocess would load (hypothesis's
# import alone took 0.9-1.2 s a session here; anyio's, which imports trio, 0.2-0.3 s); blocking a
# plugin that is not installed is a no-op.
UNUSED_PLUGINS = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:anyio")
# No PNG plots, which cost each session about as much as its imports (docs/measurements.md, CI): a test that
# looks at them gives --dlperf-plots=on after (tests/test_reports.py, tests/test_ab.py).
NO_PLOTS = ("--dlperf-plots=off",)


def command(*args: str, suite: Path | None = None, prefix: Sequence[str] = (), python: str | None = None) -> list[str]:
    """``python -m pytest SUITE -q -rfEs ... args`` (the repository's rootdir, no cache, no plots); ``python``:
    another interpreter than this one's (the local cluster's nodes run the workload with it too)."""
    return [*prefix, python or sys.executable, "-m", "pytest", str(suite or SUITES), *UNUSED_PLUGINS, "-q", "-rfEs",
            "--rootdir", str(ROOT), *NO_PLOTS, *args]


def run_suite(*args: str, suite: Path | None = None, env: Mapping[str, str] | None = None,
              base_env: Mapping[str, str] | None = None, timeout: float = 600,
              prefix: Sequence[str] = (), python: str | None = None) -> subprocess.CompletedProcess:
    """Run the suite with ``args`` from the repository's root; ``env`` is added to ``base_env``
    (default: this process's environment)."""
    return subprocess.run(command(*args, suite=suite, prefix=prefix, python=python), cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout,
                          env={**(os.environ if base_env is None else base_env), **(env or {})})


def python_over_this_one(directory: Path) -> Path:
    """A second Python environment over the packages of the interpreter running the tests: a venv whose
    site-packages adds this interpreter's site directories (their .pth files too: an editable install's);
    its site-packages. ``venv --system-site-packages`` would see the base interpreter's packages instead,
    which, where the tests run inside a venv, lack everything installed there (issue #55)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(directory)], check=True, capture_output=True)
    site = next(directory.glob("lib/python*/site-packages"))
    ours = [p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and Path(p).is_dir()]
    (site / "_dlperf_parent.pth").write_text(f"import site; list(map(site.addsitedir, {ours!r}))\n")
    return site


def python_holding_more(directory: Path, mib: int) -> str:
    """A second Python environment the project knows nothing of: a venv over this one's packages whose
    ``sitecustomize`` holds ``mib`` MiB more in every process it starts (a library that grew), as a
    user's upgraded stack would; its interpreter's path."""
    site = python_over_this_one(directory)
    (site / "sitecustomize.py").write_text(
        f"HELD = bytearray({mib} << 20)\nHELD[::4096] = b'\\x01' * len(range(0, len(HELD), 4096))  # touched: resident\n")
    return str(directory / "bin" / "python")
