"""The admin APIs as users' fixtures call them: each library's admin client against `kgroup serve`
(kafka-python 3.0 KafkaAdminClient, aiokafka 0.14 AIOKafkaAdminClient, confluent-kafka 2.16 AdminClient), and a
partition increase that makes a group of real consumers rebalance onto the new partitions.

What each sends (recorded on the server side by the first test): kafka-python CreateTopics v7, DeleteTopics v6,
CreatePartitions v3, DescribeCluster v2, DescribeConfigs v4; aiokafka CreateTopics v3, DeleteTopics v3,
CreatePartitions v1, DescribeConfigs v2 (its describe_cluster reads Metadata); librdkafka CreateTopics v4,
DeleteTopics v4, CreatePartitions v2, DescribeConfigs v1 (describe_cluster reads Metadata)."""

from __future__ import annotations

import asyncio

import pytest

from harness import consumer, wait_cover

pytestmark = pytest.mark.interop
pytest.importorskip("kafka")
pytest.importorskip("aiokafka")
pytest.importorskip("confluent_kafka")

ADMIN_APIS = {"CreateTopicsRequest", "DeleteTopicsRequest", "CreatePartitionsRequest", "DescribeClusterRequest",
              "DescribeConfigsRequest"}


@pytest.fixture
def kgroup_cluster_options():
    return {"auto_create_topics": False, "topics": {"orders": 3}}


def record_versions(cluster) -> list[tuple[str, int]]:
    """Wrap the server's request handler: (request type, version) of every admin request it serves."""
    seen: list[tuple[str, int]] = []
    orig = cluster.server.broker.handle

    def handle(b, req, ctx, now):
        if type(req).__name__ in ADMIN_APIS:
            seen.append((type(req).__name__, ctx.api_version))
        return orig(b, req, ctx, now)
    cluster.server.broker.handle = handle
    return seen


def partitions(cluster, topic: str) -> list[list[int]]:
    return cluster.call(lambda: cluster.server.cluster.assignment(topic))


def test_kafka_python_admin_client(kgroup_cluster):
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic
    from kafka.errors import InvalidPartitionsError, InvalidReplicationFactorError, TopicAlreadyExistsError

    cluster = kgroup_cluster
    seen = record_versions(cluster)
    a = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, client_id="kp-admin", request_timeout_ms=10000)
    try:
        r = a.create_topics([NewTopic("kp-t", 3, 2, topic_configs={"retention.ms": "60000"})])
        assert r["topics"][0]["error_code"] == 0
        assert len(partitions(cluster, "kp-t")) == 3 and all(len(x) == 2 for x in partitions(cluster, "kp-t"))
        a.create_topics([NewTopic("kp-validate", 2, 1)], validate_only=True)
        assert "kp-validate" not in a.list_topics()
        with pytest.raises(TopicAlreadyExistsError):
            a.create_topics([NewTopic("kp-t", 3, 1)])
        with pytest.raises(InvalidReplicationFactorError):
            a.create_topics([NewTopic("kp-rf", 1, 4)])
        a.create_partitions({"kp-t": NewPartitions(5)})
        assert len(partitions(cluster, "kp-t")) == 5
        with pytest.raises(InvalidPartitionsError):
            a.create_partitions({"kp-t": NewPartitions(5)})
        d = a.describe_cluster()
        assert sorted(b["broker_id"] for b in d["brokers"]) == [0, 1, 2] and d["cluster_id"]
        cfg = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-t")], config_filter="ALL")
        assert cfg["topic"]["kp-t"]["retention.ms"]["value"] == "60000"
        b = a.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")], config_filter="ALL")
        assert b["broker"]["1"]["group.min.session.timeout.ms"]["value"] == "100"
        a.delete_topics(["kp-t"])
        assert "kp-t" not in a.list_topics()
    finally:
        a.close()
    assert set(seen) >= {("CreateTopicsRequest", 7), ("CreatePartitionsRequest", 3), ("DescribeClusterRequest", 2),
                         ("DescribeConfigsRequest", 4), ("DeleteTopicsRequest", 6)}


def test_aiokafka_admin_client(kgroup_cluster):
    from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
    from aiokafka.errors import InvalidPartitionsError

    cluster = kgroup_cluster
    seen = record_versions(cluster)

    async def main():
        a = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=10000)
        await a.start()
        try:
            r = await a.create_topics([NewTopic("aio-t", 2, 1)])
            assert [e[1] for e in r.topic_errors] == [0]
            r = await a.create_topics([NewTopic("aio-t", 2, 1), NewTopic("bad name", 1, 1)])
            assert dict((e[0], e[1]) for e in r.topic_errors) == {"aio-t": 36, "bad name": 17}
            r = await a.create_partitions({"aio-t": NewPartitions(4)})
            assert [e[1] for e in r.topic_errors] == [0]
            with pytest.raises(InvalidPartitionsError, match="currently has 4 partition"):
                await a.create_partitions({"aio-t": NewPartitions(3)})
            (topic_cfg,) = await a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "aio-t")])
            assert topic_cfg.resources[0][0] == 0
            r = await a.delete_topics(["aio-t", "missing"])
            assert dict((e[0], e[1]) for e in r.topic_error_codes) == {"aio-t": 0, "missing": 3}
        finally:
            await a.close()
    asyncio.run(main())
    assert "aio-t" not in cluster.call(lambda: set(cluster.server.cluster.topics))
    assert set(seen) >= {("CreateTopicsRequest", 3), ("CreatePartitionsRequest", 1), ("DescribeConfigsRequest", 2),
                         ("DeleteTopicsRequest", 3)}


def test_confluent_kafka_admin_client(kgroup_cluster):
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

    cluster = kgroup_cluster
    seen = record_versions(cluster)
    a = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 3})
    fs = a.create_topics([NewTopic("ck-t", 3, 1, config={"cleanup.policy": "compact"})], request_timeout=10)
    fs["ck-t"].result(10)
    fs = a.create_topics([NewTopic("ck-v", 2, 1)], validate_only=True, request_timeout=10)
    fs["ck-v"].result(10)
    assert "ck-v" not in cluster.call(lambda: set(cluster.server.cluster.topics))
    for name, args, code in (("ck-t", (3, 1), "TOPIC_ALREADY_EXISTS"), ("ck-rf", (1, 5), "INVALID_REPLICATION_FACTOR")):
        with pytest.raises(KafkaException) as e:
            a.create_topics([NewTopic(name, *args)], request_timeout=10)[name].result(10)
        assert e.value.args[0].name() == code
    a.create_partitions([NewPartitions("ck-t", 6)], request_timeout=10)["ck-t"].result(10)
    assert len(partitions(cluster, "ck-t")) == 6
    with pytest.raises(KafkaException) as e:
        a.create_partitions([NewPartitions("ck-t", 2)], request_timeout=10)["ck-t"].result(10)
    assert e.value.args[0].name() == "INVALID_PARTITIONS"
    (res,) = a.describe_configs([ConfigResource("topic", "ck-t")], request_timeout=10).values()
    assert res.result(10)["cleanup.policy"].value == "compact"
    a.delete_topics(["ck-t"], request_timeout=10)["ck-t"].result(10)
    assert "ck-t" not in cluster.call(lambda: set(cluster.server.cluster.topics))
    assert set(seen) >= {("CreateTopicsRequest", 4), ("CreatePartitionsRequest", 2), ("DescribeConfigsRequest", 1),
                         ("DeleteTopicsRequest", 4)}


def test_partition_increase_rebalances_real_consumers(kgroup_cluster, agents):
    """KafkaAdminClient.create_partitions while two kafka-python consumers share the topic: the group leader sees
    the new partition count in its next Metadata (metadata.max.age.ms), rejoins (ConsumerCoordinator's metadata
    snapshot no longer matches) and the rebalance spreads the new partitions -- as on Kafka."""
    from kafka import KafkaAdminClient
    from kafka.admin import NewPartitions, NewTopic

    cluster = kgroup_cluster
    a = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=10000)
    try:
        a.create_topics([NewTopic("grow", 2, 1)])
        agents += [consumer("kafka-python", cluster.bootstrap, "grow", "growers", name=f"grow-{i}",
                            metadata_max_age_ms=500) for i in range(2)]
        wait_cover(agents, 2)
        before = cluster.call(lambda: cluster.server.svc.group("growers").generation_id)
        a.create_partitions({"grow": NewPartitions(6)})
    finally:
        a.close()
    wait_cover(agents, 6, timeout=60)
    after = cluster.call(lambda: cluster.server.svc.group("growers").generation_id)
    assert after > before
    assert sorted(p for ps in cluster.assignment("growers").values() for _, p in ps) == list(range(6))
