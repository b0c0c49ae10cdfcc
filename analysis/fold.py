"""The metrics of one consumer group, folded over its records in log order (definitions: docs/analysis.md).

Theory of operation. Every metric of a group depends only on that group's records, in the order
``(timestamp_ms, log_partition, log_offset)``, and most are sequential by nature: a rebalance is an *episode*
between two states of the group, an owner holds a partition from one record to a later one. So the analysis
(``analysis.analyze``) has Spark's tasks parse the logs and key each group-scoped record (offset commits aside) by
its (run, group), Spark's one shuffle bring each group's records together, and each task sort them and run this
fold over each of its groups (:func:`fold_groups`), one pass per group, holding one group's state at a time. The
fold is plain Python (no Spark import), so it also runs on the driver (a small log) and in a sweep's tasks (one
run each).

Identity. An *owner* is a member's ``group.instance.id`` when it has one (a static member restarted with a new
member id is the same owner: KIP-345, ``GroupMetadata.replaceStaticMember`` keeps the assignment), else its member
id (a restarted dynamic consumer is a new member, with a new id: KIP-394).

Ownership (the coordinator's view: schema v1 has no consumer-side record). A member owns its generation-N
assignment from its SyncGroup response -- the later of the first ``GroupMetadata`` of generation N listing it and
its own ``SyncReceived`` for N -- until, with the eager protocol, its next JoinGroup (an eager member revokes
everything before rejoining: ``ConsumerCoordinator.onJoinPrepare``) or its removal; with the cooperative protocol
(KIP-429) until its next assignment (it keeps what stays assigned) or its removal; else until the end of the run.

Input records are tuples in the order of :data:`FIELDS`; ``members`` holds each ``GroupMetadata`` member as the tuple
of :func:`group_member` (what is shipped to the fold's task is only what it reads) or as its JSON text or object,
or the member ids of a ``JoinCompleted``.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Iterator, Optional

#: The record fields the fold reads, in order (``analysis.analyze.scan`` builds the tuples).
FIELDS = ("run", "group_id", "ts", "lp", "lo", "type", "member_id", "group_instance_id", "client_id",
          "old_member_id", "new_member_id", "generation_id", "reason", "initial", "members", "protocol_name")

#: Assignors whose consumers use the cooperative rebalance protocol (KIP-429: ``COOPERATIVE`` is the
#: ``supportedProtocols`` of CooperativeStickyAssignor only). KIP-848's consumer protocol is a third value of
#: ``protocol`` ("consumer") once its records are in the schema.
COOPERATIVE_ASSIGNORS = ("cooperative-sticky",)

JOIN_TYPES = ("MemberJoined", "MemberRejoined", "StaticMemberReplaced")

#: ``kgroup watch``'s observed records (docs/events.md) read as the coordinator records they stand for: a watcher
#: sees a rebalance start, members come and go, a new Stable assignment, the group become Empty or go.
OBSERVED_AS = {"ObservedRebalance": "RebalanceStarted", "ObservedMemberJoined": "MemberJoined",
               "ObservedMemberLeft": "MemberRemoved", "ObservedGeneration": "GroupMetadata",
               "ObservedEmpty": "JoinCompleted", "ObservedGroupGone": "GroupTombstone"}
#: Record types that commit an offset (``offset``, ``topic``, ``partition``): the lag chart's input.
COMMIT_TYPES = ("OffsetCommit", "ObservedCommit")

#: Trigger classes of RebalanceStarted.reason: the reason strings of the classic protocol's rebalances, written by
#: coordinator/classic_manager.py (``ClassicGroupManager``, after Kafka 4.x ``GroupMetadataManager``'s
#: ``prepareRebalance`` reasons), and kgroup watch's observed ones. First match wins.
TRIGGERS = (
    ("member-joined", lambda r: r.startswith("observed: member joined")),   # kgroup watch
    ("member-left", lambda r: r.startswith("observed: member left")),
    ("session-expired", lambda r: "heartbeat expiration" in r),
    ("sync-expired", lambda r: "pending sync" in r),
    ("member-left", lambda r: "LeaveGroup" in r),
    ("static-member-replaced", lambda r: "static member" in r),
    ("coordinator-loaded", lambda r: r.startswith("Freshly-loaded")),
    ("member-joined", lambda r: r.startswith("Adding new member")),
    ("member-rejoined", lambda r: "joining group during" in r or "change of protocol" in r),
    ("member-not-rejoined", lambda r: "did not rejoin" in r),
)

#: Columns of each output table, in order (analysis.tables gives their Spark types).
REBALANCE_COLUMNS = ("run", "scenario", "seed", "group_id", "rebalance_no", "generation_id", "trigger", "reason",
                     "initial", "from_empty", "start_ms", "end_ms", "duration_ms", "outcome", "rebalance_starts",
                     "join_phases", "members_before", "members_after", "partitions_before", "partitions_after",
                     "partitions_revoked", "partitions_assigned", "partitions_moved", "balance",
                     "group_stopped_ms", "unowned_partition_ms", "assignor", "protocol", "members")
MEMBER_COLUMNS = ("run", "group_id", "member_id", "owner", "group_instance_id", "client_id", "first_seen_ms",
                  "last_ms", "lifetime_ms", "owned_ms", "without_partitions_ms", "rebalances_joined",
                  "session_expiries", "removed_reason")
PARTITION_COLUMNS = ("run", "group_id", "topic", "partition", "window_start_ms", "window_end_ms", "owned_ms",
                     "unowned_ms", "owners", "assignments")
OWNERSHIP_COLUMNS = ("run", "group_id", "topic", "partition", "owner", "member_id", "generation_id", "from_ms",
                     "to_ms")
GROUP_COLUMNS = ("run", "scenario", "seed", "group_id", "protocol", "assignor", "static_members", "members",
                 "partitions", "rebalances", "completed", "from_empty", "rebalances_while_consuming",
                 "group_stopped_ms", "max_group_stopped_ms", "unowned_partition_ms", "unowned_ms_per_partition",
                 "partitions_moved", "partitions_revoked", "mean_balance", "max_balance", "session_expiries",
                 "first_assignment_ms", "first_ms", "end_ms")
_R = {c: i for i, c in enumerate(REBALANCE_COLUMNS)}

_STRING = ("run", "scenario", "group_id", "trigger", "reason", "outcome", "assignor", "protocol", "member_id",
           "owner", "group_instance_id", "client_id", "removed_reason", "topic")
_INT = ("rebalance_no", "generation_id", "rebalance_starts", "join_phases", "members_before", "members_after",
        "partition", "rebalances_joined", "session_expiries", "owners", "assignments", "static_members", "members",
        "partitions", "rebalances", "completed", "from_empty", "rebalances_while_consuming", "max_balance")
_DOUBLE = ("unowned_ms_per_partition", "mean_balance")


def column_type(table: str, name: str) -> str:
    """The Spark SQL type of a column of an output table (analysis.schema.spark_type reads it)."""
    if name == "members" and table == "rebalances":
        return "array<string>"
    if name in ("initial",) or (name == "from_empty" and table == "rebalances"):
        return "boolean"
    if name in _STRING:
        return "string"
    if name in _INT:
        return "int"
    if name in _DOUBLE:
        return "double"
    return "long"          # milliseconds, partition counts, seeds
COLUMNS = {"rebalances": REBALANCE_COLUMNS, "members": MEMBER_COLUMNS, "partitions": PARTITION_COLUMNS,
           "ownership": OWNERSHIP_COLUMNS, "groups": GROUP_COLUMNS}


def trigger_of(reason: Optional[str]) -> Optional[str]:
    if reason is None:
        return None
    for name, match in TRIGGERS:
        if match(reason):
            return name
    return "other"


def protocol_of(assignor: Optional[str]) -> str:
    return "cooperative" if assignor in COOPERATIVE_ASSIGNORS else "eager"


_DECODED: dict[str, tuple[tuple[str, int], ...]] = {}


def assignment_partitions(hex_text: Optional[str]) -> tuple[tuple[str, int], ...]:
    """The partitions of ConsumerProtocolAssignment bytes (hex); empty for missing or undecodable bytes. Memoized:
    a group's GroupMetadata records repeat most assignments (every member is listed again each generation)."""
    if not hex_text:
        return ()
    got = _DECODED.get(hex_text)
    if got is not None:
        return got
    from protocol.consumer_protocol import decode_assignment
    try:
        _, a = decode_assignment(bytes.fromhex(hex_text))
        got = tuple(sorted((t, p) for t, ps in a.assigned_partitions for p in ps))
    except Exception:  # noqa: BLE001 - a member whose bytes are not a consumer assignment owns nothing we know
        got = ()
    if len(_DECODED) > 100_000:
        _DECODED.clear()
    _DECODED[hex_text] = got
    return got


def group_member(item: Any) -> Optional[tuple]:
    """What the fold reads of a ``GroupMetadata`` member -- ``(member_id, group_instance_id, client_id, assignment
    hex)`` -- from its parsed JSON object or its JSON text (an ``events.parquet`` keeps each member as text); None
    when it is neither. A non-string id is read as its JSON text, as Spark's ``get_json_object`` reads it."""
    if type(item) is not dict:
        try:
            item = json.loads(item)
        except (TypeError, ValueError):
            return None
        if type(item) is not dict:
            return None
    a = item.get("assignment")
    return (_text(item.get("member_id")), _text(item.get("group_instance_id")), _text(item.get("client_id")),
            _text(a.get("hex")) if type(a) is dict else None)


def _text(v: Any) -> Optional[str]:
    return v if v is None or type(v) is str else json.dumps(v, separators=(",", ":"))


def covered(intervals: list[tuple[int, int]], lo: int, hi: int) -> int:
    """Length of the union of ``intervals`` ([from, to) pairs, sorted by from) inside [lo, hi)."""
    total, reach = 0, lo
    for a, b in intervals:
        if b <= reach:
            continue
        if a >= hi:
            break
        a = max(a, reach)
        b = min(b, hi)
        if b > a:
            total += b - a
            reach = b
    return total


def merge_intervals(intervals: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The union of [from, to) intervals as sorted, disjoint intervals."""
    out: list[list[int]] = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


class _Member:
    __slots__ = ("member_id", "instance", "client", "first_ms", "removed_ms", "removed_reason", "expiries",
                 "events")

    def __init__(self, member_id: str) -> None:
        self.member_id = member_id
        self.instance: Optional[str] = None
        self.client: Optional[str] = None
        self.first_ms: Optional[int] = None
        self.removed_ms: Optional[int] = None
        self.removed_reason: Optional[str] = None
        self.expiries = 0
        # (position, kind, payload): kind "join", "remove" or "assigned" (payload: [generation, partitions,
        # protocol]); an assignment's position is raised by a later SyncReceived of its generation
        self.events: list[list[Any]] = []

    @property
    def owner(self) -> str:
        return self.instance or self.member_id

    def seen(self, ts: int) -> None:
        if self.first_ms is None or ts < self.first_ms:
            self.first_ms = ts


class _Episode:
    __slots__ = ("start_ms", "reason", "initial", "starts", "join_phases", "jc", "end_ms", "outcome", "generation",
                 "assignor", "members_after", "partitions_after", "owners", "sizes", "jc_members", "synced")

    def __init__(self, ts: int, reason: Optional[str], initial: Optional[bool]) -> None:
        self.start_ms, self.reason, self.initial = ts, reason, initial
        self.starts, self.join_phases = 1, 0
        self.jc: Optional[tuple] = None       # the last JoinCompleted: (generation, protocol, member ids)
        self.end_ms: Optional[int] = None
        self.outcome = "unfinished"
        self.generation: Optional[int] = None
        self.assignor: Optional[str] = None
        self.members_after: Optional[int] = None
        self.partitions_after: Optional[int] = None
        self.owners: Optional[dict] = None    # the new assignment: partition -> owner
        self.sizes: list[int] = []
        self.jc_members: tuple = ()
        self.synced: set = set()               # member ids of the Stable GroupMetadata that ended it


def fold_group(run: str, group_id: str, records: Iterable[tuple], run_end_ms: int, scenario: str = "",
               seed: Optional[int] = None) -> dict[str, list[tuple]]:
    """All table rows of one group (``records`` sorted by (ts, lp, lo)); rows are tuples in :data:`COLUMNS` order."""
    members: dict[str, _Member] = {}
    episodes: list[_Episode] = []
    cur: Optional[_Episode] = None
    stable_by_gen: dict[int, _Episode] = {}
    last_stable_gen = -1
    listed: set[tuple[int, str]] = set()              # (generation, member id) already assigned
    assignment_at: dict[tuple[str, int], list] = {}   # (member id, generation) -> its "assigned" event
    syncs: dict[tuple[str, int], tuple] = {}          # (member id, generation) -> latest SyncReceived position
    first_ms: Optional[int] = None

    def member(mid: str) -> _Member:
        m = members.get(mid)
        if m is None:
            m = members[mid] = _Member(mid)
        return m

    def close(outcome: str, ts: int) -> None:
        nonlocal cur
        cur.outcome, cur.end_ms = outcome, ts
        episodes.append(cur)
        cur = None

    for rec in records:
        (_, _, ts, lp, lo, typ, mid, inst, client, old_id, new_id, gen, reason, initial, mlist, proto) = rec
        typ = OBSERVED_AS.get(typ, typ)
        pos = (ts, lp, lo)
        if first_ms is None:
            first_ms = ts
        if typ == "RebalanceStarted":
            if cur is None:
                cur = _Episode(ts, reason, initial)
            else:
                cur.starts += 1
        elif typ in JOIN_TYPES:
            joiner = new_id if typ == "StaticMemberReplaced" else mid
            if joiner:
                m = member(joiner)
                m.seen(ts)
                m.events.append([pos, "join", None])
                if inst:
                    m.instance = inst
                if client:
                    m.client = client
            if typ == "StaticMemberReplaced" and old_id:
                old = member(old_id)      # fenced: the old id is gone, the new one takes over its assignment
                old.seen(ts)
                old.events.append([pos, "remove", None])
                if old.removed_ms is None:
                    old.removed_ms, old.removed_reason = ts, "fenced by a static member with the same instance id"
                if inst:
                    old.instance = inst
        elif typ == "MemberRemoved":
            if mid:
                m = member(mid)
                m.seen(ts)
                m.events.append([pos, "remove", None])
                if m.removed_ms is None:
                    m.removed_ms, m.removed_reason = ts, reason
                if reason and "heartbeat expiration" in reason:
                    m.expiries += 1
                if inst:
                    m.instance = inst
        elif typ == "JoinCompleted":
            if cur is not None:
                cur.join_phases += 1
                cur.jc = (gen, proto, tuple(mlist or ()))
                if not mlist:
                    close("empty", ts)
        elif typ == "SyncReceived":
            if mid is not None and gen is not None:
                key = (mid, gen)
                if key not in syncs or pos > syncs[key]:
                    syncs[key] = pos
                ev = assignment_at.get(key)
                if ev is not None and pos > ev[0]:
                    ev[0] = pos
                ep = stable_by_gen.get(gen)
                if ep is not None and ts > ep.end_ms and mid in ep.synced:
                    ep.end_ms = ts       # the end is the last SyncGroup response of the rebalance's members
                    # (a static member that replaces one later in the same generation is no part of it)
        elif typ == "GroupMetadata" and mlist:
            new_owners: dict[tuple[str, int], str] = {}
            sizes = []
            ids = set()
            for item in mlist:
                # the analysis ships group_member's tuples; other callers (kgroup's web view, tests) the JSON text
                if type(item) is not tuple and (item := group_member(item)) is None:
                    continue
                m_id, inst_, client_, hexs = item
                if not m_id:
                    continue
                m = member(m_id)
                ids.add(m_id)
                if inst_:
                    m.instance = inst_
                if client_:
                    m.client = client_
                parts = assignment_partitions(hexs)
                sizes.append(len(parts))
                for tp in parts:
                    new_owners[tp] = m.owner
                if (gen, m_id) not in listed:
                    listed.add((gen, m_id))
                    start = max(pos, syncs.get((m_id, gen), pos))
                    ev = [start, "assigned", (gen, parts, proto)]
                    m.events.append(ev)
                    assignment_at[(m_id, gen)] = ev
                    m.seen(ts)
            if gen is not None and gen > last_stable_gen:
                last_stable_gen = gen
                if cur is not None:
                    cur.generation, cur.assignor = gen, proto
                    cur.members_after, cur.partitions_after = len(sizes), sum(sizes)
                    cur.owners, cur.sizes = new_owners, sizes
                    cur.jc_members = cur.jc[2] if cur.jc else ()
                    cur.synced = ids
                    close("stable", ts)
                    stable_by_gen[gen] = episodes[-1]
                else:
                    # a Stable generation without its rebalance in the log (the log starts mid-way): it still
                    # defines the owners the next rebalance moves partitions from
                    pseudo = _Episode(ts, None, None)
                    pseudo.outcome, pseudo.owners = "baseline", new_owners
                    pseudo.members_after, pseudo.partitions_after = len(sizes), sum(sizes)
                    episodes.append(pseudo)
        elif typ == "GroupTombstone":
            if cur is not None:
                close("deleted", ts)
    if cur is not None:
        episodes.append(cur)
    end = run_end_ms

    # --- ownership intervals ---------------------------------------------------------------------------------
    owned_by_tp: dict[tuple[str, int], list[tuple[int, int]]] = {}
    owners_by_tp: dict[tuple[str, int], set] = {}
    ownership_rows = []
    owned_by_member: dict[str, list[tuple[int, int]]] = {}
    for m in members.values():
        evs = sorted(m.events, key=lambda e: e[0])
        for i, (p0, kind, payload) in enumerate(evs):
            if kind != "assigned":
                continue
            g, parts, proto = payload
            coop = proto in COOPERATIVE_ASSIGNORS
            stop = next((e[0][0] for e in evs[i + 1:] if e[0] > p0 and (
                e[1] == "remove" or e[1] == "assigned" or (e[1] == "join" and not coop))), end)
            a, b = p0[0], max(p0[0], min(stop, end))
            if b <= a or not parts:
                continue
            owned_by_member.setdefault(m.member_id, []).append((a, b))
            for tp in parts:
                owned_by_tp.setdefault(tp, []).append((a, b))
                owners_by_tp.setdefault(tp, set()).add(m.owner)
                ownership_rows.append((run, group_id, tp[0], tp[1], m.owner, m.member_id, g, a, b))
    for tp in owned_by_tp:
        owned_by_tp[tp] = merge_intervals(owned_by_tp[tp])
    any_owned = merge_intervals(iv for ivs in owned_by_tp.values() for iv in ivs)

    # --- rebalances ------------------------------------------------------------------------------------------
    # each partition is counted from the start of the first rebalance that assigned it
    window_start: dict[tuple[str, int], int] = {}
    for e in episodes:
        for tp in (e.owners or {}):
            window_start.setdefault(tp, e.start_ms)
    for tp, ivs in owned_by_tp.items():
        window_start.setdefault(tp, ivs[0][0])
    rebalance_rows = []
    prev_owners: dict = {}
    last_owner: dict = {}
    members_before = partitions_before = 0
    last_protocol = "eager"
    no = 0
    ordered = sorted(episodes, key=lambda e: e.start_ms)
    for idx, e in enumerate(ordered):
        if e.outcome == "baseline":
            prev_owners = e.owners or {}
            last_owner.update(prev_owners)
            members_before, partitions_before = e.members_after or 0, e.partitions_after or 0
            continue
        no += 1
        protocol = protocol_of(e.assignor) if e.assignor else last_protocol
        coop = protocol == "cooperative"
        finished = e.outcome in ("stable", "empty")
        revoked = assigned = moved = balance = None
        if e.outcome == "stable":
            new = e.owners or {}
            lost = sum(1 for tp, o in prev_owners.items() if new.get(tp) != o)
            gained = sum(1 for tp, o in new.items() if prev_owners.get(tp) != o)
            moved = sum(1 for tp, o in new.items() if tp in last_owner and last_owner[tp] != o)
            revoked = lost if coop else partitions_before
            assigned = gained if coop else e.partitions_after
            balance = (max(e.sizes) - min(e.sizes)) if e.sizes else None
            last_owner.update(new)
            prev_owners = new
            last_protocol = protocol
        elif e.outcome == "empty":
            revoked = len(prev_owners) if coop else partitions_before
            assigned, moved = 0, 0
            prev_owners = {}
        elif e.outcome == "deleted":
            prev_owners = {}
        upto = e.end_ms if e.end_ms is not None else end
        unowned = 0
        for tp, ws in window_start.items():
            lo_ = max(e.start_ms, ws)
            if upto > lo_:
                unowned += (upto - lo_) - covered(owned_by_tp.get(tp, []), lo_, upto)
        from_empty = members_before == 0
        stopped = None
        if not coop and not from_empty:
            stopped = max(0, upto - e.start_ms) - covered(any_owned, e.start_ms, upto)
        members_after = e.members_after if e.outcome in ("stable",) else (0 if e.outcome in ("empty", "deleted")
                                                                           else None)
        partitions_after = e.partitions_after if e.outcome == "stable" else (0 if finished or e.outcome == "deleted"
                                                                             else None)
        rebalance_rows.append((
            run, scenario, seed, group_id, no, e.generation if e.generation is not None else (e.jc[0] if e.jc else None),
            trigger_of(e.reason), e.reason, e.initial, from_empty, e.start_ms, e.end_ms,
            None if e.end_ms is None else e.end_ms - e.start_ms, e.outcome, e.starts, e.join_phases,
            members_before, members_after, partitions_before, partitions_after, revoked, assigned, moved, balance,
            stopped, unowned, e.assignor if e.assignor else (e.jc[1] if e.jc else None), protocol,
            list(e.jc_members) if e.outcome == "stable" else None))
        if members_after is not None:
            members_before, partitions_before = members_after, partitions_after or 0

    # --- members ---------------------------------------------------------------------------------------------
    joined_count: dict[str, int] = {}
    for r in rebalance_rows:
        for mid in r[-1] or ():
            joined_count[mid] = joined_count.get(mid, 0) + 1
    member_rows = []
    for m in members.values():
        first = m.first_ms if m.first_ms is not None else end
        last = m.removed_ms if m.removed_ms is not None else end
        owned = covered(merge_intervals(owned_by_member.get(m.member_id, [])), first, last)
        member_rows.append((run, group_id, m.member_id, m.owner, m.instance, m.client, first, last, last - first,
                            owned, last - first - owned, joined_count.get(m.member_id, 0), m.expiries,
                            m.removed_reason))

    # --- partitions ------------------------------------------------------------------------------------------
    n_assign: dict[tuple[str, int], int] = {}
    for r in ownership_rows:
        n_assign[(r[2], r[3])] = n_assign.get((r[2], r[3]), 0) + 1
    partition_rows = []
    for tp in sorted(window_start):
        ws = window_start[tp]
        owned = covered(owned_by_tp.get(tp, []), ws, end)
        partition_rows.append((run, group_id, tp[0], tp[1], ws, end, owned, max(0, end - ws) - owned,
                               len(owners_by_tp.get(tp, ())), n_assign.get(tp, 0)))

    # --- the group -------------------------------------------------------------------------------------------
    R = _R
    stable = [r for r in rebalance_rows if r[R["outcome"]] == "stable"]
    consuming = [r for r in rebalance_rows if not r[R["from_empty"]]]
    last_stable = stable[-1] if stable else None
    protocol = (last_stable or (rebalance_rows[-1] if rebalance_rows else None) or {R["protocol"]: None})[R["protocol"]]
    stopped_vals = [r[R["group_stopped_ms"]] for r in consuming if r[R["group_stopped_ms"]] is not None]
    balances = [r[R["balance"]] for r in stable if r[R["balance"]] is not None]
    first_assignment = (stable[0][R["end_ms"]] - rebalance_rows[0][R["start_ms"]]) if stable else None
    n_parts = len(window_start)
    # while consuming: from the end of a rebalance that made the group Stable to the end of one that left it Empty
    # (or deleted it), or to the end of the run; so the group's start, and time it spent Empty, do not count
    baselines = [e.start_ms for e in episodes if e.outcome == "baseline"]
    periods, since = [], None
    if baselines and (not rebalance_rows or baselines[0] < rebalance_rows[0][R["start_ms"]]):
        since = baselines[0]          # the log starts with the group already Stable
    for r in rebalance_rows:
        if r[R["outcome"]] == "stable" and since is None:
            since = r[R["end_ms"]]
        elif r[R["outcome"]] in ("empty", "deleted") and since is not None:
            periods.append((since, r[R["end_ms"]]))
            since = None
    if since is not None:
        periods.append((since, end))
    unowned_total = 0
    for a, b in periods:
        for tp, ws in window_start.items():
            lo_ = max(a, ws)
            if b > lo_:
                unowned_total += (b - lo_) - covered(owned_by_tp.get(tp, []), lo_, b)
    group_row = (
        run, scenario, seed, group_id, protocol, last_stable[R["assignor"]] if last_stable else None,
        len({m.instance for m in members.values() if m.instance}), len({m.owner for m in members.values()}),
        n_parts, len(rebalance_rows), len(stable), len(rebalance_rows) - len(consuming), len(consuming),
        (sum(stopped_vals) if stopped_vals else (None if protocol == "cooperative" else 0)),
        (max(stopped_vals) if stopped_vals else (None if protocol == "cooperative" else 0)),
        unowned_total, (unowned_total / n_parts) if n_parts else None,
        sum(r[R["partitions_moved"]] or 0 for r in consuming), sum(r[R["partitions_revoked"]] or 0 for r in consuming),
        (sum(balances) / len(balances)) if balances else None, max(balances) if balances else None,
        sum(m.expiries for m in members.values()), first_assignment, first_ms, end)
    return {"rebalances": rebalance_rows, "members": member_rows, "partitions": partition_rows,
            "ownership": ownership_rows, "groups": [group_row]}


def fold_groups(groups: dict[tuple[str, str], list[tuple]], runs: dict[str, tuple]) -> dict[str, list[tuple]]:
    """Every table's rows of the groups ``(run, group) -> records`` (in any order: sorted here by (ts, lp, lo),
    the log order), group by group in (run, group) order; ``runs``: run -> (end_ms, scenario, seed)."""
    from operator import itemgetter
    out: dict[str, list[tuple]] = {name: [] for name in COLUMNS}
    log_order = itemgetter(2, 3, 4)
    for run, group in sorted(groups):
        records = groups[(run, group)]
        records.sort(key=log_order)
        end_ms, scenario, seed = runs.get(run, (records[-1][2], "", None))
        end_ms = max(end_ms, records[-1][2])
        for table, rows in fold_group(run, group, records, end_ms, scenario, seed).items():
            out[table] += rows
    return out
