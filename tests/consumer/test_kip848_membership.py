"""The KIP-848 membership of the consumer core (``group.protocol=consumer``), driven through the public driver
interface with a fake clock.

Cases are ported from Kafka 4.4's ``ConsumerMembershipManagerTest`` (named in each test's docstring) and, for
the state table and the heartbeat error table, written out from ``MemberState``'s static block and
``AbstractHeartbeatRequestManager.onErrorResponse`` / ``ConsumerHeartbeatRequestManager.
handleSpecificExceptionInResponse`` (Kafka's source, not kgroup's tables).
"""

from __future__ import annotations

import pytest

from consumer import outputs as out
from consumer._consumer_state import ConsumerMemberState as S
from consumer._consumer_state import check_transition
from consumer.config import ConfigError, ConsumerConfig
from consumer.errors import ApiException, CommitFailedException, IllegalStateException, KafkaException
from consumer.network import DISCONNECTED
from protocol.api import ApiKey
from protocol.errors import ErrorCode as E
from _kip848_harness import ID1, ID2, INTERVAL, MAX_POLL, MEMBER, T1, T2, Harness, Listener, hb_response, tp

HB = ApiKey.CONSUMER_GROUP_HEARTBEAT

# MemberState.java's static block, copied as data from Kafka 4.4 (state: its previousValidStates)
KAFKA_PREVIOUS_VALID_STATES = {
    "STABLE": ["JOINING", "ACKNOWLEDGING", "RECONCILING"],
    "RECONCILING": ["STABLE", "JOINING", "ACKNOWLEDGING", "RECONCILING"],
    "ACKNOWLEDGING": ["RECONCILING"],
    "FATAL": ["JOINING", "STABLE", "RECONCILING", "ACKNOWLEDGING", "PREPARE_LEAVING", "LEAVING", "UNSUBSCRIBED"],
    "FENCED": ["JOINING", "STABLE", "RECONCILING", "ACKNOWLEDGING", "PREPARE_LEAVING", "LEAVING"],
    "JOINING": ["FENCED", "UNSUBSCRIBED", "STALE"],
    "PREPARE_LEAVING": ["JOINING", "STABLE", "RECONCILING", "ACKNOWLEDGING", "UNSUBSCRIBED"],
    "LEAVING": ["PREPARE_LEAVING"],
    "UNSUBSCRIBED": ["PREPARE_LEAVING", "LEAVING", "FENCED"],
    "STALE": ["LEAVING"],
}


@pytest.mark.parametrize("old", list(S))
@pytest.mark.parametrize("new", list(S))
def test_transition_table_is_kafkas(old, new):
    allowed = old == new or old.value in KAFKA_PREVIOUS_VALID_STATES[new.value]
    if allowed:
        check_transition(old, new)
    else:
        with pytest.raises(IllegalStateException, match=f"Invalid state transition from {old.value} to {new.value}"):
            check_transition(old, new)


def test_every_transition_a_member_makes_is_allowed():
    """A member walked through join, reconcile, fence, rejoin, poll timeout, rejoin and leave: every StateChanged
    it reports is a move Kafka's MemberState allows."""
    h = Harness(listener=Listener())
    h.stable({ID1: [0, 1]})
    h.respond(_next_hb(h), hb_response(epoch=1, error=E.FENCED_MEMBER_EPOCH))
    h.poll()
    hb = _next_hb(h)
    h.respond(hb, hb_response(epoch=3, assignment={ID1: [2]}))
    h.poll()
    h.advance(MAX_POLL)
    h.tick()
    h.poll()
    h.c.unsubscribe(h.now)
    h.pump()
    seen = [o for o in h.outputs if isinstance(o, out.StateChanged) and o.old != o.new]
    assert [o.new for o in seen] == ["JOINING", "RECONCILING", "ACKNOWLEDGING", "STABLE", "FENCED", "JOINING",
                                     "RECONCILING", "ACKNOWLEDGING", "STABLE", "PREPARE_LEAVING", "LEAVING", "STALE",
                                     "JOINING", "PREPARE_LEAVING", "LEAVING", "UNSUBSCRIBED"]
    for o in seen:
        assert o.old in KAFKA_PREVIOUS_VALID_STATES[o.new]


def _next_hb(h: Harness):
    """Let time pass until the member sends its next heartbeat; return it."""
    for _ in range(100):
        if h.heartbeats():
            return h.take(HB)
        d = h.c.next_deadline_ms()
        assert d is not None, f"no heartbeat scheduled in state {h.c.state}"
        h.now = max(h.now, d)
        h.tick()
    raise AssertionError("no heartbeat")


# --- heartbeats: full vs incremental (HeartbeatState / SentFields) -------------------------------------------------
def test_first_heartbeat_includes_required_info_to_join():
    """ConsumerHeartbeatRequestManagerTest.testFirstHeartbeatIncludesRequiredInfoToJoinGroupAndGetAssignments."""
    h = Harness(config={"client.rack": "rack-a"})
    body = h.joining().body
    assert (body.group_id, body.member_id, body.member_epoch, body.instance_id) == ("group-id", MEMBER, 0, None)
    assert body.rebalance_timeout_ms == MAX_POLL
    assert body.subscribed_topic_names == [T1]
    assert body.server_assignor == "uniform"
    assert body.topic_partitions == []
    assert body.rack_id == "rack-a"
    assert h.c.state == S.JOINING


def test_heartbeat_state_sends_only_changed_fields():
    """ConsumerHeartbeatRequestManagerTest.testHeartbeatState: once joined, unchanged fields are null."""
    h = Harness()
    h.stable({ID1: [0]})
    hb = _next_hb(h)
    body = hb.body
    assert body.member_epoch == 1
    assert (body.rebalance_timeout_ms, body.subscribed_topic_names, body.server_assignor, body.topic_partitions,
            body.rack_id) == (-1, None, None, None, None)
    # a new subscription is sent on the next heartbeat, and only it
    h.respond(hb, hb_response(epoch=1))
    h.c.subscribe([T1, T2], h.now)
    body = _next_hb(h).body
    assert body.subscribed_topic_names == [T1, T2]
    assert (body.rebalance_timeout_ms, body.server_assignor, body.topic_partitions) == (-1, None, None)


def test_ack_lost_resends_owned_partitions():
    """ConsumerHeartbeatRequestManagerTest.testConsumerAcksReconciledAssignmentAfterAckLost: after a failed
    heartbeat the sent fields are forgotten, so the next one carries the owned partitions (and the rest) again."""
    h = Harness()
    hb = h.joining()
    h.respond(hb, hb_response(epoch=1, assignment={ID1: [0]}))
    h.poll()
    ack = h.take(HB)
    assert [(t.topic_id, t.partitions) for t in ack.body.topic_partitions] == [(ID1, [0])]
    h.respond(ack, DISCONNECTED)  # the ack times out
    h.poll()  # (the coordinator was marked unknown by the disconnect)
    if h.requests(ApiKey.FIND_COORDINATOR):
        h.find_coordinator()
    body = _next_hb(h).body
    assert [(t.topic_id, t.partitions) for t in body.topic_partitions] == [(ID1, [0])]
    assert body.subscribed_topic_names == [T1] and body.rebalance_timeout_ms == MAX_POLL


def test_heartbeat_interval_comes_from_the_response_and_one_in_flight():
    """ConsumerHeartbeatRequestManagerTest.testHeartbeatNotSentIfAnotherOneInFlight."""
    h = Harness()
    h.stable({ID1: [0]})
    sent_at = h.now
    assert h.c.next_deadline_ms() == sent_at + INTERVAL  # (the ack was sent at `now`; the timer restarted then)
    hb = _next_hb(h)
    assert h.now == sent_at + INTERVAL
    for _ in range(2):  # no heartbeat while one is in flight, however long
        h.advance(INTERVAL)
        h.tick()
        assert not h.heartbeats()
    # the response after the interval expired: the next goes after the minimal backoff (100 ms)
    h.respond(hb, hb_response(epoch=1))
    assert h.c.next_deadline_ms() == h.now + 100
    h.advance(100)
    h.tick()
    assert len(h.heartbeats()) == 1
    # a new interval from the coordinator restarts the timer at the response
    h.respond(h.take(HB), hb_response(epoch=1, interval=2500))
    assert h.c.next_deadline_ms() == h.now + 2500


# --- reconciliation ------------------------------------------------------------------------------------------------
def test_joining_member_receiving_empty_assignment_calls_listener_and_becomes_stable():
    """testMemberJoiningTransitionsToStableWhenReceivingEmptyAssignment /
    testMemberJoiningCallsRebalanceListenerWhenReceivingEmptyAssignment."""
    listener = Listener()
    h = Harness(listener=listener)
    hb = h.joining()
    h.respond(hb, hb_response(epoch=1, assignment={}))
    assert h.c.state == S.RECONCILING
    h.poll()
    assert listener.calls == [("assigned", ())]
    ack = h.take(HB)
    assert ack.body.topic_partitions == []
    assert h.c.state == S.STABLE


def test_reconcile_revokes_before_assigning_and_acks():
    """testReconcileNewPartitionsAssignedAndRevoked."""
    listener = Listener()
    h = Harness(listener=listener)
    h.stable({ID1: [0, 1]})
    assert h.c.assignment == (tp(T1, 0), tp(T1, 1))
    hb = _next_hb(h)
    h.respond(hb, hb_response(epoch=2, assignment={ID1: [1, 2]}))
    assert h.c.state == S.RECONCILING and h.c.generation.generation_id == 2
    h.poll()
    assert listener.calls[-2:] == [("revoked", (tp(T1, 0),)), ("assigned", (tp(T1, 2),))]
    assert h.c.assignment == (tp(T1, 1), tp(T1, 2))
    ack = h.take(HB)
    assert ack.body.member_epoch == 2
    assert [(t.topic_id, t.partitions) for t in ack.body.topic_partitions] == [(ID1, [1, 2])]
    assert h.states()[-3:] == ["RECONCILING", "ACKNOWLEDGING", "STABLE"]


def test_same_assignment_received_again_is_not_reconciled():
    """testReconciliationSkippedWhenSameAssignmentReceived."""
    listener = Listener()
    h = Harness(listener=listener)
    h.stable({ID1: [0]})
    before = list(listener.calls)
    h.respond(_next_hb(h), hb_response(epoch=3, assignment={ID1: [0]}))
    assert h.c.state == S.STABLE and h.c.generation.generation_id == 3
    h.poll()
    assert listener.calls == before


def test_unresolved_topic_waits_for_metadata_without_spinning():
    """testMemberKeepsUnresolvedAssignmentWaitingForMetadataUntilResolved /
    testUnresolvedTargetAssignmentIsReconciledWhenMetadataReceived."""
    import uuid
    unknown = uuid.UUID(int=999)
    listener = Listener()
    h = Harness(listener=listener)
    h.respond(h.joining(), hb_response(epoch=1, assignment={unknown: [0], ID1: [0]}))
    h.poll()
    # what resolves is reconciled (and acknowledged); the rest waits
    assert listener.calls == [("assigned", (tp(T1, 0),))]
    ack = h.take(HB)
    assert [(t.topic_id, t.partitions) for t in ack.body.topic_partitions] == [(ID1, [0])]
    assert h.c.state == S.RECONCILING
    h.respond(ack, hb_response(epoch=1))
    h.poll()
    assert len(listener.calls) == 1
    assert h.c.next_poll_deadline_ms() != h.now  # nothing to do until metadata arrives: no busy polling
    h.c.set_metadata({T1: 3, T2: 3, "late": 1}, {T1: ID1, T2: ID2, "late": unknown})
    h.poll()
    assert listener.calls[-1] == ("assigned", (tp("late", 0),))
    assert h.c.state == S.STABLE


def test_auto_commit_before_revocation_then_callbacks():
    """testReconcilePartitionsRevokedWithSuccessfulAutoCommitNoCallbacks: the consumed offsets are committed
    (member id + epoch) before onPartitionsRevoked; the reconciliation waits for the commit."""
    listener = Listener()
    h = Harness(config={"enable.auto.commit": True}, listener=listener)
    h.stable({ID1: [0, 1]})
    h.poll()
    h.c.advance(tp(T1, 0), 5)
    h.respond(_next_hb(h), hb_response(epoch=2, assignment={ID1: [1]}))
    h.poll()
    commit = h.take(ApiKey.OFFSET_COMMIT)
    assert commit.api_version >= 9
    assert (commit.body.generation_id_or_member_epoch, commit.body.member_id) == (2, MEMBER)
    assert [(p.partition_index, p.committed_offset) for t in commit.body.topics for p in t.partitions] == [(0, 5),
                                                                                                          (1, 0)]
    assert listener.calls == [("assigned", (tp(T1, 0), tp(T1, 1)))]  # nothing revoked yet
    assert tp(T1, 0) in h.c.pending_revocation
    h.respond(commit, h.commit_response(commit))
    h.poll()
    assert listener.calls[-2:] == [("revoked", (tp(T1, 0),)), ("assigned", ())]
    assert h.c.state == S.STABLE


@pytest.mark.parametrize("error, retried", [(E.STALE_MEMBER_EPOCH, True), (E.COORDINATOR_LOAD_IN_PROGRESS, True),
                                            (E.GROUP_AUTHORIZATION_FAILED, False), (E.UNKNOWN_MEMBER_ID, False)])
def test_failed_auto_commit_before_revocation(error, retried):
    """testReconcilePartitionsRevokedWithFailedAutoCommitCompletesRevocationAnyway, and
    maybeAutoCommitSyncBeforeRebalance's retries of retriable errors and STALE_MEMBER_EPOCH."""
    listener = Listener()
    h = Harness(config={"enable.auto.commit": True}, listener=listener)
    h.stable({ID1: [0, 1]})
    h.poll()
    h.respond(_next_hb(h), hb_response(epoch=2, assignment={ID1: [1]}))
    h.poll()
    commit = h.take(ApiKey.OFFSET_COMMIT)
    h.respond(commit, h.commit_response(commit, error))
    h.poll()
    if retried:
        assert ("revoked", (tp(T1, 0),)) not in listener.calls
        h.advance(100)  # retry.backoff.ms
        h.poll()
        again = h.take(ApiKey.OFFSET_COMMIT)
        assert again.body.generation_id_or_member_epoch == 2
        h.respond(again, h.commit_response(again))
        h.poll()
    assert listener.calls[-2:] == [("revoked", (tp(T1, 0),)), ("assigned", ())]
    assert h.c.state == S.STABLE


# --- fencing -----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("error", [E.FENCED_MEMBER_EPOCH, E.UNKNOWN_MEMBER_ID])
def test_fenced_member_loses_partitions_and_rejoins_with_epoch_zero(error):
    """testFencingWhenStateIsStable / testMemberIdAndEpochResetOnFencedMembers /
    testFencedMemberStopHeartbeatUntilItReleasesAssignmentToRejoin."""
    listener = Listener()
    h = Harness(listener=listener)
    h.stable({ID1: [0, 1]}, epoch=4)
    h.respond(_next_hb(h), hb_response(epoch=4, error=error))
    assert h.c.state == S.FENCED
    assert h.c.generation.generation_id == 0 and h.c.member_id == MEMBER
    assert h.c.next_deadline_ms() is None  # no heartbeat while FENCED
    h.advance(5000)
    h.tick()
    assert not h.heartbeats()
    h.poll()  # onPartitionsLost runs on the application thread, then the member rejoins
    assert listener.calls[-1] == ("lost", (tp(T1, 0), tp(T1, 1)))
    assert ("revoked", (tp(T1, 0), tp(T1, 1))) not in listener.calls
    assert h.c.state == S.JOINING and h.c.assignment == ()
    body = _next_hb(h).body
    assert (body.member_id, body.member_epoch, body.topic_partitions, body.subscribed_topic_names) == (
        MEMBER, 0, [], [T1])


def test_fenced_without_partitions_rejoins_at_once():
    """testFencedWhenAssignmentEmpty."""
    h = Harness(listener=Listener())
    h.stable({})
    h.respond(_next_hb(h), hb_response(epoch=1, error=E.FENCED_MEMBER_EPOCH))
    assert h.c.state == S.JOINING
    assert _next_hb(h).body.member_epoch == 0


def test_reconciliation_interrupted_by_fencing_is_discarded():
    """testDelayedReconciliationResultDiscardedAfterCommitIfMemberRejoins: a reconciliation waiting on its commit
    when the member is fenced (and rejoins) does not revoke, assign or ack when the commit completes."""
    listener = Listener()
    h = Harness(config={"enable.auto.commit": True}, listener=listener)
    h.stable({ID1: [0]})
    h.poll()
    h.respond(_next_hb(h), hb_response(epoch=2, assignment={ID1: [1, 2]}))
    h.poll()
    commit = h.take(ApiKey.OFFSET_COMMIT)  # stuck on the commit before revoking t1-0
    assert listener.calls == [("assigned", (tp(T1, 0),))]
    h.advance(INTERVAL)
    h.tick()
    h.respond(h.take(HB), hb_response(epoch=2, error=E.FENCED_MEMBER_EPOCH))
    h.poll()
    assert listener.calls[-1] == ("lost", (tp(T1, 0),))
    assert h.c.state == S.JOINING
    h.respond(commit, h.commit_response(commit))
    h.poll()
    assert len(listener.calls) == 2  # no revoke, no assign from the abandoned reconciliation
    assert h.c.state == S.JOINING and h.c.assignment == ()
    body = _next_hb(h).body
    assert (body.member_epoch, body.topic_partitions) == (0, [])


# --- heartbeat errors: AbstractHeartbeatRequestManager.onErrorResponse ---------------------------------------------
FATAL_ERRORS = [E.GROUP_AUTHORIZATION_FAILED, E.INVALID_REQUEST, E.GROUP_MAX_SIZE_REACHED, E.UNSUPPORTED_ASSIGNOR,
                E.INVALID_REGULAR_EXPRESSION, E.UNSUPPORTED_VERSION, E.UNRELEASED_INSTANCE_ID,
                E.FENCED_INSTANCE_ID, E.GROUP_ID_NOT_FOUND, E.UNKNOWN_SERVER_ERROR, E.ILLEGAL_GENERATION]


@pytest.mark.parametrize("error", FATAL_ERRORS)
def test_fatal_heartbeat_errors(error):
    listener = Listener()
    h = Harness(listener=listener)
    h.stable({ID1: [0]})
    h.respond(_next_hb(h), hb_response(epoch=1, error=error))
    assert h.c.state == S.FATAL
    with pytest.raises(ApiException) as info:
        h.poll()
    assert info.value.error == error
    assert listener.calls[-1] == ("lost", (tp(T1, 0),))
    h.poll()  # raised once (an ErrorEvent)
    assert h.c.next_deadline_ms() is None
    h.advance(60_000)
    h.tick()
    assert not h.heartbeats()


def test_unsupported_version_message_says_how_to_revert():
    h = Harness()
    h.respond(h.joining(), hb_response(epoch=0, error=E.UNSUPPORTED_VERSION))
    with pytest.raises(ApiException, match="group.protocol=classic"):
        h.poll()


def test_broker_without_the_api_is_fatal():
    """ConsumerHeartbeatRequestManager.handleSpecificFailure: UnsupportedVersionException from the client."""
    h = Harness()
    h.c.set_api_versions({k: (0, 9) for k in (8, 9, 10, 11, 12, 13, 14)})
    h.poll()
    h.find_coordinator()
    h.tick()
    assert h.c.state == S.FATAL
    with pytest.raises(KafkaException, match="does not support the new CONSUMER group protocol"):
        h.poll()


@pytest.mark.parametrize("error", [E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE])
def test_coordinator_errors_rediscover(error):
    h = Harness()
    h.stable({ID1: [0]})
    h.respond(_next_hb(h), hb_response(epoch=1, error=error))
    assert h.c.state == S.STABLE and h.c.coordinator is None
    assert any(isinstance(o, out.CloseConnection) for o in h.outputs)
    h.tick()
    h.find_coordinator()
    body = _next_hb(h).body
    # the sent fields were reset: the next request is complete again (but not a join)
    assert body.member_epoch == 1 and body.subscribed_topic_names == [T1]
    assert [(t.topic_id, t.partitions) for t in body.topic_partitions] == [(ID1, [0])]


def test_coordinator_loading_retries_after_backoff():
    h = Harness()
    h.stable({ID1: [0]})
    hb = _next_hb(h)
    h.respond(hb, hb_response(epoch=1, error=E.COORDINATOR_LOAD_IN_PROGRESS))
    assert h.c.state == S.STABLE and h.c.coordinator is not None
    assert h.c.next_deadline_ms() == h.now + 100


def test_topic_authorization_failure_is_reported_not_fatal():
    h = Harness()
    h.stable({ID1: [0]})
    h.respond(_next_hb(h), hb_response(epoch=1, error=E.TOPIC_AUTHORIZATION_FAILED))
    with pytest.raises(ApiException) as info:
        h.poll()
    assert info.value.error == E.TOPIC_AUTHORIZATION_FAILED
    assert h.c.state == S.STABLE
    h.poll()


# --- leaving -----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("instance, epoch", [(None, -1), ("instance1", -2)])
def test_leave_group_epoch(instance, epoch):
    """testLeaveGroupEpoch / testLeaveGroupWhenMemberOwnsAssignment: callbacks first, then the leave heartbeat."""
    listener = Listener()
    h = Harness(config={"group.instance.id": instance} if instance else None, listener=listener)
    h.stable({ID1: [0, 1]})
    h.c.unsubscribe(h.now)
    h.pump()
    assert listener.calls[-1] == ("revoked", (tp(T1, 0), tp(T1, 1)))
    leave = h.take(HB)
    assert leave.body.member_epoch == epoch and leave.body.instance_id == instance
    assert h.c.state == S.UNSUBSCRIBED and h.c.assignment == ()
    h.respond(leave, hb_response(epoch=epoch))
    assert h.c.state == S.UNSUBSCRIBED
    h.advance(60_000)
    h.tick()
    assert not h.heartbeats()


def test_close_sends_leave_and_finishes_on_its_response():
    h = Harness()
    h.stable({ID1: [0]})
    h.c.close(h.now)
    h.pump()
    leave = h.take(HB)
    assert leave.body.member_epoch == -1
    assert not h.c.closed
    h.respond(leave, hb_response(epoch=-1))
    assert h.c.closed and isinstance(h.outputs[-1], out.Closed)


def test_subscribe_again_after_leaving_rejoins_with_epoch_zero():
    h = Harness()
    h.stable({ID1: [0]})
    h.c.unsubscribe(h.now)
    h.pump()
    h.respond(h.take(HB), hb_response(epoch=-1))
    h.c.subscribe([T2], h.now)
    h.poll()
    body = _next_hb(h).body
    assert (body.member_epoch, body.subscribed_topic_names, body.member_id) == (0, [T2], MEMBER)


# --- max.poll.interval.ms ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("instance, epoch", [(None, -1), ("instance1", -2)])
def test_poll_timer_expiry_leaves_then_rejoins_on_next_poll(instance, epoch):
    """testPollTimerExpiration / testStaleMemberWaitsForCallbackToRejoinWhenTimerReset."""
    listener = Listener()
    h = Harness(config={"group.instance.id": instance} if instance else None, listener=listener)
    h.stable({ID1: [0]})
    beats = 0
    while h.c.next_deadline_ms() < h.c.poll_timeout_deadline_ms():  # heartbeats go on while the app does not poll
        h.respond(_next_hb(h), hb_response(epoch=1))
        beats += 1
    assert beats >= MAX_POLL // INTERVAL - 1
    assert h.c.state == S.STABLE
    h.now = h.c.poll_timeout_deadline_ms()
    h.tick()
    leave = h.take(HB)
    assert leave.body.member_epoch == epoch
    assert h.c.state == S.STALE
    h.respond(leave, hb_response(epoch=epoch))  # (only logged)
    assert h.c.state == S.STALE
    assert h.c.next_deadline_ms() is None  # no heartbeats while stale
    h.advance(1)
    h.poll()
    assert listener.calls[-1] == ("lost", (tp(T1, 0),))
    assert h.c.state == S.JOINING
    body = _next_hb(h).body
    assert (body.member_epoch, body.topic_partitions, body.rebalance_timeout_ms) == (0, [], MAX_POLL)


# --- commits with the member epoch -------------------------------------------------------------------------------------
def test_commit_carries_member_id_and_epoch():
    h = Harness()
    h.stable({ID1: [0]}, epoch=7)
    h.poll()
    cid = h.c.commit({tp(T1, 0): 3}, now_ms=h.now, sync=True)
    h.pump()
    req = h.take(ApiKey.OFFSET_COMMIT)
    assert req.api_version == 9
    assert (req.body.generation_id_or_member_epoch, req.body.member_id) == (7, MEMBER)
    h.respond(req, h.commit_response(req))
    done = [o for o in h.outputs if isinstance(o, out.OffsetCommitCompleted) and o.commit_id == cid]
    assert done and done[0].exception is None


@pytest.mark.parametrize("error, message", [
    (E.STALE_MEMBER_EPOCH, "OffsetCommit failed with stale member epoch."),
    (E.UNKNOWN_MEMBER_ID, "OffsetCommit failed with unknown member ID."),
])
def test_commit_sync_member_errors_fail_without_changing_the_membership(error, message):
    """CommitRequestManager: commitSyncExceptionForError / OffsetCommitRequestState.onResponse."""
    h = Harness()
    h.stable({ID1: [0]}, epoch=7)
    cid = h.c.commit({tp(T1, 0): 3}, now_ms=h.now, sync=True)
    h.pump()
    req = h.take(ApiKey.OFFSET_COMMIT)
    h.respond(req, h.commit_response(req, error))
    done = [o for o in h.outputs if isinstance(o, out.OffsetCommitCompleted) and o.commit_id == cid][0]
    assert isinstance(done.exception, CommitFailedException)
    assert str(done.exception).startswith(message)
    assert h.c.state == S.STABLE and h.c.generation.generation_id == 7


def test_offset_fetch_carries_member_id_and_epoch():
    h = Harness()
    hb = h.joining()
    h.respond(hb, hb_response(epoch=5, assignment={ID1: [0]}))
    h.poll()
    fetch = h.take(ApiKey.OFFSET_FETCH)
    group = fetch.body.groups[0]
    assert (fetch.api_version, group.member_id, group.member_epoch) == (9, MEMBER, 5)


# --- configuration ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cfg, message", [
    ({"group.protocol": "consumer", "session.timeout.ms": 10000},
     "session.timeout.ms cannot be set when group.protocol=CONSUMER"),
    ({"group.protocol": "consumer", "partition.assignment.strategy": "range", "heartbeat.interval.ms": 100},
     "partition.assignment.strategy, heartbeat.interval.ms cannot be set when group.protocol=CONSUMER"),
    ({"group.remote.assignor": "range"}, "group.remote.assignor cannot be set when group.protocol=CLASSIC"),
    ({"group.protocol": "cooperative"}, "group.protocol"),
])
def test_protocol_specific_settings(cfg, message):
    """ConsumerConfig.checkUnsupportedConfigsPostProcess."""
    with pytest.raises(ConfigError, match=message):
        ConsumerConfig.create({"group.id": "g", **cfg})


def test_group_protocol_is_case_insensitive():
    assert ConsumerConfig.create({"group.id": "g", "group.protocol": "CONSUMER"}).group_protocol == "consumer"


# --- the reported client bugs: kgroup's core does what Kafka's fixed client does --------------------------------------
def test_kafka_19335_late_responses_do_not_leave_a_joining_member_with_a_negative_epoch():
    """KAFKA-19335 (apache/kafka#19818): leave, a late success response (epoch > 0) while UNSUBSCRIBED, subscribe
    and poll (JOINING), then the leave's response (epoch -1). Kafka's fixed client ignores both; the next
    heartbeat is a join with epoch 0, not -1 (which the coordinator would reject as INVALID_REQUEST)."""
    h = Harness()
    h.stable({ID1: [0]}, epoch=5)
    h.advance(INTERVAL)
    h.tick()
    regular = h.take(HB)
    h.c.unsubscribe(h.now)
    h.pump()
    leave = h.take(HB)
    assert leave.body.member_epoch == -1 and h.c.state == S.UNSUBSCRIBED
    h.respond(regular, hb_response(epoch=5))
    assert h.c.state == S.UNSUBSCRIBED
    h.c.subscribe([T1], h.now)
    h.poll()
    assert h.c.state == S.JOINING and h.c.generation.generation_id == 0
    join = _next_hb(h)
    h.respond(leave, hb_response(epoch=-1))
    assert h.c.state == S.JOINING and h.c.generation.generation_id == 0
    assert join.body.member_epoch == 0 and join.body.subscribed_topic_names == [T1]
    h.respond(join, hb_response(epoch=6, assignment={ID1: [0]}))
    assert h.c.state == S.RECONCILING and h.c.generation.generation_id == 6


def test_poll_timeout_with_a_heartbeat_in_flight_rejoins_with_a_full_request():
    """librdkafka #5541's race: the poll timer expires while a heartbeat is in flight; its late response (with an
    assignment) reaches a STALE member and is ignored; the rejoin on the next poll is a complete join request."""
    h = Harness()
    h.stable({ID1: [0]})
    h.now = h.c.poll_timeout_deadline_ms() - 1
    h.tick()
    in_flight = h.take(HB)
    h.advance(1)
    h.tick()
    leave = h.take(HB)
    assert leave.body.member_epoch == -1 and h.c.state == S.STALE
    h.respond(in_flight, hb_response(epoch=2, assignment={ID1: [0, 1]}))
    assert h.c.state == S.STALE
    h.respond(leave, hb_response(epoch=-1))
    assert h.c.next_deadline_ms() is None
    h.poll()
    body = _next_hb(h).body
    assert (body.member_epoch, body.rebalance_timeout_ms, body.subscribed_topic_names, body.server_assignor,
            body.topic_partitions) == (0, MAX_POLL, [T1], "uniform", [])


class FailingListener(Listener):
    """A listener whose chosen callback raises the first ``times`` times (CounterConsumerRebalanceListener)."""

    def __init__(self, method: str, times: int = 1) -> None:
        super().__init__()
        self.method, self.left = method, times

    def _maybe_fail(self, name: str) -> None:
        if name == self.method and self.left > 0:
            self.left -= 1
            raise ValueError(f"Intentional {name}() error")

    def on_partitions_revoked(self, partitions):
        super().on_partitions_revoked(partitions)
        self._maybe_fail("revoked")

    def on_partitions_assigned(self, partitions):
        super().on_partitions_assigned(partitions)
        self._maybe_fail("assigned")


@pytest.mark.parametrize("method", ["revoked", "assigned"])
def test_listener_error_fails_the_reconciliation_and_is_thrown_by_poll(method):
    """testListenerCallbacksThrowsErrorOnPartitionsRevoked / ...OnPartitionsAssigned: the member stays RECONCILING
    without acknowledging, poll throws "User rebalance callback throws an error", the next poll reconciles."""
    listener = FailingListener(method, times=0)
    h = Harness(listener=listener)
    h.stable({ID1: [0]})
    h.respond(_next_hb(h), hb_response(epoch=2, assignment={ID1: [1]}))
    listener.left = 1
    with pytest.raises(KafkaException, match="User rebalance callback throws an error"):
        h.poll()
    assert h.c.state == S.RECONCILING
    assert not h.heartbeats()  # no ack
    assert listener.calls[-1][0] == method
    h.poll()
    assert h.c.state == S.STABLE and h.c.assignment == (tp(T1, 1),)
    ack = h.take(HB)
    assert [(t.topic_id, t.partitions) for t in ack.body.topic_partitions] == [(ID1, [1])]


def test_leave_group_when_member_fenced():
    """testLeaveGroupWhenMemberFenced: a fenced member (its onPartitionsLost not yet run) that unsubscribes is
    UNSUBSCRIBED at once, sends no leave heartbeat, runs onPartitionsLost once and does not rejoin."""
    listener = Listener()
    h = Harness(listener=listener)
    h.stable({ID1: [0, 1]})
    h.respond(_next_hb(h), hb_response(epoch=1, error=E.FENCED_MEMBER_EPOCH))
    assert h.c.state == S.FENCED
    h.c.unsubscribe(h.now)
    h.pump()
    assert h.c.state == S.UNSUBSCRIBED and h.c.assignment == ()
    assert [c for c in listener.calls if c[0] != "assigned"] == [("lost", (tp(T1, 0), tp(T1, 1)))]
    assert not h.heartbeats()
    h.poll()
    h.advance(10_000)
    h.tick()
    assert h.c.state == S.UNSUBSCRIBED and not h.heartbeats()


def test_leave_group_when_member_is_stale():
    """testLeaveGroupWhenMemberIsStale: the leave completes at once and the member stays STALE."""
    listener = Listener()
    h = Harness(listener=listener)
    h.stable({ID1: [0]})
    h.now = h.c.poll_timeout_deadline_ms()
    h.tick()
    h.take(HB)
    assert h.c.state == S.STALE
    h.c.unsubscribe(h.now)
    h.pump()
    assert h.c.state == S.STALE and not h.heartbeats()
    assert listener.calls[-1] == ("lost", (tp(T1, 0),))


def test_subscription_change_while_in_group_does_not_rejoin():
    """testOnSubscriptionUpdatedDoesNotTransitionToJoiningIfInGroup: the new topics go in the next heartbeat."""
    h = Harness()
    h.stable({ID1: [0]}, epoch=3)
    h.c.subscribe([T1, T2], h.now)
    h.poll()
    assert h.c.state == S.STABLE
    body = _next_hb(h).body
    assert (body.member_epoch, body.subscribed_topic_names) == (3, [T1, T2])


def test_new_assignment_replaces_one_waiting_on_metadata():
    """testNewAssignmentReplacesPreviousOneWaitingOnMetadata."""
    import uuid
    listener = Listener()
    h = Harness(listener=listener)
    h.respond(h.joining(), hb_response(epoch=1, assignment={uuid.UUID(int=4242): [0]}))
    h.poll()  # nothing resolvable: reconciles the empty part (an assign callback with nothing) and acks it
    h.respond(h.take(HB), hb_response(epoch=1))
    assert h.c.state == S.RECONCILING
    h.respond(_next_hb(h), hb_response(epoch=2, assignment={ID1: [0]}))
    h.poll()
    assert listener.calls[-1] == ("assigned", (tp(T1, 0),))
    h.respond(h.take(HB), hb_response(epoch=2))
    assert h.c.state == S.STABLE
