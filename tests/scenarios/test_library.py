"""The built-in library: every scenario passes its invariants, and reproduces the seeds' worked examples."""

from __future__ import annotations

import pytest

from scenarios.runner import library_paths, run_scenario

RESULTS: dict = {}


def result(name: str):
    if name not in RESULTS:
        path = next(p for p in library_paths() if p.stem == name)
        RESULTS[name] = run_scenario(path, trace=True)
    return RESULTS[name]


@pytest.mark.parametrize("name", [p.stem for p in library_paths()])
def test_library_scenario_passes_invariants(name):
    res = result(name)
    assert res.ok, "\n".join(str(v) for v in res.violations)
    assert not res.summary["consumer_errors"]
    for inv in res.summary["invariants"].values():
        assert inv["violations"] == 0
    s = res.summary
    assert s["invariants"]["settles"]["checked"] >= 1
    for g in s["groups"].values():
        assert g["unprocessed"] == 0


def counts(res, group):
    return sorted((len(v) for v in res.summary["groups"][group]["assignment"].values()), reverse=True)


def test_broadcast_and_unicast():
    s = result("broadcast-unicast").summary["groups"]
    assert s["group1"]["processed"] == {"group1-0": 6}          # broadcast: the lone member sees everything
    assert sum(s["group2"]["processed"].values()) == 6          # unicast: each record once in the group
    assert sorted(s["group2"]["keys"]["group2-2"][:2]) == ["2", "3"]  # murmur2: "2" and "3" share partition 2


def test_range_vs_roundrobin_imbalance():
    res = result("range-vs-roundrobin")
    assert counts(res, "range") == [10, 5]
    assert counts(res, "roundrobin") == [8, 7]
    res = result("range-two-topics")
    assert res.summary["groups"]["range"]["assignment"]["C0"] == ["T0-0", "T0-1", "T1-0", "T1-1"]
    assert counts(res, "range") == [4, 2, 2]
    assert counts(res, "roundrobin") == [3, 3, 2]


def test_uneven_subscriptions():
    a = result("roundrobin-uneven-subscriptions").summary["groups"]
    assert a["roundrobin"]["assignment"] == {"C0": ["t0-0"], "C1": ["t1-0"], "C2": ["t1-1", "t2-0", "t2-1", "t2-2"]}
    assert a["sticky"]["assignment"] == {"s-C0": ["t0-0"], "s-C1": ["t1-0", "t1-1"],
                                         "s-C2": ["t2-0", "t2-1", "t2-2"]}


def test_sticky_moves_less_when_a_consumer_leaves():
    g = result("sticky-consumer-leaves").summary["groups"]
    sticky_moved = g["sticky"]["generations"][-1]["partitions_moved"]
    rr_moved = g["roundrobin"]["generations"][-1]["partitions_moved"]
    assert sticky_moved == 3          # only C1's partitions move
    assert rr_moved > sticky_moved


def test_join_four_phases_trace():
    res = result("join-four-phases")
    newcomer = [d for d in res.sim.trace if d.get("consumer") == "billing-new"]
    kinds = [d["type"] for d in newcomer]
    assert kinds.index("coordinator") < kinds.index("joined") < kinds.index("assigned")
    apis = res.summary["messages"]["by_api"]
    for api in ("FindCoordinator", "JoinGroup", "SyncGroup", "Heartbeat"):
        assert apis[api] > 0
    assert res.summary["groups"]["billing"]["generations"][-1]["members"] == 3


def test_rolling_deploy_static_membership_avoids_rebalances():
    g = result("rolling-deploy").summary["groups"]
    assert g["static"]["rebalances"] == 1                      # only the initial one
    assert g["eager"]["rebalances"] >= 8                       # leave + join per restarted member
    assert g["cooperative"]["rebalances"] > g["eager"]["rebalances"]  # KIP-429's second rounds


def test_failover_and_slow_consumer_and_gc_storm():
    fo = result("coordinator-failover").summary
    assert fo["groups"]["shipping"]["coordinator_failovers"] == 1
    assert fo["groups"]["shipping"]["generations"][-1]["members"] == 4
    slow = result("slow-consumer")
    assert any(d["type"] == "left" and "poll timeout" in d["reason"] for d in slow.sim.trace)
    assert result("gc-pause-storm").summary["groups"]["analytics"]["rebalances"] >= 4
