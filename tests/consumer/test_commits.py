"""Offset commits (consumer/commits.py; ConsumerCoordinator's commitOffsetsAsync / commitOffsetsSync /
OffsetCommitResponseHandler): each error code of an async commit, commitSync's retries and timeout, commits
refused without a request while rebalancing or after a reset, static members' instance id, and auto-commit:
every auto.commit.interval.ms and before a rebalance (onJoinPrepare, testOnJoinPrepareWithOffsetCommit...)."""

from __future__ import annotations

import pytest

from _coordinator_harness import (EAGER, P0, P1, T1, commit_request_offsets, find_coordinator_response,
                                  heartbeat_response, joined, joined_and_polled, offset_commit_response, tp)
from consumer import outputs as out
from consumer._state import MemberState
from consumer.errors import (ApiException, CommitFailedException, RebalanceInProgressException,
                             RetriableCommitFailedException)
from protocol.api import ApiKey
from protocol.errors import ErrorCode as E


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


def test_eager_auto_commit_before_revocation():
    # onJoinPrepare: commit consumed offsets (partitions pending revocation) before onPartitionsRevoked
    h = joined_and_polled({**EAGER, "enable.auto.commit": True})
    h.c.advance(tp(T1, 0), 7)
    h.c.request_rejoin("test")
    r = h.poll()
    commit = h.take(ApiKey.OFFSET_COMMIT)
    assert commit_request_offsets(commit) == {tp(T1, 0): 17, tp(T1, 1): 10}
    assert (commit.body.generation_id_or_member_epoch, commit.body.member_id) == (1, "consumer")
    assert h.callbacks() == [] and not h.has(ApiKey.JOIN_GROUP)
    assert r.fetchable == ()  # pending revocation: nothing to process while the commit is in flight
    h.respond(commit, offset_commit_response({(T1, 0): 0, (T1, 1): 0}))
    h.poll()
    assert h.callbacks() == [("revoked", (tp(T1, 0), tp(T1, 1)))]
    assert h.has(ApiKey.JOIN_GROUP)


def test_join_prepare_retries_retriable_commit_failure():
    # ConsumerCoordinatorTest.testOnJoinPrepareWithOffsetCommitShouldSuccessAfterRetry
    h = joined_and_polled({**EAGER, "enable.auto.commit": True})
    h.c.request_rejoin("test")
    h.poll()
    h.respond(h.take(ApiKey.OFFSET_COMMIT), offset_commit_response({(T1, 0): E.COORDINATOR_LOAD_IN_PROGRESS,
                                                                    (T1, 1): 0}))
    h.poll()
    assert h.callbacks() == [] and not h.has(ApiKey.OFFSET_COMMIT)
    h.poll(advance=100)
    h.respond(h.take(ApiKey.OFFSET_COMMIT), offset_commit_response({(T1, 0): 0, (T1, 1): 0}))
    h.poll()
    assert h.callbacks() == [("revoked", (tp(T1, 0), tp(T1, 1)))]
    assert h.has(ApiKey.JOIN_GROUP)


def test_join_prepare_continues_after_non_retriable_commit_failure():
    h = joined_and_polled({**EAGER, "enable.auto.commit": True})
    h.c.request_rejoin("test")
    h.poll()
    h.respond(h.take(ApiKey.OFFSET_COMMIT), offset_commit_response({(T1, 0): E.OFFSET_METADATA_TOO_LARGE,
                                                                    (T1, 1): 0}))
    h.poll()
    assert h.callbacks() == [("revoked", (tp(T1, 0), tp(T1, 1)))]
    assert h.has(ApiKey.JOIN_GROUP)


def test_join_prepare_gives_up_waiting_for_commit_after_rebalance_timeout():
    h = joined_and_polled({**EAGER, "enable.auto.commit": True})
    h.c.request_rejoin("test")
    h.poll()
    h.take(ApiKey.OFFSET_COMMIT)   # never answered (well, until the request times out)
    h.poll(advance=30_000)         # request timeout: disconnect, coordinator rediscovered
    assert h.callbacks() == []
