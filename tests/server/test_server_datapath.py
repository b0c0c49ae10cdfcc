"""The data path of `kgroup serve` over real TCP (broker/datapath.py) and the fault-control channel
(broker/faults.py): expected values are Kafka's (UnifiedLog, ProducerStateManager, DelayedFetch,
LeaderEpochFileCache), every wait bounded."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time

import pytest

from client.control import ControlClient
from broker.server import KGroupServer
from protocol.errors import ErrorCode
from protocol.hashing import partition_for_key
from protocol.messages import (FetchRequest, InitProducerIdRequest, ListOffsetsRequest,
                               OffsetForLeaderEpochRequest, ProduceRequest)
from protocol.records import Record, RecordBatch, decode_batches, encode_batch

from server_harness import TIMEOUT, connect, form_group, make_settings, start_server

E = ErrorCode


def batch(keys: list[str], *, pid: int = -1, epoch: int = -1, seq: int = -1, ts: int | None = None) -> bytes:
    now = int(time.time() * 1000) if ts is None else ts
    return encode_batch(RecordBatch(records=[Record(offset=i, timestamp=now + i, key=k.encode(),
                                                    value=b"v-" + k.encode()) for i, k in enumerate(keys)],
                                    producer_id=pid, producer_epoch=epoch, base_sequence=seq))


def produce_req(topic: str, partition: int, records: bytes, acks: int = -1) -> ProduceRequest:
    return ProduceRequest(transactional_id=None, acks=acks, timeout_ms=1000, topic_data=[
        ProduceRequest.Topic(name=topic, partition_data=[ProduceRequest.Topic.Partition(index=partition,
                                                                                       records=records)])])


def fetch_req(topic: str, partition: int, offset: int, *, max_wait_ms: int = 0, min_bytes: int = 1,
              epoch: int = -1) -> FetchRequest:
    return FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=1 << 20,
                        isolation_level=0, session_id=0, session_epoch=-1, topics=[
                            FetchRequest.Topic(topic=topic, partitions=[FetchRequest.Topic.Partition(
                                partition=partition, current_leader_epoch=epoch, fetch_offset=offset,
                                log_start_offset=-1, partition_max_bytes=1 << 20)])],
                        forgotten_topics_data=[], rack_id="")


def list_req(topic: str, partition: int, ts: int) -> ListOffsetsRequest:
    return ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsRequest.Topic(
        name=topic, partitions=[ListOffsetsRequest.Topic.Partition(partition_index=partition, timestamp=ts)])])


async def leader_conn(server: KGroupServer, topic: str, partition: int):
    leader = server.cluster.partition(topic, partition).leader
    c = await connect(server, leader)
    await c.negotiate(timeout=TIMEOUT)
    return c


def part(resp):
    return (resp.responses[0].partition_responses[0] if hasattr(resp.responses[0], "partition_responses")
            else resp.responses[0].partitions[0])


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


async def test_logs_persist_under_data_dir(tmp_path) -> None:
    settings = make_settings(topics=(("orders", 1, 1),), data_dir=str(tmp_path))
    srv = await start_server(settings)
    try:
        c = await leader_conn(srv, "orders", 0)
        await c.call(produce_req("orders", 0, batch(["a"], pid=7, epoch=0, seq=0)), 9, timeout=TIMEOUT)
        await c.close()
    finally:
        await srv.close()
    assert os.path.exists(tmp_path / "topics" / "orders-0.log")
    srv = await start_server(make_settings(topics=(("orders", 1, 1),), data_dir=str(tmp_path)))
    try:
        c = await leader_conn(srv, "orders", 0)
        dup = part(await c.call(produce_req("orders", 0, batch(["a"], pid=7, epoch=0, seq=0)), 9, timeout=TIMEOUT))
        assert (dup.error_code, dup.base_offset) == (0, 0)  # producer state was rebuilt from the log
        f = part(await c.call(fetch_req("orders", 0, 0), 12, timeout=TIMEOUT))
        assert f.high_watermark == 1
        await c.close()
    finally:
        await srv.close()


# --- fault control --------------------------------------------------------------------------------------------

async def test_fail_next_and_delay_rules(server: KGroupServer) -> None:
    members = await form_group(server, "fg", 1)
    m = members[0]
    faults = server.faults
    faults.fail_next("Heartbeat", 2, "REBALANCE_IN_PROGRESS", group="fg")
    assert await m.heartbeat() == E.REBALANCE_IN_PROGRESS
    assert await m.heartbeat() == E.REBALANCE_IN_PROGRESS
    assert await m.heartbeat() == 0  # the rule is used up
    assert faults.describe()["rules"] == []
    rid = faults.delay_heartbeats("fg", None, 300)
    t0 = time.monotonic()
    assert await m.heartbeat() == 0
    assert time.monotonic() - t0 >= 0.28
    faults.clear(rid)
    faults.fail_next("Produce", 1, "NOT_ENOUGH_REPLICAS")
    c = await leader_conn(server, "orders", 0)
    try:
        assert part(await c.call(produce_req("orders", 0, batch(["a"])), 9, timeout=TIMEOUT)).error_code == \
            E.NOT_ENOUGH_REPLICAS
        assert part(await c.call(produce_req("orders", 0, batch(["a"])), 9, timeout=TIMEOUT)).error_code == 0
    finally:
        await c.close()
    await m.close()


async def test_frozen_clock_and_expire_member(server: KGroupServer) -> None:
    members = await form_group(server, "clk", 2, session_timeout_ms=500)
    faults = server.faults
    t = faults.freeze_clock()
    await asyncio.sleep(0.8)  # more than the session timeout of real time: nothing expires
    assert len(server.svc.group("clk").members) == 2
    assert server.now_ms() == t
    faults.advance_clock(501)
    assert len(server.svc.group("clk").members) == 0
    faults.thaw_clock()
    assert server.now_ms() >= t + 501
    members2 = await form_group(server, "clk2", 2, session_timeout_ms=5000)
    expired = faults.expire_member("clk2", members2[0].member_id)
    assert expired == [members2[0].member_id]
    assert set(server.svc.group("clk2").members) == {members2[1].member_id}
    for m in members + members2:
        await m.close()


async def test_control_channel_and_kgroup_ctl(server: KGroupServer) -> None:
    members = await form_group(server, "ctl-g", 1)

    def blocking():
        with ControlClient(server.bootstrap) as cc:
            d = cc.call("describe", group="ctl-g")
            old = cc.call("coordinator", group="ctl-g")
            moved = cc.call("move_coordinator", group="ctl-g", broker=(old + 1) % 3)
            with pytest.raises(RuntimeError, match="unknown op"):
                cc.call("nonsense")
        out = subprocess.run([sys.executable, "-m", "kgroup", "ctl", "--bootstrap", server.bootstrap, "coordinator",
                              "ctl-g"], capture_output=True, text=True, timeout=30)
        return d, old, moved, out
    d, old, moved, out = await asyncio.wait_for(asyncio.to_thread(blocking), 40)
    assert d["group"]["members"] == [members[0].member_id]
    assert moved == {"group": "ctl-g", "partition": server.svc.partition_for("ctl-g"), "from": old,
                     "to": (old + 1) % 3}
    assert out.returncode == 0 and json.loads(out.stdout) == (old + 1) % 3
    # the old coordinator now answers NOT_COORDINATOR
    assert await members[0].heartbeat() == E.NOT_COORDINATOR
    await members[0].close()


def test_partitioner_oracle() -> None:
    assert [partition_for_key(k.encode(), 3) for k in "123"] == [0, 2, 2]


def test_error_responses_encode_for_every_api_and_version() -> None:
    """fail_next answers with AbstractRequest.getErrorResponse's shape: it must encode for whatever is sent."""
    from broker.faults import _is_loopback, error_response
    from protocol.api import APIS
    from protocol.frames import decode_request, encode_request, encode_response

    for key, api in sorted(APIS.items()):
        for v in range(api.min_version, api.max_version + 1):
            _, body = decode_request(encode_request(key, v, 1, "c", api.request.cls())[4:])
            encode_response(key, v, 1, error_response(key, v, body, int(E.REBALANCE_IN_PROGRESS)))
    req = produce_req("orders", 0, b"")
    r = error_response(0, 9, req, int(E.NOT_LEADER_OR_FOLLOWER))
    assert part(r).error_code == E.NOT_LEADER_OR_FOLLOWER
    assert _is_loopback("127.0.0.1:5555") and _is_loopback("::1:5555") and not _is_loopback("10.0.0.1:5555")
