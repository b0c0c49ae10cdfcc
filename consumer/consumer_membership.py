"""Membership of a consumer group under KIP-848's consumer protocol (``group.protocol=consumer``), sans-IO.

Mirrors the Java client's ``ConsumerMembershipManager`` / ``AbstractMembershipManager`` (member state,
reconciliation, fencing, leaving, the stale member) and ``ConsumerHeartbeatRequestManager`` /
``AbstractHeartbeatRequestManager`` (when a ConsumerGroupHeartbeat goes, what it carries, what its response
does), plus the parts of ``CommitRequestManager`` the membership drives (the auto-commit before a revocation).
It sits beside the classic protocol's ``consumer/membership.py`` behind the same facade
(``consumer/coordinator.py`` picks one by ``group.protocol``) and shares the network client, coordinator
discovery, subscription state, commits and listener invoker.

Theory of operation
-------------------
The coordinator computes every assignment; the member only heartbeats and reconciles. Kafka's
``AsyncKafkaConsumer`` runs this on a background thread and runs rebalance callbacks on the application thread
inside ``poll()``; the core keeps that split:

* the background (:meth:`ConsumerMembership.heartbeat_thread`, the driver's ``tick``;
  ``AbstractHeartbeatRequestManager.poll``): nothing while the coordinator is unknown (it is looked up) or the
  member is out of the group (UNSUBSCRIBED, FENCED, STALE, FATAL). If the application has not polled for
  ``max.poll.interval.ms`` the member leaves (epoch -1, or -2 if static) and becomes STALE. Otherwise a
  ConsumerGroupHeartbeat goes when the interval the coordinator gave has passed (and no request is in flight and
  no backoff runs), or at once when JOINING, ACKNOWLEDGING or LEAVING. Building it moves ACKNOWLEDGING to
  STABLE (or back to RECONCILING if a newer target arrived) and LEAVING to UNSUBSCRIBED (or STALE).
* responses (:meth:`_on_heartbeat_response`): the member takes the epoch and interval from a successful
  response; an assignment in it becomes the *target* (RECONCILING if it differs from what the member owns).
  Errors follow ``consumer/_consumer_state.py``'s table: FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID fence the member
  (FENCED, epoch 0; its partitions are lost), NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE rediscover, fatal
  errors make it FATAL and are raised by the next ``poll``.
* the application (:meth:`ConsumerMembership.poll`, inside ``KafkaConsumer.poll``): restarts the poll timer
  (an expired one makes a STALE member rejoin), joins after ``subscribe`` (UNSUBSCRIBED -> JOINING), releases
  partitions a fenced / stale / failed member lost (``onPartitionsLost``; a fenced member then rejoins with
  epoch 0 and the same member id), and reconciles (``maybeReconcile``): topic ids of the target resolved to
  names from metadata (unresolved ones wait), partitions to revoke paused, then -- if auto-commit is on -- the
  consumed offsets committed (retried on retriable errors and STALE_MEMBER_EPOCH until the rebalance timeout;
  a failure does not stop the reconciliation), then ``onPartitionsRevoked(owned - target)`` *before*
  ``onPartitionsAssigned(target - owned)`` (always invoked, maybe empty), and the member is ACKNOWLEDGING: the
  next heartbeat (sent at once) reports the new assignment.

Commits carry the member id and, while the member has one (> 0), its epoch (OffsetCommit v9+); the commits part
(``consumer/commits.py``) asks :meth:`generation_if_stable` for them, as it does the classic membership.

Where kgroup differs from the Java client (deliberately)
--------------------------------------------------------
* Callbacks are outputs (and calls of an in-process listener) made during ``poll``; Kafka enqueues them to the
  application thread from the background. A member released from FENCED or STALE with partitions therefore
  waits for the next ``poll`` (as Kafka's does when a rebalance listener is registered); without partitions it
  rejoins at once (as Kafka's does).
* Reconciliation starts only in ``poll`` (Kafka's background may start one that needs no commit; its callback
  still waits for the application thread, so the acknowledgement comes at the same poll).
* A heartbeat error that would fence a member already STALE or FATAL is ignored (Kafka would throw
  ``IllegalStateException`` for that transition in its background thread).
* ``enforceRebalance`` (``request_rejoin``) is a no-op, as in ``AsyncKafkaConsumer`` under this protocol.
* Only ``CloseOptions.GroupMembershipOperation.DEFAULT`` on close (dynamic -1, static -2).
"""

from __future__ import annotations

import logging
import random
from typing import Any, Callable, Optional
from uuid import UUID

from consumer import outputs as out
from consumer._consumer_state import (CONSUMER_PROTOCOL_NOT_SUPPORTED_MSG, HEARTBEAT_ERRORS, HEARTBEAT_NOW,
                                      JOIN_GROUP_MEMBER_EPOCH, LEAVE_GROUP_MEMBER_EPOCH,
                                      LEAVE_GROUP_STATIC_MEMBER_EPOCH, LEAVING_STATES, NOT_IN_GROUP,
                                      SKIP_HEARTBEAT, ConsumerMemberState, HeartbeatAction, check_transition)
from consumer._state import Generation
from consumer.assignors import TopicPartition
from consumer.config import ConsumerConfig
from consumer.consumer_heartbeat import NO_ASSIGNMENT, HeartbeatRequestState, HeartbeatState, LocalAssignment
from consumer.discovery import CoordinatorDiscovery
from consumer.errors import ApiException, KafkaException, UnsupportedVersionException
from consumer.heartbeat import Heartbeat
from consumer.listener import RebalanceListenerInvoker, raise_callback_error
from consumer.network import ConsumerNetworkClient, ExponentialBackoff, RequestFuture
from consumer.subscription import SubscriptionState, sorted_tps
from protocol.api import ApiKey
from protocol.errors import ErrorCode
from protocol.uuids import random_uuid

log = logging.getLogger("kgroup.consumer")

E = ErrorCode
S = ConsumerMemberState
A = HeartbeatAction
#: the reason of the leave when max.poll.interval.ms expires (AbstractHeartbeatRequestManager's leave reason)
POLL_TIMEOUT_LEAVE_REASON = "consumer poll timeout has expired."
_RECONCILE_STARTING = frozenset({S.STABLE, S.JOINING, S.ACKNOWLEDGING, S.RECONCILING})


class _Reconciliation:
    """One reconciliation in progress (``reconciliationInProgress``): waiting for the commit before revoking."""

    __slots__ = ("resolved", "assigned", "revoked", "added", "commit", "deadline_ms", "retry_at_ms", "attempts")

    def __init__(self, resolved: LocalAssignment, assigned: tuple, revoked: tuple, added: tuple,
                 deadline_ms: int) -> None:
        self.resolved = resolved
        self.assigned = assigned
        self.revoked = revoked
        self.added = added
        self.commit: Optional[RequestFuture] = None
        self.deadline_ms = deadline_ms
        self.retry_at_ms = 0
        self.attempts = 0


class ConsumerMembership:
    """One member of a consumer-protocol group (see the module docstring). Same interface towards the facade as
    :class:`consumer.membership.ClassicMembership`."""

    #: commits use the member epoch (OffsetCommit v9+, STALE_MEMBER_EPOCH), not a generation
    uses_member_epoch = True

    def __init__(self, config: ConsumerConfig, net: ConsumerNetworkClient, discovery: CoordinatorDiscovery,
                 subscriptions: SubscriptionState, heartbeat: Heartbeat, commits: Any,
                 listeners: RebalanceListenerInvoker, run_deferred: Callable[[], None], *,
                 member_id: Optional[str] = None) -> None:
        self.config = config
        self._group_id = config.group_id
        self._group_instance_id = config.group_instance_id
        self._net = net
        self._discovery = discovery
        self._subs = subscriptions
        self._hb = heartbeat                    # only its poll timer (max.poll.interval.ms) is used
        self._commits = commits
        self._listeners = listeners
        self._run_deferred = run_deferred
        self._commit_backoff = ExponentialBackoff(config.retry_backoff_ms, config.retry_backoff_max_ms)
        discovery.state_label = self.state_label
        #: AbstractMembershipManager.memberId: generated by the client, fixed for its lifetime (KIP-1082)
        self.member_id = member_id if member_id is not None else random_uuid(random.Random())
        self.member_epoch = JOIN_GROUP_MEMBER_EPOCH
        self.state = S.UNSUBSCRIBED
        self.server_assignor = config.group_remote_assignor
        self.request_state = HeartbeatRequestState(retry_backoff_ms=config.retry_backoff_ms,
                                                   retry_backoff_max_ms=config.retry_backoff_max_ms,
                                                   now_ms=net.now)
        self.heartbeat_state = HeartbeatState(config.rebalance_timeout_ms)
        self.current_assignment: LocalAssignment = NO_ASSIGNMENT
        self.target_assignment: LocalAssignment = NO_ASSIGNMENT
        self._assigned_topic_names: dict[UUID, str] = {}   # assignedTopicNamesCache
        self._reconciliation: Optional[_Reconciliation] = None
        self._rejoined_while_reconciling = False
        self._poll_timer_expired = False                   # isPollTimerExpired
        #: why partitions are to be released (onPartitionsLost) at the next poll, and which (as they were then)
        self._lost_pending: Optional[tuple[str, tuple]] = None
        self._leave_future: Optional[RequestFuture] = None  # leaveGroupInProgress
        self.pending_error: Optional[BaseException] = None  # ErrorEvent: raised once by the next poll
        self._callback_error: Optional[BaseException] = None  # a rebalance callback's error, raised by poll
        self.heartbeat_closed = False
        # attributes the facade shows for either protocol
        self.rejoin_needed = False
        self.rejoin_reason = ""
        self.is_leader = False
        self.protocol = None
        self.assignors: list = []
        self.joined_subscription: Optional[frozenset[str]] = None
        self.last_rebalance_start_ms = -1
        self.last_rebalance_end_ms = -1

    # --- queries -------------------------------------------------------------------------------------------------
    def state_label(self) -> str:
        return self.state.value

    @property
    def generation(self) -> Generation:
        """The member epoch and id, shaped as the classic generation for the facade and the commits."""
        return Generation(self.member_epoch, self.member_id, None)

    def generation_if_stable(self) -> Optional[Generation]:
        """What commits and offset fetches carry (CommitRequestManager.MemberInfo): the member id always, the
        epoch only while the member has one (> 0), else -1."""
        return Generation(self.member_epoch if self.member_epoch > 0 else -1, self.member_id, None)

    def rebalance_in_progress(self) -> bool:
        return self.state in (S.JOINING, S.RECONCILING, S.ACKNOWLEDGING)

    def is_leaving_group(self) -> bool:
        return self.state in LEAVING_STATES

    # --- the state machine ------------------------------------------------------------------------------------
    def _transition(self, new: ConsumerMemberState, reason: str = "") -> None:
        """AbstractMembershipManager.transitionTo."""
        old = self.state
        check_transition(old, new)
        if old != new:
            now = self._net.now
            if new == S.RECONCILING:        # isStartingRebalance
                self.last_rebalance_start_ms = now
            elif old == S.RECONCILING and new in (S.STABLE, S.ACKNOWLEDGING):  # isCompletingRebalance
                self.last_rebalance_end_ms = now
            self._net.emit(out.StateChanged(old.value, new.value, reason or new.value))
        self.state = new

    def request_rejoin(self, reason: str) -> None:
        """KafkaConsumer.enforceRebalance: not supported by the consumer protocol (AsyncKafkaConsumer logs it)."""
        log.warning("Operation not supported in new consumer group protocol: enforceRebalance (%s)", reason)

    def reset_state_on_response_error(self, api: str, error: ErrorCode, reset_member_id: bool) -> None:
        """Only the heartbeat changes a consumer-protocol member; a commit's error never does."""

    def _update_member_epoch(self, epoch: int) -> None:
        self.member_epoch = epoch

    def _transition_to_joining(self) -> None:
        """AbstractMembershipManager.transitionToJoining: epoch 0, a full heartbeat, no target."""
        if self.state == S.FATAL:
            log.warning("No action taken to join the group with the updated subscription because the member is "
                        "in FATAL state")
            return
        if self._reconciliation is not None:
            self._rejoined_while_reconciling = True
        self._update_member_epoch(JOIN_GROUP_MEMBER_EPOCH)
        self._transition(S.JOINING, "joining the group")
        self.joined_subscription = self._subs.subscription
        self.target_assignment = NO_ASSIGNMENT
        self._assigned_topic_names.clear()

    def _transition_to_fenced(self) -> None:
        """AbstractMembershipManager.transitionToFenced."""
        state = self.state
        if state == S.PREPARE_LEAVING:
            self.transition_to_sending_leave_group(False)
            self._transition(S.UNSUBSCRIBED, "fenced while leaving")
            self._complete_leave()
            return
        if state == S.LEAVING:
            self._transition(S.UNSUBSCRIBED, "fenced while leaving")
            self._complete_leave()
            return
        if state in (S.UNSUBSCRIBED, S.STALE, S.FATAL, S.FENCED):
            return  # (STALE / FATAL: see the module docstring)
        self._transition(S.FENCED, "fenced by the group coordinator")
        self._update_member_epoch(JOIN_GROUP_MEMBER_EPOCH)
        self._signal_partitions_lost("fenced")

    def _transition_to_fatal(self, error: BaseException) -> None:
        """AbstractHeartbeatRequestManager.handleFatalFailure -> transitionToFatal."""
        self.pending_error = error
        previous = self.state
        if previous == S.FATAL:
            return
        self._transition(S.FATAL, f"fatal error: {error}")
        log.error("Member %s with epoch %d transitioned to fatal state: %s", self.member_id, self.member_epoch, error)
        if previous == S.UNSUBSCRIBED and self._complete_leave():
            return
        if previous in LEAVING_STATES:
            self._complete_leave()
            return
        self._signal_partitions_lost("fatal")

    def _signal_partitions_lost(self, why: str) -> None:
        """signalPartitionsLost: pause the owned partitions; onPartitionsLost runs on the application thread (next
        poll), then the assignment is cleared and a fenced member rejoins. Nothing owned: done at once."""
        owned = self._subs.assignment
        if owned:
            self._subs.pending_revocation |= set(owned)
            self._lost_pending = (why, owned)
        else:
            self._lost_pending = None
            self._after_partitions_lost(why)

    def _invoke(self, kind: type, partitions: tuple) -> Optional[BaseException]:
        """A rebalance callback (output + in-process listener). Its error is remembered and thrown by ``poll`` once
        the step is done (AsyncKafkaConsumer.invokeRebalanceCallbackAndNotifyBackgroundThread: the first error,
        wrapped as "User rebalance callback throws an error")."""
        error = self._listeners.invoke(kind, partitions)
        if error is not None and self._callback_error is None:
            self._callback_error = error
        return error

    def _release_lost_partitions(self) -> None:
        pending = self._lost_pending
        if pending is None:
            return
        self._lost_pending = None
        why, owned = pending
        error = self._invoke(out.PartitionsLost, owned)
        if error is not None:
            log.error("onPartitionsLost callback invocation failed while releasing assignment (%s): %r", why, error)
        self._after_partitions_lost(why)

    def _after_partitions_lost(self, why: str) -> None:
        self._clear_assignment()
        if why == "fenced":
            if self.state == S.FENCED:
                self._transition_to_joining()

    def _clear_assignment(self) -> None:
        """AbstractMembershipManager.clearAssignment."""
        if self._subs.assignment:
            self._subs.assign_from_subscribed(())
        self.current_assignment = NO_ASSIGNMENT
        self.target_assignment = NO_ASSIGNMENT
        self._assigned_topic_names.clear()

    # --- leaving -------------------------------------------------------------------------------------------------
    def _leave_group_epoch(self) -> int:
        """ConsumerMembershipManager.leaveGroupEpoch (GroupMembershipOperation.DEFAULT)."""
        return LEAVE_GROUP_STATIC_MEMBER_EPOCH if self._group_instance_id is not None else LEAVE_GROUP_MEMBER_EPOCH

    def transition_to_sending_leave_group(self, due_to_expired_poll_timer: bool) -> None:
        """AbstractMembershipManager.transitionToSendingLeaveGroup."""
        if self.state == S.FATAL:
            log.warning("Member %s won't send leave group request because it is in FATAL state", self.member_id)
            return
        if self.state == S.UNSUBSCRIBED:
            log.warning("Member %s won't send leave group request because it is already out of the group.",
                        self.member_id)
            return
        if due_to_expired_poll_timer:
            self._poll_timer_expired = True
            self._transition(S.PREPARE_LEAVING, "consumer poll timeout has expired.")
        self._update_member_epoch(self._leave_group_epoch())
        self.current_assignment = NO_ASSIGNMENT
        self._transition(S.LEAVING, "sending the leave heartbeat")

    def on_leave_prepare(self) -> None:
        """The first half of AbstractMembershipManager.leaveGroup (unsubscribe, close): PREPARE_LEAVING, then
        release the assignment: onPartitionsRevoked while the member has an epoch, onPartitionsLost otherwise
        (``invokeOnPartitionsRevokedOrLostToReleaseAssignment``)."""
        if self.state in NOT_IN_GROUP or self.state in LEAVING_STATES:
            return  # (not in the group: maybe_leave_group only unsubscribes)
        self._transition(S.PREPARE_LEAVING, "leaving the group")
        owned = self._subs.assignment
        if owned:
            if self.member_epoch > 0:
                self._subs.pending_revocation |= set(owned)
                error = self._invoke(out.PartitionsRevoked, owned)
            else:
                error = self._invoke(out.PartitionsLost, owned)
            if error is not None:
                log.error("Member %s callback to release assignment failed. It will proceed to clear its assignment "
                          "and send a leave group heartbeat: %r", self.member_id, error)

    def maybe_leave_group(self, reason: str) -> Optional[RequestFuture]:
        """The second half of leaveGroup (clearAssignmentAndLeaveGroup) and the leave heartbeat itself (sent at
        once: shouldSendLeaveHeartbeatNow). Returns the leave heartbeat's future (None if none is sent)."""
        state = self.state
        if state in NOT_IN_GROUP:
            # leaveGroup when isNotInGroup: a FENCED member is done (UNSUBSCRIBED, no leave heartbeat: it is no
            # longer a member); a STALE one stays STALE. A pending onPartitionsLost still runs (the application
            # thread processes it while unsubscribing), without the rejoin that would have followed it.
            pending, self._lost_pending = self._lost_pending, None
            if state == S.FENCED:
                self._clear_assignment()
                self._transition(S.UNSUBSCRIBED, reason)
            elif state == S.STALE:
                self._clear_assignment()
            if pending is not None:
                self._invoke(out.PartitionsLost, pending[1])
            self.joined_subscription = None
            return None
        if state == S.LEAVING:
            return self._leave_future
        if state != S.PREPARE_LEAVING:
            self.on_leave_prepare()
        self._clear_assignment()
        self.joined_subscription = None
        self.transition_to_sending_leave_group(False)
        if self._discovery.coordinator is None:
            self._on_heartbeat_request_skipped()
            return None
        self._net.emit(out.LeftGroup(self.member_id, reason))
        future = self._send_heartbeat(self._net.now, ignore_response=False)
        self._leave_future = future
        return future

    def _complete_leave(self) -> bool:
        """maybeCompleteLeaveInProgress."""
        if self._leave_future is not None:
            self._leave_future = None
            return True
        return False

    def _on_heartbeat_request_skipped(self) -> None:
        """onHeartbeatRequestSkipped: a leave heartbeat that cannot go (no coordinator) counts as sent."""
        if self.state == S.LEAVING:
            log.warning("Heartbeat to leave group cannot be sent (most probably due to coordinator not "
                        "known/available). Member %s with epoch %d will transition to UNSUBSCRIBED.",
                        self.member_id, self.member_epoch)
            self._transition(S.UNSUBSCRIBED, "leave heartbeat skipped: coordinator unknown")
            self._complete_leave()

    # --- the application thread ---------------------------------------------------------------------------------
    def poll(self, now_ms: int) -> bool:
        """The group part of one application poll (PollEvent: ``onConsumerPoll``, ``resetPollTimer``; the
        rebalance callbacks; ``maybeReconcile(true)``). True when the coordinator is known."""
        error = self.pending_error
        if error is not None:
            # processBackgroundEvents: every queued event (e.g. onPartitionsLost of a member that failed) runs, then
            # the first error is thrown
            self.pending_error = None
            self._release_lost_partitions()
            self._callback_error = None
            raise error
        subs = self._subs
        if self.state == S.UNSUBSCRIBED and subs.subscription:
            self._transition_to_joining()     # onConsumerPoll after subscribe()
        hb = self._hb
        if now_ms >= hb.poll_deadline_ms:     # resetPollTimer with an expired timer: maybeRejoinStaleMember
            log.warning("Time between subsequent calls to poll() was longer than the configured "
                        "max.poll.interval.ms, exceeded approximately by %d ms. Member %s will rejoin the group now.",
                        now_ms - hb.poll_deadline_ms, self.member_id)
            self._poll_timer_expired = False
        hb.poll(now_ms)
        self._release_lost_partitions()       # onPartitionsLost of a fenced / stale / failed member
        if self.state == S.STALE:             # (only an expired poll timer makes a member STALE)
            self._poll_timer_expired = False
            self._transition_to_joining()
        discovery = self._discovery
        if discovery.coordinator is None and self.state not in (S.UNSUBSCRIBED, S.FATAL):
            discovery.ensure_ready(now_ms)
        self._maybe_reconcile(now_ms)
        error, self._callback_error = self._callback_error, None
        raise_callback_error(error, keep_kafka_exception=True)
        return discovery.coordinator is not None

    def is_stable(self) -> bool:
        return self.state == S.STABLE

    def rejoin_needed_or_pending(self) -> bool:
        """Whether an application poll has membership work (the facade then asks :meth:`next_join_ms`)."""
        state = self.state
        if self._lost_pending is not None or state == S.STALE:
            return True
        if state == S.UNSUBSCRIBED:
            return bool(self._subs.subscription)
        if self._reconciliation is not None:
            return True
        return self._reconciliation_ready()

    def _reconciliation_ready(self) -> bool:
        """Whether maybeReconcile would do something now (a target waiting only for metadata does not)."""
        if self.state != S.RECONCILING:
            return False
        target, current = self.target_assignment, self.current_assignment
        if current == target:
            return False
        resolved = {t: ps for t, ps in self._resolvable_assignment().items()}
        return current.is_none() or resolved != current.partitions or current.local_epoch != target.local_epoch

    def next_join_ms(self) -> Optional[int]:
        """When that poll can move on (None: it waits for a response, the commit before revoking)."""
        r = self._reconciliation
        if r is not None and self._lost_pending is None and self.state != S.STALE:
            if r.commit is not None and not r.commit.done:
                return None
            return r.retry_at_ms
        return 0

    # --- reconciliation (AbstractMembershipManager.maybeReconcile, revokeAndAssign) --------------------------------
    def _maybe_reconcile(self, now_ms: int) -> None:
        if self._reconciliation is not None:
            if not self._continue_reconciliation(now_ms):
                return
            # the reconciliation in progress was abandoned (the member rejoined or left RECONCILING): a new target
            # received meanwhile is reconciled now
        if self.state != S.RECONCILING:
            return
        target, current = self.target_assignment, self.current_assignment
        if current == target:
            return
        resolved_map = self._resolvable_assignment()
        resolved = LocalAssignment(target.local_epoch, resolved_map)
        if not current.is_none() and resolved.partitions == current.partitions:
            if current.local_epoch == resolved.local_epoch:
                return
            # the target moved but what can be resolved of it is what the member owns: acknowledge that
            self.current_assignment = resolved
            self._transition(S.ACKNOWLEDGING, "partially resolved assignment unchanged")
            return
        names = self._assigned_topic_names
        assigned = sorted_tps(TopicPartition(names[t], p) for t, ps in resolved_map.items() for p in ps)
        owned = self._subs.assignment
        assigned_set, owned_set = set(assigned), set(owned)
        added = tuple(tp for tp in assigned if tp not in owned_set)
        revoked = tuple(tp for tp in owned if tp not in assigned_set)
        r = self._reconciliation = _Reconciliation(resolved, assigned, revoked, added,
                                                   now_ms + self.config.rebalance_timeout_ms)
        self._rejoined_while_reconciling = False
        log.info("Reconciling assignment with local epoch %d: member %s assigned %s owned %s added %s revoked %s",
                 resolved.local_epoch, self.member_id, assigned, owned, added, revoked)
        self._subs.pending_revocation |= set(revoked)   # markPendingRevocationToPauseFetching
        if self.config.enable_auto_commit:              # signalReconciliationStarted
            self._start_commit_before_rebalance(r)
        self._continue_reconciliation(now_ms)

    def _start_commit_before_rebalance(self, r: _Reconciliation) -> None:
        """CommitRequestManager.maybeAutoCommitSyncBeforeRebalance: commit everything consumed."""
        r.commit = self._commits.commit_async(self._subs.all_consumed(), None, auto=True)

    def _continue_reconciliation(self, now_ms: int) -> bool:
        """Carry the reconciliation in progress on; True if it was abandoned (maybeAbortReconciliation)."""
        r = self._reconciliation
        assert r is not None
        commit = r.commit
        if commit is not None:
            if not commit.done:
                return False
            if commit.failed:
                exc = getattr(commit.exception, "cause", None) or commit.exception  # (RetriableCommitFailed)
                retriable = getattr(exc, "retriable", False) or (
                    getattr(exc, "error", None) == E.STALE_MEMBER_EPOCH and self.member_epoch > 0)
                if (retriable and now_ms < r.deadline_ms and getattr(exc, "error", None)
                        != E.UNKNOWN_TOPIC_OR_PARTITION):
                    if r.retry_at_ms == 0:
                        r.retry_at_ms = now_ms + self._commit_backoff.backoff(r.attempts)
                        r.attempts += 1
                    if now_ms < r.retry_at_ms:
                        return False
                    r.retry_at_ms = 0
                    self._start_commit_before_rebalance(r)   # with the latest offsets and epoch
                    return self._continue_reconciliation(now_ms)
                log.error("Auto-commit request before reconciling new assignment failed. Will proceed with the "
                          "reconciliation anyway: %r", commit.exception)
            r.commit = None
        if self._maybe_abort_reconciliation():
            return True
        subs = self._subs
        if r.revoked:
            owned = set(subs.assignment)
            revoked = tuple(tp for tp in r.revoked if tp in owned)  # (revokePartitions: only what is still owned)
            subs.pending_revocation |= set(revoked)
            if revoked:
                error = self._invoke(out.PartitionsRevoked, revoked)
                if error is not None:
                    log.error("onPartitionsRevoked callback invocation failed for partitions %s: %r", revoked, error)
                    log.error("Reconciliation failed.")
                    self._reconciliation = None      # markReconciliationCompleted; the next poll tries again
                    return False
        if self._maybe_abort_reconciliation():
            return True
        # ConsumerMembershipManager.applyAssignment, then onPartitionsAssigned(added), always
        subs.assign_from_subscribed(r.assigned)
        error = self._invoke(out.PartitionsAssigned, r.added)
        if error is not None:
            # revokeAndAssign: the reconciliation failed; RECONCILING, no ack (the next poll tries again)
            log.error("onPartitionsAssigned callback invocation failed for partitions %s: %r", r.added, error)
            log.error("Reconciliation failed.")
            self._reconciliation = None
            return False
        self._assigned_topic_names = {t: n for t, n in self._assigned_topic_names.items()
                                      if n in {tp.topic for tp in r.assigned}}
        if self._reconciliation is r and not self._maybe_abort_reconciliation():
            self.current_assignment = r.resolved
            self._commits.restart_auto_commit_timer(now_ms)   # signalReconciliationCompleting
            self._transition(S.ACKNOWLEDGING, "reconciled")
            self._reconciliation = None
        return False

    def _maybe_abort_reconciliation(self) -> bool:
        """AbstractMembershipManager.maybeAbortReconciliation."""
        if self.state != S.RECONCILING or self._rejoined_while_reconciling:
            log.info("Interrupting reconciliation: %s", "the member has re-joined the group"
                     if self._rejoined_while_reconciling else f"the member is now {self.state.value}")
            self._reconciliation = None
            self._rejoined_while_reconciling = False
            return True
        return False

    def _resolvable_assignment(self) -> dict[UUID, frozenset[int]]:
        """findResolvableAssignmentAndTriggerMetadataUpdate: the target's topics whose names metadata (or the
        local cache) knows; the rest waits for metadata."""
        by_id = {tid: name for name, tid in self._subs.topic_ids.items()}
        ready = {}
        for tid, partitions in self.target_assignment.partitions.items():
            name = by_id.get(tid)
            if name is not None:
                self._assigned_topic_names[tid] = name
            else:
                name = self._assigned_topic_names.get(tid)
            if name is not None:
                ready[tid] = partitions
        return ready

    # --- the background thread: AbstractHeartbeatRequestManager.poll ---------------------------------------------
    def heartbeat_thread(self, now_ms: int) -> bool:
        """One pass. Returns whether it changed anything an application poll waits for."""
        if self.heartbeat_closed:
            return False
        discovery = self._discovery
        state = self.state
        if discovery.coordinator is None or state in SKIP_HEARTBEAT:
            changed = False
            if state == S.LEAVING:
                self._on_heartbeat_request_skipped()
                changed = True
            if discovery.coordinator is None and state not in (S.UNSUBSCRIBED, S.FATAL):
                discovery.lookup(now_ms)
                changed = True
            return changed
        if now_ms >= self._hb.poll_deadline_ms and not self.is_leaving_group():
            log.warning("Consumer poll timeout has expired. This means the time between subsequent calls to poll() "
                        "was longer than the configured max.poll.interval.ms (%d), which typically implies that the "
                        "poll loop is spending too much time processing messages.",
                        self.config.max_poll_interval_ms)
            self.transition_to_sending_leave_group(True)
            self._net.emit(out.LeftGroup(self.member_id, POLL_TIMEOUT_LEAVE_REASON))
            self._send_heartbeat(now_ms, ignore_response=True)
            self.request_state.reset()
            self.heartbeat_state.reset()
            return True
        rs = self.request_state
        heartbeat_now = state == S.LEAVING or (state in HEARTBEAT_NOW and not rs.in_flight)
        if not heartbeat_now and not rs.can_send(now_ms):
            return False
        before = self.state
        self._send_heartbeat(now_ms, ignore_response=False)
        return self.state != before

    def next_deadline_ms(self) -> Optional[int]:
        """When :meth:`heartbeat_thread` has work (None: nothing until a response or a call)."""
        if self.heartbeat_closed:
            return None
        state = self.state
        discovery = self._discovery
        if discovery.coordinator is None:
            if state == S.LEAVING:
                return self._net.now
            if state in (S.UNSUBSCRIBED, S.FATAL):
                return None
            return discovery.next_lookup_ms()
        if state in SKIP_HEARTBEAT:
            return None
        rs = self.request_state
        if state == S.LEAVING or (state in HEARTBEAT_NOW and not rs.in_flight):
            return self._net.now
        d = rs.next_send_ms()
        if not self.is_leaving_group():
            p = self._hb.poll_deadline_ms
            if d is None or p < d:
                d = p
        return d

    def _send_heartbeat(self, now_ms: int, *, ignore_response: bool) -> RequestFuture:
        """makeHeartbeatRequest: build (HeartbeatState), record the attempt, onHeartbeatRequestGenerated."""
        body = self.heartbeat_state.build(
            group_id=self._group_id, member_id=self.member_id, member_epoch=self.member_epoch,
            instance_id=self._group_instance_id, rack_id=self.config.client_rack,
            send_all_fields=self.state == S.JOINING, subscription=self._subs.subscription,
            server_assignor=self.server_assignor, local=self.current_assignment)
        rs = self.request_state
        rs.on_send(now_ms)
        handler = self._log_leave_response if ignore_response else self._on_heartbeat_response
        future = self._discovery.send(ApiKey.CONSUMER_GROUP_HEARTBEAT, body, handler)
        if not ignore_response:
            future.add_listener(None, self._on_heartbeat_failure)
        self._on_heartbeat_request_generated()
        return future

    def _on_heartbeat_request_generated(self) -> None:
        """AbstractMembershipManager.onHeartbeatRequestGenerated."""
        state = self.state
        if state == S.ACKNOWLEDGING:
            if self.current_assignment == self.target_assignment:
                self._transition(S.STABLE, "reconciliation acknowledged")
            else:
                self._transition(S.RECONCILING, "a newer target assignment arrived")
        elif state == S.LEAVING:
            if self._poll_timer_expired:
                self._transition_to_stale()
            else:
                self._transition(S.UNSUBSCRIBED, "leave heartbeat sent")

    def _transition_to_stale(self) -> None:
        """transitionToStale: no heartbeats until the next poll; the partitions are lost."""
        self._transition(S.STALE, "left the group: max.poll.interval.ms expired")
        self._signal_partitions_lost("stale")

    @staticmethod
    def _log_leave_response(response: Any, future: RequestFuture) -> None:
        """logResponse: the poll-timeout leave's response is only logged."""
        if response.error_code != 0:
            log.error("ConsumerGroupHeartbeatRequest failed because of %s: %s", E.from_code(response.error_code).name,
                      response.error_message)
        future.complete()

    # --- responses ---------------------------------------------------------------------------------------------------
    def _on_heartbeat_response(self, response: Any, future: RequestFuture) -> None:
        """AbstractHeartbeatRequestManager.onResponse."""
        now = self._net.now
        rs = self.request_state
        if response.error_code == 0:
            rs.update_interval(response.heartbeat_interval_ms, now)
            rs.on_success(now)
            self._on_heartbeat_success(response)
            future.complete(response)
            return
        error = E.from_code(response.error_code)
        message = response.error_message or error.message
        self.heartbeat_state.reset()
        rs.on_failure(now)
        action = HEARTBEAT_ERRORS.get(error, A.FATAL)
        if action == A.REDISCOVER:
            self._discovery.mark_unknown(message)
            rs.reset()
        elif action == A.RETRY:
            pass
        elif action == A.FENCE:
            log.info("ConsumerGroupHeartbeatRequest failed for member %s with epoch %d: %s", self.member_id,
                     self.member_epoch, error.name)
            self._transition_to_fenced()
            rs.reset()
        elif action == A.REPORT:
            self.pending_error = ApiException(error, message)
        elif action == A.FATAL_UNLESS_UNSUBSCRIBED and self.state == S.UNSUBSCRIBED:
            pass
        else:
            if error == E.UNSUPPORTED_VERSION:
                message = CONSUMER_PROTOCOL_NOT_SUPPORTED_MSG
            self._transition_to_fatal(ApiException(error, message))
        self._on_heartbeat_failure_membership()
        future.complete(response)

    def _on_heartbeat_failure(self, exc: BaseException) -> None:
        """AbstractHeartbeatRequestManager.onFailure: no response (disconnect, timeout, no usable version)."""
        now = self._net.now
        self.request_state.on_failure(now)
        self.heartbeat_state.reset()
        if not getattr(exc, "retriable", False):
            if isinstance(exc, UnsupportedVersionException):
                self._transition_to_fatal(UnsupportedVersionException(CONSUMER_PROTOCOL_NOT_SUPPORTED_MSG))
            else:
                self._transition_to_fatal(exc if isinstance(exc, KafkaException) else KafkaException(str(exc)))
        # (a disconnect of the coordinator connection already marked the coordinator unknown)
        self._on_heartbeat_failure_membership()

    def _on_heartbeat_failure_membership(self) -> None:
        """AbstractMembershipManager.onHeartbeatFailure: a leave heartbeat answered with an error completes."""
        if self.state == S.UNSUBSCRIBED:
            self._complete_leave()

    def _on_heartbeat_success(self, response: Any) -> None:
        """AbstractMembershipManager.onHeartbeatSuccess."""
        state = self.state
        epoch = response.member_epoch
        if state == S.LEAVING:
            return
        if state == S.UNSUBSCRIBED and epoch < 0 and self._complete_leave():
            return
        if state in NOT_IN_GROUP:
            return
        if epoch < 0:
            self._complete_leave()
            return
        self._update_member_epoch(epoch)
        assignment = response.assignment
        if assignment is None:
            return
        if not state.can_handle_new_assignment():
            log.debug("Ignoring assignment %s received in state %s", assignment, state.value)
            return
        self._process_assignment_received({tp.topic_id: frozenset(tp.partitions)
                                           for tp in assignment.topic_partitions})

    def _process_assignment_received(self, assignment: dict[UUID, frozenset[int]]) -> None:
        """processAssignmentReceived: the new target; RECONCILING unless it is what the member owns."""
        updated = self.target_assignment.update_with(assignment)
        if updated is not None:
            self.target_assignment = updated
        if self.current_assignment != self.target_assignment:
            self._transition(S.RECONCILING, "new target assignment")
        elif self.state in (S.RECONCILING, S.JOINING):
            self._transition(S.STABLE, "target assignment already owned")


__all__ = ["ConsumerMembership", "POLL_TIMEOUT_LEAVE_REASON"]
