"""Membership of a consumer group under the classic protocol, sans-IO: the group-management half of Kafka's
``AbstractCoordinator`` (``joinGroupIfNeeded``, JoinGroup / SyncGroup / Heartbeat / LeaveGroup and their
response handlers, the ``HeartbeatThread``) and of ``ConsumerCoordinator`` (``onJoinPrepare``,
``onLeaderElected``, ``onJoinComplete``, ``onLeavePrepare``, ``rejoinNeededOrPending``).

Theory of operation
-------------------
The member's state and what moves it are ``consumer/_state.py``'s tables; this module carries them out. It
runs on two "threads", as Kafka's consumer does:

* the application thread, :meth:`ClassicMembership.poll` (inside ``KafkaConsumer.poll``): restart the poll
  timer, make sure the coordinator is known, and run one non-blocking pass of the join loop: ``onJoinPrepare``
  once per rebalance (an auto-commit first, then revoke or lose partitions), JoinGroup, and -- once the
  SyncGroup that the JoinGroup response handler sent has been answered -- ``onJoinComplete``. Where Kafka
  blocks (a backoff, a request in flight) the pass records a deadline or a pending future and returns False;
  the next poll carries on. Rebalance callbacks and new JoinGroups happen only here, which is what makes
  ``max.poll.interval.ms`` the rebalance timeout.
* the heartbeat thread, :meth:`ClassicMembership.heartbeat_thread` (the driver's ``tick``): enabled once a
  JoinGroup is answered (COMPLETING_REBALANCE, STABLE); looks the coordinator up if it is unknown, marks it
  unknown when no heartbeat was answered for ``session.timeout.ms``, leaves the group when the application has
  not polled for ``max.poll.interval.ms`` (dynamic members send LeaveGroup; every member resets), and sends a
  Heartbeat every ``heartbeat.interval.ms`` (``retry.backoff.ms`` after a failed one).

Response handlers run when the driver delivers a response; they update state exactly as Kafka's
``*ResponseHandler`` classes do (a JoinGroup success sends the SyncGroup at once; the leader runs the assignor
the coordinator chose over every member's subscription), but listener callbacks wait for the next poll.

This is the classic protocol's membership. KIP-848's ``ConsumerMembershipManager`` (ConsumerGroupHeartbeat,
server-side assignment, reconciliation) is ``consumer/consumer_membership.py``, beside this one; it shares the same
request tracking (``consumer/network.py``), coordinator discovery (``consumer/discovery.py``), subscription state
(``consumer/subscription.py``), commits (``consumer/commits.py``) and listener invoker (``consumer/listener.py``).
"""

from __future__ import annotations

import logging
from enum import Enum
from typing import Any, Callable, Mapping, Optional

import consumer.assignors as assignors_api  # only its public API: get_assignor, Subscription, Assignment
from consumer import outputs as out
from consumer._state import (HEARTBEAT_ERRORS, JOIN_GROUP_ERRORS, KNOWN_FATAL_JOIN_ERRORS, KNOWN_FATAL_SYNC_ERRORS,
                             NO_GENERATION, NOT_JOINED, REJOIN_IMMEDIATELY, SYNC_GROUP_ERRORS, Action, Generation,
                             MemberState, Trigger, has_generation_reset, next_state, reset_generation)
from consumer.assignors import TopicPartition
from consumer.config import ConfigError, ConsumerConfig
from consumer.discovery import CoordinatorDiscovery
from consumer.errors import (ApiException, FencedInstanceIdException, IllegalStateException, KafkaException,
                             RebalanceInProgressException, UnjoinedGroupException, UnsupportedVersionException,
                             exception_for)
from consumer.heartbeat import Heartbeat
from consumer.listener import RebalanceListenerInvoker, raise_callback_error
from consumer.network import ConsumerNetworkClient, RequestFuture
from consumer.subscription import SubscriptionState, sorted_tps
from protocol.api import ApiKey
from protocol.consumer_protocol import (PROTOCOL_TYPE, ConsumerProtocolAssignment, ConsumerProtocolSubscription,
                                        decode_assignment, decode_subscription, encode_assignment,
                                        encode_subscription)
from protocol.errors import ErrorCode
from protocol.exceptions import ProtocolError
from protocol.messages import HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, SyncGroupRequest

log = logging.getLogger("kgroup.consumer")

E = ErrorCode

#: AbstractCoordinator.JOIN_GROUP_TIMEOUT_LAPSE: JoinGroup may block on the broker for the rebalance timeout.
JOIN_GROUP_TIMEOUT_LAPSE_MS = 5000
#: JoinGroupRequest.maybeTruncateReason
MAX_REASON_LENGTH = 255


class RebalanceProtocol(str, Enum):
    """ConsumerPartitionAssignor.RebalanceProtocol; the order is Kafka's id order (higher = more advanced)."""

    EAGER = "EAGER"
    COOPERATIVE = "COOPERATIVE"


_PROTOCOL_RANK = {RebalanceProtocol.EAGER: 0, RebalanceProtocol.COOPERATIVE: 1}

_EXCEPTION_NAMES = {E.GROUP_AUTHORIZATION_FAILED: "GroupAuthorizationException",
                    E.TOPIC_AUTHORIZATION_FAILED: "TopicAuthorizationException"}


def kafka_exception_name(exc: BaseException) -> str:
    """The simple name of the Java exception for ``exc`` (``Errors.exception().getClass().getSimpleName()``), used
    in JoinGroup reasons such as "rebalance failed due to UnknownMemberIdException" (KIP-800)."""
    error = getattr(exc, "error", None)
    if isinstance(exc, ApiException) and error is not None:
        if str(exc).startswith("Unexpected error"):
            return "KafkaException"
        return _EXCEPTION_NAMES.get(error) or "".join(p.capitalize() for p in error.name.split("_")) + "Exception"
    return type(exc).__name__


def _truncate_reason(reason: str) -> str:
    return reason[:MAX_REASON_LENGTH]


def select_rebalance_protocol(assignors: list) -> RebalanceProtocol:
    """ConsumerCoordinator's constructor: the most advanced protocol every configured assignor supports."""
    common: Optional[set] = None
    for assignor in assignors:
        protocols = {RebalanceProtocol(p) for p in getattr(assignor, "rebalance_protocols", ("EAGER",))}
        common = protocols if common is None else common & protocols
    if not common:
        names = sorted(a.name for a in assignors)
        raise ConfigError(f"partition.assignment.strategy: specified assignors {names} do not have commonly "
                          f"supported rebalance protocol")
    return max(common, key=_PROTOCOL_RANK.__getitem__)


class ClassicMembership:
    """One member of a classic group (see the module docstring)."""

    # slots, most-used first (the heartbeat thread's fields): at 1,000 simulated members every event touches a
    # different member, so how many cache lines a heartbeat reads decides the cost
    __slots__ = ("state", "heartbeat_closed", "heartbeat_failure", "generation", "_subs", "_discovery", "_hb",
                 "_net", "_group_id", "_group_instance_id", "rejoin_needed", "rejoin_reason", "_join_future",
                 "_needs_join_prepare", "_join_backoff_until", "is_leader", "joined_subscription",
                 "last_rebalance_start_ms", "last_rebalance_end_ms", "protocol", "assignors", "_assignment_snapshot",
                 "_join_prepare_deadline", "_join_prepare_commit", "_commits", "_listeners", "_run_deferred",
                 "config")

    def __init__(self, config: ConsumerConfig, net: ConsumerNetworkClient, discovery: CoordinatorDiscovery,
                 subscriptions: SubscriptionState, heartbeat: Heartbeat, commits: Any,
                 listeners: RebalanceListenerInvoker, run_deferred: Callable[[], None]) -> None:
        self.config = config
        self.assignors = []
        for spec in config.partition_assignment_strategy:
            try:
                self.assignors.append(assignors_api.get_assignor(spec))
            except LookupError as exc:
                raise ConfigError(f"partition.assignment.strategy: {exc}") from None
        self.protocol = select_rebalance_protocol(self.assignors)
        self._group_id = config.group_id
        self._group_instance_id = config.group_instance_id
        self._net = net
        self._discovery = discovery
        self._subs = subscriptions
        self._hb = heartbeat
        self._commits = commits
        self._listeners = listeners
        #: fail the requests of coordinator connections the core closed, then let commits and close() move on
        self._run_deferred = run_deferred
        discovery.state_label = self.state_label

        self.state = MemberState.UNJOINED
        self.generation = NO_GENERATION
        self.rejoin_needed = True
        self.rejoin_reason = ""
        self.heartbeat_closed = False  # close() stopped the heartbeat thread
        self.heartbeat_failure: Optional[BaseException] = None  # raised by the next poll (pollHeartbeat)
        self._needs_join_prepare = True
        self._join_future: Optional[RequestFuture] = None
        self._join_backoff_until = 0
        self.last_rebalance_start_ms = -1
        self.last_rebalance_end_ms = -1
        self.is_leader = False
        self.joined_subscription: Optional[frozenset[str]] = None
        self._assignment_snapshot: Optional[dict[str, int]] = None
        self._join_prepare_deadline: Optional[int] = None
        self._join_prepare_commit: Optional[RequestFuture] = None

    # --- queries -------------------------------------------------------------------------------------------------
    def state_label(self) -> str:
        return self.state.value

    def rebalance_in_progress(self) -> bool:
        return self.state in (MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE)

    def generation_if_stable(self) -> Optional[Generation]:
        return self.generation if self.state == MemberState.STABLE else None

    def next_deadline_ms(self) -> Optional[int]:
        """When the heartbeat thread has work (None: disabled): a coordinator lookup, or the earliest of the
        heartbeat, session and poll timers."""
        # The heartbeat thread runs from the JoinGroup response until the member resets, leaves, fails or closes
        # (HeartbeatThread.enable / disable). A joined member always has a subscription (unsubscribing resets it
        # in maybeLeaveGroup), so the subscription need not be read here, nor in heartbeat_thread.
        if self.heartbeat_closed or self.heartbeat_failure is not None or self.state in NOT_JOINED:
            return None
        discovery = self._discovery
        if discovery.coordinator is None:
            return discovery.next_lookup_ms()
        hb = self._hb
        # (comparisons, not min(): asked after every call into the core)
        t = hb.heartbeat_deadline_ms
        if hb.session_deadline_ms < t:
            t = hb.session_deadline_ms
        if hb.poll_deadline_ms < t:
            t = hb.poll_deadline_ms
        return t

    def next_join_ms(self) -> Optional[int]:
        """When the application's next poll can move the join on (None: it waits for a response)."""
        prepare = self._join_prepare_commit
        waiting = (self._join_future is not None and not self._join_future.done) or (
            prepare is not None and not prepare.done)
        return None if waiting else self._join_backoff_until

    # --- the state machine ----------------------------------------------------------------------------------------
    def _transition(self, trigger: Trigger, reason: str = "") -> None:
        new = next_state(self.state, trigger)
        if new != self.state:
            self._net.emit(out.StateChanged(self.state.value, new.value, reason or trigger.value))
        self.state = new

    def request_rejoin(self, reason: str) -> None:
        """AbstractCoordinator.requestRejoin."""
        self.rejoin_reason = reason
        self.rejoin_needed = True

    def _request_rejoin_if_necessary(self, reason: str) -> None:
        if not self.rejoin_needed:
            self.request_rejoin(reason)

    def _reset_state_and_generation(self, reason: str, reset_member_id: bool) -> None:
        self._transition(Trigger.RESET, reason)
        self.generation = reset_generation(self.generation, reset_member_id)

    def _reset_state_and_rejoin(self, reason: str, reset_member_id: bool) -> None:
        self._reset_state_and_generation(reason, reset_member_id)
        self.request_rejoin(reason)
        self._needs_join_prepare = True

    def reset_state_on_response_error(self, api: str, error: ErrorCode, reset_member_id: bool) -> None:
        self._reset_state_and_rejoin(f"encountered {error.name} from {api} response", reset_member_id)

    def rejoin_needed_or_pending(self) -> bool:
        """ConsumerCoordinator.rejoinNeededOrPending."""
        subs = self._subs
        if not subs.subscription:
            return False
        if self._assignment_snapshot is not None and self._assignment_snapshot != subs.metadata_snapshot():
            self._request_rejoin_if_necessary("cached metadata has changed")
            return True
        joined = self.joined_subscription
        if joined is not None and joined is not subs.subscription and joined != subs.subscription:
            self._request_rejoin_if_necessary("subscription has changed")
            return True
        return self.rejoin_needed or self._join_future is not None

    # --- the application thread: ConsumerCoordinator.poll / joinGroupIfNeeded -----------------------------------
    def poll(self, now_ms: int) -> bool:
        """The group part of one application poll; True when the member is in the group (joined, or nothing to
        join)."""
        self._poll_heartbeat(now_ms)
        join_done = self._join_future is not None and self._join_future.done
        discovery = self._discovery
        if discovery.coordinator is None and not join_done and not discovery.ensure_ready(now_ms):
            return False
        if self.rejoin_needed_or_pending():
            if not self._join_group_if_needed(now_ms):
                return False
        return True

    def _poll_heartbeat(self, now_ms: int) -> None:
        """AbstractCoordinator.pollHeartbeat: surface a heartbeat-thread failure once, restart the poll timer."""
        if self.heartbeat_failure is not None:
            exc, self.heartbeat_failure = self.heartbeat_failure, None
            raise exc
        self._hb.poll(now_ms)

    def _join_group_if_needed(self, now_ms: int) -> bool:
        """One non-blocking pass of AbstractCoordinator.joinGroupIfNeeded: True when the group is joined."""
        discovery = self._discovery
        for _ in range(32):  # the errors that "continue" are bounded by responses; this is only a safety net
            if not self.rejoin_needed_or_pending():
                return True
            future = self._join_future
            if future is not None and future.done:
                # the outcome of the previous JoinGroup/SyncGroup round (Kafka handles it right after client.poll)
                self._join_future = None
                if future.succeeded:
                    gen, state = self.generation, self.state
                    if not has_generation_reset(gen) and state == MemberState.STABLE:
                        self._join_future = future  # kept until the callbacks complete, as Kafka does
                        self._on_join_complete(gen.generation_id, gen.member_id, gen.protocol_name, future.value)
                        self._join_future = None
                        self._needs_join_prepare = True
                    else:
                        self._reset_state_and_rejoin(
                            f"rebalance failed since the generation/state was modified by heartbeat thread to "
                            f"{gen}/{state.value} before the rebalance callback triggered", True)
                    continue
                exc = future.exception
                error = getattr(exc, "error", None)
                if error != E.MEMBER_ID_REQUIRED:
                    self.request_rejoin(f"rebalance failed due to {kafka_exception_name(exc)}")
                if isinstance(exc, ApiException) and error in REJOIN_IMMEDIATELY:
                    continue
                if not getattr(exc, "retriable", False):
                    raise exc
                self._join_backoff_until = now_ms + self.config.retry_backoff_ms
                continue  # rediscover first if needed, then wait out the backoff
            if discovery.coordinator is None and not discovery.ensure_ready(now_ms):
                return False
            if future is None and now_ms < self._join_backoff_until:
                return False
            if self._needs_join_prepare:
                self._needs_join_prepare = False
                if not self._on_join_prepare(now_ms, self.generation.generation_id, self.generation.member_id):
                    self._needs_join_prepare = True
                    return False
            if self._join_future is None:
                self._initiate_join_group(now_ms)
            if not self._join_future.done:
                return False
        return False

    def _initiate_join_group(self, now_ms: int) -> None:
        self._transition(Trigger.SEND_JOIN, self.rejoin_reason)
        if self.last_rebalance_start_ms == -1:
            self.last_rebalance_start_ms = now_ms
        self._join_future = self._send_join_group()

    def _send_join_group(self) -> RequestFuture:
        discovery = self._discovery
        if discovery.coordinator is None:
            return RequestFuture.failed_with(ApiException(E.COORDINATOR_NOT_AVAILABLE))
        try:
            version = self._net.api_version(ApiKey.JOIN_GROUP)
        except UnsupportedVersionException as exc:
            return RequestFuture.failed_with(exc)
        if self._group_instance_id is not None and version < 5:
            return RequestFuture.failed_with(UnsupportedVersionException(
                f"The broker join group protocol version {version} does not support usage of config "
                f"group.instance.id."))
        config = self.config
        body = JoinGroupRequest(
            group_id=self._group_id, session_timeout_ms=config.session_timeout_ms,
            rebalance_timeout_ms=config.rebalance_timeout_ms, member_id=self.generation.member_id,
            group_instance_id=self._group_instance_id, protocol_type=PROTOCOL_TYPE,
            protocols=self._join_protocols(), reason=_truncate_reason(self.rejoin_reason))
        timeout = max(config.request_timeout_ms, config.rebalance_timeout_ms + JOIN_GROUP_TIMEOUT_LAPSE_MS)
        sent = self.generation
        return discovery.send(ApiKey.JOIN_GROUP, body, lambda r, f: self._handle_join_group(r, f, sent),
                              timeout_ms=timeout, version=version)

    def _join_protocols(self) -> list:
        """ConsumerCoordinator.metadata: one protocol per configured assignor, in preference order."""
        subs = self._subs
        self.joined_subscription = subs.subscription
        topics = sorted(subs.subscription)
        owned = subs.owned_grouped()
        protocols = []
        for assignor in self.assignors:
            sub = ConsumerProtocolSubscription(
                topics=topics, user_data=assignor.subscription_user_data(topics, None, None),
                owned_partitions=owned, generation_id=self.generation.generation_id, rack_id=self.config.client_rack)
            protocols.append(JoinGroupRequest.Protocol(name=assignor.name, metadata=encode_subscription(sub)))
        return protocols

    def _handle_join_group(self, response: Any, future: RequestFuture, sent: Generation) -> None:
        """JoinGroupResponseHandler."""
        error = E.from_code(response.error_code)
        if error == E.NONE:
            if response.protocol_type is not None and response.protocol_type != PROTOCOL_TYPE:
                future.fail(ApiException(E.INCONSISTENT_GROUP_PROTOCOL))
                return
            if self.state != MemberState.PREPARING_REBALANCE:
                # woken up / left the group while the JoinGroup was in flight
                future.fail(UnjoinedGroupException("the consumer left the group during the rebalance"))
                return
            self._transition(Trigger.JOIN_SUCCEEDED, "JoinGroup answered")
            self._hb.reset_timeouts(self._net.now)  # HeartbeatThread.enable
            self.generation = Generation(response.generation_id, response.member_id, response.protocol_name)
            is_leader = response.leader == response.member_id
            self._net.emit(out.GroupJoined(response.generation_id, response.member_id, response.leader,
                                           response.protocol_name, is_leader,
                                           tuple(m.member_id for m in response.members)))
            if is_leader:
                try:
                    assignments = self._on_leader_elected(response)
                except KafkaException as exc:
                    future.fail(exc)
                    return
                sync = self._send_sync_group(assignments)
            else:
                sync = self._send_sync_group([])
            sync.add_listener(future.complete, future.fail)
            return
        action = JOIN_GROUP_ERRORS.get(error, Action.FATAL)
        if action == Action.RESET_MEMBER:
            if self.generation == sent:
                self.reset_state_on_response_error("JOIN_GROUP", error, True)
        elif action == Action.REDISCOVER:
            self._discovery.mark_unknown(f"error response {error.name}")
        elif action == Action.ADOPT_MEMBER_ID:
            self.generation = Generation(NO_GENERATION.generation_id, response.member_id, None)
            self.request_rejoin(f"need to re-join with the given member-id: {response.member_id}")
        elif action == Action.FATAL and error not in KNOWN_FATAL_JOIN_ERRORS:
            future.fail(ApiException(error, f"Unexpected error in join group response: {error.message}"))
            return
        future.fail(exception_for(error))

    def _on_leader_elected(self, response: Any) -> list:
        """ConsumerCoordinator.onLeaderElected: run the elected assignor over every member's subscription."""
        api = assignors_api
        subs = self._subs
        protocol_name = response.protocol_name
        assignor = self._lookup_assignor(protocol_name)
        if assignor is None:
            raise IllegalStateException(f"Coordinator selected invalid assignment protocol: {protocol_name}")
        subscriptions: dict[str, Any] = {}
        owned: dict[str, set] = {}
        all_topics: set[str] = set()
        for member in response.members:
            try:
                _version, sub = decode_subscription(member.metadata)
            except ProtocolError as exc:
                raise KafkaException(f"invalid subscription of member {member.member_id}: {exc}") from None
            owned_tps = tuple(TopicPartition(t, p) for t, ps in sub.owned_partitions for p in ps)
            subscriptions[member.member_id] = api.Subscription(
                topics=tuple(sub.topics), user_data=sub.user_data, owned_partitions=owned_tps,
                generation_id=sub.generation_id, group_instance_id=member.group_instance_id,
                rack_id=sub.rack_id or None)
            owned[member.member_id] = set(owned_tps)
            all_topics.update(sub.topics)
        subs.group_subscription = frozenset(all_topics)
        self.is_leader = True
        if getattr(response, "skip_assignment", False):
            # KIP-814: a returning static leader keeps the group's assignment; SyncGroup without assignments
            self._assignment_snapshot = subs.metadata_snapshot()
            return []
        partitions_per_topic = {t: subs.metadata[t] for t in sorted(all_topics) if t in subs.metadata}
        result = assignor.assign(partitions_per_topic, subscriptions)
        if self.protocol == RebalanceProtocol.COOPERATIVE and assignor.name != "cooperative-sticky":
            self._validate_cooperative_assignment(owned, result)
        self._assignment_snapshot = subs.metadata_snapshot()
        self._net.emit(out.AssignmentComputed(response.generation_id, protocol_name,
                                              {m: tuple(result[m].partitions) for m in sorted(result)}))
        assignments = []
        for member_id in sorted(result):
            a = result[member_id]
            grouped: dict[str, list[int]] = {}
            for tp in a.partitions:
                grouped.setdefault(tp.topic, []).append(tp.partition)
            data = encode_assignment(ConsumerProtocolAssignment(list(grouped.items()), a.user_data))
            assignments.append(SyncGroupRequest.Assignment(member_id=member_id, assignment=data))
        return assignments

    @staticmethod
    def _validate_cooperative_assignment(owned: Mapping[str, set], result: Mapping[str, Any]) -> None:
        """ConsumerCoordinator.validateCooperativeAssignment: no partition may move between members in one
        round (it must be revoked first, then assigned in a follow-up rebalance)."""
        added: set = set()
        revoked: set = set()
        for member_id, assignment in result.items():
            mine = owned.get(member_id, set())
            got = set(assignment.partitions)
            added |= got - mine
            revoked |= mine - got
        if added & revoked:
            raise IllegalStateException("Assignor supporting the COOPERATIVE protocol violates its requirements")

    def _send_sync_group(self, assignments: list) -> RequestFuture:
        gen = self.generation
        body = SyncGroupRequest(group_id=self._group_id, generation_id=gen.generation_id, member_id=gen.member_id,
                                group_instance_id=self._group_instance_id, protocol_type=PROTOCOL_TYPE,
                                protocol_name=gen.protocol_name, assignments=assignments)
        return self._discovery.send(ApiKey.SYNC_GROUP, body, lambda r, f: self._handle_sync_group(r, f, gen))

    def _handle_sync_group(self, response: Any, future: RequestFuture, sent: Generation) -> None:
        """SyncGroupResponseHandler."""
        error = E.from_code(response.error_code)
        if error == E.NONE:
            if response.protocol_type is not None and response.protocol_type != PROTOCOL_TYPE:
                future.fail(ApiException(E.INCONSISTENT_GROUP_PROTOCOL))
                return
            if not has_generation_reset(self.generation) and self.state == MemberState.COMPLETING_REBALANCE:
                if response.protocol_name is not None and response.protocol_name != self.generation.protocol_name:
                    future.fail(ApiException(E.INCONSISTENT_GROUP_PROTOCOL))
                    return
                self._transition(Trigger.SYNC_SUCCEEDED, "SyncGroup answered")
                self.rejoin_reason = ""
                self.rejoin_needed = False
                self.last_rebalance_end_ms = self._net.now
                self.last_rebalance_start_ms = -1
                future.complete(bytes(response.assignment))
            else:
                # the heartbeat thread reset the generation meanwhile: retry at once
                future.fail(ApiException(E.ILLEGAL_GENERATION))
            return
        action = SYNC_GROUP_ERRORS.get(error, Action.FATAL)
        if action in (Action.RESET_MEMBER, Action.RESET_GENERATION):
            if self.generation == sent:
                self.reset_state_on_response_error("SYNC_GROUP", error, action == Action.RESET_MEMBER)
        elif action == Action.REDISCOVER:
            self._discovery.mark_unknown(f"error response {error.name}")
        elif action == Action.FATAL and error not in KNOWN_FATAL_SYNC_ERRORS:
            future.fail(ApiException(error, f"Unexpected error from SyncGroup: {error.message}"))
            return
        future.fail(exception_for(error))

    # --- onJoinPrepare / onJoinComplete / onLeavePrepare (ConsumerCoordinator) ------------------------------------
    def _on_join_prepare(self, now_ms: int, generation_id: int, member_id: str) -> bool:
        """ConsumerCoordinator.onJoinPrepare: commit (auto-commit), then revoke or lose partitions."""
        subs = self._subs
        if self._join_prepare_deadline is None:
            self._join_prepare_deadline = now_ms + self.config.rebalance_timeout_ms
        if self.config.enable_auto_commit and self._join_prepare_commit is None:
            if self.protocol == RebalanceProtocol.EAGER:  # maybeMarkPartitionsPendingRevocation
                subs.pending_revocation |= set(subs.assignment)
            self._join_prepare_commit = self._commits.auto_commit_async(now_ms)
        commit = self._join_prepare_commit
        if commit is not None:
            completed = True
            if now_ms >= self._join_prepare_deadline:
                log.error("Asynchronous auto-commit of offsets failed: joinPrepare timeout. Will continue to join")
            elif not commit.done:
                completed = False
            elif commit.retriable:
                completed = False
            if commit.done:
                self._join_prepare_commit = None
            if not completed:
                if commit.done:
                    self._join_backoff_until = now_ms + self.config.retry_backoff_ms
                return False

        owned = subs.assignment
        invoke = self._listeners.invoke
        error = None
        if generation_id == NO_GENERATION.generation_id or member_id == NO_GENERATION.member_id:
            # the generation was reset (error, poll timeout, leave): whatever we owned is lost
            if owned:
                error = invoke(out.PartitionsLost, owned)
                subs.assign_from_subscribed(())
        elif self.protocol == RebalanceProtocol.EAGER:
            error = invoke(out.PartitionsRevoked, owned)  # invoked even with no partitions
            subs.assign_from_subscribed(())
        else:
            # COOPERATIVE: only partitions of topics no longer subscribed
            revoked = tuple(tp for tp in owned if tp.topic not in subs.subscription)
            if revoked:
                error = invoke(out.PartitionsRevoked, revoked)
                subs.assign_from_subscribed(tuple(tp for tp in owned if tp not in set(revoked)))
        self.is_leader = False
        subs.group_subscription = frozenset()
        self._join_prepare_deadline = None
        self._join_prepare_commit = None
        raise_callback_error(error, keep_kafka_exception=False)
        return True

    def _on_join_complete(self, generation_id: int, member_id: str, protocol_name: Optional[str],
                          assignment_bytes: bytes) -> None:
        """ConsumerCoordinator.onJoinComplete: the listener order of KIP-429."""
        subs = self._subs
        if not self.is_leader:
            self._assignment_snapshot = None
        assignor = self._lookup_assignor(protocol_name)
        if assignor is None:
            raise IllegalStateException(f"Coordinator selected invalid assignment protocol: {protocol_name}")
        if len(assignment_bytes) < 2:
            raise IllegalStateException(
                f"There are insufficient bytes available to read assignment from the sync-group response (actual "
                f"byte size {len(assignment_bytes)}), this is not expected; it is possible that the leader's assign "
                f"function is buggy and did not return any assignment for this member, or because static member "
                f"is configured and the protocol is buggy hence did not get the assignment for this member")
        try:
            _version, decoded = decode_assignment(assignment_bytes)
        except ProtocolError as exc:
            raise KafkaException(f"invalid assignment from the sync-group response: {exc}") from None
        partitions = tuple(TopicPartition(t, p) for t, ps in decoded.assigned_partitions for p in ps)
        assigned = sorted_tps(set(partitions))
        owned = subs.assignment
        if any(tp.topic not in subs.subscription for tp in assigned):
            self.request_rejoin("received assignment does not match the current subscription")
            return
        owned_set, assigned_set = set(owned), set(assigned)
        added = tuple(tp for tp in assigned if tp not in owned_set)
        invoke = self._listeners.invoke
        first_error: Optional[BaseException] = None
        if self.protocol == RebalanceProtocol.COOPERATIVE:
            revoked = tuple(tp for tp in owned if tp not in assigned_set)
            if revoked:
                # revoke BEFORE updating the assignment, then ask for a follow-up rebalance (KIP-429)
                first_error = invoke(out.PartitionsRevoked, revoked)
                self.request_rejoin("need to revoke partitions and re-join")
        try:
            assignor.on_assignment(assignors_api.Assignment(partitions, decoded.user_data), generation_id)
        except Exception as exc:  # noqa: BLE001
            first_error = first_error or exc
        self._commits.restart_auto_commit_timer(self._net.now)
        subs.assign_from_subscribed(assigned)
        error = invoke(out.PartitionsAssigned, added)  # always invoked, possibly empty
        raise_callback_error(first_error or error, keep_kafka_exception=True)

    def on_leave_prepare(self) -> None:
        """ConsumerCoordinator.onLeavePrepare: lost if the generation was reset or a rebalance is under way,
        revoked otherwise; only when partitions are owned."""
        subs = self._subs
        dropped = subs.assignment
        if subs.subscription and dropped:
            gen = self.generation
            if (gen.generation_id == NO_GENERATION.generation_id or gen.member_id == NO_GENERATION.member_id
                    or self.rebalance_in_progress()):
                error = self._listeners.invoke(out.PartitionsLost, dropped)
            else:
                error = self._listeners.invoke(out.PartitionsRevoked, dropped)
            subs.assign_from_subscribed(())
            raise_callback_error(error, keep_kafka_exception=False)

    def _lookup_assignor(self, name: Optional[str]):
        for assignor in self.assignors:
            if assignor.name == name:
                return assignor
        return None

    # --- the heartbeat thread (AbstractCoordinator.HeartbeatThread.run, one pass) --------------------------------
    def heartbeat_thread(self, now_ms: int) -> bool:
        """One pass. Returns False if it did nothing or only sent a heartbeat, which changes nothing the
        application waits for (the facade then keeps its remembered next_poll_deadline_ms)."""
        if self.heartbeat_closed or self.heartbeat_failure is not None or self.state in NOT_JOINED:
            return False  # disabled (see next_deadline_ms)
        hb = self._hb
        discovery = self._discovery
        coordinator = discovery.coordinator
        if coordinator is None:
            discovery.lookup(now_ms)
            return True
        if now_ms >= hb.session_deadline_ms:  # Heartbeat.sessionTimeoutExpired
            # no successful heartbeat response for a whole session: suspect the coordinator
            discovery.mark_unknown("session timed out without receiving a heartbeat response")
            self._run_deferred()
            discovery.lookup(now_ms)
            return True
        if now_ms >= hb.poll_deadline_ms:  # Heartbeat.pollTimeoutExpired
            self._handle_poll_timeout_expiry()
            return True
        if now_ms >= hb.heartbeat_deadline_ms:  # Heartbeat.shouldHeartbeat
            hb.sent_heartbeat(now_ms)
            gen = self.generation
            body = HeartbeatRequest(group_id=self._group_id, generation_id=gen.generation_id,
                                    member_id=gen.member_id, group_instance_id=self._group_instance_id)
            self._net.send(ApiKey.HEARTBEAT, body, lambda r, f: self._handle_heartbeat(r, f, gen),
                           coordinator.node_id, True).add_listener(self._on_heartbeat_success,
                                                                   self._on_heartbeat_failure)
        return False

    def _on_heartbeat_success(self, _value: Any) -> None:
        self._hb.receive_heartbeat(self._net.now)

    def _on_heartbeat_failure(self, exc: BaseException) -> None:
        if isinstance(exc, RebalanceInProgressException):
            # heartbeating through a rebalance keeps the member in the group until it rejoins
            self._hb.receive_heartbeat(self._net.now)
        elif isinstance(exc, FencedInstanceIdException):
            self.heartbeat_failure = exc
        else:
            self._hb.fail_heartbeat(self._net.now)

    def _handle_heartbeat(self, response: Any, future: RequestFuture, sent: Generation) -> None:
        """HeartbeatResponseHandler."""
        if response.error_code == 0:
            future.complete()
            return
        error = E.from_code(response.error_code)
        action = HEARTBEAT_ERRORS.get(error)
        if action == Action.REDISCOVER:
            self._discovery.mark_unknown(f"error response {error.name}")
            future.fail(exception_for(error))
        elif action == Action.REJOIN_IF_STABLE:
            if self.state == MemberState.STABLE:
                self.request_rejoin("group is already rebalancing")
                future.fail(exception_for(error))
            else:
                future.complete()
        elif action in (Action.RESET_MEMBER, Action.RESET_GENERATION):
            if self.generation == sent:
                self.reset_state_on_response_error("HEARTBEAT", error, action == Action.RESET_MEMBER)
                future.fail(exception_for(error))
            else:
                future.complete()  # a stale generation's error is ignored
        elif error == E.GROUP_AUTHORIZATION_FAILED:
            exc = exception_for(error)
            self.heartbeat_failure = exc
            future.fail(exc)
        else:
            future.fail(ApiException(error, f"Unexpected error in heartbeat response: {error.message}"))

    def _handle_poll_timeout_expiry(self) -> None:
        log.warning("consumer poll timeout has expired: the time between subsequent calls to poll() was longer "
                    "than max.poll.interval.ms (%d)", self.config.max_poll_interval_ms)
        self.maybe_leave_group("consumer poll timeout has expired.")

    # --- leaving -----------------------------------------------------------------------------------------------
    def maybe_leave_group(self, reason: str) -> Optional[RequestFuture]:
        """AbstractCoordinator.maybeLeaveGroup: dynamic members with a member id send LeaveGroup (best effort);
        every member then resets its generation and member id."""
        future = None
        if (self._group_instance_id is None and self._discovery.coordinator is not None
                and self.state != MemberState.UNJOINED and self.generation.has_member_id()):
            future = self._send_leave_group(reason)
            self._net.emit(out.LeftGroup(self.generation.member_id, reason))
        self._reset_state_and_rejoin("consumer pro-actively leaving the group", True)
        return future

    def _send_leave_group(self, reason: str) -> RequestFuture:
        try:
            version = self._net.api_version(ApiKey.LEAVE_GROUP)
        except UnsupportedVersionException as exc:
            return RequestFuture.failed_with(exc)
        member_id = self.generation.member_id
        if version >= 3:
            body = LeaveGroupRequest(group_id=self._group_id, members=[
                LeaveGroupRequest.MemberIdentity(member_id=member_id, reason=_truncate_reason(reason))])
        else:
            body = LeaveGroupRequest(group_id=self._group_id, member_id=member_id)
        return self._discovery.send(ApiKey.LEAVE_GROUP, body, self._handle_leave_group, version=version)

    @staticmethod
    def _handle_leave_group(response: Any, future: RequestFuture) -> None:
        members = getattr(response, "members", None) or []
        if len(members) > 1:
            future.fail(IllegalStateException(f"The expected leave group response should only contain no more "
                                              f"than one member info, however get {members}"))
            return
        error = E.from_code(response.error_code)
        if error == E.NONE:
            for m in members:
                if m.error_code != 0:
                    error = E.from_code(m.error_code)
                    break
        if error == E.NONE:
            future.complete()
        else:
            future.fail(exception_for(error))


__all__ = ["ClassicMembership", "RebalanceProtocol", "select_rebalance_protocol", "kafka_exception_name",
           "JOIN_GROUP_TIMEOUT_LAPSE_MS", "MAX_REASON_LENGTH"]
