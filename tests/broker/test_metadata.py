"""Metadata over TCP (KafkaApis.handleTopicMetadataRequest over the cluster model, as KRaftMetadataCache reports
it; broker/apis.py): every version's shape, unknown and illegal topics, auto-creation, a stopped broker."""

from __future__ import annotations

import pytest

from broker.server import KGroupServer
from coordinator.cluster import OFFSETS_TOPIC
from protocol.errors import ErrorCode
from protocol.messages import MetadataRequest
from broker_harness import TIMEOUT, connect, healthy, make_settings, start_server

E = ErrorCode


@pytest.mark.parametrize("version", [0, 1, 4, 9, 12, 13])
async def test_metadata_lists_all_brokers_and_topics(server: KGroupServer, version: int) -> None:
    c = await connect(server, 2)
    try:
        all_topics = MetadataRequest(topics=[] if version == 0 else None)
        r = await c.call(all_topics, version, timeout=TIMEOUT)
    finally:
        await c.close()
    assert [(b.node_id, b.host, b.port) for b in r.brokers] == [
        (b, "127.0.0.1", server.ports[b]) for b in range(3)]
    names = {t.name: t for t in r.topics}
    assert set(names) == {"orders", OFFSETS_TOPIC}
    orders = names["orders"]
    assert orders.error_code == 0 and len(orders.partitions) == 6
    for p in orders.partitions:
        ps = server.cluster.partition("orders", p.partition_index)
        assert (p.leader_id, p.replica_nodes, p.isr_nodes) == (ps.leader, ps.replicas, ps.isr)
    offsets = names[OFFSETS_TOPIC]
    assert len(offsets.partitions) == 50
    if version >= 1:
        assert r.controller_id in (0, 1, 2)
        assert offsets.is_internal and not orders.is_internal
    if version >= 2:
        assert r.cluster_id


async def test_metadata_unknown_topic_and_auto_create() -> None:
    srv = await start_server(make_settings())
    srv_auto = await start_server(make_settings(auto_create_topics=True))
    try:
        c = await connect(srv)
        r = await c.call(MetadataRequest(topics=[MetadataRequest.Topic(name="nope")]), 12, timeout=TIMEOUT)
        assert [(t.name, t.error_code) for t in r.topics] == [("nope", E.UNKNOWN_TOPIC_OR_PARTITION)]
        r = await c.call(MetadataRequest(topics=[MetadataRequest.Topic(name="bad/name")]), 12, timeout=TIMEOUT)
        assert r.topics[0].error_code == E.INVALID_TOPIC_EXCEPTION
        await c.close()
        a = await connect(srv_auto)
        req = MetadataRequest(topics=[MetadataRequest.Topic(name="fresh")], allow_auto_topic_creation=True)
        r = await a.call(req, 12, timeout=TIMEOUT)
        # AutoTopicCreationManager: being created -> LEADER_NOT_AVAILABLE first, the topic on the next request
        assert r.topics[0].error_code == E.LEADER_NOT_AVAILABLE
        r = await a.call(req, 12, timeout=TIMEOUT)
        assert r.topics[0].error_code == 0 and len(r.topics[0].partitions) == 1
        # allow_auto_topic_creation=false (v4+) is honoured
        r = await a.call(MetadataRequest(topics=[MetadataRequest.Topic(name="other")],
                                         allow_auto_topic_creation=False), 12, timeout=TIMEOUT)
        assert r.topics[0].error_code == E.UNKNOWN_TOPIC_OR_PARTITION
        await a.close()
    finally:
        await srv.close()
        await srv_auto.close()


async def test_metadata_after_a_broker_stops(server: KGroupServer) -> None:
    """KRaftMetadataCache: only live brokers are listed; dead replicas are offline (v5+); v0 filters them out of
    the replica/ISR lists and flags the partition REPLICA_NOT_AVAILABLE; leaderships moved to live replicas."""
    await server.stop_broker(1)
    c = await connect(server, 0)
    try:
        r = await c.call(MetadataRequest(topics=[MetadataRequest.Topic(name=OFFSETS_TOPIC)]), 12, timeout=TIMEOUT)
        assert [b.node_id for b in r.brokers] == [0, 2]
        parts = r.topics[0].partitions
        assert all(p.leader_id in (0, 2) and p.error_code == 0 for p in parts)
        assert all(p.offline_replicas == [1] for p in parts)  # replication factor 3 over 3 brokers
        moved = [p for p in parts if p.replica_nodes[0] == 1]
        assert moved and all(p.leader_epoch >= 1 for p in moved)
        r0 = await c.call(MetadataRequest(topics=[MetadataRequest.Topic(name=OFFSETS_TOPIC)]), 0, timeout=TIMEOUT)
        p0 = r0.topics[0].partitions[0]
        assert p0.error_code == E.REPLICA_NOT_AVAILABLE and 1 not in p0.replica_nodes and 1 not in p0.isr_nodes
    finally:
        await c.close()
    await server.start_broker(1)
    await healthy(server, 1)


@pytest.mark.parametrize("version", [10, 12, 13])
async def test_metadata_topic_ids_for_every_topic(server: KGroupServer, version: int) -> None:
    """KIP-516/KIP-848: from Metadata v10 every topic, the internal ``__consumer_offsets`` included, carries its
    non-zero topic id -- the id a ConsumerGroupHeartbeat assignment names (the coordinator's metadata image); ids
    are distinct. From v12 a topic is looked up by id alone (name null); an id no topic has is UNKNOWN_TOPIC_ID.
    Below v12 a request naming a topic id is INVALID_REQUEST (KafkaApis: ids are not supported for v10/11)."""
    import uuid

    from coordinator.metadata_image import MetadataImage
    from protocol.uuids import uuid_to_string

    zero = uuid.UUID(int=0)
    c = await connect(server, 2)
    try:
        r = await c.call(MetadataRequest(topics=None), version, timeout=TIMEOUT)
        ids = {t.name: t.topic_id for t in r.topics}
        assert set(ids) == {"orders", OFFSETS_TOPIC} and zero not in ids.values()
        assert len(set(ids.values())) == len(ids)
        image = MetadataImage.from_cluster(server.cluster)
        assert uuid_to_string(ids["orders"]) == image.topic_id("orders")
        T = MetadataRequest.Topic
        by_id = MetadataRequest(topics=[T(topic_id=ids["orders"], name=None),
                                        T(topic_id=uuid.UUID(int=42), name=None)])
        if version >= 12:
            r = await c.call(by_id, version, timeout=TIMEOUT)
            assert [(t.name, t.topic_id, ErrorCode(t.error_code), len(t.partitions)) for t in r.topics] == [
                ("orders", ids["orders"], E.NONE, 6), (None, uuid.UUID(int=42), E.UNKNOWN_TOPIC_ID, 0)]
        else:
            r = await c.call(MetadataRequest(topics=[T(topic_id=ids["orders"], name="orders")]), version,
                             timeout=TIMEOUT)
            assert [ErrorCode(t.error_code) for t in r.topics] == [E.INVALID_REQUEST]
    finally:
        await c.close()
