"""The state machine of a classic-protocol group member, and nothing else.

Mirrors ``AbstractCoordinator.MemberState`` and ``AbstractCoordinator.Generation`` of the Java client, and the
part of its response handlers (``JoinGroupResponseHandler``, ``SyncGroupResponseHandler``,
``HeartbeatResponseHandler``) that decides what an error code does to the member.

Rules this file lives by
------------------------
* Everything that decides the member's state lives here, as data: the states (:class:`MemberState`), what
  moves them (:class:`Trigger`), the :data:`TRANSITIONS` table, the generation, and the tables saying what an
  error code in a JoinGroup, SyncGroup or Heartbeat response makes the member do (:class:`Action`). The tables
  are the mechanism: :func:`next_state` consults :data:`TRANSITIONS` (a pair missing from it is a bug:
  ``IllegalStateException``) and the response handlers (``consumer/membership.py``) consult the ``*_ERRORS``
  tables; nothing else decides.
* This file sends nothing, keeps no time and calls no listener: it does not know there is a driver.
* It is the classic protocol's machine. KIP-848's ``ConsumerMembershipManager`` has a different
  ``MemberState`` (UNSUBSCRIBED, JOINING, RECONCILING, ACKNOWLEDGING, STABLE, FENCED, LEAVING, ...); its table
  lives beside this one, in ``consumer/_consumer_state.py``.

Theory of operation
-------------------
A member is UNJOINED until it sends a JoinGroup (``initiateJoinGroup``): then it is PREPARING_REBALANCE, whatever
it was before (a member retrying after REBALANCE_IN_PROGRESS, rejoining after a failed SyncGroup or asked to
rejoin while STABLE sends a new JoinGroup the same way). A JoinGroup answered NONE makes it
COMPLETING_REBALANCE (the response's generation, member id and protocol become its :class:`Generation`, and
the heartbeat thread starts); a SyncGroup answered NONE makes it STABLE. ``resetStateAndGeneration`` (an error
that fences the member, a poll timeout, leaving the group) makes it UNJOINED from any state, with generation -1
and, unless only the generation is stale (ILLEGAL_GENERATION), no member id.

A response that finds the member in another state than the one it was sent from is not a transition: Kafka's
handlers look before they move. A JoinGroup answered while the member is no longer PREPARING_REBALANCE fails
with ``UnjoinedGroupException`` (the join is retried); a SyncGroup answered after the generation was reset or
outside COMPLETING_REBALANCE fails as ILLEGAL_GENERATION (retried at once). So JOIN_SUCCEEDED happens only in
PREPARING_REBALANCE and SYNC_SUCCEEDED only in COMPLETING_REBALANCE, which is exactly what the table holds.

Errors: each response handler looks its error code up in its table. RETRY leaves the member as it is (the join
loop retries, after ``retry.backoff.ms`` if the error is retriable); REDISCOVER marks the coordinator unknown;
RESET_MEMBER / RESET_GENERATION reset (only if the response answers the current generation:
``generationUnchanged``); ADOPT_MEMBER_ID (KIP-394) takes the member id from the response; REJOIN_IF_STABLE asks
a STABLE member to rejoin; unlisted codes are FATAL (raised from ``poll``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Optional

from consumer.errors import IllegalStateException
from protocol.errors import ErrorCode

E = ErrorCode


class MemberState(str, Enum):
    UNJOINED = "UNJOINED"                          # not in a group, or reset after an error / leave
    PREPARING_REBALANCE = "PREPARING_REBALANCE"    # JoinGroup sent, waiting for its response
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"  # JoinGroup answered, SyncGroup sent
    STABLE = "STABLE"                              # SyncGroup answered: generation and assignment known

    def has_not_joined_group(self) -> bool:
        return self in NOT_JOINED


class Trigger(str, Enum):
    SEND_JOIN = "send JoinGroup"            # initiateJoinGroup
    JOIN_SUCCEEDED = "JoinGroup answered"   # JoinGroupResponseHandler, error NONE
    SYNC_SUCCEEDED = "SyncGroup answered"   # SyncGroupResponseHandler, error NONE
    RESET = "reset generation"              # resetStateAndGeneration (errors, leave, poll timeout)


S, T = MemberState, Trigger
#: MemberState.hasNotJoinedGroup: no heartbeats in these states (none while a JoinGroup is outstanding)
NOT_JOINED = frozenset((S.UNJOINED, S.PREPARING_REBALANCE))
#: (state, trigger) -> next state. A missing pair is a bug (IllegalStateException).
TRANSITIONS: dict[tuple[MemberState, Trigger], MemberState] = {
    (S.UNJOINED, T.SEND_JOIN): S.PREPARING_REBALANCE,
    (S.PREPARING_REBALANCE, T.SEND_JOIN): S.PREPARING_REBALANCE,     # retry after REBALANCE_IN_PROGRESS etc.
    (S.COMPLETING_REBALANCE, T.SEND_JOIN): S.PREPARING_REBALANCE,    # SyncGroup failed, rejoin
    (S.STABLE, T.SEND_JOIN): S.PREPARING_REBALANCE,                  # rejoin requested
    (S.PREPARING_REBALANCE, T.JOIN_SUCCEEDED): S.COMPLETING_REBALANCE,
    (S.COMPLETING_REBALANCE, T.SYNC_SUCCEEDED): S.STABLE,
    **{(s, T.RESET): S.UNJOINED for s in MemberState},
}


def next_state(state: MemberState, trigger: Trigger) -> MemberState:
    """The state ``trigger`` moves a member in ``state`` to, from :data:`TRANSITIONS`."""
    new = TRANSITIONS.get((state, trigger))
    if new is None:
        raise IllegalStateException(f"no transition from {state.value} on {trigger.value}")
    return new


@dataclass(frozen=True, slots=True)
class Generation:
    """AbstractCoordinator.Generation."""

    generation_id: int
    member_id: str
    protocol_name: Optional[str]

    def has_member_id(self) -> bool:
        return self.member_id != ""


NO_GENERATION = Generation(-1, "", None)


def has_generation_reset(gen: Generation) -> bool:
    """AbstractCoordinator.hasGenerationReset."""
    return gen.generation_id == NO_GENERATION.generation_id and gen.protocol_name is None


def reset_generation(gen: Generation, reset_member_id: bool) -> Generation:
    """The generation after resetStateAndGeneration: -1, and the member id only if kept."""
    if reset_member_id:
        return NO_GENERATION
    return Generation(NO_GENERATION.generation_id, gen.member_id, None)


class Action(str, Enum):
    """What an error code in a group response makes the member do (before the error reaches the join loop)."""

    RETRY = "retry"                        # nothing here; the join loop retries (after a backoff if retriable)
    REDISCOVER = "rediscover"              # markCoordinatorUnknown, then retry
    RESET_MEMBER = "reset member id"       # if generation unchanged: resetStateAndRejoin(reset member id)
    RESET_GENERATION = "reset generation"  # if generation unchanged: resetStateAndRejoin(keep member id)
    ADOPT_MEMBER_ID = "adopt member id"    # KIP-394: rejoin with the member id from the response
    REJOIN_IF_STABLE = "rejoin if stable"  # Heartbeat REBALANCE_IN_PROGRESS
    FATAL = "fatal"                        # raised from poll()


A = Action
#: JoinGroupResponseHandler. Unlisted codes (FENCED_INSTANCE_ID, INCONSISTENT_GROUP_PROTOCOL,
#: INVALID_SESSION_TIMEOUT, INVALID_GROUP_ID, GROUP_AUTHORIZATION_FAILED, GROUP_MAX_SIZE_REACHED,
#: UNSUPPORTED_VERSION, anything unexpected) are fatal.
JOIN_GROUP_ERRORS: dict[ErrorCode, Action] = {
    E.COORDINATOR_LOAD_IN_PROGRESS: A.RETRY,   # retriable: backoff, retry (no rediscovery)
    E.UNKNOWN_MEMBER_ID: A.RESET_MEMBER,
    E.COORDINATOR_NOT_AVAILABLE: A.REDISCOVER,
    E.NOT_COORDINATOR: A.REDISCOVER,
    E.MEMBER_ID_REQUIRED: A.ADOPT_MEMBER_ID,
    E.REBALANCE_IN_PROGRESS: A.RETRY,          # rejoin immediately
}
#: The fatal JoinGroup errors Kafka names (anything else is "Unexpected error in join group response").
KNOWN_FATAL_JOIN_ERRORS = frozenset({E.FENCED_INSTANCE_ID, E.INCONSISTENT_GROUP_PROTOCOL, E.INVALID_SESSION_TIMEOUT,
                                     E.INVALID_GROUP_ID, E.GROUP_AUTHORIZATION_FAILED, E.GROUP_MAX_SIZE_REACHED,
                                     E.UNSUPPORTED_VERSION})
#: SyncGroupResponseHandler. Unlisted (FENCED_INSTANCE_ID, GROUP_AUTHORIZATION_FAILED, ...) are fatal.
SYNC_GROUP_ERRORS: dict[ErrorCode, Action] = {
    E.REBALANCE_IN_PROGRESS: A.RETRY,
    E.UNKNOWN_MEMBER_ID: A.RESET_MEMBER,
    E.ILLEGAL_GENERATION: A.RESET_GENERATION,  # the member id may still be valid
    E.COORDINATOR_NOT_AVAILABLE: A.REDISCOVER,
    E.NOT_COORDINATOR: A.REDISCOVER,
}
#: The fatal SyncGroup errors Kafka names (anything else is "Unexpected error from SyncGroup").
KNOWN_FATAL_SYNC_ERRORS = frozenset({E.GROUP_AUTHORIZATION_FAILED, E.FENCED_INSTANCE_ID})
#: HeartbeatResponseHandler. Unlisted codes fail the heartbeat (retried after retry.backoff.ms), except
#: GROUP_AUTHORIZATION_FAILED, which fails the heartbeat thread (raised by the next poll).
HEARTBEAT_ERRORS: dict[ErrorCode, Action] = {
    E.COORDINATOR_NOT_AVAILABLE: A.REDISCOVER,
    E.NOT_COORDINATOR: A.REDISCOVER,
    E.REBALANCE_IN_PROGRESS: A.REJOIN_IF_STABLE,
    E.ILLEGAL_GENERATION: A.RESET_GENERATION,
    E.UNKNOWN_MEMBER_ID: A.RESET_MEMBER,
    E.FENCED_INSTANCE_ID: A.RESET_MEMBER,      # and the heartbeat thread fails: raised by the next poll()
}
#: Join-loop errors after which the member rejoins at once (AbstractCoordinator.joinGroupIfNeeded).
REJOIN_IMMEDIATELY = frozenset({E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION, E.REBALANCE_IN_PROGRESS,
                                E.MEMBER_ID_REQUIRED})

__all__ = ["MemberState", "Trigger", "TRANSITIONS", "NOT_JOINED", "next_state", "Generation", "NO_GENERATION",
           "has_generation_reset", "reset_generation", "Action", "JOIN_GROUP_ERRORS", "KNOWN_FATAL_JOIN_ERRORS",
           "SYNC_GROUP_ERRORS", "KNOWN_FATAL_SYNC_ERRORS", "HEARTBEAT_ERRORS", "REJOIN_IMMEDIATELY"]
