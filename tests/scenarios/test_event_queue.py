"""The simulator's event queue (timing wheel + far heap) against a naive model: events run in (time, scheduling
order) order, each exactly once, including events scheduled while their own millisecond is being processed and
events far enough ahead to wait in the heap before joining the wheel; ``run(until)`` stops exactly at ``until``;
a livelock stops the run."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from scenarios.events import LIVELOCK_EVENTS, WHEEL_MS, SimulationError
from scenarios.model import parse_scenario
from scenarios.world import Simulation

from scenario_helpers import small_scenario

DELAYS = st.one_of(st.just(0), st.integers(1, 50), st.integers(WHEEL_MS - 3, WHEEL_MS + 3),
                   st.integers(1, 3 * WHEEL_MS))


def empty_sim() -> Simulation:
    sc = small_scenario(timeline=[])
    sc["groups"][0]["consumers"] = 0
    return Simulation(parse_scenario(sc, "queue"), 1, trace=False)


@settings(max_examples=150, deadline=None)
@given(st.lists(DELAYS, min_size=1, max_size=30), st.lists(st.lists(DELAYS, max_size=3), max_size=60),
       st.lists(st.integers(1, 4 * WHEEL_MS), min_size=1, max_size=4))
def test_events_run_in_time_then_scheduling_order(initial, children, stops):
    sim = empty_sim()
    ran: list[tuple[int, int]] = []
    model: list[tuple[int, int]] = []  # (time, seq) of everything scheduled
    seq = [0]
    spawn = iter(children)

    def schedule(t: int) -> None:
        seq[0] += 1
        model.append((t, seq[0]))
        sim.call(t, fire, seq[0])

    def fire(n: int) -> None:
        ran.append((sim.now, n))
        for d in next(spawn, []):
            schedule(sim.now + d)

    for d in initial:
        schedule(d)
    until = 0
    for step in stops:
        until += step
        sim.run(until)
        assert sim.now == until
        expect = sorted(e for e in model if e[0] <= until)
        assert ran == expect  # every due event, once, in (time, scheduling order) order


def test_a_far_event_runs_before_a_near_one_scheduled_later_for_the_same_millisecond():
    sim = empty_sim()
    order = []
    t_far = WHEEL_MS + 500
    sim.call(t_far, order.append, "far")  # waits in the heap
    sim.call(1000, lambda: sim.call(t_far, order.append, "near"))  # scheduled later, straight into the wheel
    sim.run(2 * WHEEL_MS)
    assert order == ["far", "near"]


def test_a_livelock_stops_the_run_with_the_seed_and_the_last_events():
    """Something that keeps scheduling work at the same millisecond must not hang the run."""
    sim = empty_sim()
    spins = [0]

    def spin() -> None:
        spins[0] += 1
        sim.call(sim.now, spin)

    sim.call(5, spin)
    with pytest.raises(SimulationError) as info:
        sim.run(10)
    assert spins[0] == LIVELOCK_EVENTS + 1
    msg = str(info.value)
    assert f"more than {LIVELOCK_EVENTS} events at t=5 ms (seed 1)" in msg and "last events:" in msg
