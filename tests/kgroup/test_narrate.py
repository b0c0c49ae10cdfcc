"""Narration of scenario runs (``kgroup run --narrate``) and of real clients (``kgroup serve --narrate``): each
protocol step with the values Kafka's rules give -- the coordinator partition (Utils.abs(hashCode) % 50), KIP-394
member ids, the initial rebalance delay, the protocol vote (selectProtocol), the first member leads, a new
leader when the leader leaves, RangeAssignor's split -- in English and in Chinese."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kgroup.cli import main
from scenarios.runner import library_paths

LIB = {p.stem: p for p in library_paths()}


def _java_hash(s: str) -> int:
    h = 0
    for ch in s:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def narrate(capsys, tmp_path: Path, scenario: str | Path, *extra: str) -> str:
    path = LIB[scenario] if isinstance(scenario, str) else scenario
    assert main(["run", str(path), "--out", str(tmp_path / "run"), "--narrate", *extra]) == 0
    return capsys.readouterr().out


def steps(out: str) -> list[tuple[float, str, str]]:
    """(seconds, who, text) of each narrated step."""
    rows = []
    for line in out.splitlines():
        m = re.match(r"^  \[\s*([\d.]+)s\] (\S+)\s+(.*)$", line)
        if m:
            rows.append((float(m.group(1)), m.group(2), m.group(3)))
    return rows


def test_four_phases_in_english(capsys, tmp_path):
    out = narrate(capsys, tmp_path, "join-four-phases")
    rows = steps(out)
    h = _java_hash("billing")
    p = abs(h) % 50
    assert f"Utils.abs('billing'.hashCode() = {h}) = {abs(h)}; {abs(h)} % offsets.topic.num.partitions (50) = {p}" \
        in out
    # FIND_COORDINATOR: each consumer, the broker that leads __consumer_offsets-p (p mod 3 with the article placement)
    finds = [r for r in rows if r[2].startswith("-> FIND_COORDINATOR")]
    assert [r[1] for r in finds] == ["billing-0", "billing-1", "billing-new"]
    assert all(r[2].endswith(f"the coordinator is broker {p % 3}") for r in finds)
    # KIP-394: one MEMBER_ID_REQUIRED per consumer before it joins
    assert sum("MEMBER_ID_REQUIRED with the new id" in r[2] for r in rows) == 3
    # the initial rebalance waits group.initial.rebalance.delay.ms (3000) and is extended once (a second member)
    assert "group.initial.rebalance.delay.ms=3000 ms" in out
    assert "extended by another 3000 ms" in out
    gen1 = next(r for r in rows if r[2].startswith("join phase complete") and "generation 1," in r[2])
    assert gen1[0] == pytest.approx(6.005, abs=0.002)  # 3000 + 3000 after the first JoinGroup at 5 ms
    assert "leader billing-0-" in gen1[2] and "leads: it was the first member to join" in out
    # phase 4: the members learn of billing-new's join from a heartbeat and rejoin; range splits 6 partitions 2/2/2
    rejoin = [r[1] for r in rows if "answered REBALANCE_IN_PROGRESS" in r[2]]
    assert rejoin == ["billing-0", "billing-1"]
    assert re.search(r"\*billing-0-\w+… <- orders-\[0,1\]\n\s+billing-1-\w+… <- orders-\[2,3\]\n\s+billing-new-\w+… "
                     r"<- orders-\[4,5\]", out)
    assert "stays the leader" in out
    assert out.index("end of the narration") < out.index("scenario join-four-phases (seed 1): 68.0 s virtual")


def test_four_phases_in_chinese(capsys, tmp_path):
    out = narrate(capsys, tmp_path, "join-four-phases", "--lang", "zh")
    p = abs(_java_hash("billing")) % 50
    for text in ("协调者", "消费者组 billing", "再平衡", f"__consumer_offsets-{p} 的 leader 副本在 broker {p % 3} 上",
                 "MEMBER_ID_REQUIRED", "心跳收到 REBALANCE_IN_PROGRESS", "是 leader 消费者：它是第一个加入消费者组的成员",
                 "分区分配策略 'range'", "订阅 [orders]"):
        assert text in out, text
    assert "joined:" not in out and "the coordinator" not in out  # no English narration left


def test_narration_is_text_not_json(capsys):
    assert main(["run", str(LIB["join-four-phases"]), "--json", "--narrate"]) == 2
    assert "--json" in capsys.readouterr().err


def test_protocol_vote_follows_select_protocol(capsys, tmp_path):
    toml = tmp_path / "vote.toml"
    toml.write_text('''
[scenario]
name = "vote"
duration_ms = "10s"
[cluster]
brokers = 1
broker = { "group.initial.rebalance.delay.ms" = 100 }
topics = [{ name = "t", partitions = 4 }]
[[groups]]
id = "g"
topics = ["t"]
config = { "session.timeout.ms" = 10000 }
members = [
  { name = "a", config = { "partition.assignment.strategy" = ["roundrobin", "range", "sticky"] } },
  { name = "b", config = { "partition.assignment.strategy" = ["range", "roundrobin"] } },
  { name = "c", config = { "partition.assignment.strategy" = ["sticky", "range", "roundrobin"] } },
]
''')
    out = narrate(capsys, tmp_path, toml)
    # selectProtocol: candidates = supported by all (range, roundrobin); a -> roundrobin, b -> range, c's first
    # candidate -> range: range wins 2 to 1
    assert "candidates = the strategies every member supports: [roundrobin, range]" in out
    assert re.search(r"a-\w+… lists \[roundrobin, range, sticky\] -> votes 'roundrobin'", out)
    assert re.search(r"b-\w+… lists \[range, roundrobin\] -> votes 'range'", out)
    assert re.search(r"c-\w+… lists \[sticky, range, roundrobin\] -> votes 'range'", out)
    assert "tally range: 2, roundrobin: 1 -> 'range'" in out


def test_rebalance_triggers_and_a_new_leader(capsys, tmp_path):
    out = narrate(capsys, tmp_path, "rebalance-triggers")
    rows = steps(out)
    left = next(i for i, r in enumerate(rows) if "c0-" in r[2] and "left the group (LeaveGroup" in r[2])
    assert "it was the leader: the coordinator picks another member as leader" in out.split("\n", 1)[1]
    after = [r for r in rows[left:] if r[2].startswith("join phase complete")][0]
    assert "leader c0-" not in after[2]
    # the crash is noticed after session.timeout.ms (6000) without a heartbeat, not at once
    crash = next(r for r in rows if r[1] == "c1" and r[2].startswith("crashed"))
    removed = next(r for r in rows if "no heartbeat within session.timeout.ms (6000 ms)" in r[2])
    assert 0 < removed[0] - crash[0] <= 6.0 + 2.0 + 0.1   # the last heartbeat was at most an interval before
    # more partitions: the leader rejoins because its metadata changed
    assert any("the leader saw the metadata of the subscribed topics change" in r[2] for r in rows if r[0] > 45)
    # the coordinator moves at 75 s: members look it up again; no rebalance follows
    assert any("leader broker" in r[2] and "now coordinates triggers" in r[2] for r in rows)
    assert not [r for r in rows if r[0] > 75 and r[2].startswith("join phase complete")]


def test_producer_keys_with_murmur2(capsys, tmp_path):
    from kafka.partitioner.default import murmur2  # kafka-python's port of Utils.murmur2: an independent oracle
    out = narrate(capsys, tmp_path, "broadcast-unicast")
    for key in ("1", "2", "3"):
        part = (murmur2(key.encode()) & 0x7FFFFFFF) % 3
        assert re.search(rf"key '{key}': murmur2 = -?\d+, toPositive = \d+, \d+ % 3 = partition {part}", out)
    assert "coordinator(group1)" in out and "coordinator(group2)" in out


@pytest.mark.interop
def test_serve_narrates_a_real_kafka_python_consumer(tmp_path):
    from kafka import KafkaConsumer
    proc = subprocess.Popen([sys.executable, "-m", "kgroup", "serve", "--port", "0", "--topic", "orders:4",
                             "--narrate", "--group-initial-rebalance-delay-ms", "300"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()
        bootstrap = first.strip().split("bootstrap=")[1]
        c = KafkaConsumer("orders", bootstrap_servers=bootstrap, group_id="shop", client_id="py1",
                          session_timeout_ms=6000, heartbeat_interval_ms=1000, auto_offset_reset="earliest")
        t0 = time.time()
        while not c.assignment() and time.time() - t0 < 20:
            c.poll(100)
        assert sorted(tp.partition for tp in c.assignment()) == [0, 1, 2, 3]
        c.close()
        time.sleep(0.5)
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=20)
    p = abs(_java_hash("shop")) % 50
    assert f"FIND_COORDINATOR for 'shop' answered: broker {p % 3}" in out
    assert f"% offsets.topic.num.partitions (50) = {p}" in out
    assert "JoinGroup from py1 without a member id -> MEMBER_ID_REQUIRED" in out
    assert re.search(r"<- JOIN_GROUP to py1-\w+…: generation 1, protocol 'range'; you are the LEADER", out)
    assert re.search(r"\*py1-\w+… <- orders-\[0,1,2,3\]", out)
    assert re.search(r"py1-\w+… left the group \(LeaveGroup", out)
