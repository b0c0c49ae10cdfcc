"""Event records: versioned JSON form, file persistence and restart from the files."""

import json

from coord_harness import Env
from coordinator import SCHEMA_VERSION
from coordinator.records import CONSUMER_GROUP_RECORD_TYPES, RECORD_TYPES, LogEntry


def test_every_record_round_trips_through_json():
    env = Env()
    ids, leader, gen = env.stable_group(2, session=20_000)
    env.commit("g", gen, leader, {("foo", 0): 3}, metadata="meta")
    env.join(member_id=leader, session=20_000)
    env.join(instance="s1")
    env.join(instance="s1")
    env.join()
    env.advance(60_000)
    env.delete_groups("g")
    env.commit("x", -1, "", {("foo", 0): 1})
    env.offset_delete("x", {"foo": [0]})
    env.stop_broker(env.svc.coordinator_of("g"))
    seen = set()
    for e in env.records:
        d = json.loads(json.dumps(e.to_dict()))
        assert d["v"] == SCHEMA_VERSION and d["type"] == e.record.TYPE
        assert LogEntry.from_dict(d) == e
        seen.add(e.record.TYPE)
    # Every classic-group record type; the KIP-848 ones (not written by a handler yet) round-trip in
    # tests/coordinator/consumer_group/test_cg_records.py.
    assert seen == set(RECORD_TYPES) - {t.TYPE for t in CONSUMER_GROUP_RECORD_TYPES}


def test_log_entries_have_offsets_and_timestamps():
    env = Env()
    env.advance(1234)
    env.join_new()
    log = env.shard("g").log
    assert [e.offset for e in log] == list(range(len(log)))
    assert all(e.timestamp_ms == 1234 for e in log if e.record.group_id == "g")


def _scenario(seed: int) -> list[str]:
    env = Env(seed=seed)
    ids, leader, gen = env.stable_group(3, session=20_000)
    env.commit("g", gen, leader, {("foo", 0): 3})
    env.join(instance="s1")
    env.advance(25_000)
    env.stop_broker(env.svc.coordinator_of("g"))
    env.join_new()
    env.advance(60_000)
    return [json.dumps(e.to_dict(), sort_keys=True) for e in env.records]


def test_same_inputs_same_seed_give_a_byte_identical_log():
    assert _scenario(5) == _scenario(5)
    assert _scenario(5) != _scenario(6)  # member ids come from the seed
