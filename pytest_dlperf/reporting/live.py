"""A live progress line while a case runs: case, repeat, step of steps and the current rate in the
case's unit (samples/s, tokens/s for a decoder: the workload counts its steps in that unit),
from rank 0's ``DLPERF-PROGRESS`` lines (steplog.Progress). Drawn in place after pytest's own
progress text and wiped when the repeat ends. Silent under ``-q``, when the output is not a
terminal, and in pytest-xdist workers (their output does not reach a terminal)."""
from __future__ import annotations

import contextlib

import pytest


def wanted(config: pytest.Config) -> bool:
    if getattr(config, "workerinput", None) is not None:
        return False
    if config.get_verbosity() < 0:
        return False
    tr = config.pluginmanager.getplugin("terminalreporter")
    return bool(tr is not None and tr.isatty)


def render(name: str, repeat: int, repeats: int, info: dict, unit: str = "samples/s") -> str:
    """``dlperf resnet50-fp32-bs8-64px-2n1g  repeat 2/3  window step 12/40  26.1 samples/s``."""
    phase, step, of, rate = info.get("phase", ""), info.get("step"), info.get("of"), info.get("samples_per_s")
    where = f"{phase} step {step}" + (f"/{of}" if of else "") if step is not None else phase
    pace = f"  {rate:.1f} {unit}" if isinstance(rate, (int, float)) else ""
    return f"dlperf {name}  repeat {repeat + 1}/{repeats}  {where}{pace}"


class LiveLine:
    """Writes through pytest's terminal writer with output capture suspended for the moment."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.enabled = wanted(config)
        self._shown = 0

    def _write(self, text: str) -> None:
        tr = self.config.pluginmanager.getplugin("terminalreporter")
        capman = self.config.pluginmanager.getplugin("capturemanager")
        tw = tr._tw  # noqa: SLF001 - pytest's terminal writer; its current line is pytest's own text
        prefix = getattr(tw, "_current_line", "")
        width = max(20, tw.fullwidth - len(prefix) - 1)
        body = text[:width]
        pad = " " * max(0, self._shown - len(body))
        with capman.global_and_fixture_disabled() if capman else contextlib.nullcontext():
            tw._file.write("\r" + prefix + body + pad + ("\r" + prefix + body if pad else ""))  # noqa: SLF001
            tw._file.flush()  # noqa: SLF001
        self._shown = len(body)

    def update(self, name: str, repeat: int, repeats: int, info: dict, unit: str = "samples/s") -> None:
        if self.enabled:
            self._write(render(name, repeat, repeats, info, unit))

    def clear(self) -> None:
        if self.enabled and self._shown:
            self._write("")
            self._shown = 0

