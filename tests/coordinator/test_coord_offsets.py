"""OffsetCommit / OffsetFetch / retention (OffsetMetadataManager and its tests)."""

import pytest

from coord_harness import E, Env, sub


def test_simple_group_commit_creates_an_empty_group(env):
    errs = env.commit_errors(env.commit("simple", -1, "", {("foo", 0): 10, ("foo", 1): 20}))
    assert set(errs.values()) == {E.NONE}
    g = env.group("simple")
    assert (str(g.state), g.protocol_type, g.generation_id) == ("Empty", None, 0)
    assert env.fetched(env.fetch("simple", {"foo": [0, 1, 2]})) == {
        ("foo", 0): (10, -1, "", E.NONE), ("foo", 1): (20, -1, "", E.NONE), ("foo", 2): (-1, -1, "", E.NONE)}


@pytest.mark.parametrize("version,expected", [(8, E.ILLEGAL_GENERATION), (9, E.GROUP_ID_NOT_FOUND)])
def test_commit_to_unknown_group_with_generation(env, version, expected):
    assert env.commit_errors(env.commit("nope", 1, "m", {("foo", 0): 1}, version=version)) == {("foo", 0): expected}
    assert env.group("nope") is None


def test_metadata_too_large_is_per_partition():
    env = Env(**{"offset.metadata.max.bytes": 10})
    rid = env.commit("g", -1, "", {("foo", 0): 1}, metadata="x" * 10)
    assert env.commit_errors(rid) == {("foo", 0): E.NONE}
    rid = env.commit("g", -1, "", {("foo", 1): 1}, metadata="x" * 11)
    assert env.commit_errors(rid) == {("foo", 1): E.OFFSET_METADATA_TOO_LARGE}
    assert set(env.svc.committed_offsets("g")) == {("foo", 0)}


def test_default_metadata_limit_is_4096(env):
    rid = env.commit("g", -1, "", {("foo", 0): 1, ("foo", 1): 2}, metadata="m" * 4096)
    assert set(env.commit_errors(rid).values()) == {E.NONE}
    rid = env.commit("g", -1, "", {("foo", 2): 1}, metadata="m" * 4097)
    assert env.commit_errors(rid) == {("foo", 2): E.OFFSET_METADATA_TOO_LARGE}


def test_unknown_topic_or_partition_is_rejected_by_the_broker(env):
    rid = env.commit("g", -1, "", {("foo", 0): 1, ("foo", 7): 1, ("nosuch", 0): 1})
    assert env.commit_errors(rid) == {("foo", 0): E.NONE, ("foo", 7): E.UNKNOWN_TOPIC_OR_PARTITION,
                                      ("nosuch", 0): E.UNKNOWN_TOPIC_OR_PARTITION}


def test_commit_stores_leader_epoch_metadata_and_overwrites(env):
    env.commit("g", -1, "", {("foo", 0): 1}, metadata="a", leader_epoch=3)
    env.commit("g", -1, "", {("foo", 0): 2}, metadata="b", leader_epoch=4)
    assert env.fetched(env.fetch("g", {"foo": [0]})) == {("foo", 0): (2, 4, "b", E.NONE)}


def test_leader_epoch_is_ignored_before_v6(env):
    env.commit("g", -1, "", {("foo", 0): 1}, leader_epoch=3, version=5)
    assert env.fetched(env.fetch("g", {"foo": [0]}))[("foo", 0)][1] == -1


@pytest.mark.parametrize("version", [2, 7, 8, 9])
def test_fetch_all_offsets(env, version):
    env.commit("g", -1, "", {("foo", 1): 11, ("bar", 0): 5, ("foo", 0): 10})
    got = env.fetched(env.fetch("g", None, version=version))
    assert got == {("bar", 0): (5, -1, "", E.NONE), ("foo", 0): (10, -1, "", E.NONE),
                   ("foo", 1): (11, -1, "", E.NONE)}
    r = env.resp(env._rid)
    topics = r.groups[0].topics if version >= 8 else r.topics
    assert [t.name for t in topics] == ["bar", "foo"]


def test_fetch_unknown_group_gives_minus_one(env):
    assert env.fetched(env.fetch("nope", {"foo": [0]})) == {("foo", 0): (-1, -1, "", E.NONE)}
    assert env.fetched(env.fetch("nope", None)) == {}


@pytest.mark.parametrize("version", [1, 2, 7, 8])
def test_fetch_from_wrong_broker(env, version):
    wrong = (env.svc.coordinator_of("g") + 1) % 3
    r = env.resp(env.fetch("g", {"foo": [0]}, version=version, broker=wrong))
    if version == 1:
        assert [(p.committed_offset, p.error_code) for p in r.topics[0].partitions] == [(-1, E.NOT_COORDINATOR)]
    elif version < 8:
        assert (r.error_code, r.topics) == (E.NOT_COORDINATOR, [])
    else:
        assert r.groups[0].error_code == E.NOT_COORDINATOR


def test_commit_from_wrong_broker(env):
    wrong = (env.svc.coordinator_of("g") + 1) % 3
    from protocol.messages import OffsetCommitRequest
    req = OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequest.Topic(name="foo", partitions=[OffsetCommitRequest.Topic.Partition(
            partition_index=0, committed_offset=1)])])
    rid = env.send(req, 9, broker=wrong)
    assert env.commit_errors(rid) == {("foo", 0): E.NOT_COORDINATOR}


class TestRetention:
    def env(self, **kw):
        return Env(**{"offsets.retention.minutes": 1, "offsets.retention.check.interval.ms": 10_000}, **kw)

    def test_simple_group_offsets_expire_by_commit_time_then_group_is_deleted(self):
        env = self.env()
        env.advance(5_000)
        env.commit("simple", -1, "", {("foo", 0): 1})
        env.advance_to(60_000)
        assert env.svc.committed_offsets("simple")  # 55 s old at the 60 s sweep
        env.advance_to(70_000)
        assert env.svc.committed_offsets("simple") == {} and env.group("simple") is None
        assert [e.record.TYPE for e in env.records[-2:]] == ["OffsetTombstone", "GroupTombstone"]

    def test_explicit_retention_time_v2_to_v4(self):
        env = self.env()
        env.commit("simple", -1, "", {("foo", 0): 1}, version=2, retention_ms=15_000)
        env.advance_to(10_000)
        assert env.svc.committed_offsets("simple")
        env.advance_to(20_000)
        assert env.svc.committed_offsets("simple") == {}

    def test_retention_time_ignored_from_v5(self):
        env = self.env()
        env.commit("simple", -1, "", {("foo", 0): 1}, version=5, retention_ms=15_000)
        env.advance_to(50_000)
        assert env.svc.committed_offsets("simple")

    def test_empty_consumer_group_expires_from_the_time_it_became_empty(self):
        env = self.env()
        ids, leader, gen = env.stable_group(1, session=600_000)
        env.commit("g", gen, leader, {("foo", 0): 1})
        env.advance_to(100_000)  # Stable, subscribed to foo: nothing expires
        assert env.svc.committed_offsets("g")
        env.leave("g", [(leader, None)])  # Empty at 100 s
        env.advance_to(150_000)
        assert env.svc.committed_offsets("g")
        env.advance_to(160_000)
        assert env.svc.committed_offsets("g") == {} and env.group("g") is None

    def test_stable_group_expires_offsets_of_unsubscribed_topics_only(self):
        env = self.env()
        ids, leader, gen = env.stable_group(1, session=600_000, protocols=[("range", sub("foo"))])
        env.commit("g", gen, leader, {("foo", 0): 1, ("bar", 0): 2})
        t = env.now
        for _ in range(8):
            env.advance(9_000)
            env.heartbeat("g", gen, leader)
        assert set(env.svc.committed_offsets("g")) == {("foo", 0)}

    def test_empty_group_without_offsets_is_deleted_at_the_next_sweep(self):
        env = self.env()
        ids, leader, gen = env.stable_group(1, session=600_000)
        env.leave("g", [(leader, None)])
        assert env.state() == "Empty"
        env.advance(10_000)
        assert env.group("g") is None
