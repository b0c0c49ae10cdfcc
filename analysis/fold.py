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

Consumer groups (KIP-848). A group's ``ConsumerGroup*`` records go to :class:`_ConsumerGroupFold` (its state by
``ConsumerGroup``'s rule, its reconciliations -- the consumer protocol's rebalances --, one row per group epoch,
ownership from the members' current assignments); its reconciliations join the classic rebalances in one time
line, so a group that migrates between the protocols is one group. A classic group's tombstone ends its classic
ownership (the online upgrade's records carry the members on at the same instant).

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
from bisect import bisect_left
from typing import Any, Iterable, Iterator, Optional

#: The record fields the fold reads, in order (``analysis.analyze.scan`` builds the tuples).
FIELDS = ("run", "group_id", "ts", "lp", "lo", "type", "member_id", "group_instance_id", "client_id",
          "old_member_id", "new_member_id", "generation_id", "reason", "initial", "members", "protocol_name",
          "cg", "group_type")
#: What the fold reads of a KIP-848 ``ConsumerGroup*`` record (the tuple in the ``cg`` field, None for the other
#: records): partition sets are tuples of ``(topic id, (partitions...))`` (:func:`topic_partitions`).
CG_FIELDS = ("epoch", "metadata_hash", "assignment_epoch", "member_epoch", "state", "assigned_partitions",
             "partitions_pending_revocation", "topic_partitions", "instance_id", "server_assignor",
             "subscribed_topic_names", "topics")

#: Assignors whose consumers use the cooperative rebalance protocol (KIP-429: ``COOPERATIVE`` is the
#: ``supportedProtocols`` of CooperativeStickyAssignor only). KIP-848's consumer protocol is the third value of
#: ``protocol`` ("consumer"), from the group's ``ConsumerGroup*`` records.
COOPERATIVE_ASSIGNORS = ("cooperative-sticky",)

JOIN_TYPES = ("MemberJoined", "MemberRejoined", "StaticMemberReplaced")

#: ``kgroup watch``'s observed records (docs/events.md) read as the coordinator records they stand for: a watcher
#: sees a rebalance start, members come and go, a new Stable assignment, the group become Empty or go.
OBSERVED_AS = {"ObservedRebalance": "RebalanceStarted", "ObservedMemberJoined": "MemberJoined",
               "ObservedMemberLeft": "MemberRemoved", "ObservedGeneration": "GroupMetadata",
               "ObservedEmpty": "JoinCompleted", "ObservedGroupGone": "GroupTombstone"}
#: Record types that commit an offset (``offset``, ``topic``, ``partition``): the lag chart's input.
COMMIT_TYPES = ("OffsetCommit", "ObservedCommit")

#: Trigger classes of RebalanceStarted.reason (the coordinator's reason strings: Kafka's GroupCoordinator /
#: coordinator/manager.py). First match wins.
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
                  "session_expiries", "removed_reason", "max_epoch_lag", "epoch_lag_ms")
PARTITION_COLUMNS = ("run", "group_id", "topic", "partition", "window_start_ms", "window_end_ms", "owned_ms",
                     "unowned_ms", "owners", "assignments")
OWNERSHIP_COLUMNS = ("run", "group_id", "topic", "partition", "owner", "member_id", "generation_id", "from_ms",
                     "to_ms")
GROUP_COLUMNS = ("run", "scenario", "seed", "group_id", "protocol", "assignor", "static_members", "members",
                 "partitions", "rebalances", "completed", "from_empty", "rebalances_while_consuming",
                 "group_stopped_ms", "max_group_stopped_ms", "unowned_partition_ms", "unowned_ms_per_partition",
                 "partitions_moved", "partitions_revoked", "mean_balance", "max_balance", "session_expiries",
                 "first_assignment_ms", "first_ms", "end_ms", "group_epochs", "mean_reconciliation_ms",
                 "max_reconciliation_ms", "max_member_epoch_lag")
#: One row per group epoch of a KIP-848 consumer group (docs/analysis.md "Consumer groups").
EPOCH_COLUMNS = ("run", "scenario", "seed", "group_id", "epoch", "bumped_ms", "end_ms", "trigger", "reason",
                 "from_empty", "members", "target_epoch", "target_ms", "reconciled_ms", "reconciliation_ms",
                 "superseded", "partitions_revoked", "partitions_assigned", "unowned_partition_ms",
                 "max_member_epoch_lag")
_R = {c: i for i, c in enumerate(REBALANCE_COLUMNS)}

_STRING = ("run", "scenario", "group_id", "trigger", "reason", "outcome", "assignor", "protocol", "member_id",
           "owner", "group_instance_id", "client_id", "removed_reason", "topic")
_INT = ("rebalance_no", "generation_id", "rebalance_starts", "join_phases", "members_before", "members_after",
        "partition", "rebalances_joined", "session_expiries", "owners", "assignments", "static_members", "members",
        "partitions", "rebalances", "completed", "from_empty", "rebalances_while_consuming", "max_balance",
        "epoch", "target_epoch", "group_epochs", "max_member_epoch_lag", "max_epoch_lag")
_DOUBLE = ("unowned_ms_per_partition", "mean_balance", "mean_reconciliation_ms")


def column_type(table: str, name: str) -> str:
    """The Spark SQL type of a column of an output table (analysis.schema.spark_type reads it)."""
    if name == "members" and table == "rebalances":
        return "array<string>"
    if name in ("initial", "superseded") or (name == "from_empty" and table in ("rebalances", "epochs")):
        return "boolean"
    if name in _STRING:
        return "string"
    if name in _INT:
        return "int"
    if name in _DOUBLE:
        return "double"
    return "long"          # milliseconds, partition counts, seeds
COLUMNS = {"rebalances": REBALANCE_COLUMNS, "members": MEMBER_COLUMNS, "partitions": PARTITION_COLUMNS,
           "ownership": OWNERSHIP_COLUMNS, "groups": GROUP_COLUMNS, "epochs": EPOCH_COLUMNS}


def trigger_of(reason: Optional[str]) -> Optional[str]:
    if reason is None:
        return None
    for name, match in TRIGGERS:
        if match(reason):
            return name
    return "other"


def protocol_of(assignor: Optional[str]) -> str:
    return "cooperative" if assignor in COOPERATIVE_ASSIGNORS else "eager"


def topic_partitions(value: Any) -> tuple:
    """A ``ConsumerGroup*`` record's partition set (``[{"topic_id": ..., "partitions": [...]}, ...]``, each item
    an object or its JSON text) as ``((topic id, (partition, ...)), ...)``."""
    if not value:
        return ()
    out = []
    for item in value:
        if type(item) is not dict:
            try:
                item = json.loads(item)
            except (TypeError, ValueError):
                continue
            if type(item) is not dict:
                continue
        ps = item.get("partitions") or ()
        out.append((_text(item.get("topic_id")), tuple(p for p in ps if type(p) is int)))
    return tuple(out)


def cg_fields(data: dict) -> tuple:
    """The :data:`CG_FIELDS` tuple of a ``ConsumerGroup*`` record's ``data``."""
    g = data.get
    return (g("epoch"), g("metadata_hash"), g("assignment_epoch"), g("member_epoch"), g("state"),
            topic_partitions(g("assigned_partitions")), topic_partitions(g("partitions_pending_revocation")),
            topic_partitions(g("topic_partitions")), g("instance_id"), g("server_assignor"),
            tuple(g("subscribed_topic_names") or ()), tuple(g("topics") or ()))


_TOPIC_IDS: dict[str, str] = {}


def topic_id_text(name: str) -> str:
    """The topic id kgroup's coordinator gives topic ``name`` (``coordinator.cluster.topic_id``: derived from the
    name), as the base64 text the records carry."""
    got = _TOPIC_IDS.get(name)
    if got is None:
        from coordinator.cluster import topic_id
        from protocol.uuids import uuid_to_string
        got = _TOPIC_IDS[name] = uuid_to_string(topic_id(name))
    return got


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
                 "assignor", "members_after", "partitions_after", "owners", "sizes", "jc_members", "synced",
                 "protocol", "trigger", "from_empty")

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
        self.protocol: Optional[str] = None    # "consumer" for a consumer group's reconciliation, else by assignor
        self.trigger: Optional[str] = None     # set when the reason is not a coordinator's reason text
        self.from_empty: Optional[bool] = None


#: Consumer-group states by ``ConsumerGroup``'s rule (Kafka's ``ConsumerGroup.maybeUpdateGroupState``).
EMPTY, ASSIGNING, RECONCILING, STABLE = "Empty", "Assigning", "Reconciling", "Stable"


class _ConsumerGroupFold:
    """The KIP-848 half of a group's fold: its ``ConsumerGroup*`` records in log order (docs/analysis.md
    "Consumer groups").

    * The group's state after each record, by Kafka's rule (``ConsumerGroup.maybeUpdateGroupState``): no member:
      Empty; group epoch above the target assignment epoch: Assigning; a member not STABLE (``state`` 0) at the
      target epoch: Reconciling; else Stable. A *reconciliation* -- from leaving Stable/Empty to the next
      Stable/Empty -- is the consumer protocol's rebalance (an :class:`_Episode` with protocol ``consumer``).
    * Per group epoch (``ConsumerGroupMetadata.epoch`` bumps): when the target assignment reached it, when the
      group was next Stable (its reconciliation), the most any member's epoch lagged behind it.
    * Ownership (the coordinator's view): a member owns a partition from its first
      ``ConsumerGroupCurrentMemberAssignment`` that lists it as assigned or pending revocation (a member keeps a
      partition until it acknowledges the revocation: ``CurrentAssignmentBuilder``) to its first later one that
      lists it in neither, its tombstone, or the group's.

    Topic ids are named by the topics the members subscribe to (kgroup's topic id is derived from the name)."""

    def __init__(self, member) -> None:
        self.member = member                      # member id -> _Member (shared with the classic fold)
        self.names: dict[str, str] = {}           # topic id -> name
        self.epoch: Optional[int] = None          # the group epoch
        self.metadata_hash = None
        self.target_epoch = 0
        self.members: dict[str, list] = {}        # member id -> [state, member epoch (-1: none yet)]
        self.subs: dict[str, tuple] = {}          # member id -> (subscribed names, server assignor)
        self.owned: dict[str, dict] = {}          # member id -> {tp: (from ms, member epoch)}
        self.assigned: dict[str, tuple] = {}      # member id -> its assigned partitions (tps), pending excluded
        self.intervals: list[tuple] = []          # (member id, tp, epoch, from, to)
        self.moves: list[tuple[int, str]] = []    # (ts, "revoked" | "assigned")
        self.episodes: list[_Episode] = []
        self.cur: Optional[_Episode] = None
        self.epochs: list[dict] = []              # one per group epoch
        self.change: Optional[tuple[str, str]] = None   # (trigger, reason) of the last membership change
        self.assignor: Optional[str] = None
        self.lag_since: dict[str, int] = {}       # member id -> since when its epoch is below the group epoch
        self.max_lag: dict[str, int] = {}
        self.lag_ms: dict[str, int] = {}
        self.seen = False
        self.converted_at: Optional[int] = None   # when the classic group's tombstone was written

    def tp(self, tid: str, p: int) -> tuple[str, int]:
        return (self.names.get(tid, tid), p)

    def tps(self, parts: tuple) -> set:
        return {self.tp(tid, p) for tid, ps in parts for p in ps}

    def name_topics(self, names) -> None:
        for n in names or ():
            if isinstance(n, str):
                self.names.setdefault(topic_id_text(n), n)

    # --- ownership and lag ----------------------------------------------------------------------------------------
    def own(self, mid: str, ts: int, now: set, epoch: Optional[int]) -> None:
        mine = self.owned.setdefault(mid, {})
        for tp in [tp for tp in mine if tp not in now]:
            a, ep = mine.pop(tp)
            self.intervals.append((mid, tp, ep, a, ts))
            self.moves.append((ts, "revoked"))
        for tp in now:
            if tp not in mine:
                mine[tp] = (ts, epoch)
                self.moves.append((ts, "assigned"))

    def lag(self, mid: str, ts: int) -> None:
        st = self.members.get(mid)
        behind = (self.epoch - st[1]) if st is not None and st[1] >= 0 and self.epoch is not None else 0
        if behind > 0:
            self.max_lag[mid] = max(self.max_lag.get(mid, 0), behind)
            if self.epochs:
                row = self.epochs[-1]
                row["max_member_epoch_lag"] = max(row["max_member_epoch_lag"] or 0, behind)
            self.lag_since.setdefault(mid, ts)
        else:
            self.max_lag.setdefault(mid, 0)
            since = self.lag_since.pop(mid, None)
            if since is not None:
                self.lag_ms[mid] = self.lag_ms.get(mid, 0) + ts - since

    def gone(self, mid: str, ts: int) -> None:
        """The member left the group (or was fenced): it owns nothing from now on."""
        self.own(mid, ts, set(), None)
        self.assigned.pop(mid, None)
        since = self.lag_since.pop(mid, None)
        if since is not None:
            self.lag_ms[mid] = self.lag_ms.get(mid, 0) + ts - since

    # --- records ---------------------------------------------------------------------------------------------------
    def record(self, ts: int, typ: str, mid: Optional[str], client: Optional[str], cg: tuple) -> None:
        (epoch, mhash, a_epoch, m_epoch, state, assigned, pending, _target, inst, assignor, subscribed,
         topics) = cg
        self.seen = True
        if typ == "ConsumerGroupMemberMetadata" and mid:
            m = self.member(mid)
            m.seen(ts)
            if inst:
                m.instance = inst
            if client:
                m.client = client
            self.name_topics(subscribed)
            if assignor:
                self.assignor = assignor
            sub = (subscribed, assignor)
            if mid not in self.members:
                self.members[mid] = [0, -1]
                # KIP-848's online upgrade writes the classic group's tombstone and its members' records at once
                self.change = (("upgraded-from-classic", "the classic group was converted to a consumer group")
                               if self.converted_at == ts else ("member-joined", f"member {mid} joined"))
            elif self.subs.get(mid, sub) != sub:
                self.change = ("subscription-changed", f"member {mid} changed its subscription or assignor")
            self.subs[mid] = sub
        elif typ == "ConsumerGroupMemberMetadataTombstone" and mid:
            if self.members.pop(mid, None) is not None:
                self.change = ("member-left", f"member {mid} left the group or was fenced")
            self.subs.pop(mid, None)
            self.gone(mid, ts)
            m = self.member(mid)
            if m.removed_ms is None:
                m.removed_ms, m.removed_reason = ts, "removed from the consumer group (left or fenced)"
        elif typ == "ConsumerGroupCurrentMemberAssignmentTombstone" and mid:
            self.gone(mid, ts)
        elif typ == "ConsumerGroupCurrentMemberAssignment" and mid:
            m = self.member(mid)
            m.seen(ts)
            st = self.members.setdefault(mid, [0, -1])
            st[0], st[1] = (state if state is not None else 0), (m_epoch if m_epoch is not None else -1)
            mine = self.tps(assigned)
            self.assigned[mid] = tuple(sorted(mine))
            self.own(mid, ts, mine | self.tps(pending), m_epoch)
            self.lag(mid, ts)
        elif typ == "ConsumerGroupMetadata" and epoch is not None:
            if self.epoch is None or epoch > self.epoch:
                if self.epochs and self.epochs[-1]["end_ms"] is None:
                    self.epochs[-1]["end_ms"] = ts
                trigger, reason = self.change or (
                    ("metadata-changed", "the subscribed topics' metadata changed")
                    if self.metadata_hash is not None and mhash != self.metadata_hash else ("other", "other"))
                self.change = None
                self.epoch = epoch
                self.epochs.append({"epoch": epoch, "bumped_ms": ts, "end_ms": None, "trigger": trigger,
                                    "reason": f"group epoch {epoch}: {reason}", "members": len(self.members),
                                    "target_epoch": None, "target_ms": None, "reconciled_ms": None,
                                    "max_member_epoch_lag": None, "episode": None})
                for other in list(self.members):
                    self.lag(other, ts)
            self.epoch = epoch
            self.metadata_hash = mhash
        elif typ == "ConsumerGroupMetadataTombstone":
            for other in list(self.owned):
                self.gone(other, ts)
            self.members.clear()
            self.epoch = None
            if self.epochs and self.epochs[-1]["end_ms"] is None:
                self.epochs[-1]["end_ms"] = ts
        elif typ == "ConsumerGroupTargetAssignmentMetadata" and a_epoch is not None:
            self.target_epoch = a_epoch
            for row in self.epochs:
                if row["target_ms"] is None and row["epoch"] <= a_epoch:
                    row["target_ms"], row["target_epoch"] = ts, a_epoch
        elif typ == "ConsumerGroupRegularExpression":
            self.name_topics(topics)
        self.step(ts)

    def state(self) -> str:
        if not self.members:
            return EMPTY
        if self.epoch is not None and self.epoch > self.target_epoch:
            return ASSIGNING
        t = self.target_epoch
        if any(st != 0 or ep != t for st, ep in self.members.values()):
            return RECONCILING
        return STABLE

    def step(self, ts: int) -> None:
        """Open or close a reconciliation after a record."""
        state = self.state()
        cur = self.cur
        if state in (STABLE, EMPTY):
            for row in self.epochs:
                if row["reconciled_ms"] is None:
                    row["reconciled_ms"] = ts
            if cur is None:
                return
            cur.end_ms, cur.generation = ts, self.target_epoch
            cur.outcome = "stable" if state == STABLE else "empty"
            owners = {}
            sizes = []
            for mid in self.members:
                parts = self.assigned.get(mid, ())
                sizes.append(len(parts))
                who = self.member(mid).owner
                for tp in parts:
                    owners[tp] = who
            cur.owners, cur.sizes = owners, sizes
            cur.members_after, cur.partitions_after = len(self.members), sum(sizes)
            cur.jc_members = tuple(self.members)
            cur.assignor = self.assignor or "(server default)"
            self.episodes.append(cur)
            self.cur = None
        else:
            if cur is None:
                trigger, reason = self.change or ("other", "other")
                cur = self.cur = _Episode(ts, reason, None)
                cur.protocol, cur.trigger, cur.starts = "consumer", trigger, 0
                cur.assignor = self.assignor or "(server default)"
            if self.epochs and self.epochs[-1]["episode"] is None and self.epochs[-1]["bumped_ms"] == ts:
                row = self.epochs[-1]
                row["episode"] = cur
                cur.starts += 1
                if cur.starts == 1:
                    cur.trigger, cur.reason = row["trigger"], row["reason"]

    def finish(self, end: int) -> None:
        for mid, mine in self.owned.items():          # the end of the run: ownership intervals end, nothing moves
            for tp, (a, ep) in mine.items():
                self.intervals.append((mid, tp, ep, a, end))
            since = self.lag_since.pop(mid, None)
            if since is not None:
                self.lag_ms[mid] = self.lag_ms.get(mid, 0) + end - since
        self.owned.clear()
        if self.cur is not None:
            self.cur.assignor = self.assignor or "(server default)"
            self.episodes.append(self.cur)
            self.cur = None
        if self.epochs and self.epochs[-1]["end_ms"] is None:
            self.epochs[-1]["end_ms"] = end


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

    cgf = _ConsumerGroupFold(member)
    for rec in records:
        if len(rec) == 18:
            (_, _, ts, lp, lo, typ, mid, inst, client, old_id, new_id, gen, reason, initial, mlist, proto, cg,
             gtype) = rec
        else:       # a caller that knows no KIP-848 group may leave the last two fields out
            (_, _, ts, lp, lo, typ, mid, inst, client, old_id, new_id, gen, reason, initial, mlist, proto) = rec
            cg = gtype = None
        typ = OBSERVED_AS.get(typ, typ)
        pos = (ts, lp, lo)
        if first_ms is None:
            first_ms = ts
        if cg is not None:
            cgf.record(ts, typ, mid, client, cg)
        elif typ == "RebalanceStarted":
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
                    if gtype == "consumer":   # kgroup watch saw a KIP-848 group (ConsumerGroupDescribe)
                        cur.protocol = "consumer"
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
            # the classic group is gone (deleted when Empty, or converted to a consumer group: KIP-848's online
            # upgrade, whose ConsumerGroup* records carry its members on): classic ownership ends here
            for m in members.values():
                m.events.append([pos, "end", None])
            cgf.converted_at = ts
    if cur is not None:
        episodes.append(cur)
    end = run_end_ms
    if cgf.seen:
        cgf.finish(end)
    if cgf.episodes:
        episodes = sorted(episodes + cgf.episodes, key=lambda e: e.start_ms)

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
                e[1] in ("remove", "assigned", "end") or (e[1] == "join" and not coop))), end)
            a, b = p0[0], max(p0[0], min(stop, end))
            if b <= a or not parts:
                continue
            owned_by_member.setdefault(m.member_id, []).append((a, b))
            for tp in parts:
                owned_by_tp.setdefault(tp, []).append((a, b))
                owners_by_tp.setdefault(tp, set()).add(m.owner)
                ownership_rows.append((run, group_id, tp[0], tp[1], m.owner, m.member_id, g, a, b))
    for mid, tp, ep, a, b in cgf.intervals:
        b = min(b, end)
        if b <= a:
            continue
        owned_by_member.setdefault(mid, []).append((a, b))
        owned_by_tp.setdefault(tp, []).append((a, b))
        owners_by_tp.setdefault(tp, set()).add(members[mid].owner)
        ownership_rows.append((run, group_id, tp[0], tp[1], members[mid].owner, mid, ep, a, b))
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
        protocol = e.protocol or (protocol_of(e.assignor) if e.assignor else last_protocol)
        # the consumer protocol, like the cooperative one, moves only the partitions that change owner
        coop = protocol in ("cooperative", "consumer")
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
        from_empty = e.from_empty = members_before == 0
        stopped = None
        if not coop and not from_empty:
            stopped = max(0, upto - e.start_ms) - covered(any_owned, e.start_ms, upto)
        members_after = e.members_after if e.outcome in ("stable",) else (0 if e.outcome in ("empty", "deleted")
                                                                           else None)
        partitions_after = e.partitions_after if e.outcome == "stable" else (0 if finished or e.outcome == "deleted"
                                                                             else None)
        rebalance_rows.append((
            run, scenario, seed, group_id, no, e.generation if e.generation is not None else (e.jc[0] if e.jc else None),
            e.trigger or trigger_of(e.reason), e.reason, e.initial, from_empty, e.start_ms, e.end_ms,
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
                            m.removed_reason, cgf.max_lag.get(m.member_id),
                            cgf.lag_ms.get(m.member_id, 0) if m.member_id in cgf.max_lag else None))

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

    # --- group epochs (consumer groups) ---------------------------------------------------------------------
    epoch_rows = []
    moves = sorted(cgf.moves)
    for i, row in enumerate(cgf.epochs):
        a, b = row["bumped_ms"], min(row["end_ms"] if row["end_ms"] is not None else end, end)
        nxt = cgf.epochs[i + 1]["bumped_ms"] if i + 1 < len(cgf.epochs) else None
        rec = row["reconciled_ms"]
        unowned = 0
        for tp, ws in window_start.items():
            lo_ = max(a, ws)
            if b > lo_:
                unowned += (b - lo_) - covered(owned_by_tp.get(tp, []), lo_, b)
        # moves at the bump's instant belong to the new epoch (a leaving member's tombstones come just before the
        # bump they cause); the last epoch takes those at the end of the run too
        lo_i = bisect_left(moves, (a, ""))
        hi_i = bisect_left(moves, (b, "")) if nxt is not None else len(moves)
        revoked = sum(1 for _, k in moves[lo_i:hi_i] if k == "revoked")
        ep = row["episode"]
        epoch_rows.append((
            run, scenario, seed, group_id, row["epoch"], a, b, row["trigger"], row["reason"],
            bool(ep.from_empty) if ep is not None else False, row["members"], row["target_epoch"],
            row["target_ms"], rec, None if rec is None else rec - a,
            nxt is not None and (rec is None or nxt < rec), revoked, (hi_i - lo_i) - revoked, unowned,
            row["max_member_epoch_lag"] or 0))
    E = {c: i for i, c in enumerate(EPOCH_COLUMNS)}
    recon = [r[E["reconciliation_ms"]] for r in epoch_rows
             if r[E["reconciliation_ms"]] is not None and not r[E["from_empty"]]]

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
        (sum(stopped_vals) if stopped_vals else (None if protocol in ("cooperative", "consumer") else 0)),
        (max(stopped_vals) if stopped_vals else (None if protocol in ("cooperative", "consumer") else 0)),
        unowned_total, (unowned_total / n_parts) if n_parts else None,
        sum(r[R["partitions_moved"]] or 0 for r in consuming), sum(r[R["partitions_revoked"]] or 0 for r in consuming),
        (sum(balances) / len(balances)) if balances else None, max(balances) if balances else None,
        sum(m.expiries for m in members.values()), first_assignment, first_ms, end,
        len(epoch_rows) if cgf.seen else None, (sum(recon) / len(recon)) if recon else None,
        max(recon) if recon else None,
        max((r[E["max_member_epoch_lag"]] for r in epoch_rows), default=0) if cgf.seen else None)
    return {"rebalances": rebalance_rows, "members": member_rows, "partitions": partition_rows,
            "ownership": ownership_rows, "groups": [group_row], "epochs": epoch_rows}


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
