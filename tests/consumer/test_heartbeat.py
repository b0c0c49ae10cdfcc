"""The heartbeat thread (AbstractCoordinator.HeartbeatThread, HeartbeatResponseHandler, Heartbeat): the interval,
no heartbeats while a JoinGroup is outstanding, each error code, the session timeout (coordinator unknown) and
the poll timeout (max.poll.interval.ms: leave the group)."""

from __future__ import annotations

import pytest

from _coordinator_harness import (T1, Harness, find_coordinator_response, heartbeat_response, join_group_response,
                                  leave_group_response, stable, sync_group_response, tp)
from consumer import outputs as out
from consumer._state import MemberState
from consumer.errors import FencedInstanceIdException
from protocol.api import ApiKey
from protocol.errors import ErrorCode as E


def test_heartbeats_every_interval_after_join():
    h = stable()
    joined_at = h.now
    assert h.c.next_deadline_ms() == joined_at + 5_000
    h.tick(advance=4_999)
    assert not h.has(ApiKey.HEARTBEAT)
    h.tick(advance=1)
    hb = h.take(ApiKey.HEARTBEAT)
    assert (hb.body.generation_id, hb.body.member_id, hb.body.group_instance_id) == (1, "consumer", None)
    h.respond(hb, heartbeat_response())
    h.tick(advance=4_999)
    assert not h.has(ApiKey.HEARTBEAT)
    h.tick(advance=1)
    assert h.has(ApiKey.HEARTBEAT)


def test_no_heartbeat_while_join_in_flight():
    h = Harness()
    h.discover()
    h.poll()
    h.take(ApiKey.JOIN_GROUP)
    for _ in range(5):
        h.tick(advance=5_000)
    assert not h.has(ApiKey.HEARTBEAT)


def test_failed_heartbeat_retries_after_retry_backoff():
    h = stable()
    h.tick(advance=5_000)
    h.respond(h.take(ApiKey.HEARTBEAT), heartbeat_response(E.UNKNOWN_SERVER_ERROR))
    h.tick(advance=99)
    assert not h.has(ApiKey.HEARTBEAT)
    h.tick(advance=1)
    assert h.has(ApiKey.HEARTBEAT)


# (error, coordinator known after, state after, member id after, rejoin requested)
HEARTBEAT_ERRORS = [
    (E.NONE, True, MemberState.STABLE, "consumer", False),
    (E.REBALANCE_IN_PROGRESS, True, MemberState.STABLE, "consumer", True),
    (E.ILLEGAL_GENERATION, True, MemberState.UNJOINED, "consumer", True),
    (E.UNKNOWN_MEMBER_ID, True, MemberState.UNJOINED, "", True),
    (E.FENCED_INSTANCE_ID, True, MemberState.UNJOINED, "", True),
    (E.NOT_COORDINATOR, False, MemberState.STABLE, "consumer", False),
    (E.COORDINATOR_NOT_AVAILABLE, False, MemberState.STABLE, "consumer", False),
]


@pytest.mark.parametrize("error,known,state,member,rejoin", HEARTBEAT_ERRORS)
def test_heartbeat_errors(error, known, state, member, rejoin):
    h = stable()
    h.tick(advance=5_000)
    h.respond(h.take(ApiKey.HEARTBEAT), heartbeat_response(error))
    assert (h.c.coordinator is not None) == known
    assert h.c.state == state and h.c.member_id == member and h.c.rejoin_needed == rejoin


def test_heartbeat_rebalance_in_progress_rejoins_keeping_generation():
    h = stable()
    h.tick(advance=5_000)
    h.respond(h.take(ApiKey.HEARTBEAT), heartbeat_response(E.REBALANCE_IN_PROGRESS))
    h.poll()
    join = h.take(ApiKey.JOIN_GROUP)
    assert join.body.member_id == "consumer" and join.body.reason == "group is already rebalancing"
    assert h.callbacks() == [("revoked", (tp(T1, 0),))]   # EAGER: revoke before rejoining


def test_heartbeat_unknown_member_loses_partitions_on_next_poll():
    h = stable()
    h.tick(advance=5_000)
    h.respond(h.take(ApiKey.HEARTBEAT), heartbeat_response(E.UNKNOWN_MEMBER_ID))
    h.poll()
    assert h.callbacks() == [("lost", (tp(T1, 0),))]
    assert h.take(ApiKey.JOIN_GROUP).body.member_id == ""


def test_fenced_instance_fails_the_next_poll():
    h = stable(config={"group.instance.id": "i-1"})
    h.tick(advance=5_000)
    h.respond(h.take(ApiKey.HEARTBEAT), heartbeat_response(E.FENCED_INSTANCE_ID))
    with pytest.raises(FencedInstanceIdException):
        h.poll()


def test_stale_generation_heartbeat_error_is_ignored():
    # HeartbeatResponseHandler: an error answering an older generation does not reset a newer one
    # (generationUnchanged)
    h = stable()
    h.tick(advance=5_000)
    hb = h.take(ApiKey.HEARTBEAT)                   # sent in generation 1, answered late
    h.c.request_rejoin("test")
    h.poll()
    h.respond(h.take(ApiKey.JOIN_GROUP), join_group_response(2, "consumer", "leader"))
    h.respond(h.take(ApiKey.SYNC_GROUP), sync_group_response([(T1, 0)]))
    h.poll()
    assert h.c.state == MemberState.STABLE and h.c.generation.generation_id == 2
    h.respond(hb, heartbeat_response(E.ILLEGAL_GENERATION))
    assert h.c.state == MemberState.STABLE and h.c.generation.generation_id == 2


def test_heartbeat_not_coordinator_rediscovers_from_the_heartbeat_thread():
    h = stable()
    h.tick(advance=5_000)
    h.respond(h.take(ApiKey.HEARTBEAT), heartbeat_response(E.NOT_COORDINATOR))
    assert out.CloseConnection(1, "error response NOT_COORDINATOR") in h.outputs
    h.tick()
    h.respond(h.take(ApiKey.FIND_COORDINATOR), find_coordinator_response(node=2))
    h.tick(advance=100)
    assert h.c.coordinator.node_id == 2


def test_session_timeout_marks_coordinator_unknown():
    # no successful heartbeat response for session.timeout.ms -> coordinator unknown (no LeaveGroup)
    h = stable()
    h.tick(advance=5_000)
    h.take(ApiKey.HEARTBEAT)          # never answered
    h.tick(advance=4_999)
    assert h.c.coordinator is not None
    h.tick(advance=1)                 # 10 s since the join (session timer reset then)
    assert h.c.coordinator is None
    assert not h.has(ApiKey.LEAVE_GROUP)
    assert h.has(ApiKey.FIND_COORDINATOR)


def test_rebalance_in_progress_heartbeat_keeps_session_alive():
    h = stable()
    for _ in range(4):
        h.tick(advance=5_000)
        h.respond(h.take(ApiKey.HEARTBEAT), heartbeat_response(E.REBALANCE_IN_PROGRESS))
    # (no poll: the member stays STABLE with a rejoin pending and keeps heartbeating; 20 s > the 10 s session)
    assert h.c.state == MemberState.STABLE and h.c.rejoin_needed
    assert h.c.coordinator is not None


@pytest.mark.parametrize("static", [False, True])
def test_poll_timeout_leaves_group(static):
    config = {"group.instance.id": "i-1"} if static else None
    h = stable(config=config)
    for _ in range(11):  # heartbeats keep the session alive, but the application never polls
        h.tick(advance=5_000)
        if h.has(ApiKey.HEARTBEAT):
            h.respond(h.take(ApiKey.HEARTBEAT), heartbeat_response())
    assert h.c.state == MemberState.STABLE
    h.tick(advance=5_000)             # 60 s after the join: max.poll.interval.ms
    assert h.c.state == MemberState.UNJOINED and h.c.member_id == ""
    if static:
        assert not h.has(ApiKey.LEAVE_GROUP)   # static members never send LeaveGroup
    else:
        leave = h.take(ApiKey.LEAVE_GROUP)
        assert leave.body.members[0].member_id == "consumer"
        assert leave.body.members[0].reason == "consumer poll timeout has expired."
        h.respond(leave, leave_group_response())
    h.poll()
    assert h.callbacks() == [("lost", (tp(T1, 0),))]
    assert h.take(ApiKey.JOIN_GROUP).body.member_id == ""


def test_poll_resets_the_poll_timer():
    h = stable()
    for _ in range(30):
        h.poll(advance=5_000)
        if h.has(ApiKey.HEARTBEAT):
            h.respond(h.take(ApiKey.HEARTBEAT), heartbeat_response())
    assert h.c.state == MemberState.STABLE
    assert not h.has(ApiKey.LEAVE_GROUP)
