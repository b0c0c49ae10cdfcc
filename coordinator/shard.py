"""One coordinator shard: the groups and offsets of one ``__consumer_offsets`` partition on its leader broker
(Kafka 4.x ``GroupCoordinatorShard``).

The shard wires the partition's runtime (``coordinator.runtime``: log, state, timers, parked requests, the write
path) to the managers that hold the rules -- ``ClassicGroupManager`` (the classic group protocol),
``ConsumerGroupManager`` (KIP-848's consumer groups) and ``OffsetMetadataManager`` (offsets) -- and turns every
entry point into one operation that returns one
:class:`~coordinator.runtime.CoordinatorResult`: a request (``shard.run(now_ms, context, shard.heartbeat,
request)``: the service names the operation, as Kafka's ``GroupCoordinatorService`` does), a timer that fired
(:meth:`fire_due`, through the timer table), the partition's load and unload, a group's deletion.

The two group types: a group id names a classic group or a consumer group (``ShardState.group_type``). The group
APIs route to the manager of their protocol (JoinGroup/SyncGroup/Heartbeat/LeaveGroup -> classic, or the consumer
manager when they reach a consumer group: mixed groups; ConsumerGroupHeartbeat -> consumer), and the type-neutral
ones (DescribeGroups, ListGroups, DeleteGroups, OffsetCommit/OffsetFetch validation, the expiry sweep) ask the
group of whatever type it is, as Kafka's ``Group`` interface does.
"""

from __future__ import annotations

from typing import Any, Callable

from protocol.errors import ErrorCode

from coordinator import records as R
from coordinator.classic_manager import ClassicGroupManager
from coordinator.cluster import Cluster
from coordinator.config import CoordinatorConfig
from coordinator.consumer_group import ConsumerGroup, ConsumerGroupState
from coordinator.consumer_manager import ConsumerGroupManager
from coordinator.group import ClassicGroup, GroupState
from coordinator.log import PartitionLog
from coordinator.offset_manager import OffsetMetadataManager
from coordinator.replay import load_durable, replay_live, snapshot_differences, state_snapshot
from coordinator.responses import describe_group
from coordinator.runtime import CoordinatorResult, CoordinatorRuntime
from coordinator.timers import (HEARTBEAT, INITIAL_REBALANCE, JOIN, PENDING_MEMBER, PENDING_SYNC, REBALANCE_TIMEOUT,
                                REGEX_RESOLUTION, RETENTION, RETENTION_TIMER, SESSION_TIMEOUT, Timer,
                                heartbeat_timer, session_timeout_timer)

S = GroupState
E = ErrorCode


class GroupCoordinatorShard:
    """Groups + offsets + timers of one offsets partition, led by ``broker_id``."""

    def __init__(self, partition: int, log: PartitionLog, config: CoordinatorConfig, broker_id: int,
                 new_uuid: Callable[[], str], rng: Any = None, cluster: Cluster | None = None,
                 consumer_assignor: Any = None) -> None:
        self.partition = partition
        self.config = config
        self.broker_id = broker_id
        self.runtime = rt = CoordinatorRuntime(partition, log, new_uuid, rng)
        self.classic = ClassicGroupManager(rt, config)
        self.consumer = ConsumerGroupManager(rt, config, cluster, consumer_assignor, self.classic)
        self.offset_manager = OffsetMetadataManager(rt, config, self.classic, self.consumer)
        # The request operations (Kafka's GroupCoordinatorShard.classicGroupJoin, ...): the manager that holds each
        # API's rules; ``run`` runs one as an operation: ``shard.run(now_ms, context, shard.heartbeat, request)``.
        # ConsumerGroupHeartbeat is the consumer group manager's; the classic ones dispatch by group type (below).
        self.run = rt.run
        self.offset_commit = self.offset_manager.commit
        self.offset_delete = self.offset_manager.delete
        self.consumer_group_heartbeat = self.consumer.heartbeat
        # The timer table: what each kind of timer does when it fires (given the Timer: key and payload).
        # The ``join``/``sync`` kinds with a member are a classic-protocol member inside a consumer group
        # (``join-<group>-<member>``, ``sync-<group>-<member>``).
        c, cg = self.classic, self.consumer
        self._timer_handlers: dict[str, Callable[[Timer], None]] = {
            HEARTBEAT: lambda t: c.expire_heartbeat(t.key.group_id, t.key.member_id),
            PENDING_MEMBER: lambda t: c.expire_pending(t.key.group_id, t.key.member_id),
            INITIAL_REBALANCE: lambda t: c.try_complete_initial_rebalance(t.key.group_id, *t.payload),
            JOIN: lambda t: c.join_timeout(t.key.group_id) if t.key.member_id is None else
            cg.fence_member_operation(t.key.group_id, t.key.member_id,
                                      "the classic member failed to join within the rebalance timeout"),
            PENDING_SYNC: lambda t: c.expire_pending_sync(t.key.group_id, *t.payload) if t.key.member_id is None
            else cg.fence_member_operation(t.key.group_id, t.key.member_id,
                                           "the member failed to sync within timeout"),
            SESSION_TIMEOUT: lambda t: cg.fence_member_operation(t.key.group_id, t.key.member_id,
                                                                 "the member session expired"),
            REBALANCE_TIMEOUT: lambda t: cg.rebalance_timeout(t.key.group_id, t.key.member_id, *t.payload),
            REGEX_RESOLUTION: lambda t: cg.resolve_regular_expressions(t.key.group_id, *t.payload),
            RETENTION: lambda t: self._cleanup_group_metadata(),
        }

    # --- the classic protocol's requests, for a group of either type (GroupMetadataManager.classicGroupJoin & co)

    def join_group(self, req: Any) -> Any:
        """``classicGroupJoin``: a non-empty consumer group serves the classic member (a mixed group,
        ``classicGroupJoinToConsumerGroup``); an empty consumer group is tombstoned and replaced by a classic group
        when the join creates one (``maybeDeleteEmptyConsumerGroup``); otherwise the classic group protocol."""
        cg = self.consumer_groups.get(req.group_id)
        if cg is not None:
            if cg.members:
                return self.consumer.classic_join(req)
            if req.member_id == "":
                self.consumer.delete_group(cg)
        return self.classic.join_group(req)

    def sync_group(self, req: Any) -> Any:
        """``classicGroupSync``: to a consumer group, ``classicGroupSyncToConsumerGroup``."""
        if req.group_id in self.consumer_groups:
            return self.consumer.classic_sync(req)
        return self.classic.sync_group(req)

    def heartbeat(self, req: Any) -> Any:
        """``classicGroupHeartbeat``: to a consumer group, ``classicGroupHeartbeatToConsumerGroup``."""
        if req.group_id in self.consumer_groups:
            return self.consumer.classic_heartbeat(req)
        return self.classic.heartbeat(req)

    def leave_group(self, req: Any) -> Any:
        """``classicGroupLeave``: to a consumer group, ``classicGroupLeaveToConsumerGroup``."""
        if req.group_id in self.consumer_groups:
            return self.consumer.classic_leave(req)
        return self.classic.leave_group(req)

    # --- views (read-only) -----------------------------------------------------------------------------------

    @property
    def log(self) -> PartitionLog:
        return self.runtime.log

    @property
    def groups(self):
        return self.runtime.state.groups

    @property
    def consumer_groups(self):
        return self.runtime.state.consumer_groups

    @property
    def offsets(self):
        return self.runtime.state.offsets

    @property
    def timers(self):
        return self.runtime.timers

    def next_deadline(self) -> int | None:
        return self.runtime.timers.next_deadline()

    def replay_mismatches(self) -> list[str]:
        """Where the live state differs from the replay of the log (empty: the invariant holds). Only meaningful
        once the partition is loaded (before, the state is empty whatever the log holds)."""
        if not self.runtime.loaded:
            return []
        return snapshot_differences(state_snapshot(self.runtime.state), state_snapshot(replay_live(self.log)))

    # --- load / unload (failover) ----------------------------------------------------------------------------

    def load(self, now_ms: int, leader_epoch: int) -> CoordinatorResult:
        """Kafka's partition load (``CoordinatorLoaderImpl`` + ``GroupCoordinatorShard.onLoaded``): the durable
        records rebuild the state, the ``CoordinatorLoaded`` marker says so in the log, every member's session timer
        is armed, groups over capacity rebalance, the offset-expiry sweep starts."""
        result = self.runtime.run(now_ms, None, self._load, leader_epoch)
        self.runtime.loaded = True
        return result

    def _load(self, leader_epoch: int) -> None:
        rt = self.runtime
        rt.replace_state(load_durable(rt.log))
        rt.append(R.CoordinatorLoaded(group_id="", partition=self.partition, broker_id=self.broker_id,
                                      leader_epoch=leader_epoch))
        self.classic.on_loaded()
        self.consumer.on_loaded()
        rt.timers.schedule(RETENTION_TIMER, rt.now_ms + self.config.offsets_retention_check_interval_ms)

    def unload(self, now_ms: int, answer: bool) -> CoordinatorResult:
        """Leadership lost: parked requests get NOT_COORDINATOR (``answer``) or are dropped with the connection
        (broker stopped); timers die with the shard."""
        return self.runtime.run(now_ms, None, self._unload, answer)

    def _unload(self, answer: bool) -> None:
        self.classic.on_unloaded(answer)
        self.runtime.timers.clear()

    # --- timers ----------------------------------------------------------------------------------------------

    def fire_due(self, now_ms: int) -> list[CoordinatorResult]:
        """Fire every timer due at ``now_ms``, each as its own operation at its own deadline (virtual time: as if
        fired on time)."""
        rt = self.runtime
        results = []
        while True:
            t = rt.timers.pop_due(now_ms)
            if t is None:
                return results
            results.append(rt.run(t.deadline_ms, None, self._timer_handlers[t.key.kind], t))

    def expire_session(self, group_id: str, member_id: str, now_ms: int) -> None:
        """Make the member's session timer due at ``now_ms`` (fault injection: ``onExpireHeartbeat``); it fires at
        the next :meth:`fire_due`. A consumer group member's session timer is ``session-timeout-<group>-<member>``."""
        key = session_timeout_timer(group_id, member_id) if group_id in self.consumer_groups else \
            heartbeat_timer(group_id, member_id)
        self.runtime.timers.schedule(key, now_ms)

    # --- other operations -----------------------------------------------------------------------------------

    def delete_group(self, now_ms: int, group_id: str) -> CoordinatorResult:
        """``GroupCoordinatorShard.deleteGroups`` for one group; the result's response is its ErrorCode."""
        return self.runtime.run(now_ms, None, self._delete_group, group_id)

    def _delete_group(self, group_id: str) -> ErrorCode:
        cg = self.consumer_groups.get(group_id)
        if cg is not None:
            e = cg.validate_delete_group()  # ConsumerGroup.validateDeleteGroup: only an Empty group
            if e is not None:
                return e.error
            self._delete(cg, "DeleteGroups")
            return E.NONE
        g = self.groups.get(group_id)
        if g is None:
            return E.GROUP_ID_NOT_FOUND
        if g.state != S.EMPTY:  # ClassicGroup.validateDeleteGroup
            return E.NON_EMPTY_GROUP
        self._delete(g, "DeleteGroups")
        return E.NONE

    def _delete(self, g: ClassicGroup | ConsumerGroup, reason: str) -> None:
        """Offsets tombstoned, then the group (``GroupCoordinatorShard.deleteGroups``)."""
        self.offset_manager.delete_all(g, reason)
        if isinstance(g, ConsumerGroup):
            self.consumer.delete_group(g)
        else:
            self.classic.delete_group(g, reason)

    def _cleanup_group_metadata(self) -> None:
        """The ``offsets-retention`` timer (``cleanupGroupMetadata``): expire offsets; delete Empty groups left
        without offsets; re-arm. Groups of both types, by group id."""
        groups = sorted([*self.groups, *self.consumer_groups], key=lambda g: g.group_id)
        for g in groups:
            if not self.offset_manager.cleanup_expired(g):
                continue
            if isinstance(g, ConsumerGroup):
                if g.state == ConsumerGroupState.EMPTY:
                    self._delete(g, "group is empty and all its offsets expired")
            elif g.state == S.EMPTY:
                self._delete(g, "group is empty and all its offsets expired")
        rt = self.runtime
        rt.timers.schedule(RETENTION_TIMER, rt.now_ms + self.config.offsets_retention_check_interval_ms)

    # --- reads (no operation: nothing changes) ---------------------------------------------------------------

    def fetch_offsets(self, group_id: str, topics: list[tuple[str, list[int]]] | None,
                      member_id: str | None = None, member_epoch: int = -1
                      ) -> list[tuple[str, list[tuple[int, int, int, str]]]]:
        """``fetchOffsets``/``fetchAllOffsets``; raises :class:`~coordinator.errors.ApiError` when the group's
        ``validateOffsetFetch`` refuses the member id / epoch (OffsetFetch v9+)."""
        self.offset_manager.validate_fetch(group_id, member_id, member_epoch)
        return self.offset_manager.fetch(group_id, topics)

    def describe_group(self, group_id: str) -> Any:
        """DescribeGroups: a consumer group is not a classic group, so it is described as Kafka describes an unknown
        one (``classicGroup`` throws ``GroupIdNotFoundException``): "Dead" (v0-5)."""
        return describe_group(group_id, self.groups.get(group_id))

    def describe_consumer_groups(self, group_ids: list[str]) -> list[Any]:
        """ConsumerGroupDescribe (a read: no operation)."""
        return self.consumer.describe(group_ids)

    def list_groups(self) -> list[tuple[str, str, str, str]]:
        """(group id, protocol type, state, type) of the groups of both types."""
        return [(g, pt, st, "classic") for g, pt, st in self.classic.list_groups()] + self.consumer.list_groups()
