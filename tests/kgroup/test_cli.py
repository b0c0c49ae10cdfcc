"""The `kgroup` command line: exit codes and what the hashing commands print (Kafka's rules as oracle)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

from kgroup.cli import main


def test_no_command_prints_help_and_exits_2(capsys) -> None:
    assert main([]) == 2
    assert "usage: kgroup" in capsys.readouterr().out


def test_hash_group_uses_kafka_utils_abs(capsys) -> None:
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE; Kafka's Utils.abs maps it to 0 -> partition 0.
    assert main(["hash", "--json", "polygenelubricants", "a"]) == 0
    out = json.loads(capsys.readouterr().out)
    by_id = {g["group_id"]: g for g in out["groups"]}
    assert by_id["polygenelubricants"]["java_hash"] == -2147483648
    assert by_id["polygenelubricants"]["partition"] == 0
    # "a".hashCode() == 97 -> 97 % 50 == 47
    assert by_id["a"]["java_hash"] == 97 and by_id["a"]["partition"] == 47


def test_hash_key_matches_kafka_python_partitioner(capsys) -> None:
    from kafka.partitioner.default import murmur2  # kafka-python's independent port of Kafka's Utils.murmur2

    assert main(["hash", "--json", "--key", "user-1", "--key", "k2", "--partitions", "7"]) == 0
    out = json.loads(capsys.readouterr().out)
    for k in out["keys"]:
        assert k["partition"] == (murmur2(k["key"].encode()) & 0x7FFFFFFF) % 7  # DefaultPartitioner's rule


def test_hash_rejects_bad_input(capsys) -> None:
    assert main(["hash"]) == 2
    assert main(["hash", "g", "--offsets-partitions", "0"]) == 2


def _java_hash(s: str) -> int:
    """String.hashCode over UTF-16 code units with int overflow (independent of protocol.hashing)."""
    h = 0
    for i in range(0, len(b := s.encode("utf-16-be")), 2):
        h = (31 * h + int.from_bytes(b[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _offsets_partition(group: str) -> int:
    h = _java_hash(group)
    return (0 if h == -(1 << 31) else abs(h)) % 50  # Utils.abs, offsets.topic.num.partitions = 50


def _run_demo(*args: str) -> str:
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "kgroup", "demo", *args], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - t0 < 30  # the budget with default options
    return proc.stdout


def test_demo_runs_as_a_module() -> None:
    out = _run_demo()
    assert "Short timeouts for the demo" in out
    # phase 1: the coordinator rule, and every consumer's FIND_COORDINATOR answer names the same broker
    p = _offsets_partition("demo-group")
    assert f"-> __consumer_offsets partition {p}" in out
    claimed = re.search(r"the leader of __consumer_offsets-(\d+) is broker (\d+)", out)
    assert claimed and int(claimed.group(1)) == p
    answers = set(re.findall(r"<- FIND_COORDINATOR NONE: coordinator is broker (\d+)", out))
    assert answers == {claimed.group(2)}
    # phases 2-4: KIP-394 member ids, the vote (2 x range-first, 1 x roundrobin-first -> range), range's split
    assert out.count("<- JOIN_GROUP MEMBER_ID_REQUIRED") == 3
    assert "tally range: 2, roundrobin: 1 -> the coordinator chose 'range'" in out
    assert "join phase complete: generation 1, protocol 'range'" in out
    for part in ("orders-[0,1]", "orders-[2,3]", "orders-[4,5]"):
        assert part in out
    assert "heartbeats answered NONE" in out
    # phase 5: a clean leave; phase 6: a kill, removed by the session timeout; the summary
    assert "c3          -> LEAVE_GROUP" in out and "generation 2" in out
    assert "on heartbeat expiration" in out and "generation 3" in out
    assert "orders-[0,1,2,3,4,5]" in out
    assert "== summary" in out


def test_demo_options_and_the_integer_min_value_group() -> None:
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE; Kafka's Utils.abs maps it to 0 -> partition 0.
    out = _run_demo("--group", "polygenelubricants", "--topic", "events:4", "--strategy", "roundrobin",
                    "--session-timeout-ms", "1000", "--heartbeat-interval-ms", "200",
                    "--initial-rebalance-delay-ms", "100", "--heartbeat-phase-ms", "400")
    assert f"Utils.abs({-(1 << 31)}) = 0" in out
    assert "-> __consumer_offsets partition 0" in out
    assert "tally roundrobin: 3 -> the coordinator chose 'roundrobin'" in out
    assert "events-[0,1,2,3]" in out  # the last consumer standing owns every partition


def test_demo_rejects_bad_options(capsys) -> None:
    assert main(["demo", "--consumers", "2"]) == 2
    assert main(["demo", "--topic", "nopartitions"]) == 2
