"""broker/storage.py: the ``__consumer_offsets`` logs and the topics' record batches on disk (``kgroup serve
--data-dir``), their reload, and restarts of a server over TCP that keep groups, offsets and records."""

import json
import os

import pytest

from broker.batchlog import RecordBatchLog
from broker.storage import BatchFileWriter, JsonLinesWriter, OffsetsLogStorage, TopicLogStorage
from coordinator import CoordinatorConfig, GroupCoordinatorService, RequestContext
from protocol.messages import DescribeGroupsRequest, ListGroupsRequest, OffsetFetchRequest
from broker_harness import (TIMEOUT, batch, connect, fetch_offsets, fetch_req, form_group, leader_conn,
                            make_settings, part, produce_req, start_server)


def test_file_persistence_and_restart(tmp_path):
    cfg = CoordinatorConfig()
    svc = GroupCoordinatorService(num_brokers=3, config=cfg, seed=1, storage=OffsetsLogStorage(tmp_path))
    svc.cluster.create_topic("foo", 3, 1)
    from protocol.messages import OffsetCommitRequest
    b = svc.coordinator_of("g")
    req = OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequest.Topic(name="foo", partitions=[OffsetCommitRequest.Topic.Partition(
            partition_index=1, committed_offset=77, committed_metadata="md")])])
    svc.handle(b, req, RequestContext(1, 9), 100)
    p = svc.partition_for("g")
    lines = (tmp_path / f"__consumer_offsets-{p}.jsonl").read_text().splitlines()
    assert [json.loads(x)["type"] for x in lines] == ["CoordinatorLoaded", "OffsetCommit"]
    for lg in svc.logs.values():
        lg.close()
    # a new process over the same files loads the partition by replay
    svc2 = GroupCoordinatorService(num_brokers=3, config=cfg, seed=1, storage=OffsetsLogStorage(tmp_path))
    svc2.cluster.create_topic("foo", 3, 1)
    fetch = OffsetFetchRequest(group_id="g", topics=[OffsetFetchRequest.Topic(name="foo", partition_indexes=[1])])
    r = svc2.handle(b, fetch, RequestContext(2, 7), 200).response(2)
    assert (r.topics[0].partitions[0].committed_offset, r.topics[0].partitions[0].metadata) == (77, "md")
    assert str(svc2.group("g").state) == "Empty"


def test_fsync_policy_is_validated(tmp_path):
    with pytest.raises(ValueError, match="fsync"):
        OffsetsLogStorage(tmp_path, fsync="sometimes")
    with pytest.raises(ValueError, match="fsync"):
        JsonLinesWriter(tmp_path / "x", fsync="sometimes")
    with pytest.raises(ValueError, match="fsync"):
        TopicLogStorage(tmp_path, fsync="sometimes")
    with pytest.raises(ValueError, match="fsync"):
        BatchFileWriter(tmp_path / "y", fsync="sometimes")


def test_topic_log_recovery_cuts_a_torn_tail(tmp_path):
    """Kafka's log recovery: a batch cut short by a crash during an append is dropped from the file; the whole
    batches before it are the log (and its producer state)."""
    storage = TopicLogStorage(tmp_path, fsync="never")
    stored, writer = storage.open("t", 0)
    assert stored == b""
    lg = RecordBatchLog("t", 0, stored, writer)
    lg.append(batch(["a", "b"], pid=5, epoch=0, seq=0), 0)
    lg.append(batch(["c"], pid=5, epoch=0, seq=2), 0)
    lg.close()
    path = storage.path("t", 0)
    whole = os.path.getsize(path)
    with open(path, "ab") as f:
        f.write(batch(["torn"])[:30])
    stored, writer = storage.open("t", 0)
    assert len(stored) == whole and os.path.getsize(path) == whole
    again = RecordBatchLog("t", 0, stored, writer)
    assert again.log_end_offset == 3
    assert again.append(batch(["c"], pid=5, epoch=0, seq=2), 0) == (2, True)  # a retry: the original offset
    assert again.append(batch(["d"], pid=5, epoch=0, seq=3), 0) == (3, False)
    again.close()
    assert os.path.getsize(path) > whole


async def test_restart_with_data_dir_keeps_groups_and_offsets(tmp_path) -> None:
    settings = make_settings(data_dir=str(tmp_path), group_initial_rebalance_delay_ms=200)
    srv = await start_server(settings)
    try:
        members = await form_group(srv, "durable", 2)
        leader = next(m for m in members if m.is_leader)
        r = await leader.commit({0: 100, 5: 105})
        assert all(p.error_code == 0 for t in r.topics for p in t.partitions)
        ids = sorted(m.member_id for m in members)
        for m in members:
            await m.close()
    finally:
        await srv.close()
    assert any(p.stat().st_size > 0 for p in tmp_path.iterdir())
    srv2 = await start_server(make_settings(data_dir=str(tmp_path)))
    try:
        coord = srv2.svc.coordinator_of("durable")
        c = await connect(srv2, coord)
        d = await c.call(DescribeGroupsRequest(groups=["durable"]), 5, timeout=TIMEOUT)
        g = d.groups[0]
        assert (g.error_code, g.group_state, g.protocol_type, g.protocol_data) == (0, "Stable", "consumer", "range")
        assert sorted(x.member_id for x in g.members) == ids
        err, offsets = await fetch_offsets(c, "durable", "orders", [0, 5, 1])
        assert err == 0 and offsets == {0: 100, 5: 105, 1: -1}
        lg = await c.call(ListGroupsRequest(), 4, timeout=TIMEOUT)
        assert ("durable", "Stable") in [(x.group_id, x.group_state) for x in lg.groups]
        await c.close()
    finally:
        await srv2.close()


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
