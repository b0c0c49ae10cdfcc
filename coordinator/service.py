"""The coordinator as the drivers see it: a whole cluster's group coordination, sans-IO.

:class:`GroupCoordinatorService` plays every broker's ``GroupCoordinatorService`` + ``KafkaApis`` for the group
APIs. Both drivers -- the asyncio TCP server and the virtual-time simulator -- use it the same way:

* ``handle(broker_id, request, ctx, now_ms) -> Output`` for a decoded request that arrived at ``broker_id``.
  ``ctx`` (:class:`RequestContext`) carries the driver's opaque ``request_id``, the API version and the header's
  client id / the client's address.
* ``poll(now_ms) -> Output`` fires every timer due by ``now_ms`` (session expiry, join/initial/sync timeouts,
  pending members, offset expiry, end of a partition load). ``next_deadline()`` says when the next one is due
  (``None``: nothing scheduled). ``handle`` polls first, so calling ``poll`` before ``handle`` is optional.
* ``stop_broker`` / ``start_broker`` / ``elect_preferred_leaders`` / ``move_coordinator`` (``-> Output``) move
  leaderships; the offsets partitions that move are unloaded from the old leader and loaded by the new one.
  ``expire_sessions`` expires members' sessions now (fault injection).

:class:`Output` is everything one call produced: ``answer`` -- the answer to the request just handled by
``handle``: its response, :data:`PARKED` (it waits: its response comes out of a later call) or :data:`ABANDONED`
(parked and dropped within this call; Kafka never answers it) -- None for the other calls; ``responses`` --
``(request_id, response)`` pairs, for the request just handled (unless parked) *and* for earlier parked ones (a
JoinGroup is answered when the join phase completes, a SyncGroup when the leader's assignment arrives, both possibly
from a timer); ``abandoned`` -- request ids Kafka would never answer (a JoinGroup replaced by a newer one from the
same member, parked requests of a broker that was stopped: the driver should treat these as a timeout or a closed
connection); ``records`` -- log entries appended (the rebalance log); ``leadership`` -- leader changes of any
partition. The records are written (the logs synced) before the call returns: respond after the write.

Inside, every request, timer, load and unload is one operation on one shard (``coordinator.shard``) that returns
one ``CoordinatorResult`` (records + response + released/abandoned parked requests), appended and replayed by the
shard's runtime or rolled back if it raises (``coordinator.runtime``); a call gathers its operations' results in
order into its :class:`Output`. An operation that fails with a Kafka error on purpose
(``coordinator.runtime.OperationError``) is answered with that error (``protocol.error_responses``); any other
exception is a bug: the operation is rolled back and the exception propagates to the driver.

Invariants: time never goes backwards (``now_ms`` smaller than a previous call raises ``ValueError``); at most one
response per request id; every parked request is eventually answered or abandoned unless it is still parked; every
loaded shard's state equals the replay of its log (:meth:`GroupCoordinatorService.state_replay_mismatches`).
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from typing import Any, Protocol

from protocol.api import APIS
from protocol.error_responses import (deletable_group_result, described_group_error, error_response,
                                      heartbeat_error, join_group_error, leave_group_error, list_groups_error,
                                      offset_commit_error, offset_delete_error, sync_group_error)
from protocol.errors import ErrorCode
from protocol.messages import (ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatResponse, DeleteGroupsResponse,
                               DescribeGroupsResponse, FindCoordinatorResponse, HeartbeatResponse, ListGroupsResponse,
                               OffsetCommitResponse, OffsetDeleteResponse, OffsetFetchResponse)

from coordinator.cluster import NO_LEADER, OFFSETS_TOPIC, Cluster, ClusterError, LeadershipChange, topic_id
from coordinator.config import CoordinatorConfig
from coordinator.consumer_group import (JOIN_GROUP_MEMBER_EPOCH, LEAVE_GROUP_MEMBER_EPOCH,
                                        LEAVE_GROUP_STATIC_MEMBER_EPOCH, ConsumerGroup)
from coordinator.errors import ApiError
from coordinator.group import ClassicGroup
from coordinator.log import CompactionPolicy, LogWriter, PartitionLog
from coordinator.records import LogEntry
from coordinator.runtime import ABANDONED, PARKED, CoordinatorResult, OperationError
from coordinator.shard import GroupCoordinatorShard

E = ErrorCode
_ZERO_UUID = uuid.UUID(int=0)  # Uuid.ZERO_UUID


class LogStorage(Protocol):
    """Where the driver keeps the offsets partition logs (``broker/storage.py``): ``open(partition)`` returns the
    entries already stored and the writer for new ones."""

    def open(self, partition: int) -> tuple[list[LogEntry], LogWriter]: ...
    # (it may also return (entries, writer, next_offset, clean): a compacted log -- coordinator/log.py)


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
    #: ``handle`` only: the answer to the request just handled -- its response, PARKED or ABANDONED.
    answer: Any = None

    def take(self, result: CoordinatorResult) -> Any:
        """Gather one operation's records, released answers and abandoned ids; return its response."""
        if result.records:
            self.records += result.records
        if result.released:
            self.responses += result.released
        if result.abandoned:
            self.abandoned += result.abandoned
        return result.response

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
                 start_ms: int = 0, consumer_assignor: Any = None) -> None:
        self.cluster = cluster if cluster is not None else Cluster.with_brokers(num_brokers, config, seed)
        #: KIP-848 server assignor: ``coordinator.assignors.assign_target`` unless a test injects a mock (Kafka's
        #: tests configure a ``MockPartitionAssignor`` the same way).
        self._consumer_assignor = consumer_assignor
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
        self._api_keys = {api.request.cls: key for key, api in APIS.items()}
        if self.cluster.ensure_offsets_topic():
            self._sync_leadership(Output(), start_ms, answer_unloaded=True)
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
                lg = PartitionLog(partition, *self._storage.open(partition))
            c = self.config
            lg.policy = CompactionPolicy(c.log_cleaner_min_cleanable_ratio, c.offsets_compaction_min_records,
                                         c.log_cleaner_delete_retention_ms)
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

    def _sync_logs(self, out: Output) -> Output:
        """End of the call: sync the logs it appended to (only those can have unsynced data), so the responses it
        releases are durable ("write, then respond")."""
        records = out.records
        if records:
            logs = self.logs
            for p in {e.partition for e in records}:
                logs[p].sync()
        return out

    def _set_time(self, now_ms: int) -> None:
        if now_ms < self.now_ms:
            raise ValueError(f"time went backwards: now_ms={now_ms} < {self.now_ms}")
        self.now_ms = now_ms

    # --- leadership and loading ------------------------------------------------------------------------------

    def _sync_leadership(self, out: Output, now_ms: int, answer_unloaded: bool) -> None:
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
                out.take(slot.shard.unload(now_ms, answer=alive and answer_unloaded))
                del self.slots[p]
            if ps.leader == NO_LEADER:
                continue
            shard = GroupCoordinatorShard(p, self.log(p), self.config, ps.leader, self._new_uuid, self._rng,
                                          cluster=self.cluster, consumer_assignor=self._consumer_assignor)
            shard.timers.watch(self._changed, p)
            load_time = self.config.coordinator_load_time_ms
            slot = _Slot(ps.leader, shard, now_ms + load_time if load_time > 0 else None, ps.leader_epoch)
            self.slots[p] = slot
            if slot.loaded_at_ms is None:
                out.take(shard.load(now_ms, ps.leader_epoch))

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

    def _advance(self, out: Output, now_ms: int) -> None:
        """Fire everything due by ``now_ms`` in time order (ties: partition order). A timer fires at its deadline;
        a partition whose load completed by ``now_ms`` is loaded at ``now_ms``."""
        d_min = self._refresh_deadlines()
        while d_min is not None and d_min <= now_ms:
            t, p = min((d, p) for p, d in self._deadlines.items() if d <= now_ms)
            slot = self.slots[p]
            if slot.loaded_at_ms is not None:
                slot.loaded_at_ms = None
                self._changed.add(p)
                out.take(slot.shard.load(now_ms, slot.leader_epoch))
            else:
                for result in slot.shard.fire_due(t):
                    out.take(result)
            d_min = self._refresh_deadlines()

    def next_deadline(self) -> int | None:
        """When the next timer (or partition load) is due; None if nothing is scheduled. O(1) (cached)."""
        return self._refresh_deadlines()

    def poll(self, now_ms: int) -> Output:
        self._set_time(now_ms)
        out = Output()
        self._advance(out, now_ms)
        return self._sync_logs(out)

    def _leadership_op(self, now_ms: int, op) -> Output:
        self._set_time(now_ms)
        out = Output()
        self._advance(out, now_ms)
        changes = op()
        if changes:
            out.leadership += changes
        if self.cluster.ensure_offsets_topic():
            self._sync_leadership(out, now_ms, answer_unloaded=True)
        return self._sync_logs(out)

    def stop_broker(self, broker_id: int, now_ms: int) -> Output:
        """Stop a broker: its connections drop (its parked requests are abandoned), its leaderships move."""
        return self._leadership_op(now_ms, lambda: self.cluster.stop_broker(broker_id))

    def start_broker(self, broker_id: int, now_ms: int) -> Output:
        return self._leadership_op(now_ms, lambda: self.cluster.start_broker(broker_id))

    def elect_preferred_leaders(self, now_ms: int) -> Output:
        """Leadership moves while the old leader stays up: its parked requests get NOT_COORDINATOR."""
        return self._leadership_op(now_ms, self.cluster.elect_preferred_leaders)

    def move_coordinator(self, group_id: str, broker_id: int, now_ms: int) -> Output:
        """Fault injection: make ``broker_id`` the leader of ``group_id``'s offsets partition (``Cluster.move_leader``);
        the old coordinator unloads the partition (its parked requests get NOT_COORDINATOR), the new one loads it.
        Raises ``ValueError`` (``ClusterError``) for an unknown or stopped broker or before ``__consumer_offsets``
        exists."""
        if not self.cluster.ensure_offsets_topic():
            raise ClusterError("__consumer_offsets does not exist yet (not enough brokers)")
        p = self.partition_for(group_id)
        # refuse before the clock moves: _leadership_op fires the timers due by now_ms first, and an error raised
        # after that would lose their records and answers for the driver
        self.cluster.leader_candidate(OFFSETS_TOPIC, p, broker_id)
        return self._leadership_op(now_ms, lambda: self.cluster.move_leader(OFFSETS_TOPIC, p, broker_id))

    def expire_sessions(self, group_id: str, member_ids: list[str], now_ms: int) -> Output:
        """Fault injection (Kafka's ``onExpireHeartbeat``): the session timers of ``member_ids`` of ``group_id``
        fire now, as if the members had stopped heartbeating; raises ``ValueError`` if the group is not loaded on
        a live coordinator."""
        shard = self.shard_for(group_id)
        if shard is None:
            raise ValueError(f"group {group_id!r} is not loaded on a live coordinator")
        self._set_time(now_ms)
        for mid in member_ids:
            shard.expire_session(group_id, mid, now_ms)
        return self.poll(now_ms)

    # --- introspection ---------------------------------------------------------------------------------------

    def coordinator_of(self, group_id: str) -> int:
        return self.cluster.coordinator_for(group_id)

    def shard_for(self, group_id: str) -> GroupCoordinatorShard | None:
        slot = self.slots.get(self.partition_for(group_id))
        return None if slot is None or slot.loaded_at_ms is not None else slot.shard

    def group(self, group_id: str) -> ClassicGroup | None:
        shard = self.shard_for(group_id)
        return None if shard is None else shard.groups.get(group_id)

    def consumer_group(self, group_id: str) -> ConsumerGroup | None:
        """The KIP-848 consumer group ``group_id`` (None: none, or not loaded)."""
        shard = self.shard_for(group_id)
        return None if shard is None else shard.consumer_groups.get(group_id)

    def committed_offsets(self, group_id: str) -> dict[tuple[str, int], Any]:
        shard = self.shard_for(group_id)
        return {} if shard is None else shard.offsets.group_offsets(group_id)

    def state_replay_mismatches(self, partitions: Any = None) -> list[str]:
        """The invariant "state equals the replay of the log": for every loaded shard (or those of
        ``partitions``), where its live groups and offsets differ from a replay of its partition log
        (``coordinator.replay.replay_live``). Empty: the invariant holds. O(log) per shard: for checks, not for
        the request path."""
        out = []
        for p, slot in sorted(self.slots.items()):
            if (partitions is None or p in partitions) and slot.loaded_at_ms is None:
                out += [f"partition {p}: {m}" for m in slot.shard.replay_mismatches()]
        return out

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
        out = Output()
        d_min = self._deadline_min
        if self._changed or (d_min is not None and d_min <= now_ms):  # else nothing can be due: skip _advance
            self._advance(out, now_ms)
        handler = self._handlers.get(type(request))
        if handler is None:
            name = type(request).__name__
            handler = getattr(type(self), "_h_" + name, None)
            if handler is None:
                raise ValueError(f"the coordinator does not handle {name}")
            self._handlers[type(request)] = handler
        try:
            answer = handler(self, broker_id, request, ctx, out, now_ms)
        except OperationError as e:  # rolled back; Kafka answers with the error (handleOperationException)
            answer = error_response(self._api_keys[type(request)], ctx.api_version, request, e.error,
                                    operation_error_message(e))
        rid = ctx.request_id
        if answer is PARKED:
            # Parked, and maybe answered or dropped in this very call (e.g. the last member's JoinGroup completes
            # the join phase): then the answer is among the released ones.
            for r, resp in out.responses:
                if r == rid:
                    answer = resp
                    break
            else:
                if rid in out.abandoned:
                    answer = ABANDONED
        else:
            out.responses.append((rid, answer))
        out.answer = answer
        if out.records:
            self._sync_logs(out)
        return out

    # Each handler below answers one request: it returns the response (or PARKED) and gathers the results of the
    # operations it ran into ``out``. The checks before routing are KafkaApis' and GroupCoordinatorService's.

    # FindCoordinator ------------------------------------------------------------------------------------------

    def _h_FindCoordinatorRequest(self, broker_id: int, req: Any, rc: RequestContext, out: Output,
                                  now_ms: int) -> Any:
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
            self._sync_leadership(out, now_ms, answer_unloaded=True)
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
            return FindCoordinatorResponse(coordinators=[
                FindCoordinatorResponse.Coordinator(key=k, node_id=n, host=h, port=pt, error_code=int(e),
                                                    error_message=msg)
                for k, e, n, h, pt, msg in results])
        k, e, n, h, pt, msg = results[0]
        return FindCoordinatorResponse(error_code=int(e), error_message="NONE" if e == E.NONE else (msg or e.message),
                                       node_id=n, host=h, port=pt)

    # JoinGroup / SyncGroup / Heartbeat / LeaveGroup -----------------------------------------------------------

    def _h_JoinGroupRequest(self, broker_id: int, req: Any, rc: RequestContext, out: Output, now_ms: int) -> Any:
        v = rc.api_version
        if not req.group_id:
            return join_group_error(E.INVALID_GROUP_ID, req.member_id, v)
        if not (self.config.group_min_session_timeout_ms <= req.session_timeout_ms
                <= self.config.group_max_session_timeout_ms):
            return join_group_error(E.INVALID_SESSION_TIMEOUT, req.member_id, v)
        shard, e = self._route(broker_id, req.group_id)
        if e is not None:
            # GroupCoordinatorService.joinGroup: runtime errors (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS)
            # are answered with a fresh JoinGroupResponseData, i.e. member id "" (unlike the checks above).
            return join_group_error(e, "", v)
        return out.take(shard.run(now_ms, rc, shard.join_group, req))

    def _h_SyncGroupRequest(self, broker_id: int, req: Any, rc: RequestContext, out: Output, now_ms: int) -> Any:
        v = rc.api_version
        if v >= 5 and (req.protocol_type is None or req.protocol_name is None):
            return sync_group_error(E.INCONSISTENT_GROUP_PROTOCOL)  # KafkaApis: mandatory from v5 (KIP-559)
        if not req.group_id:
            return sync_group_error(E.INVALID_GROUP_ID)
        shard, e = self._route(broker_id, req.group_id)
        if e is not None:
            return sync_group_error(e)  # the new coordinator answers COORDINATOR_LOAD_IN_PROGRESS while loading
        return out.take(shard.run(now_ms, rc, shard.sync_group, req))

    def _h_HeartbeatRequest(self, broker_id: int, req: Any, rc: RequestContext, out: Output, now_ms: int) -> Any:
        if not req.group_id:
            return heartbeat_error(E.INVALID_GROUP_ID)
        shard, e = self._route(broker_id, req.group_id)
        if e is not None:
            if e == E.COORDINATOR_LOAD_IN_PROGRESS:
                return HeartbeatResponse(error_code=0)  # "respond blindly" while loading
            return heartbeat_error(e)
        return out.take(shard.run(now_ms, rc, shard.heartbeat, req))

    def _h_LeaveGroupRequest(self, broker_id: int, req: Any, rc: RequestContext, out: Output, now_ms: int) -> Any:
        if not req.group_id:
            return leave_group_error(E.INVALID_GROUP_ID)
        shard, e = self._route(broker_id, req.group_id)
        if e is not None:
            return leave_group_error(e)
        return out.take(shard.run(now_ms, rc, shard.leave_group, req))

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

    @staticmethod
    def _merge_topics(resp: Any, topics: list[Any]) -> Any:
        """``OffsetCommitResponse.Builder.merge`` / ``OffsetDeleteResponse.Builder.merge``: ``topics`` after the
        response's own, a topic already present gets its partitions appended."""
        by_topic = {t.name: t for t in resp.topics}
        for t in topics:
            if t.name in by_topic:
                by_topic[t.name].partitions.extend(t.partitions)
            else:
                resp.topics.append(t)
                by_topic[t.name] = t
        return resp

    def _topic_name_of(self, tid: Any) -> str | None:
        """``MetadataCache.getTopicName``: the name of the topic with id ``tid``, None when no topic has it."""
        if tid is None or tid == _ZERO_UUID:
            return None
        return next((n for n in self.cluster.topics if topic_id(n) == tid), None)

    def _h_OffsetCommitRequest(self, broker_id: int, req: Any, rc: RequestContext, out: Output,
                               now_ms: int) -> Any:
        # KafkaApis.handleOffsetCommitRequest (4.4): v10+ (OffsetCommitResponse.useTopicIds) names topics by id,
        # resolved through the metadata cache; an id no topic has -> UNKNOWN_TOPIC_ID on all its partitions. Below
        # v10 the name is resolved to an id, and an unknown topic -> UNKNOWN_TOPIC_OR_PARTITION on all its
        # partitions; a known topic's partitions the cluster lacks -> UNKNOWN_TOPIC_OR_PARTITION each. These go
        # into OffsetCommitResponse's Builder (one response topic per topic id / name, first-seen order); if nothing
        # is left the response goes out at once, else the rest goes to the coordinator and Builder.merge appends
        # its answer (partitions of a topic already present are added after the API layer's ones).
        use_ids = rc.api_version >= 10
        T, P = OffsetCommitResponse.Topic, OffsetCommitResponse.Topic.Partition
        api_topics: dict[Any, Any] = {}

        def add(tid: Any, name: str, partitions: list[int], error: ErrorCode) -> None:
            key = tid if use_ids else name
            if key not in api_topics:
                api_topics[key] = T(name=name, topic_id=tid, partitions=[])
            api_topics[key].partitions += [P(partition_index=p, error_code=int(error)) for p in partitions]

        forwarded = []
        for t in req.topics:
            if use_ids:
                name = self._topic_name_of(t.topic_id)
                if name is None:
                    add(t.topic_id, "", [p.partition_index for p in t.partitions], E.UNKNOWN_TOPIC_ID)
                    continue
                tid = t.topic_id
            else:
                name = t.name
                tid = topic_id(name) if name in self.cluster.topics else _ZERO_UUID
                if tid == _ZERO_UUID:
                    add(tid, name, [p.partition_index for p in t.partitions], E.UNKNOWN_TOPIC_OR_PARTITION)
                    continue
            good = []
            for p in t.partitions:
                if self.cluster.has_partition(name, p.partition_index):
                    good.append(p)
                else:
                    add(tid, name, [p.partition_index], E.UNKNOWN_TOPIC_OR_PARTITION)
            if good:
                forwarded.append(type(t)(name=name, topic_id=tid, partitions=good))
        if not forwarded:
            return OffsetCommitResponse(topics=list(api_topics.values()))
        shard, e = self._route(broker_id, req.group_id)
        if e is not None:  # OffsetCommitRequest.getErrorResponse over the forwarded partitions
            coordinator_resp = offset_commit_error(forwarded, e)
        else:
            fwd = type(req)(**{name: getattr(req, name) for name in req.__slots__})
            fwd.topics = forwarded
            coordinator_resp = out.take(shard.run(now_ms, rc, shard.offset_commit, fwd))
        for t in coordinator_resp.topics:  # OffsetMetadataManager.commitOffset echoes the request's topic id
            t.topic_id = topic_id(t.name)
        if not api_topics:
            return coordinator_resp
        for t in coordinator_resp.topics:  # Builder.merge
            key = t.topic_id if use_ids else t.name
            if key in api_topics:
                api_topics[key].partitions.extend(t.partitions)
            else:
                api_topics[key] = t
        return OffsetCommitResponse(topics=list(api_topics.values()))

    def _fetch_group(self, broker_id: int, group_id: str, topics: list[tuple[str, list[int]]] | None,
                     member_id: str | None = None, member_epoch: int = -1
                     ) -> tuple[ErrorCode, list[tuple[str, list[tuple[int, int, int, str]]]]]:
        shard, e = self._route(broker_id, group_id)
        if e is not None:
            return e, []
        try:
            return E.NONE, shard.fetch_offsets(group_id, topics, member_id, member_epoch)
        except ApiError as err:  # validateOffsetFetch (v9+ member id/epoch): the group's error
            return err.error, []

    def _h_OffsetFetchRequest(self, broker_id: int, req: Any, rc: RequestContext, out: Output, now_ms: int) -> Any:
        v = rc.api_version
        if v >= 8:
            T, P = OffsetFetchResponse.Group.Topic, OffsetFetchResponse.Group.Topic.Partition
            groups = []
            for grp in req.groups:
                # KafkaApis.fetchOffsetsForGroup (4.4): from v10 (OffsetFetchRequest.useTopicIds) topics are named
                # by id, resolved through the metadata cache; an id no topic has is answered by the API layer with
                # UNKNOWN_TOPIC_ID (offset -1) on each partition, after the coordinator's topics.
                error_topics = []
                if grp.topics is None:
                    topics = None
                else:
                    topics = []
                    for t in grp.topics:
                        name = self._topic_name_of(t.topic_id) if v >= 10 else t.name
                        if name is None:
                            error_topics.append(T(name="", topic_id=t.topic_id, partitions=[
                                P(partition_index=p, committed_offset=-1, error_code=int(E.UNKNOWN_TOPIC_ID))
                                for p in t.partition_indexes]))
                        else:
                            topics.append((name, list(t.partition_indexes)))
                member_id, member_epoch = (grp.member_id, grp.member_epoch) if v >= 9 else (None, -1)
                e, rows = self._fetch_group(broker_id, grp.group_id, topics, member_id, member_epoch)
                if e != E.NONE:  # the group's error, no topics (OffsetFetchResponse.groupError)
                    groups.append(OffsetFetchResponse.Group(group_id=grp.group_id, error_code=int(e), topics=[]))
                    continue
                resp_topics = [T(name=t, topic_id=topic_id(t), partitions=[
                    P(partition_index=p, committed_offset=o, committed_leader_epoch=ep, metadata=md, error_code=0)
                    for p, o, ep, md in parts]) for t, parts in rows]
                if v >= 10 and topics is None:
                    # KafkaApis.fetchAllOffsetsForGroup: a topic without an id (deleted since its commit) cannot
                    # be serialized at v10 and is left out.
                    resp_topics = [t for t in resp_topics if t.name in self.cluster.topics]
                groups.append(OffsetFetchResponse.Group(group_id=grp.group_id, error_code=0,
                                                        topics=resp_topics + error_topics))
            return OffsetFetchResponse(groups=groups)
        topics = None if req.topics is None else [(t.name, list(t.partition_indexes)) for t in req.topics]
        e, rows = self._fetch_group(broker_id, req.group_id, topics)
        if e != E.NONE and v < 2:
            # v0/v1 have no top-level error: every requested partition carries it, with offset -1.
            rows = [(t, [(p, -1, -1, "") for p in parts]) for t, parts in (topics or [])]
            part_err = int(e)
        else:
            part_err = 0
        return OffsetFetchResponse(error_code=int(e) if v >= 2 else 0, topics=[
            OffsetFetchResponse.Topic(name=t, partitions=[
                OffsetFetchResponse.Topic.Partition(partition_index=p, committed_offset=o, committed_leader_epoch=ep,
                                                    metadata=md, error_code=part_err)
                for p, o, ep, md in parts]) for t, parts in rows])

    def _h_OffsetDeleteRequest(self, broker_id: int, req: Any, rc: RequestContext, out: Output,
                               now_ms: int) -> Any:
        if not req.group_id:
            return offset_delete_error(E.INVALID_GROUP_ID)
        # KafkaApis.handleOffsetDeleteRequest: partitions of unknown topics/partitions are answered by the API layer
        # (UNKNOWN_TOPIC_OR_PARTITION, in request order); the rest -- possibly nothing -- always goes to the
        # coordinator, and OffsetDeleteResponse.Builder.merge keeps only the coordinator's answer when it carries a
        # top-level error (unknown group, NOT_COORDINATOR, ...), else appends its partitions to the API layer's.
        unknown, known_topics = self._split_unknown_partitions(req.topics, OffsetDeleteResponse.Topic)
        shard, e = self._route(broker_id, req.group_id)
        if e is not None:
            coordinator_resp = offset_delete_error(e)
        else:
            known = type(req)(group_id=req.group_id, topics=known_topics)
            coordinator_resp = out.take(shard.run(now_ms, rc, shard.offset_delete, known))
        if coordinator_resp.error_code != 0 or not unknown:
            return coordinator_resp
        return self._merge_topics(OffsetDeleteResponse(error_code=0, topics=unknown), coordinator_resp.topics)

    # Admin ----------------------------------------------------------------------------------------------------

    def _h_DescribeGroupsRequest(self, broker_id: int, req: Any, rc: RequestContext, out: Output,
                                 now_ms: int) -> Any:
        """``GroupCoordinatorService.describeGroups``: the groups per offsets partition, partitions in Kafka's
        ``HashMap<TopicPartition, ...>`` order, request order within one; a partition this broker does not lead
        (or still loads) answers each of its groups with that error. ``GroupMetadataManager.describeGroups``: only
        a classic group is described; an unknown group, or a group of another type (``classicGroup`` throws
        ``GroupIdNotFoundException``), is state "Dead" with no error below v6 and GROUP_ID_NOT_FOUND with the
        exception's message from v6 (KIP-1043)."""
        by_partition: dict[int, list[str]] = {}
        for gid in req.groups:
            by_partition.setdefault(self.partition_for(gid), []).append(gid)
        described = []
        for p in _offsets_partition_order(list(by_partition)):
            groups = by_partition[p]
            shard, e = self._route(broker_id, groups[0])
            if e is not None:
                described += [described_group_error(gid, e) for gid in groups]
                continue
            for gid in groups:
                d = shard.describe_group(gid)
                if rc.api_version >= 6 and shard.groups.get(gid) is None:
                    d.error_code = int(E.GROUP_ID_NOT_FOUND)
                    d.error_message = (f"Group {gid} is not a classic group." if gid in shard.consumer_groups
                                       else f"Group {gid} not found.")
                described.append(d)
        return DescribeGroupsResponse(groups=described)

    def _h_ListGroupsRequest(self, broker_id: int, req: Any, rc: RequestContext, out: Output, now_ms: int) -> Any:
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
                return list_groups_error(E.COORDINATOR_LOAD_IN_PROGRESS)
            listed += slot.shard.list_groups()
        groups = [ListGroupsResponse.ListedGroup(group_id=g, protocol_type=pt, group_state=st, group_type=gt)
                  for g, pt, st, gt in sorted(listed)
                  if (not states or st.lower() in states) and (not types or gt in types)]
        return ListGroupsResponse(error_code=0, groups=groups)

    def _h_DeleteGroupsRequest(self, broker_id: int, req: Any, rc: RequestContext, out: Output,
                               now_ms: int) -> Any:
        results = []
        # KafkaApis.handleDeleteGroupsRequest: groupsNames.distinct -- a repeated name gets one result.
        for gid in dict.fromkeys(req.groups_names):
            shard, e = self._route(broker_id, gid)
            if e is None:
                e = out.take(shard.delete_group(now_ms, gid))
            results.append(deletable_group_result(gid, e))
        return DeleteGroupsResponse(results=results)

    # KIP-848 consumer groups --------------------------------------------------------------------------------

    def _h_ConsumerGroupHeartbeatRequest(self, broker_id: int, req: Any, rc: RequestContext, out: Output,
                                         now_ms: int) -> Any:
        """``KafkaApis.handleConsumerGroupHeartbeat`` (no authorization in kgroup) and
        ``GroupCoordinatorService.consumerGroupHeartbeat``: the request's own validation, then the operation on the
        group's shard. Errors carry only ErrorCode and ErrorMessage."""
        try:
            throw_if_consumer_group_heartbeat_invalid(req, rc.api_version, self.config.group_consumer_assignors)
        except ApiError as e:
            return consumer_group_heartbeat_error(e.error, e.message)
        shard, e = self._route(broker_id, req.group_id)
        if e is not None:
            return consumer_group_heartbeat_error(e)
        return out.take(shard.run(now_ms, rc, shard.consumer_group_heartbeat, req))

    def _h_ConsumerGroupDescribeRequest(self, broker_id: int, req: Any, rc: RequestContext, out: Output,
                                        now_ms: int) -> Any:
        """``GroupCoordinatorService.consumerGroupDescribe``: an empty group id is INVALID_GROUP_ID (first, with id
        ``""``); the others per offsets partition, partitions in Kafka's ``HashMap<TopicPartition, ...>`` order,
        request order within one; a partition this broker does not lead (or still loads) answers each of its groups
        with that error and no message."""
        D = ConsumerGroupDescribeResponse.DescribedGroup
        results = []
        by_partition: dict[int, list[str]] = {}
        for gid in req.group_ids:
            if gid:  # isGroupIdNotEmpty
                by_partition.setdefault(self.partition_for(gid), []).append(gid)
            else:
                results.append(D(group_id="", error_code=int(E.INVALID_GROUP_ID)))
        for p in _offsets_partition_order(list(by_partition)):
            groups = by_partition[p]
            shard, e = self._route(broker_id, groups[0])
            if e is not None:
                results += [D(group_id=g, error_code=int(e)) for g in groups]
            else:
                results += shard.describe_consumer_groups(groups)
        return ConsumerGroupDescribeResponse(groups=results)


def operation_error_message(e: ApiError) -> str | None:
    """``ApiError.fromThrowable``: no message for UNKNOWN_SERVER_ERROR (nothing sensitive leaks) nor when it is the
    error's own default message."""
    if e.error == E.UNKNOWN_SERVER_ERROR or e.message is None or e.message == e.error.message:
        return None
    return e.message


def consumer_group_heartbeat_error(error: ErrorCode, message: str | None = None) -> Any:
    """A ConsumerGroupHeartbeat error answer: ErrorCode and ErrorMessage only (member id null, epoch 0)."""
    return ConsumerGroupHeartbeatResponse(error_code=int(error),
                                          error_message=operation_error_message(ApiError(error, message)))


#: ``ConsumerGroupHeartbeatRequest.CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION`` (KIP-1082).
CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION = 1


#: what Java's ``String.trim()`` removes from both ends: every code point <= U+0020
_JAVA_TRIM = "".join(chr(c) for c in range(0x21))


def _blank(s: str | None) -> bool:
    """``Utils.throwIfEmptyString``'s test: non-null and empty after ``trim()`` (Java trims code points <= U+0020)."""
    # (a first character above U+0020 survives the trim: the common case, decided without stripping)
    return s is not None and (not s or (s[0] <= " " and not s.strip(_JAVA_TRIM)))


def throw_if_consumer_group_heartbeat_invalid(req: Any, version: int, assignors: tuple[str, ...]) -> None:
    """``GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid``, in Kafka's order and words."""
    epoch = req.member_epoch
    if version >= CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION or epoch > 0 or epoch == LEAVE_GROUP_MEMBER_EPOCH:
        if _blank(req.member_id):
            raise ApiError(E.INVALID_REQUEST, "MemberId can't be empty.")
    if _blank(req.group_id):
        raise ApiError(E.INVALID_REQUEST, "GroupId can't be empty.")
    if _blank(req.instance_id):
        raise ApiError(E.INVALID_REQUEST, "InstanceId can't be empty.")
    if _blank(req.rack_id):
        raise ApiError(E.INVALID_REQUEST, "RackId can't be empty.")
    if epoch == JOIN_GROUP_MEMBER_EPOCH:
        if req.rebalance_timeout_ms == -1:
            raise ApiError(E.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
        if req.topic_partitions is None or len(req.topic_partitions) > 0:
            raise ApiError(E.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
        if req.subscribed_topic_names is None and getattr(req, "subscribed_topic_regex", None) is None:
            raise ApiError(E.INVALID_REQUEST, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null "
                                              "when (re-)joining.")
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if req.instance_id is None:
            raise ApiError(E.INVALID_REQUEST, "InstanceId can't be null.")
    elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise ApiError(E.INVALID_REQUEST, "MemberEpoch is invalid.")
    if req.server_assignor is not None and req.server_assignor not in assignors:
        raise ApiError(E.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {req.server_assignor} is not supported. Supported "
                                               f"assignors: {', '.join(assignors)}.")


def _offsets_partition_order(partitions: list[int]) -> list[int]:
    """The iteration order of Kafka's ``HashMap<TopicPartition, List<String>>`` keyed by ``__consumer_offsets``
    partitions, filled in first-seen order (``TopicPartition.hashCode``: ``31 * (31 + partition) +
    topic.hashCode()``)."""
    from protocol.java import hashmap_order, int32, string_hash

    topic_hash = string_hash(OFFSETS_TOPIC)
    return hashmap_order(partitions, hash_of=lambda p: int32(31 * (31 + p) + topic_hash), order_key=None)
