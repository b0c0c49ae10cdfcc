"""Facts about a run computed from its output files alone -- ``events.jsonl`` (the coordinator's records,
docs/events.md), ``trace.jsonl`` (the simulator's trace) and ``produce.jsonl`` -- with kafka-python's
consumer-protocol codec for the assignment bytes. Nothing here imports kgroup: these are the independent checks of
what the invariant checker reports (imported by name: the test directories are not packages).

The rules, from Kafka's group protocol:

* ``generation_problems`` -- a group's persisted generation (``GroupMetadata``) never goes down; each join phase
  (``JoinCompleted``) opens a higher generation than the previous one of the same coordinator (after a
  ``CoordinatorLoaded`` a new coordinator may reuse a generation the old one reached only in memory: Kafka
  persists the generation at SyncGroup).
* ``assignment_problems`` -- no ``GroupMetadata`` assigns a partition to two members.
* ``overlap_problems`` -- no partition is held by two consumers of a group at the same instant (between their
  ``assigned`` and ``revoked``/``lost``/exit in the trace), unless the earlier holder had already been removed
  from the group by the coordinator (``MemberRemoved``, or fenced by a ``StaticMemberReplaced``) -- Kafka's
  generation fencing: a zombie (a paused process, a poll-timed-out one) still holds partitions until it learns.
* ``final_owners`` / ``last_assignment`` -- who holds what at the end (trace) and what the coordinator's last
  Stable generation assigned (events): they must agree, and cover every partition of the subscribed topics once.
* ``committed`` / ``end_offsets`` -- every group's last committed offsets, and every partition's log end offset.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription


def _bytes(v: Any) -> bytes:
    return bytes.fromhex(v["hex"]) if isinstance(v, dict) else b""


def assignment(hexed: Any) -> set[tuple[str, int]]:
    raw = _bytes(hexed)
    if not raw:
        return set()
    a = ConsumerProtocolAssignment.decode(raw)
    return {(tp.topic, p) for tp in a.assigned_partitions for p in tp.partitions}


def subscription(hexed: Any) -> set[str]:
    raw = _bytes(hexed)
    return set(ConsumerProtocolSubscription.decode(raw).topics) if raw else set()


def topic_names(files: "RunFiles") -> dict[str, str]:
    """topic id (as the records write it: Kafka's base64 form) -> topic name, for the topics the run produced to or
    its members subscribed to."""
    from coordinator.cluster import topic_id
    from protocol.uuids import uuid_to_string
    topics = {p["topic"] for p in files.produce}
    topics |= {t for e in files.events if e["type"] == "ConsumerGroupMemberMetadata"
               for t in e["data"]["subscribed_topic_names"]}
    return {uuid_to_string(topic_id(t)): t for t in topics}


def _tp(name: str) -> tuple[str, int]:
    topic, _, p = name.rpartition("-")
    return topic, int(p)


class RunFiles:
    def __init__(self, events: list[str], trace: list[str], produce: list[str]) -> None:
        self.events = [json.loads(line) for line in events]
        self.trace = [json.loads(line) for line in trace]
        self.produce = [json.loads(line) for line in produce]

    @classmethod
    def of(cls, res: Any) -> "RunFiles":
        """The files a run writes (``RunResult.write``), as lines."""
        return cls(res.events_lines(), res.trace_lines(), res.produce_lines())

    def groups(self) -> list[str]:
        return sorted({e["data"]["group_id"] for e in self.events if e["data"]["group_id"]})

    def _of(self, group: str, *types: str) -> list[dict]:
        return [e for e in self.events if e["data"]["group_id"] == group and e["type"] in types]

    # --- the coordinator's records -------------------------------------------------------------------------------
    def generation_problems(self, group: str) -> list[str]:
        problems = []
        persisted = -1
        joined: dict[int, int] = {}  # log partition -> last JoinCompleted generation of its current coordinator
        for e in self.events:
            d = e["data"]
            if e["type"] == "CoordinatorLoaded":
                joined.pop(e["log_partition"], None)
            elif d["group_id"] != group:
                continue
            elif e["type"] == "GroupMetadata":
                if d["generation_id"] < persisted:
                    problems.append(f"persisted generation {d['generation_id']} after {persisted}")
                persisted = max(persisted, d["generation_id"])
            elif e["type"] == "JoinCompleted":
                last = joined.get(e["log_partition"])
                if last is not None and d["generation_id"] <= last:
                    problems.append(f"join completed generation {d['generation_id']} after {last}")
                joined[e["log_partition"]] = d["generation_id"]
            elif e["type"] == "GroupTombstone":
                persisted = -1
        return problems

    def stable_generations(self, group: str) -> list[dict]:
        """The ``GroupMetadata`` records with members, in order."""
        return [e["data"] for e in self._of(group, "GroupMetadata") if e["data"]["members"]]

    def assignment_problems(self, group: str) -> list[str]:
        problems = []
        for g in self.stable_generations(group):
            seen: dict[tuple[str, int], str] = {}
            for m in g["members"]:
                for tp in assignment(m["assignment"]):
                    if tp in seen:
                        problems.append(f"generation {g['generation_id']}: {tp} assigned to {seen[tp]} and "
                                        f"{m['member_id']}")
                    seen[tp] = m["member_id"]
        return problems

    def last_assignment(self, group: str) -> dict[str, set[tuple[str, int]]]:
        """member id -> partitions, in the last Stable generation."""
        gens = self.stable_generations(group)
        return {m["member_id"]: assignment(m["assignment"]) for m in gens[-1]["members"]} if gens else {}

    def last_subscribed_topics(self, group: str) -> set[str]:
        gens = self.stable_generations(group)
        return set().union(*(subscription(m["subscription"]) for m in gens[-1]["members"])) if gens else set()

    def committed(self, group: str) -> dict[tuple[str, int], int]:
        out: dict[tuple[str, int], int] = {}
        for e in self._of(group, "OffsetCommit", "OffsetTombstone"):  # (a GroupTombstone leaves offsets alone)
            d = e["data"]
            if e["type"] == "OffsetCommit":
                out[(d["topic"], d["partition"])] = d["offset"]
            else:
                out.pop((d["topic"], d["partition"]), None)
        return out

    def end_offsets(self) -> dict[tuple[str, int], int]:
        out: dict[tuple[str, int], int] = {}
        for p in self.produce:
            out[(p["topic"], p["partition"])] = p["end_offset"]
        return out

    # --- the consumers' side (trace) -------------------------------------------------------------------------------
    def _timeline(self) -> list[tuple[int, int, dict]]:
        """Trace events and fencing records in time order (at one millisecond, records first: a rebalance that
        follows a removal takes round trips, so nothing is assigned in the millisecond of the removal)."""
        items = [(e["timestamp_ms"], 0, e) for e in self.events
                 if e["type"] in ("MemberRemoved", "StaticMemberReplaced", "ConsumerGroupMemberMetadataTombstone",
                                  "ConsumerGroupMemberMetadata")]
        items += [(d["t"], 1, d) for d in self.trace]
        return sorted(items, key=lambda x: (x[0], x[1]))  # stable: each file's own order within a millisecond

    def group_of(self) -> dict[str, str]:
        """consumer -> group id: a consumer's client id is its name (``MemberJoined``,
        ``ConsumerGroupMemberMetadata``)."""
        return {e["data"]["client_id"]: e["data"]["group_id"] for e in self.events
                if e["type"] in ("MemberJoined", "ConsumerGroupMemberMetadata")}

    # --- consumer groups (KIP-848): their records -------------------------------------------------------------------
    def is_consumer_group(self, group: str) -> bool:
        """The group ends as a consumer group: its last group-level record is a ``ConsumerGroupMetadata``."""
        kinds = ("GroupMetadata", "GroupTombstone", "ConsumerGroupMetadata", "ConsumerGroupMetadataTombstone")
        last = [e["type"] for e in self._of(group, *kinds)]
        return bool(last) and last[-1] == "ConsumerGroupMetadata"

    def cg_current(self, group: str) -> dict[str, tuple[set, set]]:
        """member id -> (assigned, pending revocation) at the end, from the current-assignment records (topic ids
        named by the topics' ids as the records write them)."""
        names = topic_names(self)
        out: dict[str, tuple[set, set]] = {}
        for e in self._of(group, "ConsumerGroupCurrentMemberAssignment",
                          "ConsumerGroupCurrentMemberAssignmentTombstone"):
            d = e["data"]
            if e["type"].endswith("Tombstone"):
                out.pop(d["member_id"], None)
            else:
                out[d["member_id"]] = ({(names[t["topic_id"]], p) for t in d["assigned_partitions"]
                                        for p in t["partitions"]},
                                       {(names[t["topic_id"]], p) for t in d["partitions_pending_revocation"]
                                        for p in t["partitions"]})
        return out

    def cg_assignment_problems(self, group: str) -> list[str]:
        """After every current-assignment record, no partition is held (assigned or pending revocation) by two
        members (Kafka's partition epochs)."""
        names = topic_names(self)
        current: dict[str, set] = {}
        problems = []
        for e in self._of(group, "ConsumerGroupCurrentMemberAssignment",
                          "ConsumerGroupCurrentMemberAssignmentTombstone"):
            d = e["data"]
            if e["type"].endswith("Tombstone"):
                current.pop(d["member_id"], None)
                continue
            mine = {(names[t["topic_id"]], p) for k in ("assigned_partitions", "partitions_pending_revocation")
                    for t in d[k] for p in t["partitions"]}
            for other, theirs in current.items():
                if other != d["member_id"] and mine & theirs:
                    problems.append(f"t={e['timestamp_ms']}: {sorted(mine & theirs)} held by {d['member_id']} "
                                    f"and {other}")
            current[d["member_id"]] = mine
        return problems

    def cg_subscribed_topics(self, group: str) -> set[str]:
        members: dict[str, set] = {}
        for e in self._of(group, "ConsumerGroupMemberMetadata", "ConsumerGroupMemberMetadataTombstone"):
            d = e["data"]
            if e["type"].endswith("Tombstone"):
                members.pop(d["member_id"], None)
            else:
                members[d["member_id"]] = set(d["subscribed_topic_names"])
        return set().union(*members.values()) if members else set()

    def overlap_problems(self) -> list[str]:
        problems = []
        group_of = self.group_of()
        member_of: dict[str, str] = {}          # consumer -> its current member id
        fenced: set[str] = set()                # member ids the coordinator removed or replaced
        held: dict[str, dict[tuple[str, int], set[str]]] = defaultdict(lambda: defaultdict(set))
        owned: dict[str, set[tuple[str, int]]] = defaultdict(set)
        for _t, kind, d in self._timeline():
            if kind == 0:
                if d["type"] == "ConsumerGroupMemberMetadata":
                    fenced.discard(d["data"]["member_id"])  # (re)created: KIP-848 members rejoin with their id
                elif d["type"] == "StaticMemberReplaced":
                    fenced.add(d["data"]["old_member_id"])
                else:
                    fenced.add(d["data"]["member_id"])
                continue
            c = d.get("consumer")
            typ = d["type"]
            if typ == "joined" or typ == "start" and "member_id" in d:
                member_of[c] = d["member_id"]
            elif typ == "assigned":
                g = group_of[c]
                for tp in {_tp(x) for x in d["owned"]} - owned[c]:
                    for other in sorted(held[g][tp]):
                        if member_of.get(other) not in fenced:
                            problems.append(f"t={d['t']}: {c} took {tp} while {other} ({member_of.get(other)}), "
                                            f"not removed from group {g}, holds it")
                    held[g][tp].add(c)
                    owned[c].add(tp)
            elif typ in ("revoked", "lost"):
                for tp in map(_tp, d["partitions"]):
                    owned[c].discard(tp)
                    held[group_of[c]][tp].discard(c)
            elif typ in ("crash", "closed"):
                for tp in owned.pop(c, set()):
                    held[group_of[c]][tp].discard(c)
        return problems

    def final_owners(self) -> dict[str, set[tuple[str, int]]]:
        """consumer -> the partitions it holds at the end (running consumers only)."""
        owned: dict[str, set[tuple[str, int]]] = {}
        for d in self.trace:
            c, typ = d.get("consumer"), d["type"]
            if typ == "start":
                owned[c] = set()
            elif typ == "assigned":
                owned[c] = {_tp(x) for x in d["owned"]}
            elif typ in ("revoked", "lost"):
                owned[c] -= set(map(_tp, d["partitions"]))
            elif typ in ("crash", "closed"):
                owned.pop(c, None)
        return owned

    def member_ids(self) -> dict[str, str]:
        """consumer -> its last member id (``joined``; a consumer-protocol member's ``start``)."""
        return {d["consumer"]: d["member_id"] for d in self.trace
                if d["type"] == "joined" or d["type"] == "start" and "member_id" in d}
