"""Where a launch's seconds went (issue #77): the harness's wall time of one launch cut into its phases, from the
workload's meta line (its start-up parts, rank 0's launch start, the window, when it wrote its result) and the
harness's own start and wall. Shown on each launch's line and printed per case by benchmarks/launch_phases.py.

The node's figures are on the node's clock and the harness's on this machine's: where they are one clock (the
local cluster) the time before the node's launch began and the exit after its result was written are apart;
elsewhere they are one figure, ``outside``, taken as a difference of durations (no clock offset in it)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .records import RunRecord

# The phases in a launch's order, with how a line names them.
NAMES: dict[str, str] = {
    "harness": "harness",  # the harness's own work around the launch: run directories, uploads, reading, sweeping
    "before": "before",  # from the harness starting the node commands to the node's launch command running
    "launcher": "launcher",  # the launch command's own start (torchrun's agent, the direct start, mpirun) up to the rank
    "imports": "imports",  # the rank's imports
    "process_group": "group",  # the process group or the engine's init
    "model": "model",  # model build, data and first touch
    "first_step": "first step",
    "warmup": "warm-up",  # the rest of the warm-up steps
    "window": "window",  # the measured steps
    "checkpoint": "checkpoint",  # the checkpoint after the window: the slowest rank's save and its load
    "after": "after",  # the other gathers and probes after the window, up to the result written
    "exit": "exit",  # from the result written to the last node command's exit: the ranks' and the launcher's
    "outside": "before+exit",  # before and exit together, where the clocks differ
}


@dataclass(frozen=True)
class LaunchPhases:
    """One launch's seconds per phase (``NAMES``' keys, in order; a phase not measured is absent) and its wall."""

    seconds: dict[str, float]
    wall: float

    def line(self) -> str:
        """``start 5.2 (launcher 2.3, imports 1.9, group 0.4, model 0.4, first step 0.2), warm-up 0.4, ...``."""
        s = self.seconds
        start = [k for k in ("launcher", "imports", "process_group", "model", "first_step") if k in s]
        parts = [f"{NAMES[k]} {s[k]:.1f}" for k in ("harness", "before") if k in s]
        parts.append(f"start {sum(s[k] for k in start):.1f} ("
                     + ", ".join(f"{NAMES[k]} {s[k]:.1f}" for k in start) + ")")
        parts += [f"{NAMES[k]} {s[k]:.1f}" for k in ("warmup", "window", "checkpoint", "after", "exit", "outside")
                  if k in s]
        return ", ".join(parts)


def checkpoint_seconds(meta: Mapping) -> float | None:
    """The save and load seconds of a launch's checkpoint after its window (the meta line's ``checkpoint``); None:
    it took none."""
    got = meta.get("checkpoint")
    if isinstance(got, Mapping) and _number(got.get("save_seconds")) and _number(got.get("load_seconds")):
        return float(got["save_seconds"]) + float(got["load_seconds"])
    return None


def launch_phases(run: RunRecord, same_clock: bool, total: float | None = None) -> LaunchPhases | None:
    """The launch's phases, or None where its workload did not write what they take (an older workload, a
    program's own log); ``same_clock``: the nodes keep this machine's clock (the local cluster); ``total``: the
    harness's seconds for the launch, its own work around the node commands included."""
    meta = run.meta
    first, window, written = meta.get("first_step"), meta.get("window"), meta.get("written")
    if not (isinstance(first, Mapping) and isinstance(window, Mapping) and _number(written) and run.steps
            and _number(first.get("launched")) and isinstance(first.get("parts"), Mapping) and first.get("ranks")
            and _number(window.get("start")) and _number(window.get("end"))):
        return None
    launched = float(first["launched"])
    # the window and the steps are on rank 0's step clock (perf_counter), the start-up on its wall clock: its
    # first step's end on both ties them (the start-up's parts are the slowest rank's, as time to first step)
    first_end_wall, first_end_steps = launched + float(first["ranks"][0]), float(run.steps[0].end)
    s: dict[str, float] = {k: float(v) for k, v in first["parts"].items() if k in NAMES and _number(v)}
    s["warmup"] = float(window["start"]) - first_end_steps
    s["window"] = float(window["end"]) - float(window["start"])
    s["after"] = float(written) - (first_end_wall + float(window["end"]) - first_end_steps)
    saved = checkpoint_seconds(meta)
    if saved is not None:
        s["checkpoint"] = saved
        s["after"] -= saved
    on_node = float(written) - launched
    if same_clock and run.started_at:
        s["before"] = launched - run.started_at
        s["exit"] = run.started_at + run.wall_seconds - float(written)
    else:
        s["outside"] = run.wall_seconds - on_node
    if total is not None:
        s["harness"] = total - run.wall_seconds
    order = list(NAMES)
    return LaunchPhases({k: round(max(0.0, s[k]), 3) for k in sorted(s, key=order.index)},
                        run.wall_seconds if total is None else total)


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
