"""Timeline actions (scenarios/timeline.py): the producers' partitioners, topology and subscription changes, broker
crashes and restarts."""

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
