"""Command-line options (one group) and their validation into a RunOptions spec."""
from __future__ import annotations

import argparse
import datetime as _dt
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

from .specs import PRECISIONS

CLUSTERS = ("local", "ssh", "aliyun")


def _number(kind: type, least: float, strict: bool, what: str):
    """An argparse type: ``kind`` at least ``least`` (above it when ``strict``), a clear error otherwise."""
    bound = f"{what} {'>' if strict else '>='} {least:g}"

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {bound}, got {text!r}") from None
        if not (value > least if strict else value >= least):
            raise argparse.ArgumentTypeError(f"expected {bound}, got {text!r}")
        return value

    return parse


positive_int = _number(int, 1, False, "a whole number")
non_negative_int = _number(int, 0, False, "a whole number")
positive_seconds = _number(float, 0, True, "seconds")
non_negative_seconds = _number(float, 0, False, "seconds")


def _csv(text: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list, got nothing")
    return items


def add_options(parser: pytest.Parser) -> None:
    g = parser.getgroup("dlperf", "distributed training benchmarks (pytest-dlperf)")
    g.addoption("--cluster", choices=CLUSTERS, default="local",
                help="where the nodes come from: local (processes on this machine, default), "
                     "ssh (--hosts/--hostfile), aliyun")
    g.addoption("--nodes", type=positive_int, default=None,
                help="largest number of nodes in the ladder (local default 2; ssh: the hosts given)")
    g.addoption("--gpus-per-node", type=positive_int, default=None, dest="gpus_per_node",
                help="devices per node (GPUs; on a CPU node, worker processes). Default: GPUs found, else 1")
    g.addoption("--backend", default="ddp", help="launch backend (ddp: PyTorch DDP via torchrun)")
    g.addoption("--model", type=_csv, default=None,
                help="models to train, comma-separated (default: every model of the backend)")
    g.addoption("--precision", type=_csv, default=None,
                help=f"precisions, comma-separated from {', '.join(PRECISIONS)} (default: all)")
    g.addoption("--batch-size", type=positive_int, default=None, dest="batch_size",
                help="samples per device per step (default: the hardware profile's, per model)")
    g.addoption("--image-size", type=positive_int, default=None, dest="image_size",
                help="image side in pixels (default: the hardware profile's, per model)")
    g.addoption("--repeats", type=positive_int, default=None,
                help="separate runs per case; mean and median are taken over them")
    g.addoption("--warmup-iters", type=non_negative_int, default=None, dest="warmup_iters",
                help="steps run before the measured window")
    g.addoption("--iters", type=positive_int, default=None,
                help="steps in the measured window (exactly, unless --window-seconds is given)")
    g.addoption("--window-seconds", type=non_negative_seconds, default=None, dest="window_seconds",
                help="size each measured window to about this many seconds at the warm-up's pace, "
                     "--iters steps at least (default: the profile's, 1.5 on CPU; 0: fixed --iters)")
    g.addoption("--dlperf-dryrun", action="store_true", default=False, dest="dlperf_dryrun",
                help="print the exact per-node commands of every case; train nothing")
    g.addoption("--dlperf-report", default=None, dest="dlperf_report", metavar="DIR",
                help="directory for results.json and run logs (default .dlperf/reports/<time>)")
    g.addoption("--dlperf-timeout", type=positive_seconds, default=900.0, dest="dlperf_timeout",
                help="seconds one run may take before every process is killed (default 900)")


@dataclass(frozen=True)
class RunOptions:
    """The validated options of a session."""

    cluster: str
    nodes: int | None
    gpus_per_node: int | None
    backend: str
    models: list[str] | None
    precisions: list[str]
    batch_size: int | None
    image_size: int | None
    repeats: int | None
    warmup_iters: int | None
    iters: int | None
    window_seconds: float | None
    dryrun: bool
    report_dir: Path
    timeout: float

    def to_dict(self) -> dict:
        d = asdict(self)
        d["report_dir"] = str(self.report_dir)
        return d


def from_config(config: pytest.Config) -> RunOptions:
    """Read and validate; a bad value raises pytest.UsageError (exit 4) naming the option."""
    get = config.getoption
    precisions = get("precision") or list(PRECISIONS)
    bad = [p for p in precisions if p not in PRECISIONS]
    if bad:
        raise pytest.UsageError(f"--precision: unknown {', '.join(bad)}; allowed: {', '.join(PRECISIONS)}")
    report = get("dlperf_report")
    workerinput = getattr(config, "workerinput", None)
    if workerinput and "dlperf_report_dir" in workerinput:  # an xdist worker: the controller's dir
        report_dir = Path(workerinput["dlperf_report_dir"])
    elif report:
        report_dir = Path(report).expanduser().resolve()
        if report_dir.exists() and not report_dir.is_dir():
            raise pytest.UsageError(f"--dlperf-report: {report_dir} exists and is not a directory")
    else:
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        report_dir = Path(config.rootpath) / ".dlperf" / "reports" / stamp
    return RunOptions(
        cluster=get("cluster"), nodes=get("nodes"), gpus_per_node=get("gpus_per_node"),
        backend=get("backend"), models=get("model"), precisions=list(dict.fromkeys(precisions)),
        batch_size=get("batch_size"), image_size=get("image_size"), repeats=get("repeats"),
        warmup_iters=get("warmup_iters"), iters=get("iters"), window_seconds=get("window_seconds"),
        dryrun=get("dlperf_dryrun"),
        report_dir=report_dir, timeout=get("dlperf_timeout"),
    )
