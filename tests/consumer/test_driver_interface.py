"""The plain driver interface (consumer/coordinator.py): calls return nothing a driver must read; what a call did
shows in the drained outputs and in the deadlines a driver asks for after it (next_deadline_ms for the heartbeat
thread, next_poll_deadline_ms for the application), which follow Kafka's Heartbeat timers and the poll's work."""

from __future__ import annotations

from _coordinator_harness import heartbeat_response, joined, stable
from consumer._state import MemberState
from consumer.coordinator import DISCONNECTED
from protocol.api import ApiKey
from protocol.errors import ErrorCode as E


def test_next_deadline_and_next_poll_deadline():
    h = joined(config={"enable.auto.commit": True})
    now = h.now
    assert h.c.next_deadline_ms() == now + 5_000          # next heartbeat
    assert h.c.next_poll_deadline_ms() == now + 2_000     # next auto-commit


def test_heartbeat_response_moves_only_the_session_timer():
    # Kafka's Heartbeat: a response restarts the session timer (receiveHeartbeat); the next heartbeat stays due
    # heartbeat.interval.ms after the send (sentHeartbeat); the application's deadline does not move. The driver
    # interface is plain: on_response returns nothing, the driver asks the deadlines again.
    h = stable()
    assert h.c.next_poll_deadline_ms() is None   # auto-commit off, positions known: no work of its own
    h.tick(advance=5_000)
    sent_at = h.now
    hb = h.take(ApiKey.HEARTBEAT)
    assert h.c.next_deadline_ms() == sent_at + 5_000   # the next heartbeat (the request timeout is 30 s)
    h.now += 3
    assert h.c.on_response(hb.handle, heartbeat_response(), h.now) is None
    assert h.c.drain() == []
    assert (h.c.next_deadline_ms(), h.c.next_poll_deadline_ms()) == (sent_at + 5_000, None)
    h.c.on_response(hb.handle, heartbeat_response(), h.now)  # a duplicate is ignored
    assert h.c.drain() == []
    assert (h.c.next_deadline_ms(), h.c.next_poll_deadline_ms()) == (sent_at + 5_000, None)
    # the session timer restarted at the response: no heartbeat answered for 10 s after it -> coordinator unknown
    h.tick(advance=5_000 - 3)
    h.take(ApiKey.HEARTBEAT)                           # never answered
    h.tick(advance=10_000 + 3 - 5_000 - 1)
    assert h.c.coordinator is not None
    h.tick(advance=1)
    assert h.c.coordinator is None

    # REBALANCE_IN_PROGRESS while STABLE: a rejoin is requested, so the application has work at once
    h = stable()
    h.tick(advance=5_000)
    h.c.on_response(h.take(ApiKey.HEARTBEAT).handle, heartbeat_response(E.REBALANCE_IN_PROGRESS), h.now)
    assert h.c.state == MemberState.STABLE and h.c.rejoin_needed
    assert h.c.next_poll_deadline_ms() <= h.now

    # a disconnect marks the coordinator unknown: both the heartbeat thread and the application look it up now
    h = stable()
    h.tick(advance=5_000)
    h.c.on_response(h.take(ApiKey.HEARTBEAT).handle, DISCONNECTED, h.now)
    assert h.c.coordinator is None
    assert h.c.next_deadline_ms() <= h.now and h.c.next_poll_deadline_ms() <= h.now


def test_deadlines_follow_the_heartbeat_thread():
    # tick returns nothing; what it did shows in the outputs and the deadlines (Kafka's HeartbeatThread.run)
    h = stable()
    joined = h.now
    h.now += 1_000
    assert h.c.tick(h.now) is None
    assert h.c.drain() == []                             # nothing due
    assert (h.c.next_deadline_ms(), h.c.next_poll_deadline_ms()) == (joined + 5_000, None)
    h.now += 4_000
    h.c.tick(h.now)                                      # the heartbeat is sent...
    hb = h.collect() and h.take(ApiKey.HEARTBEAT)
    assert hb.body.generation_id == 1
    assert h.c.next_poll_deadline_ms() is None           # ...and moves no application deadline
    assert h.c.next_deadline_ms() == joined + 10_000     # the session timer (restarted by the join)

    # the session expires without a heartbeat response: the coordinator is marked unknown (then looked up)
    h.now += 10_000
    h.c.tick(h.now)
    assert h.c.coordinator is None
    assert h.c.next_poll_deadline_ms() is None           # FindCoordinator in flight: its answer wakes the driver
    assert h.collect() and h.has(ApiKey.FIND_COORDINATOR)

    # max.poll.interval.ms passes without a poll: the member leaves the group and must rejoin at its next poll
    h = stable()
    for _ in range(11):
        h.now += 5_000
        h.c.tick(h.now)
        h.collect()
        h.respond(h.take(ApiKey.HEARTBEAT), heartbeat_response())
        assert h.c.next_poll_deadline_ms() is None
    h.now += 5_000
    h.c.tick(h.now)
    assert h.c.state == MemberState.UNJOINED
    assert h.c.next_poll_deadline_ms() <= h.now
