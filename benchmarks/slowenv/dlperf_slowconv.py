"""A library slowed by a few percent, for benchmarks/ab_power.py's second environment: once torch is
imported in a Python of that environment, every ``k``-th call of ``torch.nn.Conv2d.forward``
(DLPERF_SLOWCONV_EVERY, default ``EVERY``) computes its convolution twice. The project knows nothing of it:
the candidate side is just another interpreter (``python=``). Loaded by a .pth file at start-up."""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys

EVERY = "4"  # the default k; make_env.sh --every K writes another into the environment's copy


class _PatchTorchAfterImport(importlib.abc.MetaPathFinder):
    """Finds ``torch`` as usual, and patches it right after its module runs."""

    def find_spec(self, name, path=None, target=None):  # noqa: ANN001, ANN201
        if name != "torch":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):  # noqa: ANN001, ANN202
            run(module)
            _slow_conv(module)

        spec.loader.exec_module = exec_module
        return spec


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


if not any(isinstance(f, _PatchTorchAfterImport) for f in sys.meta_path):
    sys.meta_path.insert(0, _PatchTorchAfterImport())
