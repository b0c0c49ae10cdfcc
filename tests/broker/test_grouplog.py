"""The coordinator's log (broker/grouplog.py): what Kafka 4.4's group coordinator logs at INFO, derived from the
records, for scripted members over TCP -- joins (KIP-394's MEMBER_ID_REQUIRED, a static member), the rebalance and
its reason, the generation, the leader's assignment, a LeaveGroup, a session expiry, members that did not rejoin,
DeleteGroups, expired offsets, a coordinator moving (unload and load), a restart loading groups; the text layout
(Kafka's log4j pattern) and the JSON lines. Expected texts are Kafka's (GroupMetadataManager, GroupCoordinatorShard,
CoordinatorRuntime)."""

from __future__ import annotations

import asyncio
from typing import Any
import json
import logging

import pytest

from broker.grouplog import GroupLog, JsonFormatter, KafkaTextFormatter
from broker.server import KGroupServer
from coordinator.cluster import OFFSETS_TOPIC
from protocol.errors import ErrorCode
from protocol.messages import DeleteGroupsRequest, JoinGroupRequest
from broker_harness import TIMEOUT, Member, connect, form_group, make_settings, start_server

E = ErrorCode


class Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def messages(self, group: str | None = None) -> list[str]:
        """The messages (the [GroupCoordinator ...] context cut off), of one group's lines if given."""
        out = []
        for r in self.records:
            m = r.getMessage()
            if m.startswith("[GroupCoordinator "):
                m = m.split("] ", 1)[1]
            if group is None or r.fields.get("group_id") == group or f"group {group}" in m:
                out.append(m)
        return out

    def events(self, group: str) -> list[str]:
        return [r.event for r in self.records if getattr(r, "fields", {}).get("group_id") == group]


@pytest.fixture
def capture():
    logger = logging.getLogger("test.grouplog")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    h = Capture()
    logger.addHandler(h)
    yield logger, h
    logger.removeHandler(h)


async def test_join_rebalance_generation_leave_and_expiry(server: KGroupServer, capture) -> None:
    logger, h = capture
    server.add_listener(GroupLog(server, logger))
    a, b, c = await form_group(server, "g1", 3)
    ids = {m.member_id for m in (a, b, c)}
    leader = a.leader
    msgs = h.messages("g1")
    # KIP-394: every member first gets an id, then joins with it; the first join of an Empty group rebalances
    assert sum(m.startswith("Dynamic member with unknown member id joins group g1 in Empty state. Created a new "
                            "member id ") and m.endswith(" and requesting the member to rejoin with this id.")
               for m in msgs) == 3
    joined = [m for m in msgs if m.startswith("Pending dynamic member with id ")]
    assert len(joined) == 3 and all(m.endswith("Adding to the group now.") for m in joined)
    first_join = next(m for m in joined)
    assert " joins group g1 in Empty state." in first_join
    start = [m for m in msgs if m.startswith("Preparing to rebalance group g1")]
    assert len(start) == 1 and start[0].startswith(
        "Preparing to rebalance group g1 in state PreparingRebalance with old generation 0 (reason: Adding new member ")
    assert "Stabilized group g1 generation 1 with 3 members." in msgs
    detail = next(m for m in msgs if m.startswith("Group g1 generation 1: "))
    assert detail.startswith(f"Group g1 generation 1: protocol range, leader {leader}, members [")
    assert f"Assignment received from leader {leader} for group g1 for generation 1. The group has 3 members, 0 of " \
           "which are static." in msgs
    assert msgs[-1] == "Group g1 is Stable at generation 1"
    # the order Kafka logs them in
    order = [msgs.index(x) for x in (start[0], "Stabilized group g1 generation 1 with 3 members.", detail,
                                    msgs[-1])]
    assert order == sorted(order)

    # a LeaveGroup (client reason "test") and the rebalance it starts
    n = len(h.records)
    await c.leave()
    new = h.messages()[n:]
    assert new[:2] == [
        f"[Group g1] Member {c.member_id} has left group through explicit `LeaveGroup` request; client reason: test",
        f"Preparing to rebalance group g1 in state PreparingRebalance with old generation 1 (reason: explicit "
        f"`LeaveGroup` request for ({c.member_id}) members.)."]
    # the others rejoin: generation 2
    await asyncio.gather(a.join(), b.join())
    assert "Stabilized group g1 generation 2 with 2 members." in h.messages()

    # a session expiry (fault control: the session timer fires now)
    n = len(h.records)
    server.expire_sessions("g1", [b.member_id])
    new = h.messages()[n:]
    assert new[0] == f"Member {b.member_id} in group g1 has failed, removing it from the group."
    assert new[1].startswith("Preparing to rebalance group g1 in state PreparingRebalance with old generation 2 "
                             f"(reason: removing member {b.member_id} on heartbeat expiration.).")
    assert {r.fields["member_id"] for r in h.records if getattr(r, "event", "") == "member_expired"} == {b.member_id}
    assert ids >= {c.member_id, b.member_id}
    for m in (a, b, c):
        await m.close()


async def test_members_that_did_not_rejoin_and_group_empty(capture) -> None:
    logger, h = capture
    srv = await start_server(make_settings(group_initial_rebalance_delay_ms=200))
    try:
        srv.add_listener(GroupLog(srv, logger))
        a, b = await form_group(srv, "g2", 2, rebalance_timeout_ms=300)
        # a rejoins (a rebalance), b never does: removed when the join phase completes at the rebalance timeout
        r = await a.join(timeout=TIMEOUT)
        assert r.error_code == 0
        msgs = h.messages("g2")
        assert f"Group g2 removed dynamic members who haven't joined: [{b.member_id}]" in msgs
        i = msgs.index(f"Group g2 removed dynamic members who haven't joined: [{b.member_id}]")
        assert msgs[i + 1] == "Stabilized group g2 generation 2 with 1 members."
        # the last member leaves during the rebalance-free Stable state, then the join phase completes empty
        await a.leave()
        for _ in range(100):
            if "Group g2 with generation 3 is now empty." in h.messages("g2"):
                break
            await asyncio.sleep(0.02)
        assert "Group g2 with generation 3 is now empty." in h.messages("g2")
        await a.close()
        await b.close()
    finally:
        await srv.close()


async def test_static_member_replacement(server: KGroupServer, capture) -> None:
    logger, h = capture
    server.add_listener(GroupLog(server, logger))
    m = Member(server, "static-g", "s")
    await m.find_coordinator()

    def static_join(member_id: str) -> JoinGroupRequest:
        req = m.join_request()
        req.member_id, req.group_instance_id = member_id, "inst-1"
        return req
    r = await m.conn.call(static_join(""), 9, timeout=TIMEOUT)
    assert r.error_code == 0
    m.member_id, m.generation, m.leader, m.protocol_name = r.member_id, r.generation_id, r.leader, r.protocol_name
    await m.sync({m.member_id: b""})
    msgs = h.messages("static-g")
    assert msgs[0] == (f"Static member with groupInstanceId=inst-1 and unknown member id joins group static-g in Empty "
                       f"state. Created a new member id {m.member_id} for this member and add to the group.")
    assert "Assignment received from leader {} for group static-g for generation 1. The group has 1 members, 1 of " \
           "which are static.".format(m.member_id) in msgs
    # the same instance again with no member id: replaced, no rebalance (KIP-345)
    n = len(h.records)
    r = await m.conn.call(static_join(""), 9, timeout=TIMEOUT)
    assert r.error_code == 0
    new = h.messages()[n:]
    assert new == [f"Static member with groupInstanceId=inst-1 and unknown member id joins group static-g in Stable "
                   f"state. Replacing previously mapped member {m.member_id} with this groupInstanceId.",
                   "Static member which joins during Stable stage and doesn't affect the selected protocol will not "
                   "trigger a rebalance."]
    await m.close()


async def test_delete_groups_and_expired_offsets(capture) -> None:
    logger, h = capture
    srv = await start_server(make_settings(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1000,
                                           group_initial_rebalance_delay_ms=200))
    try:
        srv.add_listener(GroupLog(srv, logger))
        (a,) = await form_group(srv, "expiring", 1)
        await a.commit({0: 5, 3: 7})
        await a.leave()                         # Empty: its offsets expire a retention period later (KIP-211)
        (b,) = await form_group(srv, "deleted", 1)
        await b.commit({1: 1})
        await b.leave()
        await a.close()
        await b.close()
        await asyncio.sleep(0.05)
        c = await connect(srv, srv.svc.coordinator_of("deleted"))
        r = await c.call(DeleteGroupsRequest(groups_names=["deleted"]), 2, timeout=TIMEOUT)
        await c.close()
        assert r.results[0].error_code == 0
        assert h.messages("deleted")[-2:] == ["The following groups were deleted: deleted. A total of 1 offsets were "
                                              "removed.", "Group deleted is Dead (DeleteGroups)"]
        # a minute of retention on the coordinator clock (fault control moves it), then the next sweep
        srv.advance_clock(61_000)
        msgs = h.messages()
        assert "Expired 2 offset(s) of group expiring: orders-0, orders-3" in msgs
        assert "Group expiring is Dead (group is empty and all its offsets expired)" in msgs
        sweep = [m for m in msgs if m.startswith("Generated ")]
        assert sweep == ["Generated 3 tombstone records while cleaning up group metadata in 0 milliseconds."]
    finally:
        await srv.close()


async def test_coordinator_moves_and_restart_loads(tmp_path, capture) -> None:
    logger, h = capture
    srv = await start_server(make_settings(data_dir=str(tmp_path), group_initial_rebalance_delay_ms=200))
    try:
        srv.add_listener(GroupLog(srv, logger))
        a, b = await form_group(srv, "moving", 2)
        p = srv.svc.partition_for("moving")
        old = srv.svc.coordinator_of("moving")
        new = (old + 1) % 3
        n = len(h.records)
        srv.move_coordinator("moving", new)
        lines = [(r.getMessage(), r.kafka_class.rsplit(".", 1)[-1]) for r in h.records[n:]]
        tp = f"{OFFSETS_TOPIC}-{p}"
        assert [m.split("] ", 1)[1] for m, _ in lines[:5]] == [
            f"Scheduling unloading of metadata for {tp} with epoch 0",
            "[GroupId=moving] Unloading group metadata for generation 1.",
            f"Finished unloading metadata for {tp} with epoch 0.",
            f"Scheduling loading of metadata from {tp} with epoch 1",
            lines[4][0].split("] ", 1)[1]]
        assert lines[4][0].split("] ", 1)[1].startswith(f"Finished loading of metadata from {tp} with epoch 1 in 0ms")
        assert lines[0][0].startswith(f"[GroupCoordinator id={old} topic={OFFSETS_TOPIC} partition={p}] ")
        assert lines[3][0].startswith(f"[GroupCoordinator id={new} topic={OFFSETS_TOPIC} partition={p}] ")
        assert [c for _, c in lines[:5]] == ["CoordinatorRuntime", "GroupMetadataManager", "CoordinatorRuntime",
                                             "CoordinatorRuntime", "CoordinatorRuntime"]
        assert lines[5][0].endswith("Loaded classic group moving with 2 members.")
        for m in (a, b):
            await m.close()
    finally:
        await srv.close()
    # a restart over the data directory: the loads of the partitions that hold records
    h.records.clear()
    srv = await start_server(make_settings(data_dir=str(tmp_path), group_initial_rebalance_delay_ms=200))
    try:
        GroupLog(srv, logger)
        msgs = h.messages()
        assert "Loaded classic group moving with 2 members." in msgs
        assert any(m.startswith(f"Finished loading of metadata from {OFFSETS_TOPIC}-{p} with epoch ") for m in msgs)
        assert msgs[-1].startswith("Group coordinator active: broker ")
    finally:
        await srv.close()


def test_text_and_json_layouts() -> None:
    rec = logging.LogRecord("kgroup.coordinator", logging.INFO, __file__, 1,
                            "[GroupCoordinator id=0 topic=__consumer_offsets partition=3] Member m in group g has "
                            "failed, removing it from the group.", None, None)
    rec.kafka_class = "org.apache.kafka.coordinator.group.GroupMetadataManager"
    rec.coordinator_ms = 1_700_000_000_123
    rec.event = "member_expired"
    rec.fields = {"broker": 0, "partition": 3, "group_id": "g", "member_id": "m"}
    text = KafkaTextFormatter().format(rec)
    # Kafka's log4j pattern "[%d] %p %m (%c)", milliseconds after a comma
    assert text.endswith("] INFO [GroupCoordinator id=0 topic=__consumer_offsets partition=3] Member m in group g has "
                         "failed, removing it from the group. (org.apache.kafka.coordinator.group.GroupMetadataManager)")
    assert text.startswith("[") and text[20:25] == ",123]"
    d = json.loads(JsonFormatter().format(rec))
    assert d["time"] == "2023-11-14T22:13:20.123+00:00"
    assert (d["level"], d["event"], d["group_id"], d["member_id"], d["partition"]) == ("INFO", "member_expired", "g",
                                                                                         "m", 3)
    assert d["logger"] == "org.apache.kafka.coordinator.group.GroupMetadataManager"


# --- KIP-848 consumer groups ---------------------------------------------------------------------------------------

class Member848:
    """A scripted KIP-848 member (ConsumerGroupHeartbeat v1 on its own connection to the coordinator)."""

    def __init__(self, server: KGroupServer, group_id: str, *, instance_id: str | None = None,
                 rebalance_timeout_ms: int = 30000) -> None:
        import uuid
        self.server, self.group_id, self.instance_id = server, group_id, instance_id
        self.member_id = str(uuid.uuid4())
        self.epoch = 0
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.owned: list[int] = []
        self.conn = None

    async def heartbeat(self, *, epoch: int | None = None, owned: list[int] | None = None) -> Any:
        from protocol.messages import ConsumerGroupHeartbeatRequest as H
        if self.conn is None:
            self.conn = await connect(self.server, self.server.svc.coordinator_of(self.group_id))
        full = self.epoch == 0
        parts = self.owned if owned is None else owned
        from coordinator.cluster import topic_id
        tid = topic_id("orders")
        owned_tps = [] if full else [H.TopicPartitions(topic_id=tid, partitions=parts)]
        req = H(group_id=self.group_id, member_id=self.member_id, member_epoch=self.epoch if epoch is None else epoch,
                instance_id=self.instance_id, rebalance_timeout_ms=self.rebalance_timeout_ms if full else -1,
                subscribed_topic_names=["orders"] if full else None, topic_partitions=owned_tps)
        r = await self.conn.call(req, 1, timeout=TIMEOUT)
        assert r.error_code == 0, r
        self.epoch = r.member_epoch
        if r.assignment is not None:
            self.owned = sorted(p for t in r.assignment.topic_partitions for p in t.partitions)
        return r

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()


async def test_consumer_group_joins_epochs_assignments_leaves_and_fencing(capture) -> None:
    """Kafka 4.4's GroupMetadataManager INFO lines for a consumer group: a member joins (consumer protocol), the
    group epoch is bumped (the record's metadata hash), a target assignment is computed with the default assignor;
    a second member; a leave (epoch -1); a member fenced by its rebalance timeout (it does not revoke) and one by its
    session; a static member joins, leaves temporarily (epoch -2) and is replaced; DeleteGroups of the empty group;
    the group unloaded and loaded when its coordinator moves."""
    logger, h = capture
    srv = await start_server(make_settings(group_consumer_assignment_interval_ms=0))
    try:
        srv.add_listener(GroupLog(srv, logger))
        srv.freeze_clock()
        p = srv.svc.partition_for("cg")

        def epoch_records():
            return [e.record for e in srv.svc.log(p).entries if type(e.record).__name__ == "ConsumerGroupMetadata"
                    and e.record.group_id == "cg"]

        a = Member848(srv, "cg", rebalance_timeout_ms=500)
        await a.heartbeat()
        e1, h1 = epoch_records()[-1].epoch, epoch_records()[-1].metadata_hash  # what the coordinator wrote
        assert h.messages("cg") == [
            f"[GroupId cg] Member {a.member_id} joins the consumer group using the consumer protocol.",
            f"[GroupId cg] Bumped group epoch to {e1} with metadata hash {h1}.",
            f"[GroupId cg] Computed a new target assignment for epoch {e1} with 'uniform' assignor in 0ms."]
        assert a.owned == [0, 1, 2, 3, 4, 5]
        assert [r.kafka_class.rsplit(".", 1)[-1] for r in h.records[-3:]] == ["GroupMetadataManager"] * 3

        b = Member848(srv, "cg")
        n = len(h.records)
        await b.heartbeat()
        assert h.messages()[n:] == [
            f"[GroupId cg] Member {b.member_id} joins the consumer group using the consumer protocol.",
            f"[GroupId cg] Bumped group epoch to {e1 + 1} with metadata hash {h1}.",
            f"[GroupId cg] Computed a new target assignment for epoch {e1 + 1} with 'uniform' assignor in 0ms."]
        # a learns it must revoke half of its partitions and never does: fenced by its rebalance timeout (500 ms)
        await a.heartbeat(owned=[0, 1, 2, 3, 4, 5])
        assert srv.svc.consumer_group("cg").members[a.member_id].state.name == "UNREVOKED_PARTITIONS"
        n = len(h.records)
        srv.advance_clock(600)
        assert h.messages()[n:] == [
            f"[GroupId cg] Member {a.member_id} fenced from the group because it failed to transition from epoch {e1} "
            "within 500ms.",
            f"[GroupId cg] Bumped group epoch to {e1 + 2} with metadata hash {h1}."]
        assert h.records[-2].fields["reason"] == f"it failed to transition from epoch {e1} within 500ms"

        # a static member: joins, leaves temporarily (epoch -2), a new instance replaces it
        s1 = Member848(srv, "cg", instance_id="inst-1")
        await s1.heartbeat()
        n = len(h.records)
        await s1.heartbeat(epoch=-2)
        assert h.messages()[n:] == [f"[GroupId cg] Static member {s1.member_id} with instance id inst-1 temporarily "
                                    "left the consumer group."]
        s2 = Member848(srv, "cg", instance_id="inst-1")
        n = len(h.records)
        await s2.heartbeat()
        new = h.messages()[n:]
        assert new[0] == (f"[GroupId cg] Static member with instance id inst-1 re-joins the consumer group using the "
                          f"consumer protocol. Created a new member {s2.member_id} to replace the existing member "
                          f"{s1.member_id}.")
        assert not any("left" in m or "fenced" in m for m in new)

        # b leaves (epoch -1); s2's session expires (fault control)
        n = len(h.records)
        await b.heartbeat(epoch=-1)
        assert h.messages()[n:][0] == f"[GroupId cg] Member {b.member_id} left the consumer group."
        assert h.messages()[n:][1].startswith("[GroupId cg] Bumped group epoch to ")
        n = len(h.records)
        srv.expire_sessions("cg", [s2.member_id])
        epoch = srv.svc.consumer_group("cg").group_epoch
        assert h.messages()[n:] == [
            f"[GroupId cg] Member {s2.member_id} fenced from the group because the member session expired.",
            f"[GroupId cg] Bumped group epoch to {epoch} with metadata hash 0."]  # nobody subscribes: hash 0
        assert epoch_records()[-1].metadata_hash == 0

        # the empty group moves to another coordinator (unloaded, loaded), then is deleted
        old = srv.svc.coordinator_of("cg")
        n = len(h.records)
        srv.move_coordinator("cg", (old + 1) % 3)
        msgs = h.messages()[n:]
        assert f"[GroupId=cg] Unloaded group metadata for group epoch {epoch}." in msgs
        assert "Loaded consumer group cg with 0 members." in msgs
        c = await connect(srv, srv.svc.coordinator_of("cg"))
        r = await c.call(DeleteGroupsRequest(groups_names=["cg"]), 2, timeout=TIMEOUT)
        await c.close()
        assert r.results[0].error_code == 0
        assert h.messages("cg")[-2:] == ["The following groups were deleted: cg. A total of 0 offsets were removed.",
                                         "Group cg is Dead (DeleteGroups)"]
        for m in (a, b, s1, s2):
            await m.close()
    finally:
        await srv.close()


async def test_online_upgrade_of_a_classic_group_logs_the_conversion(server: KGroupServer, capture) -> None:
    """A KIP-848 member joins a Stable classic group: Kafka logs the conversion (``convertToConsumerGroup``), then
    the new member's join, the epoch bump and the target assignment -- not the converted members' records."""
    logger, h = capture
    server.add_listener(GroupLog(server, logger))
    a, b = await form_group(server, "up", 2)
    n = len(h.records)
    new = Member848(server, "up")
    await new.heartbeat()
    msgs = h.messages()[n:]
    g = server.svc.consumer_group("up")
    assert g is not None and len(g.members) == 3
    assert msgs[0] == "[GroupId up] Converted the classic group to a consumer group."
    assert msgs[1] == f"[GroupId up] Member {new.member_id} joins the consumer group using the consumer protocol."
    assert msgs[2].startswith(f"[GroupId up] Bumped group epoch to {g.group_epoch} with metadata hash ")
    assert not any(a.member_id in m or b.member_id in m for m in msgs)
    for m in (a, b, new):
        await m.close()


async def test_classic_member_of_a_consumer_group_joins_and_leaves(server: KGroupServer, capture) -> None:
    """A classic member (JoinGroup/SyncGroup) in a consumer group: it joins using the classic protocol
    (``getOrMaybeSubscribeDynamicConsumerGroupMember``) and leaves with LeaveGroup v5 and a client reason
    (``classicGroupLeaveToConsumerGroup``)."""
    logger, h = capture
    server.add_listener(GroupLog(server, logger))
    a = Member848(server, "mix")
    await a.heartbeat()
    c = Member(server, "mix", "mix-classic", session_timeout_ms=10000)
    await c.find_coordinator()
    r = await c.join()
    assert r.error_code == 0, r
    assert f"[GroupId mix] Member {c.member_id} joins the consumer group using the classic protocol." in h.messages()
    n = len(h.records)
    r = await c.leave()
    assert r.error_code == 0
    new = h.messages()[n:]
    assert new[0] == (f"[GroupId mix] Dynamic member {c.member_id} has left group through explicit `LeaveGroup` "
                      "request; client reason: test")
    assert new[1].startswith("[GroupId mix] Bumped group epoch to ")
    for m in (a, c):
        await m.close()
