"""Every metric on the hand-made logs of hand_logs.py; the expected values are worked out by hand here (each
comment shows the arithmetic), not produced by the code under test."""

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


# (run, group, no): generation, trigger, start, stw_start, end, duration, stw, outcome, members before/after,
# revoked, assigned, moved, balance, assignor
EXPECTED_REBALANCES = [
    # eager: a,b join at 100; last SyncGroup response b at 160 (GroupMetadata 150): 160-100 = 60. t0,t1 | t2,t3
    (("A", "eager", 1), (1, "member-joined", 100, 100, 160, 60, 60, "stable", 0, 2, 0, 4, 0, 0, "range")),
    # c joins at 1000; last sync c at 1060: 60. Eager revokes all 4, hands out all 4; t3 b->c moved: 1;
    # sizes 2,1,1: balance 2-1 = 1
    (("A", "eager", 2), (2, "member-joined", 1000, 1000, 1060, 60, 60, "stable", 2, 3, 4, 4, 1, 1, "range")),
    # c expires at 2000; first JoinGroup a at 2100; last sync b at 2170: duration 170, stw 70; t3 c->a: 1;
    # sizes 3,1: balance 2
    (("A", "eager", 3), (3, "session-expired", 2000, 2100, 2170, 170, 70, "stable", 3, 2, 4, 4, 1, 2, "range")),
    # coop: x gets u0,u1, y nothing: balance 2; end = y's sync at 140
    (("A", "coop", 1), (1, "member-joined", 100, 100, 140, 40, 40, "stable", 0, 2, 0, 2, 0, 2,
                        "cooperative-sticky")),
    # x gives up u1 (revoked 1), nobody gains (assigned 0), u1 unowned so not moved; sizes 1,0: balance 1
    (("A", "coop", 2), (2, "member-rejoined", 1000, 1000, 1030, 30, 30, "stable", 2, 2, 1, 0, 0, 1,
                        "cooperative-sticky")),
    # y gains u1 (assigned 1); its last owner was x: moved 1; sizes 1,1: balance 0; end y's sync 1125
    (("A", "coop", 3), (3, "member-rejoined", 1100, 1100, 1125, 25, 25, "stable", 2, 2, 0, 1, 1, 0,
                        "cooperative-sticky")),
    (("B", "eager", 1), (1, "member-joined", 0, 0, 20, 20, 20, "stable", 0, 1, 0, 2, 0, 0, "sticky")),
    # q joins at 500, last sync q 530; eager revokes p's 2; t1 p->q moved 1
    (("B", "eager", 2), (2, "member-joined", 500, 500, 530, 30, 30, "stable", 1, 2, 2, 2, 1, 0, "sticky")),
    # q leaves at 800; p rejoins at 805 (stw start); stable at 815: duration 15, stw 10; t1 q->p moved 1
    (("B", "eager", 3), (3, "member-left", 800, 805, 815, 15, 10, "stable", 2, 1, 2, 2, 1, 0, "sticky")),
    # p leaves at 900, the join phase completes with nobody: Empty at 900; p's 2 partitions revoked, none assigned
    (("B", "eager", 4), (4, "member-left", 900, 900, 900, 0, 0, "empty", 1, 0, 2, 0, 0, None, None)),
]


@pytest.mark.parametrize("key,exp", EXPECTED_REBALANCES, ids=[f"{k[0]}-{k[1]}-{k[2]}" for k, _ in EXPECTED_REBALANCES])
def test_rebalance_rows(analyzed, key, exp):
    r = rb(analyzed, *key)
    names = ("generation_id", "trigger", "start_ms", "stw_start_ms", "end_ms", "duration_ms", "stw_ms", "outcome",
             "members_before", "members_after", "partitions_revoked", "partitions_assigned", "partitions_moved",
             "balance", "assignor")
    assert {n: r[n] for n in names} == dict(zip(names, exp))


def test_unfinished_rebalance_and_counts(analyzed):
    # r joins the empty group at 950 and the log ends at 1000 before its join phase completes
    r = rb(analyzed, "B", "eager", 5)
    assert (r["outcome"], r["start_ms"], r["end_ms"], r["stw_ms"], r["members_before"], r["partitions_before"]) == \
        ("unfinished", 950, None, None, 0, 0)
    assert len(_rows(analyzed.data["rebalances"], run="/A")) == 6
    assert len(_rows(analyzed.data["rebalances"], run="/B")) == 5
    assert {r["protocol"] for r in _rows(analyzed.data["rebalances"], run="/A", group_id="coop")} == {"cooperative"}
    assert {r["protocol"] for r in _rows(analyzed.data["rebalances"], run="/A", group_id="eager")} == {"eager"}


# (run, group, member): lifetime, without partitions, rebalances joined, session expiries
EXPECTED_MEMBERS = [
    # a: 100..5000 = 4900; owns [150,1010) [1045,2100) [2160,5000); gaps 50 + 35 + 60 = 145
    (("A", "eager", "a"), (4900, 145, 3, 0)),
    # b: owns [160,1020) [1050,2150) [2170,5000); gaps 60 + 30 + 20 = 110
    (("A", "eager", "b"), (4900, 110, 3, 0)),
    # c: 1000..2000 (expired) = 1000; owns [1060,2000): 60 without
    (("A", "eager", "c"), (1000, 60, 1, 1)),
    # x (cooperative keeps partitions while rejoining): owns from its sync at 130 to the end: 30 without
    (("A", "coop", "x"), (4900, 30, 3, 0)),
    # y: nothing until gen 3 (sync 1125): 1125 - 100 = 1025 without
    (("A", "coop", "y"), (4900, 1025, 3, 0)),
    # p: 0..900 (left); owns [20,510) [520,805) [815,900); gaps 20 + 10 + 10 = 40
    (("B", "eager", "p"), (900, 40, 3, 0)),
    # q: 500..800; owns [530,800): 30 without
    (("B", "eager", "q"), (300, 30, 1, 0)),
    # r: 950..1000 (end of log), never assigned
    (("B", "eager", "r"), (50, 50, 0, 0)),
]


@pytest.mark.parametrize("key,exp", EXPECTED_MEMBERS, ids=[f"{k[0]}-{k[1]}-{k[2]}" for k, _ in EXPECTED_MEMBERS])
def test_member_rows(analyzed, key, exp):
    run, group, mid = key
    m = _one(analyzed.data["members"], run=f"/{run}", group_id=group, member_id=mid)
    assert (m["lifetime_ms"], m["without_partitions_ms"], m["rebalances_joined"], m["session_expiries"]) == exp
    assert m["client_id"] == "c" + mid


# (run, group, topic, partition): unowned ms, distinct owners; window = first rebalance .. end of log
EXPECTED_PARTITIONS = [
    (("A", "eager", "t", 0), (145, 1)),     # a's gaps: 50 + 35 + 60
    (("A", "eager", "t", 1), (145, 1)),
    (("A", "eager", "t", 2), (110, 1)),     # b's gaps: 60 + 30 + 20
    (("A", "eager", "t", 3), (260, 3)),     # 4900 - (860 b + 940 c + 2840 a)
    (("A", "coop", "u", 0), (30, 1)),       # x from 130
    (("A", "coop", "u", 1), (135, 2)),      # 4900 - (890 x + 3875 y)
    (("B", "eager", "t", 0), (140, 1)),     # 1000 - (490 + 285 + 85)
    (("B", "eager", "t", 1), (155, 2)),     # 1000 - (490 p + 270 q + 85 p)
]


@pytest.mark.parametrize("key,exp", EXPECTED_PARTITIONS, ids=[f"{k[0]}-{k[1]}-{k[2]}{k[3]}" for k, _ in EXPECTED_PARTITIONS])
def test_partition_rows(analyzed, key, exp):
    run, group, topic, p = key
    row = _one(analyzed.data["partitions"], run=f"/{run}", group_id=group, topic=topic, partition=p)
    assert (row["unowned_ms"], row["owners"]) == exp


def test_assignor_comparison(analyzed):
    rows = {r["assignor"]: r for r in analyzed.data["assignors"] if r["scenario"] == "cmp"}
    assert set(rows) == {"range", "cooperative-sticky", "sticky"}
    r = rows["range"]          # stable rebalances of A/eager: stw 60, 60, 70
    assert (r["runs"], r["groups"], r["rebalances"], r["total_stw_ms"], r["max_stw_ms"]) == (1, 1, 3, 190, 70)
    assert r["mean_stw_ms"] == pytest.approx(190 / 3)
    assert r["p50_stw_ms"] == 60
    assert r["p95_stw_ms"] == pytest.approx(69.0)     # linear: 60 + 0.9 * (70 - 60)
    assert (r["partitions_moved"], r["partitions_revoked"], r["max_balance"]) == (2, 8, 2)
    assert r["mean_balance"] == pytest.approx(1.0)     # (0 + 1 + 2) / 3
    assert r["mean_unowned_ms_per_partition"] == pytest.approx(165.0)   # (145 + 145 + 110 + 260) / 4
    c = rows["cooperative-sticky"]   # stw 40, 30, 25; revoked 0 + 1 + 0
    assert (c["total_stw_ms"], c["partitions_moved"], c["partitions_revoked"]) == (95, 1, 1)
    assert c["mean_unowned_ms_per_partition"] == pytest.approx(82.5)    # (30 + 135) / 2
    s = rows["sticky"]             # B's stable rebalances: stw 20, 30, 10; the empty one is not counted
    assert (s["rebalances"], s["total_stw_ms"], s["partitions_moved"], s["partitions_revoked"]) == (3, 60, 2, 4)
    assert s["mean_unowned_ms_per_partition"] == pytest.approx(147.5)   # (140 + 155) / 2


def test_matches_the_runner_on_a_real_scenario(analyzed, logs_dir):
    """The scenario runner computes partitions moved (by client id) and generation durations on its own; on a run
    without restarts both must agree with the analysis."""
    summary = logs_dir["_real"].summary
    for gid, g in summary["groups"].items():
        got = sorted((r["generation_id"], r["partitions_moved"], r["duration_ms"])
                     for r in _rows(analyzed.data["rebalances"], run="/sticky", group_id=gid))
        want = sorted((x["generation"], x["partitions_moved"] or 0, x["duration_ms"]) for x in g["generations"])
        assert got == want
    # the library's point: sticky moves only the leaver's 3 partitions, roundrobin reshuffles 5
    moved = {r["group_id"]: r["partitions_moved"] for r in _rows(analyzed.data["rebalances"], run="/sticky")
             if r["rebalance_no"] == 2}
    assert moved == {"sticky": 3, "roundrobin": 5}
