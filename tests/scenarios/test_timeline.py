"""Timeline actions (scenarios/timeline.py): the producers' partitioners, topology and subscription changes, broker
crashes and restarts."""

from __future__ import annotations

from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from scenarios.model import parse_scenario
from scenarios.partitioners import Partitioners
from scenarios.rng import SimRandom
from scenarios.runner import run_scenario

from scenario_helpers import failover_and_back, small_scenario

#: Kafka's own murmur2 vectors (``UtilsTest.testMurmur2``, clients/src/test/.../common/utils/UtilsTest.java)
KAFKA_MURMUR2 = {b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string": -985981536,
                 b"a-little-bit-longer-string": -1486304829,
                 b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971, b"abc": 479470107}


def kafka_partition(hash32: int, num_partitions: int) -> int:
    """``BuiltInPartitioner.partitionForKey``: ``Utils.toPositive(murmur2(key)) % numPartitions``, where
    ``toPositive`` masks the sign bit."""
    return (hash32 & 0x7FFFFFFF) % num_partitions


def test_murmur2_partitions_as_kafkas_test_vectors_say():
    p = Partitioners(SimRandom(1))
    for key, h in KAFKA_MURMUR2.items():
        # 2**31 - 1 partitions make the partition the masked hash itself: the whole hash is checked
        for n in (1, 3, 7, 12, 100, 2**31 - 1):
            expected = kafka_partition(h, n)
            assert p.partition("murmur2", "t", key.decode(), n, list(range(min(n, 16)))) == expected, (key, n)
            assert p.partition("default", "t", key.decode(), n, list(range(min(n, 16)))) == expected, (key, n)


def test_murmur2_partitions_as_kafka_python_does():
    """kafka-python's murmur2 (an independent port of Kafka's) over many keys, UTF-8 and odd lengths included."""
    p = Partitioners(SimRandom(1))
    keys = [str(i) for i in range(300)] + ["user-42", "Ω", "日本語のキー", "x" * 1, "xy", "xyz", "wxyz", ""]
    for key in keys:
        h = kafka_python_murmur2(key.encode("utf-8"))
        for n in (5, 7, 64):
            assert p.partition("murmur2", "t", key, n, list(range(n))) == kafka_partition(h, n), (key, n)


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
    res = run(failover_and_back())
    assert res.ok, "\n".join(map(str, res.violations))
    assert res.summary["groups"]["g"]["coordinator_failovers"] == 2  # away and back
