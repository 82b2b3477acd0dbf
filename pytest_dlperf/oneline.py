"""The ``dlperf`` command's argparse errors as one line naming the problem, exit 2 (no usage block).
Standard library only: every ``dlperf`` command loads it."""
from __future__ import annotations

import argparse
import sys
from typing import NoReturn


def one_line_error(parser: argparse.ArgumentParser, message: str) -> NoReturn:
    """argparse's error as one line: the parser's name, the problem, where to look."""
    print(f"{parser.prog}: {message} (see --help)", file=sys.stderr)
    raise SystemExit(2)


class OneLineParser(argparse.ArgumentParser):
    """argparse whose errors are one line (``one_line_error``)."""

    def error(self, message: str) -> NoReturn:  # type: ignore[override]
        one_line_error(self, message)
