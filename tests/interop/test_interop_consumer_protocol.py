"""KIP-848's consumer group protocol with a real client: confluent-kafka (librdkafka 2.16) consumers with
``group.protocol=consumer`` on `kgroup serve` -- the only Python client with KIP-848 (kafka-python and aiokafka
speak the classic protocol only).

* consumers join, share the partitions and move them when one leaves or dies (session timeout);
* every record is consumed exactly once per group across joins and leaves (synchronous commits, OffsetCommit v9
  with member epochs), and a group resumes at its committed offsets;
* the AdminClient's ``describe_consumer_groups`` shows type CONSUMER, state, assignor and assignments
  (ConsumerGroupDescribe); the epochs are read with a raw ConsumerGroupDescribe (confluent-kafka 2.16 does not
  expose them); ``list_consumer_groups`` filters by type (ListGroups v5);
* mixed groups: a classic consumer and a KIP-848 consumer in one group; an online upgrade of a classic group;
* kgroup's own KIP-848 consumer core (client/driver.py) and librdkafka's in one group.

The broker runs with short consumer-group sessions (group.consumer.session.timeout.ms 3000, heartbeat 300 ms) so
that a killed member is noticed quickly; every wait is bounded.
"""

from __future__ import annotations

import time

import pytest

from harness import consumer, consumer848, produce, wait_all, wait_cover

pytestmark = pytest.mark.interop
confluent_kafka = pytest.importorskip("confluent_kafka")

SESSION_MS = 3000


@pytest.fixture
def kgroup_cluster_options():
    return {"config": {"group.consumer.min.session.timeout.ms": 1000, "group.consumer.session.timeout.ms": SESSION_MS,
                       "group.consumer.min.heartbeat.interval.ms": 100, "group.consumer.heartbeat.interval.ms": 300}}


def consumed(agents) -> list[tuple[int, int]]:
    return sorted((m["partition"], m["offset"]) for a in agents for m in a.messages())


def test_848_consumers_share_and_move_partitions(kgroup_cluster, agents):
    cluster = kgroup_cluster
    cluster.create_topic("orders", 6)
    agents += [consumer848(cluster.bootstrap, "orders", "g848", name=f"c{i}") for i in range(3)]
    wait_cover(agents, 6)
    g = cluster.consumer_group("g848")
    assert len(g["members"]) == 3 and all(not m["classic"] for m in g["members"].values())
    wait_all(agents, lambda: cluster.consumer_group("g848")["state"] == "Stable", 20, "a Stable group")

    leaving = agents[0]
    leaving.close()
    assert leaving.has("closed") and leaving.proc.returncode == 0
    rest = agents[1:]
    wait_cover(rest, 6)
    assert len(cluster.consumer_group("g848")["members"]) == 2

    killed, survivor = rest
    t0 = time.monotonic()
    killed.kill()
    wait_cover([survivor], 6, timeout=SESSION_MS / 1000 + 30)
    assert time.monotonic() - t0 >= (SESSION_MS - 1000) / 1000
    g = cluster.consumer_group("g848")
    assert len(g["members"]) == 1 and [p for _, p in list(g["members"].values())[0]["assigned"]] == list(range(6))


def test_848_every_record_consumed_once_across_rebalances(kgroup_cluster, agents):
    cluster = kgroup_cluster
    cluster.create_topic("payments", 6)
    keys = [f"k{i}" for i in range(120)]
    produced = produce("confluent-kafka", cluster.bootstrap, "payments", keys[:60])
    a = consumer848(cluster.bootstrap, "payments", "pay", name="a")
    agents.append(a)
    a.wait(lambda: len(a.messages()) >= 20, 30, "a's first records")
    b = consumer848(cluster.bootstrap, "payments", "pay", name="b")
    agents.append(b)
    produced += produce("confluent-kafka", cluster.bootstrap, "payments", keys[60:90])
    b.wait(lambda: b.assignment, 30, "b's assignment")
    c = consumer848(cluster.bootstrap, "payments", "pay", name="c")
    agents.append(c)
    wait_cover([a, b, c], 6)
    a.close()
    produced += produce("confluent-kafka", cluster.bootstrap, "payments", keys[90:])
    wait_cover([b, c], 6)
    want = sorted((p["partition"], p["offset"]) for p in produced)
    wait_all([b, c], lambda: set(consumed([a, b, c])) >= set(want), 45, "every record consumed")
    time.sleep(1.0)  # nothing more may arrive late
    got = consumed([a, b, c])
    assert got == want, f"duplicates or gaps: {len(got)} consumed, {len(want)} produced"
    assert not any(ag.has("commit_error") for ag in (a, b, c))


def test_848_commit_and_resume(kgroup_cluster, agents):
    cluster = kgroup_cluster
    cluster.create_topic("ledger", 3)
    first = produce("confluent-kafka", cluster.bootstrap, "ledger", [f"a{i}" for i in range(20)])
    c1 = consumer848(cluster.bootstrap, "ledger", "resume", name="first")
    agents.append(c1)
    c1.wait(lambda: len(c1.messages()) == 20, 30, "all 20 records")
    c1.close()
    assert sorted(m["offset"] + 1 for m in c1.messages()) and c1.proc.returncode == 0
    second = produce("confluent-kafka", cluster.bootstrap, "ledger", [f"b{i}" for i in range(10)])
    c2 = consumer848(cluster.bootstrap, "ledger", "resume", name="second")
    agents.append(c2)
    c2.wait(lambda: len(c2.messages()) >= 10, 30, "the 10 new records")
    time.sleep(1.0)
    assert sorted((m["partition"], m["offset"]) for m in c2.messages()) == \
        sorted((p["partition"], p["offset"]) for p in second)
    assert len(first) == 20


def test_848_admin_describe_and_list(kgroup_cluster, agents):
    from confluent_kafka import ConsumerGroupState, ConsumerGroupType
    from confluent_kafka.admin import AdminClient

    cluster = kgroup_cluster
    cluster.create_topic("events", 4)
    agents += [consumer848(cluster.bootstrap, "events", "described", name=f"d{i}", remote_assignor="range")
               for i in range(2)]
    wait_cover(agents, 4)
    wait_all(agents, lambda: cluster.consumer_group("described")["state"] == "Stable", 20, "a Stable group")
    classic = consumer("confluent-kafka", cluster.bootstrap, "events", "classic-one", name="classic")
    agents.append(classic)
    wait_cover([classic], 4)

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    d = admin.describe_consumer_groups(["described"])["described"].result(15)
    assert d.type == ConsumerGroupType.CONSUMER and d.state == ConsumerGroupState.STABLE
    assert d.partition_assignor == "range" and not d.is_simple_consumer_group
    members = {m.client_id: m for m in d.members}
    assert set(members) == {"d0", "d1"}
    got = sorted(tp.partition for m in d.members for tp in m.assignment.topic_partitions)
    assert got == [0, 1, 2, 3]
    for m in d.members:
        assert sorted(tp.partition for tp in m.assignment.topic_partitions) == \
            sorted(tp.partition for tp in m.target_assignment.topic_partitions)
        assert m.host == "/127.0.0.1"
    # the epochs, which the Python AdminClient does not expose: a raw ConsumerGroupDescribe
    g = cluster.consumer_group("described")
    raw = _raw_describe(cluster, "described")
    assert (raw.group_state, raw.group_epoch, raw.assignment_epoch, raw.assignor_name) == \
        ("Stable", g["group_epoch"], g["assignment_epoch"], "range")
    assert sorted((m.client_id, m.member_epoch, m.member_type) for m in raw.members) == \
        sorted((c, g["assignment_epoch"], 1) for c in ("d0", "d1"))

    listed = admin.list_consumer_groups(types={ConsumerGroupType.CONSUMER}).result(15)
    assert [x.group_id for x in listed.valid] == ["described"]
    assert listed.valid[0].type == ConsumerGroupType.CONSUMER
    listed = admin.list_consumer_groups(types={ConsumerGroupType.CLASSIC}).result(15)
    assert [x.group_id for x in listed.valid] == ["classic-one"]
    d = admin.describe_consumer_groups(["classic-one"])["classic-one"].result(15)
    assert d.type == ConsumerGroupType.CLASSIC and len(d.members) == 1

    # DescribeGroups as Kafka 4.4 answers it (GroupMetadataManager.describeGroups), through kafka-python's admin
    # client, which speaks v6: the consumer group is not a classic group -> GROUP_ID_NOT_FOUND with Kafka's
    # message and state Dead; the classic group is described.
    from kafka import KafkaAdminClient
    kp = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=15000)
    try:
        got = kp.describe_groups(["described", "classic-one"])
    finally:
        kp.close()
    assert got["described"]["group_state"] == "Dead" and got["described"]["members"] == []
    assert "Group described is not a classic group." in got["described"]["error"]
    assert got["classic-one"]["error"] is None and got["classic-one"]["protocol_type"] == "consumer"


def _raw_describe(cluster, group: str):
    import asyncio

    from client.wire import WireClient
    from protocol.messages import ConsumerGroupDescribeRequest, FindCoordinatorRequest

    async def run():
        host, port = cluster.bootstrap.split(",")[0].rsplit(":", 1)
        c = await WireClient.connect(host, int(port), timeout=10)
        r = await c.call(FindCoordinatorRequest(key=group, key_type=0), 3, timeout=10)
        await c.close()
        c = await WireClient.connect(r.host, r.port, timeout=10)
        await c.negotiate()
        d = await c.call(ConsumerGroupDescribeRequest(group_ids=[group]), 1, timeout=10)
        await c.close()
        return d.groups[0]
    return asyncio.run(run())


def test_848_mixed_group_classic_and_consumer_members(kgroup_cluster, agents):
    """A KIP-848 consumer and a classic (kafka-python) consumer in one group: the consumer group serves the classic
    member through JoinGroup/SyncGroup/Heartbeat (classicGroupJoinToConsumerGroup & co)."""
    pytest.importorskip("kafka")
    cluster = kgroup_cluster
    cluster.create_topic("mixed", 4)
    new = consumer848(cluster.bootstrap, "mixed", "mixed-group", name="new")
    agents.append(new)
    wait_cover([new], 4)
    old = consumer("kafka-python", cluster.bootstrap, "mixed", "mixed-group", name="old")
    agents.append(old)
    wait_cover([new, old], 4, timeout=60)
    g = cluster.consumer_group("mixed-group")
    assert sorted(m["classic"] for m in g["members"].values()) == [False, True]


def test_848_online_upgrade_of_a_classic_group(kgroup_cluster, agents):
    """Two classic confluent-kafka consumers form a classic group; a KIP-848 consumer joins with a
    ConsumerGroupHeartbeat: the group is upgraded online and the three share the partitions."""
    cluster = kgroup_cluster
    cluster.create_topic("upgrade", 6)
    olds = [consumer("confluent-kafka", cluster.bootstrap, "upgrade", "upgrading", name=f"old{i}") for i in range(2)]
    agents += olds
    wait_cover(olds, 6)
    assert cluster.consumer_group("upgrading") is None
    new = consumer848(cluster.bootstrap, "upgrade", "upgrading", name="new")
    agents.append(new)
    wait_cover([*olds, new], 6, timeout=60)
    g = cluster.consumer_group("upgrading")
    assert g is not None and sorted(m["classic"] for m in g["members"].values()) == [False, True, True]


def test_848_kgroup_core_and_librdkafka_in_one_group(kgroup_cluster, agents):
    """kgroup's own KIP-848 consumer core (client/driver.py, group.protocol=consumer) and librdkafka's in one
    consumer group: they share the partitions, kgroup's member commits under its epoch, then leaves (epoch -1)
    and librdkafka's member is given every partition. librdkafka is the independent implementation here."""
    import asyncio
    import threading

    from client.driver import AsyncConsumer

    cluster = kgroup_cluster
    cluster.create_topic("mixed848", 6)
    agents.append(consumer848(cluster.bootstrap, "mixed848", "g-core-rdk", name="rdk"))
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    def run(coro, timeout=30.0):
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout)

    ours = AsyncConsumer(cluster.bootstrap, {"group.id": "g-core-rdk", "client.id": "kgroup-core",
                                             "group.protocol": "consumer", "retry.backoff.ms": 50,
                                             "metadata.max.age.ms": 1000}, name="kgroup-core", processing_ms=5)
    try:
        run(ours.start(["mixed848"]))
        rdk = agents[0]

        def shared() -> bool:
            mine = sorted(tp.partition for tp in ours.assignment)
            theirs = rdk.assignment or []
            return (ours.stable and bool(mine) and bool(theirs) and sorted(mine + theirs) == list(range(6)))
        wait_all(agents, shared, 45, "kgroup's core and librdkafka sharing the partitions", hold=1.0)
        g = cluster.consumer_group("g-core-rdk")
        assert len(g["members"]) == 2 and all(not m["classic"] for m in g["members"].values())
        committed = run(ours.commit(timeout=10))
        assert set(committed) == set(ours.assignment)
        run(ours.close(timeout=10))
        wait_cover([rdk], 6)
        assert len(cluster.consumer_group("g-core-rdk")["members"]) == 1
    finally:
        run(ours.kill())
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()
