"""The classic group protocol's handlers and timers (Kafka 4.x ``GroupMetadataManager``, its ``classicGroup*``
part: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, the rebalance machinery and the session/join/sync timers).

Rules this file lives by
------------------------
* A handler gets the request (its ``RequestContext`` -- version, client id -- is ``self.rt.request``) and decides
  from the current state (``coordinator.group``: the groups and their derived predicates) and
  changes it only by appending records through the shard's runtime (``self.rt.append``): each record is replayed
  into the state at once, so the next step of the handler sees it. Nothing here assigns to group state.
* A handler returns the answer to its request, or :data:`~coordinator.runtime.PARKED` when the request waits (a
  JoinGroup until its join phase completes, a follower's SyncGroup until the leader's assignment is persisted).
  Parked requests are answered later through ``self.rt.release`` -- by another request's handler or a timer -- or
  reported with ``self.rt.abandon`` when Kafka never answers them (a future replaced by a newer request).
* Timers are armed and cancelled by their names (``coordinator.timers``); their expiry handlers are here and the
  shard dispatches to them.
* The KIP-848 consumer group gets its own manager beside this one; the shard routes each API to the manager of
  the group's type.

Every JoinGroup answer leaves through :meth:`ClassicGroupManager._answer_join`, which shapes it for the version of
the request it answers (``JoinGroupResponse(data, version)``).
"""

from __future__ import annotations

from typing import Any

from protocol.error_responses import join_group_error, shape_join_group_response, sync_group_error
from protocol.errors import ErrorCode
from protocol.messages import HeartbeatResponse

from coordinator import records as R
from coordinator.config import CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS, CoordinatorConfig
from coordinator.group import ClassicGroup, GroupState, Member
from coordinator.responses import join_response, leave_response, sync_response
from coordinator.runtime import PARKED, CoordinatorRuntime, OperationError, Parked
from coordinator.timers import (heartbeat_timer, initial_rebalance_timer, join_timer, pending_member_timer,
                                pending_sync_timer)

S = GroupState
E = ErrorCode


class ClassicGroupManager:
    """The classic groups of one offsets partition: request handlers, rebalance machinery, timer expiry."""

    def __init__(self, rt: CoordinatorRuntime, config: CoordinatorConfig) -> None:
        self.rt = rt
        self.config = config
        self.groups = rt.state.groups  # read-only here: changed by rt.append only
        self.timers = rt.timers
        self.parked_joins = rt.parked_joins
        self.parked_syncs = rt.parked_syncs

    # --- timers ----------------------------------------------------------------------------------------------

    def reschedule_heartbeat(self, g: ClassicGroup, m: Member, timeout_ms: int | None = None) -> None:
        key = m.timer
        if key is None:
            key = m.timer = heartbeat_timer(g.group_id, m.member_id)
        self.timers.schedule(key, self.rt.now_ms + (m.session_timeout_ms if timeout_ms is None else timeout_ms))

    def _cancel_heartbeat(self, g: ClassicGroup, member_id: str) -> None:
        self.timers.cancel(heartbeat_timer(g.group_id, member_id))

    # --- parked requests -------------------------------------------------------------------------------------

    def _park_join(self, group_id: str, member_id: str) -> None:
        """Park the JoinGroup being handled; Kafka replaces the member's future, the earlier request is never
        answered."""
        context = self.rt.request
        old = self.parked_joins.park((group_id, member_id), Parked(context.request_id, context.api_version))
        if old is not None:
            self.rt.abandon(old.request_id)

    def _answer_join(self, resp: Any) -> Any:
        """The answer to the JoinGroup being handled, shaped for its version."""
        return shape_join_group_response(resp, self.rt.request.api_version)

    def _complete_join_future(self, group_id: str, member_id: str, resp: Any) -> bool:
        p = self.parked_joins.pop((group_id, member_id))
        if p is None:
            return False
        self.rt.release(p.request_id, shape_join_group_response(resp, p.api_version))
        return True

    def _park_sync(self, group_id: str, member_id: str) -> None:
        context = self.rt.request
        old = self.parked_syncs.park((group_id, member_id), Parked(context.request_id, context.api_version))
        if old is not None:
            self.rt.abandon(old.request_id)

    def _complete_sync_future(self, group_id: str, member_id: str, resp: Any) -> bool:
        p = self.parked_syncs.pop((group_id, member_id))
        if p is None:
            return False
        self.rt.release(p.request_id, resp)
        return True

    def _drop_parked(self, group_id: str, member_id: str) -> None:
        for table in (self.parked_joins, self.parked_syncs):
            p = table.pop((group_id, member_id))
            if p is not None:
                self.rt.abandon(p.request_id)

    def _awaiting_sync(self, group_id: str, member_id: str) -> bool:
        return (group_id, member_id) in self.parked_syncs

    # --- load / unload ---------------------------------------------------------------------------------------

    def on_loaded(self) -> None:
        """``GroupMetadataManager.onLoaded`` for classic groups: arm every member's session timer; a group over
        ``group.max.size`` rebalances at once (so its members can commit before the extra ones are removed)."""
        for g in list(self.groups):
            for m in g.members.values():
                self.reschedule_heartbeat(g, m)
            if g.size > self.config.group_max_size:
                self._prepare_rebalance(g, f"Freshly-loaded group {g.group_id} (size {g.size}) is over capacity "
                                           f"{self.config.group_max_size}. Rebalancing in order to give a "
                                           f"chance for consumers to commit offsets")

    def on_unloaded(self, answer: bool) -> None:
        """Leadership lost (``GroupMetadataManager.onUnloaded``): parked requests get NOT_COORDINATOR (``answer``)
        or are dropped with the connection (the broker stopped)."""
        for table, make in ((self.parked_joins, lambda: join_group_error(E.NOT_COORDINATOR)),
                            (self.parked_syncs, lambda: sync_group_error(E.NOT_COORDINATOR))):
            for key, p in table.drain():
                if answer:
                    resp = make()
                    if table is self.parked_joins:
                        resp.member_id = key[1]
                        resp = shape_join_group_response(resp, p.api_version)
                    self.rt.release(p.request_id, resp)
                else:
                    self.rt.abandon(p.request_id)

    # ==========================================================================================================
    # JoinGroup
    # ==========================================================================================================

    def join_group(self, req: Any) -> Any:
        """``GroupMetadataManager.classicGroupJoin`` (session-timeout bounds are checked by the service first)."""
        context = self.rt.request
        version, client_id, client_host = context.api_version, context.client_id, context.client_host
        member_id = req.member_id
        is_unknown = member_id == ""
        g = self.groups.get(req.group_id)
        if g is None:
            if not is_unknown:
                return self._answer_join(join_group_error(E.UNKNOWN_MEMBER_ID, member_id))
            # The new coordinator persists a new group at once (an empty GroupMetadata record).
            self.rt.append(R.GroupMetadata(group_id=req.group_id, current_state_timestamp_ms=self.rt.now_ms))
            g = self.groups.get(req.group_id)
        assert g is not None
        if not self._accept_joining_member(g, member_id):
            if g.has_member(member_id):
                self._drop_parked(g.group_id, member_id)
                self.rt.append(R.MemberRemoved(group_id=g.group_id, member_id=member_id,
                                               group_instance_id=g.members[member_id].group_instance_id,
                                               new_leader=g.next_leader_after_removing(member_id),
                                               reason="group max size reached"))
            elif g.is_pending_member(member_id):
                self.rt.append(R.PendingMemberRemoved(group_id=g.group_id, member_id=member_id,
                                                      reason="group max size reached"))
            return self._answer_join(join_group_error(E.GROUP_MAX_SIZE_REACHED, ""))
        rebalance_timeout = req.rebalance_timeout_ms if version >= 1 and req.rebalance_timeout_ms != -1 \
            else req.session_timeout_ms
        protocols = tuple((p.name, bytes(p.metadata)) for p in req.protocols)
        if is_unknown:
            return self._join_new_member(g, req, version, protocols, rebalance_timeout, client_id, client_host)
        return self._join_existing_member(g, req, version, protocols, rebalance_timeout, client_id, client_host)

    def _accept_joining_member(self, g: ClassicGroup, member_id: str) -> bool:
        """``acceptJoiningMember``: pending members are not counted."""
        max_size = self.config.group_max_size
        if g.state in (S.EMPTY, S.DEAD):
            return True
        if g.state == S.PREPARING_REBALANCE:
            return (g.has_member(member_id) and g.members[member_id].awaiting_join) or g.num_awaiting_join < max_size
        return g.has_member(member_id) or g.size < max_size

    def _join_new_member(self, g, req, version, protocols, rebalance_timeout, client_id, client_host) -> Any:
        if g.state == S.DEAD:
            return self._answer_join(join_group_error(E.COORDINATOR_NOT_AVAILABLE))
        if not g.supports_protocols(req.protocol_type, protocols):
            return self._answer_join(join_group_error(E.INCONSISTENT_GROUP_PROTOCOL))
        instance_id = req.group_instance_id if version >= 5 else None
        new_member_id = f"{instance_id if instance_id is not None else client_id}-{self.rt.new_uuid()}"
        if instance_id is not None:
            existing = g.static_member_id(instance_id)
            if existing is not None:
                return self._update_static_member(g, req, version, protocols, rebalance_timeout, existing,
                                                  new_member_id)
            self._add_member(g, new_member_id, instance_id, req, protocols, rebalance_timeout, client_id,
                             client_host)
            return PARKED
        if version >= 4:
            # KIP-394: hand out an id, do not add the member until it rejoins with it.
            self.rt.append(R.PendingMemberAdded(group_id=g.group_id, member_id=new_member_id))
            self.timers.schedule(pending_member_timer(g.group_id, new_member_id),
                                 self.rt.now_ms + req.session_timeout_ms)
            return self._answer_join(join_group_error(E.MEMBER_ID_REQUIRED, new_member_id))
        self._add_member(g, new_member_id, None, req, protocols, rebalance_timeout, client_id, client_host)
        return PARKED

    def _join_existing_member(self, g, req, version, protocols, rebalance_timeout, client_id, client_host) -> Any:
        member_id = req.member_id
        instance_id = req.group_instance_id if version >= 5 else None
        if g.state == S.DEAD:
            return self._answer_join(join_group_error(E.COORDINATOR_NOT_AVAILABLE, member_id))
        if not g.supports_protocols(req.protocol_type, protocols):
            return self._answer_join(join_group_error(E.INCONSISTENT_GROUP_PROTOCOL, member_id))
        if g.is_pending_member(member_id):
            if instance_id is not None:
                # classicGroupJoinExistingMember throws IllegalStateException (a pending member is never static);
                # the runtime fails the operation: UNKNOWN_SERVER_ERROR in a fresh response (member id ""),
                # nothing changes (testJoinGroupExistingPendingMemberWithGroupInstanceIdThrowsException).
                raise OperationError(E.UNKNOWN_SERVER_ERROR, f"pending member {member_id} of group {g.group_id} "
                                                             f"rejoined with group instance id {instance_id}")
            # A pending member (never static) is added now.
            self.timers.cancel(pending_member_timer(g.group_id, member_id))
            self._add_member(g, member_id, None, req, protocols, rebalance_timeout, client_id, client_host)
            return PARKED
        err = g.validate_member(member_id, instance_id)
        if err is not None:
            return self._answer_join(join_group_error(err, member_id))
        member = g.members[member_id]
        reason = req.reason if version >= 8 and req.reason else "not provided"
        if g.state == S.PREPARING_REBALANCE:
            self._update_member(g, member, protocols, rebalance_timeout, req.session_timeout_ms,
                                f"Member {member_id} is joining group during {g.state}; client reason: {reason}")
            return PARKED
        if g.state == S.COMPLETING_REBALANCE:
            if member.matches(protocols):
                # Same metadata (it probably missed the JoinGroup response): answer with the current generation.
                return self._answer_join(join_response(g, member_id, members=g.is_leader(member_id)))
            self._update_member(g, member, protocols, rebalance_timeout, req.session_timeout_ms,
                                f"Updating metadata for member {member_id} during {g.state}; client reason: {reason}")
            return PARKED
        if g.state == S.STABLE:
            if g.is_leader(member_id):
                # A leader JoinGroup always rebalances (it may have seen a metadata change the others did not).
                self._update_member(g, member, protocols, rebalance_timeout, req.session_timeout_ms,
                                    f"Leader {member_id} re-joining group during {g.state}; client reason: {reason}")
                return PARKED
            if not member.matches(protocols):
                self._update_member(g, member, protocols, rebalance_timeout, req.session_timeout_ms,
                                    f"Updating metadata for member {member_id} during {g.state}; "
                                    f"client reason: {reason}")
                return PARKED
            return self._answer_join(join_response(g, member_id, members=False))
        # Empty: let the member reset its generation and rejoin
        return self._answer_join(join_group_error(E.UNKNOWN_MEMBER_ID, member_id))

    def _add_member(self, g, member_id, instance_id, req, protocols, rebalance_timeout, client_id,
                    client_host) -> None:
        """``addMemberThenRebalanceOrCompleteJoin``."""
        reason = req.reason if self.rt.request.api_version >= 8 and req.reason else "not provided"
        self.rt.append(R.MemberJoined(group_id=g.group_id, member_id=member_id, group_instance_id=instance_id,
                                      client_id=client_id, client_host=client_host,
                                      rebalance_timeout_ms=rebalance_timeout,
                                      session_timeout_ms=req.session_timeout_ms, protocol_type=req.protocol_type,
                                      protocols=protocols, reason=reason))
        self._park_join(g.group_id, member_id)
        # New members are timed out after 5 minutes if the join does not complete (KAFKA-9232).
        self.reschedule_heartbeat(g, g.members[member_id], CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance_or_complete_join(
            g, f"Adding new member {member_id} with group instance id {instance_id}; client reason: {reason}")

    def _update_member(self, g, member, protocols, rebalance_timeout, session_timeout, reason) -> None:
        """``updateMemberThenRebalanceOrCompleteJoin``."""
        self.rt.append(R.MemberRejoined(group_id=g.group_id, member_id=member.member_id,
                                        rebalance_timeout_ms=rebalance_timeout, session_timeout_ms=session_timeout,
                                        protocols=protocols, reason=reason))
        self._park_join(g.group_id, member.member_id)
        self._maybe_prepare_rebalance_or_complete_join(g, reason)

    def _update_static_member(self, g, req, version, protocols, rebalance_timeout, old_member_id,
                              new_member_id) -> Any:
        """``updateStaticMemberThenRebalanceOrCompleteJoin`` (KIP-345)."""
        instance_id = req.group_instance_id
        current_leader = g.leader_id
        reason = req.reason if version >= 8 and req.reason else "not provided"
        # Fence the old member id: a parked JoinGroup/SyncGroup of it gets FENCED_INSTANCE_ID.
        self._complete_join_future(g.group_id, old_member_id, join_group_error(E.FENCED_INSTANCE_ID, old_member_id))
        self._complete_sync_future(g.group_id, old_member_id, sync_group_error(E.FENCED_INSTANCE_ID))
        # The old member's heartbeat timer expires without effect; the new id gets its own.
        stable = g.state == S.STABLE
        keep_protocol = stable and g.select_protocol_with(old_member_id, protocols) == g.protocol_name
        self.rt.append(R.StaticMemberReplaced(group_id=g.group_id, group_instance_id=instance_id,
                                              old_member_id=old_member_id, new_member_id=new_member_id,
                                              rebalance_timeout_ms=rebalance_timeout,
                                              session_timeout_ms=req.session_timeout_ms, protocols=protocols,
                                              awaiting_join=not keep_protocol, reason=reason))
        new_member = g.members[new_member_id]
        self.reschedule_heartbeat(g, new_member)
        if stable:
            if keep_protocol:
                # Persist the new member id; no rebalance.
                self.rt.append(g.to_group_metadata())
                if version >= 9:
                    is_leader = g.is_leader(new_member_id)
                    resp = join_response(g, new_member_id, members=is_leader, skip_assignment=is_leader)
                else:
                    resp = join_response(g, new_member_id, members=False, leader=current_leader or "")
                return self._answer_join(resp)
            self._park_join(g.group_id, new_member_id)
            self._maybe_prepare_rebalance_or_complete_join(
                g, f"Group's selectedProtocol will change because static member {new_member_id} with instance "
                   f"id {instance_id} joined with change of protocol; client reason: {reason}")
            return PARKED
        self._park_join(g.group_id, new_member_id)
        if g.state == S.COMPLETING_REBALANCE:
            self._prepare_rebalance(g, f"Updating metadata for static member {new_member_id} with instance id "
                                       f"{instance_id}; client reason: {reason}")
            return PARKED
        self._maybe_complete_join_phase(g)
        return PARKED

    # --- rebalance machinery ---------------------------------------------------------------------------------

    def _maybe_prepare_rebalance_or_complete_join(self, g: ClassicGroup, reason: str) -> None:
        if g.can_rebalance():
            self._prepare_rebalance(g, reason)
        else:
            self._maybe_complete_join_phase(g)

    def _maybe_complete_join_phase(self, g: ClassicGroup) -> None:
        # The initial rebalance (previous state Empty) never completes early here: only its timer completes it.
        if g.state == S.PREPARING_REBALANCE and g.has_all_members_joined() and g.previous_state != S.EMPTY:
            self._complete_join(g)

    def _prepare_rebalance(self, g: ClassicGroup, reason: str) -> None:
        """``prepareRebalance``."""
        was_completing = g.state == S.COMPLETING_REBALANCE
        initial = g.state == S.EMPTY
        self.timers.cancel(pending_sync_timer(g.group_id))
        if initial:
            delay = self.config.group_initial_rebalance_delay_ms
            remaining = max(g.rebalance_timeout_ms() - delay, 0)
        self.rt.append(R.RebalanceStarted(group_id=g.group_id, initial=initial, generation_id=g.generation_id,
                                          reason=reason))
        if was_completing:
            # Parked SyncGroups are answered REBALANCE_IN_PROGRESS (assignments were reset by the record).
            self._propagate_assignment(g, E.REBALANCE_IN_PROGRESS)
        if initial:
            self.timers.schedule(initial_rebalance_timer(g.group_id), self.rt.now_ms + delay, (delay, remaining))
            return
        if g.has_all_members_joined():
            self._complete_join(g)
        else:
            self.timers.schedule(join_timer(g.group_id), self.rt.now_ms + g.rebalance_timeout_ms())

    def try_complete_initial_rebalance(self, group_id: str, delay: int, remaining: int) -> None:
        """The ``initial-<group>`` timer (``tryCompleteInitialRebalanceElseSchedule``): a member arrived during the
        window and time remains -> another window; else complete the join."""
        g = self.groups.get(group_id)
        if g is None or g.state != S.PREPARING_REBALANCE:
            return
        if g.new_member_added and remaining != 0:
            new_delay = min(self.config.group_initial_rebalance_delay_ms, remaining)
            new_remaining = max(remaining - delay, 0)
            self.rt.append(R.InitialRebalanceExtended(group_id=group_id, delay_ms=new_delay,
                                                      remaining_ms=new_remaining))
            self.timers.schedule(initial_rebalance_timer(group_id), self.rt.now_ms + new_delay,
                                 (new_delay, new_remaining))
        else:
            self._complete_join(g)

    def join_timeout(self, group_id: str) -> None:
        """The ``join-<group>`` timer: the rebalance timeout of the join phase."""
        g = self.groups.get(group_id)
        if g is not None and g.state == S.PREPARING_REBALANCE:
            self._complete_join(g)

    def _complete_join(self, g: ClassicGroup) -> None:
        """``completeClassicGroupJoin``."""
        self.timers.cancel(join_timer(g.group_id))
        self.timers.cancel(initial_rebalance_timer(g.group_id))
        for m in [m for m in g.not_yet_rejoined_members() if not m.is_static]:
            self._drop_parked(g.group_id, m.member_id)
            self.rt.append(R.MemberRemoved(group_id=g.group_id, member_id=m.member_id,
                                           new_leader=g.next_leader_after_removing(m.member_id),
                                           reason="did not rejoin before the join phase completed"))
            self._cancel_heartbeat(g, m.member_id)
        if g.state == S.DEAD:
            return
        leader = g.elect_joined_leader()
        if leader is None and g.members:
            # Only static members that did not rejoin are left: wait another rebalance timeout.
            self.timers.schedule(join_timer(g.group_id), self.rt.now_ms + g.rebalance_timeout_ms())
            return
        generation = g.generation_id + 1
        if not g.members:
            self.rt.append(R.JoinCompleted(group_id=g.group_id, generation_id=generation))
            self.rt.append(g.to_group_metadata())
            return
        self.rt.append(R.JoinCompleted(group_id=g.group_id, generation_id=generation,
                                       protocol_name=g.select_protocol(), leader=leader,
                                       members=tuple(g.members)))
        for m in list(g.members.values()):
            self._complete_join_future(g.group_id, m.member_id,
                                       join_response(g, m.member_id, members=g.is_leader(m.member_id)))
            self.reschedule_heartbeat(g, m)
        self.timers.schedule(pending_sync_timer(g.group_id), self.rt.now_ms + g.rebalance_timeout_ms(),
                             (generation,))

    def _propagate_assignment(self, g: ClassicGroup, error: ErrorCode) -> None:
        """``propagateAssignment``: answer every parked SyncGroup; reset those members' session timers."""
        for m in list(g.members.values()):
            if self._complete_sync_future(g.group_id, m.member_id, sync_response(g, m.assignment, error)):
                self.reschedule_heartbeat(g, m)

    def expire_pending_sync(self, group_id: str, generation: int) -> None:
        """The ``sync-<group>`` timer (``expirePendingSync``, KAFKA-12890): members of this generation that never
        sent SyncGroup are removed and the group rebalances."""
        g = self.groups.get(group_id)
        if g is None or generation != g.generation_id:
            return
        if g.state in (S.COMPLETING_REBALANCE, S.STABLE) and not g.has_received_sync_from_all_members():
            pending = list(g.pending_sync_members)
            for mid in pending:
                self._drop_parked(group_id, mid)
                self.rt.append(R.MemberRemoved(group_id=group_id, member_id=mid,
                                               group_instance_id=(g.members[mid].group_instance_id
                                                                  if mid in g.members else None),
                                               new_leader=g.next_leader_after_removing(mid),
                                               reason="pending sync request expired"))
                self._cancel_heartbeat(g, mid)
            self._prepare_rebalance(g, f"Removing {pending} on pending sync request expiration")

    def expire_heartbeat(self, group_id: str, member_id: str) -> None:
        """The ``heartbeat-<group>-<member>`` timer (``expireClassicGroupMemberHeartbeat``): a member that is not
        new and awaits a join or sync answer is spared (``hasSatisfiedHeartbeat``); else it is removed."""
        g = self.groups.get(group_id)
        if g is None or not g.has_member(member_id):
            return
        m = g.members[member_id]
        satisfied = (not m.is_new) and (m.awaiting_join or self._awaiting_sync(group_id, member_id))
        if not satisfied:
            self._remove_member_and_update(g, m, f"removing member {member_id} on heartbeat expiration.")

    def expire_pending(self, group_id: str, member_id: str) -> None:
        """The ``pending-<group>-<member>`` timer: the pending id is dropped; the join may complete now."""
        g = self.groups.get(group_id)
        if g is None or not g.is_pending_member(member_id):
            return
        self.rt.append(R.PendingMemberRemoved(group_id=group_id, member_id=member_id,
                                              reason="pending member session timeout"))
        if g.state == S.PREPARING_REBALANCE and g.has_all_members_joined():
            self._complete_join(g)

    def _remove_member_and_update(self, g: ClassicGroup, m: Member, reason: str) -> None:
        """``removeMemberAndUpdateClassicGroup``: a parked JoinGroup (new member) gets UNKNOWN_MEMBER_ID."""
        self._complete_join_future(g.group_id, m.member_id, join_group_error(E.UNKNOWN_MEMBER_ID, ""))
        self._drop_parked(g.group_id, m.member_id)
        self.rt.append(R.MemberRemoved(group_id=g.group_id, member_id=m.member_id,
                                       group_instance_id=m.group_instance_id,
                                       new_leader=g.next_leader_after_removing(m.member_id), reason=reason))
        self._cancel_heartbeat(g, m.member_id)
        if g.state in (S.STABLE, S.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance_or_complete_join(g, reason)
        elif g.state == S.PREPARING_REBALANCE and g.has_all_members_joined():
            self._complete_join(g)

    # ==========================================================================================================
    # SyncGroup
    # ==========================================================================================================

    def sync_group(self, req: Any) -> Any:
        """``classicGroupSync``."""
        version = self.rt.request.api_version
        g = self.groups.get(req.group_id)
        instance_id = req.group_instance_id if version >= 3 else None
        protocol_type = req.protocol_type if version >= 5 else None
        protocol_name = req.protocol_name if version >= 5 else None
        if g is None:
            return sync_group_error(E.UNKNOWN_MEMBER_ID)
        e = g.validate_member(req.member_id, instance_id)
        if e is not None:
            return sync_group_error(e)
        if req.generation_id != g.generation_id:
            return sync_group_error(E.ILLEGAL_GENERATION)
        if (protocol_type is not None and g.protocol_type is not None and protocol_type != g.protocol_type) or \
                (protocol_name is not None and g.protocol_name is not None and protocol_name != g.protocol_name):
            return sync_group_error(E.INCONSISTENT_GROUP_PROTOCOL)
        if g.state == S.EMPTY:
            return sync_group_error(E.UNKNOWN_MEMBER_ID)
        if g.state == S.PREPARING_REBALANCE:
            return sync_group_error(E.REBALANCE_IN_PROGRESS)
        if g.state == S.COMPLETING_REBALANCE:
            self._park_sync(g.group_id, req.member_id)
            self._remove_pending_sync_member(g, req.member_id)
            if g.is_leader(req.member_id):
                given = {a.member_id: bytes(a.assignment) for a in req.assignments}
                assignment = {mid: given.get(mid, b"") for mid in g.members}
                self.rt.append(g.to_group_metadata(assignment))  # -> Stable, assignments set
                self._propagate_assignment(g, E.NONE)
            return PARKED
        # Stable
        self._remove_pending_sync_member(g, req.member_id)
        return sync_response(g, g.members[req.member_id].assignment)

    def _remove_pending_sync_member(self, g: ClassicGroup, member_id: str) -> None:
        if member_id in g.pending_sync_members:
            self.rt.append(R.SyncReceived(group_id=g.group_id, member_id=member_id, generation_id=g.generation_id))
        if g.has_received_sync_from_all_members():
            self.timers.cancel(pending_sync_timer(g.group_id))

    # ==========================================================================================================
    # Heartbeat
    # ==========================================================================================================

    def heartbeat(self, req: Any) -> Any:
        """``classicGroupHeartbeat``."""
        version = self.rt.request.api_version
        g = self.groups.get(req.group_id)
        if g is None:
            e = E.UNKNOWN_MEMBER_ID
        else:
            member_id = req.member_id
            e = g.validate_member(member_id, req.group_instance_id if version >= 3 else None)
            if e is not None:
                pass
            elif req.generation_id != g.generation_id:
                e = E.ILLEGAL_GENERATION
            elif g.state == S.EMPTY:
                e = E.UNKNOWN_MEMBER_ID
            else:
                self.reschedule_heartbeat(g, g.members[member_id])
                e = E.REBALANCE_IN_PROGRESS if g.state == S.PREPARING_REBALANCE else E.NONE
        return HeartbeatResponse(error_code=int(e))

    # ==========================================================================================================
    # LeaveGroup
    # ==========================================================================================================

    def leave_group(self, req: Any) -> Any:
        """``classicGroupLeave``; v0-2 carry one member id and a single error code."""
        version = self.rt.request.api_version
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
                        self._remove_current_member(g, target, reason)
                        results.append((mid, iid, E.NONE))
                    else:
                        results.append((mid, iid, E.UNKNOWN_MEMBER_ID))
                elif g.is_pending_member(mid):
                    self.rt.append(R.PendingMemberRemoved(group_id=g.group_id, member_id=mid,
                                                          reason=f"LeaveGroup; client reason: {reason}"))
                    self.timers.cancel(pending_member_timer(g.group_id, mid))
                    results.append((mid, iid, E.NONE))
                else:
                    e = g.validate_member(mid, iid)
                    if e is not None:
                        results.append((mid, iid, e))
                    else:
                        self._remove_current_member(g, mid, reason)
                        results.append((mid, iid, E.NONE))
            left = [mid for mid, _, e in results if e == E.NONE]
            if left:
                why = f"explicit `LeaveGroup` request for ({', '.join(left)}) members."
                if g.state in (S.STABLE, S.COMPLETING_REBALANCE):
                    self._maybe_prepare_rebalance_or_complete_join(g, why)
                elif g.state == S.PREPARING_REBALANCE:
                    self._maybe_complete_join_phase(g)
        return leave_response(results, version)

    def _remove_current_member(self, g: ClassicGroup, member_id: str, reason: str) -> None:
        m = g.members[member_id]
        self._cancel_heartbeat(g, member_id)
        self._complete_join_future(g.group_id, member_id, join_group_error(E.UNKNOWN_MEMBER_ID, ""))
        self._drop_parked(g.group_id, member_id)
        self.rt.append(R.MemberRemoved(group_id=g.group_id, member_id=member_id,
                                       group_instance_id=m.group_instance_id,
                                       new_leader=g.next_leader_after_removing(member_id),
                                       reason=f"LeaveGroup; client reason: {reason}"))

    # ==========================================================================================================
    # Describe / List / Delete (classic groups)
    # ==========================================================================================================

    def list_groups(self) -> list[tuple[str, str, str]]:
        """(group_id, protocol_type, state) of every group, sorted by group id."""
        return [(g.group_id, g.protocol_type or "", str(g.state))
                for g in sorted(self.groups, key=lambda g: g.group_id)]

    def delete_group(self, g: ClassicGroup, reason: str) -> None:
        """The group's tombstone, after its timers are cancelled (its offsets are tombstoned by the caller first:
        ``GroupCoordinatorShard.deleteGroups``)."""
        self.timers.cancel_group(g.group_id)
        self.rt.append(R.GroupTombstone(group_id=g.group_id, reason=reason))
