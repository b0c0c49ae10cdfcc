"""When a KIP-848 member heartbeats and what each ConsumerGroupHeartbeat carries: ``consumer/consumer_heartbeat.py``
on its own (fake clock) and the heartbeat request manager's rules through the facade.

Ported from Kafka 4.4's ``ConsumerHeartbeatRequestManagerTest`` (test names in the docstrings) and from
``HeartbeatRequestState`` / ``RequestState``'s documented behaviour: the interval is 0 until the coordinator sets
one, the timer restarts at every send, a failure expires it and the backoff (retry.backoff.ms, doubling to
retry.backoff.max.ms) is counted from the failure.
"""

from __future__ import annotations

import uuid

import pytest

from consumer._consumer_state import ConsumerMemberState as S
from consumer.consumer_heartbeat import NO_ASSIGNMENT, HeartbeatRequestState, HeartbeatState, LocalAssignment
from consumer.errors import KafkaException
from consumer.network import DISCONNECTED
from protocol.api import ApiKey
from protocol.errors import ErrorCode as E
from _kip848_harness import ID1, INTERVAL, MAX_POLL, MEMBER, RETRY_BACKOFF, T1, Harness, hb_response

HB = ApiKey.CONSUMER_GROUP_HEARTBEAT
TOPIC_ID = uuid.UUID(int=5)


# --- HeartbeatRequestState ----------------------------------------------------------------------------------------
def test_first_heartbeat_at_once_then_one_in_flight():
    """testHeartbeatOnStartup: the interval is 0 until a response sets it; no second request in flight."""
    rs = HeartbeatRequestState(retry_backoff_ms=100, retry_backoff_max_ms=1000, now_ms=0)
    assert rs.interval_ms == 0 and rs.timer_deadline_ms == 0
    rs.on_send(0)
    assert not rs.can_send(0) and not rs.can_send(10_000) and rs.next_send_ms() is None


def test_interval_timer_restarts_at_send_and_on_a_new_interval():
    rs = HeartbeatRequestState(retry_backoff_ms=100, retry_backoff_max_ms=1000)
    rs.on_send(0)
    rs.update_interval(1000, 40)      # a new interval restarts the timer at the response
    rs.on_success(40)
    assert rs.next_send_ms() == 1040 and not rs.can_send(1039) and rs.can_send(1040)
    rs.on_send(1040)                  # the timer restarts when a heartbeat is sent
    rs.update_interval(1000, 1100)    # same interval: no restart
    rs.on_success(1100)
    assert rs.next_send_ms() == 2040


@pytest.mark.parametrize("failures, backoff", [(1, 100), (2, 200), (3, 400), (4, 800), (5, 1000), (8, 1000)])
def test_failures_back_off_exponentially_from_the_failure(failures, backoff):
    """RequestState.onFailedAttempt: backoff(numAttempts) with retry.backoff.ms=100, max 1000 (no jitter)."""
    rs = HeartbeatRequestState(retry_backoff_ms=100, retry_backoff_max_ms=1000)
    rs.update_interval(5000, 0)
    now = 0
    for _ in range(failures):
        rs.on_send(now)
        now += 7
        rs.on_failure(now)
    assert rs.next_send_ms() == now + backoff  # the interval timer expired with the failure
    assert not rs.can_send(now + backoff - 1) and rs.can_send(now + backoff)
    rs.on_send(now + backoff)
    rs.on_success(now + backoff + 1)          # success resets the backoff
    assert rs.backoff_ms == 100 and rs.attempts == 0


# --- HeartbeatState: which fields are sent ----------------------------------------------------------------------------
def build(hs: HeartbeatState, *, joining: bool, subscription=frozenset({T1}), local=NO_ASSIGNMENT, epoch=1,
          assignor="uniform"):
    return hs.build(group_id="g", member_id=MEMBER, member_epoch=epoch, instance_id=None, rack_id="r1",
                    send_all_fields=joining, subscription=frozenset(subscription), server_assignor=assignor,
                    local=local)


def test_assignment_sent_when_local_epoch_changes():
    """testValidateConsumerGroupHeartbeatRequestAssignmentSentWhenLocalEpochChanges."""
    hs = HeartbeatState(MAX_POLL)
    build(hs, joining=True)
    first = build(hs, joining=False, local=LocalAssignment(0, {TOPIC_ID: frozenset({0})}))
    assert [(t.topic_id, t.partitions) for t in first.topic_partitions] == [(TOPIC_ID, [0])]
    assert build(hs, joining=False, local=LocalAssignment(0, {TOPIC_ID: frozenset({0})})).topic_partitions is None
    bumped = build(hs, joining=False, local=LocalAssignment(1, {TOPIC_ID: frozenset({0})}))
    assert [(t.topic_id, t.partitions) for t in bumped.topic_partitions] == [(TOPIC_ID, [0])]


def test_joining_sends_everything_every_time_and_reset_resends():
    """testHeartbeatState: a JOINING member sends every field (even twice in a row); afterwards only changes;
    after reset() (a failed heartbeat) the changed-since-last-sent fields are all sent again."""
    hs = HeartbeatState(MAX_POLL)
    for _ in range(2):
        body = build(hs, joining=True, epoch=0)
        assert (body.member_epoch, body.rebalance_timeout_ms, body.subscribed_topic_names, body.server_assignor,
                body.topic_partitions, body.rack_id) == (0, MAX_POLL, [T1], "uniform", [], "r1")
    body = build(hs, joining=False)
    assert (body.rebalance_timeout_ms, body.subscribed_topic_names, body.server_assignor, body.topic_partitions,
            body.rack_id) == (-1, None, None, None, None)
    hs.reset()
    body = build(hs, joining=False)
    assert (body.rebalance_timeout_ms, body.subscribed_topic_names, body.server_assignor, body.topic_partitions,
            body.rack_id) == (MAX_POLL, [T1], "uniform", [], None)  # the rack only when joining


def test_no_server_assignor_configured_is_never_sent():
    hs = HeartbeatState(MAX_POLL)
    assert build(hs, joining=True, assignor=None).server_assignor is None


def test_local_assignment_update_with():
    """LocalAssignment.updateWith: the same partitions are no change, unless the assignment was NONE."""
    assert NO_ASSIGNMENT.update_with({}) == LocalAssignment(0, {})
    a = LocalAssignment(3, {TOPIC_ID: frozenset({1})})
    assert a.update_with({TOPIC_ID: {1}}) is None
    assert a.update_with({TOPIC_ID: {1, 2}}) == LocalAssignment(4, {TOPIC_ID: frozenset({1, 2})})
    with pytest.raises(ValueError):
        LocalAssignment(-1, {TOPIC_ID: frozenset({1})})


# --- the heartbeat request manager through the facade ---------------------------------------------------------------
def test_unsubscribed_member_does_not_heartbeat():
    """testSkippingHeartbeat / testMaximumTimeToWaitWhenHeartbeatShouldBeSkipped: no deadline, no request."""
    h = Harness()
    assert h.c.state == S.UNSUBSCRIBED
    assert h.c.next_deadline_ms() is None
    h.advance(5000)
    h.tick()
    assert not h.heartbeats()


def test_joining_member_heartbeats_at_once():
    h = Harness()
    h.poll()
    h.find_coordinator()
    assert h.c.next_deadline_ms() == h.now  # shouldHeartbeatNow: JOINING
    h.tick()
    assert len(h.heartbeats()) == 1
    h.tick()
    assert len(h.heartbeats()) == 1  # not again while in flight


def test_network_failure_backs_off_and_rediscovers():
    """testDisconnect / testNetworkTimeout: a disconnect rediscovers the coordinator; the next heartbeat waits for
    the backoff counted from the failure, and carries every field again (the sent fields were reset)."""
    h = Harness()
    h.stable({ID1: [0]})
    h.advance(INTERVAL)
    h.tick()
    h.respond(h.take(HB), DISCONNECTED)
    assert h.c.coordinator is None and h.c.state == S.STABLE
    h.tick()
    h.find_coordinator()
    assert h.c.next_deadline_ms() == h.now + RETRY_BACKOFF
    body = h.heartbeat_after(RETRY_BACKOFF).body
    assert (body.member_epoch, body.subscribed_topic_names, body.rebalance_timeout_ms) == (1, [T1], MAX_POLL)
    assert [(t.topic_id, t.partitions) for t in body.topic_partitions] == [(ID1, [0])]


def test_fatal_failure_of_the_request():
    """testFailureOnFatalException: a non-retriable failure without a response is fatal."""
    h = Harness()
    h.stable({ID1: [0]})
    h.advance(INTERVAL)
    h.tick()
    h.respond(h.take(HB), KafkaException("fatal"))
    assert h.c.state == S.FATAL
    with pytest.raises(KafkaException, match="fatal"):
        h.poll()


def test_leave_heartbeat_sent_while_previous_one_in_flight():
    """testSendingLeaveGroupHeartbeatWhenPreviousOneInFlight."""
    h = Harness()
    h.stable({ID1: [0]})
    h.advance(INTERVAL)
    h.tick()
    assert len(h.heartbeats()) == 1
    h.c.unsubscribe(h.now)
    h.pump()
    beats = h.heartbeats()
    assert [b.body.member_epoch for b in beats] == [1, -1]
    h.advance(INTERVAL * 5)
    h.tick()
    assert len(h.heartbeats()) == 2


def test_leave_without_coordinator_completes_at_once():
    """onHeartbeatRequestSkipped: a leave that cannot be sent counts as done (UNSUBSCRIBED)."""
    h = Harness()
    h.stable({ID1: [0]})
    h.advance(INTERVAL)
    h.tick()
    h.respond(h.take(HB), hb_response(epoch=1, error=E.NOT_COORDINATOR))
    h.c.close(h.now)
    h.pump()
    assert h.c.state == S.UNSUBSCRIBED and h.c.closed
    assert not h.heartbeats()
