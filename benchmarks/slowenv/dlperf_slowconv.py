"""A library slowed by a few percent, for benchmarks/ab_power.py's second environment: once torch is
imported in a Python of that environment, every ``k``-th call of ``torch.nn.Conv2d.forward``
(DLPERF_SLOWCONV_EVERY, default ``EVERY``) computes its convolution twice. The project knows nothing of it:
the candidate side is just another interpreter (``python=``). Loaded by a .pth file at start-up."""
from __future__ import annotations

import os

from dlperf_afterimport import install  # copied beside this file

EVERY = "4"  # the default k; make_env.sh --every K writes another into the environment's copy


def _slow_conv(torch) -> None:  # noqa: ANN001
    every = max(1, int(os.environ.get("DLPERF_SLOWCONV_EVERY", EVERY)))
    forward = torch.nn.Conv2d.forward
    calls = [0]

    def slower(self, x):  # noqa: ANN001, ANN202
        calls[0] += 1
        if calls[0] % every == 0:
            forward(self, x)
        return forward(self, x)

    torch.nn.Conv2d.forward = slower


install("torch", _slow_conv)
