"""SyncGroup (SyncGroupResponseHandler, ConsumerCoordinator.onJoinComplete's checks of the assignment): each error
code, an inconsistent protocol name, an empty or foreign assignment."""

from __future__ import annotations

import pytest

from _coordinator_harness import T1, T2, Harness, find_coordinator_response, join_group_response, sync_group_response
from consumer._state import MemberState
from consumer.errors import ApiException, IllegalStateException
from protocol.api import ApiKey
from protocol.errors import ErrorCode as E


# (error, next: "now" | "rediscover" | "fatal", member id of next JoinGroup, generation kept in subscription)
SYNC_ERRORS = [
    (E.REBALANCE_IN_PROGRESS, "now", "consumer"),
    (E.UNKNOWN_MEMBER_ID, "now", ""),
    (E.ILLEGAL_GENERATION, "now", "consumer"),
    (E.COORDINATOR_NOT_AVAILABLE, "rediscover", "consumer"),
    (E.NOT_COORDINATOR, "rediscover", "consumer"),
    (E.FENCED_INSTANCE_ID, "fatal", None),
    (E.GROUP_AUTHORIZATION_FAILED, "fatal", None),
    (E.UNKNOWN_SERVER_ERROR, "fatal", None),
]


@pytest.mark.parametrize("error,then,member", SYNC_ERRORS)
def test_sync_group_errors(error, then, member):
    h = Harness()
    h.discover()
    h.poll()
    h.respond(h.take(ApiKey.JOIN_GROUP), join_group_response(1, "consumer", "leader"))
    h.respond(h.take(ApiKey.SYNC_GROUP), sync_group_response(error=error))
    if then == "fatal":
        with pytest.raises(ApiException) as info:
            h.poll()
        assert info.value.error == error
        return
    if then == "rediscover":
        assert h.c.coordinator is None
        h.poll()
        h.respond(h.take(ApiKey.FIND_COORDINATOR), find_coordinator_response())
        h.poll(advance=100)
    else:
        h.poll()
    nxt = h.take(ApiKey.JOIN_GROUP)
    assert nxt.body.member_id == member
    assert h.c.state == MemberState.PREPARING_REBALANCE


def test_sync_response_with_other_protocol_name_is_inconsistent():
    h = Harness()
    h.discover()
    h.poll()
    h.respond(h.take(ApiKey.JOIN_GROUP), join_group_response(1, "c", "leader"))
    h.respond(h.take(ApiKey.SYNC_GROUP), sync_group_response([(T1, 0)], protocol_name="roundrobin"))
    with pytest.raises(ApiException) as info:
        h.poll()
    assert info.value.error == E.INCONSISTENT_GROUP_PROTOCOL


def test_empty_assignment_bytes_are_fatal_as_in_kafka():
    # ConsumerCoordinator.onJoinComplete: fewer than 2 bytes -> IllegalStateException
    h = Harness()
    h.discover()
    h.poll()
    h.respond(h.take(ApiKey.JOIN_GROUP), join_group_response(1, "consumer", "leader"))
    h.respond(h.take(ApiKey.SYNC_GROUP), sync_group_response(raw=b""))
    with pytest.raises(IllegalStateException, match="insufficient bytes"):
        h.poll()


def test_assignment_not_matching_subscription_requests_rejoin_without_callbacks():
    h = Harness()
    h.discover()
    h.poll()
    h.respond(h.take(ApiKey.JOIN_GROUP), join_group_response(1, "consumer", "leader"))
    h.respond(h.take(ApiKey.SYNC_GROUP), sync_group_response([(T2, 0)]))
    h.poll()
    # no assigned callback; the rejoin's onJoinPrepare (EAGER, valid generation) revokes the empty set
    assert h.callbacks() == [("revoked", ())]
    assert h.take(ApiKey.JOIN_GROUP).body.reason == "received assignment does not match the current subscription"
