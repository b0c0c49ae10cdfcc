"""Offsets (``OffsetMetadataManager``): OffsetCommit (who may commit when, metadata size, retention time),
OffsetFetch, OffsetDelete, offset expiry (KIP-211), and KafkaApis' split of a request between the broker (unknown
topics/partitions) and the coordinator, with Kafka's merge of the two answers."""

import pytest

from coord_harness import E, Env, described, sub, two_member_stable


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


class TestOffsetCommit:
    def test_simple_group_commit_creates_empty_group(self):
        """testSimpleGroupOffsetCommit: generation -1, no member -> accepted; an Empty group without protocol
        type exists afterwards."""
        env = Env()
        rid = env.commit("simple", -1, "", {("foo", 0): 100})
        assert env.commit_errors(rid) == {("foo", 0): E.NONE}
        d = described(env, "simple")
        assert (d.group_state, d.protocol_type) == ("Empty", "")

    def test_generation_minus_one_into_active_group(self):
        """testGenericGroupOffsetCommitWithoutMemberIdAndGeneration: UNKNOWN_MEMBER_ID unless Empty."""
        env = Env()
        two_member_stable(env)
        assert env.commit_errors(env.commit("g", -1, "", {("foo", 0): 1})) == {("foo", 0): E.UNKNOWN_MEMBER_ID}

    def test_unknown_member_and_illegal_generation(self):
        """testGenericGroupOffsetCommitWithUnknownMemberId / WithIllegalGeneration."""
        env = Env()
        leader, follower, gen = two_member_stable(env)
        assert env.commit_errors(env.commit("g", gen, "unknown", {("foo", 0): 1})) == {
            ("foo", 0): E.UNKNOWN_MEMBER_ID}
        assert env.commit_errors(env.commit("g", gen + 1, follower, {("foo", 0): 1})) == {
            ("foo", 0): E.ILLEGAL_GENERATION}
        assert env.commit_errors(env.commit("g", gen, follower, {("foo", 0): 1})) == {("foo", 0): E.NONE}

    def test_unknown_and_fenced_instance(self):
        """testGenericGroupOffsetCommitWithUnknownInstanceId / WithFencedInstanceId."""
        env = Env()
        rl = env.join(instance="i")
        env.complete_join()
        m, gen = env.resp(rl).member_id, env.resp(rl).generation_id
        env.sync("g", gen, m, {m: b""}, instance="i")
        assert env.commit_errors(env.commit("g", gen, m, {("foo", 0): 1}, instance="x")) == {
            ("foo", 0): E.UNKNOWN_MEMBER_ID}
        assert env.commit_errors(env.commit("g", gen, "other", {("foo", 0): 1}, instance="i")) == {
            ("foo", 0): E.FENCED_INSTANCE_ID}

    def test_completing_rebalance(self):
        """testGenericGroupOffsetCommitWhileInCompletingRebalanceState."""
        env = Env()
        rid = env.join_new()[1]
        env.complete_join()
        r = env.resp(rid)
        assert env.commit_errors(env.commit("g", r.generation_id, r.member_id, {("foo", 0): 1})) == {
            ("foo", 0): E.REBALANCE_IN_PROGRESS}

    def test_preparing_rebalance_accepted(self):
        env = Env()
        leader, follower, gen = two_member_stable(env)
        env.join(member_id=leader)
        assert env.commit_errors(env.commit("g", gen, follower, {("foo", 0): 1})) == {("foo", 0): E.NONE}

    @pytest.mark.parametrize("version,expected", [(8, E.ILLEGAL_GENERATION), (9, E.GROUP_ID_NOT_FOUND)])
    def test_unknown_group_with_generation(self, version, expected):
        """validateOffsetCommit: unknown group and generation >= 0 -> GROUP_ID_NOT_FOUND from v9 on."""
        env = Env()
        assert env.commit_errors(env.commit("nope", 1, "m", {("foo", 0): 1}, version=version)) == {
            ("foo", 0): expected}

    def test_metadata_too_large(self):
        """testOffsetCommitWithOffsetMetadataTooLarge: per partition; length in UTF-16 code units."""
        env = Env(**{"offset.metadata.max.bytes": 4})
        rid = env.commit("s", -1, "", {("foo", 0): 1}, metadata="abcde")
        assert env.commit_errors(rid) == {("foo", 0): E.OFFSET_METADATA_TOO_LARGE}
        rid = env.commit("s", -1, "", {("foo", 0): 1}, metadata="abcd")
        assert env.commit_errors(rid) == {("foo", 0): E.NONE}

    def test_dead_group_after_delete_then_commit(self):
        """Deleted group: a later gen -1 commit recreates a simple group."""
        env = Env()
        env.commit("s", -1, "", {("foo", 0): 1})
        assert E(env.resp(env.delete_groups("s")).results[0].error_code) == E.NONE
        assert env.commit_errors(env.commit("s", -1, "", {("foo", 0): 2})) == {("foo", 0): E.NONE}


class TestOffsetCommitMerge:
    """KafkaApis.handleOffsetCommitRequest + OffsetCommitResponse.Builder.merge."""

    def test_api_layer_partitions_come_first(self):
        env = Env()
        rid = env.commit("s", -1, "", {("foo", 0): 1, ("foo", 9): 1, ("nosuch", 0): 1, ("bar", 0): 1})
        r = env.resp(rid)
        assert [(t.name, [(p.partition_index, E(p.error_code)) for p in t.partitions]) for t in r.topics] == [
            ("foo", [(9, E.UNKNOWN_TOPIC_OR_PARTITION), (0, E.NONE)]), ("nosuch", [(0, E.UNKNOWN_TOPIC_OR_PARTITION)]),
            ("bar", [(0, E.NONE)])]

    def test_group_error_only_on_forwarded_partitions(self):
        env = Env()
        two_member_stable(env)
        rid = env.commit("g", 99, "unknown", {("foo", 0): 1, ("nosuch", 0): 1})
        assert env.commit_errors(rid) == {("foo", 0): E.UNKNOWN_MEMBER_ID,
                                          ("nosuch", 0): E.UNKNOWN_TOPIC_OR_PARTITION}

    def test_all_partitions_unknown_skips_the_coordinator(self):
        env = Env()
        rid = env.commit("nope", 5, "m", {("nosuch", 0): 1})
        assert env.commit_errors(rid) == {("nosuch", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
        assert env.state("nope") == "Dead"


class TestOffsetFetch:
    @pytest.mark.parametrize("version", [1, 5, 7, 8])
    def test_unknown_group_listed_partitions(self, version):
        """testFetchOffsetsWithUnknownGroup: every requested partition -1 / epoch -1 / "" with NONE."""
        env = Env()
        rows = env.fetched(env.fetch("nope", {"foo": [0, 1]}, version=version))
        assert rows == {("foo", 0): (-1, -1, "", E.NONE), ("foo", 1): (-1, -1, "", E.NONE)}

    def test_unknown_group_all_partitions(self):
        env = Env()
        r = env.resp(env.fetch("nope", None, version=7))
        assert E(r.error_code) == E.NONE and r.topics == []

    def test_committed_values(self):
        env = Env()
        env.commit("s", -1, "", {("foo", 0): 10}, metadata="md", leader_epoch=3)
        rows = env.fetched(env.fetch("s", {"foo": [0, 1]}, version=7))
        assert rows == {("foo", 0): (10, 3, "md", E.NONE), ("foo", 1): (-1, -1, "", E.NONE)}


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

    def test_v2_to_v4_retention_time_sets_expire_timestamp(self):
        """OffsetMetadataManager.expireTimestampMs: retention_time_ms (v2-v4) -> expire = commit time + retention,
        which wins over offsets.retention.minutes (OffsetExpirationConditionImpl)."""
        env = Env(**{"offsets.retention.check.interval.ms": 1_000})
        env.commit("s", -1, "", {("foo", 0): 7}, version=2, retention_ms=5_000)
        env.advance_to(4_000)
        assert env.fetched(env.fetch("s", {"foo": [0]}))[("foo", 0)][0] == 7
        env.advance_to(6_000)
        assert env.fetched(env.fetch("s", {"foo": [0]}))[("foo", 0)][0] == -1
        assert env.state("s") == "Dead"  # empty and offset-less -> deleted by the sweep

    def test_v5_ignores_retention(self):
        env = Env(**{"offsets.retention.check.interval.ms": 1_000})
        env.commit("s", -1, "", {("foo", 0): 7}, version=5, retention_ms=5_000)
        env.advance_to(6_000)
        assert env.fetched(env.fetch("s", {"foo": [0]}))[("foo", 0)][0] == 7


class TestOffsetDelete:
    def test_unknown_group(self, env):
        assert env.err(env.offset_delete("nope", {"foo": [0]})) == E.GROUP_ID_NOT_FOUND

    def test_empty_group_group_id(self, env):
        assert env.err(env.offset_delete("", {"foo": [0]})) == E.INVALID_GROUP_ID

    def test_empty_group_deletes(self, env):
        env.commit("g", -1, "", {("foo", 0): 1, ("bar", 0): 2})
        r = env.resp(env.offset_delete("g", {"foo": [0, 1]}))
        assert r.error_code == 0
        assert [(p.partition_index, p.error_code) for p in r.topics[0].partitions] == [(0, 0), (1, 0)]
        assert set(env.svc.committed_offsets("g")) == {("bar", 0)}

    def test_consumer_group_cannot_delete_subscribed_topics(self, env):
        ids, leader, gen = env.stable_group(1, protocols=[("range", sub("foo"))])
        env.commit("g", gen, leader, {("foo", 0): 1, ("bar", 0): 2})
        r = env.resp(env.offset_delete("g", {"foo": [0], "bar": [0]}))
        assert r.error_code == 0
        assert {t.name: [p.error_code for p in t.partitions] for t in r.topics} == \
            {"foo": [E.GROUP_SUBSCRIBED_TO_TOPIC], "bar": [0]}
        assert set(env.svc.committed_offsets("g")) == {("foo", 0)}

    def test_unknown_topics_are_answered_by_the_broker(self, env):
        env.commit("g", -1, "", {("foo", 0): 1})
        r = env.resp(env.offset_delete("g", {"foo": [0, 9], "nosuch": [0]}))
        assert r.error_code == 0
        assert {(t.name, p.partition_index): p.error_code for t in r.topics for p in t.partitions} == {
            ("foo", 0): 0, ("foo", 9): E.UNKNOWN_TOPIC_OR_PARTITION, ("nosuch", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
        # A top-level error from the coordinator replaces the API layer's partial answer
        # (OffsetDeleteResponse.Builder.merge: "If the top-level error exists, we can discard it").
        r = env.resp(env.offset_delete("nope", {"foo": [0], "nosuch": [0]}))
        assert r.error_code == E.GROUP_ID_NOT_FOUND and r.topics == []

    def test_non_consumer_group_with_members(self, env):
        ids, leader, gen = env.stable_group(1, protocol_type="connect", protocols=[("default", b"x")])
        assert env.err(env.offset_delete("g", {"foo": [0]})) == E.NON_EMPTY_GROUP

    def test_offset_delete_unknown_group(self):
        env = Env()
        assert E(env.resp(env.offset_delete("nope", {"foo": [0]})).error_code) == E.GROUP_ID_NOT_FOUND

    def test_offset_delete_non_consumer_group_not_empty(self):
        """ClassicGroup.validateOffsetDelete: an active group not using the consumer protocol -> NON_EMPTY_GROUP."""
        env = Env()
        two_member_stable(env, protocol_type="connect")
        assert E(env.resp(env.offset_delete("g", {"foo": [0]})).error_code) == E.NON_EMPTY_GROUP

    def test_offset_delete_consumer_group_with_unknown_subscriptions(self):
        """ClassicGroup.isSubscribedToTopic: while the subscribed topics are unknown (first rebalance of a
        consumer group: computed only at the end of the join phase), a consumer-protocol group counts as
        subscribed to every topic -> GROUP_SUBSCRIBED_TO_TOPIC, nothing deleted."""
        env = Env()
        env.commit("g", -1, "", {("bar", 0): 5})
        env.join_new()  # consumer group, PreparingRebalance (initial), subscriptions not computed yet
        assert env.state() == "PreparingRebalance"
        r = env.resp(env.offset_delete("g", {"bar": [0]}))
        assert E(r.error_code) == E.NONE
        assert [E(p.error_code) for t in r.topics for p in t.partitions] == [E.GROUP_SUBSCRIBED_TO_TOPIC]
        assert env.fetched(env.fetch("g", {"bar": [0]}))[("bar", 0)][0] == 5

    def test_offset_delete_stable_consumer_group(self):
        """Known subscriptions: subscribed topic refused, other topics deleted."""
        env = Env()
        env.commit("g", -1, "", {("foo", 0): 1, ("bar", 0): 2})
        two_member_stable(env)  # subscribed to foo
        r = env.resp(env.offset_delete("g", {"foo": [0], "bar": [0]}))
        assert {t.name: [E(p.error_code) for p in t.partitions] for t in r.topics} == {
            "foo": [E.GROUP_SUBSCRIBED_TO_TOPIC], "bar": [E.NONE]}


class TestOffsetDeleteMerge:
    """KafkaApis.handleOffsetDeleteRequest + OffsetDeleteResponse.Builder.merge."""

    def test_only_unknown_topics_still_validate_the_group(self):
        env = Env()
        r = env.resp(env.offset_delete("nope", {"nosuch": [0]}))
        assert E(r.error_code) == E.GROUP_ID_NOT_FOUND and r.topics == []
        env.commit("s", -1, "", {("foo", 0): 1})
        r = env.resp(env.offset_delete("s", {"nosuch": [0]}))
        assert E(r.error_code) == E.NONE
        assert [(t.name, [(p.partition_index, E(p.error_code)) for p in t.partitions]) for t in r.topics] == [
            ("nosuch", [(0, E.UNKNOWN_TOPIC_OR_PARTITION)])]

    def test_not_coordinator_has_no_partitions(self):
        env = Env()
        from protocol.messages import OffsetDeleteRequest
        wrong = (env.svc.coordinator_of("g") + 1) % 3
        req = OffsetDeleteRequest(group_id="g", topics=[OffsetDeleteRequest.Topic(
            name="nosuch", partitions=[OffsetDeleteRequest.Topic.Partition(partition_index=0)])])
        r = env.resp(env.send(req, 0, broker=wrong))
        assert E(r.error_code) == E.NOT_COORDINATOR and r.topics == []

    def test_api_layer_partitions_come_first(self):
        env = Env()
        env.commit("s", -1, "", {("foo", 0): 1})
        r = env.resp(env.offset_delete("s", {"foo": [0, 9], "nosuch": [1]}))
        assert [(t.name, [(p.partition_index, E(p.error_code)) for p in t.partitions]) for t in r.topics] == [
            ("foo", [(9, E.UNKNOWN_TOPIC_OR_PARTITION), (0, E.NONE)]), ("nosuch", [(1, E.UNKNOWN_TOPIC_OR_PARTITION)])]
