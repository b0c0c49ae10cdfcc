"""`kgroup demo --protocol consumer`: the demo's story told with KIP-848's consumer protocol, live over TCP.

The same embedded ``kgroup serve`` as the classic demo (kgroup/demo_classic.py), but kgroup's own consumers run
``group.protocol=consumer`` (client/driver.py with the KIP-848 membership core). The story: ``c1`` joins alone, then
``c2`` .. ``cN`` join one at a time, the group is watched while stable, the last consumer leaves cleanly and the one
before it is killed. What is told, and where it comes from:

* the wire (each consumer's ``on_wire``): ConsumerGroupHeartbeat requests that join (member epoch 0, a full request
  with the subscription), acknowledge an assignment (``topic_partitions`` = what the member owns now: a
  revocation or an assignment done) or leave (member epoch -1), and the answers that carry an assignment, a new
  member epoch or an error; the plain keep-alives are counted;
* the coordinator's ``ConsumerGroup*`` records (the server's listener), told by :mod:`kgroup.narrate_cg` -- the
  same sentences as ``kgroup serve --narrate``: the join (epoch 0), the group epoch bump and why, the target
  assignment computed by the coordinator's server-side assignor (``group.consumer.assignors``' first, ``uniform``),
  each member's reconciliation (UNREVOKED_PARTITIONS: revoke first; UNRELEASED_PARTITIONS: wait for the previous
  owner; STABLE at the new member epoch), the leave and the fencing by the session timeout;
* the rebalance callbacks (``onPartitionsRevoked`` / ``onPartitionsAssigned`` / ``onPartitionsLost``).

The session timeout and heartbeat interval of the consumer protocol are the coordinator's
(``group.consumer.session.timeout.ms``, ``group.consumer.heartbeat.interval.ms``; a KIP-848 consumer refuses
``session.timeout.ms`` / ``heartbeat.interval.ms``): the demo's ``--session-timeout-ms`` /
``--heartbeat-interval-ms`` set those. ``group.consumer.assignment.interval.ms`` is 0 so that a new target is
computed by the first heartbeat after a group epoch bump -- the joining heartbeat itself for a join, the next
member's heartbeat after a leave or a fencing -- rather than at most once a second (KIP-1263's default).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Optional

from kgroup.catalogue import display_width, pad, pad_left
from kgroup.demo_classic import Demo, _error_name
from kgroup.diagram import Message, Note
from kgroup.narrate_cg import TYPES as CG_TYPES
from kgroup.narrate_cg import ConsumerGroupNarration, member_label

CGH = 68   # ConsumerGroupHeartbeat
LEAVE_EPOCH = -1


@dataclass
class EpochRow:
    """One group epoch: when it was bumped, why, the target computed for it, when every member reached it."""

    epoch: int
    bumped_ms: int
    causes: list[str] = field(default_factory=list)
    target: dict[str, list] = field(default_factory=dict)   # member id -> [(topic id, partitions)]
    reconciled_ms: Optional[int] = None


class ConsumerDemo(Demo):
    """The consumer-protocol story (see the module docstring); output helpers and phase 1 are the classic demo's."""

    def __init__(self, args, topic, clock=None) -> None:
        super().__init__(args, topic, clock)
        self.cg = ConsumerGroupNarration(self.T, self.event, self.more, lambda gid: self.coordinator_who(),
                                         default_assignor="uniform", topic_names=lambda: [self.topic], live=True)
        self.rows: list[EpochRow] = []
        self.members: dict[str, tuple[int, int]] = {}   # member id -> (state, member epoch), from the records
        self.target_epoch = 0
        self.pending_causes: list[str] = []
        self.untargeted: set[str] = set()               # members whose target was deleted (next epoch)
        self.clients: dict[str, str] = {}               # member id -> consumer name
        self.last_epoch: dict[str, int] = {}            # consumer -> member epoch of its last answer

    def more(self, text: str) -> None:
        self.say(f"{'':24}{text}")

    def label(self, member_id: str) -> str:
        return member_label(member_id, self.clients.get(member_id, ""))

    # --- the coordinator's records -------------------------------------------------------------------------------

    def on_server_output(self, o: Any) -> None:
        from coordinator import records as R
        from protocol.messages import ConsumerGroupHeartbeatResponse
        answers = [r for _, r in o.responses]
        if o.answer is not None and not any(r is o.answer for r in answers):
            answers.append(o.answer)
        leaving = set()
        for resp in answers:   # a removal in this operation's records is a leave, not a timer
            if isinstance(resp, ConsumerGroupHeartbeatResponse) and resp.error_code == 0 and resp.member_epoch < 0:
                self.cg.hint_leaving(resp.member_id, resp.member_epoch)
                leaving.add(resp.member_id)
        T = self.T
        for e in o.records:
            r = e.record
            if getattr(r, "group_id", None) != self.group or r.TYPE not in CG_TYPES:
                continue
            now = e.timestamp_ms
            if isinstance(r, R.ConsumerGroupMemberMetadata) and r.member_id not in self.members:
                self.members[r.member_id] = (-1, 0)
                self.pending_causes.append(T("narr.cg.why.joined", member=self.label(r.member_id)))
            elif isinstance(r, R.ConsumerGroupCurrentMemberAssignmentTombstone) and r.member_id in self.members:
                del self.members[r.member_id]
                self.pending_causes.append(T("narr.cg.why.left" if r.member_id in leaving else "demo.cg.cause.fenced",
                                             member=self.label(r.member_id)))
                self.draw(Note(self.t_ms(), ("K",), T("diagram.cg_note_removed", member=self.label(r.member_id))))
            elif isinstance(r, R.ConsumerGroupMetadata) and (not self.rows or r.epoch > self.rows[-1].epoch):
                # the target records name only the members whose target changed: start from the previous one
                # (a removed member's target tombstone comes before the epoch bump)
                prev = self.rows[-1].target if self.rows else {}
                self.rows.append(EpochRow(r.epoch, now, self.pending_causes,
                                          {m: t for m, t in prev.items() if m not in self.untargeted}))
                self.untargeted = set()
                self.pending_causes = []
                self.draw(Note(self.t_ms(), ("K",), T("diagram.cg_note_epoch", epoch=r.epoch)))
            elif isinstance(r, R.ConsumerGroupTargetAssignmentMember):
                row = self.rows[-1] if self.rows else None
                if row is not None:
                    row.target[r.member_id] = [(tp.topic_id, tuple(tp.partitions)) for tp in r.topic_partitions]
            elif isinstance(r, R.ConsumerGroupTargetAssignmentMemberTombstone):
                self.untargeted.add(r.member_id)
            elif isinstance(r, R.ConsumerGroupTargetAssignmentMetadata):
                self.target_epoch = r.assignment_epoch
                row = self.rows[-1] if self.rows else None
                targets = "; ".join(f"{self.label(m)} {self.cg.parts({_tid(t): ps for t, ps in tps})}"
                                    for m, tps in sorted(row.target.items(), key=lambda kv: self.label(kv[0]))
                                    ) if row is not None and row.epoch == r.assignment_epoch else ""
                self.draw(Note(self.t_ms(), ("K",), T("diagram.cg_note_target", epoch=r.assignment_epoch,
                                                      assignor=self.cg.default_assignor, targets=targets)))
            elif isinstance(r, R.ConsumerGroupCurrentMemberAssignment) and r.member_id in self.members:
                self.members[r.member_id] = (r.state, r.member_epoch)
            self.cg.record(e.to_dict())
            row = next((x for x in self.rows if x.epoch == self.target_epoch), None)
            if (row is not None and row.reconciled_ms is None and self.members
                    and all(st == 0 and ep == row.epoch for st, ep in self.members.values())):
                row.reconciled_ms = now
        self.cg.end_of_operation()

    # --- what each consumer sends and receives -----------------------------------------------------------------------

    def on_wire(self, name: str):
        classic = super().on_wire(name)   # FIND_COORDINATOR is told as in the classic demo
        T = self.T

        def parts(topic_partitions) -> str:
            return self.cg.parts({_tid(tp.topic_id): tp.partitions for tp in topic_partitions})

        def cb(direction: str, node: int, kind: str, api_key: int, version: int, body: Any) -> None:
            if api_key != CGH:
                classic(direction, node, kind, api_key, version, body)
                return
            api = "ConsumerGroupHeartbeat"
            where = f"broker {node}"
            me = self.pid(name)
            if direction == "send":
                if body.member_id:
                    self.clients.setdefault(body.member_id, name)
                if body.member_epoch == 0:
                    self.draw(Message(self.t_ms(), me, "K", T("diagram.cg_join", topics=", ".join(
                        body.subscribed_topic_names or ()))))
                    self.event(name, T("demo.cg.wire.join", api=api, version=version, where=where,
                                       member=self.label(body.member_id),
                                       topics=", ".join(body.subscribed_topic_names or ()),
                                       rebalance=body.rebalance_timeout_ms,
                                       assignor=body.server_assignor or T("demo.cg.assignor_unset")))
                elif body.member_epoch == LEAVE_EPOCH:
                    self.draw(Message(self.t_ms(), me, "K", T("diagram.cg_hb_leave")))
                    self.event(name, T("demo.cg.wire.leave", api=api, version=version, where=where))
                elif body.topic_partitions is not None:
                    owned = parts(body.topic_partitions) if body.topic_partitions else T("common.none")
                    self.draw(Message(self.t_ms(), me, "K", T("diagram.cg_hb_owned", epoch=body.member_epoch,
                                                                owned=owned)))
                    self.event(name, T("demo.cg.wire.owned", api=api, version=version, where=where,
                                       epoch=body.member_epoch, owned=owned))
                else:
                    self.draw(Message(self.t_ms(), me, "K", T("diagram.cg_heartbeat", epoch=body.member_epoch)))
                return
            err = _error_name(body.error_code)
            counts = self.heartbeats.setdefault(name, {})
            counts[body.error_code] = counts.get(body.error_code, 0) + 1
            if body.error_code != 0:
                self.draw(Message(self.t_ms(), "K", me, T("diagram.resp", api=api, error=err), reply=True))
                self.event(name, T("demo.cg.wire.error", api=api, error=err, message=body.error_message or ""))
                return
            before = self.last_epoch.get(name)
            self.last_epoch[name] = body.member_epoch
            if body.member_epoch < 0:
                self.draw(Message(self.t_ms(), "K", me, T("diagram.cg_hb_resp", epoch=body.member_epoch,
                                                            partitions="-"), reply=True))
                self.event(name, T("demo.cg.wire.left", api=api, epoch=body.member_epoch))
            elif body.assignment is not None:
                got = parts(body.assignment.topic_partitions) if body.assignment.topic_partitions \
                    else T("common.none")
                self.draw(Message(self.t_ms(), "K", me, T("diagram.cg_hb_resp", epoch=body.member_epoch,
                                                            partitions=got), reply=True))
                self.event(name, T("demo.cg.wire.assignment", api=api, epoch=body.member_epoch, partitions=got,
                                   interval=body.heartbeat_interval_ms))
            elif before is not None and before != body.member_epoch:
                self.draw(Message(self.t_ms(), "K", me, T("diagram.cg_hb_epoch", epoch=body.member_epoch),
                                  reply=True))
                self.event(name, T("demo.cg.wire.epoch", api=api, old=before, epoch=body.member_epoch))
            else:
                self.draw(Message(self.t_ms(), "K", me, T("diagram.resp", api=api, error=err), reply=True))
                if counts.get(0, 0) == 2:   # the first keep-alive after the join's answer
                    self.event(name, T("demo.cg.wire.heartbeat_ok", where=where, ms=body.heartbeat_interval_ms))
        return cb

    def on_event(self, name: str):
        """The rebalance callbacks. Unlike the classic eager protocol, ``onPartitionsAssigned`` gets only the
        partitions *added* (possibly none: the new consumer calls it after every reconciliation), so the diagram's
        note shows what the consumer owns after the callback."""
        from consumer import outputs as out
        T = self.T
        owned: set = set()

        def cb(o: Any) -> None:
            if isinstance(o, out.PartitionsRevoked):
                owned.difference_update(o.partitions)
                self.draw(Note(self.t_ms(), (self.pid(name),), T("diagram.note_revoked",
                                                                 partitions=self.tps(o.partitions))))
                self.event(name, T("demo.cb.revoked", partitions=self.tps(o.partitions)))
            elif isinstance(o, out.PartitionsAssigned):
                owned.update(o.partitions)
                if o.partitions:
                    self.draw(Note(self.t_ms(), (self.pid(name),), T("diagram.note_assigned",
                                                                     partitions=self.tps(sorted(owned)))))
                self.event(name, T("demo.cb.assigned", partitions=self.tps(o.partitions)))
            elif isinstance(o, out.PartitionsLost):
                owned.difference_update(o.partitions)
                self.event(name, T("demo.cb.lost", partitions=self.tps(o.partitions)))
        return cb

    # --- the script ----------------------------------------------------------------------------------------------

    async def run(self) -> int:
        from broker.server import KGroupServer, ServerSettings
        from client.driver import AsyncConsumer

        a = self.args
        T = self.T
        self.main_task = asyncio.current_task()
        self.loop = asyncio.get_running_loop()
        self.t0 = self.loop.time()
        cfg = coordinator_config(a)
        srv = KGroupServer(ServerSettings(brokers=a.brokers, port=0, topics=[(self.topic, self.partitions, 1)],
                                          config=cfg))
        self.cg.default_assignor = cfg.default_consumer_group_assignor
        await srv.start()
        consumers: list[AsyncConsumer] = []
        try:
            srv.add_listener(self.on_server_output)
            self.say(T("demo.cg.title"))
            self.say(T("demo.cg.timeouts", session=a.session_timeout_ms, heartbeat=a.heartbeat_interval_ms,
                       assignor=cfg.default_consumer_group_assignor))
            self.say_cluster(srv, cfg)
            self.find_coordinator(srv, cfg)

            for i in range(a.consumers):
                name = f"c{i + 1}"
                consumers.append(AsyncConsumer(srv.bootstrap, {
                    "group.id": self.group, "client.id": name, "group.protocol": "consumer",
                    "auto.offset.reset": "earliest", "retry.backoff.ms": 50, "retry.backoff.max.ms": 200},
                    name=name, processing_ms=a.processing_ms, on_wire=self.on_wire(name),
                    on_event=self.on_event(name)))

            # --- phase 2: the first consumer joins alone ------------------------------------------------------------
            first = consumers[0]
            title = T("demo.cg.phase.first", consumer=first.name)
            self.phase(title)
            self.start_diagram("phase-2-first-join", title)
            await first.start([self.topic])
            await self.converged([first])
            self.say(T("demo.cg.first_explained"))
            self.pause()

            # --- phase 3: the others join one at a time: revocation before assignment -------------------------------
            for k, c in enumerate(consumers[1:], start=2):
                title = T("demo.cg.phase.join", consumer=c.name, n=k)
                self.phase(title)
                self.start_diagram(f"phase-3-join-{c.name}", title)
                before = self.owners(consumers[:k - 1])
                await c.start([self.topic])
                await self.converged(consumers[:k])
                after = self.owners(consumers[:k])
                kept = sorted(tp for tp, who in after.items() if before.get(tp) == who)
                moved = sorted(tp for tp, who in after.items() if before.get(tp) != who)
                self.say(T("demo.cg.join_explained", kept=self.tps(kept), moved=self.tps(moved), consumer=c.name))
                self.pause()
            self.say()
            self.say(T("demo.cg.assignments_now", epoch=self.rows[-1].epoch if self.rows else "?"))
            for c in consumers:
                epoch = T("demo.cg.member_epoch", epoch=c.generation)
                self.say(f"    {pad(self.label(c.member_id), 24)} {epoch}  {self.tps(c.assignment)}")
            self.pause()

            # --- phase 4: heartbeats ------------------------------------------------------------------------------------
            title = T("demo.cg.phase.heartbeat", ms=a.heartbeat_phase_ms)
            self.phase(title)
            self.start_diagram("phase-4-heartbeat", title)
            before_hb = {c.name: dict(self.heartbeats.get(c.name, {})) for c in consumers}
            await asyncio.sleep(a.heartbeat_phase_ms / 1000)
            for c in consumers:
                now = self.heartbeats.get(c.name, {})
                ok = now.get(0, 0) - before_hb[c.name].get(0, 0)
                other = sum(v for k, v in now.items() if k != 0) - sum(v for k, v in before_hb[c.name].items()
                                                                     if k != 0)
                self.say(T("demo.cg.heartbeats", consumer=c.name, ok=ok, epoch=c.generation,
                           errors=T("demo.heartbeat_errors", n=other) if other else "",
                           position=sum(c.positions.values()), partitions=len(c.assignment),
                           poll_ms=a.processing_ms))
            self.say(T("demo.cg.heartbeat_explained"))
            self.pause()

            # --- phase 5: a clean leave ---------------------------------------------------------------------------------
            leaver = consumers[-1]
            rest = consumers[:-1]
            title = T("demo.cg.phase.leave", consumer=leaver.name)
            self.phase(title)
            self.start_diagram("phase-5-leave", title)
            await asyncio.wait_for(leaver.close(), 10)
            await self.converged(rest)
            self.say(T("demo.cg.leave_explained"))
            self.pause()

            # --- phase 6: a consumer killed, fenced by the session timeout ---------------------------------------------
            await self.kill_phase(rest, T("demo.cg.phase.kill", consumer=rest[-1].name), "demo.cg.killed",
                                  lambda survivors, timeout: self.converged(survivors, timeout=timeout))
            self.ending()
        finally:
            for c in consumers:
                await c.kill()
            await srv.close()
        return 0

    @staticmethod
    def owners(consumers) -> dict:
        return {tp: c.name for c in consumers for tp in c.assignment}

    async def converged(self, consumers, timeout: float = 15.0) -> None:
        """Every consumer STABLE and the topic split as the uniform assignor splits it: each member owns
        floor(P/n) or ceil(P/n) partitions, every partition exactly once."""
        n, p = len(consumers), self.partitions
        sizes = {p // n, -(-p // n)}

        def whole() -> bool:
            owned = [tp for c in consumers for tp in c.assignment]
            return len(owned) == p == len(set(owned))

        def ok(c) -> bool:
            return c.stable and len(c.assignment) in sizes and whole()
        await asyncio.wait_for(asyncio.gather(*(c.wait_until(ok, timeout) for c in consumers)), timeout)

        def agreed() -> bool:   # the coordinator has every member STABLE at the target epoch, and each knows it
            return (bool(self.rows) and self.rows[-1].reconciled_ms is not None
                    and all(self.members.get(c.member_id, (None, None))[1] == c.generation for c in consumers))

        async def recorded() -> None:
            while not agreed():
                await asyncio.sleep(0.01)
        await asyncio.wait_for(recorded(), timeout)

    def cause(self, row: EpochRow) -> str:
        return "; ".join(row.causes) if row.causes else self.T("narr.cg.why.other")

    def summary(self) -> None:
        T = self.T
        self.phase(T("demo.cg.phase.summary"))
        ew = max(5, display_width(T("demo.cg.summary.epoch")))
        self.say(T("demo.cg.summary.header", epoch=pad_left(T("demo.cg.summary.epoch"), ew),
                   took=pad_left(T("demo.summary.took"), 7), cause=pad(T("demo.summary.cause"), 40)))
        for row in self.rows:
            if not row.target:
                continue
            took = f"{row.reconciled_ms - row.bumped_ms} ms" if row.reconciled_ms is not None else "-"
            cause = self.cause(row)
            cause = cause if len(cause) <= 40 else cause[:39] + "…"
            first = True
            for mid, target in sorted(row.target.items(), key=lambda kv: self.label(kv[0])):
                cell = f"{self.label(mid)} <- {self.cg.parts({_tid(t): ps for t, ps in target})}"
                if first:
                    self.say(f"  {row.epoch:>{ew}}  {took:>7}  {pad(cause, 40)}  {cell}")
                    first = False
                else:
                    self.say(f"  {'':>{ew}}  {'':>7}  {'':<40}  {cell}")
        self.say(T("demo.cg.summary.legend"))


def coordinator_config(args) -> Any:
    """The coordinator's settings for the demo: the consumer protocol's session and heartbeat are the
    coordinator's (``group.consumer.*``; their minimums lowered to allow the demo's short values), and a new target
    is computed at once. Raises ``ConfigError`` (one line) for values Kafka would refuse."""
    from coordinator.config import CoordinatorConfig
    return CoordinatorConfig.create({
        "group.consumer.session.timeout.ms": args.session_timeout_ms,
        "group.consumer.min.session.timeout.ms": min(args.session_timeout_ms, 45000),
        "group.consumer.heartbeat.interval.ms": args.heartbeat_interval_ms,
        "group.consumer.min.heartbeat.interval.ms": min(args.heartbeat_interval_ms, 5000),
        "group.consumer.assignment.interval.ms": 0,
        # __consumer_offsets is created only with offsets.topic.replication.factor brokers (Kafka's default 3)
        "offsets.topic.replication.factor": min(3, args.brokers)})


def _tid(topic_id: Any) -> str:
    from protocol.uuids import uuid_to_string
    return topic_id if isinstance(topic_id, str) else uuid_to_string(topic_id)

