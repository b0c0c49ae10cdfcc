"""Test harness for the consumer core (consumer/coordinator.py and its parts): a fake clock, hand-built responses,
request bookkeeping, and members brought into a known state through the public interface.

Settings follow Kafka's ConsumerCoordinatorTest (session 10 s, heartbeat 5 s, rebalance 60 s, auto-commit 2 s,
retry backoff 100 ms) so expectations can be ported from it.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

from consumer import outputs as out
from consumer.assignors import Assignment, TopicPartition
from consumer.coordinator import ConsumerCoordinator
from protocol.api import APIS, ApiKey
from protocol.consumer_protocol import (ConsumerProtocolAssignment, ConsumerProtocolSubscription,
                                        encode_assignment, encode_subscription)
from protocol.errors import ErrorCode as E
from protocol.messages import (FindCoordinatorResponse, HeartbeatResponse, JoinGroupResponse, LeaveGroupResponse,
                               OffsetCommitResponse, OffsetFetchResponse, SyncGroupResponse)

GROUP = "group-id"
T1, T2 = "topic1", "topic2"
NODE = 1

BASE = {
    "group.id": GROUP, "client.id": "consumer-1", "session.timeout.ms": 10_000, "heartbeat.interval.ms": 5_000,
    "max.poll.interval.ms": 60_000, "auto.commit.interval.ms": 2_000, "retry.backoff.ms": 100,
    "partition.assignment.strategy": ["range"], "enable.auto.commit": False,
}


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


class Listener:
    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple]] = []

    def on_partitions_revoked(self, partitions):
        self.calls.append(("revoked", tuple(partitions)))

    def on_partitions_assigned(self, partitions):
        self.calls.append(("assigned", tuple(partitions)))

    def on_partitions_lost(self, partitions):
        self.calls.append(("lost", tuple(partitions)))


class Harness:
    def __init__(self, topics: Iterable[str] = (T1,), metadata: Optional[dict] = None,
                 config: Optional[dict] = None, listener: Any = None) -> None:
        cfg = dict(BASE)
        cfg.update(config or {})
        self.now = 0
        self.c = ConsumerCoordinator(cfg, now_ms=0, listener=listener)
        self.c.set_metadata(metadata if metadata is not None else {T1: 2, T2: 2})
        self.outputs: list = []
        self.pending: list[out.SendRequest] = []
        if topics:
            self.c.subscribe(topics)

    # --- plumbing -------------------------------------------------------------------------------------
    def collect(self) -> list:
        new = self.c.drain()
        for item in new:
            if isinstance(item, out.SendRequest):
                # every request must encode at its negotiated version
                APIS[item.api_key].request.encode(item.body, item.api_version)
                self.pending.append(item)
        self.outputs.extend(new)
        return new

    def poll(self, advance: int = 0):
        self.now += advance
        try:
            return self.c.poll(self.now)
        finally:
            self.collect()

    def tick(self, advance: int = 0) -> list:
        self.now += advance
        self.c.tick(self.now)
        return self.collect()

    def take(self, api: int) -> out.SendRequest:
        for i, req in enumerate(self.pending):
            if req.api_key == api:
                return self.pending.pop(i)
        raise AssertionError(f"no pending {ApiKey(api).name} request; pending: "
                             f"{[ApiKey(r.api_key).name for r in self.pending]}")

    def has(self, api: int) -> bool:
        return any(r.api_key == api for r in self.pending)

    def respond(self, req: out.SendRequest, response: Any, advance: int = 0) -> list:
        self.now += advance
        self.c.on_response(req.handle, response, self.now)
        return self.collect()

    def events(self, *kinds: type) -> list:
        kinds = kinds or out.LISTENER_OUTPUTS
        return [o for o in self.outputs if isinstance(o, kinds)]

    def callbacks(self) -> list[tuple[str, tuple]]:
        names = {out.PartitionsRevoked: "revoked", out.PartitionsAssigned: "assigned", out.PartitionsLost: "lost"}
        return [(names[type(o)], o.partitions) for o in self.outputs if type(o) in names]

    def clear(self) -> None:
        self.outputs.clear()

    # --- flows ------------------------------------------------------------------------------------------
    def discover(self) -> None:
        self.poll()
        self.respond(self.take(ApiKey.FIND_COORDINATOR), find_coordinator_response())
        assert self.c.coordinator is not None

    def join(self, *, generation: int = 1, member_id: str = "consumer", leader: str = "leader",
             protocol: str = "range", assigned: Iterable = (), members: Optional[list] = None,
             join_error: E = E.NONE) -> None:
        """Poll until a JoinGroup is pending, answer it and the SyncGroup, and poll once more."""
        if self.c.coordinator is None:
            self.discover()
        self.poll()
        self.respond(self.take(ApiKey.JOIN_GROUP),
                     join_group_response(generation, member_id, leader, protocol, members or []))
        self.respond(self.take(ApiKey.SYNC_GROUP), sync_group_response(list(assigned), protocol_name=protocol))
        self.poll()


# --- members in a known state ---------------------------------------------------------------------------
P0, P1 = tp(T1, 0), tp(T1, 1)
EAGER = {"partition.assignment.strategy": ["range"]}
COOP = {"partition.assignment.strategy": ["cooperative-sticky"]}


def stable(config=None, assigned=((T1, 0),)):
    """A STABLE member of generation 1 whose positions are known (committed offset 5), nothing pending."""
    h = Harness(config=config)
    h.join(assigned=list(assigned))
    h.respond(h.take(ApiKey.OFFSET_FETCH), offset_fetch_response({a: 5 for a in assigned}))
    assert not h.pending
    h.clear()
    return h


def joined(config=None, assigned=(P0, P1), committed=None, generation=1, protocol="range"):
    """A member that joined and fetched its positions (committed offset 10 unless given); outputs cleared."""
    h = Harness(config=config)
    h.join(assigned=list(assigned), generation=generation, protocol=protocol)
    if assigned:
        h.respond(h.take(ApiKey.OFFSET_FETCH),
                  offset_fetch_response(committed if committed is not None else {a: 10 for a in assigned}))
    h.clear()
    return h


def joined_and_polled(config, topics=(T1,), assigned=((T1, 0), (T1, 1)), generation=1, protocol="range",
                      listener=None):
    """Like :func:`joined` (committed offset 10), and polled once more after the positions arrived."""
    h = Harness(topics=topics, config=config, listener=listener)
    h.join(assigned=list(assigned), generation=generation, protocol=protocol)
    if assigned:
        h.respond(h.take(ApiKey.OFFSET_FETCH), offset_fetch_response({a: 10 for a in assigned}))
    h.poll()
    h.clear()
    return h


def rejoin(h, generation, assigned, protocol="range"):
    """Poll into a JoinGroup and answer it and the SyncGroup (generation, assignment); poll once more."""
    h.poll()
    h.respond(h.take(ApiKey.JOIN_GROUP), join_group_response(generation, "consumer", "leader", protocol))
    h.respond(h.take(ApiKey.SYNC_GROUP), sync_group_response(list(assigned), protocol_name=protocol))
    h.poll()


# --- response builders ---------------------------------------------------------------------------------
def find_coordinator_response(error: E = E.NONE, node: int = NODE, v4: bool = True):
    if v4:
        return FindCoordinatorResponse(coordinators=[FindCoordinatorResponse.Coordinator(
            key=GROUP, node_id=node if error == E.NONE else -1, host="localhost", port=9092 + node,
            error_code=error)])
    return FindCoordinatorResponse(error_code=error, node_id=node, host="localhost", port=9092 + node)


def subscription_bytes(topics, owned=(), generation=-1) -> bytes:
    grouped: dict = {}
    for t, p in owned:
        grouped.setdefault(t, []).append(p)
    return encode_subscription(ConsumerProtocolSubscription(sorted(topics), None, sorted(grouped.items()),
                                                            generation))


def join_group_response(generation: int, member_id: str, leader: str, protocol: str = "range",
                        members: Iterable = (), error: E = E.NONE, protocol_type: Optional[str] = "consumer",
                        skip_assignment: bool = False):
    return JoinGroupResponse(
        error_code=error, generation_id=generation if error == E.NONE else -1,
        protocol_type=protocol_type if error == E.NONE else None,
        protocol_name=protocol if error == E.NONE else None, leader=leader, member_id=member_id,
        skip_assignment=skip_assignment,
        members=[JoinGroupResponse.Member(member_id=m, group_instance_id=None, metadata=md) for m, md in members])


def assignment_bytes(partitions) -> bytes:
    grouped: dict = {}
    for t, p in partitions:
        grouped.setdefault(t, []).append(p)
    return encode_assignment(ConsumerProtocolAssignment(list(grouped.items()), None))


def sync_group_response(partitions=(), error: E = E.NONE, protocol_name: Optional[str] = "range",
                        raw: Optional[bytes] = None):
    return SyncGroupResponse(error_code=error, protocol_type="consumer" if error == E.NONE else None,
                             protocol_name=protocol_name if error == E.NONE else None,
                             assignment=raw if raw is not None else (assignment_bytes(partitions)
                                                                     if error == E.NONE else b""))


def heartbeat_response(error: E = E.NONE):
    return HeartbeatResponse(error_code=error)


def leave_group_response(error: E = E.NONE, member: str = "consumer"):
    return LeaveGroupResponse(error_code=error, members=[
        LeaveGroupResponse.MemberResponse(member_id=member, group_instance_id=None, error_code=0)])


def offset_commit_response(errors: dict):
    by_topic: dict = {}
    for (t, p), err in sorted(errors.items()):
        by_topic.setdefault(t, []).append(OffsetCommitResponse.Topic.Partition(partition_index=p, error_code=err))
    return OffsetCommitResponse(topics=[OffsetCommitResponse.Topic(name=t, partitions=ps)
                                        for t, ps in by_topic.items()])


def commit_request_offsets(req) -> dict:
    return {tp(t.name, p.partition_index): p.committed_offset for t in req.body.topics for p in t.partitions}


def offset_fetch_response(offsets: dict, error: E = E.NONE, partition_error: E = E.NONE):
    by_topic: dict = {}
    for (t, p), off in sorted(offsets.items()):
        by_topic.setdefault(t, []).append(OffsetFetchResponse.Group.Topic.Partition(
            partition_index=p, committed_offset=off, committed_leader_epoch=-1, metadata="",
            error_code=partition_error))
    return OffsetFetchResponse(groups=[OffsetFetchResponse.Group(
        group_id=GROUP, error_code=error,
        topics=[OffsetFetchResponse.Group.Topic(name=t, partitions=ps) for t, ps in by_topic.items()])])


class BadCooperativeAssignor:
    """A custom COOPERATIVE assignor that moves an owned partition directly (violates KIP-429)."""

    name = "bad-cooperative"
    rebalance_protocols = ("COOPERATIVE", "EAGER")

    def assign(self, partitions_per_topic, subscriptions):
        members = sorted(subscriptions)
        owned = {m: set(subscriptions[m].owned_partitions) for m in members}
        everything = [tp(t, p) for t in sorted(partitions_per_topic) for p in range(partitions_per_topic[t])]
        # give everything to the last member, even partitions another member owns
        return {m: Assignment(tuple(everything) if m == members[-1] else ()) for m in members} if owned else {}

    def subscription_user_data(self, topics, owned_partitions, generation_id):
        return None

    def on_assignment(self, assignment, generation_id):
        return None
