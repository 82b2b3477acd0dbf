"""The session budget: how many launches a case takes, on a clock the test moves."""
from __future__ import annotations

from dataclasses import replace

from pytest_dlperf.measure.budget import Budget, session_seconds


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def run_suite(budget: Budget, clock: Clock, cases: list[tuple[str, str, float | list[float]]], planned: int = 3,
              least: int = 1, probe: float = 1.0) -> dict[str, int]:
    """Run cases (name, topology, seconds per launch, or each launch's) as the session does; launches
    taken per case."""
    taken_by = {}
    for i, (name, topo, launch) in enumerate(cases):
        started = budget.begin_case()
        clock.now += probe
        taken: list[float] = []
        while budget.another(taken, planned, least, [t for _, t, _ in cases[i + 1:]], topo):
            seconds = launch[len(taken)] if isinstance(launch, list) else launch
            clock.now += seconds
            taken.append(seconds)
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
    for least in (1, 2):
        clock = Clock()
        budget = Budget(60.0, clock=clock)
        taken = run_suite(budget, clock, SUITE, least=least)
        assert set(taken.values()) == {least}  # the floor, though the floor is over budget
        assert budget.used > 60
        assert budget.summary().endswith(f"; {budget.used - 60:.0f} s over it even so (launches slower than the "
                                         "ones before them, or one launch a case alone costs more)")


# The default suite's launches under slower-machine 0.7 on 2026-11-23 12:12 (results.json of that
# session; a third launch, where none ran, at the mean of the two), with a 1.7 s probe per case.
SLOW_DAY = [("resnet-1", "1n1g", [15.6, 12.9, 11.9]), ("resnet-2", "2n1g", [21.6, 21.9, 21.7]),
            ("vgg-1", "1n1g", [20.9, 20.1, 20.5]), ("vgg-2", "2n1g", [37.4, 34.1, 35.7]),
            ("bert-1", "1n1g", [13.6, 19.2, 16.4]), ("bert-2", "2n1g", [35.9, 33.7, 34.8]),
            ("arc-1", "1n1g", [11.6, 11.8, 11.7]), ("arc-2", "2n1g", [22.3, 23.5, 22.9])]


def test_a_machine_where_two_launches_a_case_overrun_keeps_the_budget_with_fewer():
    # That session, with every case kept at 2 launches (the rule until then), measured 382 s of 330.
    clock = Clock()
    floor2 = Budget(330.0, clock=clock)
    assert set(run_suite(floor2, clock, SLOW_DAY, least=2, probe=1.7).values()) == {2, 3}
    assert floor2.used > 380
    for slower in (1.0, 1.2, 1.4):  # the same machine, and 0.58x, 0.5x of this one
        clock = Clock()
        budget = Budget(330.0, clock=clock)
        cases = [(n, t, [s * slower for s in runs]) for n, t, runs in SLOW_DAY]
        taken = run_suite(budget, clock, cases, probe=1.7 * slower)
        assert 0.9 * 330 <= budget.used <= 330, (slower, taken, budget.used)  # kept, and not left unused
        assert min(taken.values()) == 1 and budget.cut == {n: (k, 3) for n, k in taken.items() if k < 3}
        # spread by the level, not kept for the cheap cases at the end: no 3 where another case has 1,
        # once the first cases (judged before any 2n1g launch has run) are past
        late = [taken[n] for n, _, _ in SLOW_DAY[2:]]
        assert max(late) - min(late) <= 1, taken


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



def test_a_floor_above_one_is_kept_for_every_later_case():
    """With least=2 a long case takes no third launch that would leave a later case less than its 2
    (reserving one launch per later case, as until 2026-11-23, let it: 172 s of 166)."""
    clock = Clock()
    budget = Budget(166.0, clock=clock)
    cases = [("b0", "2n1g", 10.0), ("a", "1n1g", 40.0), ("b1", "2n1g", 10.0)]
    taken = run_suite(budget, clock, cases, planned=3, least=2)
    assert taken == {"b0": 3, "a": 2, "b1": 3}
    assert budget.used <= 166


def run_rounds(budget: Budget, clock: Clock, cases: list[tuple[str, str, float]], planned: int = 3,
               least: int = 1, probe: float = 1.0) -> dict[str, int]:
    """Run cases in rounds as ``--dlperf-order rounds`` does (each case's probe before its first
    launch); launches taken per case."""
    started = budget.begin_case()
    taken: dict[str, list[float]] = {name: [] for name, _, _ in cases}
    done = 0
    while budget.another_round(done, planned, least, [sum(t) / len(t) for t in taken.values() if t]):
        short = False
        for name, _, seconds in cases:
            if taken[name] and not budget.launch_in_round(done, least, sum(taken[name]) / len(taken[name])):
                short = True
                continue
            clock.now += (probe if done == 0 else 0.0) + seconds
            taken[name].append(seconds)
        done += 1
        if short:
            break
    budget.end_rounds(started, [(name, taken[name], topo) for name, topo, _ in cases], planned)
    return {name: len(t) for name, t in taken.items()}


def test_rounds_take_every_repeat_where_they_fit_and_a_last_round_of_the_cases_that_fit():
    clock = Clock()
    fast = [(n, t, s * 0.7) for n, t, s in SUITE]  # a round: 89.6 s, 3 rounds and 8 probes: 277 s
    budget = Budget(330.0, clock=clock)
    assert set(run_rounds(budget, clock, fast).values()) == {3}
    assert budget.cut == {} and budget.summary() == "dlperf budget: 277 s of 330 s measuring"
    clock = Clock()
    budget = Budget(330.0, clock=clock)  # a round: 128 s; two end at 264 s, a whole third would end at 392 s
    taken = run_rounds(budget, clock, SUITE)
    assert budget.used == 321  # the third round's launches that fit in the 66 s left, in order
    assert taken == {"resnet-1": 3, "resnet-2": 3, "vgg-1": 3, "vgg-2": 2, "bert-1": 3, "bert-2": 2, "arc-1": 3,
                     "arc-2": 2}
    assert budget.cut == {"vgg-2": (2, 3), "bert-2": (2, 3), "arc-2": (2, 3)}
    assert "3 case(s) ran fewer repeats" in budget.summary()
    clock = Clock()
    budget = Budget(100.0, clock=clock)  # not even one round fits: the floor is kept, and said
    assert set(run_rounds(budget, clock, SUITE).values()) == {1}
    assert "over it even so" in budget.summary()
    clock = Clock()
    budget = Budget(0.0, clock=clock)
    assert set(run_rounds(budget, clock, SUITE, planned=8).values()) == {8} and budget.cut == {}


# ---------------------------------------------------------------- launches adapted to their spread (GPU nodes)
def _launches(*throughputs: float):
    from pytest_dlperf.results.records import RunRecord

    return [RunRecord(k, {"parsed": {"throughput": x}}, [], [], {}, 10.0) for k, x in enumerate(throughputs)]


def _gpu_measurement():
    from pytest_dlperf.specs import GPU_PROFILE, Measurement

    p = GPU_PROFILE
    return Measurement(warmup_iters=p.warmup_iters, iters=p.iters, repeats=p.repeats, timeout=600,
                       min_repeats=p.min_repeats, budget=p.budget, settle_launches=p.settle_launches,
                       settle_cv=p.settle_cv)


def test_a_case_whose_first_three_launches_agree_within_cv_half_a_percent_stops_there():
    from pytest_dlperf.measure.measured import Measured, settled
    from pytest_dlperf.specs import CaseSpec, Topology

    m, case = _gpu_measurement(), CaseSpec("resnet50", "fp32", 256, 224, Topology(1, 1))
    assert (m.settle_launches, m.settle_cv, m.min_repeats, m.repeats) == (3, 0.005, 3, 5)
    assert settled(Measured(case, _launches(3004.0, 3010.0, 2998.0)), m)  # CV 0.2%, as resnet50 fp32 on an H200
    assert not settled(Measured(case, _launches(3004.0, 3010.0)), m)  # fewer than three say nothing
    assert not settled(Measured(case, _launches(4042.0, 3768.0, 4182.0)), m)  # CV 5%: AMP on the H100
    assert not settled(Measured(case, _launches(3004.0, 3010.0, 2998.0)), replace(m, settle_launches=0))


def test_in_rounds_a_settled_case_stops_at_three_and_a_spread_one_takes_five():
    import contextlib
    from types import SimpleNamespace

    from pytest_dlperf.measure.measured import Measured, going
    from pytest_dlperf.measure.rounds import Unit, take_rounds
    from pytest_dlperf.specs import CaseSpec, Topology

    m = _gpu_measurement()
    figures = {"steady": [3004.0, 3010.0, 2998.0, 3001.0, 3003.0], "spread": [4042.0, 3768.0, 4182.0, 3900.0, 4100.0]}
    state = {name: Measured(CaseSpec(name, "fp32", 256, 224, Topology(1, 1))) for name in figures}

    def take(got: Measured, k: int) -> None:
        got.runs += _launches(figures[got.case.model][k])
        got.taken.append(40.0)

    bench = SimpleNamespace(cluster=lambda: SimpleNamespace(lease=lambda what="": contextlib.nullcontext()))
    clock = Clock()
    why = take_rounds(bench, Budget(m.budget, clock=clock), state, m.repeats, m.min_repeats,
                      Unit(take, going=lambda got: going(got, m)))
    assert why == "" and {n: len(g.runs) for n, g in state.items()} == {"steady": 3, "spread": 5}
