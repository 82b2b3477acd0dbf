"""The user's training command (``--workload``) read as an external benchmark's program: the
script it runs, the launch, and its arguments with their placeholders."""
from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

# A leading interpreter or launcher word: the node's own python runs the script, under torchrun unless
# --launch per-node says otherwise.
LEADING = ("python", "python3", "torchrun")


class WorkloadError(ValueError):
    """The command is not a training command the harness can launch: one line naming the fix."""


@dataclass(frozen=True)
class Workload:
    """A python training script in the repository and the arguments the harness passes it."""

    script: Path  # relative to the repository's root
    args: tuple[str, ...]  # after the script, placeholders as given
    launch: str  # torchrun | per-node

    @property
    def program(self) -> tuple[str, ...]:
        return ("{script}", *self.args)


def parse(command: str, root: Path, launch: str | None) -> Workload:
    """``[python|python3|torchrun] SCRIPT.py ARGS...`` with SCRIPT in ``root``; ``launch``: torchrun unless
    given (one torchrun per node sets the ranks)."""
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise WorkloadError(f"--workload {command!r}: not a command line ({exc})") from None
    if words and words[0] in LEADING:
        words = words[1:]
    if words and words[0].startswith("-"):
        raise WorkloadError(f"--workload {command!r}: {words[0]} before the script: give the script and its "
                            "arguments only (the harness gives torchrun its nodes and ranks, and runs -m modules "
                            "through a script of yours)")
    if not words or not words[0].endswith(".py"):
        first = words[0] if words else "nothing"
        raise WorkloadError(f"--workload {command!r}: {first} is not a python script: give the training command "
                            "as `python SCRIPT.py ARGS...`, e.g. \"python train.py --batch-size {batch_size}\"")
    script = Path(words[0])
    path = (root / script).resolve()  # an absolute script stays itself
    if not path.is_file():
        raise WorkloadError(f"--workload: {words[0]} does not exist in {root}: give the script's path from the "
                            "repository's root")
    if not path.is_relative_to(root.resolve()):
        raise WorkloadError(f"--workload: {words[0]} is outside the repository {root}: the pull-request recipe "
                            "compares the repository's commits, so the script must be in it")
    return Workload(path.relative_to(root.resolve()), tuple(words[1:]), launch or "torchrun")
