"""Partitioners, the data path, the network model and the faults, on small direct checks."""

from __future__ import annotations

from protocol.hashing import partition_for_key
from scenarios.model import parse_scenario
from scenarios.partitioners import Partitioners
from scenarios.rng import SimRandom
from scenarios.runner import run_scenario

from scenario_helpers import small_scenario


def test_murmur2_is_kafkas():
    p = Partitioners(SimRandom(1))
    for key in ("1", "2", "3", "user-42", "Ω"):
        assert p.partition("murmur2", "t", key, 7, list(range(7))) == partition_for_key(key.encode(), 7)
        assert p.partition("default", "t", key, 7, list(range(7))) == partition_for_key(key.encode(), 7)


def test_round_robin_starts_at_zero_and_skips_unavailable():
    p = Partitioners(SimRandom(1))
    assert [p.partition("round-robin", "t", None, 3, [0, 1, 2]) for _ in range(5)] == [0, 1, 2, 0, 1]
    assert [p.partition("round-robin", "u", None, 3, [0, 2]) for _ in range(4)] == [0, 2, 0, 2]


def test_sticky_partitioner_sticks_for_a_batch_then_switches():
    p = Partitioners(SimRandom(1))
    picks = [p.partition("sticky", "t", None, 4, [0, 1, 2, 3], batch_records=3) for _ in range(12)]
    batches = [picks[i:i + 3] for i in range(0, 12, 3)]
    assert all(len(set(b)) == 1 for b in batches)
    assert all(batches[i][0] != batches[i + 1][0] for i in range(3))
    # unkeyed records use sticky under the default partitioner; same seed, same choices
    q = Partitioners(SimRandom(1))
    assert [q.partition("default", "t", None, 4, [0, 1, 2, 3], batch_records=3) for _ in range(12)] == picks


def run(sc, seed=1):
    return run_scenario(parse_scenario(sc, "test"), seed)


def test_dropped_join_responses_time_out_and_recover():
    sc = small_scenario()
    sc["timeline"].append({"at": "3s", "action": "message_fault", "consumer": "g-1", "api": "JoinGroup",
                           "direction": "response", "mode": "drop", "duration_ms": "20s"})
    sc["timeline"].append({"at": "3s", "action": "restart", "consumer": "g-1", "down_ms": 100})
    res = run(sc)
    assert res.ok, "\n".join(map(str, res.violations))
    assert res.summary["messages"]["dropped"] >= 1


def test_duplicated_and_delayed_messages():
    sc = small_scenario()
    sc["timeline"] += [
        {"at": "2s", "action": "message_fault", "api": "any", "direction": "both", "mode": "duplicate",
         "duration_ms": "5s"},
        {"at": "8s", "action": "message_fault", "consumer": "g-0", "api": "Heartbeat", "mode": "delay",
         "delay_ms": 500, "duration_ms": "3s"},
    ]
    res = run(sc)
    assert res.ok, "\n".join(map(str, res.violations))
    assert res.summary["messages"]["duplicated"] > 0 and res.summary["messages"]["delayed"] > 0


def test_network_partition_expels_member_then_it_rejoins():
    sc = small_scenario()
    sc["timeline"].append({"at": "4s", "action": "network_partition", "consumer": "g-0", "duration_ms": "6s"})
    res = run(sc)
    assert res.ok, "\n".join(map(str, res.violations))
    reasons = [g["reason"] for g in res.summary["groups"]["g"]["generations"]]
    assert any("heartbeat expiration" in r for r in reasons)


def test_add_partitions_and_subscription_change():
    sc = small_scenario()
    sc["cluster"]["topics"].append({"name": "u", "partitions": 2})
    sc["cluster"]["metadata_max_age_ms"] = 1000
    sc["timeline"] += [{"at": "3s", "action": "add_partitions", "topic": "t", "partitions": 6},
                       {"at": "6s", "action": "subscribe", "group": "g", "topics": ["t", "u"]},
                       {"at": "8s", "action": "produce", "topic": "t", "count": 30, "partitioner": "round-robin"}]
    res = run(sc)
    assert res.ok, "\n".join(map(str, res.violations))
    owned = sorted(p for parts in res.summary["groups"]["g"]["assignment"].values() for p in parts)
    assert owned == sorted([f"t-{i}" for i in range(6)] + ["u-0", "u-1"])


def test_broker_crash_and_restart_with_preferred_election():
    sc = small_scenario()
    sc["timeline"].append({"at": "4s", "action": "broker_crash", "broker": "coordinator", "duration_ms": "3s",
                           "elect_preferred": True})
    res = run(sc)
    assert res.ok, "\n".join(map(str, res.violations))
    assert res.summary["groups"]["g"]["coordinator_failovers"] == 2  # away and back


def test_a_poll_that_cannot_progress_does_not_spin():
    """Regression (fuzz seed 318, max 6 faults): a cooperative member is assigned a partition and asked to rejoin
    in the same step; the core keeps asking for a poll (positions to fetch) that it will only do after the join.
    The application must block in poll instead of spinning at one virtual millisecond."""
    from scenarios.fuzz import fuzz_scenario
    from scenarios.model import load_scenario

    from scenario_helpers import DATA

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
