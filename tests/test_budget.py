"""The session budget: how many launches a case takes, on a clock the test moves."""
from __future__ import annotations

from pytest_dlperf.budget import Budget, session_seconds


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def run_suite(budget: Budget, clock: Clock, cases: list[tuple[str, str, float]], planned: int = 3,
              least: int = 2, probe: float = 1.0) -> dict[str, int]:
    """Run cases (name, topology, seconds per launch) as the session does; launches taken per case."""
    taken_by = {}
    for i, (name, topo, launch) in enumerate(cases):
        started = budget.begin_case()
        clock.now += probe
        taken: list[float] = []
        while budget.another(taken, planned, least, [t for _, t, _ in cases[i + 1:]], topo):
            clock.now += launch
            taken.append(launch)
        budget.end_case(name, started, taken, planned, topo)
        taken_by[name] = len(taken)
    return taken_by


SUITE = [("resnet-1", "1n1g", 8.0), ("resnet-2", "2n1g", 14.0), ("vgg-1", "1n1g", 15.0), ("vgg-2", "2n1g", 31.0),
         ("bert-1", "1n1g", 12.0), ("bert-2", "2n1g", 26.0), ("arc-1", "1n1g", 8.0), ("arc-2", "2n1g", 14.0)]


def test_no_budget_takes_every_repeat():
    clock = Clock()
    budget = Budget(0.0, clock=clock)
    assert set(run_suite(budget, clock, SUITE).values()) == {3}
    assert budget.cut == {} and budget.summary() is None


def test_a_fast_machine_takes_every_repeat_within_the_budget():
    clock = Clock()
    budget = Budget(330.0, clock=clock)
    fast = [(n, t, s * 0.7) for n, t, s in SUITE]  # 3 x 89.6 s + 8 probes: 277 s
    assert set(run_suite(budget, clock, fast).values()) == {3}
    assert budget.cut == {} and budget.used <= 330
    assert budget.summary() == "dlperf budget: 277 s of 330 s measuring"
    clock.now += 30  # the gate and the report after the last case are not measuring
    assert budget.summary() == "dlperf budget: 277 s of 330 s measuring"


def test_a_slower_machine_gives_up_last_repeats_and_keeps_the_budget():
    clock = Clock()
    budget = Budget(330.0, clock=clock)
    taken = run_suite(budget, clock, SUITE)  # every repeat: 3 x 128 s + 8 s = 392 s
    assert budget.used <= 330
    assert set(taken.values()) == {2, 3} and taken["resnet-1"] == 3  # the first cases before the cost is known
    assert budget.cut == {n: (2, 3) for n, k in taken.items() if k == 2}
    line = budget.summary()
    assert line.startswith("dlperf budget: ") and "ran fewer repeats: " in line and "vgg-2 (2 of 3)" in line
    assert "over it" not in line


def test_never_fewer_than_the_least_and_says_when_even_that_is_over():
    clock = Clock()
    budget = Budget(60.0, clock=clock)
    taken = run_suite(budget, clock, SUITE)
    assert set(taken.values()) == {2}  # the floor, though the floor is over budget
    assert budget.used > 60
    assert budget.summary().endswith(f"; {budget.used - 60:.0f} s over it even so (launches slower than the "
                                     "ones before them, or the least repeats alone cost more)")


def test_later_cases_are_estimated_by_their_topology():
    # one 1n1g case left after a slow 2n1g one: its cheap launches, not the 2n1g pace, are reserved
    # (at the mean of every launch, 11 s, a-2's third would not fit: 98 - 57 - 20 < 1 + 2 x 11)
    clock = Clock()
    budget = Budget(98.0, clock=clock)
    cases = [("a-1", "1n1g", 5.0), ("a-2", "2n1g", 20.0), ("b-1", "1n1g", 5.0)]
    assert run_suite(budget, clock, cases) == {"a-1": 3, "a-2": 3, "b-1": 3}  # 3 + 15 + 60 + 15 = 93 s
    clock2 = Clock()
    budget2 = Budget(98.0, clock=clock2)
    # the same with a 2n1g case last: its 2 launches cost 40 s, so a-2 stops at 2
    cases2 = [("a-1", "1n1g", 5.0), ("a-2", "2n1g", 20.0), ("b-2", "2n1g", 20.0)]
    assert run_suite(budget2, clock2, cases2)["a-2"] == 2


def test_whose_budget():
    assert session_seconds(None, False, False, 330.0) == 330.0  # the profile's
    assert session_seconds(None, True, False, 330.0) == 0.0  # --dlperf-repeats R: exactly R
    assert session_seconds(None, False, True, 330.0) == 0.0  # --update-baselines: every repeat
    assert session_seconds(120.0, True, True, 330.0) == 120.0  # --dlperf-budget: as given
    assert session_seconds(0.0, False, False, 330.0) == 0.0
