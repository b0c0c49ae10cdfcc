"""OffsetCommit / OffsetFetch v10 (KIP-848: topics named by id; what Kafka 4.1+'s Java consumer sends when every
topic has a known id) and the API layer's topic checks at every version, through the whole coordinator.

Cases ported from Kafka 4.4's ``KafkaApisTest`` (``testHandleOffsetCommitRequestTopicsAndPartitionsValidation``,
``testHandleOffsetFetchWithUnknownTopicIds``) with their expected values; the coordinator's part is the real one
here (Kafka's test mocks it), so committed offsets are checked by fetching them back."""

from __future__ import annotations

import uuid

import pytest

from protocol.errors import ErrorCode
from protocol.frames import decode_request, encode_request
from protocol.messages import OffsetCommitRequest, OffsetFetchRequest, OffsetFetchResponse
from protocol.api import ApiKey
from protocol.versions import advertised_api_versions

from coordinator.cluster import topic_id

from cg_env import CgEnv

E = ErrorCode
ZERO = uuid.UUID(int=0)
ZAR_ID = uuid.UUID("5b2ac4a8-1a4f-4d0e-9d2c-3e6f7a8b9c0d")  # no topic has it


def _commit_request(version: int) -> OffsetCommitRequest:
    C = OffsetCommitRequest.Topic

    def topic(name: str, tid: uuid.UUID, offsets: dict[int, int]) -> C:
        return C(name=name if version < 10 else "", topic_id=tid if version >= 10 else ZERO,
                 partitions=[C.Partition(partition_index=p, committed_offset=o) for p, o in offsets.items()])
    # An admin-style commit (generation -1, no member) to a group that does not exist: a simple group.
    return OffsetCommitRequest(group_id="group", member_id="", generation_id_or_member_epoch=-1, topics=[
        topic("foo", topic_id("foo"), {0: 10, 1: 20, 2: 30}),   # foo exists but only has 2 partitions
        topic("bar", topic_id("bar"), {0: 40, 1: 50}),          # bar exists
        topic("zar", ZAR_ID, {0: 60, 1: 70}),                   # zar does not exist
    ])


@pytest.mark.parametrize("version", [8, 9, 10])
def test_offset_commit_topics_and_partitions_validation(version):
    """testHandleOffsetCommitRequestTopicsAndPartitionsValidation: partitions failing the API layer's checks come
    first in their topic, topics failing them come before the coordinator's topics; an unknown topic is
    UNKNOWN_TOPIC_ID from v10 (by id), UNKNOWN_TOPIC_OR_PARTITION below; v10 answers by id, below by name."""
    env = CgEnv(topics={"foo": 2, "bar": 2})
    # Through the codec, as a client sends it: v10 has no topic names on the wire.
    req = decode_request(encode_request(ApiKey.OFFSET_COMMIT, version, 1, "c", _commit_request(version))[4:])[1]
    r = env.send(req, version)
    unknown = E.UNKNOWN_TOPIC_ID if version >= 10 else E.UNKNOWN_TOPIC_OR_PARTITION
    key = (lambda t: t.topic_id) if version >= 10 else (lambda t: t.name)
    expected = [
        (topic_id("foo") if version >= 10 else "foo", [(2, E.UNKNOWN_TOPIC_OR_PARTITION), (0, E.NONE), (1, E.NONE)]),
        (ZAR_ID if version >= 10 else "zar", [(0, unknown), (1, unknown)]),
        (topic_id("bar") if version >= 10 else "bar", [(0, E.NONE), (1, E.NONE)]),
    ]
    assert [(key(t), [(p.partition_index, ErrorCode(p.error_code)) for p in t.partitions]) for t in r.topics] \
        == expected
    got = env.fetch("group", None, -1, {"foo": [0, 1], "bar": [0, 1]})
    assert {(t.name, p.partition_index): p.committed_offset for t in got.topics for p in t.partitions} == \
        {("foo", 0): 10, ("foo", 1): 20, ("bar", 0): 40, ("bar", 1): 50}


def test_offset_commit_v10_only_unknown_topic_ids_never_reaches_the_coordinator():
    """KafkaApis.handleOffsetCommitRequest: nothing left after the checks -> answered at once (no group created)."""
    env = CgEnv(topics={"foo": 2})
    C = OffsetCommitRequest.Topic
    r = env.send(OffsetCommitRequest(group_id="g", member_id="", generation_id_or_member_epoch=-1, topics=[
        C(topic_id=ZAR_ID, partitions=[C.Partition(partition_index=0, committed_offset=1)]),
        C(topic_id=ZAR_ID, partitions=[C.Partition(partition_index=1, committed_offset=1)])]), 10)
    # OffsetCommitResponse.TopicIdBuilder: one response topic per id.
    assert [(t.topic_id, [(p.partition_index, p.error_code) for p in t.partitions]) for t in r.topics] == \
        [(ZAR_ID, [(0, E.UNKNOWN_TOPIC_ID), (1, E.UNKNOWN_TOPIC_ID)])]
    assert env.last_records == []


def test_offset_commit_v10_member_epoch_validation_applies():
    """A KIP-848 member commits by topic id at its epoch; a newer epoch is STALE_MEMBER_EPOCH as at v9
    (ConsumerGroup.validateOffsetCommit does not depend on how the topics were named)."""
    from test_cg_heartbeat_kafka import M, asg, ep
    env = CgEnv(topics={"foo": 3})
    env.build_group("g", 10, members=[M("m", member_epoch=10, subscribed_topic_names=["foo"],
                                        assigned_partitions=ep(10, foo=[0, 1, 2]))],
                    assignments={"m": asg(foo=[0, 1, 2])}, assignment_epoch=10)
    C = OffsetCommitRequest.Topic

    def commit(epoch: int) -> list[int]:
        r = env.send(OffsetCommitRequest(group_id="g", member_id="m", generation_id_or_member_epoch=epoch, topics=[
            C(topic_id=topic_id("foo"), partitions=[C.Partition(partition_index=1, committed_offset=7)])]), 10)
        assert [t.topic_id for t in r.topics] == [topic_id("foo")]
        return [p.error_code for t in r.topics for p in t.partitions]
    assert commit(11) == [E.STALE_MEMBER_EPOCH]
    assert commit(10) == [E.NONE]


def test_offset_fetch_v10_with_unknown_topic_ids():
    """testHandleOffsetFetchWithUnknownTopicIds: a known id is answered by id; an unknown id gets UNKNOWN_TOPIC_ID
    with offset -1 after the coordinator's topics; fetching all offsets leaves out topics that no longer exist
    (no id to serialize them with)."""
    env = CgEnv(topics={"foo": 2, "bar": 1})
    for g in ("group-1", "group-2"):
        env.commit(g, "", -1, {("foo", 0): 100, ("bar", 0): 100})
    env.svc.cluster.topics.pop("bar")  # deleted after the commits (kgroup has no DeleteTopics)
    F = OffsetFetchRequest.Group
    req = OffsetFetchRequest(groups=[
        F(group_id="group-1", topics=[F.Topic(topic_id=topic_id("foo"), partition_indexes=[0]),
                                      F.Topic(topic_id=topic_id("bar"), partition_indexes=[0])]),
        F(group_id="group-2", topics=None)])
    req = decode_request(encode_request(ApiKey.OFFSET_FETCH, 10, 1, "c", req)[4:])[1]
    r = env.send(req, 10)
    got = [(g.group_id, g.error_code, [(t.topic_id, [(p.partition_index, p.committed_offset, p.error_code)
                                                     for p in t.partitions]) for t in g.topics])
           for g in r.groups]
    assert got == [
        ("group-1", 0, [(topic_id("foo"), [(0, 100, 0)]), (topic_id("bar"), [(0, -1, E.UNKNOWN_TOPIC_ID)])]),
        ("group-2", 0, [(topic_id("foo"), [(0, 100, 0)])]),
    ]


def test_offset_fetch_v10_member_epoch_and_group_error():
    """OffsetFetch v10 keeps v9's member id / epoch check (ConsumerGroup.validateOffsetFetch): a stale epoch is the
    group's error, with no topics (OffsetFetchResponse.groupError)."""
    from test_cg_heartbeat_kafka import M
    env = CgEnv(topics={"foo": 3})
    env.build_group("g", 10, members=[M("m", member_epoch=10, subscribed_topic_names=["foo"])])
    F = OffsetFetchRequest.Group
    r = env.send(OffsetFetchRequest(groups=[F(group_id="g", member_id="m", member_epoch=9, topics=[
        F.Topic(topic_id=topic_id("foo"), partition_indexes=[0]),
        F.Topic(topic_id=ZAR_ID, partition_indexes=[0])])]), 10)
    (g,) = r.groups
    assert (g.error_code, g.topics) == (E.STALE_MEMBER_EPOCH, [])


def test_offset_commit_and_fetch_v10_are_advertised():
    """ApiVersions advertises exactly what is implemented: Kafka 4.4's ranges OffsetCommit 2-10, OffsetFetch 1-10."""
    ranges = {a.api_key: (a.min_version, a.max_version) for a in advertised_api_versions()}
    assert ranges[ApiKey.OFFSET_COMMIT] == (2, 10) and ranges[ApiKey.OFFSET_FETCH] == (1, 10)
    assert OffsetFetchResponse.Group.Topic(topic_id=ZERO).topic_id == ZERO
