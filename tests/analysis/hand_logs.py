"""Tiny rebalance logs written by hand with the coordinator's own record classes, and the values every metric
must take on them, worked out by hand (see the comments beside each record). Run ``A`` has an eager group
(``eager``, assignor range) and a cooperative one (``coop``); run ``B`` a group that grows, shrinks, empties and
starts again (assignor sticky). Both belong to scenario ``cmp``. Run ``C`` (scenario ``static-restart``) has a
static member that restarts without a rebalance; :func:`write_serve_dir` lays it out as a ``kgroup serve
--data-dir`` with wall-clock timestamps.
"""

from __future__ import annotations

import json
from pathlib import Path

from coordinator import records as R
from protocol.consumer_protocol import ConsumerProtocolAssignment, encode_assignment


def assignment(parts: dict[str, list[int]]) -> bytes:
    return encode_assignment(ConsumerProtocolAssignment(assigned_partitions=[(t, ps) for t, ps in parts.items()]))


def member(mid: str, parts: dict[str, list[int]], client: str | None = None,
           instance: str | None = None) -> R.MemberMetadata:
    return R.MemberMetadata(member_id=mid, group_instance_id=instance, client_id=client or "c" + mid,
                            client_host="/10.0.0.1", rebalance_timeout_ms=30000, session_timeout_ms=10000,
                            subscription=b"", assignment=assignment(parts))


class Log:
    def __init__(self) -> None:
        self.entries: list[R.LogEntry] = []
        self.offsets: dict[int, int] = {}

    def add(self, ts: int, record: R.Record, lp: int = 0) -> None:
        off = self.offsets.get(lp, 0)
        self.offsets[lp] = off + 1
        self.entries.append(R.LogEntry(lp, off, ts, record))

    def write(self, d: Path, scenario: str, seed: int) -> Path:
        d.mkdir(parents=True, exist_ok=True)
        lines = [json.dumps(e.to_dict(), sort_keys=True)
                 for e in sorted(self.entries, key=lambda e: (e.timestamp_ms, e.partition, e.offset))]
        (d / "events.jsonl").write_text("".join(x + "\n" for x in lines), encoding="utf-8")
        (d / "summary.json").write_text(json.dumps({"scenario": scenario, "seed": seed}), encoding="utf-8")
        return d


def joined(g, m, client=None, reason="x", instance=None):
    return R.MemberJoined(group_id=g, member_id=m, group_instance_id=instance, client_id=client or "c" + m,
                          client_host="/10.0.0.1",
                          rebalance_timeout_ms=30000, session_timeout_ms=10000, protocol_type="consumer",
                          reason=reason)


def rejoined(g, m):
    return R.MemberRejoined(group_id=g, member_id=m, rebalance_timeout_ms=30000, session_timeout_ms=10000,
                            reason="rejoin")


def started(g, gen, reason, initial=False):
    return R.RebalanceStarted(group_id=g, initial=initial, generation_id=gen, reason=reason)


def completed(g, gen, members, proto):
    return R.JoinCompleted(group_id=g, generation_id=gen, protocol_name=proto,
                           leader=members[0] if members else None, members=tuple(members))


def stable(g, gen, proto, members):
    return R.GroupMetadata(group_id=g, protocol_type="consumer", generation_id=gen, protocol_name=proto,
                           leader=members[0].member_id if members else None, members=tuple(members))


def sync(g, m, gen):
    return R.SyncReceived(group_id=g, member_id=m, generation_id=gen)


def run_a() -> Log:
    L = Log()
    g = "eager"
    # --- group "eager" (range, eager protocol), log partition 0, topic t with 4 partitions ------------------
    L.add(100, R.GroupMetadata(group_id=g, generation_id=0))                  # created: empty, not a rebalance end
    L.add(100, joined(g, "a"))
    L.add(100, started(g, 0, "Adding new member a with group instance id None; client reason: x", initial=True))
    L.add(100, joined(g, "b"))
    L.add(130, completed(g, 1, ["a", "b"], "range"))
    L.add(140, sync(g, "a", 1))
    L.add(150, stable(g, 1, "range", [member("a", {"t": [0, 1]}), member("b", {"t": [2, 3]})]))
    L.add(160, sync(g, "b", 1))                                               # rebalance 1 ends at 160
    L.add(1000, joined(g, "c"))
    L.add(1000, started(g, 1, "Adding new member c with group instance id None; client reason: x"))
    L.add(1010, rejoined(g, "a"))                                             # a revokes t0,t1 at 1010
    L.add(1020, rejoined(g, "b"))                                             # b revokes t2,t3 at 1020
    L.add(1030, completed(g, 2, ["a", "b", "c"], "range"))
    L.add(1040, sync(g, "a", 2))
    L.add(1045, stable(g, 2, "range", [member("a", {"t": [0, 1]}), member("b", {"t": [2]}),
                                       member("c", {"t": [3]})]))
    L.add(1050, sync(g, "b", 2))
    L.add(1060, sync(g, "c", 2))                                              # rebalance 2 ends at 1060
    L.add(2000, R.MemberRemoved(group_id=g, member_id="c", new_leader="a",
                                reason="removing member c on heartbeat expiration."))
    L.add(2000, started(g, 2, "removing member c on heartbeat expiration."))
    L.add(2100, rejoined(g, "a"))
    L.add(2150, rejoined(g, "b"))
    L.add(2150, completed(g, 3, ["a", "b"], "range"))
    L.add(2160, stable(g, 3, "range", [member("a", {"t": [0, 1, 3]}), member("b", {"t": [2]})]))
    L.add(2160, sync(g, "a", 3))
    L.add(2170, sync(g, "b", 3))                                              # rebalance 3 ends at 2170
    # --- group "coop" (cooperative-sticky), log partition 1, topic u with 2 partitions ---------------------
    c = "coop"
    P = "cooperative-sticky"
    L.add(100, joined(c, "x"), 1)
    L.add(100, started(c, 0, "Adding new member x with group instance id None; client reason: x", True), 1)
    L.add(100, joined(c, "y"), 1)
    L.add(120, completed(c, 1, ["x", "y"], P), 1)
    L.add(130, sync(c, "x", 1), 1)
    L.add(130, stable(c, 1, P, [member("x", {"u": [0, 1]}), member("y", {})]), 1)
    L.add(140, sync(c, "y", 1), 1)                                            # rebalance 1 ends at 140
    L.add(1000, rejoined(c, "y"), 1)
    L.add(1000, started(c, 1, "Member y is joining group during Stable; client reason: x"), 1)
    L.add(1010, rejoined(c, "x"), 1)
    L.add(1010, completed(c, 2, ["x", "y"], P), 1)
    L.add(1020, sync(c, "x", 2), 1)
    L.add(1020, stable(c, 2, P, [member("x", {"u": [0]}), member("y", {})]), 1)   # x gives up u1
    L.add(1030, sync(c, "y", 2), 1)                                           # rebalance 2 ends at 1030
    L.add(1100, rejoined(c, "x"), 1)
    L.add(1100, started(c, 2, "Leader x re-joining group during Stable; client reason: y"), 1)
    L.add(1110, rejoined(c, "y"), 1)
    L.add(1110, completed(c, 3, ["x", "y"], P), 1)
    L.add(1120, sync(c, "x", 3), 1)
    L.add(1120, stable(c, 3, P, [member("x", {"u": [0]}), member("y", {"u": [1]})]), 1)
    L.add(1125, sync(c, "y", 3), 1)                                           # rebalance 3 ends at 1125
    # the last record of the run: its end is 5000
    L.add(5000, R.OffsetCommit(group_id=g, topic="t", partition=0, offset=42, commit_timestamp_ms=5000))
    return L


def run_b() -> Log:
    L = Log()
    g = "eager"
    S = "sticky"
    L.add(0, joined(g, "p"))
    L.add(0, started(g, 0, "Adding new member p with group instance id None; client reason: x", True))
    L.add(10, completed(g, 1, ["p"], S))
    L.add(20, sync(g, "p", 1))
    L.add(20, stable(g, 1, S, [member("p", {"t": [0, 1]})]))                 # rebalance 1: 0..20
    L.add(500, joined(g, "q"))
    L.add(500, started(g, 1, "Adding new member q with group instance id None; client reason: x"))
    L.add(510, rejoined(g, "p"))
    L.add(510, completed(g, 2, ["p", "q"], S))
    L.add(520, sync(g, "p", 2))
    L.add(520, stable(g, 2, S, [member("p", {"t": [0]}), member("q", {"t": [1]})]))
    L.add(530, sync(g, "q", 2))                                               # rebalance 2: 500..530
    L.add(800, R.MemberRemoved(group_id=g, member_id="q", new_leader="p", reason="LeaveGroup; client reason: bye"))
    L.add(800, started(g, 2, "explicit `LeaveGroup` request for (q) members."))
    L.add(805, rejoined(g, "p"))
    L.add(805, completed(g, 3, ["p"], S))
    L.add(815, sync(g, "p", 3))
    L.add(815, stable(g, 3, S, [member("p", {"t": [0, 1]})]))                 # rebalance 3: 800..815
    L.add(900, R.MemberRemoved(group_id=g, member_id="p", new_leader=None, reason="LeaveGroup; client reason: bye"))
    L.add(900, started(g, 3, "explicit `LeaveGroup` request for (p) members."))
    L.add(900, completed(g, 4, [], None))                                     # rebalance 4 ends Empty at 900
    L.add(900, R.GroupMetadata(group_id=g, generation_id=4))
    L.add(950, joined(g, "r"))
    L.add(950, started(g, 4, "Adding new member r with group instance id None; client reason: x", True))
    L.add(1000, R.OffsetCommit(group_id=g, topic="t", partition=0, offset=7, commit_timestamp_ms=1000))
    return L                                                                  # rebalance 5 never finishes


def run_c() -> Log:
    """A static member restarts (KIP-345): a new member id under the same group.instance.id, no rebalance."""
    L = Log()
    g, P = "static", "range"
    L.add(0, joined(g, "m1", instance="i1"))
    L.add(0, started(g, 0, "Adding new member m1 with group instance id i1; client reason: x", True))
    L.add(0, joined(g, "m2", instance="i2"))
    L.add(10, completed(g, 1, ["m1", "m2"], P))
    L.add(20, sync(g, "m1", 1))
    L.add(20, stable(g, 1, P, [member("m1", {"v": [0]}, instance="i1"), member("m2", {"v": [1]}, instance="i2")]))
    L.add(25, sync(g, "m2", 1))                                              # rebalance 1 ends at 25
    # i1 restarts and comes back with a new member id: m1 is fenced, m3 takes over its assignment in Stable
    L.add(1000, R.StaticMemberReplaced(group_id=g, group_instance_id="i1", old_member_id="m1", new_member_id="m3",
                                       rebalance_timeout_ms=30000, session_timeout_ms=30000, awaiting_join=False,
                                       reason="static member i1 rejoined"))
    L.add(1000, stable(g, 1, P, [member("m3", {"v": [0]}, instance="i1"), member("m2", {"v": [1]}, instance="i2")]))
    L.add(1010, sync(g, "m3", 1))                                            # m3 owns v0 from 1010
    L.add(2000, R.OffsetCommit(group_id=g, topic="v", partition=0, offset=3, commit_timestamp_ms=2000))
    return L


def write_all(root: Path) -> dict[str, Path]:
    return {"A": run_a().write(root / "A", "cmp", 1), "B": run_b().write(root / "B", "cmp", 2),
            "C": run_c().write(root / "C", "static-restart", 1)}


def write_serve_dir(d: Path) -> Path:
    """Run C as a ``kgroup serve --data-dir`` would hold it: ``__consumer_offsets-<p>.jsonl`` per partition (most of
    them empty, as the coordinator opens a log for every partition it leads), no summary.json."""
    d.mkdir(parents=True, exist_ok=True)
    log = run_c()
    for p in range(3):
        (d / f"__consumer_offsets-{p}.jsonl").write_text("", encoding="utf-8")
    lines = [json.dumps(e.to_dict(), sort_keys=True) for e in log.entries]
    # wall-clock timestamps, as a real server writes them
    base = 1_795_570_900_000
    shifted = []
    for line in lines:
        rec = json.loads(line)
        rec["timestamp_ms"] += base
        shifted.append(json.dumps(rec, sort_keys=True))
    (d / "__consumer_offsets-7.jsonl").write_text("".join(x + "\n" for x in shifted), encoding="utf-8")
    return d
