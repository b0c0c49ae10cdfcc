"""kgroup/watch.py's inference, poll by poll (no I/O): which observed records each change between two views gives,
and that analysis.fold reads them as the coordinator records they stand for (the ownership a watcher's log gives
equals the one the coordinator's log gives for the same assignments)."""

from __future__ import annotations

from analysis.fold import OBSERVED_AS, fold_group
from kgroup.watch import GroupTracker, GroupView, MemberView
from protocol.consumer_protocol import decode_assignment


def view(state: str, assignment: dict[str, list[int]], committed: dict[int, int] | None = None,
         ends: dict[int, int] | None = None, epoch: int | None = None, group_type: str = "classic") -> GroupView:
    members = {m: MemberView(m, None, m.split("-")[0], "/127.0.0.1", tuple(("t", p) for p in ps))
               for m, ps in assignment.items()}
    return GroupView("g", state, "consumer", "range", group_type, 0, members,
                     {("t", p): o for p, o in (committed or {}).items()},
                     {("t", p): o for p, o in (ends or {}).items()}, epoch, epoch)


def types(records) -> list[str]:
    return [t for t, _ in records]


def test_a_group_seen_from_its_start_to_empty() -> None:
    tr = GroupTracker("g")
    assert tr.observe(0, None) == []                                        # not there yet
    r = tr.observe(100, view("PreparingRebalance", {"a-1": []}))
    assert types(r) == ["ObservedSnapshot", "ObservedMemberJoined", "ObservedRebalance"]
    assert r[2][1]["initial"] is True and r[2][1]["reason"] == "observed: member joined a-1"
    r = tr.observe(200, view("Stable", {"a-1": [0, 1]}, committed={0: 3}, ends={0: 10, 1: 4}))
    assert types(r) == ["ObservedSnapshot", "ObservedGeneration", "ObservedCommit"]
    gen = r[1][1]
    assert gen["generation_id"] == 1 and gen["moved"] == [] and gen["previous_poll_ms"] == 100
    (m,) = gen["members"]
    assert decode_assignment(bytes.fromhex(m["assignment"]["hex"]))[1].assigned_partitions == [("t", [0, 1])]
    assert r[2][1] == {"group_id": "g", "previous_poll_ms": 100, "topic": "t", "partition": 0, "offset": 3,
                       "log_end_offset": 10, "lag": 7}
    # nothing changed: nothing written (the same commit is not repeated)
    assert tr.observe(300, view("Stable", {"a-1": [0, 1]}, committed={0: 3}, ends={0: 12, 1: 4})) == []
    # b joins and takes partition 1 between two polls: joined, a rebalance, a new generation with one move
    r = tr.observe(400, view("Stable", {"a-1": [0], "b-1": [1]}))
    assert types(r) == ["ObservedSnapshot", "ObservedMemberJoined", "ObservedRebalance", "ObservedGeneration"]
    assert r[3][1]["generation_id"] == 2
    assert r[3][1]["moved"] == [{"topic": "t", "partition": 1, "from": "a-1", "to": "b-1"}]
    # a leaves: seen rebalancing first, then Stable
    r = tr.observe(500, view("PreparingRebalance", {"b-1": [1]}))
    assert types(r) == ["ObservedSnapshot", "ObservedMemberLeft", "ObservedRebalance"]
    assert r[2][1]["reason"] == "observed: member left a-1"
    r = tr.observe(600, view("Stable", {"b-1": [0, 1]}))
    assert types(r) == ["ObservedSnapshot", "ObservedGeneration"]
    assert r[1][1]["moved"] == [{"topic": "t", "partition": 0, "from": "a-1", "to": "b-1"}]
    # b leaves: Empty
    r = tr.observe(700, view("Empty", {}))
    assert types(r) == ["ObservedSnapshot", "ObservedMemberLeft", "ObservedRebalance", "ObservedEmpty"]
    assert r[3][1]["generation_id"] == 4
    # deleted
    r = tr.observe(800, None)
    assert types(r) == ["ObservedGroupGone"]


def test_a_stable_group_found_mid_way_and_kip848_epochs() -> None:
    tr = GroupTracker("g")
    r = tr.observe(0, view("Stable", {"a-1": [0], "b-1": [1]}, epoch=5, group_type="consumer"))
    # found Stable: no rebalance, its assignment as the baseline generation (the group epoch of a KIP-848 group)
    assert types(r) == ["ObservedSnapshot", "ObservedGeneration"] and r[1][1]["generation_id"] == 5
    r = tr.observe(100, view("Reconciling", {"a-1": [0], "b-1": [1], "c-1": []}, epoch=6, group_type="consumer"))
    assert types(r) == ["ObservedSnapshot", "ObservedMemberJoined", "ObservedRebalance"]
    r = tr.observe(200, view("Stable", {"a-1": [0], "b-1": [1], "c-1": [2]}, epoch=6, group_type="consumer"))
    assert r[-1][0] == "ObservedGeneration" and r[-1][1]["generation_id"] == 6


def _as_entries(records_by_poll: list[tuple[int, list]]) -> list[tuple]:
    """Observed records as the fold's input tuples (analysis.load's projection)."""
    import json
    rows, lo = [], 0
    for ts, recs in records_by_poll:
        for typ, d in recs:
            members = None
            if typ in ("ObservedGeneration", "ObservedEmpty"):
                members = [json.dumps(m) for m in d["members"]]
            rows.append(("run", "g", ts, -1, lo, typ, d.get("member_id"), d.get("group_instance_id"),
                         d.get("client_id"), None, None, d.get("generation_id"), d.get("reason"), d.get("initial"),
                         members, d.get("protocol_name")))
            lo += 1
    return rows


def test_fold_reads_observed_records_as_coordinator_records() -> None:
    assert set(OBSERVED_AS.values()) <= {"RebalanceStarted", "MemberJoined", "MemberRemoved", "GroupMetadata",
                                         "JoinCompleted", "GroupTombstone"}
    tr = GroupTracker("g")
    polls = [(1000, view("PreparingRebalance", {"a-1": []})), (1100, view("Stable", {"a-1": [0, 1]})),
             (2000, view("Stable", {"a-1": [0], "b-1": [1]})), (3000, view("Stable", {"b-1": [0, 1]})),
             (4000, view("Empty", {}))]
    rows = _as_entries([(ts, tr.observe(ts, v)) for ts, v in polls])
    out = fold_group("run", "g", rows, 5000)
    rb = out["rebalances"]
    # the start from Empty, b joining, a leaving, the group emptying
    assert [r[6] for r in rb] == ["member-joined", "member-joined", "member-left", "member-left"]
    assert [r[13] for r in rb] == ["stable", "stable", "stable", "empty"]
    assert [r[11] for r in rb] == [1100, 2000, 3000, 4000]          # end_ms: the poll that saw the result
    own = sorted((o[3], o[4], o[7], o[8]) for o in out["ownership"])
    assert own == [(0, "a-1", 1100, 2000), (0, "a-1", 2000, 3000), (0, "b-1", 3000, 4000),
                   (1, "a-1", 1100, 2000), (1, "b-1", 2000, 3000), (1, "b-1", 3000, 4000)]


def test_a_group_that_appears_between_two_polls_started_from_empty() -> None:
    tr = GroupTracker("g")
    assert tr.observe(0, None) == []                                        # no such group at the first poll
    r = tr.observe(100, view("Stable", {"a-1": [0], "b-1": [1]}))
    assert types(r) == ["ObservedSnapshot", "ObservedMemberJoined", "ObservedMemberJoined", "ObservedRebalance",
                        "ObservedGeneration"]
    assert r[3][1]["initial"] is True and r[4][1]["generation_id"] == 1
    # a group found Stable at the very first poll is a baseline (no rebalance, nobody joined)
    tr = GroupTracker("g")
    assert types(tr.observe(0, view("Stable", {"a-1": [0]}))) == ["ObservedSnapshot", "ObservedGeneration"]
    # listed only after the first poll (kgroup watch without --group): it appeared while watched
    tr = GroupTracker("g", absent_before=True)
    assert "ObservedRebalance" in types(tr.observe(0, view("Stable", {"a-1": [0]})))
