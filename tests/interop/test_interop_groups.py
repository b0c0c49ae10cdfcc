"""Real clients join, rebalance and consume on `kgroup serve` -- per library, and all three in one group.

Matrix (each library: kafka-python 3, aiokafka 0.14, confluent-kafka 2.x / librdkafka):
* three consumers in one group get disjoint, non-empty assignments covering every partition; one closes (LeaveGroup)
  -> the other two cover everything; one is SIGKILLed (stops heartbeating) -> after the session timeout the last
  one covers everything;
* keyed messages from the library's own producer: the key -> partition mapping is kgroup's murmur2 partitioner;
  every group receives every message, each exactly once within the group (seed 001's topic1 example);
* auto.offset.reset: a new group starts at the log end ("latest", Kafka's default) unless "earliest" is asked for;
* a mixed group (one consumer of each library) agrees on the one protocol all support (roundrobin).
"""

from __future__ import annotations

import time

import pytest

from protocol.hashing import partition_for_key

from harness import HEARTBEAT_MS, LIBS, SESSION_MS, consumer, produce, wait_all, wait_cover

pytestmark = pytest.mark.interop
pytest.importorskip("kafka")
pytest.importorskip("aiokafka")
pytest.importorskip("confluent_kafka")


@pytest.mark.parametrize("lib", LIBS)
def test_three_consumers_close_and_kill(lib, kgroup_cluster, agents):
    cluster = kgroup_cluster
    cluster.create_topic("orders", 6)
    group = f"g-{lib}"
    agents += [consumer(lib, cluster.bootstrap, "orders", group, name=f"{lib}-m{i}") for i in range(3)]
    wait_cover(agents, 6)
    assert len(cluster.assignment(group)) == 3
    assert sorted(p for ps in cluster.assignment(group).values() for _, p in ps) == list(range(6))

    # a clean close: LeaveGroup, the other two take over every partition
    closing = agents[0]
    closing.close()
    assert closing.has("closed") and closing.proc.returncode == 0
    rest = agents[1:]
    wait_cover(rest, 6)
    assert len(cluster.assignment(group)) == 2

    # an abrupt stop: no LeaveGroup, no heartbeats; the coordinator notices after the session timeout
    killed, survivor = rest
    t0 = time.monotonic()
    killed.kill()
    wait_cover([survivor], 6, timeout=SESSION_MS / 1000 + 30)
    elapsed = time.monotonic() - t0
    # not before the session timeout (minus the age of the last heartbeat)
    assert elapsed >= (SESSION_MS - HEARTBEAT_MS - 300) / 1000, elapsed
    assert list(cluster.assignment(group)) and len(cluster.assignment(group)) == 1


@pytest.mark.parametrize("lib", LIBS)
def test_keyed_messages_every_group_exactly_once(lib, kgroup_cluster, agents):
    """Seed 001: topic1 (3 partitions), group1 with one consumer gets every key, group2 with three consumers splits
    them by partition. With Kafka's murmur2 partitioner the seed's keys "1", "2", "3" land on partitions 0, 2, 2 (so
    one group2 consumer gets two of them and one none); keys "1", "4", "2" land on 0, 1, 2: one each."""
    cluster = kgroup_cluster
    cluster.create_topic("topic1", 3)
    g1 = consumer(lib, cluster.bootstrap, "topic1", f"group1-{lib}", name=f"{lib}-g1")
    g2 = [consumer(lib, cluster.bootstrap, "topic1", f"group2-{lib}", name=f"{lib}-g2-{i}") for i in range(3)]
    agents += [g1, *g2]
    wait_cover([g1], 3)
    wait_cover(g2, 3)

    keys = [str(i) for i in range(1, 10)]
    produced = produce(lib, cluster.bootstrap, "topic1", keys)
    assert len(produced) == len(keys)
    for p in produced:  # the library's partitioner is Kafka's murmur2 (confluent-kafka: murmur2_random)
        assert p["partition"] == partition_for_key(p["key"].encode(), 3), p

    def got(agents_):
        return sorted(m["key"] for a in agents_ for m in a.messages())

    wait_all([g1, *g2], lambda: got([g1]) == sorted(keys) and got(g2) == sorted(keys), 30,
             "every group to receive every message")
    time.sleep(0.5)  # nothing more may arrive (no duplicates)
    assert got([g1]) == sorted(keys)
    assert got(g2) == sorted(keys)  # exactly once within group2
    for a in g2:
        for m in a.messages():
            assert m["partition"] in a.assignment and m["value"] == "v-" + m["key"]
    # seed 001's picture
    by_consumer = [{m["key"] for m in a.messages()} for a in g2]
    assert sorted(len(s & {"1", "4", "2"}) for s in by_consumer) == [1, 1, 1]
    assert sorted(len(s & {"1", "2", "3"}) for s in by_consumer) == [0, 1, 2]
    assert {m["key"] for m in g1.messages()} >= {"1", "2", "3"}


@pytest.mark.parametrize("lib", LIBS)
def test_auto_offset_reset(lib, kgroup_cluster, agents):
    """A new group starts at the log end unless auto.offset.reset=earliest (ListOffsets latest/earliest)."""
    cluster = kgroup_cluster
    cluster.create_topic("events", 1)
    old = ["old-a", "old-b"]
    produce(lib, cluster.bootstrap, "events", old)
    latest = consumer(lib, cluster.bootstrap, "events", f"latest-{lib}", offset_reset="latest")
    earliest = consumer(lib, cluster.bootstrap, "events", f"earliest-{lib}", offset_reset="earliest")
    agents += [latest, earliest]
    wait_cover([latest], 1)
    wait_cover([earliest], 1)
    earliest.wait(lambda: len(earliest.messages()) >= 2, 20, "the old messages")
    time.sleep(1.0)  # librdkafka resolves the start offset asynchronously after the assignment
    for attempt in range(5):
        produce(lib, cluster.bootstrap, "events", [f"new-{attempt}"])
        try:
            latest.wait(lambda: bool(latest.messages()), 3, "a new message")
            break
        except AssertionError:
            continue
    keys = [m["key"] for m in latest.messages()]
    assert keys and all(k.startswith("new-") for k in keys), keys
    assert [m["key"] for m in earliest.messages()][:2] == old


def test_mixed_group_agrees_on_common_protocol(kgroup_cluster, agents):
    """kafka-python offers range/roundrobin/sticky, librdkafka range/roundrobin, aiokafka roundrobin: the
    coordinator's vote (ClassicGroup.selectProtocol) can only pick roundrobin."""
    cluster = kgroup_cluster
    cluster.create_topic("mixed", 6)
    agents += [consumer(lib, cluster.bootstrap, "mixed", "mixed-group", name=f"mix-{lib}") for lib in LIBS]
    wait_cover(agents, 6)
    g = cluster.call(lambda: cluster.server.svc.group("mixed-group"))
    assert g.protocol_name == "roundrobin"
    assert len(cluster.assignment("mixed-group")) == 3
    produced = produce("kafka-python", cluster.bootstrap, "mixed", [f"k{i}" for i in range(12)])
    wait_all(agents, lambda: sum(len(a.messages()) for a in agents) >= len(produced), 30, "all messages")
    time.sleep(0.5)
    assert sorted(m["key"] for a in agents for m in a.messages()) == sorted(p["key"] for p in produced)


def test_real_clients_with_simulated_consumers(kgroup_cluster, agents):
    """kgroup's simulated consumers (client/driver.py: the sans-IO ConsumerCoordinator over TCP, Kafka's Java
    defaults [range, cooperative-sticky]) in one group with kafka-python and confluent-kafka: the vote picks range,
    the only protocol all support; a SIGKILLed real client's partitions go to the others after its session."""
    driver = pytest.importorskip("client.driver")
    cluster = kgroup_cluster
    cluster.create_topic("shared", 6)
    group = "sim-mixed"
    conf = {"group.id": group, "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": HEARTBEAT_MS}

    async def start_sims():
        sims = [driver.AsyncConsumer(cluster.bootstrap, dict(conf, **{"client.id": f"sim-{i}"}), name=f"sim-{i}")
                for i in range(2)]
        for s in sims:
            await s.start(["shared"])
        return sims
    sims = cluster.run(start_sims(), timeout=20)
    try:
        agents += [consumer(lib, cluster.bootstrap, "shared", group, name=f"real-{lib}")
                   for lib in ("kafka-python", "confluent-kafka")]

        def coordinator_view_ok(n):
            a = cluster.assignment(group)
            flat = sorted(p for ps in a.values() for _, p in ps)
            return len(a) == n and flat == list(range(6)) and all(a.values())
        wait_all(agents, lambda: coordinator_view_ok(4) and all(x.assignment for x in agents), 45,
                 "four members (two simulated, two real) covering every partition", hold=1.0)
        g = cluster.call(lambda: cluster.server.svc.group(group))
        assert g.protocol_name == "range"
        by_member = cluster.assignment(group)
        for x in agents:  # what each real client applied is what the coordinator handed it
            mine = [ps for mid, ps in by_member.items() if mid.startswith(x.name)]
            assert len(mine) == 1 and [p for _, p in mine[0]] == x.assignment
        agents[0].kill()
        wait_all(agents[1:], lambda: coordinator_view_ok(3), SESSION_MS / 1000 + 30,
                 "the killed client's partitions to move", hold=1.0)
    finally:
        async def stop_sims():
            for s in sims:
                await s.close(timeout=5)
        cluster.run(stop_sims(), timeout=20)
