"""Faults aimed at KIP-848's epochs and phases (broker/faultrules.py rules in the simulator's network, phase-
triggered coordinator failover, hold_revocation): matching, reordering, triggering, validation."""

from __future__ import annotations

import pytest

from broker.faultrules import FaultRule, FaultRules
from protocol.messages import ConsumerGroupHeartbeatResponse as HR

from scenarios.model import ScenarioError, parse_scenario
from scenarios.network import Network
from scenarios.runner import run_scenario
from scenarios.world import Simulation

from scenario_helpers import small_scenario

CGH = 68


def never(*_):
    raise AssertionError("no probability to draw")


def test_rules_aimed_at_a_phase_or_an_epoch_match_only_those_responses():
    rules = FaultRules()
    rules.add(FaultRule("drop", api=CGH, responses=True, requests=False, phases=frozenset(["epoch_bump"])))
    rules.add(FaultRule("delay", api=CGH, responses=True, requests=False, epoch=7, delay_ms=40))
    assert rules.all(CGH, "c", 0, True, 0, never) == (False, 0, False)                         # a plain heartbeat
    assert rules.all(CGH, "c", 0, True, 0, never, frozenset(["assignment"]), 6) == (False, 0, False)
    assert rules.all(CGH, "c", 0, True, 0, never, frozenset(["epoch_bump"]), 6) == (True, 0, False)
    assert rules.all(CGH, "c", 0, True, 0, never, frozenset(), 7) == (False, 40, False)
    assert rules.all(14, "c", 0, True, 0, never) == (False, 0, False)                          # another API


def test_a_reorder_rule_reports_its_hold():
    rules = FaultRules()
    rules.add(FaultRule("reorder", api=CGH, responses=True, requests=False, delay_ms=300, count=1))
    assert rules.all(CGH, "c", 0, True, 0, never) == (False, 0, False) and rules.held == 300
    assert rules.all(CGH, "c", 0, True, 0, never) == (False, 0, False) and rules.held == 0  # used up


class _Rng:
    def randint(self, a, b):
        return a

    def random(self):
        return 0.0


def test_heartbeat_response_phases():
    """epoch_bump: the member epoch rises above the last one the consumer received; assignment: one is carried."""
    net = Network(None, None, None, latency_ms=1, jitter_ms=0, codec=False, num_brokers=1, rng=_Rng(),
                  fault_rng=_Rng(), stats={})
    asg = HR.Assignment(topic_partitions=[])
    assert net._cg_phases("c", HR(error_code=0, member_epoch=3, assignment=asg)) == (
        frozenset(["epoch_bump", "assignment"]), 3)
    net.cg_epochs["c"] = 3
    assert net._cg_phases("c", HR(error_code=0, member_epoch=3)) == (frozenset(), 3)
    assert net._cg_phases("c", HR(error_code=0, member_epoch=4)) == (frozenset(["epoch_bump"]), 4)
    assert net._cg_phases("c", HR(error_code=110, member_epoch=0)) == (frozenset(), None)  # errors: no phase


def test_reordered_responses_arrive_behind_the_next_one():
    """A response held back by ``reorder`` reaches the consumer right after the next response on its connection
    (out of TCP order); the classic client matches responses by correlation, and the group stays correct."""
    sc = small_scenario()
    sc["groups"][0]["config"]["auto.commit.interval.ms"] = 200  # commits and heartbeats share the connection
    sc["timeline"].append({"at": "4s", "action": "message_fault", "consumer": "g-0", "api": "Heartbeat",
                           "direction": "response", "mode": "reorder", "delay_ms": "2s", "count": 3,
                           "duration_ms": "10s"})
    sim = Simulation(parse_scenario(sc, "t"), 1)
    order: list[tuple[int, int]] = []
    received = sim.network.received

    def spy(c, handle, resp):
        if c.name == "g-0":
            order.append((sim.now, handle))
        received(c, handle, resp)
    sim.network.received = spy
    from scenarios.settle import run_simulation
    run_simulation(sim)
    assert sim.stats.get("reordered") == 3
    late = [(t, h) for i, (t, h) in enumerate(order) if any(h2 > h for _, h2 in order[:i])]
    assert len(late) == 3  # each held heartbeat response came after a later request's response
    assert not sim.checker.violations, sim.checker.violations


def test_coordinator_failover_triggered_by_a_phase():
    """``broker_crash`` with ``during = "rebalancing"``: armed at 2 s, it fails the coordinator over the moment
    the restart at 5 s starts a rebalance (PreparingRebalance), not before."""
    sc = small_scenario()
    sc["timeline"] += [
        {"at": "2s", "action": "broker_crash", "broker": "coordinator", "during": "rebalancing", "duration_ms": "3s"},
        {"at": "5s", "action": "restart", "consumer": "g-1", "down_ms": 200},
    ]
    res = run_scenario(parse_scenario(sc, "t"), 1)
    assert res.ok, "\n".join(map(str, res.violations))
    reached = [e for e in res.sim.trace if e["type"] == "phase_reached"]
    stops = [e for e in res.sim.trace if e["type"] == "broker_stop"]
    assert len(reached) == 1 and reached[0]["t"] >= 5000
    assert stops and stops[0]["t"] == reached[0]["t"]
    assert res.summary["groups"]["g"]["coordinator_failovers"] >= 1


def test_a_phase_that_never_comes_is_reported():
    sc = small_scenario()
    sc["timeline"].append({"at": "2s", "action": "broker_crash", "during": "rebalancing", "within_ms": "3s"})
    res = run_scenario(parse_scenario(sc, "t"), 1)
    assert [e["type"] for e in res.sim.trace if e["type"].startswith("phase_")] == ["phase_not_reached"]
    assert not any(e["type"] == "broker_stop" for e in res.sim.trace)


@pytest.mark.parametrize("entry,message", [
    ({"action": "message_fault", "api": "Heartbeat", "mode": "drop", "phase": "epoch_bump", "duration_ms": "5s"},
     'timeline[1]: phase and epoch aim at ConsumerGroupHeartbeat responses: set api = "ConsumerGroupHeartbeat" '
     'and direction = "response"'),
    ({"action": "message_fault", "api": "ConsumerGroupHeartbeat", "direction": "response", "mode": "reorder",
      "duration_ms": "5s"},
     'timeline[1]: reorder holds responses back: set direction = "response" and delay_ms (the longest hold) above 0'),
    ({"action": "hold_revocation", "consumer": "g-0", "duration_ms": "10s"},
     'timeline[1].consumer: hold_revocation needs a consumer-protocol member (protocol = "consumer"); g-0 uses '
     'classic'),
    ({"action": "broker_crash", "broker": 1, "during": "reconciling"},
     'timeline[1].during: during needs broker = "coordinator" (the group\'s coordinator when the phase comes)'),
    ({"action": "message_fault", "api": "ConsumerGroupHeartbeat", "direction": "response", "mode": "drop",
      "phase": "join", "duration_ms": "5s"},
     "timeline[1].phase: invalid value 'join' (accepted values: epoch_bump, assignment)"),
])
def test_phase_fault_errors_are_one_line(entry, message):
    sc = small_scenario()
    sc["timeline"].append({"at": "5s", **entry})
    with pytest.raises(ScenarioError) as info:
        parse_scenario(sc, "s.toml")
    assert str(info.value).splitlines() == [f"s.toml: {message}"]


# --- with the consumer-protocol core ---------------------------------------------------------------------------------

def cg_scenario(**extra) -> dict:
    """Two consumer-protocol members on 4 partitions, the second joining at 5 s (a new target: epoch bumps)."""
    sc = small_scenario()
    sc["cluster"]["broker"].update({"group.consumer.min.session.timeout.ms": 10000,
                                    "group.consumer.session.timeout.ms": 10000,
                                    "group.consumer.min.heartbeat.interval.ms": 1000,
                                    "group.consumer.heartbeat.interval.ms": 1000})
    g = sc["groups"][0]
    g.pop("strategy")
    g["protocol"] = "consumer"
    # (a lost response is noticed after request.timeout.ms, well within the 10 s session)
    g["config"] = {"max.poll.interval.ms": 5000, "request.timeout.ms": 3000, "auto.commit.interval.ms": 1000}
    g["members"] = [{"name": "g-1", "start": "5s"}]
    sc.update(extra)
    return sc


def tombstones(res, member_id):
    return [e.timestamp_ms for e in res.sim.records
            if type(e.record).__name__ == "ConsumerGroupMemberMetadataTombstone" and e.record.member_id == member_id]


def test_a_lost_epoch_bump_is_tolerated_by_the_previous_epoch_rule():
    """The heartbeat response that moves g-0 to the new epoch is lost: g-0 heartbeats again with its previous
    epoch and the partitions it owns (a subset of its assignment), which Kafka's coordinator accepts
    (``throwIfConsumerGroupMemberEpochIsInvalid``: epoch == previous epoch and owned <= assigned); it is not
    fenced, and the group converges."""
    sc = cg_scenario()
    sc["timeline"].append({"at": "5s", "action": "message_fault", "consumer": "g-0", "api": "ConsumerGroupHeartbeat",
                           "direction": "response", "mode": "drop", "phase": "epoch_bump", "count": 1,
                           "duration_ms": "10s"})
    res = run_scenario(parse_scenario(sc, "t"), 1)
    assert res.ok, "\n".join(map(str, res.violations))
    assert res.summary["messages"]["dropped"] == 1
    mid = next(e["member_id"] for e in res.sim.trace if e["type"] == "start" and e["consumer"] == "g-0")
    assert tombstones(res, mid) == []
    assert not [e for e in res.sim.trace if e["type"] == "lost"]
    assert sorted(map(len, res.summary["groups"]["g"]["assignment"].values())) == [2, 2]


def test_reordered_heartbeat_responses_leave_the_member_correct():
    """Heartbeat responses carrying assignments held back behind later ones (KAFKA-19335's fault): the client
    ignores what it no longer waits for or takes the newest epoch; every invariant holds and the group converges."""
    sc = cg_scenario()
    sc["timeline"].append({"at": "4s", "action": "message_fault", "api": "ConsumerGroupHeartbeat",
                           "direction": "response", "mode": "reorder", "phase": "assignment", "delay_ms": "2s",
                           "duration_ms": "10s"})
    res = run_scenario(parse_scenario(sc, "t"), 1)
    assert res.ok, "\n".join(map(str, res.violations))
    assert res.sim.stats.get("reordered", 0) >= 1


def test_a_member_held_in_revocation_past_its_rebalance_timeout_is_fenced():
    """g-0 must give partitions to g-1 but its application is kept out of poll for 20 s (longer than the 5 s
    rebalance timeout = max.poll.interval.ms): it cannot acknowledge the revocation, so it leaves the group (the
    coordinator's rebalance timeout, or the client's own poll timer, whichever comes first), g-1 gets the
    partitions only then, and it rejoins afterwards."""
    sc = cg_scenario()
    sc["timeline"].append({"at": "4s", "action": "hold_revocation", "consumer": "g-0", "duration_ms": "20s"})
    res = run_scenario(parse_scenario(sc, "t"), 1)
    assert res.ok, "\n".join(map(str, res.violations))
    held = [e for e in res.sim.trace if e["type"] == "hold_revocation"]
    assert len(held) == 1 and held[0]["consumer"] == "g-0"
    mid = next(e["member_id"] for e in res.sim.trace if e["type"] == "start" and e["consumer"] == "g-0")
    gone = tombstones(res, mid)
    # 5 s after its last poll (just before the hold) or the revocation began, within a heartbeat and latencies
    assert gone and held[0]["t"] + 5000 - 1000 <= gone[0] <= held[0]["t"] + 5000 + 1500
    g1_first = min(e["t"] for e in res.sim.trace if e["type"] == "assigned" and e["consumer"] == "g-1"
                   and e["added"])
    assert g1_first > gone[0]


@pytest.mark.parametrize("change", ["subscribe", "add_partitions"])
def test_a_change_mid_reconciliation_converges_to_the_new_target(change):
    """The subscription changes, or the topic grows, while the consumer group reconciles (g-1 joining at 5 s):
    Kafka bumps the group epoch again (a subscription change, or a new metadata hash) and the members reconcile to
    the newer target; the group converges to the target its assignor gives for the final topics."""
    sc = cg_scenario()
    sc["cluster"]["topics"].append({"name": "u", "partitions": 2})
    if change == "subscribe":
        sc["timeline"].append({"at": "4s", "action": "subscribe", "group": "g", "topics": ["t", "u"],
                               "during": "reconciling", "within_ms": "5s"})
        expected = {("t", p) for p in range(4)} | {("u", p) for p in range(2)}
    else:
        sc["timeline"].append({"at": "4s", "action": "add_partitions", "topic": "t", "partitions": 6,
                               "during": "reconciling", "within_ms": "5s", "group": "g"})
        expected = {("t", p) for p in range(6)}
    res = run_scenario(parse_scenario(sc, "t"), 1)
    assert res.ok, "\n".join(map(str, res.violations))
    reached = [e for e in res.sim.trace if e["type"] == "phase_reached"]
    assert len(reached) == 1 and reached[0]["group"] == "g" and reached[0]["t"] >= 5000
    held = {tuple(x.rsplit("-", 1)) for parts in res.summary["groups"]["g"]["assignment"].values() for x in parts}
    assert {(t, int(p)) for t, p in held} == expected
    assert res.summary["invariants"]["target-up-to-date"]["checked"] == 1
