"""`kgroup watch` against `kgroup serve` with real kafka-python consumers: what the watcher inferred from polling
Kafka's APIs is compared with the coordinator's own records of the same group (its Stable GroupMetadata records,
members joining and leaving, the group becoming Empty), and the fold of both logs gives the same owners per
partition."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from pathlib import Path

import pytest

from analysis.fold import fold_group
from coordinator import records as R
from protocol.consumer_protocol import decode_assignment

sys.path.insert(0, str(Path(__file__).parents[1] / "interop"))
from harness import agents, consumer, consumer848, wait_all, wait_cover  # noqa: E402,F401  (agents: the fixture)

pytestmark = pytest.mark.interop
pytest.importorskip("kafka")


@pytest.fixture
def kgroup_cluster_options():
    return {"auto_create_topics": False, "topics": {"orders": 4}}


class Watcher:
    """`kgroup watch` (its ``watch`` coroutine) on its own loop in a thread, stopped on demand."""

    def __init__(self, bootstrap: str, out: Path, group: str, interval_ms: int = 100) -> None:
        self.lines: list[str] = []
        self.rc: int | None = None
        ready = threading.Event()

        def main() -> None:
            from kgroup.cmd_watch import watch
            self.loop = asyncio.new_event_loop()
            self.stop = asyncio.Event()
            ready.set()
            self.rc = self.loop.run_until_complete(watch(bootstrap, str(out), groups=[group], interval_ms=interval_ms,
                                                         echo=self.lines.append, stop=self.stop))
        self.thread = threading.Thread(target=main, daemon=True)
        self.thread.start()
        ready.wait(10)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(20)


def coordinator_entries(cluster, group: str) -> list[R.LogEntry]:
    def read():
        p = cluster.server.svc.partition_for(group)
        return [e for e in cluster.server.svc.logs[p].entries if getattr(e.record, "group_id", None) == group]
    return cluster.call(read)


def parts(hex_or_bytes) -> tuple:
    raw = bytes.fromhex(hex_or_bytes) if isinstance(hex_or_bytes, str) else hex_or_bytes
    if not raw:
        return ()
    return tuple(sorted((t, p) for t, ps in decode_assignment(raw)[1].assigned_partitions for p in ps))


def dedupe(seq: list) -> list:
    out = []
    for x in seq:
        if not out or out[-1] != x:
            out.append(x)
    return out


def test_watch_infers_what_the_coordinator_recorded(kgroup_cluster, agents, tmp_path):
    cluster = kgroup_cluster
    out = tmp_path / "watch"
    w = Watcher(cluster.bootstrap, out, "watched")
    try:
        a = consumer("kafka-python", cluster.bootstrap, "orders", "watched", name="wa")
        agents.append(a)
        wait_cover([a], 4, hold=1.5)
        b = consumer("kafka-python", cluster.bootstrap, "orders", "watched", name="wb")
        agents.append(b)
        wait_cover([a, b], 4, hold=1.5)
        a.close()                                  # LeaveGroup
        wait_cover([b], 4, hold=1.5)
        b.kill()                                   # no LeaveGroup: the session expires, the group becomes Empty
        for _ in range(200):
            g = cluster.call(lambda: cluster.server.svc.group("watched"))
            if g is not None and str(g.state) == "Empty":
                break
            import time
            time.sleep(0.1)
        import time
        time.sleep(1.0)                            # a few more polls see the Empty group
    finally:
        w.close()
    assert w.rc == 0
    observed = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    assert all(r["v"] == 1 and r["log_partition"] == -1 for r in observed)
    assert [r["log_offset"] for r in observed] == list(range(len(observed)))

    mine = coordinator_entries(cluster, "watched")
    # the coordinator's Stable assignments, in order (a generation that kept its assignment looks the same to a
    # watcher: consecutive duplicates are one)
    truth = dedupe([{m.member_id: parts(m.assignment) for m in e.record.members} for e in mine
                    if isinstance(e.record, R.GroupMetadata) and e.record.members])
    seen = dedupe([{m["member_id"]: parts(m["assignment"]["hex"]) for m in r["data"]["members"]} for r in observed
                   if r["type"] == "ObservedGeneration"])
    assert seen == truth
    # a alone (after, with kafka-python, a first generation it joined before it knew the topic's partitions), a
    # and b, b alone
    every = tuple(("orders", p) for p in range(4))
    assert [sorted(x.values()) for x in truth[-3:]] == [[every], sorted([(("orders", 0), ("orders", 1)),
                                                                        (("orders", 2), ("orders", 3))]), [every]]
    # every member the coordinator added and removed, the watcher saw come and go
    joined = {e.record.member_id for e in mine if isinstance(e.record, R.MemberJoined)}
    removed = {e.record.member_id for e in mine if isinstance(e.record, R.MemberRemoved)}
    assert {r["data"]["member_id"] for r in observed if r["type"] == "ObservedMemberJoined"} == joined
    assert {r["data"]["member_id"] for r in observed if r["type"] == "ObservedMemberLeft"} == removed
    # the last thing both saw: the group Empty
    assert isinstance(mine[-1].record, (R.GroupMetadata, R.JoinCompleted)) and not mine[-1].record.members
    assert [r["type"] for r in observed if r["type"] in ("ObservedGeneration", "ObservedEmpty")][-1] == "ObservedEmpty"
    # one observed rebalance per coordinator rebalance that changed the assignment or emptied the group
    episodes = sum(1 for r in observed if r["type"] == "ObservedRebalance")
    coordinator_episodes = sum(1 for e in mine if isinstance(e.record, R.RebalanceStarted))
    assert 4 <= episodes <= coordinator_episodes
    # what `kgroup watch` printed
    assert any("generation" in line for line in w.lines) and "polls of 1 group(s)" in w.lines[-1]
    summary = json.loads((out / "watch.json").read_text())
    assert summary["groups"] == ["watched"] and summary["polls"] > 10
    assert (out / "produce.jsonl").read_text().strip()

    # the same owners per partition, from the fold of either log (analysis/fold.py)
    def owners(rows):
        own = sorted(rows["ownership"], key=lambda o: (o[2], o[3], o[7]))
        by: dict = {}
        for o in own:
            by.setdefault((o[2], o[3]), []).append(o[4])
        return {k: dedupe(v) for k, v in by.items()}

    def proj(d):
        data = d["data"]
        members = data.get("members")
        if isinstance(members, list):
            members = [m if isinstance(m, str) else json.dumps(m) for m in members]
        return ("run", data["group_id"], d["timestamp_ms"], d["log_partition"], d["log_offset"], d["type"],
                data.get("member_id"), data.get("group_instance_id"), data.get("client_id"), data.get("old_member_id"),
                data.get("new_member_id"), data.get("generation_id"), data.get("reason"), data.get("initial"),
                members, data.get("protocol_name"))

    coord_rows = [proj(e.to_dict()) for e in mine]
    end = max(observed[-1]["timestamp_ms"], mine[-1].timestamp_ms)
    assert owners(fold_group("run", "watched", [proj(r) for r in observed], end)) == \
        owners(fold_group("run", "watched", coord_rows, end))



def reconciled_assignments(entries: list[R.LogEntry]) -> list[dict]:
    """The coordinator's reconciled states of a KIP-848 group, in order, from its records: every member's current
    assignment at the target assignment epoch with nothing to revoke or wait for (MemberState STABLE)."""
    from coordinator.cluster import topic_id
    from protocol.uuids import uuid_to_string

    name = {uuid_to_string(topic_id("orders")): "orders"}
    members: dict[str, tuple[int, int, tuple]] = {}
    target = None
    out = []
    for e in entries:
        r = e.record
        if isinstance(r, R.ConsumerGroupMemberMetadata):
            members.setdefault(r.member_id, (-1, 0, ()))
        elif isinstance(r, R.ConsumerGroupMemberMetadataTombstone):
            members.pop(r.member_id, None)
        elif isinstance(r, R.ConsumerGroupTargetAssignmentMetadata):
            target = r.assignment_epoch
        elif isinstance(r, R.ConsumerGroupCurrentMemberAssignment) and r.member_id in members:
            members[r.member_id] = (r.member_epoch, r.state, tuple(sorted(
                (name[t.topic_id], p) for t in r.assigned_partitions for p in t.partitions)))
        else:
            continue
        if members and all(ep == target and st == 0 for ep, st, _ in members.values()):
            out.append((target, {m: a for m, (_, _, a) in members.items()}))
    return out


def test_watch_follows_a_kip848_consumer_group(kgroup_cluster, agents, tmp_path):
    """confluent-kafka consumers with group.protocol=consumer: the watcher (ConsumerGroupDescribe) records the group
    type, the group and target assignment epochs and each member's epoch; its observed generations are the
    coordinator's reconciled assignments at those group epochs."""
    pytest.importorskip("confluent_kafka")
    cluster = kgroup_cluster
    out = tmp_path / "watch848"

    def reconciled(n: int) -> bool:
        g = cluster.consumer_group("w848")
        return g is not None and g["state"] == "Stable" and len(g["members"]) == n and all(
            m["member_epoch"] == g["assignment_epoch"] for m in g["members"].values())

    w = Watcher(cluster.bootstrap, out, "w848")
    try:
        a = consumer848(cluster.bootstrap, "orders", "w848", name="wa")
        agents.append(a)
        wait_cover([a], 4)
        wait_all([a], lambda: reconciled(1), 30, "a reconciled group", hold=1.0)
        b = consumer848(cluster.bootstrap, "orders", "w848", name="wb")
        agents.append(b)
        wait_cover([a, b], 4)
        wait_all([a, b], lambda: reconciled(2), 30, "a reconciled group", hold=1.0)
        a.close()
        wait_cover([b], 4)
        wait_all([b], lambda: reconciled(1), 30, "a reconciled group", hold=1.0)
        b.close()
        wait_all([], lambda: cluster.consumer_group("w848")["state"] == "Empty", 30, "an Empty group", hold=1.0)
    finally:
        w.close()
    assert w.rc == 0
    observed = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    mine = coordinator_entries(cluster, "w848")
    epochs = {e.record.epoch for e in mine if isinstance(e.record, R.ConsumerGroupMetadata)}
    targets = {e.record.assignment_epoch for e in mine if isinstance(e.record, R.ConsumerGroupTargetAssignmentMetadata)}
    snaps = [r["data"] for r in observed if r["type"] == "ObservedSnapshot"]
    assert snaps and all(s["group_type"] == "consumer" and s["group_epoch"] in epochs
                         and s["assignment_epoch"] in targets for s in snaps)
    assert all(m["member_epoch"] is not None and "target_partitions" in m and m["upgraded"] is True
               for s in snaps for m in s["members"])

    gens = [r["data"] for r in observed if r["type"] == "ObservedGeneration"]
    truth = reconciled_assignments(mine)
    for gdata in gens:
        assert gdata["group_type"] == "consumer" and gdata["generation_id"] == gdata["assignment_epoch"]
        assert all(m["member_epoch"] == gdata["generation_id"] for m in gdata["members"])
        seen = {m["member_id"]: tuple(tuple(tp) for tp in m["partitions"]) for m in gdata["members"]}
        assert (gdata["generation_id"], seen) in truth, "an observed generation the coordinator never reconciled"
    # a alone, a and b, b alone -- the last three reconciled assignments the coordinator had with members
    every = tuple(("orders", p) for p in range(4))
    sizes = dedupe([len(g["members"]) for g in gens])
    assert sizes[-3:] == [1, 2, 1]
    assert [sorted(tuple(tuple(tp) for tp in m["partitions"]) for m in g["members"]) for g in gens][-1] == [every]
    joined = {e.record.member_id for e in mine if isinstance(e.record, R.ConsumerGroupMemberMetadata)}
    left = {e.record.member_id for e in mine if isinstance(e.record, R.ConsumerGroupMemberMetadataTombstone)}
    assert {r["data"]["member_id"] for r in observed if r["type"] == "ObservedMemberJoined"} == joined
    assert {r["data"]["member_id"] for r in observed if r["type"] == "ObservedMemberLeft"} == left
    assert [r["type"] for r in observed if r["type"] in ("ObservedGeneration", "ObservedEmpty")][-1] == "ObservedEmpty"
    # what `kgroup watch` printed for a consumer group
    assert any(" group epoch " in line and "(consumer group, uniform, target assignment epoch " in line
               for line in w.lines)
