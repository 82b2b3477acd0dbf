"""``dlperf bisect``: the first commit (or interpreter) of a list that made the benchmarks slower.

Each probe is one A/B pytest session (docs/ab.md) with the known-good item as the reference and the
probed item as the candidate; a binary search over the items finds the first one whose A/B verdict
is "slower". The modules, one job each:

- ``items``: the list of items (first-parent commits GOOD..BAD, or the interpreters as given);
- ``evidence``: reading a session's results.json "ab" section into an item's verdict;
- ``probe``: the probe that runs one A/B session as a subprocess;
- ``steps``: the search state and the steps file that lets the same command resume;
- ``command``: ``dlperf bisect``'s arguments, its loop and what it prints.
"""
from __future__ import annotations


class BisectError(Exception):
    """An error ``dlperf bisect`` reports in one line (the message) and exits with ``code``."""

    code = 2


class UsageError(BisectError):
    """Bad arguments or a steps file that belongs to another command: exit 2."""

    code = 2


class ProbeError(BisectError):
    """A probe's session failed or left no readable verdict: exit 3."""

    code = 3
