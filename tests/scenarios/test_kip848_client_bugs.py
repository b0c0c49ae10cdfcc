"""Reproductions of two reported client bugs of KIP-848's consumer protocol (scenarios/library/bugs/): each scenario's
fault triggers the situation, kgroup's client core does what Kafka's fixed Java client does, and the bug -- injected
into the core here -- is caught by the invariant written for it (scenarios/invariants.py):

* KAFKA-16215 / KAFKA-16178 (apache/kafka#15311, ``HeartbeatRequestManager``): an error response did not record the
  heartbeat as answered, so none followed -- a fenced member never rejoined, one told NOT_COORDINATOR never
  heartbeat its new coordinator. ``heartbeats-resume`` catches it.
* librdkafka #5541 (fixed by librdkafka #5488): after max.poll.interval.ms expired the member rejoined with epoch 0
  but without a full request (no RebalanceTimeoutMs, no subscription); the broker refused it (INVALID_REQUEST) and
  the client went fatal. Java's rule: the rejoin after the poll-timeout leave is JOINING, every field sent.
  ``join-heartbeats-full`` catches it.
"""

from __future__ import annotations

import pytest

from consumer.consumer_heartbeat import HeartbeatState
from consumer.consumer_membership import ConsumerMembership
from coordinator import records as R
from protocol.errors import ErrorCode
from scenarios.model import parse_scenario
from scenarios.runner import LIBRARY_DIR, run_scenario

FENCED = LIBRARY_DIR / "bugs" / "kafka-16215-16178-fenced-members-rejoin.toml"
POLL_TIMEOUT = LIBRARY_DIR / "bugs" / "librdkafka-5541-poll-timeout-rejoin.toml"

_RUNS: dict = {}


def run(path, **kw):
    if kw:
        return run_scenario(path, trace=True, **kw)
    if path not in _RUNS:
        _RUNS[path] = run_scenario(path, trace=True)
    return _RUNS[path]


def records(res, group: str, *types) -> list:
    return [e for e in res.sim.records if e.record.group_id == group and isinstance(e.record, types)]


def member_id(res, consumer: str) -> str:
    return next(e["member_id"] for e in res.sim.trace if e["type"] == "start" and e["consumer"] == consumer)


def bad(res) -> dict[str, int]:
    return {k: v["violations"] for k, v in res.summary["invariants"].items() if v["violations"]}


def without(path, action: str):
    """The scenario of ``path`` without its ``action`` faults."""
    from scenarios.model import load_scenario
    data = load_scenario(path).model_dump(mode="json", exclude_none=True)
    data["timeline"] = [a for a in data["timeline"] if a["action"] != action]
    return parse_scenario(data, path.stem)


# --- KAFKA-16215 / KAFKA-16178 --------------------------------------------------------------------------------------

def test_a_member_fenced_on_a_delayed_revocation_rejoins_and_heartbeats_follow_not_coordinator():
    """events-0's commit before revoking (auto-commit, AbstractMembershipManager's reconciliation) gets no answer, so
    its revocation waits while its heartbeats go on: the coordinator's rebalance timer (max.poll.interval.ms = 8 s,
    from when it was asked to revoke: UNREVOKED_PARTITIONS) removes it, its next heartbeat is fenced, it calls
    onPartitionsLost and rejoins at once with its own member id (KIP-1082). Later the coordinator moves back to its
    restarted broker (preferred leader): heartbeats to the interim one are answered NOT_COORDINATOR and each member
    heartbeats the rediscovered coordinator -- every episode counted by heartbeats-resume."""
    res = run(FENCED)
    assert res.ok, "\n".join(map(str, res.violations))
    mid = member_id(res, "events-0")
    unrevoked = [e.timestamp_ms for e in records(res, "events", R.ConsumerGroupCurrentMemberAssignment)
                 if e.record.member_id == mid and e.record.state == 1]
    removed = [e.timestamp_ms for e in records(res, "events", R.ConsumerGroupMemberMetadataTombstone)
               if e.record.member_id == mid]
    assert unrevoked and len(removed) == 1
    asked = max(t for t in unrevoked if t < removed[0])
    assert removed[0] - asked == 8000  # the rebalance timeout, not the 10 s session timeout
    fenced = [e["t"] for e in res.sim.trace if e["type"] == "state" and e["consumer"] == "events-0"
              and e["new"] == "FENCED"]
    lost = [e["t"] for e in res.sim.trace if e["type"] == "lost" and e["consumer"] == "events-0"]
    assert fenced and lost and removed[0] <= fenced[0] <= lost[0]
    back = [e.timestamp_ms for e in records(res, "events", R.ConsumerGroupMemberMetadata)
            if e.record.member_id == mid and e.timestamp_ms > removed[0]]
    assert back and back[0] - lost[0] <= 1000  # rejoined with the same member id, without waiting
    told = {e["consumer"] for e in res.sim.trace if e["type"] == "state" and e["t"] >= 45_000
            and e["reason"] == "coordinator unknown: " + ErrorCode.NOT_COORDINATOR.message}
    assert len(told) >= 2
    assert res.summary["invariants"]["heartbeats-resume"]["checked"] >= 1 + len(told)
    assert not res.summary["consumer_errors"]


def _never_answered(monkeypatch):
    """KAFKA-16215/16178's bug: an error response (other than COORDINATOR_LOAD_IN_PROGRESS, whose backoff was
    recorded) leaves the heartbeat request marked in flight, so the next one is never sent."""
    real = ConsumerMembership._on_heartbeat_response

    def buggy(self, response, future):
        real(self, response, future)
        if response.error_code not in (0, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS.value):
            self.request_state.in_flight = True
    monkeypatch.setattr(ConsumerMembership, "_on_heartbeat_response", buggy)


@pytest.mark.parametrize("fault,cause", [("broker_crash", "was fenced"), ("message_fault", "was told NOT_COORDINATOR")])
def test_heartbeats_resume_catches_a_member_that_never_rejoins(monkeypatch, fault, cause):
    """Each half of the scenario alone (the other fault removed), with the bug injected: the fenced member never
    rejoins (KAFKA-16215), the members told NOT_COORDINATOR never heartbeat again (KAFKA-16178); heartbeats-resume
    reports each at its deadline, settles at the end."""
    _never_answered(monkeypatch)
    res = run_scenario(without(FENCED, fault), 1)
    found = [v for v in res.violations if v.invariant == "heartbeats-resume"]
    assert found and all(cause in v.message for v in found)
    assert set(bad(res)) == {"heartbeats-resume", "settles"}
    if fault == "broker_crash":
        assert [v.message.split(": ")[1].split(" ")[0] for v in found] == ["events-0"]


# --- librdkafka #5541 -----------------------------------------------------------------------------------------------

def test_the_rejoin_after_a_poll_timeout_is_a_full_heartbeat():
    """orders-1 and orders-2 each spend 8 s in one poll (max.poll.interval.ms = 5 s): each leaves (epoch -1, the
    reason Java's client gives), is STALE, and on its next poll loses its partitions and rejoins with epoch 0 and a
    full request -- orders-2 with its leave answered at once, orders-1 with the answer delayed past its rejoin. Every
    join is full (3 first joins + 2 rejoins), and each rejoins with its own member id."""
    res = run(POLL_TIMEOUT)
    assert res.ok, "\n".join(map(str, res.violations))
    assert res.summary["invariants"]["join-heartbeats-full"]["checked"] == 5
    assert res.sim.stats["delayed"] >= 1
    for name in ("orders-1", "orders-2"):
        mid = member_id(res, name)
        left = [e["t"] for e in res.sim.trace if e["type"] == "left" and e["consumer"] == name]
        lost = [e["t"] for e in res.sim.trace if e["type"] == "lost" and e["consumer"] == name]
        assert len(left) == 1 and lost and lost[0] - left[0] >= 2900  # released on the poll after the slow one
        removed = [e.timestamp_ms for e in records(res, "orders", R.ConsumerGroupMemberMetadataTombstone)
                   if e.record.member_id == mid]
        back = [e for e in records(res, "orders", R.ConsumerGroupMemberMetadata)
                if e.record.member_id == mid and e.timestamp_ms > lost[0]]
        assert removed and removed[0] < lost[0] and back
        assert back[0].record.rebalance_timeout_ms == 5000 and tuple(back[0].record.subscribed_topic_names) == ("orders",)
    assert not res.summary["consumer_errors"]


def test_join_heartbeats_full_catches_a_rejoin_that_is_not_a_full_request(monkeypatch):
    """librdkafka #5541's bug injected: the member keeps its sent-fields (it believes itself steady) and its epoch-0
    rejoin is built as an incremental heartbeat. join-heartbeats-full reports both rejoins as they are sent; the
    coordinator refuses them as Kafka does (INVALID_REQUEST "RebalanceTimeoutMs must be provided in first request."),
    fatal to the client."""
    real_build, real_reset = HeartbeatState.build, HeartbeatState.reset

    def build(self, **kw):
        if kw["member_epoch"] == 0 and self.sent_topic_names is not None:
            kw["send_all_fields"] = False
        return real_build(self, **kw)

    def reset(self):
        if not hasattr(self, "sent_topic_names"):  # (only the constructor's)
            real_reset(self)
    monkeypatch.setattr(HeartbeatState, "build", build)
    monkeypatch.setattr(HeartbeatState, "reset", reset)
    res = run_scenario(POLL_TIMEOUT, 1)
    found = [v for v in res.violations if v.invariant == "join-heartbeats-full"]
    assert sorted(v.message.split(": ")[1].split(" ")[0] for v in found) == ["orders-1", "orders-2"]
    assert all("no RebalanceTimeoutMs" in v.message for v in found)
    errors = res.summary["consumer_errors"]
    assert sorted(e["consumer"] for e in errors) == ["orders-1", "orders-2"]
    assert all(e["error"].endswith("RebalanceTimeoutMs must be provided in first request.") for e in errors)


@pytest.mark.parametrize("path", [FENCED, POLL_TIMEOUT], ids=lambda p: p.stem)
def test_client_bug_scenarios_are_deterministic(path):
    a, b = run_scenario(path, seed=3), run_scenario(path, seed=3)
    assert a.events_lines() == b.events_lines() and a.trace_lines() == b.trace_lines()
