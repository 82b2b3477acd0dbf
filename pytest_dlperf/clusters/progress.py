"""A cluster's progress lines (provisioning, an allocation, waiting for nodes another session holds): on stderr,
past pytest's output capture, since they happen while a case runs and pytest captures what it prints."""
from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable

import pytest


def shown(config: pytest.Config) -> Callable[[str], None]:
    """A ``say`` that prints each non-empty line on stderr at once, capture or not."""
    capman = config.pluginmanager.getplugin("capturemanager")

    def say(text: str) -> None:
        if text:
            with capman.global_and_fixture_disabled() if capman else contextlib.nullcontext():
                print(text, file=sys.stderr, flush=True)

    return say
