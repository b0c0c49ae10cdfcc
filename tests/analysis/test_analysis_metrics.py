"""Every metric on the hand-made logs of hand_logs.py; the expected values are worked out by hand here (each
comment shows the arithmetic from the records' timestamps), not produced by the code under test.

Ownership (docs/analysis.md): a member owns its generation's assignment from its SyncGroup response (the later of
the Stable GroupMetadata and its own SyncReceived) until, eager, its next JoinGroup or removal; cooperative, its
next assignment or removal."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark


def _rows(rows, **match):
    return [r for r in rows if all(r.get(k) == v or (k == "run" and r["run"].endswith(v))
                                   for k, v in match.items())]


def _one(rows, **match):
    found = _rows(rows, **match)
    assert len(found) == 1, (match, found)
    return found[0]


def rb(analyzed, run, group, no):
    return _one(analyzed.data["rebalances"], run=f"/{run}", group_id=group, rebalance_no=no)


# (run, group, no): generation, trigger, start, end, duration, outcome, from_empty, members before/after,
# revoked, assigned, moved, balance, whole group stopped, partitions unowned (partition-ms in [start, end]), assignor
EXPECTED_REBALANCES = [
    # eager: a,b join at 100; last SyncGroup response b at 160 (GroupMetadata 150): 60. t0,t1 | t2,t3.
    # Unowned in [100,160]: t0,t1 until a's response at 150 (50 each), t2,t3 until b's at 160 (60 each): 220
    (("A", "eager", 1), (1, "member-joined", 100, 160, 60, "stable", True, 0, 2, 0, 4, 0, 0, None, 220, "range")),
    # c joins at 1000; a revokes at its JoinGroup 1010, b at 1020; a's response 1045 (GroupMetadata after its
    # SyncGroup at 1040), b's 1050, c's 1060. Nobody owns anything in [1020, 1045): stopped 25.
    # Unowned: t0,t1 1010..1045 = 35 each, t2 1020..1050 = 30, t3 1020..1060 = 40: 140. t3 b->c moved 1;
    # sizes 2,1,1: balance 1
    (("A", "eager", 2), (2, "member-joined", 1000, 1060, 60, "stable", False, 2, 3, 4, 4, 1, 1, 25, 140, "range")),
    # c expires at 2000 (its t3 unowned from then); a rejoins 2100, b 2150; a's response 2160, b's 2170.
    # Stopped [2150, 2160): 10. Unowned: t0,t1 2100..2160 = 60 each, t2 2150..2170 = 20, t3 2000..2160 = 160: 300.
    # t3 c->a moved; sizes 3,1: balance 2
    (("A", "eager", 3), (3, "session-expired", 2000, 2170, 170, "stable", False, 3, 2, 4, 4, 1, 2, 10, 300,
                         "range")),
    # coop: x gets u0,u1, y nothing (balance 2); end = y's SyncGroup at 140; u0,u1 unowned until 130: 60
    (("A", "coop", 1), (1, "member-joined", 100, 140, 40, "stable", True, 0, 2, 0, 2, 0, 2, None, 60,
                        "cooperative-sticky")),
    # x gives up u1 (revoked 1) at its new assignment (1020); nobody gains it (assigned 0, moved 0); sizes 1,0.
    # Cooperative: never "whole group stopped" (None). Unowned in [1000,1030]: u1 1020..1030 = 10
    (("A", "coop", 2), (2, "member-rejoined", 1000, 1030, 30, "stable", False, 2, 2, 1, 0, 0, 1, None, 10,
                        "cooperative-sticky")),
    # y gains u1 (assigned 1; last owner x: moved 1); sizes 1,1. Unowned in [1100,1125]: u1 until y's 1125: 25
    (("A", "coop", 3), (3, "member-rejoined", 1100, 1125, 25, "stable", False, 2, 2, 0, 1, 1, 0, None, 25,
                        "cooperative-sticky")),
    # B: p alone: t0,t1 unowned 0..20: 40
    (("B", "eager", 1), (1, "member-joined", 0, 20, 20, "stable", True, 0, 1, 0, 2, 0, 0, None, 40, "sticky")),
    # q joins 500; p revokes at 510, gets t0 back at 520; q gets t1 at 530. Stopped [510,520): 10.
    # Unowned: t0 510..520 = 10, t1 510..530 = 20: 30. t1 p->q moved
    (("B", "eager", 2), (2, "member-joined", 500, 530, 30, "stable", False, 1, 2, 2, 2, 1, 0, 10, 30, "sticky")),
    # q leaves 800 (its t1 unowned from then); p rejoins 805; Stable at 815 (p's SyncGroup 815).
    # Stopped [805,815): 10. Unowned: t0 805..815 = 10, t1 800..815 = 15: 25. t1 q->p moved
    (("B", "eager", 3), (3, "member-left", 800, 815, 15, "stable", False, 2, 1, 2, 2, 1, 0, 10, 25, "sticky")),
    # p leaves at 900, the join phase completes with nobody: Empty at 900 (a zero-length rebalance)
    (("B", "eager", 4), (4, "member-left", 900, 900, 0, "empty", False, 1, 0, 2, 0, 0, None, 0, 0, None)),
]


@pytest.mark.parametrize("key,exp", EXPECTED_REBALANCES,
                         ids=[f"{k[0]}-{k[1]}-{k[2]}" for k, _ in EXPECTED_REBALANCES])
def test_rebalance_rows(analyzed, key, exp):
    r = rb(analyzed, *key)
    names = ("generation_id", "trigger", "start_ms", "end_ms", "duration_ms", "outcome", "from_empty",
             "members_before", "members_after", "partitions_revoked", "partitions_assigned", "partitions_moved",
             "balance", "group_stopped_ms", "unowned_partition_ms", "assignor")
    assert {n: r[n] for n in names} == dict(zip(names, exp))


def test_unfinished_rebalance_and_counts(analyzed):
    # r joins the Empty group at 950 and the log ends at 1000 before its join phase completes: t0,t1 unowned
    # 950..1000 = 50 each
    r = rb(analyzed, "B", "eager", 5)
    assert (r["outcome"], r["start_ms"], r["end_ms"], r["group_stopped_ms"], r["members_before"],
            r["partitions_before"], r["from_empty"], r["unowned_partition_ms"]) == \
        ("unfinished", 950, None, None, 0, 0, True, 100)
    assert len(_rows(analyzed.data["rebalances"], run="/A")) == 6
    assert len(_rows(analyzed.data["rebalances"], run="/B")) == 5
    assert {r["protocol"] for r in _rows(analyzed.data["rebalances"], run="/A", group_id="coop")} == {"cooperative"}
    assert {r["protocol"] for r in _rows(analyzed.data["rebalances"], run="/A", group_id="eager")} == {"eager"}


# (run, group, member): owner, lifetime, without partitions, rebalances joined, session expiries
EXPECTED_MEMBERS = [
    # a: 100..5000 = 4900; owns [150,1010) [1045,2100) [2160,5000); gaps 50 + 35 + 60 = 145
    (("A", "eager", "a"), ("a", 4900, 145, 3, 0)),
    # b: owns [160,1020) [1050,2150) [2170,5000); gaps 60 + 30 + 20 = 110
    (("A", "eager", "b"), ("b", 4900, 110, 3, 0)),
    # c: 1000..2000 (expired) = 1000; owns [1060,2000): 60 without
    (("A", "eager", "c"), ("c", 1000, 60, 1, 1)),
    # x (cooperative keeps partitions while rejoining): owns from its response at 130 to the end: 30 without
    (("A", "coop", "x"), ("x", 4900, 30, 3, 0)),
    # y: nothing until generation 3 (response 1125): 1125 - 100 = 1025 without
    (("A", "coop", "y"), ("y", 4900, 1025, 3, 0)),
    # p: 0..900 (left); owns [20,510) [520,805) [815,900); gaps 20 + 10 + 10 = 40
    (("B", "eager", "p"), ("p", 900, 40, 3, 0)),
    # q: 500..800; owns [530,800): 30 without
    (("B", "eager", "q"), ("q", 300, 30, 1, 0)),
    # r: 950..1000 (end of log), never assigned
    (("B", "eager", "r"), ("r", 50, 50, 0, 0)),
    # static member i1's first member id: 0..1000 (fenced by m3); owns [20,1000)
    (("C", "static", "m1"), ("i1", 1000, 20, 1, 0)),
    # its second member id: 1000..2000, owns from its SyncGroup at 1010: 10 without
    (("C", "static", "m3"), ("i1", 1000, 10, 0, 0)),
]


@pytest.mark.parametrize("key,exp", EXPECTED_MEMBERS, ids=[f"{k[0]}-{k[1]}-{k[2]}" for k, _ in EXPECTED_MEMBERS])
def test_member_rows(analyzed, key, exp):
    run, group, mid = key
    m = _one(analyzed.data["members"], run=f"/{run}", group_id=group, member_id=mid)
    assert (m["owner"], m["lifetime_ms"], m["without_partitions_ms"], m["rebalances_joined"],
            m["session_expiries"]) == exp
    assert m["client_id"] == "c" + mid


# (run, group, topic, partition): unowned ms, distinct owners; window = the start of the first rebalance that
# assigned it .. the end of the log
EXPECTED_PARTITIONS = [
    (("A", "eager", "t", 0), (145, 1)),     # a's gaps: 50 + 35 + 60
    (("A", "eager", "t", 1), (145, 1)),
    (("A", "eager", "t", 2), (110, 1)),     # b's gaps: 60 + 30 + 20
    (("A", "eager", "t", 3), (260, 3)),     # 4900 - (860 b + 940 c + 2840 a)
    (("A", "coop", "u", 0), (30, 1)),       # x from 130
    (("A", "coop", "u", 1), (135, 2)),      # 4900 - (890 x + 3875 y)
    (("B", "eager", "t", 0), (140, 1)),     # 1000 - (490 + 285 + 85)
    (("B", "eager", "t", 1), (155, 2)),     # 1000 - (490 p + 270 q + 85 p)
    # the static restart: m1 [20,1000), m3 [1010,2000) -- one owner, i1; unowned 20 + 10
    (("C", "static", "v", 0), (30, 1)),
    (("C", "static", "v", 1), (25, 1)),     # m2 from 25
]


@pytest.mark.parametrize("key,exp", EXPECTED_PARTITIONS,
                         ids=[f"{k[0]}-{k[1]}-{k[2]}{k[3]}" for k, _ in EXPECTED_PARTITIONS])
def test_partition_rows(analyzed, key, exp):
    run, group, topic, p = key
    row = _one(analyzed.data["partitions"], run=f"/{run}", group_id=group, topic=topic, partition=p)
    assert (row["unowned_ms"], row["owners"]) == exp


def test_static_restart_is_one_owner(analyzed):
    """KIP-345: the restarted static member keeps its identity; its partition keeps one owner and nothing moves."""
    own = _rows(analyzed.data["ownership"], run="/C", group_id="static", topic="v", partition=0)
    assert sorted((o["owner"], o["member_id"], o["from_ms"], o["to_ms"]) for o in own) == \
        [("i1", "m1", 20, 1000), ("i1", "m3", 1010, 2000)]
    assert [r["rebalance_no"] for r in _rows(analyzed.data["rebalances"], run="/C")] == [1]


# (run, group): protocol, assignor, static members, members (owners), partitions, rebalances, completed,
# from Empty, while consuming, whole group stopped (total, max), unowned partition-ms while consuming, per
# partition, moved, revoked, mean balance, session expiries, first assignment
EXPECTED_GROUPS = [
    # stopped 25 + 10; unowned from the first Stable (160) to the end: t0,t1 35 + 60, t2 30 + 20, t3 40 + 160 = 440
    (("A", "eager"), ("eager", "range", 0, 3, 4, 3, 3, 1, 2, 35, 25, 440, 110.0, 2, 8, 1.0, 1, 60)),
    # cooperative: never stops the whole group; u1 unowned 1020..1125 (between the two rounds too) = 105
    (("A", "coop"), ("cooperative", "cooperative-sticky", 0, 2, 2, 3, 3, 1, 2, None, None, 105, 52.5, 1, 1, 1.0, 0,
                     40)),
    # consuming from 20 until Empty at 900: t0 10 + 10, t1 20 + 15 = 55 (the Empty time and the restart do not
    # count); stopped 10 + 10 + 0; revoked 2 + 2 + 2
    (("B", "eager"), ("eager", "sticky", 0, 3, 2, 5, 3, 2, 3, 20, 10, 55, 27.5, 2, 6, 0.0, 0, 20)),
    # the static restart is no rebalance; v0 unowned 1000..1010 while consuming
    (("C", "static"), ("eager", "range", 2, 2, 2, 1, 1, 1, 0, 0, 0, 10, 5.0, 0, 0, 0.0, 0, 25)),
]


@pytest.mark.parametrize("key,exp", EXPECTED_GROUPS, ids=[f"{k[0]}-{k[1]}" for k, _ in EXPECTED_GROUPS])
def test_group_rows(analyzed, key, exp):
    run, group = key
    g = _one(analyzed.data["groups"], run=f"/{run}", group_id=group)
    names = ("protocol", "assignor", "static_members", "members", "partitions", "rebalances", "completed",
             "from_empty", "rebalances_while_consuming", "group_stopped_ms", "max_group_stopped_ms",
             "unowned_partition_ms", "unowned_ms_per_partition", "partitions_moved", "partitions_revoked",
             "mean_balance", "session_expiries", "first_assignment_ms")
    assert {n: g[n] for n in names} == dict(zip(names, exp))


def test_groups_are_never_pooled(analyzed):
    """Two groups with the same assignor in one run (and runs of one scenario) stay separate rows."""
    rows = [(g["run"].rsplit("/", 1)[-1], g["group_id"]) for g in analyzed.data["groups"]]
    assert sorted(rows) == sorted([("A", "eager"), ("A", "coop"), ("B", "eager"), ("C", "static"),
                                   ("sticky", "sticky"), ("sticky", "roundrobin")])
    assert len(rows) == len(set(rows))


def test_matches_the_runner_on_a_real_scenario(analyzed, logs_dir):
    """The scenario runner counts rebalances and moves from the records on its own; on a run without restarts
    both must agree with the analysis."""
    summary = logs_dir["_real"].summary
    for gid, g in summary["groups"].items():
        got = sorted((r["generation_id"], r["partitions_moved"], r["duration_ms"])
                     for r in _rows(analyzed.data["rebalances"], run="/sticky", group_id=gid))
        want = sorted((x["generation"], x["partitions_moved"] or 0, x["duration_ms"]) for x in g["generations"])
        assert got == want
        assert _one(analyzed.data["groups"], run="/sticky", group_id=gid)["rebalances"] == g["rebalances"]
    # the library's point: sticky moves only the leaver's 3 partitions, roundrobin reshuffles 5
    moved = {r["group_id"]: r["partitions_moved"] for r in _rows(analyzed.data["rebalances"], run="/sticky")
             if r["rebalance_no"] == 2}
    assert moved == {"sticky": 3, "roundrobin": 5}
