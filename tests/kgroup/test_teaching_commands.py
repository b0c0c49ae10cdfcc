"""The commands that reproduce the seed articles' examples: ``kgroup partition`` (the producer's partitioners),
``kgroup placement`` (replica placement), ``kgroup assign --user-data / --article`` and ``kgroup hash``'s
Integer.MIN_VALUE note. Oracles: kafka-python's DefaultPartitioner (an independent port of Kafka's), the tables
of AdminUtils' javadoc and of seed 001, the seeds' own assignment tables, and a Java program run on the JDK."""

from __future__ import annotations

import json
import os
import struct
import subprocess

import pytest

from kgroup.cli import main


def _json(capsys, *args: str) -> dict:
    assert main(list(args)) == 0
    return json.loads(capsys.readouterr().out)


# --- kgroup partition ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 3, 7, 50])
def test_keyed_records_match_kafka_pythons_default_partitioner(capsys, n):
    from kafka.partitioner.default import DefaultPartitioner, murmur2

    class Cluster:  # what DefaultPartitioner asks of the metadata
        def topics(self):
            return {"t"}

        def partitions_for_topic(self, topic):
            return set(range(n))

        def available_partitions_for_topic(self, topic):
            return set(range(n))

    keys = ["1", "2", "3", "user-1", "订单-42", "", "a" * 37]
    out = _json(capsys, "partition", "--partitions", str(n), "--json", *[x for k in keys for x in ("--key", k)])
    oracle = DefaultPartitioner()
    for k, row in zip(keys, out["keys"]):
        data = k.encode("utf-8")
        assert row["murmur2"] == (murmur2(data) + (1 << 31)) % (1 << 32) - (1 << 31)
        assert row["partition"] == oracle.partition("t", k, data, None, None, Cluster())
    ints = _json(capsys, "partition", "--partitions", str(n), "--key-serializer", "int", "--json",
                 "--key", "1", "--key", "-7", "--key", "2147483647")
    for k, row in zip((1, -7, 2147483647), ints["keys"]):
        data = struct.pack(">i", k)  # IntegerSerializer
        assert row["bytes"] == data.hex()
        assert row["partition"] == oracle.partition("t", k, data, None, None, Cluster())


def test_seed_001_keys_1_2_3_on_three_partitions(capsys):
    from kafka.partitioner.default import murmur2
    strings = _json(capsys, "partition", "--partitions", "3", "--json", "--key", "1", "--key", "2", "--key", "3")
    expect = [(murmur2(k.encode()) & 0x7FFFFFFF) % 3 for k in "123"]
    assert [r["partition"] for r in strings["keys"]] == expect == [0, 2, 2]  # "2" and "3" share partition 2
    ints = _json(capsys, "partition", "--partitions", "3", "--key-serializer", "int", "--json",
                 "--key", "1", "--key", "2", "--key", "3")
    assert sorted(r["partition"] for r in ints["keys"]) == [0, 1, 2]      # as 4-byte ints they spread


def test_pre_2_4_round_robin_counts_over_available_partitions(capsys):
    # DefaultPartitioner (<= 2.3): toPositive(counter++) % available.size(); the counter wraps past MAX_VALUE
    out = _json(capsys, "partition", "--partitions", "3", "--records", "6", "--partitioner", "pre-2.4",
                "--counter-start", "2147483646", "--unavailable", "1", "--json")
    assert [r["counter"] for r in out["records"]] == [2147483646, 2147483647, -2147483648, -2147483647,
                                                      -2147483646, -2147483645]
    assert [r["to_positive"] for r in out["records"]] == [2147483646, 2147483647, 0, 1, 2, 3]
    assert [r["partition"] for r in out["records"]] == [0, 2, 0, 2, 0, 2]  # available = [0, 2]
    plain = _json(capsys, "partition", "--partitions", "3", "--records", "5", "--partitioner", "pre-2.4",
                  "--counter-start", "0", "--json")
    assert [r["partition"] for r in plain["records"]] == [0, 1, 2, 0, 1]


def test_sticky_and_builtin_keep_a_partition_per_batch(capsys):
    for kind in ("sticky", "builtin"):
        out = _json(capsys, "partition", "--partitions", "4", "--records", "40", "--partitioner", kind,
                    "--batch-records", "5", "--unavailable", "3", "--seed", "11", "--json")
        parts = [r["partition"] for r in out["records"]]
        batches = [parts[i:i + 5] for i in range(0, 40, 5)]
        assert all(len(set(b)) == 1 for b in batches)          # one partition per batch
        assert 3 not in parts                                    # never a partition without a leader
        if kind == "sticky":  # KIP-480: the next batch goes to a different partition
            assert all(a[0] != b[0] for a, b in zip(batches, batches[1:]))


def test_round_robin_partitioner_and_explicit_partition(capsys):
    rr = _json(capsys, "partition", "--partitions", "3", "--records", "7", "--partitioner", "round-robin", "--json")
    assert [r["partition"] for r in rr["records"]] == [0, 1, 2, 0, 1, 2, 0]
    ex = _json(capsys, "partition", "--partitions", "3", "--key", "1", "--records", "2", "--explicit", "1",
               "--json")
    assert [r["partition"] for r in ex["keys"] + ex["records"]] == [1, 1, 1]


@pytest.mark.parametrize("args", [["--partitions", "0", "--key", "a"], ["--partitions", "3"],
                                  ["--partitions", "3", "--key", "x", "--key-serializer", "int"],
                                  ["--partitions", "3", "--records", "1", "--unavailable", "5"],
                                  ["--partitions", "3", "--key", "zz", "--key-serializer", "bytes"]])
def test_partition_bad_input(capsys, args):
    assert main(["partition", *args]) == 2
    assert "kgroup partition:" in capsys.readouterr().err


# --- kgroup placement -----------------------------------------------------------------------------------------------

def test_seed_001_table_and_its_expansion(capsys):
    out = _json(capsys, "placement", "--brokers", "4", "--partitions", "4", "--replication-factor", "2",
                "--add-brokers", "2", "--grow-to", "6", "--json")
    # seed 001: Broker1..Broker4 = brokers 0..3; leaders P0..P3 in order, replicas P3 P0 P1 P2
    assert out["assignment"] == [[0, 1], [1, 2], [2, 3], [3, 0]]
    # after 2 more brokers and 6 partitions: P4 on Broker5 with a replica on Broker6, P5 on Broker6 with a
    # replica on Broker1; P0..P3 do not move
    assert out["after"] == [[0, 1], [1, 2], [2, 3], [3, 0], [4, 5], [5, 0]]
    assert out["added_brokers"] == [4, 5]


def test_kafka_rule_reproduces_adminutils_javadoc_table(capsys):
    # AdminUtils.assignReplicasToBrokers' javadoc: 5 brokers, 10 partitions, 3 replicas (start index 0, shift 0)
    out = _json(capsys, "placement", "--brokers", "5", "--partitions", "10", "--replication-factor", "3",
                "--rule", "kafka", "--start-index", "0", "--shift", "0", "--json")
    javadoc = {  # broker -> (1st replica partitions, 2nd, 3rd)
        0: ([0, 5], [4, 8], [3, 7]), 1: ([1, 6], [0, 9], [4, 8]), 2: ([2, 7], [1, 5], [0, 9]),
        3: ([3, 8], [2, 6], [1, 5]), 4: ([4, 9], [3, 7], [2, 6]),
    }
    for broker, rows in javadoc.items():
        for j, parts in enumerate(rows):
            assert sorted(p for p, reps in enumerate(out["assignment"]) if reps[j] == broker) == parts


def test_kafka_rule_growth_starts_at_partition_0s_broker(capsys):
    out = _json(capsys, "placement", "--brokers", "3", "--partitions", "3", "--replication-factor", "2",
                "--rule", "kafka", "--start-index", "2", "--shift", "1", "--add-brokers", "1", "--grow-to", "5",
                "--json")
    assert out["assignment"][0][0] == 2
    # AdminZkClient: the new partitions start from the index of partition 0's first replica (2), shift = that index;
    # the shift grows by one at every partition id that is a multiple of the broker count (here at 4)
    n, start = 4, 2
    for pid, shift in ((3, 2), (4, 3)):
        first = (pid + start) % n
        assert out["after"][pid] == [first, (first + 1 + shift % (n - 1)) % n]
    assert out["after"][:3] == out["assignment"]


def test_placement_bad_input(capsys):
    assert main(["placement", "--brokers", "2", "--partitions", "2", "--replication-factor", "3"]) == 2
    assert main(["placement", "--brokers", "3", "--partitions", "3", "--grow-to", "2"]) == 2
    assert main(["placement", "--brokers", "3", "--partitions", "3", "--start-index", "1"]) == 2
    assert "kgroup placement:" in capsys.readouterr().err


# --- kgroup assign: the seeds' tables, userData ---------------------------------------------------------------------

def _article(capsys, *args: str) -> list[str]:
    assert main(["assign", "--article", *args]) == 0
    return capsys.readouterr().out.splitlines()


def test_seed_000_range_and_roundrobin_tables(capsys):
    members = ["--member", "c0=t0,t1", "--member", "c1=t0,t1"]
    assert _article(capsys, "--strategy", "range", "--topics", "t0:3,t1:3", *members) == [
        "c0 [t0p0,t0p1,t1p0,t1p1]", "c1 [t0p2,t1p2]"]
    # the article prints "c1 [t0p1,t1p0,p1p2]": p1p2 is a slip for t1p2
    assert _article(capsys, "--strategy", "roundrobin", "--topics", "t0:3,t1:3", *members) == [
        "c0 [t0p0,t0p2,t1p1]", "c1 [t0p1,t1p0,t1p2]"]
    assert _article(capsys, "--strategy", "roundrobin", "--topics", "t0:1,t1:2,t2:3", "--member", "c0=t0",
                    "--member", "c1=t0,t1", "--member", "c2=t0,t1,t2") == [
        "c0 [t0p0]", "c1 [t1p0]", "c2 [t1p1,t2p0,t2p1,t2p2]"]


def test_seed_002_and_003_tables(capsys):
    five = "t0:3,t1:3,t2:3,t3:3,t4:3"
    members = ["--member", "c0=t0,t1,t2,t3,t4", "--member", "c1=t0,t1,t2,t3,t4"]
    rng = _json(capsys, "assign", "--strategy", "org.apache.kafka.clients.consumer.RangeAssignor", "--topics", five,
                *members, "--json")
    assert [len(rng["assignment"][m]) for m in ("c0", "c1")] == [10, 5]
    rr = _json(capsys, "assign", "--strategy", "org.apache.kafka.clients.consumer.RoundRobinAssignor", "--topics",
               five, *members, "--json")
    assert [len(rr["assignment"][m]) for m in ("c0", "c1")] == [8, 7]
    assert _article(capsys, "--strategy", "range", "--topics", "T0:4,T1:4", "--member", "C0=T0,T1",
                    "--member", "C1=T0,T1", "--member", "C2=T0,T1") == [
        "C0 [T0p0,T0p1,T1p0,T1p1]", "C1 [T0p2,T1p2]", "C2 [T0p3,T1p3]"]
    # seed 002's uneven example has C2 subscribe to t1, t2 only (seed 000: t0, t1, t2): the same result
    assert _article(capsys, "--strategy", "roundrobin", "--topics", "t0:1,t1:2,t2:3", "--member", "C0=t0",
                    "--member", "C1=t0,t1", "--member", "C2=t1,t2") == [
        "C0 [t0p0]", "C1 [t1p0]", "C2 [t1p1,t2p0,t2p1,t2p2]"]


def test_user_data_weights(capsys):
    out = _json(capsys, "assign", "--strategy", "consumer.assignors.examples:WeightedAssignor", "--topics", "t0:6",
                "--member", "c0=t0", "--member", "c1=t0", "--user-data", "c0=int32:2", "--user-data", "c1=00000001",
                "--json")
    assert [len(out["assignment"][m]) for m in ("c0", "c1")] == [4, 2]  # weights 2:1
    same = _json(capsys, "assign", "--strategy", "consumer.assignors.examples:WeightedAssignor", "--topics", "t0:6",
                 "--member", "c0=t0", "--member", "c1=t0", "--json")
    assert [len(same["assignment"][m]) for m in ("c0", "c1")] == [3, 3]  # no userData: weight 1 each
    assert main(["assign", "--topics", "t0:1", "--member", "c0=t0", "--user-data", "c0=int32:x"]) == 2
    assert main(["assign", "--topics", "t0:1", "--member", "c0=t0", "--user-data", "c9=01"]) == 2


# --- kgroup hash: Math.abs vs Utils.abs, checked on a real JDK -------------------------------------------------------

JAVA = """
public class AbsCheck {
    public static void main(String[] a) {
        for (String g : new String[] {"ttt", "polygenelubricants"}) {
            int h = g.hashCode();
            System.out.println(g + " " + h + " " + (Math.abs(h) % 50));
        }
    }
}
"""


def test_hash_against_java(capsys, tmp_path):
    from tests.protocol.java.jdks import find_jdks
    jdks = find_jdks()
    if not jdks:
        pytest.skip("no javac found (needs a JDK, e.g. openjdk-17-jdk-headless)")
    _, bindir = next(iter(jdks.values()))
    (tmp_path / "AbsCheck.java").write_text(JAVA)
    subprocess.run([os.path.join(bindir, "javac"), "-d", str(tmp_path), str(tmp_path / "AbsCheck.java")],
                   check=True, capture_output=True, timeout=300)
    java = subprocess.run([os.path.join(bindir, "java"), "-cp", str(tmp_path), "AbsCheck"], check=True,
                          capture_output=True, text=True, timeout=300).stdout.split("\n")
    ttt, poly = (line.split() for line in java[:2])
    assert main(["hash", "ttt", "polygenelubricants"]) == 0
    out = capsys.readouterr().out
    assert f"'ttt'                    hashCode={ttt[1]}" in out and "partition=38" in out
    assert ttt[2] == "38"                                    # the article's Math.abs("ttt".hashCode()) % 50
    assert poly[1] == "-2147483648" and poly[2] == "-48"     # Math.abs(MIN_VALUE) % 50 in Java
    assert f"Math.abs(hash) % 50 = {poly[2]}, not a partition" in out
    assert "Kafka's Utils.abs maps MIN_VALUE to 0 -> partition 0" in out
