"""A live progress line while a case runs: case, repeat, step of steps and the current rate in the
case's unit (samples/s, tokens/s for a decoder: the workload counts its steps in that unit),
from rank 0's ``DLPERF-PROGRESS`` lines (steplog.Progress). On a terminal it is drawn in place after
pytest's own progress text and wiped when the repeat ends (silent under ``-q``). Without a terminal (a
CI log) the session says a line instead: the progress at most every ``LOG_EVERY`` seconds of a launch
and one line as each launch or A/B pair ends, so that a log is never silent for a minute of work
(many CI services stop a job that prints nothing for ten). Nothing in pytest-xdist workers: their
output does not reach the log."""
from __future__ import annotations

import contextlib
import time

LOG_EVERY = 30.0  # seconds between a long launch's progress lines in a log

import pytest


def wanted(config: pytest.Config) -> bool:
    """The line drawn in place: on a terminal, not under ``-q``, not in an xdist worker."""
    if getattr(config, "workerinput", None) is not None:
        return False
    if config.get_verbosity() < 0:
        return False
    tr = config.pluginmanager.getplugin("terminalreporter")
    return bool(tr is not None and tr.isatty)


def logged(config: pytest.Config) -> bool:
    """Lines instead: output that is not a terminal (a CI log), unless ``-qq``; not in an xdist worker."""
    if getattr(config, "workerinput", None) is not None or config.get_verbosity() < -1:
        return False
    tr = config.pluginmanager.getplugin("terminalreporter")
    return bool(tr is not None and not tr.isatty)


def render(name: str, repeat: int, repeats: int, info: dict, unit: str = "samples/s") -> str:
    """``dlperf resnet50-fp32-bs8-64px-2n1g  repeat 2/3  window step 12/40  26.1 samples/s``."""
    phase, step, of, rate = info.get("phase", ""), info.get("step"), info.get("of"), info.get("samples_per_s")
    where = f"{phase} step {step}" + (f"/{of}" if of else "") if step is not None else phase
    pace = f"  {rate:.1f} {unit}" if isinstance(rate, (int, float)) else ""
    return f"dlperf {name}  repeat {repeat + 1}/{repeats}  {where}{pace}"


class LiveLine:
    """Writes through pytest's terminal writer with output capture suspended for the moment."""

    def __init__(self, config: pytest.Config, clock=time.monotonic) -> None:  # noqa: ANN001 - a clock
        self.config = config
        self.enabled = wanted(config)  # in place, on a terminal
        self.logging = not self.enabled and logged(config)  # a line at a time, in a log
        self.clock = clock
        self._shown = 0
        self._said_at = clock()

    @property
    def watching(self) -> bool:
        """Whether a launch's progress is wanted at all (drawn, or logged)."""
        return self.enabled or self.logging

    def _line(self, text: str) -> None:
        tr = self.config.pluginmanager.getplugin("terminalreporter")
        capman = self.config.pluginmanager.getplugin("capturemanager")
        with capman.global_and_fixture_disabled() if capman else contextlib.nullcontext():
            tr.ensure_newline()
            tr.write_line(text)
        self._said_at = self.clock()

    def tell(self, text: str) -> None:
        """A line always shown, on a terminal or in a log (an environment made before the first launch)."""
        self._line(text)

    def said(self, text: str) -> None:
        """A launch's or a pair's end, in a log (on a terminal the line in place has shown it)."""
        if self.logging:
            self._line(text)

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
        elif self.logging and self.clock() - self._said_at >= LOG_EVERY:
            self._line(render(name, repeat, repeats, info, unit))

    def clear(self) -> None:
        if self.enabled and self._shown:
            self._write("")
            self._shown = 0

