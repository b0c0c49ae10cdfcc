"""Compaction of the ``__consumer_offsets`` logs (coordinator/log.py, Kafka's LogCleaner with
cleanup.policy=compact): the durable load of a compacted log is the durable load of the whole log (also with
records appended after it), the live state stays equal to the replay of the log through compactions, rollbacks
and failovers, and memory follows the live state rather than the history."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coord_harness import E, Env
from coordinator import records as R
from coordinator.log import CompactionPolicy, compact_durable
from coordinator.records import LogEntry
from coordinator.replay import load_durable, state_snapshot
from coordinator.runtime import CoordinatorRuntime

GROUPS = ("g1", "g2")
TPS = (("t", 0), ("t", 1), ("u", 0))


def _record(draw) -> R.Record:
    kind = draw(st.sampled_from(["meta", "gtomb", "commit", "commit", "commit", "otomb", "transient"]))
    g = draw(st.sampled_from(GROUPS))
    if kind == "meta":
        return R.GroupMetadata(group_id=g, protocol_type=draw(st.sampled_from([None, "consumer"])),
                               generation_id=draw(st.integers(0, 5)))
    if kind == "gtomb":
        return R.GroupTombstone(group_id=g, reason="test")
    t, p = draw(st.sampled_from(TPS))
    if kind == "commit":
        return R.OffsetCommit(group_id=g, topic=t, partition=p, offset=draw(st.integers(0, 100)),
                              commit_timestamp_ms=draw(st.integers(0, 10)))
    if kind == "otomb":
        return R.OffsetTombstone(group_id=g, topic=t, partition=p, reason="test")
    return R.RebalanceStarted(group_id=g, reason="transient records are not part of the durable load")


@st.composite
def logs(draw):
    n = draw(st.integers(0, 40))
    out, ts = [], 0
    for i in range(n):
        ts += draw(st.integers(0, 30))
        out.append(LogEntry(0, i, ts, _record(draw)))
    return out


@settings(max_examples=400, deadline=None)
@given(logs(), logs(), st.integers(0, 2000), st.integers(0, 100))
def test_durable_load_of_a_compacted_log_is_the_durable_load_of_the_log(entries, more, now, retention):
    now = (entries[-1].timestamp_ms if entries else 0) + now
    compacted = compact_durable(entries, now, retention)
    # a subsequence of the durable records, with their offsets and timestamps
    assert all(e.record.DURABLE for e in compacted)
    offsets = [e.offset for e in compacted]
    assert offsets == sorted(offsets) and set(offsets) <= {e.offset for e in entries}
    assert state_snapshot(load_durable(compacted)) == state_snapshot(load_durable(entries))
    # and what follows a compaction replays the same on both (the fold's state is the same)
    later = [LogEntry(0, len(entries) + i, now + e.timestamp_ms, e.record) for i, e in enumerate(more)]
    assert state_snapshot(load_durable(compacted + later)) == state_snapshot(load_durable(entries + later))
    # compacting twice changes nothing more
    assert compact_durable(compacted, now, retention) == compacted


def test_latest_per_key_and_tombstones_after_delete_retention():
    def e(i, ts, rec):
        return LogEntry(0, i, ts, rec)
    c = lambda o: R.OffsetCommit(group_id="g", topic="t", partition=0, offset=o)  # noqa: E731
    log = [e(0, 0, R.GroupMetadata(group_id="g", protocol_type="consumer")), e(1, 1, c(1)), e(2, 2, c(2)),
           e(3, 3, R.OffsetTombstone(group_id="h", topic="t", partition=0)),
           e(4, 4, R.GroupMetadata(group_id="g", protocol_type="consumer", generation_id=2))]
    assert [x.offset for x in compact_durable(log, 10, 100)] == [2, 3, 4]  # the tombstone is young: kept
    assert [x.offset for x in compact_durable(log, 200, 100)] == [2, 4]  # old: dropped


def test_a_group_tombstone_keeps_the_offsets_before_it_and_stays_while_they_do():
    # Kafka's group metadata tombstone and offset records are independent (a deletion tombstones every offset
    # first): the offset survives the group's tombstone, and the tombstone is kept past delete.retention.ms so that
    # the surviving offset does not recreate the group as a simple group on load
    meta = LogEntry(0, 0, 0, R.GroupMetadata(group_id="g", protocol_type="consumer", generation_id=1))
    commit = LogEntry(0, 1, 0, R.OffsetCommit(group_id="g", topic="t", partition=0, offset=5))
    tomb = LogEntry(0, 2, 1, R.GroupTombstone(group_id="g"))
    assert compact_durable([meta, commit, tomb], 10, 100) == [commit, tomb]
    assert compact_durable([meta, commit, tomb], 1000, 100) == [commit, tomb]
    loaded = load_durable([commit, tomb])
    assert "g" not in loaded.groups and loaded.offsets.get("g", "t", 0).offset == 5
    # with the offset tombstoned too, both tombstones go once delete.retention.ms has passed
    otomb = LogEntry(0, 3, 1, R.OffsetTombstone(group_id="g", topic="t", partition=0))
    assert compact_durable([meta, commit, tomb, otomb], 1000, 100) == []


def test_policy_follows_the_dirty_ratio():
    p = CompactionPolicy(min_cleanable_ratio=0.5, min_dirty_records=10)
    assert not p.due(0, 9) and p.due(0, 10)
    assert not p.due(100, 99) and p.due(100, 100)
    assert not CompactionPolicy(min_cleanable_ratio=1.0, min_dirty_records=1).due(0, 10 ** 9)


def _busy(env: Env, rounds: int) -> tuple[str, int]:
    ids, leader, gen = env.stable_group(3, session=30_000)
    for i in range(rounds):
        env.commit("g", gen, leader, {("foo", i % 3): i, ("bar", 0): i})
        env.commit(f"simple-{i % 4}", -1, "", {("baz", 1): i})  # simple groups, created by their commits
        if i % 7 == 3:
            env.offset_delete(f"simple-{i % 4}", {"baz": [1]})
        env.advance(100)
        for m in ids:
            env.heartbeat("g", gen, m)
    return leader, gen


def test_live_state_equals_replay_through_compactions():
    """Every call of the harness asserts state == replay of the log; with compaction after 20 records it runs
    from checkpoints most of the time, and the log's memory follows the live state."""
    env = Env(**{"kgroup.offsets.compaction.min.records": 20})
    leader, gen = _busy(env, 150)
    shard = env.shard("g")
    log = shard.log
    assert log.compactions >= 5 and log.checkpoint is not None
    assert len(log.entries) <= 2 * log.clean + 20 + 10
    assert log.next_offset > 3 * len(log.entries)  # far more records were appended than are kept
    offsets = env.svc.committed_offsets("g")
    assert offsets[("foo", 0)].offset == 147 and offsets[("bar", 0)].offset == 149
    # the records a call returns (the rebalance log) are untouched: consecutive offsets per partition
    p = env.svc.partition_for("g")
    offs = [e.offset for e in env.records if e.partition == p]  # (offset 0: the load before the harness listens)
    assert offs == list(range(1, log.next_offset))


def test_failover_after_compaction_loads_the_same_offsets_and_groups():
    env = Env(**{"kgroup.offsets.compaction.min.records": 20})
    _busy(env, 80)
    before = {g: env.svc.committed_offsets(g) for g in ["g"] + [f"simple-{i}" for i in range(4)]}
    old = env.svc.coordinator_of("g")
    env.stop_broker(old)
    assert env.svc.coordinator_of("g") != old
    after = {g: env.svc.committed_offsets(g) for g in before}
    assert after == before
    assert env.state("g") == "Stable" and len(env.group("g").members) == 3


def test_rollback_after_compaction_restores_the_state(monkeypatch):
    env = Env(**{"kgroup.offsets.compaction.min.records": 20})
    leader, gen = _busy(env, 40)
    shard = env.shard("g")
    assert shard.log.compactions >= 1
    before = state_snapshot(shard.runtime.state)
    original = CoordinatorRuntime.append

    def fail_on_commit(self, rec):
        original(self, rec)
        if isinstance(rec, R.OffsetCommit):
            raise RuntimeError("append failed after applying")

    monkeypatch.setattr(CoordinatorRuntime, "append", fail_on_commit)
    with pytest.raises(RuntimeError):
        env.commit("g", gen, leader, {("foo", 0): 999})
    monkeypatch.undo()
    assert state_snapshot(shard.runtime.state) == before
    assert env.svc.committed_offsets("g")[("foo", 0)].offset != 999
    rid = env.commit("g", gen, leader, {("foo", 0): 1000})
    assert env.resp(rid).topics[0].partitions[0].error_code == E.NONE
