"""Narration of the classic rebalance protocol from what a run recorded: each step, with the values computed at
that moment and the Kafka rule behind it, in the catalogue's languages.

:class:`Narrator` is fed the merged stream of :mod:`kgroup.runlog` (coordinator records and, for scenario runs,
the simulator's trace) one event at a time and prints lines ``[time] who  text``. It is used by
``kgroup run --narrate`` (after the deterministic run, in virtual time) and ``kgroup serve --narrate`` (live, from
``KGroupServer.add_listener``: records and the coordinator's responses).

What each source contributes:

* records (the coordinator): MEMBER_ID_REQUIRED (``PendingMemberAdded``), a JoinGroup parked (``MemberJoined``,
  ``MemberRejoined``), PreparingRebalance and why (``RebalanceStarted``), the initial delay, the join phase's
  end with generation, vote and leader (``JoinCompleted``), SyncGroups (``SyncReceived``), the assignment stored
  and the group Stable (``GroupMetadata``), members removed and why (``MemberRemoved``), offset commits;
* trace (each consumer): the coordinator it found (FIND_COORDINATOR), why it sends JoinGroup (first join, or its
  heartbeat answered REBALANCE_IN_PROGRESS, metadata or subscription changes), the JoinGroup and SyncGroup
  answers, its rebalance callbacks, close/crash, faults and the producer's records.

KIP-848 consumer groups' ``ConsumerGroup*`` records go to :mod:`kgroup.narrate_cg` (``Narrator.cg``); live,
:class:`ServeNarrator` also tells the ConsumerGroupHeartbeat answers that carry an assignment or an error, and
which removals were leaves (the answers of the same operation) rather than timers.

Heartbeats answered NONE leave no record and no trace entry, so they are not narrated; a heartbeat answered
REBALANCE_IN_PROGRESS shows as the reason of the consumer's next JoinGroup.

The protocol vote is recomputed from the members' JoinGroup protocols exactly as ``ClassicGroup.selectProtocol``
does (candidates supported by every member; each votes its first candidate; most votes win); the winner shown
is the one the coordinator recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

from kgroup.catalogue import Catalogue, pad
from kgroup.narrate_cg import TYPES as CONSUMER_GROUP_TYPES
from kgroup.narrate_cg import ConsumerGroupNarration
from kgroup.runlog import (GroupTracker, assignment_of, client_of, ev_time, is_record, partitions_text, short_id,
                           shorten_ids, subscription_topics)
from kgroup.stepper import Stepper


class StopNarration(Exception):
    """The learner quit (``q`` in step mode)."""


@dataclass
class NarrationContext:
    """What the records and trace do not say but the run's configuration does."""

    offsets_partitions: int = 50              # offsets.topic.num.partitions
    initial_delay_ms: Optional[int] = 3000    # group.initial.rebalance.delay.ms (None: unknown)
    topics_of: dict[str, list[str]] = field(default_factory=dict)      # consumer -> subscription
    partitions_of: dict[str, int] = field(default_factory=dict)        # topic -> partitions
    group_of: dict[str, str] = field(default_factory=dict)             # consumer -> group.id
    wide_groups: bool = False                 # several groups: name the group in the coordinator's column
    consumer_assignor: str = "uniform"        # group.consumer.assignors' first (KIP-848's default assignor)
    topic_names: Optional[Callable[[], Iterable[str]]] = None  # the cluster's topics now (names KIP-848's ids)
    live: bool = False                        # kgroup serve: a removal without a leave answer was a timer's


WHO_WIDTH = 12


class Narrator:
    def __init__(self, T: Catalogue, ctx: NarrationContext, emit: Callable[[str], None],
                 stepper: Optional[Stepper] = None, tracker: Optional[GroupTracker] = None, t0_ms: int = 0) -> None:
        self.T = T
        self.t0_ms = t0_ms
        self.ctx = ctx
        self.emit = emit
        self.stepper = stepper
        self.tracker = tracker or GroupTracker()
        self.explained_rule: set[str] = set()
        self._commits: Optional[tuple[str, int, int]] = None   # (group, time, partition) being gathered
        self._commit_offsets: dict[str, int] = {}
        self._committed: dict[tuple[str, str], int] = {}   # (group, topic-partition) -> last offset narrated
        self._t = 0
        self.cg = ConsumerGroupNarration(
            T, self.line, self.more, self.coord, default_assignor=ctx.consumer_assignor,
            topic_names=ctx.topic_names or (lambda: ctx.partitions_of.keys()), live=ctx.live)

    # --- output -------------------------------------------------------------------------------------------------

    def line(self, who: str, text: str, step: bool = True) -> None:
        self.emit(f"  [{(self._t - self.t0_ms) / 1000:8.3f}s] {pad(who, WHO_WIDTH)} {text}")
        if step and self.stepper is not None and not self.stepper.step():
            raise StopNarration()

    def more(self, text: str) -> None:
        """A continuation line under the previous one (no pause of its own)."""
        self.emit(f"  {'':11} {'':{WHO_WIDTH}} {text}")

    def coord(self, gid: str) -> str:
        name = self.T("common.coordinator")
        return f"{name}({gid})" if self.ctx.wide_groups else name

    def mid(self, member_id: Optional[str]) -> str:
        return short_id(member_id)

    # --- the stream --------------------------------------------------------------------------------------------

    def narrate(self, events: list[dict]) -> None:
        for consumer, gid in self.ctx.group_of.items():  # a consumer refused at once leaves no record
            self.tracker.group_of_client.setdefault(consumer, gid)
        self.tracker.prescan(events)
        self.cg.prepare(events)
        for ev in events:
            self.feed(ev)
        self.flush()

    def feed(self, ev: dict) -> None:
        t = ev_time(ev)
        if self._commits is not None and (not is_record(ev) or ev.get("type") != "OffsetCommit"
                                          or (ev["data"].get("group_id"), t) != self._commits[:2]):
            self.flush()
        self._t = t
        try:
            if is_record(ev):
                self.record(ev)
            else:
                self.trace(ev)
        finally:
            self.tracker.update(ev)

    def flush(self) -> None:
        """Narrate the offsets committed at one instant, if any moved since the last ones narrated (auto-commit
        repeats unchanged offsets every auto.commit.interval.ms)."""
        if self._commits is not None:
            gid, t, partition = self._commits
            offsets, self._commits, self._commit_offsets = self._commit_offsets, None, {}
            if any(self._committed.get((gid, tp)) != off for tp, off in offsets.items()):
                for tp, off in offsets.items():
                    self._committed[(gid, tp)] = off
                saved, self._t = self._t, t
                self.line(self.coord(gid), self.T("narr.offset_commit", group=gid, partition=partition,
                                                  offsets=", ".join(f"{tp}={off}" for tp, off in offsets.items())),
                          step=False)
                self._t = saved

    # --- records -------------------------------------------------------------------------------------------------

    def record(self, ev: dict) -> None:
        T = self.T
        kind = ev["type"]
        if kind in CONSUMER_GROUP_TYPES:  # KIP-848 consumer groups: their own records, their own narration
            self.cg.record(ev)
            return
        d = ev.get("data", {})
        gid = d.get("group_id", "")
        g = self.tracker.group(gid) if gid else None
        who = self.coord(gid)
        if kind == "PendingMemberAdded":
            self.line(who, T("narr.pending_added", client=client_of(d["member_id"]), member=self.mid(d["member_id"])))
        elif kind == "PendingMemberRemoved":
            self.line(who, T("narr.pending_removed", member=self.mid(d["member_id"]), reason=d.get("reason", "")))
        elif kind == "MemberJoined":
            protos = [p[0] for p in d.get("protocols", [])]
            first = d.get("protocols", [[None, None]])[0][1] if d.get("protocols") else None
            topics = subscription_topics(first.get("hex") if isinstance(first, dict) else None)
            self.line(who, T("narr.member_joined", member=self.mid(d["member_id"]),
                             session=d.get("session_timeout_ms"), rebalance=d.get("rebalance_timeout_ms"),
                             ptype=d.get("protocol_type"), protocols=", ".join(protos),
                             topics=", ".join(topics) if topics is not None else "?"))
            if d.get("group_instance_id"):
                self.more(T("narr.static_member", instance=d["group_instance_id"]))
        elif kind == "MemberRejoined":
            protos = [p[0] for p in d.get("protocols", [])]
            self.line(who, T("narr.member_rejoined", member=self.mid(d["member_id"]), protocols=", ".join(protos)))
        elif kind == "StaticMemberReplaced":
            self.line(who, T("narr.static_replaced", instance=d.get("group_instance_id"),
                             new=self.mid(d.get("new_member_id")), old=self.mid(d.get("old_member_id"))))
        elif kind == "MemberRemoved":
            self.member_removed(who, g, d)
        elif kind == "RebalanceStarted":
            if d.get("initial"):
                delay = self.ctx.initial_delay_ms
                self.line(who, T("narr.rebalance_initial", group=gid, generation=d.get("generation_id"),
                                 delay="?" if delay is None else delay))
            else:
                timeout = self.tracker.rebalance_timeout_ms(gid)
                reason = shorten_ids(d.get("reason", "")).rstrip(".")
                if g is not None and not g.members:
                    self.line(who, T("narr.rebalance_nobody", group=gid, state=g.state,
                                     generation=d.get("generation_id"), reason=reason))
                else:
                    self.line(who, T("narr.rebalance", group=gid, state=g.state if g else "?",
                                     generation=d.get("generation_id"), reason=reason,
                                     timeout="?" if timeout is None else timeout))
        elif kind == "InitialRebalanceExtended":
            self.line(who, T("narr.initial_extended", delay=d.get("delay_ms"), remaining=d.get("remaining_ms")))
        elif kind == "JoinCompleted":
            self.join_completed(who, g, d, ev_time(ev))
        elif kind == "SyncReceived":
            mid = d["member_id"]
            if g is not None and mid == g.leader:
                self.line(who, T("narr.sync_leader", member=self.mid(mid), protocol=g.protocol,
                                 generation=d.get("generation_id")))
            elif g is not None and g.state == "Stable":
                self.line(who, T("narr.sync_follower_stable", member=self.mid(mid), generation=d.get("generation_id")))
            else:
                self.line(who, T("narr.sync_follower", member=self.mid(mid), generation=d.get("generation_id")))
        elif kind == "GroupMetadata":
            self.group_metadata(who, g, d, ev)
        elif kind == "CoordinatorLoaded":
            if any(gr.log_partition == d.get("partition") for gr in self.tracker.groups.values()):
                self.line(T("common.cluster"), T("narr.coordinator_loaded", broker=d.get("broker_id"),
                                                 partition=d.get("partition"), epoch=d.get("leader_epoch")))
        elif kind == "OffsetCommit":
            tp = f"{d['topic']}-{d['partition']}"
            if tp in self._commit_offsets:  # a second commit at the same instant (another member)
                self.flush()
            if self._commits is None:
                self._commits = (gid, ev_time(ev), ev["log_partition"])
            self._commit_offsets[tp] = d["offset"]
        elif kind == "GroupTombstone":
            self.line(who, T("narr.group_deleted", group=gid, reason=d.get("reason", "")))
        elif kind == "OffsetTombstone":
            self.line(who, T("narr.offset_deleted", group=gid, topic=d.get("topic"), partition=d.get("partition"),
                             reason=d.get("reason", "")), step=False)

    def member_removed(self, who: str, g, d: dict) -> None:
        T = self.T
        mid = d["member_id"]
        reason = d.get("reason", "")
        m = g.members.get(mid) if g else None
        if reason.startswith("LeaveGroup"):
            client_reason = reason.split("client reason: ", 1)[1] if "client reason: " in reason else reason
            self.line(who, T("narr.removed_leave", member=self.mid(mid), reason=client_reason))
        elif "heartbeat expiration" in reason:
            self.line(who, T("narr.removed_session", member=self.mid(mid),
                             session=m.session_timeout_ms if m and m.session_timeout_ms else "?"))
        elif "did not rejoin" in reason:
            timeout = self.tracker.rebalance_timeout_ms(g.group_id) if g else None
            self.line(who, T("narr.removed_not_rejoined", member=self.mid(mid),
                             timeout="?" if timeout is None else timeout))
        elif "pending sync" in reason:
            self.line(who, T("narr.removed_sync", member=self.mid(mid)))
        else:
            self.line(who, T("narr.removed_other", member=self.mid(mid), reason=reason))
        if g is not None and g.leader == mid and d.get("new_leader"):
            self.more(T("narr.new_leader", leader=self.mid(d["new_leader"])))

    def join_completed(self, who: str, g, d: dict, t: int) -> None:
        T = self.T
        members = d.get("members", [])
        if not members:
            self.line(who, T("narr.join_empty", group=d["group_id"], generation=d.get("generation_id")))
            return
        protocol = d.get("protocol_name")
        lists = {mid: [p for p, _ in g.members[mid].protocols] for mid in members if g and mid in g.members}
        names = {p for ps in lists.values() for p in ps}
        took = t - g.rebalance_started_ms if g and g.rebalance_started_ms is not None else None
        self.line(who, T("narr.join_complete", generation=d.get("generation_id"), protocol=protocol,
                         leader=self.mid(d.get("leader")), n=len(members), took="?" if took is None else took))
        if len(names) > 1 and len(lists) == len(members):
            candidates = [p for p in next(iter(lists.values())) if all(p in ps for ps in lists.values())]
            self.more(T("narr.vote_header", candidates=", ".join(candidates)))
            votes: dict[str, int] = {}
            for mid in members:
                vote = next((p for p in lists[mid] if p in candidates), None)
                if vote is not None:
                    votes[vote] = votes.get(vote, 0) + 1
                self.more(T("narr.vote_member", member=self.mid(mid), protocols=", ".join(lists[mid]),
                            vote=vote or "-"))
            tally = ", ".join(f"{k}: {v}" for k, v in sorted(votes.items(), key=lambda kv: (-kv[1], kv[0])))
            self.more(T("narr.vote_result", tally=tally, protocol=protocol))
        if g is not None:
            previous = g.join_leader
            if g.generation == 0 or previous is None:
                self.more(T("narr.leader_first", leader=self.mid(d.get("leader"))))
            elif previous == d.get("leader"):
                self.more(T("narr.leader_kept", leader=self.mid(d.get("leader"))))
            else:
                self.more(T("narr.leader_new", leader=self.mid(d.get("leader"))))

    def group_metadata(self, who: str, g, d: dict, ev: dict) -> None:
        T = self.T
        members = d.get("members") or []
        gen = d.get("generation_id")
        if not members:
            if gen == 0 and (g is None or g.state == "Empty"):
                self.line(who, T("narr.group_created", group=d["group_id"], partition=ev["log_partition"]))
            return
        if (d["group_id"], ev["timestamp_ms"]) in self.cg.downgrades:
            self.line(who, T("narr.group_from_consumer_group", group=d["group_id"], generation=gen), step=False)
        elif g is not None and g.state == "CompletingRebalance" and gen == g.generation:
            took = ev_time(ev) - g.rebalance_started_ms if g.rebalance_started_ms is not None else None
            self.line(who, T("narr.stable", partition=ev["log_partition"], generation=gen,
                             took="?" if took is None else took), step=False)
        else:
            self.line(who, T("narr.group_rewritten", generation=gen), step=False)
        for m in members:
            parts = assignment_of((m.get("assignment") or {}).get("hex"))
            lead = "*" if m["member_id"] == d.get("leader") else " "
            self.more(T("narr.assignment", lead=lead, member=self.mid(m["member_id"]),
                        partitions=partitions_text(parts)))
        if self.stepper is not None and not self.stepper.step():
            raise StopNarration()

    # --- trace ---------------------------------------------------------------------------------------------------

    JOIN_WHY = {
        "send JoinGroup": "narr.why.first",
        "group is already rebalancing": "narr.why.rebalancing",
        "cached metadata has changed": "narr.why.metadata",
        "subscription has changed": "narr.why.subscription",
        "need to revoke partitions and re-join": "narr.why.revoke",
    }

    def trace(self, ev: dict) -> None:
        T = self.T
        kind = ev.get("type")
        c = ev.get("consumer", "")
        if kind == "start":
            topics = self.ctx.topics_of.get(c)
            self.line(c, T("narr.start", group=self.tracker.group_of_client.get(c, "?"),
                           topics=", ".join(topics) if topics else "?"))
        elif kind == "coordinator":
            gid = self.tracker.group_of_client.get(c)
            self.line(c, T("narr.find_coordinator", group=gid or "?", node=ev.get("node")))
            if gid and gid not in self.explained_rule:
                self.explained_rule.add(gid)
                self.explain_coordinator(gid, ev.get("node"))
        elif kind == "state":
            new, old, reason = ev.get("new"), ev.get("old"), ev.get("reason", "")
            if new == "PREPARING_REBALANCE" and old != new:
                key = self.JOIN_WHY.get(reason)
                why = T(key) if key else T("narr.why.other", reason=reason)
                self.line(c, T("narr.join_send", why=why))
            elif new == "UNJOINED" and old != new and reason != "consumer pro-actively leaving the group":
                self.line(c, T("narr.reset", reason=reason))
            elif old == new and reason.startswith("coordinator unknown"):
                self.line(c, T("narr.coordinator_unknown", reason=reason.split(": ", 1)[-1]))
        elif kind == "joined":
            gid = self.tracker.group_of_client.get(c)
            g = self.tracker.groups.get(gid) if gid else None
            if ev.get("leader"):
                n = len(g.join_members) if g else 0
                self.line(c, T("narr.joined_leader", generation=ev.get("generation"),
                               protocol=ev.get("protocol"), n=n))
            else:
                self.line(c, T("narr.joined_follower", generation=ev.get("generation"),
                               protocol=ev.get("protocol"), leader=self.mid(g.leader) if g else "?"))
        elif kind == "assigned":
            self.line(c, T("narr.assigned", generation=ev.get("generation"),
                           owned=partitions_text(ev.get("owned", [])), added=partitions_text(ev.get("added", []))))
        elif kind == "revoked":
            self.line(c, T("narr.revoked", partitions=partitions_text(ev.get("partitions", []))))
        elif kind == "lost":
            self.line(c, T("narr.lost", partitions=partitions_text(ev.get("partitions", []))))
        elif kind == "left":
            self.line(c, T("narr.left", reason=ev.get("reason", "")))
        elif kind == "stop":
            self.line(c, T("narr.stop"))
        elif kind == "closed":
            self.line(c, T("narr.closed"), step=False)
        elif kind == "crash":
            reason = ev.get("reason", "crash")
            if reason == "fatal error":
                self.line(c, T("narr.crash_fatal"))
            else:
                self.line(c, T("narr.crash") if reason == "crash" else T("narr.crash_why", reason=reason))
        elif kind == "restart":
            key = "narr.restart_graceful" if ev.get("graceful") else "narr.restart_kill"
            self.line(c, T(key, down=ev.get("down_ms")))
        elif kind == "gc_pause":
            self.line(c, T("narr.gc_pause", until=ev.get("until")))
        elif kind == "resume":
            self.line(c, T("narr.resume"))
        elif kind == "broker_stop":
            self.line(T("common.cluster"), T("narr.broker_stop", broker=ev.get("broker")))
        elif kind == "broker_start":
            self.line(T("common.cluster"), T("narr.broker_start", broker=ev.get("broker")))
        elif kind == "leader":
            p = ev.get("partition")
            groups = [g.group_id for g in self.tracker.groups.values() if g.log_partition == p]
            if groups:
                self.line(T("common.cluster"), T("narr.offsets_leader", partition=p, old=ev.get("old"),
                                                 new=ev.get("new"), groups=", ".join(groups)))
        elif kind == "consumer_error":
            self.line(c, T("narr.consumer_error", error=ev.get("error", "")))
        elif kind == "commit_failed":
            self.line(c, T("narr.commit_failed", error=ev.get("error", "")), step=False)
        elif kind == "violation":
            self.line("!", T("narr.violation", invariant=ev.get("invariant", "?"),
                             message=ev.get("message", ev.get("detail", ""))))
        elif kind == "action":
            self.action(ev)

    def action(self, ev: dict) -> None:
        from protocol.hashing import murmur2, to_positive
        T = self.T
        a = ev.get("action")
        if a == "produce":
            topic = ev.get("topic")
            partitioner = ev.get("partitioner", "default")
            self.line(T("common.producer"), T("narr.produce", count=ev.get("count"), topic=topic,
                                              partitioner=partitioner))
            keys = ev.get("keys")
            n = self.ctx.partitions_of.get(topic)
            if keys and n and partitioner in ("murmur2", "default") and ev.get("partition") is None:
                for key in keys[: min(len(keys), int(ev.get("count") or len(keys)), 12)]:
                    h = murmur2(str(key).encode("utf-8"))
                    self.more(T("narr.produce_key", key=key, murmur=h, positive=to_positive(h), n=n,
                                partition=to_positive(h) % n))
        elif a == "add_partitions":
            self.line(T("common.cluster"), T("narr.add_partitions", topic=ev.get("topic"),
                                             partitions=ev.get("partitions")))
        elif a == "subscribe":
            target = ev.get("consumer") or ev.get("group")
            self.line(target, T("narr.subscribe", target=target, topics=", ".join(ev.get("topics", []))))
        elif a == "slow":
            self.line(ev.get("consumer"), T("narr.slow", duration=ev.get("duration_ms"),
                                            poll_ms=ev.get("poll_ms")))
        elif a in ("network_partition", "message_fault", "broker_crash", "elect_leaders", "rolling_restart"):
            detail = ", ".join(f"{k}={v}" for k, v in sorted(ev.items()) if k not in ("t", "type", "action"))
            self.line(T("common.cluster"), T("narr.fault", action=a, detail=detail))

    def explain_coordinator(self, gid: str, node) -> None:
        from protocol.hashing import java_string_hash, kafka_abs
        h = java_string_hash(gid)
        n = self.ctx.offsets_partitions
        self.more(self.T("narr.coordinator_rule", group=gid, hash=h, abs=kafka_abs(h), n=n,
                         partition=kafka_abs(h) % n, node=node))


class ServeNarrator:
    """``kgroup serve --narrate``: a :class:`Narrator` fed live from ``KGroupServer.add_listener`` -- every core
    Output's records, plus what its responses show (FIND_COORDINATOR answers, JOIN_GROUP answers). Times are
    seconds since the server started. The requests themselves (heartbeats, who sent what) are not in an Output."""

    def __init__(self, T: Catalogue, ctx: NarrationContext, emit: Callable[[str], None],
                 now_ms: Callable[[], int]) -> None:
        self.narrator = Narrator(T, ctx, emit, t0_ms=now_ms())
        self.T = T
        self.clock = now_ms
        self.now_ms = now_ms()

    def on_output(self, out) -> None:
        from coordinator.records import LogEntry
        from protocol.messages import (ConsumerGroupHeartbeatResponse, FindCoordinatorResponse, JoinGroupResponse,
                                       LeaveGroupResponse)
        n = self.narrator
        self.now_ms = self.clock()
        answers = [r for _, r in out.responses]
        if out.answer is not None and not any(r is out.answer for r in answers):  # handle's answer is also released
            answers.append(out.answer)
        # what the answers say about the removals the records will show (a leave, not a timer)
        for resp in answers:
            if isinstance(resp, ConsumerGroupHeartbeatResponse) and resp.error_code == 0 and resp.member_epoch < 0:
                n.cg.hint_leaving(resp.member_id, resp.member_epoch)
            elif isinstance(resp, LeaveGroupResponse):
                for m in resp.members or ():
                    n.cg.hint_leaving(m.member_id, classic=True)
        batch = [e.to_dict() for e in out.records if isinstance(e, LogEntry)]
        n.cg.prepare(batch)
        for d in batch:
            n.tracker.prescan([d])
            n.feed(d)
        n.flush()
        n.cg.end_of_operation()
        for resp in answers:
            if isinstance(resp, FindCoordinatorResponse):
                self.found(resp)
            elif isinstance(resp, JoinGroupResponse) and resp.error_code == 0:
                self.join_answered(resp)
            elif isinstance(resp, ConsumerGroupHeartbeatResponse):
                self.heartbeat_answered(resp)

    def found(self, resp) -> None:
        n = self.narrator
        entries = resp.coordinators if resp.coordinators else []
        for c in entries:
            if c.error_code != 0:
                continue
            n._t = self.now_ms
            n.line(self.T("common.coordinator"), self.T("serve.found", key=c.key, node=c.node_id, host=c.host,
                                                        port=c.port))
            if c.key not in n.explained_rule:
                n.explained_rule.add(c.key)
                n.explain_coordinator(c.key, c.node_id)

    def heartbeat_answered(self, resp) -> None:
        """A ConsumerGroupHeartbeat answer is told when it carries an assignment (the member joined, sent a full
        request, or its partitions changed) or an error; the plain keep-alives are not."""
        n = self.narrator
        n._t = self.now_ms
        who = self.T("common.coordinator")
        member = n.cg.label(resp.member_id or "")
        if resp.error_code != 0:
            from protocol.errors import ErrorCode
            try:
                error = ErrorCode(resp.error_code).name
            except ValueError:
                error = str(resp.error_code)
            n.line(who, self.T("serve.cg_error", member=member, error=error, message=resp.error_message or ""))
        elif resp.assignment is not None and resp.member_epoch >= 0:
            from protocol.uuids import uuid_to_string
            parts = {uuid_to_string(tp.topic_id): tp.partitions for tp in resp.assignment.topic_partitions}
            n.line(who, self.T("serve.cg_heartbeat", member=member, epoch=resp.member_epoch,
                               partitions=n.cg.parts(parts), interval=resp.heartbeat_interval_ms), step=False)

    def join_answered(self, resp) -> None:
        n = self.narrator
        n._t = self.now_ms
        who = self.T("common.coordinator")
        if not resp.leader and n.cg.knows(resp.member_id):
            # a classic member of a KIP-848 consumer group (GroupMetadataManager.classicGroupJoinToConsumerGroup):
            # its generation is its member epoch; no leader, no member list -- the coordinator assigns
            n.line(who, self.T("serve.join_consumer_group", member=n.cg.label(resp.member_id),
                               generation=resp.generation_id, protocol=resp.protocol_name))
        elif resp.leader == resp.member_id:
            n.line(who, self.T("serve.join_leader", member=short_id(resp.member_id), generation=resp.generation_id,
                               protocol=resp.protocol_name, n=len(resp.members)))
        else:
            n.line(who, self.T("serve.join_follower", member=short_id(resp.member_id),
                               generation=resp.generation_id, protocol=resp.protocol_name,
                               leader=short_id(resp.leader)))
