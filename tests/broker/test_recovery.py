"""Crash safety of ``--data-dir`` (broker/storage.py): torn and corrupt records are reported with the file and
byte offset and never stop a restart, a corrupt batch in the middle of a topic log is caught by its CRC and skipped
without losing the batches after it, the offsets logs are compacted on disk (snapshot + rolled history) and a
restart reads the live state, producer ids are never reused across restarts, ListOffsets lookups are indexed and
refuse duplicate partitions (Kafka's INVALID_REQUEST)."""

from __future__ import annotations

import json
import logging
import os

import pytest

import broker.batchlog as batchlog
from broker.batchlog import RecordBatchLog, recover_batches
from broker.datapath import DataPath
from broker.storage import OffsetsLogStorage, TopicLogStorage, read_entries
from coordinator import CoordinatorConfig, GroupCoordinatorService, RequestContext
from coordinator.records import LogEntry, OffsetCommit
from protocol.errors import ErrorCode
from protocol.messages import InitProducerIdRequest, ListOffsetsRequest, OffsetCommitRequest, OffsetFetchRequest
from broker_harness import TIMEOUT, batch, leader_conn, list_req, make_settings, part, produce_req, start_server

E = ErrorCode


# --- the offsets logs ----------------------------------------------------------------------------------------------

def _service(path, **cfg) -> GroupCoordinatorService:
    svc = GroupCoordinatorService(num_brokers=1, seed=1, storage=OffsetsLogStorage(path),
                                  config=CoordinatorConfig.create({"offsets.topic.replication.factor": 1,
                                                                   "offsets.topic.num.partitions": 1, **cfg}))
    svc.cluster.create_topic("t", 4, 1)
    return svc


def _commit(svc, rid: int, group: str, offsets: dict[int, int], now: int) -> None:
    T = OffsetCommitRequest.Topic
    out = svc.handle(0, OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
        T(name="t", partitions=[T.Partition(partition_index=p, committed_offset=o) for p, o in offsets.items()])]),
        RequestContext(rid, 8), now)
    assert all(p.error_code == 0 for t in out.answer.topics for p in t.partitions)


def _fetch(svc, group: str, now: int) -> dict[int, int]:
    r = svc.handle(0, OffsetFetchRequest(group_id=group, topics=[OffsetFetchRequest.Topic(
        name="t", partition_indexes=[0, 1, 2, 3])]), RequestContext(0, 7), now).answer
    return {p.partition_index: p.committed_offset for t in r.topics for p in t.partitions}


def _close(svc) -> None:
    for lg in svc.logs.values():
        lg.close()


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_a_torn_offsets_tail_is_dropped_with_a_warning_and_the_rest_loads(tmp_path, caplog, damage):
    svc = _service(tmp_path)
    for i in range(5):
        _commit(svc, i, "g", {0: 10 + i}, 100 + i)
    _close(svc)
    path = tmp_path / "__consumer_offsets-0.jsonl"
    raw = path.read_bytes()
    last = raw.rindex(b"\n", 0, len(raw) - 1) + 1  # the last record's first byte
    if damage == "truncate":
        path.write_bytes(raw[:-7])
    else:
        path.write_bytes(raw[:-4] + bytes(b ^ 0xFF for b in raw[-4:]))
    with caplog.at_level(logging.WARNING, logger="kgroup.storage"):
        svc2 = _service(tmp_path)
        assert _fetch(svc2, "g", 200)[0] == 13  # the complete records before it are all there
    msgs = [m for m in caplog.messages if str(path) in m]
    assert len(msgs) == 1 and f"at byte {last}" in msgs[0], caplog.messages
    assert path.read_bytes()[:last] == raw[:last]  # truncated at the torn record, then appended to
    _commit(svc2, 9, "g", {0: 99}, 300)
    _close(svc2)
    assert _fetch(_service(tmp_path), "g", 400)[0] == 99


def test_a_corrupt_offsets_record_in_the_middle_is_skipped_not_everything_after_it(tmp_path, caplog):
    svc = _service(tmp_path)
    for i in range(5):
        _commit(svc, i, "g", {i % 4: 10 + i}, 100 + i)
    _close(svc)
    path = tmp_path / "__consumer_offsets-0.jsonl"
    lines = path.read_bytes().split(b"\n")
    i = next(i for i, x in enumerate(lines) if b'"offset": 12,' in x)  # partition 2's commit
    lines[i] = lines[i].replace(b'"offset": 12,', b'"offset": 92,')  # still JSON: only the CRC can tell
    path.write_bytes(b"\n".join(lines))
    with caplog.at_level(logging.WARNING, logger="kgroup.storage"):
        svc2 = _service(tmp_path)
        offsets = _fetch(svc2, "g", 200)
    assert offsets == {0: 14, 1: 11, 2: -1, 3: 13}  # the one unreadable commit (partition 2) is lost, no other
    assert any("skipping an unreadable record at byte" in m and str(path) in m for m in caplog.messages)


def test_offsets_logs_are_compacted_on_disk_and_a_restart_reads_the_live_state(tmp_path):
    svc = _service(tmp_path, **{"kgroup.offsets.compaction.min.records": 50})
    for i in range(600):
        _commit(svc, i, f"g{i % 3}", {i % 4: i}, 1000 + i)
    log = svc.logs[0]
    assert log.compactions >= 5
    expected = {g: _fetch(svc, g, 5000) for g in ("g0", "g1", "g2")}
    _close(svc)
    storage = OffsetsLogStorage(tmp_path)
    history = storage.history_segments(0)
    assert len(history) == log.compactions
    entries, _, next_offset, clean = storage.open(0)
    assert next_offset == log.next_offset
    assert clean <= 3 * 4 + 3  # the live keys (offsets, plus the simple groups' creating commits)
    assert len(entries) < 100  # not the 600+ records of the history
    # the history and the active segment hold every record once, in order (what kgroup analyze reads)
    all_offsets = [e.offset for _, _, p in history for e in read_entries(p)]
    all_offsets += [e.offset for e in read_entries(storage.path(0))]
    assert all_offsets == list(range(next_offset))
    svc2 = _service(tmp_path)
    assert {g: _fetch(svc2, g, 6000) for g in expected} == expected


def test_a_crash_between_snapshot_and_roll_loads_each_record_once(tmp_path):
    svc = _service(tmp_path)
    for i in range(10):
        _commit(svc, i, "g", {0: i}, 100 + i)
    _close(svc)
    storage = OffsetsLogStorage(tmp_path)
    entries, writer, _, _ = storage.open(0)
    writer.close()
    path = storage.path(0)
    before = open(path, "rb").read()
    # what a compaction writes first: the snapshot (here: the last commit only); then "crash" before the roll
    snap = [e for e in entries if isinstance(e.record, OffsetCommit)][-1:]
    next_offset = entries[-1].offset + 1
    with open(storage.snapshot_path(0), "w") as f:
        f.write(json.dumps({"kgroup_offsets_snapshot": 1, "partition": 0, "next_offset": next_offset,
                            "records": 1}) + "\n")
        f.write(json.dumps(snap[0].to_dict()) + "\n")
    assert open(path, "rb").read() == before
    entries2, w2, nxt, clean = storage.open(0)
    w2.close()
    assert [e.offset for e in entries2] == [snap[0].offset] and nxt == next_offset and clean == 1
    assert _fetch(_service(tmp_path), "g", 500)[0] == 9


def test_an_unreadable_snapshot_falls_back_to_the_history(tmp_path, caplog):
    svc = _service(tmp_path, **{"kgroup.offsets.compaction.min.records": 20})
    for i in range(100):
        _commit(svc, i, "g", {i % 4: i}, 100 + i)
    expected = _fetch(svc, "g", 500)
    _close(svc)
    snap = OffsetsLogStorage(tmp_path).snapshot_path(0)
    with open(snap, "r+b") as f:
        f.truncate(os.path.getsize(snap) // 2)
    with caplog.at_level(logging.WARNING, logger="kgroup.storage"):
        assert _fetch(_service(tmp_path), "g", 600) == expected
    assert any("unreadable snapshot" in m for m in caplog.messages)


def test_history_retention_deletes_the_oldest_segments(tmp_path):
    storage = OffsetsLogStorage(tmp_path, history_retention_bytes=20_000)
    svc = GroupCoordinatorService(num_brokers=1, seed=1, storage=storage, config=CoordinatorConfig.create(
        {"offsets.topic.replication.factor": 1, "offsets.topic.num.partitions": 1,
         "kgroup.offsets.compaction.min.records": 20}))
    svc.cluster.create_topic("t", 4, 1)
    for i in range(400):
        _commit(svc, i, "g", {i % 4: i}, 100 + i)
    _close(svc)
    segs = storage.history_segments(0)
    assert 0 < sum(os.path.getsize(p) for _, _, p in segs) <= 20_000
    assert segs[0][1] > 0  # the first segments are gone
    assert _fetch(_service(tmp_path), "g", 1000) == {0: 396, 1: 397, 2: 398, 3: 399}


def test_appends_are_whole_lines_written_at_sync(tmp_path):
    storage = OffsetsLogStorage(tmp_path)
    _, w, _, _ = storage.open(0)
    for i in range(3):
        w.write(LogEntry(0, i, i, OffsetCommit(group_id="g", topic="t", partition=0, offset=i)))
    assert os.path.getsize(storage.path(0)) == 0  # nothing before the end of the call
    w.sync()
    data = open(storage.path(0), "rb").read()
    assert data.endswith(b"\n") and len(data.split(b"\n")) == 4
    w.close()


# --- topic logs ---------------------------------------------------------------------------------------------------

def _topic_log(tmp_path, n: int) -> tuple[TopicLogStorage, str, list[int]]:
    storage = TopicLogStorage(tmp_path, fsync="never")
    stored, writer = storage.open("t", 0)
    lg = RecordBatchLog("t", 0, stored, writer)
    starts = []
    for i in range(n):
        starts.append(lg.size_bytes())
        lg.append(batch([f"k{i}a", f"k{i}b"], pid=3, epoch=0, seq=2 * i), 0)
    lg.close()
    return storage, storage.path("t", 0), starts


@pytest.mark.parametrize("damage", ["payload", "length"])
def test_a_corrupt_batch_in_the_middle_is_skipped_and_reported_never_what_follows(tmp_path, caplog, damage):
    storage, path, starts = _topic_log(tmp_path, 6)
    raw = bytearray(open(path, "rb").read())
    bad = starts[2]
    if damage == "payload":
        raw[bad + 70] ^= 0x40  # a bit inside the records: only the CRC can tell
    else:
        raw[bad + 8:bad + 12] = (10_000).to_bytes(4, "big")  # a wrong length, still inside the file
    open(path, "wb").write(bytes(raw))
    with caplog.at_level(logging.WARNING, logger="kgroup.storage"):
        stored, writer = storage.open("t", 0)
    lg = RecordBatchLog("t", 0, stored, writer)
    assert [b.base_offset for b in lg.batches] == [0, 2, 6, 8, 10]  # offsets 4-5 lost, 6-11 kept
    assert lg.log_end_offset == 12
    assert os.path.getsize(path) == len(raw)  # nothing deleted from the file
    msgs = [m for m in caplog.messages if path in m]
    assert len(msgs) == 1 and f"bytes {bad}-{starts[3]}" in msgs[0] and "3 later batches" in msgs[0], msgs
    lg.close()


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_a_torn_or_corrupt_topic_tail_is_cut_off_with_a_warning(tmp_path, caplog, damage):
    storage, path, starts = _topic_log(tmp_path, 4)
    raw = open(path, "rb").read()
    damaged = raw[:-9] if damage == "truncate" else raw[:-3] + bytes(b ^ 0xFF for b in raw[-3:])
    open(path, "wb").write(damaged)
    with caplog.at_level(logging.WARNING, logger="kgroup.storage"):
        stored, writer = storage.open("t", 0)
    assert any(f"at byte {starts[3]}" in m and path in m for m in caplog.messages), caplog.messages
    assert os.path.getsize(path) == starts[3]
    lg = RecordBatchLog("t", 0, stored, writer)
    assert lg.log_end_offset == 6
    assert lg.append(batch(["k3a", "k3b"], pid=3, epoch=0, seq=6), 0) == (6, False)  # the unacked retry lands
    lg.close()


def test_recover_batches_finds_every_valid_batch():
    data = b"".join(batch([f"x{i}"], pid=1, epoch=0, seq=i) for i in range(3))
    # assign increasing base offsets as the log does
    lg = RecordBatchLog("t", 0)
    for i in range(3):
        lg.append(batch([f"x{i}"], pid=1, epoch=0, seq=i), 0)
    raw = b"".join(b.data for b in lg.batches)
    assert recover_batches(raw).batches == [(0, len(lg.batches[0].data)),
                                            (len(lg.batches[0].data), 2 * len(lg.batches[0].data)),
                                            (2 * len(lg.batches[0].data), len(raw))]
    garbage = b"\x02" * 40 + raw
    r = recover_batches(garbage)
    assert r.corrupt == [(0, 40)] and len(r.batches) == 3 and r.torn_at is None
    assert recover_batches(raw + b"\x00" * 10).torn_at == len(raw)
    assert len(data) == len(raw)


# --- producer ids --------------------------------------------------------------------------------------------------

async def _init_pid(srv) -> int:
    c = await leader_conn(srv, "orders", 0)
    r = await c.call(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000), 4, timeout=TIMEOUT)
    await c.close()
    assert r.error_code == 0
    return r.producer_id


async def test_producer_ids_are_unique_across_quick_restarts_and_acked_records_are_kept(tmp_path):
    """The prober's bug: a restart within ~1 s handed a new producer an old id whose sequence 0 was then taken
    for a duplicate -- acknowledged, never stored."""
    settings = make_settings(topics=(("orders", 1, 1),), data_dir=str(tmp_path))
    seen = []
    for round_ in range(3):
        srv = await start_server(settings)
        try:
            pid = await _init_pid(srv)
            assert pid not in seen
            seen.append(pid)
            c = await leader_conn(srv, "orders", 0)
            r = part(await c.call(produce_req("orders", 0, batch([f"r{round_}"], pid=pid, epoch=0, seq=0)), 9,
                                  timeout=TIMEOUT))
            assert (r.error_code, r.base_offset) == (0, round_)  # stored at a new offset, not a "duplicate"
            await c.close()
        finally:
            await srv.close()
    assert json.loads((tmp_path / "producer-ids.json").read_text())["next_block_start"] == 3000


def test_a_data_dir_without_the_block_file_starts_above_the_stored_ids(tmp_path):
    storage = TopicLogStorage(tmp_path)
    stored, writer = storage.open("t", 0)
    lg = RecordBatchLog("t", 0, stored, writer)
    lg.append(batch(["a"], pid=123_456, epoch=0, seq=0), 0)
    lg.close()
    dp = DataPath(GroupCoordinatorService(num_brokers=1).cluster, TopicLogStorage(tmp_path), first_producer_id=0)
    req = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000)
    assert [dp.init_producer_id(0, req, 4).producer_id for _ in range(2)] == [123_457, 123_458]


# --- ListOffsets --------------------------------------------------------------------------------------------------

def test_time_lookups_decode_at_most_one_batch(monkeypatch):
    lg = RecordBatchLog("t", 0)
    for i in range(2000):
        lg.append(batch([f"k{i}"], ts=1_000 + 10 * i), 0)
    lg.append(batch(["late"], ts=5_000), 0)  # timestamps need not be monotonic
    calls = []
    real = batchlog.decode_batches
    monkeypatch.setattr(batchlog, "decode_batches", lambda data: calls.append(1) or real(data))
    assert lg.offset_for_timestamp(1_000 + 10 * 1500) == (1500, 16_000)
    assert lg.offset_for_timestamp(4_995) == (400, 5_000)
    assert lg.offset_for_timestamp(99_999) is None
    assert lg.max_timestamp() == (1999, 20_990)
    assert lg.max_timestamp() == (1999, 20_990)
    assert len(calls) == 3  # two lookups, one max (cached)


async def test_list_offsets_refuses_duplicate_partitions(server) -> None:
    c = await leader_conn(server, "orders", 0)
    P = ListOffsetsRequest.Topic.Partition
    req = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[
        ListOffsetsRequest.Topic(name="orders", partitions=[P(partition_index=0, timestamp=-1)] * 100)])
    r = await c.call(req, 7, timeout=TIMEOUT)
    # ReplicaManager.fetchOffset: one answer per partition, INVALID_REQUEST
    assert [(p.partition_index, p.error_code, p.offset) for t in r.topics for p in t.partitions] == \
        [(0, E.INVALID_REQUEST, -1)]
    ok = await c.call(list_req("orders", 0, -1), 7, timeout=TIMEOUT)
    assert ok.topics[0].partitions[0].error_code == 0
    # v0 (handleListOffsetRequestV0) has no such check
    r0 = await c.call(ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.Topic(name="orders", partitions=[
        P(partition_index=0, timestamp=-1, max_num_offsets=1)] * 2)]), 0, timeout=TIMEOUT)
    assert [p.error_code for t in r0.topics for p in t.partitions] == [0, 0]
    await c.close()
