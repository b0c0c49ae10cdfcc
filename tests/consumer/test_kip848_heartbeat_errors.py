"""A ConsumerGroupHeartbeat answered with a non-fatal error is followed by another heartbeat: KAFKA-16215 (a fenced
member never rejoined) and KAFKA-16178 (no heartbeat after NOT_COORDINATOR) came from the error response not being
recorded as the end of the request (apache/kafka#15311). Ported from Kafka 4.4's
``AbstractHeartbeatRequestManagerTest.testHeartbeatResponseOnErrorHandling`` (its non-fatal cases): when the next
heartbeat may go -- at once for NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE (once the coordinator is found again)
and for UNKNOWN_MEMBER_ID / FENCED_MEMBER_EPOCH (once the fenced member released its partitions, on poll;
``testFencedMemberStopHeartbeatUntilItReleasesAssignmentToRejoin``), after retry.backoff.ms for
COORDINATOR_LOAD_IN_PROGRESS and TOPIC_AUTHORIZATION_FAILED -- and that one heartbeat interval later a heartbeat
has gone ("A follow-up heartbeat should be sent after a non-fatal error")."""

from __future__ import annotations

import pytest

from consumer._consumer_state import ConsumerMemberState as S
from protocol.api import ApiKey
from protocol.errors import ErrorCode as E
from _kip848_harness import ID1, INTERVAL, MAX_POLL, RETRY_BACKOFF, T1, Harness, hb_response

HB = ApiKey.CONSUMER_GROUP_HEARTBEAT


def second_heartbeat_answered(error: E) -> Harness:
    """Handling errors on the second heartbeat (as Kafka's test): STABLE owning t1-0, one interval later."""
    h = Harness()
    h.stable({ID1: [0]})
    h.advance(INTERVAL)
    h.tick()
    h.respond(h.take(HB), hb_response(epoch=1, error=error))
    return h


@pytest.mark.parametrize("error", [E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE])
def test_coordinator_errors_heartbeat_as_soon_as_the_coordinator_is_found(error):
    h = second_heartbeat_answered(error)
    assert h.c.coordinator is None
    h.tick()
    h.find_coordinator()
    h.tick()                       # no backoff, no interval to wait: the heartbeat goes at once
    body = h.take(HB).body
    assert body.member_epoch == 1 and h.c.state == S.STABLE


@pytest.mark.parametrize("error", [E.UNKNOWN_MEMBER_ID, E.FENCED_MEMBER_EPOCH])
def test_a_fenced_member_rejoins_as_soon_as_it_released_its_partitions(error):
    h = second_heartbeat_answered(error)
    assert h.c.state == S.FENCED
    h.advance(INTERVAL)
    h.tick()
    assert not h.heartbeats()       # KAFKA-16251: nothing while onPartitionsLost has not run
    h.poll()                        # onPartitionsLost, then JOINING
    assert ("lost", ((T1, 0),)) in [(k, tuple((p.topic, p.partition) for p in ps)) for k, ps in h.listener_calls()]
    h.tick()                        # (kgroup's poll may already have sent it: the background runs with it)
    body = h.take(HB).body
    assert h.c.state == S.JOINING
    assert (body.member_epoch, body.rebalance_timeout_ms, body.subscribed_topic_names, body.topic_partitions) == (
        0, MAX_POLL, [T1], [])


@pytest.mark.parametrize("error", [E.COORDINATOR_LOAD_IN_PROGRESS, E.TOPIC_AUTHORIZATION_FAILED])
def test_retriable_errors_heartbeat_again_after_the_backoff(error):
    h = second_heartbeat_answered(error)
    assert h.c.coordinator is not None
    assert h.c.next_deadline_ms() == h.now + RETRY_BACKOFF
    assert h.heartbeat_after(RETRY_BACKOFF).body.member_epoch == 1


@pytest.mark.parametrize("error", [E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_LOAD_IN_PROGRESS,
                                   E.UNKNOWN_MEMBER_ID, E.FENCED_MEMBER_EPOCH, E.TOPIC_AUTHORIZATION_FAILED])
def test_a_follow_up_heartbeat_is_sent_after_every_non_fatal_error(error):
    h = second_heartbeat_answered(error)
    h.advance(INTERVAL)
    if error in (E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE):
        h.tick()
        h.find_coordinator()
    if error in (E.UNKNOWN_MEMBER_ID, E.FENCED_MEMBER_EPOCH):
        h.poll()
    h.tick()
    assert len(h.heartbeats()) == 1, f"a follow-up heartbeat should be sent after {error.name}"
