"""``kgroup watch``: poll any Kafka cluster's groups and write what was seen as *observed* event records
(docs/events.md), so that ``kgroup analyze`` draws the rebalance timeline of a real cluster.

Theory of operation. A watcher sees only what Kafka's APIs show at each poll (ListGroups, DescribeGroups or
ConsumerGroupDescribe, OffsetFetch, ListOffsets -- kgroup/groupviews.py's admin client), never the coordinator's
own records. :class:`GroupTracker` compares each poll's view of a group with the previous one and writes the changes:

* ``ObservedSnapshot`` -- the whole view (state, protocol, members with their partitions, committed offsets, log end
  offsets and lag; for a KIP-848 group also its group and target assignment epochs and each member's epoch and
  target) on the first poll of a group and whenever its state, members, assignment or (KIP-848) epochs changed;
* ``ObservedMemberJoined`` / ``ObservedMemberLeft`` -- a member id appeared / disappeared between two polls;
* ``ObservedRebalance`` -- the first evidence of a rebalance: a rebalancing state seen (PreparingRebalance,
  CompletingRebalance; KIP-848's Assigning, Reconciling), or members or the assignment changed between two polls;
* ``ObservedGeneration`` -- a new assignment seen Stable: its members and partitions, and the partitions that moved;
  ``generation_id`` counts the generations the watcher saw (DescribeGroups does not return the generation), or is
  the group epoch of a KIP-848 group (ConsumerGroupDescribe does);
* ``ObservedEmpty`` / ``ObservedGroupGone`` -- the group became Empty / Dead or disappeared;
* ``ObservedCommit`` -- a committed offset changed (with the log end offset and the lag at that poll).

The log end offsets go to ``produce.jsonl`` beside ``events.jsonl`` (the format of ``kgroup run``), which is what
``kgroup analyze`` reads for the lag chart.

What a watcher cannot see, and the records say so in their precision field ``previous_poll_ms``: anything that
starts and finishes between two polls (a rebalance that ends with the same assignment is invisible), the exact time
a rebalance began (the first poll that showed it), and who revoked when. Poll faster for a finer timeline.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Iterable

from protocol.consumer_protocol import ConsumerProtocolAssignment, encode_assignment

REBALANCING = ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling")


@dataclass
class MemberView:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    partitions: tuple[tuple[str, int], ...]
    member_epoch: int | None = None
    #: KIP-848 groups (ConsumerGroupDescribe): the member's target assignment, and whether it speaks the consumer
    #: protocol (True) or the classic one inside a consumer group (False); None for classic groups
    target: tuple[tuple[str, int], ...] | None = None
    upgraded: bool | None = None

    def as_dict(self) -> dict[str, Any]:
        d = {"member_id": self.member_id, "group_instance_id": self.group_instance_id,
             "client_id": self.client_id, "client_host": self.client_host,
             "partitions": [list(tp) for tp in self.partitions], "member_epoch": self.member_epoch}
        if self.target is not None:
            d["target_partitions"] = [list(tp) for tp in self.target]
            d["upgraded"] = self.upgraded
        return d


@dataclass
class GroupView:
    """One poll's view of one group (what Kafka's APIs said)."""

    group_id: str
    state: str
    protocol_type: str
    protocol_name: str
    group_type: str
    coordinator: int
    members: dict[str, MemberView]
    committed: dict[tuple[str, int], int] = field(default_factory=dict)
    ends: dict[tuple[str, int], int | None] = field(default_factory=dict)
    group_epoch: int | None = None
    assignment_epoch: int | None = None

    def assignment(self) -> dict[str, tuple[tuple[str, int], ...]]:
        return {m: v.partitions for m, v in self.members.items()}

    def epochs(self) -> tuple:
        """A KIP-848 group's epochs (group, target assignment, each member's) and targets: a change is news."""
        return (self.group_epoch, self.assignment_epoch,
                sorted((m, v.member_epoch, v.target) for m, v in self.members.items()))


def assignment_hex(partitions: Iterable[tuple[str, int]]) -> str:
    """A member's partitions as ConsumerProtocolAssignment v0 bytes (what ``GroupMetadata`` members carry and
    ``analysis.fold`` decodes)."""
    by_topic: dict[str, list[int]] = {}
    for t, p in sorted(partitions):
        by_topic.setdefault(t, []).append(p)
    return encode_assignment(ConsumerProtocolAssignment(assigned_partitions=list(by_topic.items())), version=0).hex()


class GroupTracker:
    """The changes between consecutive views of one group, as observed records (``data`` dicts by type)."""

    def __init__(self, group_id: str, absent_before: bool = False) -> None:
        """``absent_before``: an earlier poll saw no such group (it appeared since: its members joined, its first
        rebalance started from Empty); else its first view is a baseline found mid-way."""
        self.group_id = group_id
        self.absent_before = absent_before
        self.prev: GroupView | None = None
        self.prev_ms: int | None = None
        self.generation = 0                    # generations observed (or the KIP-848 group epoch)
        self.stable_assignment: dict[str, tuple] | None = None
        self.in_rebalance = False
        self.gone = False

    def observe(self, now_ms: int, v: GroupView | None) -> list[tuple[str, dict[str, Any]]]:
        """Records for this poll (``v`` None: the group is not there any more)."""
        out: list[tuple[str, dict[str, Any]]] = []
        g = self.group_id
        prev, prev_ms = self.prev, self.prev_ms
        base = {"group_id": g, "previous_poll_ms": prev_ms}
        if v is None or v.state == "Dead":
            if prev is None:
                self.absent_before = True
            if prev is not None and not self.gone:
                for m in prev.members.values():
                    out.append(("ObservedMemberLeft", {**base, "member_id": m.member_id,
                                                       "group_instance_id": m.group_instance_id,
                                                       "reason": "observed: member left (the group is gone)"}))
                out.append(("ObservedGroupGone", {**base, "reason": "observed: the group is gone (Dead or no longer "
                                                                    "listed)"}))
                self.gone = True
            self.prev, self.prev_ms = None, now_ms
            self.stable_assignment, self.in_rebalance = None, False
            return out
        self.gone = False
        new = prev is None and self.absent_before   # it appeared since the last poll: a start from Empty
        changed = (prev is None or v.state != prev.state or set(v.members) != set(prev.members)
                   or v.assignment() != prev.assignment() or v.protocol_name != prev.protocol_name
                   or v.epochs() != prev.epochs())
        if changed:
            out.append(("ObservedSnapshot", {**base, **self._snapshot(v)}))
        joined = [m for m in v.members if prev is None or m not in prev.members]
        left = [m for m in (prev.members if prev else {}) if m not in v.members]
        if prev is not None:
            for m in left:
                pm = prev.members[m]
                out.append(("ObservedMemberLeft", {**base, "member_id": m, "group_instance_id": pm.group_instance_id,
                                                   "reason": "observed: member left between polls (LeaveGroup, "
                                                             "session expiry or fencing: not visible to a watcher)"}))
        for m in joined:
            mv = v.members[m]
            if prev is not None or new or v.state in REBALANCING:
                out.append(("ObservedMemberJoined", {**base, "member_id": m, "group_instance_id": mv.group_instance_id,
                                                     "client_id": mv.client_id, "client_host": mv.client_host,
                                                     "reason": "observed: member joined"}))
        kip848 = v.group_type == "consumer" and v.group_epoch is not None
        epoch_moved = kip848 and prev is not None and prev.group_epoch is not None and v.group_epoch > prev.group_epoch
        evidence = []
        if v.state in REBALANCING:
            evidence.append(f"state {v.state}")
        if new:
            evidence.append("the group appeared")
        if (prev is not None or new) and (joined or left):
            evidence.append(("members joined " + ", ".join(joined)) if joined else "")
            evidence.append(("members left " + ", ".join(left)) if left else "")
        if prev is not None and self.stable_assignment is not None and v.state == "Stable" \
                and v.assignment() != self.stable_assignment:
            evidence.append("the assignment changed")
        if epoch_moved:
            evidence.append(f"group epoch {prev.group_epoch} -> {v.group_epoch}")
        if v.state == "Empty" and prev is not None and prev.members:
            evidence.append("the group became Empty")
        evidence = [e for e in evidence if e]
        if evidence and not self.in_rebalance and (prev is not None or new or v.state in REBALANCING):
            out.append(("ObservedRebalance", {**base, "generation_id": self.generation, "group_state": v.state,
                                              "initial": not (prev and prev.members),
                                              "reason": self._reason(joined, left, evidence)}))
            self.in_rebalance = True
        self.absent_before = False
        if v.state == "Stable" and v.members and (self.in_rebalance or self.stable_assignment is None
                                                  or v.assignment() != self.stable_assignment):
            self.generation = v.group_epoch if kip848 else self.generation + 1
            moved = []
            if self.stable_assignment is not None:
                before = {tp: m for m, tps in self.stable_assignment.items() for tp in tps}
                for m, tps in sorted(v.assignment().items()):
                    for tp in tps:
                        if before.get(tp) not in (None, m):
                            moved.append({"topic": tp[0], "partition": tp[1], "from": before[tp], "to": m})
            gen = {**base, "generation_id": self.generation, "protocol_type": v.protocol_type,
                   "protocol_name": v.protocol_name, "leader": None, "moved": moved,
                   "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                                "client_id": m.client_id, "client_host": m.client_host,
                                "assignment": {"hex": assignment_hex(m.partitions)},
                                "partitions": [list(tp) for tp in m.partitions],
                                **({"member_epoch": m.member_epoch} if kip848 else {})}
                               for m in sorted(v.members.values(), key=lambda x: x.member_id)]}
            if kip848:
                gen.update(group_type="consumer", assignment_epoch=v.assignment_epoch)
            out.append(("ObservedGeneration", gen))
            self.stable_assignment = v.assignment()
            self.in_rebalance = False
        elif v.state == "Empty" and (self.in_rebalance or (prev is not None and prev.members)):
            self.generation = v.group_epoch if kip848 else self.generation + 1
            out.append(("ObservedEmpty", {**base, "generation_id": self.generation, "members": []}))
            self.stable_assignment = None
            self.in_rebalance = False
        for tp, off in sorted(v.committed.items()):
            if prev is None or prev.committed.get(tp) != off:
                end = v.ends.get(tp)
                out.append(("ObservedCommit", {**base, "topic": tp[0], "partition": tp[1], "offset": off,
                                               "log_end_offset": end,
                                               "lag": None if end is None or off < 0 else end - off}))
        self.prev, self.prev_ms = v, now_ms
        return out

    @staticmethod
    def _reason(joined: list[str], left: list[str], evidence: list[str]) -> str:
        if joined and not left:
            return "observed: member joined " + ", ".join(joined)
        if left and not joined:
            return "observed: member left " + ", ".join(left)
        return "observed: " + "; ".join(evidence)

    @staticmethod
    def _snapshot(v: GroupView) -> dict[str, Any]:
        offsets = []
        for tp in sorted(set(v.committed) | {tp for m in v.members.values() for tp in m.partitions}):
            off, end = v.committed.get(tp), v.ends.get(tp)
            offsets.append({"topic": tp[0], "partition": tp[1], "committed_offset": off, "log_end_offset": end,
                            "lag": None if off is None or end is None or off < 0 else end - off})
        return {"group_state": v.state, "protocol_type": v.protocol_type, "protocol_name": v.protocol_name,
                "group_type": v.group_type, "coordinator": v.coordinator, "group_epoch": v.group_epoch,
                "assignment_epoch": v.assignment_epoch,
                "members": [m.as_dict() for m in sorted(v.members.values(), key=lambda x: x.member_id)],
                "offsets": offsets}


class ObservedLog:
    """``events.jsonl`` (observed records in the event envelope, ``log_partition`` -1) and ``produce.jsonl`` (log
    end offsets when they change) in ``out_dir``."""

    def __init__(self, out_dir: str) -> None:
        os.makedirs(out_dir, exist_ok=True)
        self.events = open(os.path.join(out_dir, "events.jsonl"), "a", encoding="utf-8")
        self.produce = open(os.path.join(out_dir, "produce.jsonl"), "a", encoding="utf-8")
        self.offset = 0
        self.ends: dict[tuple[str, int], int] = {}
        self.counts: dict[str, int] = {}

    def write(self, ts: int, records: list[tuple[str, dict[str, Any]]]) -> None:
        for typ, data in records:
            self.events.write(json.dumps({"v": 1, "log_partition": -1, "log_offset": self.offset, "timestamp_ms": ts,
                                          "type": typ, "durable": False, "data": data}) + "\n")
            self.offset += 1
            self.counts[typ] = self.counts.get(typ, 0) + 1
        self.events.flush()

    def write_ends(self, ts: int, ends: dict[tuple[str, int], int | None]) -> None:
        for (t, p), end in sorted(ends.items()):
            if end is not None and self.ends.get((t, p)) != end:
                self.ends[(t, p)] = end
                self.produce.write(json.dumps({"t": ts, "topic": t, "partition": p, "end_offset": end}) + "\n")
        self.produce.flush()

    def close(self) -> None:
        self.events.close()
        self.produce.close()


async def poll_group(admin: Any, group: str, lag: bool = True) -> GroupView | None:
    """One group's view through Kafka's APIs (None: it does not exist)."""
    d = await admin.describe_group(group)
    if d.state == "Dead":
        return None
    from kgroup.groupviews import normal_state
    committed = {tp: c.offset for tp, c in (await admin.group_offsets(group)).items()} if lag else {}
    members = {m.member_id: MemberView(m.member_id, m.group_instance_id, m.client_id, m.host,
                                       tuple(sorted(m.assignment)), m.member_epoch,
                                       None if m.target_assignment is None else tuple(sorted(m.target_assignment)),
                                       m.upgraded) for m in d.members}
    parts = {tp for m in members.values() for tp in m.partitions} | set(committed)
    ends = await admin.list_offsets(parts) if lag and parts else {}
    return GroupView(group, normal_state(d.state), d.protocol_type, d.assignor, d.group_type,
                     d.coordinator.node_id, members, committed, ends, d.group_epoch, d.assignment_epoch)
