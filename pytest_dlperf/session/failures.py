"""The session's case failures before or between launches, by case name: each fails its test in one line
(no traceback) and is kept for results.json (``failures``)."""
from __future__ import annotations

from typing import NoReturn

import pytest


class CaseFailures(dict[str, str]):
    """Case name -> why it failed; a dict, so the reports and the xdist merge read it as one."""

    def fail(self, name: str, why: str) -> NoReturn:
        """Keep why ``name`` failed and fail its test with that line. Call it outside an except block, so
        the report shows the line, not a chain."""
        self[name] = why
        pytest.fail(why, pytrace=False)
