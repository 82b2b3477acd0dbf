"""Which launches take a checkpoint after their window (``--dlperf-checkpoint``). ``on``: every launch; ``off``:
none; ``auto`` (the default): a case's first launch does, and its later ones only where that checkpoint took at most
``AUTO_SHARE`` of the launch. On a 2-core CPU node saving and loading a default case's 0.2-1 GB costs 10-35% of an
eager case's launch (docs/measurements.md): measured every launch, it would lengthen every session by as much. A case's
checkpoint figures come from a case whose launches all took one (``metrics.catalog``), so a case that auto stopped
after its first has none."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ..results.phases import checkpoint_seconds
from ..results.records import RunRecord
from ..specs import CheckpointMode, Measurement

AUTO_SHARE = 0.10  # auto: later launches take a checkpoint where the first's took at most this share of it


@dataclass
class Checkpoints:
    """Per case (by test name): whether its later launches take a checkpoint, decided by its first under auto."""

    said: Callable[[str], None] = print
    later: dict[str, bool] = field(default_factory=dict)

    def measurement(self, name: str, m: Measurement) -> Measurement:
        """The launch's measurement, its checkpoint decided: ``on`` or ``off``, never ``auto``."""
        mode = CheckpointMode(m.checkpoint)
        on = mode is CheckpointMode.ON or (mode is CheckpointMode.AUTO and self.later.get(name, True))
        return replace(m, checkpoint=(CheckpointMode.ON if on else CheckpointMode.OFF).value)

    def took(self, name: str, m: Measurement, run: RunRecord, seconds: float) -> None:
        """After a launch of ``m`` (the session's, undecided): a case's first under auto decides for its later ones,
        and a case that stops says so once."""
        if CheckpointMode(m.checkpoint) is not CheckpointMode.AUTO or name in self.later:
            return
        spent = checkpoint_seconds(run.meta)
        if spent is None or seconds <= 0:
            return  # it took none (an engine that does not, nodes that share no directory): the next launch decides
        self.later[name] = spent <= AUTO_SHARE * seconds
        if not self.later[name]:
            self.said(f"dlperf {name}: its checkpoint took {spent:.1f} s of the {seconds:.1f} s launch "
                      f"({spent / seconds:.1%}, over {AUTO_SHARE:.0%}): its later launches take none, and a case's "
                      "checkpoint figures need every launch's (--dlperf-checkpoint on: every launch)")
