"""Leaving the group (AbstractCoordinator.maybeLeaveGroup, ConsumerCoordinator.onLeavePrepare, KafkaConsumer.close
and unsubscribe): a dynamic member commits, revokes and sends LeaveGroup; a static member sends none; partitions
are lost when closing mid-rebalance; close() is bounded by its timeout."""

from __future__ import annotations

from _coordinator_harness import (EAGER, P0, P1, T1, commit_request_offsets, joined, joined_and_polled,
                                  leave_group_response, offset_commit_response, tp)
from consumer import outputs as out
from consumer._state import MemberState
from protocol.api import ApiKey


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


def test_unsubscribe_revokes_and_leaves():
    h = joined_and_polled(EAGER)
    h.c.unsubscribe(h.now)
    h.collect()
    assert h.callbacks() == [("revoked", (tp(T1, 0), tp(T1, 1)))]
    leave = h.take(ApiKey.LEAVE_GROUP)
    assert leave.body.members[0].reason == "the consumer unsubscribed from all topics"
    assert h.c.state == MemberState.UNJOINED and h.c.member_id == ""
    h.respond(leave, leave_group_response())
