"""Coordinator discovery and loss (consumer/discovery.py): FindCoordinator (v4 batched and v3 single key), retries
with exponential backoff, a fatal lookup error raised by the next poll, and a disconnect of the coordinator
connection marking the coordinator unknown (AbstractCoordinator.lookupCoordinator / markCoordinatorUnknown)."""

from __future__ import annotations

import pytest

from _coordinator_harness import GROUP, Harness, find_coordinator_response, join_group_response, stable
from consumer import outputs as out
from consumer.coordinator import DISCONNECTED
from consumer.errors import ApiException
from protocol.api import ApiKey
from protocol.errors import ErrorCode as E


# --- discovery --------------------------------------------------------------------------------------------
def test_find_coordinator_request_and_discovery():
    h = Harness()
    h.poll()
    req = h.take(ApiKey.FIND_COORDINATOR)
    assert req.node_id is None and not req.to_coordinator  # any broker (leastLoadedNode)
    assert req.api_version == 4 and req.body.coordinator_keys == [GROUP] and req.body.key_type == 0
    h.respond(req, find_coordinator_response(node=2))
    assert h.c.coordinator == out.Node(2, "localhost", 9094)
    assert h.events(out.CoordinatorDiscovered)


def test_find_coordinator_v3_single_key():
    h = Harness()
    h.c.set_api_versions({ApiKey.FIND_COORDINATOR: (0, 3), ApiKey.JOIN_GROUP: (0, 9)})
    h.poll()
    req = h.take(ApiKey.FIND_COORDINATOR)
    assert req.api_version == 3 and req.body.key == GROUP
    h.respond(req, find_coordinator_response(node=3, v4=False))
    assert h.c.coordinator.node_id == 3


def test_find_coordinator_retries_with_exponential_backoff():
    # ensureCoordinatorReady: retriable errors back off retry.backoff.ms * 2^n up to retry.backoff.max.ms
    h = Harness()
    waits = []
    for _ in range(6):
        h.poll()
        req = h.take(ApiKey.FIND_COORDINATOR)
        h.respond(req, find_coordinator_response(E.COORDINATOR_NOT_AVAILABLE))
        start = h.now
        while not h.has(ApiKey.FIND_COORDINATOR):
            h.poll(advance=50)
        waits.append(h.now - start)
    assert waits == [100, 200, 400, 800, 1000, 1000]


def test_find_coordinator_group_authorization_failure_is_fatal():
    h = Harness()
    h.poll()
    h.respond(h.take(ApiKey.FIND_COORDINATOR), find_coordinator_response(E.GROUP_AUTHORIZATION_FAILED))
    with pytest.raises(ApiException) as info:
        h.poll(advance=1000)
    assert info.value.error == E.GROUP_AUTHORIZATION_FAILED


def test_find_coordinator_disconnect_retries():
    h = Harness()
    h.poll()
    req = h.take(ApiKey.FIND_COORDINATOR)
    h.c.on_response(req.handle, DISCONNECTED, h.now)
    h.poll(advance=100)
    assert h.has(ApiKey.FIND_COORDINATOR)


def test_heartbeat_disconnect_marks_coordinator_unknown():
    h = stable()
    h.tick(advance=5_000)
    h.respond(h.take(ApiKey.HEARTBEAT), DISCONNECTED)
    assert h.c.coordinator is None
    h.tick()
    assert h.has(ApiKey.FIND_COORDINATOR)


def test_sync_group_disconnect_marks_coordinator_unknown_and_rejoins():
    # AbstractCoordinatorTest.testSyncGroupRequestWithDisconnect-style: member id kept
    h = Harness()
    h.discover()
    h.poll()
    h.respond(h.take(ApiKey.JOIN_GROUP), join_group_response(1, "consumer", "leader"))
    h.take(ApiKey.SYNC_GROUP)
    h.c.on_disconnect(1, h.now)
    h.collect()
    assert h.c.coordinator is None
    h.poll()
    h.respond(h.take(ApiKey.FIND_COORDINATOR), find_coordinator_response())
    h.poll(advance=100)
    assert h.take(ApiKey.JOIN_GROUP).body.member_id == "consumer"
