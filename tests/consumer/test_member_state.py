"""The member state machine (consumer/_state.py), checked against AbstractCoordinator's rules: which state each
trigger leads to (initiateJoinGroup, JoinGroupResponseHandler, SyncGroupResponseHandler,
resetStateAndGeneration), written out here from the Java source rather than copied from the table, and
reached through the public interface; responses that find the member in another state are not transitions."""

from __future__ import annotations

import pytest

from _coordinator_harness import (T1, Harness, heartbeat_response, join_group_response, offset_fetch_response,
                                  sync_group_response)
from consumer import outputs as out
from consumer._state import TRANSITIONS, MemberState, Trigger, next_state
from consumer.errors import IllegalStateException
from protocol.api import ApiKey
from protocol.errors import ErrorCode as E


def test_stale_join_response_after_leaving_is_retried():
    # JoinGroupResponseHandler: state is no longer PREPARING_REBALANCE -> UnjoinedGroupException (retriable).
    # The member left the join meanwhile: a heartbeat of its old generation, answered UNKNOWN_MEMBER_ID while
    # the JoinGroup was in flight, reset it (the heartbeat thread's resetStateAndGeneration).
    h = Harness()
    h.join(assigned=[(T1, 0)])
    h.respond(h.take(ApiKey.OFFSET_FETCH), offset_fetch_response({(T1, 0): 5}))
    h.tick(advance=5_000)
    hb = h.take(ApiKey.HEARTBEAT)
    h.c.request_rejoin("test")
    h.poll()
    join = h.take(ApiKey.JOIN_GROUP)
    assert h.c.state == MemberState.PREPARING_REBALANCE
    h.respond(hb, heartbeat_response(E.UNKNOWN_MEMBER_ID))
    assert h.c.state == MemberState.UNJOINED
    h.respond(join, join_group_response(2, "consumer", "leader"))
    assert h.c.state == MemberState.UNJOINED
    assert not h.has(ApiKey.SYNC_GROUP)
    h.poll()
    assert not h.has(ApiKey.JOIN_GROUP)
    h.poll(advance=100)
    assert h.has(ApiKey.JOIN_GROUP)


S, T = MemberState, Trigger

# What each trigger does in each state, read off AbstractCoordinator (Kafka 3.9 / trunk):
# * initiateJoinGroup sets state = PREPARING_REBALANCE before every JoinGroup it sends, whatever the state was
#   (a first join, a retry after REBALANCE_IN_PROGRESS, a rejoin after a failed SyncGroup or a requested one);
# * JoinGroupResponseHandler (error NONE): "if (state != MemberState.PREPARING_REBALANCE) future.raise(new
#   UnjoinedGroupException()) else state = MemberState.COMPLETING_REBALANCE" -- only from PREPARING_REBALANCE;
# * SyncGroupResponseHandler (error NONE): "if (!hasGenerationReset(generation) && state ==
#   MemberState.COMPLETING_REBALANCE) ... state = MemberState.STABLE", otherwise ILLEGAL_GENERATION is raised --
#   only from COMPLETING_REBALANCE;
# * resetStateAndGeneration: state = MemberState.UNJOINED, from anywhere.
# None: Kafka makes no transition there (the handler raises instead).
KAFKA = {
    (S.UNJOINED, T.SEND_JOIN): S.PREPARING_REBALANCE,
    (S.PREPARING_REBALANCE, T.SEND_JOIN): S.PREPARING_REBALANCE,
    (S.COMPLETING_REBALANCE, T.SEND_JOIN): S.PREPARING_REBALANCE,
    (S.STABLE, T.SEND_JOIN): S.PREPARING_REBALANCE,
    (S.UNJOINED, T.JOIN_SUCCEEDED): None,
    (S.PREPARING_REBALANCE, T.JOIN_SUCCEEDED): S.COMPLETING_REBALANCE,
    (S.COMPLETING_REBALANCE, T.JOIN_SUCCEEDED): None,
    (S.STABLE, T.JOIN_SUCCEEDED): None,
    (S.UNJOINED, T.SYNC_SUCCEEDED): None,
    (S.PREPARING_REBALANCE, T.SYNC_SUCCEEDED): None,
    (S.COMPLETING_REBALANCE, T.SYNC_SUCCEEDED): S.STABLE,
    (S.STABLE, T.SYNC_SUCCEEDED): None,
    (S.UNJOINED, T.RESET): S.UNJOINED,
    (S.PREPARING_REBALANCE, T.RESET): S.UNJOINED,
    (S.COMPLETING_REBALANCE, T.RESET): S.UNJOINED,
    (S.STABLE, T.RESET): S.UNJOINED,
}


def test_kafka_rules_cover_every_state_and_trigger():
    assert set(KAFKA) == {(s, t) for s in MemberState for t in Trigger}


@pytest.mark.parametrize("state,trigger,new", [(s, t, n) for (s, t), n in KAFKA.items() if n is not None])
def test_transition_table(state, trigger, new):
    # the table the member consults agrees with Kafka's rule
    assert next_state(state, trigger) == new


@pytest.mark.parametrize("state,trigger", [(s, t) for (s, t), n in KAFKA.items() if n is None])
def test_missing_transitions_are_bugs(state, trigger):
    # no rule in Kafka: asking the table is a bug, not a silent no-op
    assert (state, trigger) not in TRANSITIONS
    with pytest.raises(IllegalStateException):
        next_state(state, trigger)


# --- the same rules, through the public interface ------------------------------------------------------------
def _in_state(state):
    """A member brought into ``state`` by ordinary calls: UNJOINED (fresh), PREPARING_REBALANCE (JoinGroup in
    flight), COMPLETING_REBALANCE (JoinGroup answered, SyncGroup in flight), STABLE (joined, positions known)."""
    h = Harness()
    if state == S.UNJOINED:
        h.discover()
    elif state == S.PREPARING_REBALANCE:
        h.discover()
        h.poll()
    elif state == S.COMPLETING_REBALANCE:
        h.discover()
        h.poll()
        h.respond(h.take(ApiKey.JOIN_GROUP), join_group_response(1, "consumer", "leader"))
    else:
        h.join(assigned=[(T1, 0)])
        h.respond(h.take(ApiKey.OFFSET_FETCH), offset_fetch_response({(T1, 0): 5}))
    assert h.c.state == state
    return h


def _send_join(h):
    # whatever makes this member send its next JoinGroup (initiateJoinGroup)
    state = h.c.state
    if state == S.PREPARING_REBALANCE:
        h.respond(h.take(ApiKey.JOIN_GROUP), join_group_response(-1, "consumer", "", error=E.REBALANCE_IN_PROGRESS))
    elif state == S.COMPLETING_REBALANCE:
        h.respond(h.take(ApiKey.SYNC_GROUP), sync_group_response(error=E.REBALANCE_IN_PROGRESS))
    elif state == S.STABLE:
        h.c.request_rejoin("test")
    h.poll()
    assert h.has(ApiKey.JOIN_GROUP)


def _reset(h):
    # whatever makes this member reset its state and generation (resetStateAndGeneration)
    state = h.c.state
    if state == S.UNJOINED:
        h.c.unsubscribe(h.now)                  # leaving: maybeLeaveGroup resets
    elif state == S.PREPARING_REBALANCE:
        h.respond(h.take(ApiKey.JOIN_GROUP), join_group_response(-1, "", "", error=E.UNKNOWN_MEMBER_ID))
    elif state == S.COMPLETING_REBALANCE:
        h.respond(h.take(ApiKey.SYNC_GROUP), sync_group_response(error=E.UNKNOWN_MEMBER_ID))
    else:
        h.tick(advance=5_000)
        h.respond(h.take(ApiKey.HEARTBEAT), heartbeat_response(E.UNKNOWN_MEMBER_ID))


def _join_succeeds(h):
    h.respond(h.take(ApiKey.JOIN_GROUP), join_group_response(1, "consumer", "leader"))


def _sync_succeeds(h):
    h.respond(h.take(ApiKey.SYNC_GROUP), sync_group_response([(T1, 0)]))


FIRE = {T.SEND_JOIN: _send_join, T.JOIN_SUCCEEDED: _join_succeeds, T.SYNC_SUCCEEDED: _sync_succeeds, T.RESET: _reset}


@pytest.mark.parametrize("state,trigger,new", [(s, t, n) for (s, t), n in KAFKA.items() if n is not None])
def test_trigger_moves_the_member(state, trigger, new):
    h = _in_state(state)
    h.clear()
    FIRE[trigger](h)
    assert h.c.state == new
    changed = [(o.old, o.new) for o in h.events(out.StateChanged) if o.old != o.new]
    assert changed == ([] if state == new else [(state.value, new.value)])


def test_sync_response_after_a_reset_is_not_a_transition():
    # SyncGroupResponseHandler: the heartbeat thread reset the generation while the SyncGroup was in flight ->
    # ILLEGAL_GENERATION, the member stays UNJOINED and rejoins at once (without its old member id)
    h = _in_state(S.COMPLETING_REBALANCE)
    sync = h.take(ApiKey.SYNC_GROUP)
    h.tick(advance=5_000)                       # the heartbeat thread runs from COMPLETING_REBALANCE on
    h.respond(h.take(ApiKey.HEARTBEAT), heartbeat_response(E.UNKNOWN_MEMBER_ID))
    assert h.c.state == S.UNJOINED
    h.respond(sync, sync_group_response([(T1, 0)]))
    assert h.c.state == S.UNJOINED and h.c.assignment == ()
    h.poll()
    assert h.take(ApiKey.JOIN_GROUP).body.member_id == ""
    assert h.callbacks() == []
