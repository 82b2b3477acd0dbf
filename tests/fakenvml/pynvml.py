"""A stand-in for nvidia-ml-py's ``pynvml``, for the GPU watcher's tests on machines without a GPU.

It has the calls node/nvmlwatch.py makes, returning what nvidia-ml-py 13.615.71 returns for them
(read from its pynvml.py): ``nvmlDeviceGetSamples`` gives (value type, samples) whose items carry
``timeStamp`` (microseconds, Unix time) and ``sampleValue.uiVal``, and raises ``NVMLError_NotFound``
where no sample is newer than the one asked after; ``nvmlDeviceGetUtilizationRates`` an object with
``.gpu``; ``nvmlDeviceGetTotalEnergyConsumption`` millijoules as an int. Its "driver" takes a
utilisation sample every ``period`` seconds of this host's Unix time and counts energy at a fixed
power on the host's monotonic clock. What it stands for is set by FAKE_NVML (JSON):

    {"devices": [{"uuid": "GPU-...", "name": "...", "util": 97, "watts": 700.0, "energy": true}],
     "period": 0.05, "samples": true, "clock_offset": 0.0, "init_error": ""}

``samples: false`` answers NotSupported to nvmlDeviceGetSamples; ``clock_offset`` shifts the samples'
times away from Unix time; ``init_error`` makes nvmlInit fail with that NVML error's name.
"""
from __future__ import annotations

import json
import math
import os
import time
from types import SimpleNamespace

NVML_GPU_UTILIZATION_SAMPLES = 1
NVML_VALUE_TYPE_UNSIGNED_INT = 1
CONFIG = json.loads(os.environ.get("FAKE_NVML", "{}"))
DEVICES = CONFIG.get("devices", [{"uuid": "GPU-00000000-0000-0000-0000-000000000000", "name": "NVIDIA H100 80GB HBM3",
                                  "util": 100, "watts": 700.0}])
BUFFER = 120  # samples the "driver" keeps


class NVMLError(Exception):
    pass


class NVMLError_NotFound(NVMLError):  # noqa: N801 - pynvml's own names
    pass


class NVMLError_NotSupported(NVMLError):  # noqa: N801
    pass


class NVMLError_DriverNotLoaded(NVMLError):  # noqa: N801
    pass


def nvmlInit() -> None:  # noqa: N802
    if CONFIG.get("init_error"):
        raise globals()[CONFIG["init_error"]](CONFIG["init_error"].removeprefix("NVMLError_"))


def nvmlShutdown() -> None:  # noqa: N802
    pass


def nvmlDeviceGetCount() -> int:  # noqa: N802
    return len(DEVICES)


def nvmlDeviceGetHandleByIndex(i: int) -> dict:  # noqa: N802
    return DEVICES[i]


def nvmlDeviceGetUUID(h: dict) -> str:  # noqa: N802
    return h["uuid"]


def nvmlDeviceGetName(h: dict) -> str:  # noqa: N802
    return h["name"]


def nvmlDeviceGetSamples(h: dict, kind: int, last: int) -> tuple[int, list]:  # noqa: N802
    if not CONFIG.get("samples", True):
        raise NVMLError_NotSupported("Not Supported")
    period = CONFIG.get("period", 0.05)
    newest = math.floor(time.time() / period)
    times = [(k * period + CONFIG.get("clock_offset", 0.0)) for k in range(newest - BUFFER, newest + 1)]
    got = [SimpleNamespace(timeStamp=int(t * 1e6), sampleValue=SimpleNamespace(uiVal=h["util"]))
           for t in times if int(t * 1e6) > last]
    if not got:
        raise NVMLError_NotFound("Not Found")
    return NVML_VALUE_TYPE_UNSIGNED_INT, got


def nvmlDeviceGetUtilizationRates(h: dict) -> SimpleNamespace:  # noqa: N802
    return SimpleNamespace(gpu=h["util"], memory=0)


def nvmlDeviceGetTotalEnergyConsumption(h: dict) -> int:  # noqa: N802
    if not h.get("energy", True):
        raise NVMLError_NotSupported("Not Supported")
    return int(h["watts"] * 1000 * time.perf_counter())
