"""One coordinator shard: the groups and offsets of one ``__consumer_offsets`` partition on its leader broker.

Mirrors Kafka 4.x's ``GroupCoordinatorShard`` with its ``GroupMetadataManager`` (classic-group handlers and
timers) and ``OffsetMetadataManager`` (offset commit/fetch/delete, expiry). Each handler decides from the current
state, *emits* records (appended to the partition log and applied to the state at once, so the next step sees
them), answers requests and (re)arms timers. Parked JoinGroup/SyncGroup requests are answered later, from another
request or a timer, as ``(request_id, response)`` pairs in the :class:`Ctx` of that later call.

Timer names (one queue per shard; scheduling a name again replaces it):

=============================  ===================================================================================
``heartbeat-<group>-<member>``  session timeout of a member (5 min for a new member awaiting its first join)
``pending-<group>-<member>``    a MEMBER_ID_REQUIRED id that has not rejoined (request's session timeout)
``initial-<group>``             initial delayed join of a group that was Empty (group.initial.rebalance.delay.ms)
``join-<group>``                rebalance timeout of the join phase
``sync-<group>``                pending-sync timeout: members that joined but never sent SyncGroup (KAFKA-12890)
``offsets-retention``           periodic offset expiry and empty-group cleanup
=============================  ===================================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from protocol.error_responses import (join_group_error, offset_delete_error, shape_join_group_response,
                                      sync_group_error)
from protocol.errors import ErrorCode
from protocol.messages import (DescribeGroupsResponse, HeartbeatResponse, JoinGroupResponse, LeaveGroupResponse,
                               OffsetCommitResponse, OffsetDeleteResponse, SyncGroupResponse)

from coordinator import records as R
from coordinator.config import CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS, CoordinatorConfig
from coordinator.group import ClassicGroup, Groups, GroupState, Member, load_groups
from coordinator.log import PartitionLog
from coordinator.offsets import OffsetStore, expired_partitions
from coordinator.records import LogEntry
from coordinator.timers import TimerQueue

S = GroupState
E = ErrorCode


@dataclass
class Parked:
    """A request whose response comes later."""

    request_id: Any
    api_version: int


@dataclass(slots=True)
class Ctx:
    """What one call into the core produced."""

    now_ms: int
    responses: list[tuple[Any, Any]] = field(default_factory=list)
    abandoned: list[Any] = field(default_factory=list)
    records: list[LogEntry] = field(default_factory=list)

    def respond(self, request_id: Any, response: Any) -> None:
        self.responses.append((request_id, response))


def _utf16_len(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


def session_timer(group_id: str, member_id: str) -> tuple[str, tuple[str, str, str]]:
    """The key and action of a member's session timer (``heartbeat-<group>-<member>``)."""
    return f"heartbeat-{group_id}-{member_id}", ("heartbeat", group_id, member_id)


class GroupCoordinatorShard:
    """Groups + offsets + timers of one offsets partition, led by ``broker_id``."""

    def __init__(self, partition: int, log: PartitionLog, config: CoordinatorConfig, broker_id: int,
                 new_uuid: Callable[[], str]) -> None:
        self.partition = partition
        self.log = log
        self.config = config
        self.broker_id = broker_id
        self.new_uuid = new_uuid
        self.groups = Groups()
        self.offsets = OffsetStore()
        self.timers = TimerQueue()
        self.parked_joins: dict[tuple[str, str], Parked] = {}
        self.parked_syncs: dict[tuple[str, str], Parked] = {}

    # --- records ---------------------------------------------------------------------------------------------

    def emit(self, ctx: Ctx, rec: R.Record) -> None:
        entry = self.log.append(rec, ctx.now_ms)
        self.groups.apply(rec, ctx.now_ms)
        self.offsets.apply(rec, ctx.now_ms)
        ctx.records.append(entry)

    # --- load / unload (failover) ----------------------------------------------------------------------------

    def load(self, ctx: Ctx, leader_epoch: int) -> None:
        """Kafka's partition load: replay the durable records, then arm every member's session timer, rebalance
        groups over capacity, start the offset-expiry sweep (``GroupCoordinatorShard.onLoaded``)."""
        durable = list(self.log.durable())
        self.groups = load_groups(durable)
        self.offsets = OffsetStore()
        for rec, ts in durable:
            self.offsets.apply(rec, ts)
        self.emit(ctx, R.CoordinatorLoaded(group_id="", partition=self.partition, broker_id=self.broker_id,
                                           leader_epoch=leader_epoch))
        for g in list(self.groups):
            for m in g.members.values():
                self._reschedule_heartbeat(ctx, g, m)
            if g.size > self.config.group_max_size:
                self._prepare_rebalance(ctx, g, f"Freshly-loaded group {g.group_id} (size {g.size}) is over capacity "
                                                f"{self.config.group_max_size}. Rebalancing in order to give a "
                                                f"chance for consumers to commit offsets")
        self.timers.schedule("offsets-retention", ctx.now_ms + self.config.offsets_retention_check_interval_ms,
                             ("retention",))

    def unload(self, ctx: Ctx, answer: bool) -> None:
        """Leadership lost: parked requests get NOT_COORDINATOR (``answer``) or are dropped with the connection
        (broker stopped); timers die with the shard."""
        for parked_map, make in ((self.parked_joins, lambda: join_group_error(E.NOT_COORDINATOR)),
                                 (self.parked_syncs, lambda: sync_group_error(E.NOT_COORDINATOR))):
            for key in list(parked_map):
                p = parked_map[key]
                if answer:
                    resp = make()
                    if isinstance(resp, JoinGroupResponse):
                        resp.member_id = key[1]
                        resp = shape_join_group_response(resp, p.api_version)
                    ctx.respond(p.request_id, resp)
                else:
                    ctx.abandoned.append(p.request_id)
            parked_map.clear()
        self.timers.clear()

    # --- timers ----------------------------------------------------------------------------------------------

    def next_deadline(self) -> int | None:
        return self.timers.next_deadline()

    def fire_due(self, ctx: Ctx, now_ms: int) -> None:
        """Fire every timer due at ``now_ms``, each at its own deadline (virtual time: as if fired on time)."""
        while True:
            t = self.timers.pop_due(now_ms)
            if t is None:
                break
            saved = ctx.now_ms
            ctx.now_ms = t.deadline_ms
            try:
                self._fire(ctx, t.action)
            finally:
                ctx.now_ms = max(saved, ctx.now_ms)

    def _fire(self, ctx: Ctx, action: tuple) -> None:
        kind = action[0]
        if kind == "heartbeat":
            self._expire_heartbeat(ctx, action[1], action[2])
        elif kind == "pending":
            self._expire_pending(ctx, action[1], action[2])
        elif kind == "initial":
            self._try_complete_initial_rebalance(ctx, action[1], action[2], action[3])
        elif kind == "join":
            g = self.groups.get(action[1])
            if g is not None and g.state == S.PREPARING_REBALANCE:
                self._complete_join(ctx, g)
        elif kind == "sync":
            self._expire_pending_sync(ctx, action[1], action[2])
        elif kind == "retention":
            self._cleanup_group_metadata(ctx)
            self.timers.schedule("offsets-retention", ctx.now_ms + self.config.offsets_retention_check_interval_ms,
                                 ("retention",))

    def _reschedule_heartbeat(self, ctx: Ctx, g: ClassicGroup, m: Member, timeout_ms: int | None = None) -> None:
        timer = m.timer
        if timer is None:
            timer = m.timer = session_timer(g.group_id, m.member_id)
        self.timers.schedule(timer[0], ctx.now_ms + (m.session_timeout_ms if timeout_ms is None else timeout_ms),
                             timer[1])

    def _cancel_heartbeat(self, g: ClassicGroup, member_id: str) -> None:
        self.timers.cancel(session_timer(g.group_id, member_id)[0])

    def _cancel_group_timers(self, group_id: str) -> None:
        for key in (f"join-{group_id}", f"initial-{group_id}", f"sync-{group_id}"):
            self.timers.cancel(key)
        prefix_hb, prefix_p = f"heartbeat-{group_id}-", f"pending-{group_id}-"
        for key in list(self.timers.snapshot()):
            if key.startswith(prefix_hb) or key.startswith(prefix_p):
                t = self.timers.get(key)
                if t is not None and t.action[1] == group_id:
                    self.timers.cancel(key)

    # --- parked requests -------------------------------------------------------------------------------------

    def _park_join(self, ctx: Ctx, group_id: str, member_id: str, parked: Parked) -> None:
        old = self.parked_joins.get((group_id, member_id))
        if old is not None:  # Kafka replaces the future; the earlier request is never answered
            ctx.abandoned.append(old.request_id)
        self.parked_joins[(group_id, member_id)] = parked

    def _complete_join_future(self, ctx: Ctx, group_id: str, member_id: str, resp: Any) -> bool:
        p = self.parked_joins.pop((group_id, member_id), None)
        if p is None:
            return False
        ctx.respond(p.request_id, shape_join_group_response(resp, p.api_version))
        return True

    def _park_sync(self, ctx: Ctx, group_id: str, member_id: str, parked: Parked) -> None:
        old = self.parked_syncs.get((group_id, member_id))
        if old is not None:
            ctx.abandoned.append(old.request_id)
        self.parked_syncs[(group_id, member_id)] = parked

    def _complete_sync_future(self, ctx: Ctx, group_id: str, member_id: str, resp: Any) -> bool:
        p = self.parked_syncs.pop((group_id, member_id), None)
        if p is None:
            return False
        ctx.respond(p.request_id, resp)
        return True

    def _drop_parked(self, ctx: Ctx, group_id: str, member_id: str) -> None:
        for parked_map in (self.parked_joins, self.parked_syncs):
            p = parked_map.pop((group_id, member_id), None)
            if p is not None:
                ctx.abandoned.append(p.request_id)

    def _awaiting_sync(self, group_id: str, member_id: str) -> bool:
        return (group_id, member_id) in self.parked_syncs

    # --- shared validation -----------------------------------------------------------------------------------

    @staticmethod
    def _validate_member(g: ClassicGroup, member_id: str, instance_id: str | None) -> ErrorCode | None:
        """``ClassicGroup.validateMember``."""
        if instance_id is not None:
            existing = g.static_member_id(instance_id)
            if existing is None:
                return E.UNKNOWN_MEMBER_ID
            if existing != member_id:
                return E.FENCED_INSTANCE_ID
        if not g.has_member(member_id):
            return E.UNKNOWN_MEMBER_ID
        return None

    # ==========================================================================================================
    # JoinGroup
    # ==========================================================================================================

    def join_group(self, ctx: Ctx, req: Any, version: int, request_id: Any, client_id: str,
                   client_host: str) -> None:
        """``GroupMetadataManager.classicGroupJoin`` (session-timeout bounds are checked by the service first)."""
        parked = Parked(request_id, version)
        member_id = req.member_id
        is_unknown = member_id == ""
        g = self.groups.get(req.group_id)
        if g is None:
            if not is_unknown:
                ctx.respond(request_id, shape_join_group_response(join_group_error(E.UNKNOWN_MEMBER_ID, member_id), version))
                return
            # The new coordinator persists a new group at once (an empty GroupMetadata record).
            self.emit(ctx, R.GroupMetadata(group_id=req.group_id, current_state_timestamp_ms=ctx.now_ms))
            g = self.groups.get(req.group_id)
        assert g is not None
        if not self._accept_joining_member(g, member_id):
            if g.has_member(member_id):
                self._drop_parked(ctx, g.group_id, member_id)
                self.emit(ctx, R.MemberRemoved(group_id=g.group_id, member_id=member_id,
                                               group_instance_id=g.members[member_id].group_instance_id,
                                               new_leader=g.next_leader_after_removing(member_id),
                                               reason="group max size reached"))
            elif g.is_pending_member(member_id):
                self.emit(ctx, R.PendingMemberRemoved(group_id=g.group_id, member_id=member_id,
                                                      reason="group max size reached"))
            ctx.respond(request_id, shape_join_group_response(join_group_error(E.GROUP_MAX_SIZE_REACHED, ""), version))
            return
        rebalance_timeout = req.rebalance_timeout_ms if version >= 1 and req.rebalance_timeout_ms != -1 \
            else req.session_timeout_ms
        protocols = tuple((p.name, bytes(p.metadata)) for p in req.protocols)
        if is_unknown:
            self._join_new_member(ctx, g, req, version, parked, protocols, rebalance_timeout, client_id, client_host)
        else:
            self._join_existing_member(ctx, g, req, version, parked, protocols, rebalance_timeout, client_id,
                                       client_host)

    def _accept_joining_member(self, g: ClassicGroup, member_id: str) -> bool:
        max_size = self.config.group_max_size
        if g.state in (S.EMPTY, S.DEAD):
            return True
        if g.state == S.PREPARING_REBALANCE:
            return (g.has_member(member_id) and g.members[member_id].awaiting_join) or g.num_awaiting_join < max_size
        return g.has_member(member_id) or g.size < max_size

    def _join_new_member(self, ctx, g, req, version, parked, protocols, rebalance_timeout, client_id, client_host):
        if g.state == S.DEAD:
            ctx.respond(parked.request_id, shape_join_group_response(join_group_error(E.COORDINATOR_NOT_AVAILABLE), version))
            return
        if not g.supports_protocols(req.protocol_type, protocols):
            ctx.respond(parked.request_id,
                        shape_join_group_response(join_group_error(E.INCONSISTENT_GROUP_PROTOCOL), version))
            return
        instance_id = req.group_instance_id if version >= 5 else None
        new_member_id = f"{instance_id if instance_id is not None else client_id}-{self.new_uuid()}"
        if instance_id is not None:
            existing = g.static_member_id(instance_id)
            if existing is not None:
                self._update_static_member(ctx, g, req, version, parked, protocols, rebalance_timeout,
                                           existing, new_member_id)
            else:
                self._add_member(ctx, g, new_member_id, instance_id, req, parked, protocols, rebalance_timeout,
                                 client_id, client_host)
        elif version >= 4:
            # KIP-394: hand out an id, do not add the member until it rejoins with it.
            self.emit(ctx, R.PendingMemberAdded(group_id=g.group_id, member_id=new_member_id))
            self.timers.schedule(f"pending-{g.group_id}-{new_member_id}", ctx.now_ms + req.session_timeout_ms,
                                 ("pending", g.group_id, new_member_id))
            ctx.respond(parked.request_id,
                        shape_join_group_response(join_group_error(E.MEMBER_ID_REQUIRED, new_member_id), version))
        else:
            self._add_member(ctx, g, new_member_id, None, req, parked, protocols, rebalance_timeout, client_id,
                             client_host)

    def _join_existing_member(self, ctx, g, req, version, parked, protocols, rebalance_timeout, client_id,
                              client_host):
        member_id = req.member_id
        instance_id = req.group_instance_id if version >= 5 else None
        if g.state == S.DEAD:
            ctx.respond(parked.request_id,
                        shape_join_group_response(join_group_error(E.COORDINATOR_NOT_AVAILABLE, member_id), version))
            return
        if not g.supports_protocols(req.protocol_type, protocols):
            ctx.respond(parked.request_id,
                        shape_join_group_response(join_group_error(E.INCONSISTENT_GROUP_PROTOCOL, member_id), version))
            return
        if g.is_pending_member(member_id):
            if instance_id is not None:
                # classicGroupJoinExistingMember throws IllegalStateException (a pending member is never static);
                # the runtime fails the operation: UNKNOWN_SERVER_ERROR in a fresh response (member id ""),
                # nothing changes (testJoinGroupExistingPendingMemberWithGroupInstanceIdThrowsException).
                ctx.respond(parked.request_id,
                            shape_join_group_response(join_group_error(E.UNKNOWN_SERVER_ERROR, ""), version))
                return
            # A pending member (never static) is added now.
            self.timers.cancel(f"pending-{g.group_id}-{member_id}")
            self._add_member(ctx, g, member_id, None, req, parked, protocols, rebalance_timeout, client_id,
                             client_host)
            return
        err = self._validate_member(g, member_id, instance_id)
        if err is not None:
            ctx.respond(parked.request_id, shape_join_group_response(join_group_error(err, member_id), version))
            return
        member = g.members[member_id]
        reason = req.reason if version >= 8 and req.reason else "not provided"
        if g.state == S.PREPARING_REBALANCE:
            self._update_member(ctx, g, member, parked, protocols, rebalance_timeout, req.session_timeout_ms,
                                f"Member {member_id} is joining group during {g.state}; client reason: {reason}")
        elif g.state == S.COMPLETING_REBALANCE:
            if member.matches(protocols):
                # Same metadata (it probably missed the JoinGroup response): answer with the current generation.
                ctx.respond(parked.request_id, shape_join_group_response(
                    self._current_join_response(g, member_id, members=g.is_leader(member_id)), version))
            else:
                self._update_member(ctx, g, member, parked, protocols, rebalance_timeout, req.session_timeout_ms,
                                    f"Updating metadata for member {member_id} during {g.state}; "
                                    f"client reason: {reason}")
        elif g.state == S.STABLE:
            if g.is_leader(member_id):
                # A leader JoinGroup always rebalances (it may have seen a metadata change the others did not).
                self._update_member(ctx, g, member, parked, protocols, rebalance_timeout, req.session_timeout_ms,
                                    f"Leader {member_id} re-joining group during {g.state}; client reason: {reason}")
            elif not member.matches(protocols):
                self._update_member(ctx, g, member, parked, protocols, rebalance_timeout, req.session_timeout_ms,
                                    f"Updating metadata for member {member_id} during {g.state}; "
                                    f"client reason: {reason}")
            else:
                ctx.respond(parked.request_id, shape_join_group_response(
                    self._current_join_response(g, member_id, members=False), version))
        else:  # Empty: let the member reset its generation and rejoin
            ctx.respond(parked.request_id, shape_join_group_response(join_group_error(E.UNKNOWN_MEMBER_ID, member_id), version))

    def _current_join_response(self, g: ClassicGroup, member_id: str, members: bool, leader: str | None = None,
                               skip_assignment: bool = False) -> Any:
        return JoinGroupResponse(
            error_code=0, generation_id=g.generation_id, protocol_type=g.protocol_type,
            protocol_name=g.protocol_name, leader=(g.leader_id if leader is None else leader) or "",
            skip_assignment=skip_assignment, member_id=member_id,
            members=[JoinGroupResponse.Member(member_id=mid, group_instance_id=iid, metadata=meta)
                     for mid, iid, meta in g.current_member_list()] if members else [])

    def _add_member(self, ctx, g, member_id, instance_id, req, parked, protocols, rebalance_timeout, client_id,
                    client_host):
        """``addMemberThenRebalanceOrCompleteJoin``."""
        reason = req.reason if parked.api_version >= 8 and req.reason else "not provided"
        self.emit(ctx, R.MemberJoined(group_id=g.group_id, member_id=member_id, group_instance_id=instance_id,
                                      client_id=client_id, client_host=client_host,
                                      rebalance_timeout_ms=rebalance_timeout,
                                      session_timeout_ms=req.session_timeout_ms, protocol_type=req.protocol_type,
                                      protocols=protocols, reason=reason))
        self._park_join(ctx, g.group_id, member_id, parked)
        # New members are timed out after 5 minutes if the join does not complete (KAFKA-9232).
        self._reschedule_heartbeat(ctx, g, g.members[member_id], CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance_or_complete_join(
            ctx, g, f"Adding new member {member_id} with group instance id {instance_id}; client reason: {reason}")

    def _update_member(self, ctx, g, member, parked, protocols, rebalance_timeout, session_timeout, reason):
        """``updateMemberThenRebalanceOrCompleteJoin``."""
        self.emit(ctx, R.MemberRejoined(group_id=g.group_id, member_id=member.member_id,
                                        rebalance_timeout_ms=rebalance_timeout, session_timeout_ms=session_timeout,
                                        protocols=protocols, reason=reason))
        self._park_join(ctx, g.group_id, member.member_id, parked)
        self._maybe_prepare_rebalance_or_complete_join(ctx, g, reason)

    def _update_static_member(self, ctx, g, req, version, parked, protocols, rebalance_timeout, old_member_id,
                              new_member_id):
        """``updateStaticMemberThenRebalanceOrCompleteJoin`` (KIP-345)."""
        instance_id = req.group_instance_id
        current_leader = g.leader_id
        reason = req.reason if version >= 8 and req.reason else "not provided"
        # Fence the old member id: a parked JoinGroup/SyncGroup of it gets FENCED_INSTANCE_ID.
        self._complete_join_future(ctx, g.group_id, old_member_id,
                                   join_group_error(E.FENCED_INSTANCE_ID, old_member_id))
        self._complete_sync_future(ctx, g.group_id, old_member_id, sync_group_error(E.FENCED_INSTANCE_ID))
        # The old member's heartbeat timer expires without effect; the new id gets its own.
        stable = g.state == S.STABLE
        keep_protocol = stable and g.select_protocol_with(old_member_id, protocols) == g.protocol_name
        self.emit(ctx, R.StaticMemberReplaced(group_id=g.group_id, group_instance_id=instance_id,
                                              old_member_id=old_member_id, new_member_id=new_member_id,
                                              rebalance_timeout_ms=rebalance_timeout,
                                              session_timeout_ms=req.session_timeout_ms, protocols=protocols,
                                              awaiting_join=not keep_protocol, reason=reason))
        new_member = g.members[new_member_id]
        self._reschedule_heartbeat(ctx, g, new_member)
        if stable:
            if keep_protocol:
                # Persist the new member id; no rebalance.
                self.emit(ctx, g.to_group_metadata())
                if version >= 9:
                    is_leader = g.is_leader(new_member_id)
                    resp = self._current_join_response(g, new_member_id, members=is_leader,
                                                       skip_assignment=is_leader)
                else:
                    resp = self._current_join_response(g, new_member_id, members=False,
                                                       leader=current_leader or "")
                ctx.respond(parked.request_id, shape_join_group_response(resp, version))
                return
            self._park_join(ctx, g.group_id, new_member_id, parked)
            self._maybe_prepare_rebalance_or_complete_join(
                ctx, g, f"Group's selectedProtocol will change because static member {new_member_id} with instance "
                        f"id {instance_id} joined with change of protocol; client reason: {reason}")
            return
        self._park_join(ctx, g.group_id, new_member_id, parked)
        if g.state == S.COMPLETING_REBALANCE:
            self._prepare_rebalance(ctx, g, f"Updating metadata for static member {new_member_id} with instance id "
                                            f"{instance_id}; client reason: {reason}")
            return
        self._maybe_complete_join_phase(ctx, g)

    # --- rebalance machinery ---------------------------------------------------------------------------------

    def _maybe_prepare_rebalance_or_complete_join(self, ctx: Ctx, g: ClassicGroup, reason: str) -> None:
        if g.can_rebalance():
            self._prepare_rebalance(ctx, g, reason)
        else:
            self._maybe_complete_join_phase(ctx, g)

    def _maybe_complete_join_phase(self, ctx: Ctx, g: ClassicGroup) -> None:
        # The initial rebalance (previous state Empty) never completes early here: only its timer completes it.
        if g.state == S.PREPARING_REBALANCE and g.has_all_members_joined() and g.previous_state != S.EMPTY:
            self._complete_join(ctx, g)

    def _prepare_rebalance(self, ctx: Ctx, g: ClassicGroup, reason: str) -> None:
        """``prepareRebalance``."""
        was_completing = g.state == S.COMPLETING_REBALANCE
        initial = g.state == S.EMPTY
        self.timers.cancel(f"sync-{g.group_id}")
        if initial:
            delay = self.config.group_initial_rebalance_delay_ms
            remaining = max(g.rebalance_timeout_ms() - delay, 0)
        self.emit(ctx, R.RebalanceStarted(group_id=g.group_id, initial=initial, generation_id=g.generation_id,
                                          reason=reason))
        if was_completing:
            # Parked SyncGroups are answered REBALANCE_IN_PROGRESS (assignments were reset by the record).
            self._propagate_assignment(ctx, g, E.REBALANCE_IN_PROGRESS)
        if initial:
            self.timers.schedule(f"initial-{g.group_id}", ctx.now_ms + delay,
                                 ("initial", g.group_id, delay, remaining))
            return
        if g.has_all_members_joined():
            self._complete_join(ctx, g)
        else:
            self.timers.schedule(f"join-{g.group_id}", ctx.now_ms + g.rebalance_timeout_ms(), ("join", g.group_id))

    def _try_complete_initial_rebalance(self, ctx: Ctx, group_id: str, delay: int, remaining: int) -> None:
        g = self.groups.get(group_id)
        if g is None or g.state != S.PREPARING_REBALANCE:
            return
        if g.new_member_added and remaining != 0:
            new_delay = min(self.config.group_initial_rebalance_delay_ms, remaining)
            new_remaining = max(remaining - delay, 0)
            self.emit(ctx, R.InitialRebalanceExtended(group_id=group_id, delay_ms=new_delay,
                                                      remaining_ms=new_remaining))
            self.timers.schedule(f"initial-{group_id}", ctx.now_ms + new_delay,
                                 ("initial", group_id, new_delay, new_remaining))
        else:
            self._complete_join(ctx, g)

    def _complete_join(self, ctx: Ctx, g: ClassicGroup) -> None:
        """``completeClassicGroupJoin``."""
        self.timers.cancel(f"join-{g.group_id}")
        self.timers.cancel(f"initial-{g.group_id}")
        for m in [m for m in g.not_yet_rejoined_members() if not m.is_static]:
            self._drop_parked(ctx, g.group_id, m.member_id)
            self.emit(ctx, R.MemberRemoved(group_id=g.group_id, member_id=m.member_id,
                                           new_leader=g.next_leader_after_removing(m.member_id),
                                           reason="did not rejoin before the join phase completed"))
            self._cancel_heartbeat(g, m.member_id)
        if g.state == S.DEAD:
            return
        leader = g.elect_joined_leader()
        if leader is None and g.members:
            # Only static members that did not rejoin are left: wait another rebalance timeout.
            self.timers.schedule(f"join-{g.group_id}", ctx.now_ms + g.rebalance_timeout_ms(), ("join", g.group_id))
            return
        generation = g.generation_id + 1
        if not g.members:
            self.emit(ctx, R.JoinCompleted(group_id=g.group_id, generation_id=generation))
            self.emit(ctx, g.to_group_metadata())
            return
        self.emit(ctx, R.JoinCompleted(group_id=g.group_id, generation_id=generation,
                                       protocol_name=g.select_protocol(), leader=leader,
                                       members=tuple(g.members)))
        for m in list(g.members.values()):
            self._complete_join_future(ctx, g.group_id, m.member_id,
                                       self._current_join_response(g, m.member_id, members=g.is_leader(m.member_id)))
            self._reschedule_heartbeat(ctx, g, m)
        self.timers.schedule(f"sync-{g.group_id}", ctx.now_ms + g.rebalance_timeout_ms(),
                             ("sync", g.group_id, generation))

    def _propagate_assignment(self, ctx: Ctx, g: ClassicGroup, error: ErrorCode) -> None:
        """``propagateAssignment``: answer every parked SyncGroup; reset those members' session timers."""
        ok = error == E.NONE
        for m in list(g.members.values()):
            resp = SyncGroupResponse(error_code=int(error), protocol_type=g.protocol_type if ok else None,
                                     protocol_name=g.protocol_name if ok else None, assignment=m.assignment)
            if self._complete_sync_future(ctx, g.group_id, m.member_id, resp):
                self._reschedule_heartbeat(ctx, g, m)

    def _expire_pending_sync(self, ctx: Ctx, group_id: str, generation: int) -> None:
        g = self.groups.get(group_id)
        if g is None or generation != g.generation_id:
            return
        if g.state in (S.COMPLETING_REBALANCE, S.STABLE) and not g.has_received_sync_from_all_members():
            pending = list(g.pending_sync_members)
            for mid in pending:
                self._drop_parked(ctx, group_id, mid)
                self.emit(ctx, R.MemberRemoved(group_id=group_id, member_id=mid,
                                               group_instance_id=(g.members[mid].group_instance_id
                                                                  if mid in g.members else None),
                                               new_leader=g.next_leader_after_removing(mid),
                                               reason="pending sync request expired"))
                self._cancel_heartbeat(g, mid)
            self._prepare_rebalance(ctx, g, f"Removing {pending} on pending sync request expiration")

    def _expire_heartbeat(self, ctx: Ctx, group_id: str, member_id: str) -> None:
        g = self.groups.get(group_id)
        if g is None or not g.has_member(member_id):
            return
        m = g.members[member_id]
        satisfied = (not m.is_new) and (m.awaiting_join or self._awaiting_sync(group_id, member_id))
        if not satisfied:
            self._remove_member_and_update(ctx, g, m, f"removing member {member_id} on heartbeat expiration.")

    def _expire_pending(self, ctx: Ctx, group_id: str, member_id: str) -> None:
        g = self.groups.get(group_id)
        if g is None or not g.is_pending_member(member_id):
            return
        self.emit(ctx, R.PendingMemberRemoved(group_id=group_id, member_id=member_id,
                                              reason="pending member session timeout"))
        if g.state == S.PREPARING_REBALANCE and g.has_all_members_joined():
            self._complete_join(ctx, g)

    def _remove_member_and_update(self, ctx: Ctx, g: ClassicGroup, m: Member, reason: str) -> None:
        """``removeMemberAndUpdateClassicGroup``: a parked JoinGroup (new member) gets UNKNOWN_MEMBER_ID."""
        self._complete_join_future(ctx, g.group_id, m.member_id, join_group_error(E.UNKNOWN_MEMBER_ID, ""))
        self._drop_parked(ctx, g.group_id, m.member_id)
        self.emit(ctx, R.MemberRemoved(group_id=g.group_id, member_id=m.member_id,
                                       group_instance_id=m.group_instance_id,
                                       new_leader=g.next_leader_after_removing(m.member_id), reason=reason))
        self._cancel_heartbeat(g, m.member_id)
        if g.state in (S.STABLE, S.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance_or_complete_join(ctx, g, reason)
        elif g.state == S.PREPARING_REBALANCE and g.has_all_members_joined():
            self._complete_join(ctx, g)

    # ==========================================================================================================
    # SyncGroup
    # ==========================================================================================================

    def sync_group(self, ctx: Ctx, req: Any, version: int, request_id: Any) -> None:
        """``classicGroupSync``."""
        g = self.groups.get(req.group_id)
        instance_id = req.group_instance_id if version >= 3 else None
        protocol_type = req.protocol_type if version >= 5 else None
        protocol_name = req.protocol_name if version >= 5 else None

        def err(e: ErrorCode) -> None:
            ctx.respond(request_id, sync_group_error(e))

        if g is None:
            return err(E.UNKNOWN_MEMBER_ID)
        e = self._validate_member(g, req.member_id, instance_id)
        if e is not None:
            return err(e)
        if req.generation_id != g.generation_id:
            return err(E.ILLEGAL_GENERATION)
        if (protocol_type is not None and g.protocol_type is not None and protocol_type != g.protocol_type) or \
                (protocol_name is not None and g.protocol_name is not None and protocol_name != g.protocol_name):
            return err(E.INCONSISTENT_GROUP_PROTOCOL)
        if g.state == S.EMPTY:
            return err(E.UNKNOWN_MEMBER_ID)
        if g.state == S.PREPARING_REBALANCE:
            return err(E.REBALANCE_IN_PROGRESS)
        if g.state == S.COMPLETING_REBALANCE:
            self._park_sync(ctx, g.group_id, req.member_id, Parked(request_id, version))
            self._remove_pending_sync_member(ctx, g, req.member_id)
            if g.is_leader(req.member_id):
                given = {a.member_id: bytes(a.assignment) for a in req.assignments}
                assignment = {mid: given.get(mid, b"") for mid in g.members}
                self.emit(ctx, g.to_group_metadata(assignment))  # -> Stable, assignments set
                self._propagate_assignment(ctx, g, E.NONE)
            return None
        # Stable
        self._remove_pending_sync_member(ctx, g, req.member_id)
        m = g.members[req.member_id]
        ctx.respond(request_id, SyncGroupResponse(error_code=0, protocol_type=g.protocol_type,
                                                  protocol_name=g.protocol_name, assignment=m.assignment))
        return None

    def _remove_pending_sync_member(self, ctx: Ctx, g: ClassicGroup, member_id: str) -> None:
        if member_id in g.pending_sync_members:
            self.emit(ctx, R.SyncReceived(group_id=g.group_id, member_id=member_id, generation_id=g.generation_id))
        if g.has_received_sync_from_all_members():
            self.timers.cancel(f"sync-{g.group_id}")

    # ==========================================================================================================
    # Heartbeat
    # ==========================================================================================================

    def heartbeat(self, ctx: Ctx, req: Any, version: int, request_id: Any) -> None:
        """``classicGroupHeartbeat``."""
        g = self.groups.get(req.group_id)
        if g is None:
            e = E.UNKNOWN_MEMBER_ID
        else:
            member_id = req.member_id
            e = self._validate_member(g, member_id, req.group_instance_id if version >= 3 else None)
            if e is not None:
                pass
            elif req.generation_id != g.generation_id:
                e = E.ILLEGAL_GENERATION
            elif g.state == S.EMPTY:
                e = E.UNKNOWN_MEMBER_ID
            else:
                self._reschedule_heartbeat(ctx, g, g.members[member_id])
                e = E.REBALANCE_IN_PROGRESS if g.state == S.PREPARING_REBALANCE else E.NONE
        ctx.respond(request_id, HeartbeatResponse(error_code=int(e)))

    # ==========================================================================================================
    # LeaveGroup
    # ==========================================================================================================

    def leave_group(self, ctx: Ctx, req: Any, version: int, request_id: Any) -> None:
        """``classicGroupLeave``; v0-2 carry one member id and a single error code."""
        if version >= 3:
            identities = [(m.member_id, m.group_instance_id, m.reason) for m in req.members]
        else:
            identities = [(req.member_id, None, None)]
        g = self.groups.get(req.group_id)
        results: list[tuple[str, str | None, ErrorCode]] = []
        if g is None:
            results = [(mid, iid, E.UNKNOWN_MEMBER_ID) for mid, iid, _ in identities]
        else:
            for mid, iid, reason in identities:
                reason = reason or "not provided"
                if mid == "":
                    target = g.static_member_id(iid)
                    if target is not None:
                        self._remove_current_member(ctx, g, target, reason)
                        results.append((mid, iid, E.NONE))
                    else:
                        results.append((mid, iid, E.UNKNOWN_MEMBER_ID))
                elif g.is_pending_member(mid):
                    self.emit(ctx, R.PendingMemberRemoved(group_id=g.group_id, member_id=mid,
                                                          reason=f"LeaveGroup; client reason: {reason}"))
                    self.timers.cancel(f"pending-{g.group_id}-{mid}")
                    results.append((mid, iid, E.NONE))
                else:
                    e = self._validate_member(g, mid, iid)
                    if e is not None:
                        results.append((mid, iid, e))
                    else:
                        self._remove_current_member(ctx, g, mid, reason)
                        results.append((mid, iid, E.NONE))
            left = [mid for mid, _, e in results if e == E.NONE]
            if left:
                why = f"explicit `LeaveGroup` request for ({', '.join(left)}) members."
                if g.state in (S.STABLE, S.COMPLETING_REBALANCE):
                    self._maybe_prepare_rebalance_or_complete_join(ctx, g, why)
                elif g.state == S.PREPARING_REBALANCE:
                    self._maybe_complete_join_phase(ctx, g)
        ctx.respond(request_id, leave_response(results, version))

    def _remove_current_member(self, ctx: Ctx, g: ClassicGroup, member_id: str, reason: str) -> None:
        m = g.members[member_id]
        self._cancel_heartbeat(g, member_id)
        self._complete_join_future(ctx, g.group_id, member_id, join_group_error(E.UNKNOWN_MEMBER_ID, ""))
        self._drop_parked(ctx, g.group_id, member_id)
        self.emit(ctx, R.MemberRemoved(group_id=g.group_id, member_id=member_id,
                                       group_instance_id=m.group_instance_id,
                                       new_leader=g.next_leader_after_removing(member_id),
                                       reason=f"LeaveGroup; client reason: {reason}"))

    # ==========================================================================================================
    # Offsets
    # ==========================================================================================================

    def offset_commit(self, ctx: Ctx, req: Any, version: int, request_id: Any,
                      pre_errors: dict[tuple[str, int], ErrorCode] | None = None) -> None:
        """``OffsetMetadataManager.commitOffset`` (classic group path). ``pre_errors``: partitions the broker
        already rejected (unknown topic or partition)."""
        pre_errors = pre_errors or {}
        gen = req.generation_id_or_member_epoch
        instance_id = req.group_instance_id if version >= 7 else None
        g = self.groups.get(req.group_id)
        error: ErrorCode | None = None
        if g is None:
            if gen < 0:
                pass  # a "simple" group is created by the first OffsetCommit record
            else:
                error = E.GROUP_ID_NOT_FOUND if version >= 9 else E.ILLEGAL_GENERATION
        else:
            error = self._validate_offset_commit(g, req.member_id, instance_id, gen)
            if error is None and g.state in (S.STABLE, S.PREPARING_REBALANCE):
                # Offset commits keep the session alive in Stable and PreparingRebalance.
                self._reschedule_heartbeat(ctx, g, g.members[req.member_id])
        out = []
        for t in req.topics:
            parts = []
            for p in t.partitions:
                key = (t.name, p.partition_index)
                if key in pre_errors:
                    e = pre_errors[key]
                elif error is not None:
                    e = error
                elif p.committed_metadata is not None and \
                        _utf16_len(p.committed_metadata) > self.config.offset_metadata_max_bytes:
                    e = E.OFFSET_METADATA_TOO_LARGE
                else:
                    retention = req.retention_time_ms if 2 <= version <= 4 else -1
                    self.emit(ctx, R.OffsetCommit(
                        group_id=req.group_id, topic=t.name, partition=p.partition_index,
                        offset=p.committed_offset, leader_epoch=p.committed_leader_epoch if version >= 6 else -1,
                        metadata=p.committed_metadata or "", commit_timestamp_ms=ctx.now_ms,
                        expire_timestamp_ms=ctx.now_ms + retention if retention != -1 else -1))
                    e = E.NONE
                parts.append(OffsetCommitResponse.Topic.Partition(partition_index=p.partition_index,
                                                                  error_code=int(e)))
            out.append(OffsetCommitResponse.Topic(name=t.name, partitions=parts))
        ctx.respond(request_id, OffsetCommitResponse(topics=out))

    def _validate_offset_commit(self, g: ClassicGroup, member_id: str, instance_id: str | None,
                                gen: int) -> ErrorCode | None:
        """``ClassicGroup.validateOffsetCommit``."""
        if g.state == S.DEAD:
            return E.COORDINATOR_NOT_AVAILABLE
        if gen < 0 and g.state == S.EMPTY:
            return None  # admin / manual-assignment commit
        if gen >= 0 or member_id != "" or instance_id is not None:
            e = self._validate_member(g, member_id, instance_id)
            if e is not None:
                return e
            if gen != g.generation_id:
                return E.ILLEGAL_GENERATION
        elif g.state != S.EMPTY:
            return E.UNKNOWN_MEMBER_ID
        if g.state == S.COMPLETING_REBALANCE:
            return E.REBALANCE_IN_PROGRESS
        return None

    def fetch_offsets(self, group_id: str, topics: list[tuple[str, list[int]]] | None
                      ) -> list[tuple[str, list[tuple[int, int, int, str]]]]:
        """(topic, [(partition, offset, leader_epoch, metadata)]); ``topics=None``: every committed offset.
        Unknown group/partition: offset -1, epoch -1, metadata "" (no error)."""
        if topics is None:
            by_topic: dict[str, list[tuple[int, int, int, str]]] = {}
            for (t, p), o in self.offsets.group_offsets(group_id).items():
                by_topic.setdefault(t, []).append((p, o.offset, o.leader_epoch, o.metadata))
            return list(by_topic.items())
        out = []
        for t, parts in topics:
            rows = []
            for p in parts:
                o = self.offsets.get(group_id, t, p)
                rows.append((p, -1, -1, "") if o is None else (p, o.offset, o.leader_epoch, o.metadata))
            out.append((t, rows))
        return out

    def offset_delete(self, ctx: Ctx, req: Any, version: int, request_id: Any) -> None:
        """``OffsetMetadataManager.deleteOffsets`` with ``ClassicGroup.validateOffsetDelete``."""
        g = self.groups.get(req.group_id)
        if g is None or g.state == S.DEAD:
            ctx.respond(request_id, offset_delete_error(E.GROUP_ID_NOT_FOUND))
            return
        if g.state in (S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE) and g.protocol_type != "consumer":
            ctx.respond(request_id, offset_delete_error(E.NON_EMPTY_GROUP))
            return
        out = []
        for t in req.topics:
            subscribed = g.is_subscribed_to_topic(t.name)
            parts = []
            for p in t.partitions:
                if subscribed:
                    e = E.GROUP_SUBSCRIBED_TO_TOPIC
                else:
                    if self.offsets.get(g.group_id, t.name, p.partition_index) is not None:
                        self.emit(ctx, R.OffsetTombstone(group_id=g.group_id, topic=t.name,
                                                         partition=p.partition_index, reason="OffsetDelete"))
                    e = E.NONE
                parts.append(OffsetDeleteResponse.Topic.Partition(partition_index=p.partition_index,
                                                                  error_code=int(e)))
            out.append(OffsetDeleteResponse.Topic(name=t.name, partitions=parts))
        ctx.respond(request_id, OffsetDeleteResponse(error_code=0, topics=out))

    # ==========================================================================================================
    # Describe / List / Delete
    # ==========================================================================================================

    def describe_group(self, group_id: str) -> Any:
        g = self.groups.get(group_id)
        if g is None:
            return DescribeGroupsResponse.DescribedGroup(error_code=0, group_id=group_id, group_state="Dead",
                                                         protocol_type="", protocol_data="", members=[])
        stable = g.state == S.STABLE
        # ClassicGroupMember.describe / describeNoMetadata: the metadata only when Stable, but the member's
        # current assignment in every state (the old Scala coordinator sent empty bytes outside Stable).
        members = [DescribeGroupsResponse.DescribedGroup.Member(
            member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
            client_host=m.client_host, member_metadata=m.metadata(g.protocol_name) if stable else b"",
            member_assignment=m.assignment) for m in g.members.values()]
        return DescribeGroupsResponse.DescribedGroup(
            error_code=0, group_id=group_id, group_state=str(g.state), protocol_type=g.protocol_type or "",
            protocol_data=(g.protocol_name or "") if stable else "", members=members)

    def list_groups(self) -> list[tuple[str, str, str]]:
        """(group_id, protocol_type, state) of every group, sorted by group id."""
        return [(g.group_id, g.protocol_type or "", str(g.state))
                for g in sorted(self.groups, key=lambda g: g.group_id)]

    def delete_group(self, ctx: Ctx, group_id: str) -> ErrorCode:
        """``GroupCoordinatorShard.deleteGroups`` for one group: offsets tombstoned, then the group."""
        g = self.groups.get(group_id)
        if g is None:
            return E.GROUP_ID_NOT_FOUND
        if g.state != S.EMPTY:
            return E.NON_EMPTY_GROUP
        self._delete_group(ctx, g, "DeleteGroups")
        return E.NONE

    def _delete_group(self, ctx: Ctx, g: ClassicGroup, reason: str) -> None:
        for (t, p) in self.offsets.group_offsets(g.group_id):
            self.emit(ctx, R.OffsetTombstone(group_id=g.group_id, topic=t, partition=p, reason=reason))
        for mid in list(g.pending_members):
            self.timers.cancel(f"pending-{g.group_id}-{mid}")
        self._cancel_group_timers(g.group_id)
        self.emit(ctx, R.GroupTombstone(group_id=g.group_id, reason=reason))

    def _cleanup_group_metadata(self, ctx: Ctx) -> None:
        """Offset expiry sweep (``cleanupGroupMetadata``): expire offsets; delete Empty groups left offset-less."""
        retention = self.config.offsets_retention_ms
        for g in sorted(self.groups, key=lambda g: g.group_id):
            for (t, p) in expired_partitions(self.offsets, g, ctx.now_ms, retention):
                self.emit(ctx, R.OffsetTombstone(group_id=g.group_id, topic=t, partition=p,
                                                 reason="offset expired"))
            if not self.offsets.has_offsets(g.group_id) and g.state == S.EMPTY:
                self._delete_group(ctx, g, "group is empty and all its offsets expired")


def leave_response(results: list[tuple[str, str | None, ErrorCode]], version: int) -> Any:
    if version >= 3:
        return LeaveGroupResponse(error_code=0, members=[
            LeaveGroupResponse.MemberResponse(member_id=mid, group_instance_id=iid, error_code=int(e))
            for mid, iid, e in results])
    first = next((e for _, _, e in results if e != E.NONE), E.NONE)
    return LeaveGroupResponse(error_code=int(first))
