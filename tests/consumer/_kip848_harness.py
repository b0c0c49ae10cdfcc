"""Test harness for the KIP-848 membership (``group.protocol=consumer``) of the consumer core: a fake clock,
hand-built ConsumerGroupHeartbeat responses, request bookkeeping, members brought into a known state through the
public driver interface only.

Settings follow Kafka's ConsumerHeartbeatRequestManagerTest / ConsumerMembershipManagerTest where they matter
(heartbeat interval 1000 ms from the coordinator, retry backoff 100 ms, max.poll.interval.ms 10 s, server
assignor "uniform") so their expectations can be ported.
"""

from __future__ import annotations

import uuid
from typing import Any, Iterable, Optional

from consumer import outputs as out
from consumer.assignors import TopicPartition
from consumer.coordinator import ConsumerCoordinator
from protocol.api import ApiKey
from protocol.errors import ErrorCode as E
from protocol.messages import (ConsumerGroupHeartbeatResponse, FindCoordinatorResponse, OffsetCommitResponse,
                               OffsetFetchResponse)

GROUP = "group-id"
MEMBER = "member-id-1"
T1, T2 = "topic1", "topic2"
ID1, ID2 = uuid.UUID(int=101), uuid.UUID(int=202)
NODE = 1
INTERVAL = 1000          # DEFAULT_HEARTBEAT_INTERVAL_MS
RETRY_BACKOFF = 100      # DEFAULT_RETRY_BACKOFF_MS
MAX_POLL = 10_000        # DEFAULT_MAX_POLL_INTERVAL_MS

BASE = {"group.id": GROUP, "group.protocol": "consumer", "client.id": "consumer-1", "max.poll.interval.ms": MAX_POLL,
        "retry.backoff.ms": RETRY_BACKOFF, "retry.backoff.max.ms": 1000, "enable.auto.commit": False,
        "auto.commit.interval.ms": 5000, "group.remote.assignor": "uniform"}


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


def hb_response(*, epoch: int, assignment: Optional[dict] = None, error: E = E.NONE,
                interval: int = INTERVAL, member_id: str = MEMBER) -> ConsumerGroupHeartbeatResponse:
    """A ConsumerGroupHeartbeat response; ``assignment`` is {topic_id: [partitions]} (None: no assignment)."""
    body = ConsumerGroupHeartbeatResponse(error_code=int(error), member_id=member_id if error == E.NONE else None,
                                          member_epoch=epoch if error == E.NONE else -1,
                                          heartbeat_interval_ms=interval if error == E.NONE else 0)
    if assignment is not None:
        R = ConsumerGroupHeartbeatResponse.Assignment
        body.assignment = R(topic_partitions=[R.TopicPartitions(topic_id=t, partitions=sorted(ps))
                                              for t, ps in assignment.items()])
    return body


class Harness:
    def __init__(self, config: Optional[dict] = None, listener: Any = None,
                 topics: Iterable[str] = (T1,)) -> None:
        cfg = dict(BASE)
        cfg.update(config or {})
        self.now = 0
        self.listener = listener
        self.c = ConsumerCoordinator(cfg, now_ms=0, listener=listener, member_id=MEMBER)
        self.c.set_metadata({T1: 3, T2: 3}, {T1: ID1, T2: ID2})
        self.outputs: list = []
        self.pending: list[out.SendRequest] = []
        self.c.subscribe(list(topics))

    # --- plumbing ---------------------------------------------------------------------------------------------
    def pump(self) -> list:
        new = self.c.drain()
        self.outputs += new
        self.pending += [o for o in new if isinstance(o, out.SendRequest)]
        return new

    def advance(self, ms: int) -> None:
        self.now += ms

    def poll(self):
        r = self.c.poll(self.now)
        self.pump()
        return r

    def tick(self) -> None:
        self.c.tick(self.now)
        self.pump()

    def requests(self, api_key: int) -> list[out.SendRequest]:
        return [r for r in self.pending if r.api_key == api_key]

    def take(self, api_key: int) -> out.SendRequest:
        reqs = self.requests(api_key)
        assert reqs, f"no pending {ApiKey(api_key).name}; pending: {[ApiKey(r.api_key).name for r in self.pending]}"
        self.pending.remove(reqs[0])
        return reqs[0]

    def heartbeats(self) -> list:
        return self.requests(ApiKey.CONSUMER_GROUP_HEARTBEAT)

    def heartbeat_after(self, ms: int) -> out.SendRequest:
        """The next heartbeat goes out exactly ``ms`` from now: none 1 ms before, one then (taken)."""
        self.advance(ms - 1)
        self.tick()
        assert not self.heartbeats()
        self.advance(1)
        self.tick()
        return self.take(ApiKey.CONSUMER_GROUP_HEARTBEAT)

    def respond(self, req: out.SendRequest, response: Any) -> None:
        if req in self.pending:
            self.pending.remove(req)
        self.c.on_response(req.handle, response, self.now)
        self.pump()

    def listener_calls(self) -> list[tuple[str, tuple]]:
        names = {out.PartitionsRevoked: "revoked", out.PartitionsAssigned: "assigned", out.PartitionsLost: "lost"}
        return [(names[type(o)], o.partitions) for o in self.outputs if type(o) in names]

    def states(self) -> list[str]:
        return [o.new for o in self.outputs if isinstance(o, out.StateChanged) and o.old != o.new]

    # --- bringing the member into known states ---------------------------------------------------------------
    def find_coordinator(self) -> None:
        req = self.take(ApiKey.FIND_COORDINATOR)
        self.respond(req, FindCoordinatorResponse(coordinators=[FindCoordinatorResponse.Coordinator(
            key=GROUP, node_id=NODE, host="localhost", port=9092, error_code=0)]))

    def joining(self) -> out.SendRequest:
        """Subscribe + poll: JOINING, coordinator found; returns the first (full) heartbeat."""
        self.poll()
        self.find_coordinator()
        self.tick()
        return self.take(ApiKey.CONSUMER_GROUP_HEARTBEAT)

    def stable(self, assignment: Optional[dict] = None, epoch: int = 1) -> None:
        """JOINING -> (assignment) -> RECONCILING -> poll -> ACKNOWLEDGING -> ack heartbeat -> STABLE, ack answered."""
        hb = self.joining()
        self.respond(hb, hb_response(epoch=epoch, assignment=assignment if assignment is not None else {}))
        self.poll()  # reconcile; the ack goes in the same poll
        ack = self.take(ApiKey.CONSUMER_GROUP_HEARTBEAT)
        self.answer_fetch()
        self.respond(ack, hb_response(epoch=epoch))

    def answer_fetch(self, offsets: Optional[dict] = None) -> None:
        for req in list(self.requests(ApiKey.OFFSET_FETCH)):
            self.pending.remove(req)
            group = req.body.groups[0]
            G = OffsetFetchResponse.Group
            topics = [G.Topic(name=t.name, partitions=[G.Topic.Partition(
                partition_index=p, committed_offset=(offsets or {}).get(tp(t.name, p), -1), committed_leader_epoch=-1,
                metadata="", error_code=0) for p in t.partition_indexes]) for t in group.topics]
            self.c.on_response(req.handle, OffsetFetchResponse(groups=[G(group_id=GROUP, topics=topics,
                                                                          error_code=0)]), self.now)
            self.pump()

    def commit_response(self, req: out.SendRequest, error: E = E.NONE) -> OffsetCommitResponse:
        return OffsetCommitResponse(topics=[OffsetCommitResponse.Topic(name=t.name, partitions=[
            OffsetCommitResponse.Topic.Partition(partition_index=p.partition_index, error_code=int(error))
            for p in t.partitions]) for t in req.body.topics])
