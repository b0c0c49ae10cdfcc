"""The application model (scenarios/application.py): the KafkaConsumer.poll loop -- records are consumed when their
processing finishes, a poll that cannot progress blocks instead of spinning, an idle application keeps its poll
timer alive."""

from __future__ import annotations

from scenarios.fuzz import fuzz_scenario
from scenarios.model import load_scenario, parse_scenario
from scenarios.runner import run_scenario

from scenario_helpers import DATA, small_scenario


def run(sc, seed=1):
    return run_scenario(parse_scenario(sc, "test"), seed)


def test_a_batch_interrupted_by_a_crash_is_not_consumed_and_is_processed_again():
    """Records count as consumed when processing finishes: g-0 crashes in the middle of its first 4-second batch,
    so it consumed nothing, and after the rebalance g-1 processes every record (g-0's included) exactly once."""
    sc = small_scenario(timeline=[{"at": "1s", "action": "produce", "topic": "t", "count": 40,
                                   "partitioner": "round-robin"},
                                  {"at": "3s", "action": "crash", "consumer": "g-0"}])
    sc["groups"][0]["app"] = {"poll_ms": 4000}
    sc["groups"][0]["config"]["max.poll.interval.ms"] = 10_000
    sc["groups"][0]["config"]["request.timeout.ms"] = 11_000
    res = run(sc)
    assert res.ok, "\n".join(map(str, res.violations))
    g = res.summary["groups"]["g"]
    assert g["processed"].get("g-0", 0) == 0
    assert g["processed"]["g-1"] == 40
    assert g["duplicates"] == 0 and g["unprocessed"] == 0


def test_a_poll_that_cannot_progress_does_not_spin():
    """Regression (fuzz seed 318, max 6 faults): a cooperative member is assigned a partition and asked to rejoin
    in the same step; the core keeps asking for a poll (positions to fetch) that it will only do after the join.
    The application must block in poll instead of spinning at one virtual millisecond."""
    base = load_scenario(DATA / "fuzz-base.toml")
    res = run_scenario(fuzz_scenario(base, 318, 6), 318, trace=False)
    assert res.ok, "\n".join(map(str, res.violations))
    assert res.sim.stats["events"] < 100_000


def test_an_application_blocked_in_a_long_poll_keeps_its_poll_timer_alive():
    """KafkaConsumer.poll(timeout) blocks no longer than ConsumerCoordinator.timeToNextPoll, which includes the time
    to the next heartbeat, so an idle application whose poll timeout exceeds max.poll.interval.ms still runs
    coordinator.poll (and restarts its poll timer) every heartbeat interval -- even when no response wakes it
    (here every heartbeat response is lost). It must never leave the group for a poll timeout."""
    sc = small_scenario(timeline=[{"at": "5s", "action": "message_fault", "api": "Heartbeat",
                                   "direction": "response", "mode": "drop", "duration_ms": "25s"}])
    sc["scenario"]["duration_ms"] = "60s"
    sc["groups"][0].update({"consumers": 1, "app": {"poll_timeout_ms": 60_000},
                            "config": {"session.timeout.ms": 30_000, "heartbeat.interval.ms": 3_000,
                                       "max.poll.interval.ms": 10_000, "request.timeout.ms": 60_000,
                                       "enable.auto.commit": False}})
    res = run(sc)
    left = [e for e in res.sim.trace if e["type"] == "left"]
    assert left == []
    assert res.summary["messages"]["dropped"] >= 5
