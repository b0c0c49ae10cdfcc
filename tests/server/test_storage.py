"""broker/storage.py: the ``__consumer_offsets`` logs on disk (``kgroup serve --data-dir``) and their reload."""

import json

import pytest

from broker.storage import JsonLinesWriter, OffsetsLogStorage
from coordinator import CoordinatorConfig, GroupCoordinatorService, RequestContext
from protocol.messages import OffsetFetchRequest


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
