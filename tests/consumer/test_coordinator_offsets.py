"""Offsets: OffsetFetch of committed positions on assignment (auto.offset.reset), commitSync/commitAsync and
their error handling (OffsetCommitResponseHandler), auto-commit, and close()."""

from __future__ import annotations

import pytest

from _coordinator_harness import (GROUP, T1, Harness, commit_request_offsets, find_coordinator_response,
                                  heartbeat_response, leave_group_response,
                                  offset_commit_response, offset_fetch_response, tp)
from consumer import outputs as out
from consumer.coordinator import MemberState
from consumer.errors import (ApiException, CommitFailedException, NoOffsetForPartitionException,
                             RebalanceInProgressException, RetriableCommitFailedException)
from protocol.api import ApiKey
from protocol.errors import ErrorCode as E

P0, P1 = tp(T1, 0), tp(T1, 1)


def joined(config=None, assigned=(P0, P1), committed=None, generation=1, protocol="range"):
    h = Harness(config=config)
    h.join(assigned=list(assigned), generation=generation, protocol=protocol)
    if assigned:
        h.respond(h.take(ApiKey.OFFSET_FETCH),
                  offset_fetch_response(committed if committed is not None else {a: 10 for a in assigned}))
    h.clear()
    return h


def test_offset_fetch_on_assignment_sets_positions():
    h = Harness()
    h.join(assigned=[P0, P1])
    fetch = h.take(ApiKey.OFFSET_FETCH)
    assert fetch.body.require_stable and fetch.body.groups[0].group_id == GROUP
    assert fetch.body.groups[0].topics[0].partition_indexes == [0, 1]
    assert h.poll().fetchable == ()          # positions unknown until the fetch answers
    h.respond(fetch, offset_fetch_response({P0: 42, P1: 7}))
    result = h.poll()
    assert result.fetchable == (P0, P1) and result.may_process
    assert result.positions == {P0: 42, P1: 7}
    assert h.events(out.PositionsInitialized)[0].committed == {P0: 42, P1: 7}


@pytest.mark.parametrize("reset,expected", [("latest", {P0: 100, P1: 5}), ("earliest", {P0: 3, P1: 5})])
def test_auto_offset_reset_without_committed_offset(reset, expected):
    h = Harness(config={"auto.offset.reset": reset})
    h.c.set_log_offsets(start={P0: 3}, end={P0: 100})
    h.join(assigned=[P0, P1])
    h.respond(h.take(ApiKey.OFFSET_FETCH), offset_fetch_response({P0: -1, P1: 5}))
    assert h.poll().positions == expected


def test_auto_offset_reset_none_raises():
    h = Harness(config={"auto.offset.reset": "none"})
    h.join(assigned=[P0])
    h.respond(h.take(ApiKey.OFFSET_FETCH), offset_fetch_response({P0: -1}))
    with pytest.raises(NoOffsetForPartitionException):
        h.poll()


@pytest.mark.parametrize("kw,rediscover", [
    ({"error": E.COORDINATOR_LOAD_IN_PROGRESS}, False),
    ({"error": E.NOT_COORDINATOR}, True),
    ({"partition_error": E.UNSTABLE_OFFSET_COMMIT}, False),
])
def test_offset_fetch_retriable_errors_retry(kw, rediscover):
    h = Harness()
    h.join(assigned=[P0])
    h.respond(h.take(ApiKey.OFFSET_FETCH), offset_fetch_response({P0: 1}, **kw))
    if rediscover:
        assert h.c.coordinator is None
        h.poll()
        h.respond(h.take(ApiKey.FIND_COORDINATOR), find_coordinator_response())
    h.poll()
    assert not h.has(ApiKey.OFFSET_FETCH)
    h.poll(advance=100)
    h.respond(h.take(ApiKey.OFFSET_FETCH), offset_fetch_response({P0: 9}))
    assert h.poll().positions == {P0: 9}


def test_offset_fetch_fatal_error_raises():
    h = Harness()
    h.join(assigned=[P0])
    h.respond(h.take(ApiKey.OFFSET_FETCH), offset_fetch_response({P0: 1}, error=E.GROUP_AUTHORIZATION_FAILED))
    with pytest.raises(ApiException) as info:
        h.poll()
    assert info.value.error == E.GROUP_AUTHORIZATION_FAILED


def test_auto_commit_every_interval():
    h = joined({"enable.auto.commit": True})
    h.c.advance(P0, 5)
    h.poll(advance=1_999)
    assert not h.has(ApiKey.OFFSET_COMMIT)
    h.poll(advance=1)   # auto.commit.interval.ms after the assignment
    commit = h.take(ApiKey.OFFSET_COMMIT)
    assert commit_request_offsets(commit) == {P0: 15, P1: 10}
    assert (commit.body.generation_id_or_member_epoch, commit.body.member_id) == (1, "consumer")
    h.respond(commit, offset_commit_response({(T1, 0): 0, (T1, 1): 0}))
    assert h.events(out.OffsetCommitCompleted)[0].exception is None
    h.poll(advance=2_000)
    assert h.has(ApiKey.OFFSET_COMMIT)


def test_auto_commit_retriable_failure_retries_after_backoff():
    h = joined({"enable.auto.commit": True})
    h.poll(advance=2_000)
    h.respond(h.take(ApiKey.OFFSET_COMMIT), offset_commit_response({(T1, 0): E.COORDINATOR_LOAD_IN_PROGRESS,
                                                                    (T1, 1): 0}))
    h.poll(advance=100)
    assert h.has(ApiKey.OFFSET_COMMIT)


def test_no_auto_commit_when_disabled():
    h = joined()
    for _ in range(5):
        h.poll(advance=2_000)
    assert not h.has(ApiKey.OFFSET_COMMIT)


# OffsetCommitResponseHandler: (partition error, exception class, coordinator known after, state after,
# member id after, rejoin requested)
COMMIT_ERRORS = [
    (E.NONE, None, True, MemberState.STABLE, "consumer", False),
    (E.COORDINATOR_NOT_AVAILABLE, RetriableCommitFailedException, False, MemberState.STABLE, "consumer", False),
    (E.NOT_COORDINATOR, RetriableCommitFailedException, False, MemberState.STABLE, "consumer", False),
    (E.REQUEST_TIMED_OUT, RetriableCommitFailedException, False, MemberState.STABLE, "consumer", False),
    (E.COORDINATOR_LOAD_IN_PROGRESS, RetriableCommitFailedException, True, MemberState.STABLE, "consumer", False),
    (E.UNKNOWN_TOPIC_OR_PARTITION, RetriableCommitFailedException, True, MemberState.STABLE, "consumer", False),
    (E.REBALANCE_IN_PROGRESS, RebalanceInProgressException, True, MemberState.STABLE, "consumer", True),
    (E.UNKNOWN_MEMBER_ID, CommitFailedException, True, MemberState.UNJOINED, "", True),
    (E.ILLEGAL_GENERATION, CommitFailedException, True, MemberState.UNJOINED, "consumer", True),
    (E.OFFSET_METADATA_TOO_LARGE, ApiException, True, MemberState.STABLE, "consumer", False),
    (E.INVALID_COMMIT_OFFSET_SIZE, ApiException, True, MemberState.STABLE, "consumer", False),
    (E.GROUP_AUTHORIZATION_FAILED, ApiException, True, MemberState.STABLE, "consumer", False),
]


@pytest.mark.parametrize("error,exc,known,state,member,rejoin", COMMIT_ERRORS)
def test_commit_async_errors(error, exc, known, state, member, rejoin):
    h = joined()
    cid = h.c.commit({P0: 11}, now_ms=h.now)
    h.collect()
    commit = h.take(ApiKey.OFFSET_COMMIT)
    h.respond(commit, offset_commit_response({(T1, 0): error}))
    done = [o for o in h.outputs if isinstance(o, out.OffsetCommitCompleted) and o.commit_id == cid]
    assert len(done) == 1
    if exc is None:
        assert done[0].exception is None
    else:
        assert type(done[0].exception) is exc
    assert (h.c.coordinator is not None, h.c.state, h.c.member_id, h.c.rejoin_needed) == (known, state, member,
                                                                                           rejoin)


def test_commit_sync_retries_through_coordinator_change():
    h = joined()
    cid = h.c.commit({P0: 11}, now_ms=h.now, sync=True)
    h.collect()
    h.respond(h.take(ApiKey.OFFSET_COMMIT), offset_commit_response({(T1, 0): E.NOT_COORDINATOR}))
    assert not h.events(out.OffsetCommitCompleted)
    h.tick()
    h.respond(h.take(ApiKey.FIND_COORDINATOR), find_coordinator_response(node=2))
    h.tick(advance=100)
    commit = h.take(ApiKey.OFFSET_COMMIT)
    assert commit.node_id == 2
    h.respond(commit, offset_commit_response({(T1, 0): 0}))
    done = h.events(out.OffsetCommitCompleted)
    assert [(d.commit_id, d.exception) for d in done] == [(cid, None)]


def test_commit_sync_times_out():
    h = joined(config={"default.api.timeout.ms": 1_000})
    cid = h.c.commit({P0: 11}, now_ms=h.now, sync=True)
    h.collect()
    for _ in range(12):
        if h.has(ApiKey.OFFSET_COMMIT):
            h.respond(h.take(ApiKey.OFFSET_COMMIT), offset_commit_response({(T1, 0): E.COORDINATOR_LOAD_IN_PROGRESS}))
        h.tick(advance=100)
    done = h.events(out.OffsetCommitCompleted)
    assert done and done[0].commit_id == cid and "Timeout" in str(done[0].exception)


def test_commit_while_rebalancing_fails_without_a_request():
    h = joined()
    h.c.request_rejoin("test")
    h.poll()
    h.c.commit({P0: 1}, now_ms=h.now)
    h.collect()
    assert not h.has(ApiKey.OFFSET_COMMIT)
    assert isinstance(h.events(out.OffsetCommitCompleted)[0].exception, RebalanceInProgressException)


def test_commit_after_generation_reset_is_commit_failed():
    h = joined()
    h.tick(advance=5_000)
    h.respond(h.take(ApiKey.HEARTBEAT), heartbeat_response(E.UNKNOWN_MEMBER_ID))
    h.c.commit({P0: 1}, now_ms=h.now)
    h.collect()
    assert isinstance(h.events(out.OffsetCommitCompleted)[0].exception, CommitFailedException)


def test_commit_carries_instance_id_for_static_members():
    h = joined(config={"group.instance.id": "i-1"})
    h.c.commit({P0: 1}, now_ms=h.now)
    h.collect()
    assert h.take(ApiKey.OFFSET_COMMIT).body.group_instance_id == "i-1"


def test_close_dynamic_commits_revokes_and_leaves():
    h = joined(config={"enable.auto.commit": True})
    h.c.advance(P1, 3)
    h.c.close(h.now)
    h.collect()
    commit = h.take(ApiKey.OFFSET_COMMIT)
    assert commit_request_offsets(commit) == {P0: 10, P1: 13}
    assert not h.has(ApiKey.LEAVE_GROUP)
    h.respond(commit, offset_commit_response({(T1, 0): 0, (T1, 1): 0}))
    assert h.callbacks() == [("revoked", (P0, P1))]
    leave = h.take(ApiKey.LEAVE_GROUP)
    assert leave.body.members[0].reason == "the consumer is being closed"
    assert not h.c.closed
    h.respond(leave, leave_group_response())
    assert h.c.closed and h.events(out.Closed)
    assert h.c.next_deadline_ms() is None


def test_close_static_member_sends_no_leave_group():
    h = joined(config={"group.instance.id": "i-1"})
    h.c.close(h.now)
    h.collect()
    assert h.callbacks() == [("revoked", (P0, P1))]
    assert not h.has(ApiKey.LEAVE_GROUP)
    assert h.c.closed


def test_close_during_rebalance_loses_partitions():
    h = joined(config={"partition.assignment.strategy": ["cooperative-sticky"]}, protocol="cooperative-sticky")
    h.c.request_rejoin("test")
    h.poll()
    assert h.c.state == MemberState.PREPARING_REBALANCE
    h.c.close(h.now)
    h.collect()
    assert h.callbacks() == [("lost", (P0, P1))]
    assert h.has(ApiKey.LEAVE_GROUP)


def test_close_times_out_without_leave_response():
    h = joined()
    h.c.close(h.now, timeout_ms=500)
    h.collect()
    h.take(ApiKey.LEAVE_GROUP)
    assert h.c.next_deadline_ms() == h.now + 500
    h.tick(advance=500)
    assert h.c.closed


def test_next_deadline_and_next_poll_deadline():
    h = joined(config={"enable.auto.commit": True})
    now = h.now
    assert h.c.next_deadline_ms() == now + 5_000          # next heartbeat
    assert h.c.next_poll_deadline_ms() == now + 2_000     # next auto-commit
