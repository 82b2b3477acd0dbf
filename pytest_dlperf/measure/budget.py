"""The session's time budget: how many launches each case takes so that the suite ends in time.

On CPU nodes most of a launch is fixed cost that every repeat pays again: starting torchrun and
the worker (each imports torch: 1.8 s on one core here), building the model and the first steps'
first-touch memory. Measured on the default suite under ``slower-machine 0.7`` (README, "Wall
time"), the windows were 60-70 s of 370-400 s in launches, so a shorter window cannot keep a
budget; the number of launches can. As asv's ``repeat = (min_repeat, max_repeat, max_time)``, a
case takes at least ``least`` launches (1 on CPU nodes) and at most ``repeats``; in between it
takes another only while

- every case still to run keeps its least launches in the time left after it, and
- the launch is within the session's level: the launches per case that the time left affords
  this case and every later one (rounded to the nearest), each launch estimated at the mean of
  the launches so far of its topology (1n1g, 2n1g, ...; of all where none has run) and each
  case's probe at the mean so far.

The level spreads a short budget evenly: a rule that kept the next cases' floor only (until
2026-11-23: 2 launches each, whatever they cost) overran on a slower machine by the floor itself,
52 s at ``slower-machine 0.7``, and one that reserved only 1 launch each gave the budget to the
cheap cases at the end (replayed on that session's launches). A machine fast enough runs every
repeat; a slower one gives up repeats where the time runs short, and the report names them.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field


def session_seconds(given: float | None, repeats_given: bool, recording: bool, profile: float) -> float:
    """The budget a session runs under: --dlperf-budget when given; else none where the user asked
    for a number of repeats or a baseline is recorded (it is judged against many times: every
    repeat), else the profile's."""
    if given is not None:
        return given
    return 0.0 if repeats_given or recording else profile


@dataclass
class Budget:
    """Wall seconds for the session's measurement, counted from the start of its first case."""

    seconds: float  # 0: no budget, every case takes its full repeats
    clock: Callable[[], float] = time.monotonic
    started: float | None = None
    ended: float | None = None  # the end of the latest case: what came after (gate, report) is not measuring
    launches: dict[str, list[float]] = field(default_factory=dict)  # topology -> seconds of its launches
    overheads: list[float] = field(default_factory=list)  # per case: its seconds outside launches
    cut: dict[str, tuple[int, int]] = field(default_factory=dict)  # case -> (launches taken, planned)

    def begin_case(self) -> float:
        """Start the clock on the first case; returns this case's start."""
        now = self.clock()
        if self.started is None:
            self.started = now
        return now

    def another(self, taken: list[float], planned: int, least: int, after: list[str], topology: str = "") -> bool:
        """Whether a case (of ``topology``) that has run launches of ``taken`` seconds runs one more,
        with cases of the topologies ``after`` still to run (the module doc has the rule)."""
        if len(taken) >= planned:
            return False
        keep = max(least, 1)  # every case's floor, this one's and the later ones'
        if len(taken) < keep or self.seconds <= 0 or self.started is None:
            return True
        left = self.seconds - (self.clock() - self.started)
        seen = {**self.launches, topology: self.launches.get(topology, []) + taken}
        every = [s for runs in seen.values() for s in runs]
        overhead = statistics.fmean(self.overheads) if self.overheads else 0.0
        this = statistics.fmean(taken)
        costs = [statistics.fmean(seen.get(t) or every) for t in after]
        if left - this < keep * sum(costs) + overhead * len(after):  # every later case keeps its floor
            return False
        level = (left + sum(taken) - overhead * len(after)) / (this + sum(costs))
        return len(taken) + 1 <= level + 0.5

    def another_round(self, done: int, planned: int, least: int, costs: list[float]) -> bool:
        """In rounds (``--dlperf-order rounds``): whether another round starts after ``done``, the cases
        still measuring estimated at the mean of their own launches so far (``costs``): while the
        cheapest fits in the time left. Within it, ``launch_in_round`` decides per case."""
        if done >= planned:
            return False
        if done < max(least, 1) or self.seconds <= 0 or self.started is None or not costs:
            return True
        return self._left() >= min(costs)

    def launch_in_round(self, done: int, least: int, cost: float) -> bool:
        """Whether a case estimated at ``cost`` seconds launches in round ``done`` (0-based): always
        up to the floor, else where it fits in the time left. A round in which a case did not fit is
        the last, so no case gets more than one launch more than another."""
        if done < max(least, 1) or self.seconds <= 0 or self.started is None:
            return True
        return self._left() >= cost

    def _left(self) -> float:
        return self.seconds - (self.clock() - (self.started or 0.0))

    def end_rounds(self, started: float, cases: list[tuple[str, list[float], str]], planned: int) -> None:
        """Book the rounds' launches: (name, seconds of its launches, topology) per case that ran one."""
        self.ended = self.clock()
        outside = self.ended - started - sum(sum(taken) for _, taken, _ in cases)
        for name, taken, topology in cases:
            self.launches.setdefault(topology, []).extend(taken)
            self.overheads.append(max(0.0, outside / len(cases)))
            if len(taken) < planned:
                self.cut[name] = (len(taken), planned)

    def end_case(self, name: str, started: float, taken: list[float], planned: int, topology: str = "") -> None:
        self.ended = self.clock()
        self.launches.setdefault(topology, []).extend(taken)
        self.overheads.append(max(0.0, self.ended - started - sum(taken)))
        if len(taken) < planned:
            self.cut[name] = (len(taken), planned)

    @property
    def used(self) -> float:
        return 0.0 if self.started is None or self.ended is None else self.ended - self.started

    def summary(self) -> str | None:
        """One line for the terminal and results.json, or None when there is nothing to say."""
        if self.seconds <= 0 or self.started is None:
            return None
        line = f"dlperf budget: {self.used:.0f} s of {self.seconds:g} s measuring"
        if self.cut:
            cases = ", ".join(f"{name} ({k} of {n})" for name, (k, n) in self.cut.items())
            line += (f"; to keep it, {len(self.cut)} case(s) ran fewer repeats: {cases} "
                     "(--dlperf-budget 0 or --dlperf-repeats R for every repeat)")
        if self.used > self.seconds:
            line += (f"; {self.used - self.seconds:.0f} s over it even so (launches slower than the ones "
                     "before them, or one launch a case alone costs more)")
        return line
