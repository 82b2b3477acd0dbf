"""argparse value types of the plugin's options: a bad value is a usage error (exit 4) naming it."""
from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

import pytest


def _number(kind: type, least: float, strict: bool, what: str) -> Callable[[str], Any]:
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
positive_ratio = _number(float, 0, True, "a ratio")


def csv(text: str) -> list[str]:
    """A comma-separated list of at least one item."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list, got nothing")
    return items


def fraction(text: str) -> float:
    """A fraction in [0, 1), e.g. 0.05 for 5%."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction such as 0.05, got {text!r}") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"expected a fraction in [0, 1) such as 0.05 for 5%, got {text!r}")
    return value


def count_or_env(given: int | None, variable: str, default: int, unit: str) -> int:
    """An option's whole number, else the environment ``variable``'s (a CI image's own default), else
    ``default``; a variable that is not a whole number >= 0 is a usage error naming it."""
    if given is not None:
        return given
    text = os.environ.get(variable, "").strip()
    if not text:
        return default
    if not text.isdigit():
        raise pytest.UsageError(f"{variable}={text!r}: expected a whole number of {unit} >= 0 (or unset it for the "
                                "default)")
    return int(text)


def choice_or_env(given: str | None, variable: str, choices: tuple[str, ...], default: str) -> str:
    """An option's choice, else the environment ``variable``'s (a CI image's own default), else ``default``;
    a variable that is not one of ``choices`` is a usage error naming it."""
    if given:
        return given
    text = os.environ.get(variable, "").strip()
    if text and text not in choices:
        raise pytest.UsageError(f"{variable}={text!r}: expected one of {', '.join(choices)} (or unset it for "
                                f"{default})")
    return text or default


def duration(text: str) -> float:
    """Seconds from ``7d``, ``12h``, ``30m``, ``45s`` or a plain number of seconds."""
    units = {"d": 86400, "h": 3600, "m": 60, "s": 1}
    try:
        return float(text[:-1]) * units[text[-1]] if text and text[-1] in units else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a duration such as 7d, 12h or 30m, got {text!r}") from None
