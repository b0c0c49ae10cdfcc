"""A run's sequence diagram, derived from what it recorded (:mod:`kgroup.runlog`): the messages between the
consumers and the coordinator and the coordinator's decisions, for ``kgroup diagram``.

The records and the trace hold the protocol's steps but not every request, so the messages are derived, each from
the record or trace entry that proves it:

==========================================  ===================================================================
drawn                                       from
==========================================  ===================================================================
FIND_COORDINATOR and its answer             trace ``coordinator`` (the consumer learned the broker)
JOIN_GROUP member_id="" + MEMBER_ID_REQUIRED  record ``PendingMemberAdded`` (KIP-394)
JOIN_GROUP with a member id                 records ``MemberJoined`` / ``MemberRejoined`` / ``StaticMemberReplaced``
note PreparingRebalance / initial delay     records ``RebalanceStarted`` / ``InitialRebalanceExtended``
note CompletingRebalance + JOIN_GROUP answers  record ``JoinCompleted`` (the leader's answer has the subscriptions)
SYNC_GROUP (leader: with the assignment)    record ``SyncReceived``
note Stable + SYNC_GROUP answers            record ``GroupMetadata`` with members (a follower syncing later is
                                            answered at its ``SyncReceived``)
LEAVE_GROUP and its answer                  record ``MemberRemoved`` with a LeaveGroup reason (other removals: note)
HEARTBEAT answered REBALANCE_IN_PROGRESS    trace ``state`` -> PREPARING_REBALANCE "group is already rebalancing"
notes owns / revokes / crashes              trace ``assigned`` / ``revoked`` / ``crash``
==========================================  ===================================================================

Heartbeats answered NONE and offset commits are not drawn (no step of the protocol depends on them). Records are
drawn at the coordinator's time, trace entries at the consumer's.

KIP-848 consumer groups (``group.protocol=consumer``) are drawn from their ``ConsumerGroup*`` records by
:mod:`kgroup.sequence_cg` (ConsumerGroupHeartbeat exchanges, group epochs, target assignments).

A trace without records (``trace.jsonl`` alone) names consumers, not groups: the consumer side is drawn from it
alone -- FIND_COORDINATOR, JOIN_GROUP sent (state -> PREPARING_REBALANCE) and answered (``joined``: generation,
leader or follower), SYNC_GROUP answered (``assigned``), LEAVE_GROUP (``left``) -- against one coordinator lifeline
per broker the consumers found.
"""

from __future__ import annotations

from typing import Optional

from kgroup.catalogue import Catalogue
from kgroup.diagram import Diagram, Message, Note, first_line
from kgroup.narrate_cg import TYPES as CONSUMER_GROUP_TYPES
from kgroup.runlog import (GroupTracker, assignment_of, client_of, ev_time, is_record, partitions_text, short_id,
                           shorten_ids)
from kgroup.sequence_cg import ConsumerGroupDrawing

DEFAULT_MAX_ITEMS = 400


class SequenceBuilder:
    def __init__(self, T: Catalogue, groups: Optional[set[str]] = None, t_from: Optional[int] = None,
                 t_to: Optional[int] = None, max_items: int = DEFAULT_MAX_ITEMS,
                 topic_names: tuple[str, ...] = ()) -> None:
        self.T = T
        self.topic_names = topic_names
        self.only = groups
        self.t_from = t_from
        self.t_to = t_to
        self.max_items = max_items
        self.tracker = GroupTracker()
        self.consumer_pid: dict[str, str] = {}
        self.coord_pid: dict[str, str] = {}     # group -> participant id
        self.coord_label: dict[str, str] = {}   # participant id -> label
        self.items: list = []
        self.dropped = 0
        self.stored: dict[str, dict[str, list]] = {}  # group -> member -> partitions of the last Stable generation
        self.groups_seen: list[str] = []
        self.t_first: Optional[int] = None
        self.t_last: Optional[int] = None
        self.order: dict[str, int] = {}
        self.trace_only = False
        self.drawing = True
        self.broker_of: dict[str, Optional[int]] = {}   # trace-only: the broker each consumer found
        self.member_of: dict[str, str] = {}
        self.generation_of: dict[str, int] = {}

    # --- participants --------------------------------------------------------------------------------------------

    def consumer(self, name: str) -> str:
        pid = self.consumer_pid.get(name)
        if pid is None:
            pid = self.consumer_pid[name] = f"C{len(self.consumer_pid)}"
        return pid

    def coordinator(self, gid: str) -> str:
        pid = self.coord_pid.get(gid)
        if pid is None:
            node = self.tracker.group(gid).coordinator
            label = (self.T("diagram.coordinator", node=node) if node is not None
                     else self.T("common.coordinator"))
            # groups coordinated by the same broker share its lifeline
            pid = next((p for p, lab in self.coord_label.items() if lab == label and node is not None), None)
            if pid is None:
                pid = f"K{len(self.coord_label)}"
                self.coord_label[pid] = label
            self.coord_pid[gid] = pid
        return pid

    def wanted(self, gid: Optional[str]) -> bool:
        return bool(gid) and (self.only is None or gid in self.only)

    def in_window(self, t: int) -> bool:
        return (self.t_from is None or t >= self.t_from) and (self.t_to is None or t <= self.t_to)

    def add(self, item) -> None:
        if not self.drawing:
            return
        if len(self.items) >= self.max_items:
            self.dropped += 1
            return
        self.items.append(item)
        self.t_first = item.t_ms if self.t_first is None else self.t_first
        self.t_last = item.t_ms

    def note_text(self, gid: str, text: str) -> str:
        several = len({g for g in self.coord_pid if self.coord_pid[g] == self.coord_pid.get(gid)}) > 1
        return self.T("diagram.group_prefix", group=gid, text=text) if several else text

    # --- building ------------------------------------------------------------------------------------------------

    def build(self, events: list[dict], title_source: str) -> Diagram:
        self.tracker.prescan(events)
        # KIP-848 records name topics by id: the names are those of the offset commits and the ones given
        names = set(self.topic_names) | {ev["data"]["topic"] for ev in events
                                         if is_record(ev) and ev["type"] == "OffsetCommit"}
        self.cg = ConsumerGroupDrawing(self.T, self.add, self.consumer, self.coordinator, self.note_text,
                                       sorted(names))
        for ev in events:  # lifelines left to right in the order the consumers first appear in the run
            name = ev.get("consumer") if not is_record(ev) else ev.get("data", {}).get("client_id")
            if name and name not in self.order:
                self.order[name] = len(self.order)
        # coordinators first known from the consumers' FIND_COORDINATOR answers
        for ev in events:
            if not is_record(ev) and ev.get("type") == "coordinator":
                gid = self.tracker.group_of_client.get(ev.get("consumer", ""))
                if gid and self.tracker.group(gid).coordinator is None:
                    self.tracker.group(gid).coordinator = ev.get("node")
        self.trace_only = not any(is_record(ev) for ev in events)
        for ev in events:  # every event moves the state on; only those in the window are drawn
            t = ev_time(ev)
            self.drawing = self.in_window(t)
            if is_record(ev):
                self.record(ev, t)
            elif self.trace_only:
                self.consumer_side(ev, t)
            else:
                self.trace(ev, t)
            self.tracker.update(ev)
        return self.diagram(title_source)

    def heartbeat_rebalancing(self, c: str, k: str, t: int, generation) -> None:
        """A heartbeat answered REBALANCE_IN_PROGRESS. The answer came first: the revocation it caused (traced
        just before it, at the same instant) is moved after it."""
        T = self.T
        before = len(self.items)
        at = before
        while at > 0 and isinstance(self.items[at - 1], Note) and self.items[at - 1].t_ms == t \
                and self.items[at - 1].over == (c,):
            at -= 1
        self.add(Message(t, c, k, T("diagram.heartbeat_req", generation=generation)))
        self.add(Message(t, k, c, T("diagram.heartbeat_resp", error="REBALANCE_IN_PROGRESS"), reply=True))
        added = len(self.items) - before
        if added and at < before:
            self.items[at:] = self.items[before:] + self.items[at:before]

    def consumer_side(self, ev: dict, t: int) -> None:
        """Messages from one consumer's trace alone (no records, so no group ids)."""
        T = self.T
        kind = ev.get("type")
        name = ev.get("consumer")
        if not name:
            return
        if kind == "coordinator":
            self.broker_of[name] = ev.get("node")
        if not self.drawing:
            if kind == "joined":
                self.member_of[name] = ev.get("member_id")
                self.generation_of[name] = ev.get("generation")
            return
        if kind not in ("coordinator", "state", "joined", "assigned", "left", "revoked", "crash"):
            return
        node = self.broker_of.get(name)
        key = f"broker {node}"
        if key not in self.coord_pid:
            self.coord_pid[key] = f"K{len(self.coord_label)}"
            self.coord_label[self.coord_pid[key]] = T("diagram.coordinator", node="?" if node is None else node)
        c, k = self.consumer(name), self.coord_pid[key]
        if kind == "coordinator":
            self.add(Message(t, c, k, T("diagram.find_req", key="group.id")))
            self.add(Message(t, k, c, T("diagram.find_resp", error="NONE", node=node), reply=True))
        elif kind == "state" and ev.get("new") == "PREPARING_REBALANCE" and ev.get("old") != "PREPARING_REBALANCE":
            if ev.get("reason") == "group is already rebalancing":
                self.heartbeat_rebalancing(c, k, t, self.generation_of.get(name, "?"))
            member = self.member_of.get(name)
            self.add(Message(t, c, k, T("diagram.join_req", member=short_id(member), protocols="...") if member
                             else T("diagram.join_req_new")))
        elif kind == "joined":
            self.member_of[name] = ev.get("member_id")
            self.generation_of[name] = ev.get("generation")
            key = "diagram.join_resp_leader_trace" if ev.get("leader") else "diagram.join_resp_follower_trace"
            self.add(Message(t, k, c, T(key, generation=ev.get("generation")), reply=True))
        elif kind == "assigned":
            self.add(Message(t, c, k, T("diagram.sync_req_follower", generation=ev.get("generation"))))
            self.add(Message(t, k, c, T("diagram.sync_resp", error="NONE",
                                        partitions=partitions_text(ev.get("owned", []))), reply=True))
        elif kind == "left":
            self.add(Message(t, c, k, T("diagram.leave_req")))
        elif kind == "revoked":
            self.add(Note(t, (c,), T("diagram.note_revoked", partitions=partitions_text(ev.get("partitions", [])))))
        elif kind == "crash":
            self.add(Note(t, (c,), T("diagram.note_crash")))

    def diagram(self, title_source: str) -> Diagram:
        groups = ", ".join(self.groups_seen) or "-"
        start = self.t_from if self.t_from is not None else (self.t_first or 0)
        end = self.t_to if self.t_to is not None else (self.t_last or 0)
        d = Diagram(self.T("diagram.title_run", source=title_source, groups=groups, start=start, end=end))
        for name, pid in sorted(self.consumer_pid.items(), key=lambda kv: self.order.get(kv[0], len(self.order))):
            d.add_participant(pid, name)
        for pid, label in self.coord_label.items():
            d.add_participant(pid, label)
        d.items = list(self.items)
        if self.dropped:
            anchor = d.participants[-1][0] if d.participants else "K0"
            d.items.append(Note(self.t_last or 0, (anchor,), self.T("diagram.note_more", n=self.dropped)))
        return d

    def _group_touch(self, gid: str) -> None:
        if gid not in self.groups_seen:
            self.groups_seen.append(gid)

    def record(self, ev: dict, t: int) -> None:
        T = self.T
        d = ev.get("data", {})
        gid = d.get("group_id")
        if not self.wanted(gid):
            return
        kind = ev["type"]
        if kind in CONSUMER_GROUP_TYPES:
            self._group_touch(gid)
            self.cg.record(ev, t)
            return
        g = self.tracker.group(gid)
        tr = self.tracker

        def c_of(mid: str) -> str:
            return self.consumer(tr.member_client(gid, mid) if mid in g.members else client_of(mid))

        if kind in ("PendingMemberAdded", "MemberJoined", "MemberRejoined", "StaticMemberReplaced",
                    "RebalanceStarted", "InitialRebalanceExtended", "JoinCompleted", "SyncReceived",
                    "GroupMetadata", "MemberRemoved"):
            self._group_touch(gid)
        k = self.coordinator(gid) if kind != "OffsetCommit" else None
        if kind == "PendingMemberAdded":
            c = self.consumer(client_of(d["member_id"]))
            self.add(Message(t, c, k, T("diagram.join_req_new")))
            self.add(Message(t, k, c, T("diagram.join_resp_required", member=short_id(d["member_id"])), reply=True))
        elif kind in ("MemberJoined", "MemberRejoined"):
            c = self.consumer(d.get("client_id") or tr.member_client(gid, d["member_id"]))
            protos = ", ".join(p[0] for p in d.get("protocols", []))
            self.add(Message(t, c, k, T("diagram.join_req", member=short_id(d["member_id"]), protocols=protos)))
        elif kind == "StaticMemberReplaced":
            c = self.consumer(tr.member_client(gid, d["old_member_id"]))
            protos = ", ".join(p[0] for p in d.get("protocols", []))
            self.add(Message(t, c, k, T("diagram.join_req", member='""', protocols=protos)))
            self.add(Note(t, (k,), self.note_text(gid, T("diagram.note_static", instance=d.get("group_instance_id"),
                                                         new=short_id(d["new_member_id"]),
                                                         old=short_id(d["old_member_id"])))))
        elif kind == "RebalanceStarted":
            if d.get("initial"):
                text = T("diagram.note_initial", delay="group.initial.rebalance.delay.ms")
            else:
                text = T("diagram.note_preparing", generation=d.get("generation_id"),
                         reason=first_line(shorten_ids(d.get("reason", "")), 70))
            self.add(Note(t, (k,), self.note_text(gid, text)))
        elif kind == "InitialRebalanceExtended":
            self.add(Note(t, (k,), self.note_text(gid, T("diagram.note_extended", ms=d.get("delay_ms")))))
        elif kind == "JoinCompleted":
            members = d.get("members", [])
            if not members:
                self.add(Note(t, (k,), self.note_text(gid, T("diagram.note_empty", generation=d["generation_id"]))))
                return
            self.add(Note(t, (k,), self.note_text(gid, T("diagram.note_completing", generation=d["generation_id"],
                                                         protocol=d.get("protocol_name"),
                                                         leader=short_id(d.get("leader"))))))
            for mid in members:
                if mid == d.get("leader"):
                    label = T("diagram.join_resp_leader", generation=d["generation_id"], n=len(members))
                else:
                    label = T("diagram.join_resp_follower", generation=d["generation_id"],
                              leader=short_id(d.get("leader")))
                self.add(Message(t, k, c_of(mid), label, reply=True))
        elif kind == "SyncReceived":
            mid = d["member_id"]
            c = c_of(mid)
            if mid == g.leader:
                self.add(Message(t, c, k, T("diagram.sync_req_leader", generation=d.get("generation_id"),
                                            n=len(g.join_members))))
            else:
                self.add(Message(t, c, k, T("diagram.sync_req_follower", generation=d.get("generation_id"))))
                if g.state == "Stable":  # answered at once with the stored assignment
                    parts = self.stored.get(gid, {}).get(mid, [])
                    self.add(Message(t, k, c, T("diagram.sync_resp", error="NONE", partitions=partitions_text(parts)),
                                     reply=True))
        elif kind == "GroupMetadata":
            members = d.get("members") or []
            if not members:
                return
            stored = {m["member_id"]: assignment_of((m.get("assignment") or {}).get("hex")) for m in members}
            self.stored[gid] = stored
            if g.state == "CompletingRebalance" and d.get("generation_id") == g.generation:
                self.add(Note(t, (k,), self.note_text(gid, T("diagram.note_stable", generation=d["generation_id"]))))
                for mid in g.synced | {g.leader}:
                    if mid in stored:
                        self.add(Message(t, k, c_of(mid), T("diagram.sync_resp", error="NONE",
                                                            partitions=partitions_text(stored[mid])), reply=True))
        elif kind == "MemberRemoved":
            mid = d["member_id"]
            c = c_of(mid)
            reason = d.get("reason", "")
            if reason.startswith("LeaveGroup"):
                self.add(Message(t, c, k, T("diagram.leave_req")))
                self.add(Message(t, k, c, T("diagram.resp", api="LEAVE_GROUP", error="NONE"), reply=True))
            else:
                self.add(Note(t, (k,), self.note_text(gid, T("diagram.note_removed", member=short_id(mid),
                                                             reason=first_line(shorten_ids(reason), 60)))))
        elif kind == "CoordinatorLoaded":
            pass

    def trace(self, ev: dict, t: int) -> None:
        T = self.T
        kind = ev.get("type")
        name = ev.get("consumer")
        gid = self.tracker.group_of_client.get(name or "")
        if not name or not self.wanted(gid):
            return
        if kind == "coordinator":
            self._group_touch(gid)
            c, k = self.consumer(name), self.coordinator(gid)
            self.add(Message(t, c, k, T("diagram.find_req", key=gid)))
            self.add(Message(t, k, c, T("diagram.find_resp", error="NONE", node=ev.get("node")), reply=True))
        elif kind == "state" and ev.get("new") == "PREPARING_REBALANCE" and ev.get("old") == "STABLE" \
                and ev.get("reason") == "group is already rebalancing":
            c, k = self.consumer(name), self.coordinator(gid)
            self.heartbeat_rebalancing(c, k, t, self.tracker.group(gid).generation)
        elif kind == "assigned":
            self.add(Note(t, (self.consumer(name),), T("diagram.note_assigned",
                                                       partitions=partitions_text(ev.get("owned", [])))))
        elif kind == "revoked":
            self.add(Note(t, (self.consumer(name),), T("diagram.note_revoked",
                                                       partitions=partitions_text(ev.get("partitions", [])))))
        elif kind == "crash":
            self.add(Note(t, (self.consumer(name),), T("diagram.note_crash")))


def build_diagram(events: list[dict], T: Catalogue, source: str, groups: Optional[set[str]] = None,
                  t_from: Optional[int] = None, t_to: Optional[int] = None,
                  max_items: int = DEFAULT_MAX_ITEMS, topic_names: tuple[str, ...] = ()) -> Diagram:
    return SequenceBuilder(T, groups, t_from, t_to, max_items, topic_names).build(events, source)
