"""KIP-848 end to end: consumer cores with ``group.protocol=consumer`` driven over TCP by client/driver.py against
an embedded ``kgroup serve`` (the KIP-848 coordinator).

Expected values come from Kafka's rules, not from the code under test: the uniform assignor splits 6 partitions of
one topic 3/3 between two members; a member that leaves with epoch -1 is removed at once and the other member is
assigned every partition (ConsumerGroupHeartbeat's leave, GroupMetadataManager.consumerGroupLeave); offset commits
carry the member id and epoch (OffsetCommit v9) and are accepted (read back through an independent OffsetFetch);
revocation callbacks come before assignment callbacks; the leaving member's last heartbeat has epoch -1.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import pytest_asyncio

from client.driver import AsyncConsumer
from consumer.assignors import TopicPartition
from broker.server import KGroupServer
from protocol.api import ApiKey
from broker_harness import TIMEOUT, connect, fetch_offsets, make_settings, start_server

WAIT = 10.0
TOPIC = "orders"
ALL = {TopicPartition(TOPIC, p) for p in range(6)}


@pytest_asyncio.fixture
async def kip848_server():
    """3 brokers; consumer-group heartbeats every 100 ms, sessions of 2 s, assignments computed at once."""
    srv = await start_server(make_settings(**{
        "group_consumer_heartbeat_interval_ms": 100, "group_consumer_min_heartbeat_interval_ms": 50,
        "group_consumer_session_timeout_ms": 2000, "group_consumer_min_session_timeout_ms": 1000,
        "group_consumer_assignment_interval_ms": 0}))
    try:
        yield srv
    finally:
        await srv.close()


class Recorder:
    """Every request/response body of one consumer (on_wire), and its rebalance callbacks in order."""

    def __init__(self) -> None:
        self.wire: list[tuple[str, int, Any]] = []
        self.callbacks: list[tuple[str, tuple]] = []

    def __call__(self, direction: str, node: int, kind: str, api_key: int, version: int, body: Any) -> None:
        self.wire.append((direction, int(api_key), version, body))

    def sent(self, api_key: int) -> list:
        return [(v, b) for d, k, v, b in self.wire if d == "send" and k == api_key]

    def received(self, api_key: int) -> list:
        return [b for d, k, _v, b in self.wire if d == "recv" and k == api_key]


def kip848_consumer(server: KGroupServer, group: str, name: str, rec: Recorder, **config: Any) -> AsyncConsumer:
    cfg = {"group.id": group, "client.id": name, "group.protocol": "consumer", "retry.backoff.ms": 50,
           "retry.backoff.max.ms": 200, "auto.commit.interval.ms": 300, "metadata.max.age.ms": 1000}
    cfg.update(config)
    c = AsyncConsumer(server.bootstrap, cfg, name=name, processing_ms=5, on_wire=rec,
                      on_assigned=lambda tps: rec.callbacks.append(("assigned", tuple(tps))),
                      on_revoked=lambda tps: rec.callbacks.append(("revoked", tuple(tps))),
                      on_lost=lambda tps: rec.callbacks.append(("lost", tuple(tps))))
    return c


async def wait_stable(consumers: list[AsyncConsumer], sizes: list[int]) -> None:
    def ok(c: AsyncConsumer, n: int) -> bool:
        return c.stable and len(c.assignment) == n
    try:
        await asyncio.wait_for(asyncio.gather(*(c.wait_until(lambda c, n=n: ok(c, n), WAIT)
                                                for c, n in zip(consumers, sizes))), WAIT)
    except asyncio.TimeoutError:
        raise AssertionError("not stable in time:\n" + "\n".join(c.describe() for c in consumers)) from None


async def test_two_consumer_protocol_members_share_then_one_leaves(kip848_server: KGroupServer) -> None:
    server, group = kip848_server, "kip848-e2e"
    r1, r2 = Recorder(), Recorder()
    c1 = kip848_consumer(server, group, "c1", r1)
    c2 = kip848_consumer(server, group, "c2", r2, **{"group.remote.assignor": "uniform"})
    try:
        await asyncio.wait_for(asyncio.gather(c1.start([TOPIC]), c2.start([TOPIC])), WAIT)
        await wait_stable([c1, c2], [3, 3])
        owned1, owned2 = set(c1.assignment), set(c2.assignment)
        assert owned1 | owned2 == ALL and not owned1 & owned2
        assert c1.member_id != c2.member_id and len(c1.member_id) == 22  # client-generated Uuids (KIP-1082)

        # the protocol on the wire: a full first heartbeat (epoch 0), then incremental ones
        v, first = r2.sent(ApiKey.CONSUMER_GROUP_HEARTBEAT)[0]
        assert v == 1 and first.member_epoch == 0 and first.member_id == c2.member_id
        assert first.subscribed_topic_names == [TOPIC] and first.server_assignor == "uniform"
        assert first.topic_partitions == [] and first.rebalance_timeout_ms == 300_000
        later = [b for _v, b in r2.sent(ApiKey.CONSUMER_GROUP_HEARTBEAT)[1:]]
        assert any(b.subscribed_topic_names is None and b.topic_partitions is None for b in later)
        assert not any(b.member_epoch < 0 for b in later)
        assert all(b.error_code == 0 for b in r1.received(ApiKey.CONSUMER_GROUP_HEARTBEAT))
        assert c1.core.state.value == "STABLE" and c1.generation > 0

        # a commit under the member epoch is accepted (OffsetCommit v9 with member id + epoch)
        committed = await c1.commit(timeout=WAIT)
        assert set(committed) == owned1
        v, req = r1.sent(ApiKey.OFFSET_COMMIT)[-1]
        assert v == 9 and req.member_id == c1.member_id and req.generation_id_or_member_epoch == c1.generation

        # c2 leaves (close: revoke its partitions, heartbeat with epoch -1): c1 gets everything
        await asyncio.wait_for(c2.close(), WAIT)
        _v, leave = r2.sent(ApiKey.CONSUMER_GROUP_HEARTBEAT)[-1]
        assert leave.member_epoch == -1
        assert r2.callbacks[-1] == ("revoked", tuple(sorted(owned2, key=lambda tp: tp.partition)))
        await wait_stable([c1], [6])
        assert set(c1.assignment) == ALL
        assert ("lost", ) not in [(k,) for k, _ in r1.callbacks]
        assert r1.callbacks[-1][0] == "assigned" and set(r1.callbacks[-1][1]) == owned2

        # c1 commits all six partitions under its new epoch: accepted and readable by an independent client
        for tp in c1.assignment:
            c1.core.seek(tp, 10 + tp.partition)
        committed = await c1.commit(timeout=WAIT)
        assert committed == {tp: 10 + tp.partition for tp in ALL}
        found = {}
        for broker in range(3):  # only the coordinator (the leader of the group's offsets partition) answers
            conn = await connect(server, broker)
            try:
                code, offsets = await fetch_offsets(conn, group, TOPIC, list(range(6)))
            finally:
                await conn.close()
            if code == 0:
                found[broker] = offsets
        assert list(found.values()) == [{p: 10 + p for p in range(6)}]
    finally:
        for c in (c1, c2):
            await asyncio.wait_for(c.kill(), TIMEOUT)


async def test_classic_and_consumer_protocols_run_on_the_same_driver(kip848_server: KGroupServer) -> None:
    """The same AsyncConsumer runs either membership; group.protocol decides (two groups side by side)."""
    rc, rn = Recorder(), Recorder()
    classic = AsyncConsumer(kip848_server.bootstrap, {"group.id": "side-classic", "client.id": "k",
                                                      "session.timeout.ms": 1500, "heartbeat.interval.ms": 150,
                                                      "retry.backoff.ms": 50},
                            name="k", processing_ms=5, on_wire=rc)
    new = kip848_consumer(kip848_server, "side-consumer", "n", rn)
    try:
        await asyncio.wait_for(asyncio.gather(classic.start([TOPIC]), new.start([TOPIC])), WAIT)
        await wait_stable([classic, new], [6, 6])
        assert rc.sent(ApiKey.JOIN_GROUP) and not rc.sent(ApiKey.CONSUMER_GROUP_HEARTBEAT)
        assert rn.sent(ApiKey.CONSUMER_GROUP_HEARTBEAT) and not rn.sent(ApiKey.JOIN_GROUP)
    finally:
        for c in (classic, new):
            await asyncio.wait_for(c.kill(), TIMEOUT)


@pytest.mark.parametrize("bad", [{"session.timeout.ms": 1000}])
def test_classic_only_settings_are_refused_by_the_driver(bad) -> None:
    from consumer.config import ConfigError
    c = AsyncConsumer("127.0.0.1:1", {"group.id": "g", "group.protocol": "consumer", **bad})
    with pytest.raises(ConfigError, match="cannot be set when group.protocol=CONSUMER"):
        asyncio.run(c.start(["t"], timeout=0.1))
