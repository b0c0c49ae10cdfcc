"""The coordinator as the drivers see it: a whole cluster's group coordination, sans-IO.

:class:`GroupCoordinatorService` plays every broker's ``GroupCoordinatorService`` + ``KafkaApis`` for the group
APIs. Both drivers -- the asyncio TCP server and the virtual-time simulator -- use it the same way:

* ``handle(broker_id, request, ctx, now_ms) -> Output`` for a decoded request that arrived at ``broker_id``.
  ``ctx`` (:class:`RequestContext`) carries the driver's opaque ``request_id``, the API version and the header's
  client id / the client's address.
* ``poll(now_ms) -> Output`` fires every timer due by ``now_ms`` (session expiry, join/initial/sync timeouts,
  pending members, offset expiry, end of a partition load). ``next_deadline()`` says when the next one is due
  (``None``: nothing scheduled). ``handle`` polls first, so calling ``poll`` before ``handle`` is optional.
* ``stop_broker`` / ``start_broker`` / ``elect_preferred_leaders`` (``-> Output``) move leaderships; the offsets
  partitions that move are unloaded from the old leader and loaded by the new one. ``elect_leader`` (one
  partition) and ``expire_sessions`` (members' sessions end now) are what fault control uses.

:class:`Output` is everything one call produced: ``responses`` -- ``(request_id, response)`` pairs, for the request
just handled *and/or* for earlier parked ones (a JoinGroup is answered when the join phase completes, a SyncGroup
when the leader's assignment arrives, both possibly from a timer); ``abandoned`` -- request ids Kafka would never
answer (a JoinGroup replaced by a newer one from the same member, parked requests of a broker that was stopped:
the driver should treat these as a timeout or a closed connection); ``records`` -- log entries appended (the
rebalance log); ``leadership`` -- leader changes of any partition.

Invariants: time never goes backwards (``now_ms`` smaller than a previous call raises ``ValueError``); at most one
response per request id; every parked request is eventually answered or abandoned unless it is still parked.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from typing import Any, Protocol

from protocol.errors import ErrorCode
from protocol.messages import (DeleteGroupsResponse, DescribeGroupsResponse, FindCoordinatorResponse,
                               HeartbeatResponse, LeaveGroupResponse, ListGroupsResponse,
                               OffsetCommitResponse, OffsetDeleteResponse, OffsetFetchResponse, SyncGroupResponse)

from coordinator.cluster import NO_LEADER, OFFSETS_TOPIC, Cluster, LeadershipChange
from coordinator.config import CoordinatorConfig
from coordinator.group import ClassicGroup
from coordinator.log import LogWriter, PartitionLog
from coordinator.manager import Ctx, GroupCoordinatorShard, _finish_join_response, join_error, session_timer
from coordinator.records import LogEntry

E = ErrorCode


class LogStorage(Protocol):
    """Where the driver keeps the offsets partition logs (``broker/storage.py``): ``open(partition)`` returns the
    entries already stored and the writer for new ones."""

    def open(self, partition: int) -> tuple[list[LogEntry], LogWriter]: ...


class BrokerStopped(RuntimeError):
    """A request was delivered to a stopped broker (the driver should have failed the connection)."""


@dataclass(slots=True)
class RequestContext:
    request_id: Any
    api_version: int
    client_id: str = ""
    client_host: str = "/127.0.0.1"


@dataclass(slots=True)
class Output:
    responses: list[tuple[Any, Any]] = field(default_factory=list)
    abandoned: list[Any] = field(default_factory=list)
    records: list[LogEntry] = field(default_factory=list)
    leadership: list[LeadershipChange] = field(default_factory=list)

    def response(self, request_id: Any) -> Any | None:
        for rid, resp in self.responses:
            if rid == request_id:
                return resp
        return None

    def extend(self, other: "Output") -> "Output":
        self.responses += other.responses
        self.abandoned += other.abandoned
        self.records += other.records
        self.leadership += other.leadership
        return self


@dataclass
class _Slot:
    """The coordinator of one offsets partition: which broker hosts it, and whether it is still loading."""

    broker_id: int
    shard: GroupCoordinatorShard
    loaded_at_ms: int | None  # None: loaded; else the load completes at this time
    leader_epoch: int


class GroupCoordinatorService:
    def __init__(self, cluster: Cluster | None = None, *, config: CoordinatorConfig | None = None,
                 num_brokers: int = 3, seed: int = 0, storage: LogStorage | None = None,
                 start_ms: int = 0) -> None:
        self.cluster = cluster if cluster is not None else Cluster.with_brokers(num_brokers, config, seed)
        self.config = self.cluster.config
        self._rng = random.Random(seed)
        self._storage = storage
        self.logs: dict[int, PartitionLog] = {}
        self.slots: dict[int, _Slot] = {}
        self.now_ms = start_ms
        # The next deadline of every slot (the end of its load, else its shard's next timer), cached: a partition
        # is re-read only when it is in ``_changed`` -- its timer queue changed (TimerQueue.watch), or its slot
        # was created, dropped or finished loading. ``_deadline_min`` is the minimum over ``_deadlines`` (which
        # holds only partitions that have a deadline). So ``next_deadline`` and the "nothing is due" check of
        # every call are O(1) instead of a scan of all offsets partitions.
        self._deadlines: dict[int, int] = {}
        self._deadline_min: int | None = None
        self._changed: set[int] = set()
        self._partition_of: dict[str, int] = {}  # group id -> offsets partition (Java string hash: ~5 us)
        self._partition_n = self.config.offsets_topic_num_partitions
        self._handlers: dict[type, Any] = {}
        out = Ctx(start_ms)
        if self.cluster.ensure_offsets_topic():
            self._sync_leadership(out, answer_unloaded=True)
        for lg in self.logs.values():
            lg.sync()

    # --- helpers ---------------------------------------------------------------------------------------------

    def _new_uuid(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    def log(self, partition: int) -> PartitionLog:
        lg = self.logs.get(partition)
        if lg is None:
            if self._storage is None:
                lg = PartitionLog(partition)
            else:
                entries, writer = self._storage.open(partition)
                lg = PartitionLog(partition, entries, writer)
            self.logs[partition] = lg
        return lg

    def partition_for(self, group_id: str) -> int:
        cache = self._partition_of
        p = cache.get(group_id)
        if p is None or self._partition_n != self.config.offsets_topic_num_partitions:
            if self._partition_n != self.config.offsets_topic_num_partitions or len(cache) >= 100_000:
                cache.clear()
                self._partition_n = self.config.offsets_topic_num_partitions
            p = cache[group_id] = self.cluster.offsets_partition_for(group_id)
        return p

    def _output(self, ctx: Ctx, leadership: list[LeadershipChange] | None = None) -> Output:
        records = ctx.records
        if records:  # end of the batch: sync the logs this call appended to (only those can have unsynced data)
            logs = self.logs
            for p in {e.partition for e in records}:
                logs[p].sync()
        return Output(ctx.responses, ctx.abandoned, records, list(leadership) if leadership else [])

    def _set_time(self, now_ms: int) -> None:
        if now_ms < self.now_ms:
            raise ValueError(f"time went backwards: now_ms={now_ms} < {self.now_ms}")
        self.now_ms = now_ms

    # --- leadership and loading ------------------------------------------------------------------------------

    def _sync_leadership(self, ctx: Ctx, answer_unloaded: bool) -> None:
        for ps in self.cluster.partitions(OFFSETS_TOPIC):
            p = ps.partition
            slot = self.slots.get(p)
            if slot is not None and slot.broker_id == ps.leader and slot.leader_epoch == ps.leader_epoch:
                continue
            if slot is not None and slot.broker_id == ps.leader:
                slot.leader_epoch = ps.leader_epoch
                continue
            self._changed.add(p)
            if slot is not None:
                alive = self.cluster.is_alive(slot.broker_id)
                slot.shard.unload(ctx, answer=alive and answer_unloaded)
                del self.slots[p]
            if ps.leader == NO_LEADER:
                continue
            shard = GroupCoordinatorShard(p, self.log(p), self.config, ps.leader, self._new_uuid)
            shard.timers.watch(self._changed, p)
            load_time = self.config.coordinator_load_time_ms
            slot = _Slot(ps.leader, shard, ctx.now_ms + load_time if load_time > 0 else None, ps.leader_epoch)
            self.slots[p] = slot
            if slot.loaded_at_ms is None:
                shard.load(ctx, ps.leader_epoch)

    def _refresh_deadlines(self) -> int | None:
        """Re-read the deadlines of the partitions that changed since the last call; return the minimum."""
        changed = self._changed
        if not changed:
            return self._deadline_min
        cache, slots = self._deadlines, self.slots
        d_min = self._deadline_min
        rescan = False
        for p in changed:
            slot = slots.get(p)
            if slot is None:
                new = None
            elif slot.loaded_at_ms is not None:
                new = slot.loaded_at_ms
            else:
                new = slot.shard.timers.next_deadline()
            old = cache.get(p)
            if new is None:
                if old is not None:
                    del cache[p]
            else:
                cache[p] = new
            if new is not None and (d_min is None or new < d_min):
                d_min = new
            elif old is not None and old == d_min and new != old:
                rescan = True  # the minimum may have moved later (or gone away)
        changed.clear()
        if rescan:
            d_min = min(cache.values(), default=None)
        self._deadline_min = d_min
        return d_min

    def verify_next_deadline(self) -> None:
        """Test aid: raise AssertionError unless the cached deadlines equal a scan of every slot."""
        scan = {}
        for p, slot in self.slots.items():
            d = slot.loaded_at_ms if slot.loaded_at_ms is not None else slot.shard.next_deadline()
            if d is not None:
                scan[p] = d
        d_min = self._refresh_deadlines()
        if scan != self._deadlines or d_min != min(scan.values(), default=None):
            raise AssertionError(f"deadline cache {self._deadlines} (min {d_min}) != scan {scan}")

    def _advance(self, ctx: Ctx, now_ms: int) -> None:
        """Fire everything due by ``now_ms`` in time order (ties: partition order)."""
        d_min = self._refresh_deadlines()
        while d_min is not None and d_min <= now_ms:
            t, p = min((d, p) for p, d in self._deadlines.items() if d <= now_ms)
            ctx.now_ms = max(ctx.now_ms, t)
            slot = self.slots[p]
            if slot.loaded_at_ms is not None:
                slot.loaded_at_ms = None
                self._changed.add(p)
                slot.shard.load(ctx, slot.leader_epoch)
            else:
                slot.shard.fire_due(ctx, t)
            d_min = self._refresh_deadlines()
        ctx.now_ms = now_ms

    def next_deadline(self) -> int | None:
        """When the next timer (or partition load) is due; None if nothing is scheduled. O(1) (cached)."""
        return self._refresh_deadlines()

    def poll(self, now_ms: int) -> Output:
        self._set_time(now_ms)
        ctx = Ctx(now_ms)
        self._advance(ctx, now_ms)
        return self._output(ctx)

    def _leadership_op(self, now_ms: int, op) -> Output:
        self._set_time(now_ms)
        ctx = Ctx(now_ms)
        self._advance(ctx, now_ms)
        changes = op()
        if self.cluster.ensure_offsets_topic():
            self._sync_leadership(ctx, answer_unloaded=True)
        return self._output(ctx, changes)

    def stop_broker(self, broker_id: int, now_ms: int) -> Output:
        """Stop a broker: its connections drop (its parked requests are abandoned), its leaderships move."""
        return self._leadership_op(now_ms, lambda: self.cluster.stop_broker(broker_id))

    def start_broker(self, broker_id: int, now_ms: int) -> Output:
        return self._leadership_op(now_ms, lambda: self.cluster.start_broker(broker_id))

    def elect_preferred_leaders(self, now_ms: int) -> Output:
        """Leadership moves while the old leader stays up: its parked requests get NOT_COORDINATOR."""
        return self._leadership_op(now_ms, self.cluster.elect_preferred_leaders)

    def elect_leader(self, topic: str, partition: int, broker_id: int, now_ms: int) -> Output:
        """Elect ``broker_id`` leader of one partition (``Cluster.elect_leader``); for an offsets partition the old
        coordinator unloads its groups (parked requests get NOT_COORDINATOR) and the new one loads them. Raises
        ClusterError before anything happens if the broker cannot lead it."""
        self.cluster.check_leader_candidate(topic, partition, broker_id)
        return self._leadership_op(now_ms, lambda: self.cluster.elect_leader(topic, partition, broker_id))

    def expire_sessions(self, group_id: str, member_ids: list[str], now_ms: int) -> Output:
        """Expire these members' sessions now, as if their session timeouts had just passed: each member's
        session timer is re-armed at ``now_ms`` and fires (``GroupCoordinator.onExpireHeartbeat``), in the
        order given, after every timer already due. Raises ValueError if the group's coordinator is not loaded
        on a live broker."""
        shard = self.shard_for(group_id)
        if shard is None:
            raise ValueError(f"group {group_id!r} is not loaded on a live coordinator")
        self._set_time(now_ms)
        for member_id in member_ids:
            key, action = session_timer(group_id, member_id)
            shard.timers.schedule(key, now_ms, action)
        ctx = Ctx(now_ms)
        self._advance(ctx, now_ms)
        return self._output(ctx)

    # --- introspection ---------------------------------------------------------------------------------------

    def coordinator_of(self, group_id: str) -> int:
        return self.cluster.coordinator_for(group_id)

    def shard_for(self, group_id: str) -> GroupCoordinatorShard | None:
        slot = self.slots.get(self.partition_for(group_id))
        return None if slot is None or slot.loaded_at_ms is not None else slot.shard

    def group(self, group_id: str) -> ClassicGroup | None:
        shard = self.shard_for(group_id)
        return None if shard is None else shard.groups.get(group_id)

    def committed_offsets(self, group_id: str) -> dict[tuple[str, int], Any]:
        shard = self.shard_for(group_id)
        return {} if shard is None else shard.offsets.group_offsets(group_id)

    # --- requests --------------------------------------------------------------------------------------------

    def _route(self, broker_id: int, group_id: str) -> tuple[GroupCoordinatorShard | None, ErrorCode | None]:
        p = self.partition_for(group_id)
        ps = self.cluster.partition(OFFSETS_TOPIC, p)
        slot = self.slots.get(p)
        if ps is None or ps.leader != broker_id or slot is None or slot.broker_id != broker_id:
            return None, E.NOT_COORDINATOR
        if slot.loaded_at_ms is not None:
            return None, E.COORDINATOR_LOAD_IN_PROGRESS
        return slot.shard, None

    def handle(self, broker_id: int, request: Any, ctx: RequestContext, now_ms: int) -> Output:
        if not self.cluster.is_alive(broker_id):
            raise BrokerStopped(f"broker {broker_id} is stopped")
        self._set_time(now_ms)
        c = Ctx(now_ms)
        d_min = self._deadline_min
        if self._changed or (d_min is not None and d_min <= now_ms):  # else nothing can be due: skip _advance
            self._advance(c, now_ms)
        handler = self._handlers.get(type(request))
        if handler is None:
            name = type(request).__name__
            handler = getattr(type(self), "_h_" + name, None)
            if handler is None:
                raise ValueError(f"the coordinator does not handle {name}")
            self._handlers[type(request)] = handler
        handler(self, broker_id, request, ctx, c)
        return self._output(c)

    # FindCoordinator ------------------------------------------------------------------------------------------

    def _h_FindCoordinatorRequest(self, broker_id: int, req: Any, rc: RequestContext, c: Ctx) -> None:
        v = rc.api_version
        keys = list(req.coordinator_keys) if v >= 4 else [req.key]
        results = []
        for key in keys:
            if req.key_type != 0:
                results.append((key, E.INVALID_REQUEST, -1, "", -1, "kgroup only coordinates groups (key_type 0)"))
                continue
            if not self.cluster.ensure_offsets_topic():
                results.append((key, E.COORDINATOR_NOT_AVAILABLE, -1, "", -1, None))
                continue
            self._sync_leadership(c, answer_unloaded=True)
            leader = self.cluster.coordinator_for(key)
            if leader == NO_LEADER:
                results.append((key, E.COORDINATOR_NOT_AVAILABLE, -1, "", -1, None))
            else:
                b = self.cluster.brokers[leader]
                results.append((key, E.NONE, leader, b.host, b.port, None))
        # KafkaApis: v4+ coordinators carry no error message (only kgroup's own key_type refusal explains
        # itself); v0-3 carry Errors.message(), which is "NONE" on success (Errors.NONE has no exception,
        # so message() falls back to the enum name) and the exception's default message otherwise.
        if v >= 4:
            resp = FindCoordinatorResponse(coordinators=[
                FindCoordinatorResponse.Coordinator(key=k, node_id=n, host=h, port=pt, error_code=int(e),
                                                    error_message=msg)
                for k, e, n, h, pt, msg in results])
        else:
            k, e, n, h, pt, msg = results[0]
            resp = FindCoordinatorResponse(error_code=int(e),
                                           error_message="NONE" if e == E.NONE else (msg or e.message),
                                           node_id=n, host=h, port=pt)
        c.respond(rc.request_id, resp)

    # JoinGroup / SyncGroup / Heartbeat / LeaveGroup -----------------------------------------------------------

    def _h_JoinGroupRequest(self, broker_id: int, req: Any, rc: RequestContext, c: Ctx) -> None:
        v = rc.api_version

        def err(e: ErrorCode) -> None:
            c.respond(rc.request_id, _finish_join_response(join_error(e, req.member_id), v))

        if not req.group_id:
            return err(E.INVALID_GROUP_ID)
        if not (self.config.group_min_session_timeout_ms <= req.session_timeout_ms
                <= self.config.group_max_session_timeout_ms):
            return err(E.INVALID_SESSION_TIMEOUT)
        shard, e = self._route(broker_id, req.group_id)
        if e is not None:
            # GroupCoordinatorService.joinGroup: runtime errors (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS)
            # are answered with a fresh JoinGroupResponseData, i.e. member id "" (unlike the checks above).
            return c.respond(rc.request_id, _finish_join_response(join_error(e, ""), v))
        shard.join_group(c, req, v, rc.request_id, rc.client_id, rc.client_host)

    def _h_SyncGroupRequest(self, broker_id: int, req: Any, rc: RequestContext, c: Ctx) -> None:
        v = rc.api_version

        def err(e: ErrorCode) -> None:
            c.respond(rc.request_id, SyncGroupResponse(error_code=int(e), assignment=b""))

        if v >= 5 and (req.protocol_type is None or req.protocol_name is None):
            return err(E.INCONSISTENT_GROUP_PROTOCOL)  # KafkaApis: mandatory from v5 (KIP-559)
        if not req.group_id:
            return err(E.INVALID_GROUP_ID)
        shard, e = self._route(broker_id, req.group_id)
        if e is not None:
            return err(e)  # the new coordinator answers COORDINATOR_LOAD_IN_PROGRESS while loading
        shard.sync_group(c, req, v, rc.request_id)

    def _h_HeartbeatRequest(self, broker_id: int, req: Any, rc: RequestContext, c: Ctx) -> None:
        if not req.group_id:
            return c.respond(rc.request_id, HeartbeatResponse(error_code=int(E.INVALID_GROUP_ID)))
        shard, e = self._route(broker_id, req.group_id)
        if e == E.COORDINATOR_LOAD_IN_PROGRESS:
            return c.respond(rc.request_id, HeartbeatResponse(error_code=0))  # "respond blindly" while loading
        if e is not None:
            return c.respond(rc.request_id, HeartbeatResponse(error_code=int(e)))
        shard.heartbeat(c, req, rc.api_version, rc.request_id)

    def _h_LeaveGroupRequest(self, broker_id: int, req: Any, rc: RequestContext, c: Ctx) -> None:
        if not req.group_id:
            return c.respond(rc.request_id, LeaveGroupResponse(error_code=int(E.INVALID_GROUP_ID)))
        shard, e = self._route(broker_id, req.group_id)
        if e is not None:
            return c.respond(rc.request_id, LeaveGroupResponse(error_code=int(e)))
        shard.leave_group(c, req, rc.api_version, rc.request_id)

    # Offsets --------------------------------------------------------------------------------------------------

    def _split_unknown_partitions(self, topics: list[Any], response_topic: type) -> tuple[list[Any], list[Any]]:
        """KafkaApis' pre-check for OffsetCommit/OffsetDelete: (response topics answering every partition the
        cluster does not have with UNKNOWN_TOPIC_OR_PARTITION, request topics holding only known partitions);
        both keep request order."""
        unknown: list[Any] = []
        known: list[Any] = []
        for t in topics:
            bad = [p for p in t.partitions if not self.cluster.has_partition(t.name, p.partition_index)]
            if bad:
                unknown.append(response_topic(name=t.name, partitions=[
                    response_topic.Partition(partition_index=p.partition_index,
                                             error_code=int(E.UNKNOWN_TOPIC_OR_PARTITION))
                    for p in bad]))
            good = [p for p in t.partitions if self.cluster.has_partition(t.name, p.partition_index)]
            if good:
                known.append(type(t)(name=t.name, partitions=good))
        return unknown, known

    def _h_OffsetCommitRequest(self, broker_id: int, req: Any, rc: RequestContext, c: Ctx) -> None:
        # KafkaApis.handleOffsetCommitRequest: partitions of unknown topics/partitions are answered by the API layer
        # (UNKNOWN_TOPIC_OR_PARTITION, in request order); if nothing is left the response goes out at once, else
        # the rest goes to the coordinator and OffsetCommitResponse.Builder.merge appends its answer (partitions of
        # a topic already present are added after the API layer's ones).
        api_topics, forwarded = self._split_unknown_partitions(req.topics, OffsetCommitResponse.Topic)
        if not forwarded:
            return c.respond(rc.request_id, OffsetCommitResponse(topics=api_topics))
        shard, e = self._route(broker_id, req.group_id)
        if e is not None:  # OffsetCommitRequest.getErrorResponse over the forwarded partitions
            coordinator_resp = OffsetCommitResponse(topics=[
                OffsetCommitResponse.Topic(name=t.name, partitions=[
                    OffsetCommitResponse.Topic.Partition(partition_index=p.partition_index, error_code=int(e))
                    for p in t.partitions]) for t in forwarded])
        else:
            fwd = type(req)(**{name: getattr(req, name) for name in req.__slots__})
            fwd.topics = forwarded
            sub = Ctx(c.now_ms)
            shard.offset_commit(sub, fwd, rc.api_version, rc.request_id)
            c.records += sub.records
            (_, coordinator_resp), = sub.responses
        if not api_topics:
            return c.respond(rc.request_id, coordinator_resp)
        resp = OffsetCommitResponse(topics=api_topics)
        by_topic = {t.name: t for t in resp.topics}
        for t in coordinator_resp.topics:
            if t.name in by_topic:
                by_topic[t.name].partitions.extend(t.partitions)
            else:
                resp.topics.append(t)
                by_topic[t.name] = t
        c.respond(rc.request_id, resp)

    def _fetch_group(self, broker_id: int, group_id: str, topics: list[tuple[str, list[int]]] | None
                     ) -> tuple[ErrorCode, list[tuple[str, list[tuple[int, int, int, str]]]]]:
        shard, e = self._route(broker_id, group_id)
        if e is not None:
            return e, []
        return E.NONE, shard.fetch_offsets(group_id, topics)

    def _h_OffsetFetchRequest(self, broker_id: int, req: Any, rc: RequestContext, c: Ctx) -> None:
        v = rc.api_version
        if v >= 8:
            groups = []
            for grp in req.groups:
                topics = None if grp.topics is None else [(t.name, list(t.partition_indexes)) for t in grp.topics]
                e, rows = self._fetch_group(broker_id, grp.group_id, topics)
                groups.append(OffsetFetchResponse.Group(group_id=grp.group_id, error_code=int(e), topics=[
                    OffsetFetchResponse.Group.Topic(name=t, partitions=[
                        OffsetFetchResponse.Group.Topic.Partition(partition_index=p, committed_offset=o,
                                                                  committed_leader_epoch=ep, metadata=md,
                                                                  error_code=0)
                        for p, o, ep, md in parts]) for t, parts in rows]))
            c.respond(rc.request_id, OffsetFetchResponse(groups=groups))
            return
        topics = None if req.topics is None else [(t.name, list(t.partition_indexes)) for t in req.topics]
        e, rows = self._fetch_group(broker_id, req.group_id, topics)
        if e != E.NONE and v < 2:
            # v0/v1 have no top-level error: every requested partition carries it, with offset -1.
            rows = [(t, [(p, -1, -1, "") for p in parts]) for t, parts in (topics or [])]
            part_err = int(e)
        else:
            part_err = 0
        resp = OffsetFetchResponse(error_code=int(e) if v >= 2 else 0, topics=[
            OffsetFetchResponse.Topic(name=t, partitions=[
                OffsetFetchResponse.Topic.Partition(partition_index=p, committed_offset=o, committed_leader_epoch=ep,
                                                    metadata=md, error_code=part_err)
                for p, o, ep, md in parts]) for t, parts in rows])
        c.respond(rc.request_id, resp)

    def _h_OffsetDeleteRequest(self, broker_id: int, req: Any, rc: RequestContext, c: Ctx) -> None:
        if not req.group_id:
            return c.respond(rc.request_id, OffsetDeleteResponse(error_code=int(E.INVALID_GROUP_ID)))
        # KafkaApis.handleOffsetDeleteRequest: partitions of unknown topics/partitions are answered by the API layer
        # (UNKNOWN_TOPIC_OR_PARTITION, in request order); the rest -- possibly nothing -- always goes to the
        # coordinator, and OffsetDeleteResponse.Builder.merge keeps only the coordinator's answer when it carries a
        # top-level error (unknown group, NOT_COORDINATOR, ...), else appends its partitions to the API layer's.
        unknown, known_topics = self._split_unknown_partitions(req.topics, OffsetDeleteResponse.Topic)
        shard, e = self._route(broker_id, req.group_id)
        if e is not None:
            coordinator_resp = OffsetDeleteResponse(error_code=int(e))
        else:
            sub = Ctx(c.now_ms)
            shard.offset_delete(sub, type(req)(group_id=req.group_id, topics=known_topics), rc.api_version,
                                rc.request_id)
            c.records += sub.records
            (_, coordinator_resp), = sub.responses
        if coordinator_resp.error_code != 0 or not unknown:
            resp = coordinator_resp
        else:
            resp = OffsetDeleteResponse(error_code=0, topics=unknown)
            by_topic = {t.name: t for t in resp.topics}
            for t in coordinator_resp.topics:
                if t.name in by_topic:
                    by_topic[t.name].partitions.extend(t.partitions)
                else:
                    resp.topics.append(t)
                    by_topic[t.name] = t
        c.respond(rc.request_id, resp)

    # Admin ----------------------------------------------------------------------------------------------------

    def _h_DescribeGroupsRequest(self, broker_id: int, req: Any, rc: RequestContext, c: Ctx) -> None:
        out = []
        for gid in req.groups:
            shard, e = self._route(broker_id, gid)
            if e is not None:
                out.append(DescribeGroupsResponse.DescribedGroup(error_code=int(e), group_id=gid, group_state="",
                                                                 protocol_type="", protocol_data="", members=[]))
            else:
                d = shard.describe_group(gid)
                if rc.api_version >= 6 and shard.groups.get(gid) is None:
                    # GroupMetadataManager.describeGroups: from v6 (KIP-1043) an unknown group is
                    # GROUP_ID_NOT_FOUND (still state "Dead"); v0-5 answer NONE.
                    d.error_code = int(E.GROUP_ID_NOT_FOUND)
                out.append(d)
        c.respond(rc.request_id, DescribeGroupsResponse(groups=out))

    def _h_ListGroupsRequest(self, broker_id: int, req: Any, rc: RequestContext, c: Ctx) -> None:
        v = rc.api_version
        # GroupMetadataManager.listGroups: state filters lower-cased and trimmed; types via GroupType.parse
        # (case-insensitive, not trimmed).
        states = {s.lower().strip() for s in req.states_filter} if v >= 4 else set()
        types = {t.lower() for t in req.types_filter} if v >= 5 else set()
        listed = []
        for p, slot in sorted(self.slots.items()):
            if slot.broker_id != broker_id:
                continue
            if slot.loaded_at_ms is not None:
                c.respond(rc.request_id, ListGroupsResponse(error_code=int(E.COORDINATOR_LOAD_IN_PROGRESS)))
                return
            listed += slot.shard.list_groups()
        groups = [ListGroupsResponse.ListedGroup(group_id=g, protocol_type=pt, group_state=st, group_type="classic")
                  for g, pt, st in sorted(listed)
                  if (not states or st.lower() in states) and (not types or "classic" in types)]
        c.respond(rc.request_id, ListGroupsResponse(error_code=0, groups=groups))

    def _h_DeleteGroupsRequest(self, broker_id: int, req: Any, rc: RequestContext, c: Ctx) -> None:
        results = []
        # KafkaApis.handleDeleteGroupsRequest: groupsNames.distinct -- a repeated name gets one result.
        for gid in dict.fromkeys(req.groups_names):
            shard, e = self._route(broker_id, gid)
            if e is None:
                e = shard.delete_group(c, gid)
            results.append(DeleteGroupsResponse.DeletableGroupResult(group_id=gid, error_code=int(e)))
        c.respond(rc.request_id, DeleteGroupsResponse(results=results))
