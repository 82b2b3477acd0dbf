"""The one round loop: every case still measuring takes one unit of work a round (a launch, or an A/B
pair of two), its first unit after its readiness check, while the repeats and the budget allow (the budget's
rule: ``budget.py``). The rounds order and the A/B order run it with their own unit."""
from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

from ..clusters.base import ClusterError
from .bench import Bench
from .budget import Budget
from .measured import Measured, launch_class


@dataclass(frozen=True)
class Unit:
    """One round's work for a case: ``take(got, k)`` runs it (its errors recorded on ``got``);
    ``launches`` per unit (for the budget's estimates); ``going(got)`` whether the case takes more."""

    take: Callable[[Measured, int], None]
    launches: int = 1
    going: Callable[[Measured], bool] = lambda got: not got.stopped


def named(state: dict[str, Measured], most: int = 3) -> str:
    """The round's cases for a waiting session's line: the first ``most`` ids, then how many more."""
    ids = list(state)
    more = f" and {len(ids) - most} more" if len(ids) > most else ""
    return ", ".join(ids[:most]) + more


def take_rounds(bench: Bench, budget: Budget, state: dict[str, Measured], planned: int, least: int,
                unit: Unit) -> str:
    """Rounds over ``state``'s cases until none is going, ``planned`` rounds ran, or the budget says
    stop (a round in which a case did not fit is the last, so no case gets more than one unit more than
    another). A ClusterError of the lease stops every case still going, naming it. Returns why the
    rounds stopped ("" : every case finished or reached ``planned``; "the budget")."""
    started = budget.begin_case()
    done, why = 0, ""
    try:
        with bench.cluster().lease(what=named(state)):
            while True:
                going = [g for g in state.values() if unit.going(g)]
                costs = [statistics.fmean(g.taken) * unit.launches for g in going if g.taken]
                if not going or done >= planned:
                    break
                if not budget.another_round(done, planned, least, costs):
                    why = "the budget"
                    break
                short = False
                for got in going:
                    if got.taken and not budget.launch_in_round(done, least, unit.launches * statistics.fmean(got.taken)):
                        short = True
                        continue
                    unit.take(got, done)
                done += 1
                if short:
                    why = "the budget"
                    break
    except ClusterError as exc:
        for got in state.values():
            if unit.going(got):
                got.error = str(exc)
    finally:
        ran = [(name, got.taken, launch_class(got.case)) for name, got in state.items() if got.taken]
        if ran:
            budget.end_rounds(started, ran, planned)
    return why
