"""Patch a module right after it is imported, without importing it early: a meta path finder that finds the
module as usual and runs ``patch(module)`` once its code has run. The slowed environments' libraries
(dlperf_slowconv.py, dlperf_slowjpeg.py) are built on it; make_env.sh copies it beside them."""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable


class PatchAfterImport(importlib.abc.MetaPathFinder):
    """Finds ``name`` as usual, and calls ``patch`` on it right after its module runs."""

    def __init__(self, name: str, patch: Callable) -> None:
        self.name, self.patch = name, patch

    def find_spec(self, name, path=None, target=None):  # noqa: ANN001, ANN201
        if name != self.name:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):  # noqa: ANN001, ANN202
            run(module)
            self.patch(module)

        spec.loader.exec_module = exec_module
        return spec


def install(name: str, patch: Callable) -> None:
    """Patch ``name`` after its import, once per process."""
    if not any(isinstance(f, PatchAfterImport) and f.name == name for f in sys.meta_path):
        sys.meta_path.insert(0, PatchAfterImport(name, patch))
