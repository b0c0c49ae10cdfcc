"""Positions of newly assigned partitions (consumer/subscription.py + the OffsetFetch of consumer/commits.py;
ConsumerCoordinator.fetchCommittedOffsets, OffsetFetchResponseHandler, auto.offset.reset): committed offsets
become positions, a missing one is reset (earliest / latest / none), retriable errors retry, fatal ones reach
poll()."""

from __future__ import annotations

import pytest

from _coordinator_harness import GROUP, P0, P1, Harness, find_coordinator_response, offset_fetch_response
from consumer import outputs as out
from consumer.errors import ApiException, NoOffsetForPartitionException
from protocol.api import ApiKey
from protocol.errors import ErrorCode as E


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
