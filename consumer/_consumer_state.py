"""The state machine of a KIP-848 (``group.protocol=consumer``) group member, and nothing else.

Mirrors the Java client's ``org.apache.kafka.clients.consumer.internals.MemberState`` (its states and each
state's ``previousValidStates``), the special member epochs of ``ConsumerGroupHeartbeatRequest``, and the part of
``AbstractHeartbeatRequestManager.onErrorResponse`` / ``ConsumerHeartbeatRequestManager.
handleSpecificExceptionInResponse`` that decides what an error code in a ConsumerGroupHeartbeat response does to
the member. The classic protocol's machine is ``consumer/_state.py``; this one lives beside it.

Rules this file lives by
------------------------
* Everything that decides the member's state is data here: the states (:class:`ConsumerMemberState`), the
  :data:`PREVIOUS_VALID_STATES` table (``transitionTo`` refuses any other move: ``IllegalStateException``), and
  the :data:`HEARTBEAT_ERRORS` table. ``consumer/consumer_membership.py`` carries them out.
* It sends nothing, keeps no time and calls no listener.

Theory of operation
-------------------
A consumer that subscribes is UNSUBSCRIBED until its first poll makes it JOINING (epoch 0, a full heartbeat).
A heartbeat response with no error gives the member its epoch; one carrying an assignment makes it RECONCILING
(unless the assignment is what it already owns). Reconciling revokes (``onPartitionsRevoked``) before it assigns
(``onPartitionsAssigned``), then the member is ACKNOWLEDGING until the next heartbeat, which reports what it now
owns, is built: then STABLE (or RECONCILING again if a newer target arrived meanwhile). FENCED_MEMBER_EPOCH or
UNKNOWN_MEMBER_ID make it FENCED: its partitions are lost (``onPartitionsLost``), its epoch 0, then JOINING
again with the same member id. Leaving (unsubscribe, close) goes PREPARE_LEAVING (callbacks) -> LEAVING (the
heartbeat with epoch -1, or -2 for a static member) -> UNSUBSCRIBED once that heartbeat is built. An expired
``max.poll.interval.ms`` leaves the same way but ends in STALE, from which the next application poll rejoins.
FATAL is the end: the error is raised from ``poll``.
"""

from __future__ import annotations

from enum import Enum

from consumer.errors import IllegalStateException
from protocol.errors import ErrorCode

E = ErrorCode

#: ConsumerGroupHeartbeatRequest.JOIN_GROUP_MEMBER_EPOCH: join, or rejoin after fencing
JOIN_GROUP_MEMBER_EPOCH = 0
#: ConsumerGroupHeartbeatRequest.LEAVE_GROUP_MEMBER_EPOCH: leave for good
LEAVE_GROUP_MEMBER_EPOCH = -1
#: ConsumerGroupHeartbeatRequest.LEAVE_GROUP_STATIC_MEMBER_EPOCH: a static member leaves for now, keeping its
#: assignment on the coordinator until its session times out
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


class ConsumerMemberState(str, Enum):
    """MemberState (clients/.../consumer/internals/MemberState.java)."""

    UNSUBSCRIBED = "UNSUBSCRIBED"        # not subscribed, or left the group
    JOINING = "JOINING"                  # a heartbeat with epoch 0 and every field is (being) sent
    RECONCILING = "RECONCILING"          # a target assignment differs from what the member owns
    ACKNOWLEDGING = "ACKNOWLEDGING"      # reconciled; the next heartbeat reports the new assignment
    STABLE = "STABLE"                    # owns its target assignment
    FENCED = "FENCED"                    # fenced by the coordinator: releasing its partitions, then rejoins
    PREPARE_LEAVING = "PREPARE_LEAVING"  # leaving: releasing its partitions (callbacks)
    LEAVING = "LEAVING"                  # leaving: the heartbeat with the leave epoch is to be sent
    FATAL = "FATAL"                      # an unrecoverable error; no more heartbeats
    STALE = "STALE"                      # left because max.poll.interval.ms expired; rejoins on the next poll

    def can_handle_new_assignment(self) -> bool:
        """MemberState.canHandleNewAssignment: the states RECONCILING may be entered from."""
        return self in PREVIOUS_VALID_STATES[ConsumerMemberState.RECONCILING]


S = ConsumerMemberState
#: MemberState's static block: state -> the states it may be entered from (a move to the same state is allowed).
PREVIOUS_VALID_STATES: dict[ConsumerMemberState, frozenset[ConsumerMemberState]] = {
    S.STABLE: frozenset({S.JOINING, S.ACKNOWLEDGING, S.RECONCILING}),
    S.RECONCILING: frozenset({S.STABLE, S.JOINING, S.ACKNOWLEDGING, S.RECONCILING}),
    S.ACKNOWLEDGING: frozenset({S.RECONCILING}),
    S.FATAL: frozenset({S.JOINING, S.STABLE, S.RECONCILING, S.ACKNOWLEDGING, S.PREPARE_LEAVING, S.LEAVING,
                        S.UNSUBSCRIBED}),
    S.FENCED: frozenset({S.JOINING, S.STABLE, S.RECONCILING, S.ACKNOWLEDGING, S.PREPARE_LEAVING, S.LEAVING}),
    S.JOINING: frozenset({S.FENCED, S.UNSUBSCRIBED, S.STALE}),
    S.PREPARE_LEAVING: frozenset({S.JOINING, S.STABLE, S.RECONCILING, S.ACKNOWLEDGING, S.UNSUBSCRIBED}),
    S.LEAVING: frozenset({S.PREPARE_LEAVING}),
    S.UNSUBSCRIBED: frozenset({S.PREPARE_LEAVING, S.LEAVING, S.FENCED}),
    S.STALE: frozenset({S.LEAVING}),
}

#: AbstractMembershipManager.isNotInGroup
NOT_IN_GROUP = frozenset({S.UNSUBSCRIBED, S.FENCED, S.FATAL, S.STALE})
#: AbstractMembershipManager.shouldSkipHeartbeat (the same states: no heartbeat outside the group)
SKIP_HEARTBEAT = NOT_IN_GROUP
#: AbstractMembershipManager.shouldHeartbeatNow: these send a heartbeat without waiting for the interval
HEARTBEAT_NOW = frozenset({S.ACKNOWLEDGING, S.LEAVING, S.JOINING})
#: AbstractMembershipManager.isLeavingGroup
LEAVING_STATES = frozenset({S.PREPARE_LEAVING, S.LEAVING})


def check_transition(old: ConsumerMemberState, new: ConsumerMemberState) -> None:
    """AbstractMembershipManager.transitionTo's check."""
    if old != new and old not in PREVIOUS_VALID_STATES[new]:
        raise IllegalStateException(f"Invalid state transition from {old.value} to {new.value}")


class HeartbeatAction(str, Enum):
    """What an error code in a ConsumerGroupHeartbeat response makes the member do."""

    REDISCOVER = "rediscover"      # markCoordinatorUnknown; heartbeat backoff reset (retry once found)
    RETRY = "retry"                # retry after the backoff
    FENCE = "fence"                # transitionToFenced; backoff reset
    REPORT = "report"              # an ErrorEvent for the application (raised by poll), membership unchanged
    FATAL = "fatal"                # ErrorEvent + transitionToFatal
    FATAL_UNLESS_UNSUBSCRIBED = "fatal unless unsubscribed"  # GROUP_ID_NOT_FOUND after a completed leave: ignored


A = HeartbeatAction
#: AbstractHeartbeatRequestManager.onErrorResponse + ConsumerHeartbeatRequestManager.
#: handleSpecificExceptionInResponse. Unlisted codes are fatal ("unexpected error").
HEARTBEAT_ERRORS: dict[ErrorCode, HeartbeatAction] = {
    E.NOT_COORDINATOR: A.REDISCOVER,
    E.COORDINATOR_NOT_AVAILABLE: A.REDISCOVER,
    E.COORDINATOR_LOAD_IN_PROGRESS: A.RETRY,
    E.GROUP_AUTHORIZATION_FAILED: A.FATAL,
    E.TOPIC_AUTHORIZATION_FAILED: A.REPORT,
    E.INVALID_REQUEST: A.FATAL,
    E.GROUP_MAX_SIZE_REACHED: A.FATAL,
    E.UNSUPPORTED_ASSIGNOR: A.FATAL,
    E.FENCED_MEMBER_EPOCH: A.FENCE,
    E.UNKNOWN_MEMBER_ID: A.FENCE,
    E.INVALID_REGULAR_EXPRESSION: A.FATAL,
    E.GROUP_ID_NOT_FOUND: A.FATAL_UNLESS_UNSUBSCRIBED,
    E.UNSUPPORTED_VERSION: A.FATAL,
    E.UNRELEASED_INSTANCE_ID: A.FATAL,
    E.FENCED_INSTANCE_ID: A.FATAL,
}

#: AbstractHeartbeatRequestManager.CONSUMER_PROTOCOL_NOT_SUPPORTED_MSG (UNSUPPORTED_VERSION either way)
CONSUMER_PROTOCOL_NOT_SUPPORTED_MSG = ("The cluster does not support the new CONSUMER group protocol. Set "
                                       "group.protocol=classic on the consumer configs to revert to the CLASSIC "
                                       "protocol until the cluster is upgraded.")

__all__ = ["ConsumerMemberState", "PREVIOUS_VALID_STATES", "NOT_IN_GROUP", "SKIP_HEARTBEAT", "HEARTBEAT_NOW",
           "LEAVING_STATES", "check_transition", "HeartbeatAction", "HEARTBEAT_ERRORS", "JOIN_GROUP_MEMBER_EPOCH",
           "LEAVE_GROUP_MEMBER_EPOCH", "LEAVE_GROUP_STATIC_MEMBER_EPOCH", "CONSUMER_PROTOCOL_NOT_SUPPORTED_MSG"]
