#!/usr/bin/env python3
"""The GPU watcher: NVML's view of a node's GPUs, read beside a launch and outside its processes.

Started by the harness in front of every GPU node's launch command (as the pace probe is on CPU
nodes; a launcher that starts every node from node 0 has node 0's only)::

    python3 nvmlwatch.py --output gpu.log --devices K [--period 0.1] -- <launch command ...>

It runs the command as its child, passes SIGTERM, SIGINT and SIGHUP on to it, reads NVML (the
``pynvml`` module of nvidia-ml-py) every ``--period`` seconds while the command runs and once more
after, and exits with the command's status. The training processes never load NVML: their window
is what it was without the watcher. It watches the first K GPUs of the node's
``CUDA_VISIBLE_DEVICES`` (indices or UUIDs; every GPU where it is unset), in that order, which is
the order the ranks take them in (``cuda:<local rank>``) where the node's GPUs are of one kind.

What it reads, per GPU:

- **utilisation**: NVML's samples of "the percent of time over the past sample period during which
  one or more kernels was executing on the GPU" (``nvmlDeviceGetSamples`` with
  ``NVML_GPU_UTILIZATION_SAMPLES``: the driver keeps them with their time, a Unix time in
  microseconds, one every 1/6 s to 1 s depending on the product), each new one once. Where the
  driver keeps none, or their times are not this host's Unix time, ``nvmlDeviceGetUtilizationRates``
  at every read instead (``# source rates``), timed by the read.
- **energy**: ``nvmlDeviceGetTotalEnergyConsumption``, the GPU's energy since the driver loaded, in
  millijoules (Volta and newer), at every read, timed on the host's ``perf_counter``.

Without nvidia-ml-py, or where NVML cannot start, the log says why and the command runs as it would
without the watcher. Standard library and pynvml only; imports nothing from the harness.

Contract with the harness, version 1: the ``--output`` file, text::

    # dlperf-gpuwatch 1 period=0.1 perf=<perf_counter> wall=<time.time()>
    # device <k> <uuid> <name>        each watched GPU; k its place in CUDA's order (cuda:k)
    # source samples|rates            how the utilisation lines were taken
    u <k> <Unix time, s> <percent>     a utilisation sample (the end of the period it covers)
    e <k> <perf_counter> <mJ>          the energy counter at a read
    # note <what>                      a figure this GPU does not give (the energy counter before Volta)
    # error <why>                      NVML could not be read at all

``perf`` and ``wall`` are the host's monotonic clock (the step logs') and the Unix time read together,
so the harness can place rank 0's window on every node's clocks (``pace.py`` does the same).
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any, TextIO

VERSION = 1
CLOCK_SLACK = 10.0  # seconds: driver sample times further than this from the host's Unix time are not Unix time


class NotWatchable(Exception):
    """The node's GPUs cannot be watched (no NVML, a MIG device, no GPU visible): the log says why."""


@dataclass
class Gpu:
    """One watched GPU: its place in CUDA's order, NVML handle, the newest sample read, whether it counts energy."""

    k: int
    handle: Any
    last: int = 0  # the newest utilisation sample's time read so far (microseconds)
    energy: bool = True


def visible(nv: Any, wanted: int) -> list[Any]:
    """NVML handles of the first ``wanted`` GPUs CUDA shows this node's processes, in CUDA's order."""
    count = nv.nvmlDeviceGetCount()
    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    if given is None:
        handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
    else:
        uuids = [nv.nvmlDeviceGetUUID(nv.nvmlDeviceGetHandleByIndex(i)) for i in range(count)]
        handles = []
        for entry in (e.strip() for e in given.split(",")):
            if entry.startswith("MIG-"):
                raise NotWatchable(f"CUDA_VISIBLE_DEVICES names a MIG instance ({entry}): NVML reports no "
                                   "utilisation or energy of its own for one")
            if entry.isdigit() and int(entry) < count:
                handles.append(nv.nvmlDeviceGetHandleByIndex(int(entry)))
            elif entry.startswith("GPU-") and (hit := [i for i, u in enumerate(uuids) if u.startswith(entry)]):
                handles.append(nv.nvmlDeviceGetHandleByIndex(hit[0]))
            else:
                break  # CUDA stops at the first entry it cannot use
    if len(handles) < wanted:
        raise NotWatchable(f"{len(handles)} GPU(s) visible to the launch (CUDA_VISIBLE_DEVICES={given!r}, "
                           f"NVML counts {count}); the case uses {wanted}")
    return handles[:wanted]


def start(wanted: int, log: TextIO) -> tuple[Any, list[Gpu], str]:
    """NVML started, the GPUs to watch (said in the log) and how utilisation is read; NotWatchable."""
    try:
        import pynvml as nv
    except ImportError as exc:
        raise NotWatchable(f"ImportError: {exc} (pip install nvidia-ml-py, or 'pytest-dlperf[gpu]', on the "
                           "node)") from None
    try:
        nv.nvmlInit()
    except nv.NVMLError as exc:
        raise NotWatchable(f"NVML did not start: {type(exc).__name__}: {exc}") from None
    gpus = [Gpu(k, h) for k, h in enumerate(visible(nv, wanted))]
    for g in gpus:
        log.write(f"# device {g.k} {nv.nvmlDeviceGetUUID(g.handle)} {nv.nvmlDeviceGetName(g.handle)}\n")
    source = "samples" if all(_samples_are_unix_time(nv, g, log) for g in gpus) else "rates"
    log.write(f"# source {source}\n")
    return nv, gpus, source


def _samples_are_unix_time(nv: Any, g: Gpu, log: TextIO) -> bool:
    """Whether the driver keeps utilisation samples whose times are this host's Unix time."""
    try:
        _, got = nv.nvmlDeviceGetSamples(g.handle, nv.NVML_GPU_UTILIZATION_SAMPLES, 0)
    except nv.NVMLError as exc:
        log.write(f"# note utilisation samples of GPU {g.k}: {type(exc).__name__}: {exc}; read as rates\n")
        return False
    newest = max((s.timeStamp for s in got), default=0)
    if abs(newest / 1e6 - time.time()) > CLOCK_SLACK:
        log.write(f"# note utilisation samples of GPU {g.k} carry times {newest} not near this host's Unix "
                  "time; read as rates\n")
        return False
    return True


def read(nv: Any, gpus: list[Gpu], source: str, log: TextIO) -> None:
    """One read of every watched GPU: its new utilisation samples (or its rate now) and its energy counter."""
    for g in gpus:
        if source == "samples":
            try:
                _, got = nv.nvmlDeviceGetSamples(g.handle, nv.NVML_GPU_UTILIZATION_SAMPLES, g.last)
            except nv.NVMLError_NotFound:
                got = []  # no sample since the last read
            for s in sorted(got, key=lambda s: s.timeStamp):
                if s.timeStamp > g.last:
                    log.write(f"u {g.k} {s.timeStamp / 1e6:.6f} {s.sampleValue.uiVal}\n")
                    g.last = s.timeStamp
        else:
            log.write(f"u {g.k} {time.time():.6f} {nv.nvmlDeviceGetUtilizationRates(g.handle).gpu}\n")
        if g.energy:
            try:
                mj = nv.nvmlDeviceGetTotalEnergyConsumption(g.handle)
                log.write(f"e {g.k} {time.perf_counter():.6f} {mj}\n")
            except nv.NVMLError as exc:
                g.energy = False
                log.write(f"# note energy of GPU {g.k}: {type(exc).__name__}: {exc}\n")


def watch(output: str, devices: int, period: float, child: subprocess.Popen) -> None:
    """Write the log (contract above) until ``child`` ends; any NVML failure is said, never raised."""
    with open(output, "w", buffering=1) as log:
        perf, wall, after = time.perf_counter(), time.time(), time.perf_counter()
        log.write(f"# dlperf-gpuwatch {VERSION} period={period:g} perf={(perf + after) / 2:.6f} wall={wall:.6f}\n")
        nv = None
        try:
            nv, gpus, source = start(devices, log)
            while child.poll() is None:
                read(nv, gpus, source, log)
                time.sleep(period)
            read(nv, gpus, source, log)
        except NotWatchable as exc:
            log.write(f"# error {exc}\n")
        except Exception as exc:  # noqa: BLE001 - the launch goes on whatever NVML does
            log.write(f"# error {type(exc).__name__}: {exc}\n")
        finally:
            if nv is not None:
                try:
                    nv.nvmlShutdown()
                except Exception:  # noqa: BLE001
                    pass


def run(output: str, devices: int, period: float, command: list[str]) -> int:
    """Run ``command`` with the watcher beside it; the command's exit status."""
    try:
        child = subprocess.Popen(command)
    except OSError as exc:
        print(f"nvmlwatch.py: cannot start {command[0]!r}: {exc}", file=sys.stderr)
        return 127

    def forward(signum: int, _frame: object) -> None:
        if child.poll() is None:
            child.send_signal(signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)
    watch(output, devices, period, child)
    rc = child.wait()
    return 128 - rc if rc < 0 else rc


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--output", required=True, help="the watcher's log (contract above)")
    p.add_argument("--devices", type=int, default=1, help="GPUs the launch uses on this node (default 1)")
    p.add_argument("--period", type=float, default=0.1, help="seconds between reads (default 0.1)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- then the launch command")
    a = p.parse_args(argv)
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not command:
        p.error("no command to run: nvmlwatch.py --output FILE -- COMMAND ...")
    if not a.period > 0 or a.devices < 1:
        p.error(f"--period must be above 0 and --devices at least 1, got {a.period} and {a.devices}")
    return run(a.output, a.devices, a.period, command)


if __name__ == "__main__":
    sys.exit(main())
