"""The simulated network and its faults (scenarios/network.py): message faults (drop, delay, duplicate; counts),
network partitions between a member and brokers, recovery through Kafka's request timeouts."""

from __future__ import annotations

from scenarios.model import parse_scenario
from scenarios.runner import run_scenario
from scenarios.world import Simulation

from scenario_helpers import small_scenario


def run(sc, seed=1):
    return run_scenario(parse_scenario(sc, "test"), seed)


def test_dropped_join_responses_time_out_and_recover():
    sc = small_scenario()
    sc["timeline"].append({"at": "3s", "action": "message_fault", "consumer": "g-1", "api": "JoinGroup",
                           "direction": "response", "mode": "drop", "duration_ms": "20s"})
    sc["timeline"].append({"at": "3s", "action": "restart", "consumer": "g-1", "down_ms": 100})
    res = run(sc)
    assert res.ok, "\n".join(map(str, res.violations))
    assert res.summary["messages"]["dropped"] >= 1


def test_duplicated_and_delayed_messages():
    sc = small_scenario()
    sc["timeline"] += [
        {"at": "2s", "action": "message_fault", "api": "any", "direction": "both", "mode": "duplicate",
         "duration_ms": "5s"},
        {"at": "8s", "action": "message_fault", "consumer": "g-0", "api": "Heartbeat", "mode": "delay",
         "delay_ms": 500, "duration_ms": "3s"},
    ]
    res = run(sc)
    assert res.ok, "\n".join(map(str, res.violations))
    assert res.summary["messages"]["duplicated"] > 0 and res.summary["messages"]["delayed"] > 0


def test_a_message_fault_with_a_count_hits_that_many_messages():
    """``count``: at most that many messages, however long the fault lasts (one heartbeat a second for 10 s)."""
    sc = small_scenario(timeline=[{"at": "5s", "action": "message_fault", "consumer": "g-0", "api": "Heartbeat",
                                   "direction": "request", "mode": "drop", "count": 2, "duration_ms": "10s"}])
    res = run(sc)
    assert res.ok, "\n".join(map(str, res.violations))
    assert res.summary["messages"]["dropped"] == 2


def test_network_partition_expels_member_then_it_rejoins():
    sc = small_scenario()
    sc["timeline"].append({"at": "4s", "action": "network_partition", "consumer": "g-0", "duration_ms": "6s"})
    res = run(sc)
    assert res.ok, "\n".join(map(str, res.violations))
    reasons = [g["reason"] for g in res.summary["groups"]["g"]["generations"]]
    assert any("heartbeat expiration" in r for r in reasons)


def test_a_partition_from_another_broker_leaves_the_coordinator_link_alone():
    """Cutting a member off a broker that is not its coordinator loses at most bootstrap requests
    (FindCoordinator goes to any broker); its heartbeats reach the coordinator, so it is never expelled."""
    sc = small_scenario(timeline=[])
    coordinator = Simulation(parse_scenario(sc, "probe"), 1).svc.coordinator_of("g")
    other = next(b for b in range(3) if b != coordinator)
    sc["timeline"] = [{"at": "3s", "action": "network_partition", "consumer": "g-0", "broker": other,
                       "duration_ms": "15s"}]
    res = run(sc)
    assert res.ok, "\n".join(map(str, res.violations))
    assert not any("heartbeat expiration" in g["reason"] for g in res.summary["groups"]["g"]["generations"])
    assert res.summary["groups"]["g"]["rebalances"] == 1  # the initial join only
