"""The session's engines: one launcher per engine of ``--backend A,B`` (each gets its own matrix),
made through the plugins' hook, and each case's name (its engine first when several run)."""
from __future__ import annotations

from pathlib import Path

import pytest

from ..launchers.base import Launcher
from ..options.core import RunOptions
from ..specs import CaseSpec


class Engines:
    """The launchers by engine, in ``--backend`` order; a model no engine offers is a usage error."""

    def __init__(self, config: pytest.Config, options: RunOptions) -> None:
        hook = config.pluginmanager.hook
        self.launchers: dict[str, Launcher] = {}
        for backend in options.backends:
            launcher = hook.pytest_dlperf_make_launcher(config=config, backend=backend)
            if launcher is None:
                known = sorted({b for names in hook.pytest_dlperf_backends(config=config) for b in names})
                raise pytest.UsageError(f"--backend: unknown {backend!r}; available: {', '.join(known)}")
            self.launchers[backend] = launcher
        offered = {m for launcher in self.launchers.values() for m in launcher.models}
        bad = [m for m in options.models or [] if m not in offered]
        if bad:
            raise pytest.UsageError(f"--dlperf-model: {', '.join(bad)} not available with --backend "
                                    f"{','.join(self.launchers)}; allowed: {', '.join(sorted(offered))}")

    def launcher(self, case: CaseSpec) -> Launcher:
        return self.launchers[case.backend]

    def name(self, case: CaseSpec) -> str:
        """The test id and run directory: the case id, after its engine's name when several run."""
        return case.id if len(self.launchers) == 1 else f"{case.backend}-{case.id}"

    def entry_scripts(self) -> list[Path]:
        """Each engine's entry script (an A/B rev side checks them out at its commit)."""
        return [p for launcher in self.launchers.values() for p in launcher.workload_paths()[:1]]
