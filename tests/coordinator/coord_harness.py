"""A fake-clock harness around GroupCoordinatorService: send requests, move time, read responses.

Expected values in these tests come from Kafka's rules (docs/coordinator.md, GroupMetadataManagerTest,
OffsetMetadataManagerTest), never from running kgroup.

After every call into the service the harness checks two contracts, so every test checks them too:

* **state equals the replay of the log**: every loaded shard's live groups and offsets are exactly what replaying
  its partition log gives (``GroupCoordinatorService.state_replay_mismatches``) -- the state changed only by
  records, and the records say everything;
* **the answer to the request just handled** (``Output.answer``) agrees with ``Output.responses``: a response is
  also listed there under the request's id, PARKED means not listed (nor abandoned), ABANDONED means abandoned.

Times are explicit: group.initial.rebalance.delay.ms = 3000 (Kafka's default), session 10000 and rebalance 30000
(``Env.join``'s defaults) unless a test says otherwise.
"""

from __future__ import annotations

from typing import Any

from coordinator import ABANDONED, PARKED, CoordinatorConfig, GroupCoordinatorService, RequestContext
from coordinator.replay import replay_live
from protocol.consumer_protocol import ConsumerProtocolSubscription, encode_subscription
from protocol.errors import ErrorCode
from protocol.messages import (DeleteGroupsRequest, DescribeGroupsRequest, HeartbeatRequest, JoinGroupRequest,
                               LeaveGroupRequest, ListGroupsRequest, OffsetCommitRequest, OffsetDeleteRequest,
                               OffsetFetchRequest, SyncGroupRequest)

E = ErrorCode


class MemoryStorage:
    """A log storage that outlives a service (``GroupCoordinatorService(storage=...)``): a second service given the
    same storage loads what the first one wrote, as a restarted broker loads its files."""

    def __init__(self) -> None:
        self.partitions: dict[int, list] = {}

    def open(self, partition: int):
        entries = self.partitions.setdefault(partition, [])
        return list(entries), _ListWriter(entries)


class _ListWriter:
    def __init__(self, entries: list) -> None:
        self.entries = entries

    def write(self, entry) -> None:
        self.entries.append(entry)

    def sync(self) -> None:
        pass

    def close(self) -> None:
        pass


def sub(*topics: str) -> bytes:
    return encode_subscription(ConsumerProtocolSubscription(topics=list(topics)))


class Env:
    def __init__(self, brokers: int = 3, seed: int = 7, **settings: Any) -> None:
        self.config = CoordinatorConfig.create(settings)
        self.svc = GroupCoordinatorService(num_brokers=brokers, config=self.config, seed=seed)
        for t in ("foo", "bar", "baz"):
            self.svc.cluster.create_topic(t, 3, 1)
        self.now = 0
        self._rid = 0
        self.responses: dict[int, Any] = {}
        self.abandoned: list[int] = []
        self.records: list = []
        self.answer_count: dict[int, int] = {}
        if self.config.coordinator_load_time_ms:  # the initial load of every offsets partition
            self.advance(self.config.coordinator_load_time_ms)

    # --- plumbing --------------------------------------------------------------------------------------------

    def _collect(self, out) -> None:
        mismatches = self.svc.state_replay_mismatches()
        assert not mismatches, "live state != replay of the log:\n" + "\n".join(mismatches)
        for rid, resp in out.responses:
            self.answer_count[rid] = self.answer_count.get(rid, 0) + 1
            self.responses[rid] = resp
        self.abandoned += out.abandoned
        self.records += out.records

    def send(self, req: Any, version: int, group_id: str | None = None, broker: int | None = None,
             client_id: str = "client") -> int:
        self._rid += 1
        rid = self._rid
        if broker is None:
            broker = self.svc.coordinator_of(group_id if group_id is not None else req.group_id)
        out = self.svc.handle(broker, req, RequestContext(rid, version, client_id=client_id), self.now)
        answered = [resp for r, resp in out.responses if r == rid]
        if out.answer is PARKED:
            assert not answered and rid not in out.abandoned
        elif out.answer is ABANDONED:
            assert not answered and rid in out.abandoned
        else:
            assert answered == [out.answer] and out.answer is answered[0]
        self._collect(out)
        return rid

    def advance(self, ms: int) -> None:
        self.now += ms
        self._collect(self.svc.poll(self.now))

    def advance_to(self, t: int) -> None:
        assert t >= self.now
        self.advance(t - self.now)

    def stop_broker(self, broker: int):
        out = self.svc.stop_broker(broker, self.now)
        self._collect(out)
        return out

    def start_broker(self, broker: int):
        out = self.svc.start_broker(broker, self.now)
        self._collect(out)
        return out

    def resp(self, rid: int) -> Any:
        return self.responses.get(rid)

    def err(self, rid: int) -> ErrorCode:
        r = self.responses[rid]
        return ErrorCode(r.error_code)

    def group(self, group_id: str = "g"):
        return self.svc.group(group_id)

    def state(self, group_id: str = "g") -> str:
        g = self.group(group_id)
        return "Dead" if g is None else str(g.state)

    def shard(self, group_id: str = "g"):
        return self.svc.shard_for(group_id)

    def timers(self, group_id: str = "g") -> dict[str, int]:
        return {k: v for k, v in self.shard(group_id).timers.snapshot().items() if k != "offsets-retention"}

    def types(self) -> list[str]:
        return [e.record.TYPE for e in self.records]

    # --- requests --------------------------------------------------------------------------------------------

    def join(self, group_id: str = "g", member_id: str = "", *, protocols=None, protocol_type: str = "consumer",
             session: int = 10_000, rebalance: int = 30_000, instance: str | None = None, version: int = 9,
             reason: str | None = None, client_id: str = "client") -> int:
        if protocols is None:
            protocols = [("range", sub("foo"))]
        req = JoinGroupRequest(group_id=group_id, session_timeout_ms=session, rebalance_timeout_ms=rebalance,
                               member_id=member_id, group_instance_id=instance, protocol_type=protocol_type,
                               protocols=[JoinGroupRequest.Protocol(name=n, metadata=m) for n, m in protocols],
                               reason=reason)
        return self.send(req, version, client_id=client_id)

    def join_new(self, group_id: str = "g", **kw: Any) -> tuple[str, int]:
        """v4+ dynamic join: MEMBER_ID_REQUIRED then the rejoin (parked). Returns (member_id, rid of the rejoin)."""
        rid = self.join(group_id, **kw)
        r = self.resp(rid)
        assert r.error_code == E.MEMBER_ID_REQUIRED, r
        return r.member_id, self.join(group_id, r.member_id, **kw)

    def sync(self, group_id: str, generation: int, member_id: str, assignments: dict[str, bytes] | None = None,
             *, instance: str | None = None, version: int = 5, protocol_type: str | None = "consumer",
             protocol_name: str | None = "range") -> int:
        req = SyncGroupRequest(group_id=group_id, generation_id=generation, member_id=member_id,
                               group_instance_id=instance, protocol_type=protocol_type, protocol_name=protocol_name,
                               assignments=[SyncGroupRequest.Assignment(member_id=k, assignment=v)
                                            for k, v in (assignments or {}).items()])
        return self.send(req, version)

    def heartbeat(self, group_id: str, generation: int, member_id: str, *, instance: str | None = None,
                  version: int = 4) -> int:
        return self.send(HeartbeatRequest(group_id=group_id, generation_id=generation, member_id=member_id,
                                          group_instance_id=instance), version)

    def leave(self, group_id: str, members: list[tuple[str, str | None]], version: int = 5) -> int:
        if version >= 3:
            req = LeaveGroupRequest(group_id=group_id, members=[
                LeaveGroupRequest.MemberIdentity(member_id=m, group_instance_id=i) for m, i in members])
        else:
            req = LeaveGroupRequest(group_id=group_id, member_id=members[0][0])
        return self.send(req, version)

    def commit(self, group_id: str, generation: int, member_id: str, offsets: dict[tuple[str, int], int],
               *, instance: str | None = None, version: int = 9, metadata: str | None = "",
               retention_ms: int = -1, leader_epoch: int = -1) -> int:
        by_topic: dict[str, list] = {}
        for (t, p), o in offsets.items():
            by_topic.setdefault(t, []).append(OffsetCommitRequest.Topic.Partition(
                partition_index=p, committed_offset=o, committed_metadata=metadata,
                committed_leader_epoch=leader_epoch))
        req = OffsetCommitRequest(group_id=group_id, generation_id_or_member_epoch=generation, member_id=member_id,
                                  group_instance_id=instance, retention_time_ms=retention_ms,
                                  topics=[OffsetCommitRequest.Topic(name=t, partitions=ps) for t, ps in by_topic.items()])
        return self.send(req, version)

    def commit_errors(self, rid: int) -> dict[tuple[str, int], ErrorCode]:
        return {(t.name, p.partition_index): ErrorCode(p.error_code)
                for t in self.resp(rid).topics for p in t.partitions}

    def fetch(self, group_id: str, topics: dict[str, list[int]] | None = None, version: int = 7,
              broker: int | None = None) -> int:
        if version >= 8:
            req = OffsetFetchRequest(groups=[OffsetFetchRequest.Group(
                group_id=group_id, topics=None if topics is None else [
                    OffsetFetchRequest.Group.Topic(name=t, partition_indexes=ps) for t, ps in topics.items()])])
        else:
            req = OffsetFetchRequest(group_id=group_id, topics=None if topics is None else [
                OffsetFetchRequest.Topic(name=t, partition_indexes=ps) for t, ps in topics.items()])
        return self.send(req, version, group_id=group_id, broker=broker)

    def fetched(self, rid: int) -> dict[tuple[str, int], tuple[int, int, str, ErrorCode]]:
        r = self.resp(rid)
        topics = r.groups[0].topics if r.groups else r.topics
        return {(t.name, p.partition_index): (p.committed_offset, p.committed_leader_epoch, p.metadata,
                                              ErrorCode(p.error_code)) for t in topics for p in t.partitions}

    def describe(self, *groups: str, version: int = 5) -> int:
        return self.send(DescribeGroupsRequest(groups=list(groups)), version, group_id=groups[0])

    def list_groups(self, broker: int, states=(), types=(), version: int = 5) -> int:
        return self.send(ListGroupsRequest(states_filter=list(states), types_filter=list(types)), version,
                         group_id="", broker=broker)

    def delete_groups(self, *groups: str, version: int = 2) -> int:
        return self.send(DeleteGroupsRequest(groups_names=list(groups)), version, group_id=groups[0])

    def offset_delete(self, group_id: str, topics: dict[str, list[int]]) -> int:
        return self.send(OffsetDeleteRequest(group_id=group_id, topics=[
            OffsetDeleteRequest.Topic(name=t, partitions=[OffsetDeleteRequest.Topic.Partition(partition_index=p)
                                                          for p in ps]) for t, ps in topics.items()]), 0)

    # --- scenarios -------------------------------------------------------------------------------------------

    def join_together(self, n: int, group_id: str = "g", **kw: Any) -> tuple[list[str], str, int]:
        """n dynamic members join together and the join phase completes (CompletingRebalance, nobody has synced).
        -> (member ids in join order, leader, generation)."""
        ids, rids = [], []
        for _ in range(n):
            mid, rid = self.join_new(group_id, **kw)
            ids.append(mid)
            rids.append(rid)
        self.complete_join(group_id)
        first = self.resp(rids[0])
        assert first is not None and first.error_code == 0, first
        return ids, first.leader, first.generation_id

    def stable_group(self, n: int, group_id: str = "g", **kw: Any) -> tuple[list[str], str, int]:
        """n dynamic members join together, the join completes, everybody syncs. -> (member ids, leader, gen)."""
        ids, leader, gen = self.join_together(n, group_id, **kw)
        g = self.group(group_id)
        srids = {m: self.sync(group_id, gen, m, {x: x.encode() for x in ids} if m == leader else None,
                              protocol_type=g.protocol_type, protocol_name=g.protocol_name)
                 for m in [leader] + [x for x in ids if x != leader]}
        for m, r in srids.items():
            assert self.err(r) == E.NONE
        assert self.state(group_id) == "Stable"
        return ids, leader, gen

    def complete_join(self, group_id: str = "g") -> None:
        """Advance time until the join phase completes."""
        for _ in range(100):
            if self.state(group_id) != "PreparingRebalance":
                return
            d = self.svc.next_deadline()
            assert d is not None
            self.advance_to(max(d, self.now))
        raise AssertionError("join never completed")

    def check_replay(self, group_id: str = "g") -> None:
        """The shard's state is exactly the replay of its log."""
        shard = self.shard(group_id)
        replayed = replay_live(shard.log.entries)
        live = {g.group_id: g for g in shard.groups}
        assert {g.group_id: g for g in replayed.groups} == live
        assert replayed.offsets.snapshot() == shard.offsets.snapshot()



# --- scenarios shared by several test files ----------------------------------------------------------------------

def two_member_stable(env: Env, **kw: Any) -> tuple[str, str, int]:
    """Two dynamic members, Stable: (leader, follower, generation)."""
    ids, leader, gen = env.stable_group(2, **kw)
    follower = [m for m in ids if m != leader][0]
    return leader, follower, gen


def described(env: Env, group: str = "g", version: int = 5) -> Any:
    """The DescribeGroups entry of ``group``."""
    return env.resp(env.describe(group, version=version)).groups[0]


def failover_env(**kw: Any) -> tuple[Env, list[str], str, int]:
    """Two members Stable with 30 s sessions and two committed offsets: (env, member ids, leader, generation)."""
    env = Env(**kw)
    ids, leader, gen = env.stable_group(2, session=30_000)
    env.commit("g", gen, leader, {("foo", 0): 42, ("foo", 1): 43}, metadata="m")
    return env, ids, leader, gen
