"""The built-in library: every scenario passes its invariants, and reproduces the seeds' worked examples.

Each fact is checked twice: as kgroup reports it (the summary, the checker), and computed independently from the
run's own files -- the coordinator's records (events.jsonl), the trace and produce.jsonl -- with kafka-python's
consumer-protocol codec and murmur2 (``run_files.py``), so a checker that wrongly says ``ok`` or a summary that
misreports cannot hide a broken run.
"""

from __future__ import annotations

import tomllib

import pytest
from kafka.partitioner.default import murmur2

from scenarios.runner import library_paths, run_scenario

from run_files import RunFiles, assignment

RESULTS: dict = {}


def result(name: str):
    if name not in RESULTS:
        path = next(p for p in library_paths() if p.stem == name)
        RESULTS[name] = run_scenario(path, trace=True)
    return RESULTS[name]


def files(name: str) -> RunFiles:
    return RunFiles.of(result(name))


def topic_partitions(name: str) -> dict[str, int]:
    """The scenario file's topics at the end of the run (read with tomllib): the cluster's counts, raised by the
    timeline's ``add_partitions`` actions (rebalance-triggers grows a topic)."""
    path = next(p for p in library_paths() if p.stem == name)
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    counts = {t["name"]: t["partitions"] for t in data["cluster"]["topics"]}
    for a in data.get("timeline", []):
        if a["action"] == "add_partitions":
            counts[a["topic"]] = a["partitions"]
    return counts


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


@pytest.mark.parametrize("name", [p.stem for p in library_paths()])
def test_library_scenario_holds_by_its_own_files(name):
    """The invariants, recomputed from events.jsonl, trace.jsonl and produce.jsonl alone."""
    f = files(name)
    partitions = topic_partitions(name)
    ends = f.end_offsets()
    owners = f.final_owners()
    member_ids = f.member_ids()
    group_of = f.group_of()
    assert f.overlap_problems() == []
    groups = f.groups()
    assert groups
    for g in groups:
        assert f.generation_problems(g) == [], g
        assert f.assignment_problems(g) == [], g
        running = {c: held for c, held in owners.items() if group_of.get(c) == g}
        if f.is_consumer_group(g):
            # KIP-848: never a partition held by two members in the records; at the end each running consumer
            # holds what its current assignment says, nothing pending revocation ...
            assert f.cg_assignment_problems(g) == [], g
            current = f.cg_current(g)
            assert running and {member_ids[c]: held for c, held in running.items()} == \
                {m: a for m, (a, _pending) in current.items()}, g
            assert not any(pending for _a, pending in current.values()), g
            subscribed = f.cg_subscribed_topics(g)
        else:
            # at the end, the running consumers hold what the last Stable generation assigned them ...
            last = f.last_assignment(g)
            assert running and {member_ids[c]: held for c, held in running.items()} == last, g
            subscribed = f.last_subscribed_topics(g)
        # ... every partition of the subscribed topics, each exactly once
        held = [tp for tps in running.values() for tp in tps]
        expected = {(t, p) for t in subscribed for p in range(partitions[t])}
        assert sorted(held) == sorted(expected), g
        # every produced record was consumed, and committed (every library group auto-commits)
        committed = f.committed(g)
        for tp in expected:
            assert committed.get(tp, 0) == ends.get(tp, 0), (g, tp)


def counts(res, group):
    return sorted((len(v) for v in res.summary["groups"][group]["assignment"].values()), reverse=True)


def counts_from_events(name: str, group: str) -> list[int]:
    return sorted((len(v) for v in files(name).last_assignment(group).values()), reverse=True)


def assignment_by_consumer(name: str, group: str) -> dict[str, list[str]]:
    f = files(name)
    ids = f.member_ids()
    last = f.last_assignment(group)
    return {c: [f"{t}-{p}" for t, p in sorted(last[mid])] for c, mid in sorted(ids.items()) if mid in last}


def test_broadcast_and_unicast():
    s = result("broadcast-unicast").summary["groups"]
    assert s["group1"]["processed"] == {"group1-0": 6}          # broadcast: the lone member sees everything
    assert sum(s["group2"]["processed"].values()) == 6          # unicast: each record once in the group
    assert sorted(s["group2"]["keys"]["group2-2"][:2]) == ["2", "3"]  # murmur2: "2" and "3" share partition 2
    # independently: kafka-python's murmur2 puts keys "2" and "3" on partition 2 of topic1's three ...
    assert [(murmur2(k) & 0x7FFFFFFF) % 3 for k in (b"1", b"2", b"3")] == [0, 2, 2]
    # ... both groups committed all 6 records (broadcast), and group2's three members share the partitions
    f = files("broadcast-unicast")
    assert sum(f.end_offsets().values()) == 6
    for g in ("group1", "group2"):
        assert sum(f.committed(g).values()) == 6
    assert counts_from_events("broadcast-unicast", "group1") == [3]
    assert counts_from_events("broadcast-unicast", "group2") == [1, 1, 1]


def test_range_vs_roundrobin_imbalance():
    res = result("range-vs-roundrobin")
    assert counts(res, "range") == [10, 5]
    assert counts(res, "roundrobin") == [8, 7]
    assert counts_from_events("range-vs-roundrobin", "range") == [10, 5]
    assert counts_from_events("range-vs-roundrobin", "roundrobin") == [8, 7]
    res = result("range-two-topics")
    assert res.summary["groups"]["range"]["assignment"]["C0"] == ["T0-0", "T0-1", "T1-0", "T1-1"]
    assert counts(res, "range") == [4, 2, 2]
    assert counts(res, "roundrobin") == [3, 3, 2]
    assert assignment_by_consumer("range-two-topics", "range")["C0"] == ["T0-0", "T0-1", "T1-0", "T1-1"]
    assert counts_from_events("range-two-topics", "range") == [4, 2, 2]
    assert counts_from_events("range-two-topics", "roundrobin") == [3, 3, 2]


def test_uneven_subscriptions():
    a = result("roundrobin-uneven-subscriptions").summary["groups"]
    expected_rr = {"C0": ["t0-0"], "C1": ["t1-0"], "C2": ["t1-1", "t2-0", "t2-1", "t2-2"]}
    expected_sticky = {"s-C0": ["t0-0"], "s-C1": ["t1-0", "t1-1"], "s-C2": ["t2-0", "t2-1", "t2-2"]}
    assert a["roundrobin"]["assignment"] == expected_rr
    assert a["sticky"]["assignment"] == expected_sticky
    assert assignment_by_consumer("roundrobin-uneven-subscriptions", "roundrobin") == expected_rr
    assert assignment_by_consumer("roundrobin-uneven-subscriptions", "sticky") == expected_sticky


def moved_in_last_rebalance(name: str, group: str) -> int:
    gens = files(name).stable_generations(group)
    before, after = ({tp: m["member_id"] for m in g["members"] for tp in assignment(m["assignment"])}
                     for g in gens[-2:])
    return sum(1 for tp in set(before) | set(after) if before.get(tp) != after.get(tp))


def test_sticky_moves_less_when_a_consumer_leaves():
    g = result("sticky-consumer-leaves").summary["groups"]
    sticky_moved = g["sticky"]["generations"][-1]["partitions_moved"]
    rr_moved = g["roundrobin"]["generations"][-1]["partitions_moved"]
    assert sticky_moved == 3          # only C1's partitions move
    assert rr_moved > sticky_moved
    assert moved_in_last_rebalance("sticky-consumer-leaves", "sticky") == 3
    assert moved_in_last_rebalance("sticky-consumer-leaves", "roundrobin") > 3


def test_join_four_phases_trace():
    res = result("join-four-phases")
    newcomer = [d for d in res.sim.trace if d.get("consumer") == "billing-new"]
    kinds = [d["type"] for d in newcomer]
    assert kinds.index("coordinator") < kinds.index("joined") < kinds.index("assigned")
    apis = res.summary["messages"]["by_api"]
    for api in ("FindCoordinator", "JoinGroup", "SyncGroup", "Heartbeat"):
        assert apis[api] > 0
    assert res.summary["groups"]["billing"]["generations"][-1]["members"] == 3
    # the coordinator's records: the newcomer joins, a join phase completes with it, the leader's SyncGroup stores
    # a Stable generation of three that assigns it partitions
    f = files("join-four-phases")
    new_id = f.member_ids()["billing-new"]
    types = [(e["type"], e["data"]) for e in f.events if e["data"]["group_id"] == "billing"]
    joined_at = next(i for i, (t, d) in enumerate(types) if t == "MemberJoined" and d["member_id"] == new_id)
    completed_at = next(i for i, (t, d) in enumerate(types)
                        if i > joined_at and t == "JoinCompleted" and new_id in d["members"])
    stable = next(d for i, (t, d) in enumerate(types) if i > completed_at and t == "GroupMetadata" and d["members"])
    assert len(stable["members"]) == 3
    assert f.last_assignment("billing")[new_id]


def join_phases(name: str, group: str) -> int:
    return sum(1 for e in files(name).events if e["type"] == "JoinCompleted" and e["data"]["group_id"] == group)


def test_rolling_deploy_static_membership_avoids_rebalances():
    g = result("rolling-deploy").summary["groups"]
    assert g["static"]["rebalances"] == 1                      # only the initial one
    assert g["eager"]["rebalances"] >= 8                       # leave + join per restarted member
    assert g["cooperative"]["rebalances"] > g["eager"]["rebalances"]  # KIP-429's second rounds
    assert join_phases("rolling-deploy", "static") == 1
    assert join_phases("rolling-deploy", "eager") >= 8
    assert join_phases("rolling-deploy", "cooperative") > join_phases("rolling-deploy", "eager")


def test_failover_and_slow_consumer_and_gc_storm():
    fo = result("coordinator-failover").summary
    assert fo["groups"]["shipping"]["coordinator_failovers"] == 1
    assert fo["groups"]["shipping"]["generations"][-1]["members"] == 4
    slow = result("slow-consumer")
    assert any(d["type"] == "left" and "poll timeout" in d["reason"] for d in slow.sim.trace)
    assert result("gc-pause-storm").summary["groups"]["analytics"]["rebalances"] >= 4
    # independently: one load of the group's offsets partition after the start, four members at the end
    f = files("coordinator-failover")
    part = next(e["log_partition"] for e in f.events if e["data"]["group_id"] == "shipping")
    assert sum(1 for e in f.events if e["type"] == "CoordinatorLoaded" and e["log_partition"] == part
               and e["timestamp_ms"] > 0) == 1
    assert len(f.last_assignment("shipping")) == 4
    # the slow consumer left by LeaveGroup; the paused ones were removed for missing heartbeats
    f = files("slow-consumer")
    assert any(e["type"] == "MemberRemoved" and "LeaveGroup" in e["data"]["reason"] for e in f.events)
    f = files("gc-pause-storm")
    expired = [e for e in f.events if e["type"] == "MemberRemoved" and "heartbeat expiration" in e["data"]["reason"]]
    assert len(expired) >= 2
    assert sum(1 for e in f.events if e["type"] == "RebalanceStarted" and e["data"]["group_id"] == "analytics") >= 4
