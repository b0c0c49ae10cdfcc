"""The admin APIs over TCP (broker/admin.py): CreateTopics, DeleteTopics, CreatePartitions, DescribeCluster and
DescribeConfigs at each version, with Kafka 4.4's errors and messages (``ControllerApis``,
``ReplicationControlManager``, ``ConfigHelper``, ``AuthHelper.computeDescribeClusterResponse``, ``Topic.validate``).
The expected texts are Kafka's; the client libraries' admin clients are tests/interop/test_interop_admin.py."""

from __future__ import annotations

import uuid

import pytest

from broker.server import KGroupServer
from protocol.errors import ErrorCode
from protocol.messages import (CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest,
                               DescribeClusterRequest, DescribeConfigsRequest, MetadataRequest)
from broker_harness import TIMEOUT, batch, connect, leader_conn, make_settings, part, produce_req, start_server

E = ErrorCode
ZERO = uuid.UUID(int=0)


def topic(name: str, partitions: int = 3, rf: int = 1, assignments=(), configs=()):
    T = CreateTopicsRequest.Topic
    return T(name=name, num_partitions=partitions, replication_factor=rf,
             assignments=[T.Assignment(partition_index=i, broker_ids=list(b)) for i, b in assignments],
             configs=[T.Config(name=k, value=v) for k, v in configs])


async def call(server: KGroupServer, req, version: int, broker: int = 0):
    c = await connect(server, broker)
    try:
        return await c.call(req, version, timeout=TIMEOUT)
    finally:
        await c.close()


async def produce(server: KGroupServer, name: str, partition: int, n: int = 1) -> int:
    """Produce ``n`` records to the partition's leader; the partition error code."""
    c = await leader_conn(server, name, partition)
    try:
        r = await c.call(produce_req(name, partition, batch([f"k{i}" for i in range(n)])), 9, timeout=TIMEOUT)
    finally:
        await c.close()
    return part(r).error_code


def results(resp) -> dict:
    return {t.name: (t.error_code, t.error_message) for t in resp.topics}


@pytest.mark.parametrize("version", [2, 3, 4, 5, 6, 7])
async def test_create_topics_each_version(server: KGroupServer, version: int) -> None:
    r = await call(server, CreateTopicsRequest(topics=[topic("t-new", 4, 2, configs=[("retention.ms", "1000")])],
                                               timeout_ms=5000), version)
    (t,) = r.topics
    assert (t.name, t.error_code) == ("t-new", 0)
    assert [len(p.replicas) for p in server.cluster.partitions("t-new")] == [2, 2, 2, 2]
    if version >= 5:  # KIP-525: the created topic's partitions, replication and configs
        assert (t.num_partitions, t.replication_factor) == (4, 2)
        assert [(c.name, c.value) for c in t.configs] == [("retention.ms", "1000")]
    if version >= 7:  # KIP-516: its id, the one Metadata reports
        m = await call(server, MetadataRequest(topics=[MetadataRequest.Topic(name="t-new")]), 12)
        assert t.topic_id == m.topics[0].topic_id != ZERO
    # every broker's Metadata has it: the cluster model is the controller
    m = await call(server, MetadataRequest(topics=[MetadataRequest.Topic(name="t-new")]), 9, broker=2)
    assert m.topics[0].error_code == 0 and len(m.topics[0].partitions) == 4


async def test_create_topics_errors_and_validate_only(server: KGroupServer) -> None:
    req = CreateTopicsRequest(timeout_ms=5000, topics=[
        topic("orders"),                           # exists
        topic("bad/name"),                         # illegal character
        topic("zero-parts", 0),                    # INVALID_PARTITIONS
        topic("zero-rf", 3, 0),                    # INVALID_REPLICATION_FACTOR
        topic("rf-too-big", 3, 4),                 # only 3 brokers
        topic("dup"), topic("dup"),                # duplicates
        topic("bad-config", configs=[("no.such.config", "1")]),
        topic("manual-rf", 3, 1, assignments=[(0, [0])]),
        topic("manual-gap", -1, -1, assignments=[(0, [0]), (2, [1])]),
        topic("manual-unknown", -1, -1, assignments=[(0, [7])]),
        topic("manual-twice", -1, -1, assignments=[(0, [1, 1])]),
        topic("manual-ok", -1, -1, assignments=[(0, [2, 0]), (1, [0, 1])]),
        topic("defaults", -1, -1),
    ])
    r = await call(server, req, 7)
    got = results(r)
    assert got["orders"] == (E.TOPIC_ALREADY_EXISTS, "Topic 'orders' already exists.")
    assert got["bad/name"] == (E.INVALID_TOPIC_EXCEPTION, "Topic name is invalid: 'bad/name' contains one or more "
                                                          "characters other than ASCII alphanumerics, '.', '_' and '-'")
    assert got["zero-parts"] == (E.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.")
    assert got["zero-rf"] == (E.INVALID_REPLICATION_FACTOR,
                              "Replication factor must be larger than 0, or -1 to use the default value.")
    assert got["rf-too-big"] == (E.INVALID_REPLICATION_FACTOR,
                                 "Unable to replicate the partition 4 time(s): The target replication factor of 4 "
                                 "cannot be reached because only 3 broker(s) are registered or some brokers have all "
                                 "their log directories cordoned.")
    assert got["dup"] == (E.INVALID_REQUEST, "Duplicate topic name.")
    assert [t.name for t in r.topics].count("dup") == 1 and r.topics[-1].name == "dup"  # answered last
    assert got["bad-config"] == (E.INVALID_CONFIG, "Unknown topic config name: no.such.config")
    assert got["manual-rf"] == (E.INVALID_REQUEST, "A manual partition assignment was specified, but replication "
                                                   "factor was not set to -1.")
    assert got["manual-gap"] == (E.INVALID_REPLICA_ASSIGNMENT,
                                 "partitions should be a consecutive 0-based integer sequence")
    assert got["manual-unknown"] == (E.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes broker 7, "
                                                                   "but no such broker is registered.")
    assert got["manual-twice"] == (E.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes the broker 1 "
                                                                 "more than once.")
    assert got["manual-ok"] == (0, None)
    assert server.cluster.assignment("manual-ok") == [[2, 0], [0, 1]]
    assert server.cluster.partition("manual-ok", 0).leader == 2
    assert got["defaults"] == (0, None)  # num.partitions (1), default.replication.factor (1): KIP-464
    assert server.cluster.assignment("defaults") == [[0]]
    created = {"manual-ok", "defaults"}
    assert set(server.cluster.topics) == {"orders", "__consumer_offsets"} | created

    # validate_only: the same checks, nothing created
    r = await call(server, CreateTopicsRequest(topics=[topic("v-only", 2), topic("orders")], validate_only=True), 4)
    assert results(r) == {"v-only": (0, None), "orders": (E.TOPIC_ALREADY_EXISTS, "Topic 'orders' already exists.")}
    assert "v-only" not in server.cluster.topics

    # '.' and '_' collide in metric names (Topic.hasCollisionChars)
    await call(server, CreateTopicsRequest(topics=[topic("a.b")]), 7)
    r = await call(server, CreateTopicsRequest(topics=[topic("a_b")]), 7)
    assert results(r)["a_b"] == (E.INVALID_TOPIC_EXCEPTION, "Topic 'a_b' collides with existing topic: a.b")


@pytest.mark.parametrize("version", [1, 3, 5, 6])
async def test_delete_topics(version: int, tmp_path) -> None:
    srv = await start_server(make_settings(data_dir=str(tmp_path)))
    try:
        await call(srv, CreateTopicsRequest(topics=[topic("doomed", 2)]), 7)
        # produce a batch so that a log file exists, then delete: the file goes too
        assert await produce(srv, "doomed", 0) == 0
        files = sorted(p.name for p in (tmp_path / "topics").iterdir())
        assert "doomed-0.log" in files
        if version >= 6:
            req = DeleteTopicsRequest(topics=[DeleteTopicsRequest.Topic(name="doomed"),
                                              DeleteTopicsRequest.Topic(name="missing"),
                                              DeleteTopicsRequest.Topic(name=None, topic_id=uuid.uuid4()),
                                              DeleteTopicsRequest.Topic(name=None)], timeout_ms=5000)
        else:
            req = DeleteTopicsRequest(topic_names=["doomed", "missing"], timeout_ms=5000)
        r = await call(srv, req, version)
        got = {(x.name, x.error_code) for x in r.responses}
        assert ("doomed", 0) in got and ("missing", E.UNKNOWN_TOPIC_OR_PARTITION) in got
        if version >= 6:
            assert (None, E.UNKNOWN_TOPIC_ID) in got
            assert any(x.error_code == E.INVALID_REQUEST and x.error_message == "Neither topic name nor id were "
                                                                               "specified." for x in r.responses)
        if version >= 5:
            missing = next(x for x in r.responses if x.name == "missing")
            assert missing.error_message == "This server does not host this topic-partition."
        assert "doomed" not in srv.cluster.topics
        assert not (tmp_path / "topics" / "doomed-0.log").exists()
        m = await call(srv, MetadataRequest(topics=[MetadataRequest.Topic(name="doomed")]), 12)
        assert m.topics[0].error_code == E.UNKNOWN_TOPIC_OR_PARTITION
        # a name twice is INVALID_REQUEST, and nothing happens to it
        r = await call(srv, DeleteTopicsRequest(topic_names=["orders", "orders"], timeout_ms=5000), 5)
        assert [(x.name, x.error_code, x.error_message) for x in r.responses] == [
            ("orders", E.INVALID_REQUEST, "Duplicate topic name.")]
        assert "orders" in srv.cluster.topics
        # re-created: an empty log
        await call(srv, CreateTopicsRequest(topics=[topic("doomed", 1)]), 7)
        assert srv.data.log("doomed", 0).log_end_offset == 0
    finally:
        await srv.close()


async def test_delete_topic_by_id(server: KGroupServer) -> None:
    r = await call(server, CreateTopicsRequest(topics=[topic("by-id", 1)]), 7)
    tid = r.topics[0].topic_id
    r = await call(server, DeleteTopicsRequest(topics=[DeleteTopicsRequest.Topic(name=None, topic_id=tid)],
                                               timeout_ms=5000), 6)
    assert [(x.name, x.topic_id, x.error_code) for x in r.responses] == [("by-id", tid, 0)]
    assert "by-id" not in server.cluster.topics


@pytest.mark.parametrize("version", [0, 1, 2, 3])
async def test_create_partitions(server: KGroupServer, version: int) -> None:
    P = CreatePartitionsRequest.Topic
    r = await call(server, CreatePartitionsRequest(topics=[P(name="orders", count=8, assignments=None)],
                                                   timeout_ms=5000), version)
    assert [(x.name, x.error_code) for x in r.results] == [("orders", 0)]
    assert len(server.cluster.partitions("orders")) == 8
    r = await call(server, CreatePartitionsRequest(timeout_ms=5000, topics=[
        P(name="orders", count=8, assignments=None), P(name="orders-x", count=2, assignments=None)]), version)
    got = {x.name: (x.error_code, x.error_message) for x in r.results}
    assert got["orders"] == (E.INVALID_PARTITIONS, "Topic already has 8 partition(s).")
    assert got["orders-x"][0] == E.UNKNOWN_TOPIC_OR_PARTITION
    r = await call(server, CreatePartitionsRequest(topics=[P(name="orders", count=5, assignments=None)]), version)
    assert (r.results[0].error_code, r.results[0].error_message) == (
        E.INVALID_PARTITIONS, "The topic orders currently has 8 partition(s); 5 would not be an increase.")
    # validate_only: checked, not applied
    r = await call(server, CreatePartitionsRequest(topics=[P(name="orders", count=12, assignments=None)],
                                                   validate_only=True), version)
    assert r.results[0].error_code == 0 and len(server.cluster.partitions("orders")) == 8
    # manual assignments: one per new partition, with the topic's replication factor (1)
    A = P.Assignment
    r = await call(server, CreatePartitionsRequest(topics=[P(name="orders", count=10, assignments=[A(broker_ids=[2])])]),
                   version)
    assert (r.results[0].error_code, r.results[0].error_message) == (
        E.INVALID_REPLICA_ASSIGNMENT, "Attempted to add 2 additional partition(s), but only 1 assignment(s) were "
                                      "specified.")
    r = await call(server, CreatePartitionsRequest(topics=[P(name="orders", count=10, assignments=[
        A(broker_ids=[2]), A(broker_ids=[0, 1])])]), version)
    assert r.results[0].error_message == ("The manual partition assignment includes a partition with 2 replica(s), but "
                                          "this is not consistent with previous partitions, which have 1 replica(s).")
    r = await call(server, CreatePartitionsRequest(topics=[P(name="orders", count=10, assignments=[
        A(broker_ids=[2]), A(broker_ids=[1])])]), version)
    assert r.results[0].error_code == 0
    assert server.cluster.assignment("orders")[8:] == [[2], [1]]
    assert server.cluster.partition("orders", 9).leader == 1
    # the new partitions take records at once (their leader)
    assert await produce(server, "orders", 9) == 0


@pytest.mark.parametrize("version", [0, 1, 2])
async def test_describe_cluster(server: KGroupServer, version: int) -> None:
    await server.stop_broker(1)
    r = await call(server, DescribeClusterRequest(include_cluster_authorized_operations=True,
                                                  include_fenced_brokers=True), version, broker=2)
    assert r.error_code == 0 and r.cluster_id
    shown = [(b.broker_id, b.port) for b in r.brokers]
    if version >= 2:  # KIP-1073: include_fenced_brokers shows the stopped one, fenced
        assert shown == [(0, server.ports[0]), (1, server.ports[1]), (2, server.ports[2])]
        assert [b.is_fenced for b in r.brokers] == [False, True, False]
    else:
        assert shown == [(0, server.ports[0]), (2, server.ports[2])]
    assert r.controller_id == 0
    # no authorizer: every operation the CLUSTER resource supports (AclEntry.supportedOperations)
    ops = {code for code in range(32) if r.cluster_authorized_operations >> code & 1}
    assert ops == {5, 7, 8, 9, 10, 11, 12}
    if version >= 1:
        r = await call(server, DescribeClusterRequest(endpoint_type=2), version)
        assert (r.error_code, r.error_message) == (E.MISMATCHED_ENDPOINT_TYPE, "The request was sent to an endpoint of "
                                                   "type BROKER, but we wanted an endpoint of type CONTROLLER")
        r = await call(server, DescribeClusterRequest(endpoint_type=9), version)
        assert (r.error_code, r.error_message) == (E.UNSUPPORTED_ENDPOINT_TYPE, "Unsupported endpoint type 9")


@pytest.mark.parametrize("version", [1, 2, 3, 4])
async def test_describe_configs(version: int) -> None:
    srv = await start_server(make_settings(group_initial_rebalance_delay_ms=250))
    try:
        await call(srv, CreateTopicsRequest(topics=[topic("cfg", 1, configs=[("cleanup.policy", "compact"),
                                                                             ("retention.ms", "-1")])]), 7)
        R = DescribeConfigsRequest.Resource
        req = DescribeConfigsRequest(include_synonyms=True, resources=[
            R(resource_type=2, resource_name="cfg", configuration_keys=None),
            R(resource_type=2, resource_name="cfg", configuration_keys=["retention.ms"]),
            R(resource_type=2, resource_name="nope", configuration_keys=None),
            R(resource_type=4, resource_name="1", configuration_keys=None),
            R(resource_type=4, resource_name="2", configuration_keys=None),
            R(resource_type=4, resource_name="", configuration_keys=None)])
        r = await call(srv, req, version, broker=1)
        topic_all, topic_one, unknown, broker1, broker2, cluster_default = r.results
        assert [(c.name, c.value, c.config_source) for c in topic_all.configs] == [
            ("cleanup.policy", "compact", 1), ("retention.ms", "-1", 1)]       # TOPIC_CONFIG
        assert [c.name for c in topic_one.configs] == ["retention.ms"]
        assert unknown.error_code == E.UNKNOWN_TOPIC_OR_PARTITION
        assert broker1.error_code == 0
        by_name = {c.name: c for c in broker1.configs}
        # what the server was started with, under Kafka's names; a changed value is a static broker config
        assert (by_name["group.initial.rebalance.delay.ms"].value,
                by_name["group.initial.rebalance.delay.ms"].config_source) == ("250", 4)
        assert (by_name["offsets.topic.num.partitions"].value,
                by_name["offsets.topic.num.partitions"].config_source) == ("50", 5)   # Kafka's default
        assert by_name["broker.id"].value == "1"
        assert by_name["advertised.listeners"].value == f"PLAINTEXT://127.0.0.1:{srv.ports[1]}"
        assert all(c.read_only for c in broker1.configs)
        if version >= 3:
            assert by_name["group.max.size"].config_type == 3          # INT
            assert by_name["auto.create.topics.enable"].config_type == 1  # BOOLEAN
        assert [(s.name, s.source) for s in by_name["group.initial.rebalance.delay.ms"].synonyms] == [
            ("group.initial.rebalance.delay.ms", 4)]
        # ConfigHelper: a broker describes itself only
        assert (broker2.error_code, broker2.error_message) == (
            E.INVALID_REQUEST, "Unexpected broker id, expected 1 or empty string, but received 2")
        assert cluster_default.error_code == 0 and cluster_default.configs == []
    finally:
        await srv.close()


async def test_admin_apis_are_advertised(server: KGroupServer) -> None:
    c = await connect(server)
    try:
        versions = await c.negotiate(timeout=TIMEOUT)
    finally:
        await c.close()
    assert {k: versions[k] for k in (19, 20, 32, 37, 60)} == {19: (2, 7), 20: (1, 6), 32: (1, 4), 37: (0, 3),
                                                              60: (0, 2)}


async def test_produce_to_a_created_topic(server: KGroupServer) -> None:
    await call(server, CreateTopicsRequest(topics=[topic("fresh", 2, 3)]), 5)
    assert [await produce(server, "fresh", p, 2) for p in range(2)] == [0, 0]
    assert server.data.log("fresh", 1).log_end_offset == 2
