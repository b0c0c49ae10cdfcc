"""The data path over real TCP (broker/datapath.py's rules, broker/batchlog.py's logs): produce, fetch and list
offsets, leader checks, idempotent producers, acks=0, DelayedFetch, KIP-320 leader epochs; and the same rules
sans-IO. Expected values are Kafka's (UnifiedLog, ProducerStateManager, DelayedFetch, LeaderEpochFileCache),
every wait bounded."""

from __future__ import annotations

import asyncio
import time

import pytest

from broker.apis import BrokerApis
from broker.datapath import CLOSE, NO_RESPONSE, DataPath, FetchWait
from broker.server import KGroupServer
from coordinator import CoordinatorConfig, GroupCoordinatorService, RequestContext
from coordinator.service import BrokerStopped
from protocol.errors import ErrorCode
from protocol.hashing import partition_for_key
from protocol.messages import InitProducerIdRequest, OffsetForLeaderEpochRequest
from protocol.records import decode_batches

from broker_harness import (TIMEOUT, batch, connect, fetch_req, leader_conn, list_req, make_settings, part,
                            produce_req, start_server)

E = ErrorCode


@pytest.fixture
async def server():
    srv = await start_server(make_settings(topics=(("orders", 3, 1), ("logs", 1, 3)),
                                           group_initial_rebalance_delay_ms=200))
    try:
        yield srv
    finally:
        await srv.close()


async def test_produce_fetch_list_offsets(server: KGroupServer) -> None:
    c = await leader_conn(server, "orders", 0)
    try:
        r = part(await c.call(produce_req("orders", 0, batch(["a", "b"], ts=1000)), 9, timeout=TIMEOUT))
        assert (r.error_code, r.base_offset, r.log_start_offset) == (0, 0, 0)
        r = part(await c.call(produce_req("orders", 0, batch(["c"], ts=5000)), 5, timeout=TIMEOUT))
        assert (r.error_code, r.base_offset, r.log_start_offset) == (0, 2, 0)  # v5+: log_start_offset
        f = part(await c.call(fetch_req("orders", 0, 0), 12, timeout=TIMEOUT))
        assert (f.error_code, f.high_watermark, f.last_stable_offset, f.log_start_offset) == (0, 3, 3, 0)
        recs = [r for b in decode_batches(f.records) for r in b.records]
        assert [(r.offset, r.key) for r in recs] == [(0, b"a"), (1, b"b"), (2, b"c")]
        assert all(b.partition_leader_epoch == 0 for b in decode_batches(f.records))
        # a fetch from inside a batch returns the whole batch (clients skip the records before their offset)
        f = part(await c.call(fetch_req("orders", 0, 1), 4, timeout=TIMEOUT))
        assert [r.offset for b in decode_batches(f.records) for r in b.records] == [0, 1, 2]
        f = part(await c.call(fetch_req("orders", 0, 4), 12, timeout=TIMEOUT))
        assert f.error_code == E.OFFSET_OUT_OF_RANGE
        lo = await c.call(list_req("orders", 0, -1), 7, timeout=TIMEOUT)
        assert lo.topics[0].partitions[0].offset == 3
        lo = await c.call(list_req("orders", 0, -2), 1, timeout=TIMEOUT)
        assert lo.topics[0].partitions[0].offset == 0
        lo = await c.call(list_req("orders", 0, 1001), 4, timeout=TIMEOUT)
        assert (lo.topics[0].partitions[0].offset, lo.topics[0].partitions[0].timestamp) == (1, 1001)
        lo = await c.call(list_req("orders", 0, 9999), 4, timeout=TIMEOUT)
        assert lo.topics[0].partitions[0].offset == -1
        lo = await c.call(list_req("orders", 0, -3), 7, timeout=TIMEOUT)  # KIP-734 max timestamp
        assert (lo.topics[0].partitions[0].offset, lo.topics[0].partitions[0].timestamp) == (2, 5000)
        lo = await c.call(list_req("orders", 0, -1), 0, timeout=TIMEOUT)
        assert lo.topics[0].partitions[0].old_style_offsets == [3]
    finally:
        await c.close()


async def test_not_leader_and_unknown_partition(server: KGroupServer) -> None:
    leader = server.cluster.partition("orders", 0).leader
    other = (leader + 1) % 3
    c = await connect(server, other)
    try:
        await c.negotiate(timeout=TIMEOUT)
        assert part(await c.call(produce_req("orders", 0, batch(["a"])), 9, timeout=TIMEOUT)).error_code == \
            E.NOT_LEADER_OR_FOLLOWER
        assert part(await c.call(fetch_req("orders", 0, 0), 12, timeout=TIMEOUT)).error_code == \
            E.NOT_LEADER_OR_FOLLOWER
        assert part(await c.call(fetch_req("nope", 0, 0), 12, timeout=TIMEOUT)).error_code == \
            E.UNKNOWN_TOPIC_OR_PARTITION
    finally:
        await c.close()


async def test_idempotent_producer_sequences(server: KGroupServer) -> None:
    c = await leader_conn(server, "orders", 1)
    try:
        ip = await c.call(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000), 4,
                          timeout=TIMEOUT)
        assert ip.error_code == 0 and ip.producer_id >= 0 and ip.producer_epoch == 0
        pid = ip.producer_id

        async def send(keys, seq, epoch=0):
            return part(await c.call(produce_req("orders", 1, batch(keys, pid=pid, epoch=epoch, seq=seq)), 9,
                                     timeout=TIMEOUT))
        assert (await send(["a", "b"], 0)).base_offset == 0
        assert (await send(["c"], 2)).base_offset == 2
        dup = await send(["a", "b"], 0)  # a retried batch: the original offsets, no error, not appended again
        assert (dup.error_code, dup.base_offset) == (0, 0)
        assert (await send(["x"], 5)).error_code == E.OUT_OF_ORDER_SEQUENCE_NUMBER  # a gap
        assert (await send(["d"], 3)).base_offset == 3
        assert (await send(["e"], 1, epoch=1)).error_code == E.OUT_OF_ORDER_SEQUENCE_NUMBER  # new epoch, seq != 0
        assert (await send(["e"], 0, epoch=1)).base_offset == 4  # new epoch starts at 0
        assert (await send(["f"], 4, epoch=0)).error_code == E.INVALID_PRODUCER_EPOCH  # fenced older epoch
        f = part(await c.call(fetch_req("orders", 1, 0), 12, timeout=TIMEOUT))
        assert [r.key for b in decode_batches(f.records) for r in b.records] == [b"a", b"b", b"c", b"d", b"e"]
        bad = bytearray(batch(["z"]))
        bad[-1] ^= 0xFF
        assert part(await c.call(produce_req("orders", 1, bytes(bad)), 9, timeout=TIMEOUT)).error_code == \
            E.CORRUPT_MESSAGE
    finally:
        await c.close()


async def test_acks_zero_sends_no_response(server: KGroupServer) -> None:
    c = await leader_conn(server, "orders", 2)
    try:
        c.send(produce_req("orders", 2, batch(["q"]), acks=0), 9)
        lo = await c.call(list_req("orders", 2, -1), 7, timeout=TIMEOUT)  # answered next, on the same connection
        assert lo.topics[0].partitions[0].offset == 1
    finally:
        await c.close()


async def test_fetch_waits_for_data_or_max_wait_without_spinning(server: KGroupServer) -> None:
    c = await leader_conn(server, "orders", 0)
    p = await leader_conn(server, "orders", 0)
    try:
        t0 = time.monotonic()
        f = part(await c.call(fetch_req("orders", 0, 0, max_wait_ms=300), 12, timeout=TIMEOUT))
        waited = time.monotonic() - t0
        assert f.error_code == 0 and not f.records and 0.28 <= waited < 2.0
        # a parked fetch is completed by an append (DelayedFetch.tryComplete), well before max_wait
        t0 = time.monotonic()
        fut = asyncio.ensure_future(c.call(fetch_req("orders", 0, 0, max_wait_ms=4000), 12, timeout=TIMEOUT))
        await asyncio.sleep(0.2)
        assert not fut.done()
        await p.call(produce_req("orders", 0, batch(["late"])), 9, timeout=TIMEOUT)
        f = part(await asyncio.wait_for(fut, TIMEOUT))
        assert [r.key for b in decode_batches(f.records) for r in b.records] == [b"late"]
        assert time.monotonic() - t0 < 2.0
    finally:
        await c.close()
        await p.close()


async def test_leader_epochs_after_a_leader_change(server: KGroupServer) -> None:
    """KIP-320: OffsetForLeaderEpoch and the current_leader_epoch fencing, after the leader of a replicated
    partition is stopped."""
    c = await leader_conn(server, "logs", 0)
    await c.call(produce_req("logs", 0, batch(["a", "b"])), 9, timeout=TIMEOUT)
    await c.close()
    old = server.cluster.partition("logs", 0).leader
    await server.stop_broker(old)
    ps = server.cluster.partition("logs", 0)
    assert ps.leader != old and ps.leader_epoch == 1
    c = await leader_conn(server, "logs", 0)
    try:
        assert part(await c.call(fetch_req("logs", 0, 0, epoch=0), 12, timeout=TIMEOUT)).error_code == \
            E.FENCED_LEADER_EPOCH
        assert part(await c.call(fetch_req("logs", 0, 0, epoch=5), 12, timeout=TIMEOUT)).error_code == \
            E.UNKNOWN_LEADER_EPOCH
        f = part(await c.call(fetch_req("logs", 0, 0, epoch=1), 12, timeout=TIMEOUT))
        assert f.error_code == 0 and f.high_watermark == 2  # the log survived the failover
        req = OffsetForLeaderEpochRequest(replica_id=-1, topics=[OffsetForLeaderEpochRequest.Topic(
            topic="logs", partitions=[OffsetForLeaderEpochRequest.Topic.Partition(
                partition=0, current_leader_epoch=1, leader_epoch=0)])])
        r = (await c.call(req, 4, timeout=TIMEOUT)).topics[0].partitions[0]
        assert (r.error_code, r.leader_epoch, r.end_offset) == (0, 0, 2)
    finally:
        await c.close()
        await server.start_broker(old)


# --- fault control --------------------------------------------------------------------------------------------

def test_partitioner_oracle() -> None:
    assert [partition_for_key(k.encode(), 3) for k in "123"] == [0, 2, 2]


# --- the rules, sans-IO (broker/datapath.py through broker/apis.py) -------------------------------------------

def _broker() -> tuple[BrokerApis, int]:
    """A sans-IO broker with topic t (1 partition); returns it and the partition's leader."""
    svc = GroupCoordinatorService(num_brokers=2, config=CoordinatorConfig.create({}), seed=1)
    svc.cluster.create_topic("t", 1, 1)
    return BrokerApis(svc), svc.cluster.partition("t", 0).leader


def test_a_fetch_short_of_min_bytes_is_a_decision_to_wait() -> None:
    """ReplicaManager.fetchMessages answers at once only when the fetch does not want to wait, needs no data, has
    min_bytes, or hit an error; else DelayedFetch waits for an append or max_wait_ms."""
    apis, leader = _broker()
    ctx = RequestContext(1, 12)
    w = apis.handle(leader, fetch_req("t", 0, 0, max_wait_ms=500), ctx, 0).answer
    assert type(w) is FetchWait and w.partitions == (("t", 0),) and w.max_wait_ms == 500
    done = apis.resume_fetch(leader, w, may_wait=False)  # the wait is over: what there is (nothing)
    assert part(done).error_code == 0 and part(done).high_watermark == 0 and not part(done).records
    assert type(apis.resume_fetch(leader, w, may_wait=True)) is FetchWait  # woken, still short: wait again
    for req in (fetch_req("t", 0, 0, max_wait_ms=0), fetch_req("t", 0, 0, max_wait_ms=500, min_bytes=0)):
        assert type(apis.handle(leader, req, ctx, 0).answer).__name__ == "FetchResponse"
    other = 1 - leader  # an error answers at once
    r = apis.handle(other, fetch_req("t", 0, 0, max_wait_ms=500), ctx, 0).answer
    assert part(r).error_code == E.NOT_LEADER_OR_FOLLOWER
    # an append is what a waiting fetch waits for
    assert apis.data.drain_appended() == []
    p = apis.handle(leader, produce_req("t", 0, batch(["a"], pid=3, epoch=0, seq=0)),
                              RequestContext(2, 9), 0).answer
    assert part(p).error_code == 0
    assert apis.data.drain_appended() == [("t", 0)] and apis.data.drain_appended() == []
    got = apis.resume_fetch(leader, w, may_wait=True)
    assert [r.key for b in decode_batches(part(got).records) for r in b.records] == [b"a"]
    # a retried batch (a duplicate) appends nothing
    apis.handle(leader, produce_req("t", 0, batch(["a"], pid=3, epoch=0, seq=0)), RequestContext(3, 9), 0)
    assert apis.data.drain_appended() == []


def test_acks_zero_answers_nothing_or_closes_on_error() -> None:
    """KafkaApis.handleProduceRequest with acks=0: no response; a failed append closes the connection."""
    apis, leader = _broker()
    ok = apis.handle(leader, produce_req("t", 0, batch(["a"]), acks=0), RequestContext(1, 9), 0)
    assert ok.answer is NO_RESPONSE
    bad = apis.handle(1 - leader, produce_req("t", 0, batch(["a"]), acks=0), RequestContext(2, 9), 0)
    assert bad.answer is CLOSE


def test_a_stopped_broker_answers_nothing() -> None:
    apis, leader = _broker()
    apis.svc.stop_broker(leader, 0)
    with pytest.raises(BrokerStopped):
        apis.handle(leader, list_req("t", 0, -1), RequestContext(1, 7), 0)
    with pytest.raises(BrokerStopped):
        apis.resume_fetch(leader, FetchWait(fetch_req("t", 0, 0), 12, (("t", 0),), 100), may_wait=False)


def test_producer_ids_come_from_the_data_paths_block() -> None:
    dp = DataPath(GroupCoordinatorService(num_brokers=1).cluster, first_producer_id=5000)
    req = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000)
    assert [dp.init_producer_id(0, req, 4).producer_id for _ in range(3)] == [5000, 5001, 5002]

