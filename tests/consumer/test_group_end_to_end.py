"""Several ConsumerCoordinators against a tiny in-test group coordinator (a simplified classic group: join
completes when every member has rejoined, no initial delay). Checks the whole walk end to end: MEMBER_ID_REQUIRED,
leader election and assignment, heartbeats during a rebalance, clean leave, and KIP-429's two-round cooperative
rebalance in which no partition is ever owned by two members."""

from __future__ import annotations

import itertools

import pytest

from consumer import outputs as out
from consumer.assignors import TopicPartition
from consumer.coordinator import ConsumerCoordinator, MemberState
from protocol.api import ApiKey
from protocol.errors import ErrorCode as E
from protocol.messages import (FindCoordinatorResponse, HeartbeatResponse, JoinGroupResponse, LeaveGroupResponse,
                               OffsetCommitResponse, OffsetFetchResponse, SyncGroupResponse)

TOPIC = "events"


class FakeGroup:
    """Just enough of GroupCoordinator for a happy-path group (no timers: members never expire)."""

    def __init__(self) -> None:
        self.members: dict[str, dict] = {}   # member id -> {protocols, join: (client, handle), sync: ...}
        self.ids = itertools.count(1)
        self.generation = 0
        self.state = "Empty"
        self.leader = None
        self.protocol = None
        self.assignments: dict[str, bytes] = {}
        self.offsets: dict = {}
        self.rebalances = 0

    def handle(self, client, req: out.SendRequest):
        b = req.body
        if req.api_key == ApiKey.FIND_COORDINATOR:
            return FindCoordinatorResponse(coordinators=[FindCoordinatorResponse.Coordinator(
                key=b.coordinator_keys[0], node_id=0, host="localhost", port=9092, error_code=0)])
        if req.api_key == ApiKey.JOIN_GROUP:
            if b.member_id == "":
                return JoinGroupResponse(error_code=E.MEMBER_ID_REQUIRED, member_id=f"{client.name}-{next(self.ids)}")
            m = self.members.setdefault(b.member_id, {"sync": None})
            m.update(protocols=[(p.name, p.metadata) for p in b.protocols], join=(client, req.handle))
            if self.leader is None:
                self.leader = b.member_id
            self._prepare()
            self._maybe_complete_join()
            return None
        if req.api_key == ApiKey.SYNC_GROUP:
            if b.member_id not in self.members:
                return SyncGroupResponse(error_code=E.UNKNOWN_MEMBER_ID)
            if b.generation_id != self.generation:
                return SyncGroupResponse(error_code=E.ILLEGAL_GENERATION)
            if self.state == "PreparingRebalance":
                return SyncGroupResponse(error_code=E.REBALANCE_IN_PROGRESS)
            if self.state == "Stable":
                return self._sync_ok(b.member_id)
            self.members[b.member_id]["sync"] = (client, req.handle)
            if b.member_id == self.leader:
                self.assignments = {a.member_id: a.assignment for a in b.assignments}
                self.state = "Stable"
                for mid, m in self.members.items():
                    if m["sync"] is not None:
                        c, h = m["sync"]
                        m["sync"] = None
                        c.deliver(h, self._sync_ok(mid))
            return None
        if req.api_key == ApiKey.HEARTBEAT:
            if b.member_id not in self.members:
                return HeartbeatResponse(error_code=E.UNKNOWN_MEMBER_ID)
            if b.generation_id != self.generation:
                return HeartbeatResponse(error_code=E.ILLEGAL_GENERATION)
            return HeartbeatResponse(error_code=E.REBALANCE_IN_PROGRESS if self.state == "PreparingRebalance" else 0)
        if req.api_key == ApiKey.LEAVE_GROUP:
            for ident in b.members:
                self.members.pop(ident.member_id, None)
                if self.leader == ident.member_id:
                    self.leader = next(iter(self.members), None)
            self._prepare(force=True)
            self._maybe_complete_join()
            return LeaveGroupResponse(error_code=0, members=[LeaveGroupResponse.MemberResponse(
                member_id=i.member_id, group_instance_id=None, error_code=0) for i in b.members])
        if req.api_key == ApiKey.OFFSET_COMMIT:
            for t in b.topics:
                for p in t.partitions:
                    self.offsets[(t.name, p.partition_index)] = p.committed_offset
            return OffsetCommitResponse(topics=[OffsetCommitResponse.Topic(name=t.name, partitions=[
                OffsetCommitResponse.Topic.Partition(partition_index=p.partition_index, error_code=0)
                for p in t.partitions]) for t in b.topics])
        if req.api_key == ApiKey.OFFSET_FETCH:
            g = b.groups[0]
            return OffsetFetchResponse(groups=[OffsetFetchResponse.Group(group_id=g.group_id, error_code=0, topics=[
                OffsetFetchResponse.Group.Topic(name=t.name, partitions=[OffsetFetchResponse.Group.Topic.Partition(
                    partition_index=p, committed_offset=self.offsets.get((t.name, p), -1), committed_leader_epoch=-1,
                    metadata="", error_code=0) for p in t.partition_indexes]) for t in g.topics])])
        raise AssertionError(f"unexpected request {req.api_key}")

    def _prepare(self, force: bool = False) -> None:
        if self.state in ("Empty", "Stable", "CompletingRebalance") or (force and self.state != "PreparingRebalance"):
            for mid, m in self.members.items():
                if m["sync"] is not None:
                    c, h = m["sync"]
                    m["sync"] = None
                    c.deliver(h, SyncGroupResponse(error_code=E.REBALANCE_IN_PROGRESS))
            self.state = "PreparingRebalance"

    def _maybe_complete_join(self) -> None:
        if self.state != "PreparingRebalance" or not all(m.get("join") for m in self.members.values()):
            return
        if not self.members:
            self.state = "Empty"
            return
        self.generation += 1
        self.rebalances += 1
        self.state = "CompletingRebalance"
        names = [set(n for n, _ in m["protocols"]) for m in self.members.values()]
        common = set.intersection(*names)
        self.protocol = next(n for n, _ in self.members[self.leader]["protocols"] if n in common)
        meta = {mid: dict(m["protocols"])[self.protocol] for mid, m in self.members.items()}
        for mid, m in self.members.items():
            c, h = m.pop("join")
            c.deliver(h, JoinGroupResponse(
                error_code=0, generation_id=self.generation, protocol_type="consumer", protocol_name=self.protocol,
                leader=self.leader, member_id=mid, members=[JoinGroupResponse.Member(member_id=k, metadata=v)
                                                            for k, v in meta.items()] if mid == self.leader else []))

    def _sync_ok(self, member_id):
        return SyncGroupResponse(error_code=0, protocol_type="consumer", protocol_name=self.protocol,
                                 assignment=self.assignments.get(member_id, b""))


class Client:
    def __init__(self, name, group, strategy, now=0):
        self.name = name
        self.group = group
        self.c = ConsumerCoordinator({"group.id": "g", "client.id": name, "session.timeout.ms": 10_000,
                                      "heartbeat.interval.ms": 1_000, "max.poll.interval.ms": 30_000,
                                      "partition.assignment.strategy": strategy, "auto.commit.interval.ms": 1_000},
                                     now_ms=now)
        self.c.set_metadata({TOPIC: 6})
        self.c.subscribe([TOPIC])
        self.inbox: list = []
        self.log: list = []
        self.now = now

    def deliver(self, handle, response):
        self.inbox.append((handle, response))

    def pump(self):
        while True:
            outputs = self.c.drain()
            self.log.extend(outputs)
            for o in outputs:
                if isinstance(o, out.SendRequest):
                    resp = self.group.handle(self, o)
                    if resp is not None:
                        self.deliver(o.handle, resp)
            if not self.inbox:
                return
            inbox, self.inbox = self.inbox, []
            for handle, resp in inbox:
                self.c.on_response(handle, resp, self.now)

    def step(self, now):
        self.now = now
        result = self.c.poll(now)
        # a driver that waits for next_poll_deadline_ms()/next_deadline_ms() never spins: right after a call
        # (before new responses arrive) the deadlines lie in the future
        poll_deadline = self.c.next_poll_deadline_ms()
        assert poll_deadline is None or poll_deadline > now, (self.name, now, poll_deadline)
        for tp in result.fetchable:
            self.c.advance(tp, 1)   # "process" one record per partition per poll
        self.c.tick(now)
        deadline = self.c.next_deadline_ms()
        assert deadline is None or deadline > now, (self.name, now, deadline)
        self.pump()


def run(clients, start, end, step=100):
    owners_seen = []
    for now in range(start, end, step):
        for cl in clients:
            cl.step(now)
        for other in clients:  # responses parked for other clients
            other.pump()
        owned = [tp for cl in clients for tp in cl.c.assignment]
        owners_seen.append(len(owned) == len(set(owned)))
    return all(owners_seen)


def assignment_of(clients):
    return {cl.name: cl.c.assignment for cl in clients}


@pytest.mark.parametrize("strategy", [["range"], ["cooperative-sticky"], ["range", "cooperative-sticky"]])
def test_three_members_join_leave_and_rebalance(strategy):
    group = FakeGroup()
    clients = [Client(f"c{i}", group, strategy) for i in range(3)]
    assert run(clients, 0, 3_000)
    assert all(cl.c.state == MemberState.STABLE for cl in clients)
    parts = sorted(tp for cl in clients for tp in cl.c.assignment)
    assert parts == [TopicPartition(TOPIC, p) for p in range(6)]
    assert all(len(cl.c.assignment) == 2 for cl in clients)
    assert group.offsets  # auto-commit reached the group

    clients[2].c.close(3_000)
    clients[2].pump()
    assert clients[2].c.closed and any(isinstance(o, out.LeftGroup) for o in clients[2].log)
    assert run(clients[:2], 3_000, 6_000)
    parts = sorted(tp for cl in clients[:2] for tp in cl.c.assignment)
    assert parts == [TopicPartition(TOPIC, p) for p in range(6)]
    # committed positions carry over: the partitions that moved resume from the committed offsets
    assert all(pos > 0 for cl in clients[:2] for pos in cl.c.positions.values())


def test_cooperative_newcomer_takes_partitions_in_two_rounds_without_double_ownership():
    group = FakeGroup()
    clients = [Client(f"c{i}", group, ["cooperative-sticky"]) for i in range(2)]
    assert run(clients, 0, 3_000)
    before = assignment_of(clients)
    rebalances = group.rebalances
    mark = len(clients[0].log)
    clients.append(Client("c2", group, ["cooperative-sticky"], now=3_000))
    assert run(clients, 3_000, 8_000)   # the invariant held at every step
    after = assignment_of(clients)
    assert sorted(len(a) for a in after.values()) == [2, 2, 2]
    # sticky: the old members kept partitions they had
    for name in ("c0", "c1"):
        assert set(after[name]) <= set(before[name])
    # KIP-429: round 1 revokes from the old owners, round 2 assigns to the newcomer
    assert group.rebalances - rebalances == 2
    calls = [(type(o).__name__, o.partitions) for o in clients[0].log[mark:] if isinstance(o, out.LISTENER_OUTPUTS)]
    moved = tuple(sorted(set(before["c0"]) - set(after["c0"])))
    # round 1: revoke only what moves (after SyncGroup), assigned(empty); round 2: assigned(empty)
    assert calls == [("PartitionsRevoked", moved), ("PartitionsAssigned", ()), ("PartitionsAssigned", ())]


def test_eager_newcomer_revokes_everything_first():
    group = FakeGroup()
    clients = [Client(f"c{i}", group, ["range"]) for i in range(2)]
    assert run(clients, 0, 3_000)
    mark = len(clients[0].log)
    clients.append(Client("c2", group, ["range"], now=3_000))
    assert run(clients, 3_000, 6_000)
    calls = [(type(o).__name__, len(o.partitions)) for o in clients[0].log[mark:]
             if isinstance(o, out.LISTENER_OUTPUTS)]
    assert calls == [("PartitionsRevoked", 3), ("PartitionsAssigned", 2)]
