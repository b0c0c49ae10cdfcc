"""Settling (scenarios/settle.py): when the last disturbance is over, the bound a group has to settle in (the
rule of docs/scenarios.md, "Invariants"), and what "settled" means -- a group that cannot settle is reported."""

from __future__ import annotations

import pytest

from coordinator import CoordinatorConfig
from scenarios.model import broker_settings, parse_scenario
from scenarios.runner import run_scenario
from scenarios.settle import disturbance_end, settle_bound

from scenario_helpers import small_scenario

# small_scenario: members g-0 and g-1 start at 0; session.timeout.ms 3000, max.poll.interval.ms (the rebalance
# timeout) 5000, request.timeout.ms 5000, retry.backoff.max.ms Kafka's default 1000;
# group.initial.rebalance.delay.ms 0, kgroup.coordinator.load.time.ms 0; settle_slack_ms 2000


@pytest.mark.parametrize("action, end_ms", [
    ({"at": "5s", "action": "restart", "consumer": "g-0", "down_ms": "3s"}, 8000),           # back up
    ({"at": "4s", "action": "gc_pause", "consumer": "g-0", "duration_ms": "6s"}, 10_000),    # resumed
    ({"at": "1s", "action": "slow", "consumer": "g-0", "duration_ms": "2s", "poll_ms": "4s"}, 7000),  # + a slow poll
    ({"at": "2s", "action": "message_fault", "api": "Heartbeat", "mode": "delay", "delay_ms": 700,
      "duration_ms": "3s"}, 5700),                                                          # + the last delay
    ({"at": "2s", "action": "broker_crash", "duration_ms": "4s"}, 6000),                      # restarted
    ({"at": "2s", "action": "broker_crash"}, 2000),                                          # stays down
    ({"at": "3s", "action": "add_partitions", "topic": "t", "partitions": 8}, 3000 + 5000),  # + metadata age 5 s
    ({"at": "1s", "action": "rolling_restart", "group": "g", "batch": 1, "interval_ms": "10s", "down_ms": "2s"},
     1000 + 10_000 + 2000),                                                                 # 2 members, 1 a batch
    ({"at": "30s", "action": "produce", "topic": "t", "count": 5}, 0),                       # not a disturbance
])
def test_when_the_last_disturbance_is_over(action, end_ms):
    sc = parse_scenario(small_scenario(timeline=[action]), "t")
    assert disturbance_end(sc) == end_ms


def test_the_last_member_start_is_a_disturbance():
    d = small_scenario(timeline=[])
    d["groups"][0]["members"] = [{"name": "late", "start": "7s"}]
    assert disturbance_end(parse_scenario(d, "t")) == 7000


def test_settle_bound():
    sc = parse_scenario(small_scenario(timeline=[]), "t")
    broker = CoordinatorConfig.create(broker_settings(sc))
    # session timeout + rebalance timeout + initial delay + load time + slack
    assert settle_bound(sc, "g", broker) == 3000 + 5000 + 0 + 0 + 2000
    lossy = parse_scenario(small_scenario(timeline=[{"at": "1s", "action": "network_partition", "consumer": "g-0",
                                                     "duration_ms": "1s"}]), "t")
    # + max(request.timeout.ms, rebalance timeout + 5 s) + retry.backoff.max.ms, when messages can be lost
    assert settle_bound(lossy, "g", broker) == 10_000 + max(5000, 5000 + 5000) + 1000
    delayed = parse_scenario(small_scenario(timeline=[{"at": "1s", "action": "network_partition", "consumer": "g-0",
                                                       "mode": "delay", "delay_ms": 100, "duration_ms": "1s"}]), "t")
    assert settle_bound(delayed, "g", broker) == 10_000


def test_a_group_that_cannot_settle_is_reported_at_its_deadline():
    """Every broker stops for good at 5 s: no coordinator, so the group cannot be Stable by 5 s + 10 s."""
    sc = small_scenario(timeline=[{"at": "5s", "action": "broker_crash", "broker": b} for b in range(3)])
    res = run_scenario(parse_scenario(sc, "t"), 1)
    assert res.facts["settle_checks"] == [(15_000, "g")]
    v = next(v for v in res.violations if v.invariant == "settles")
    assert v.time_ms == 15_000
    assert "group g has not settled: the coordinator does not know the group" in v.message
    assert res.summary["groups"]["g"]["settled_at_ms"] is None


def test_a_settled_group_is_recorded_when_checked():
    res = run_scenario(parse_scenario(small_scenario(timeline=[]), "t"), 1)
    assert res.ok, "\n".join(map(str, res.violations))
    assert res.facts["settle_checks"] == [(10_000, "g")]
    assert res.summary["groups"]["g"]["settled_at_ms"] == 10_000
