"""`kgroup demo`'s classic story (the README's `make demo`): the classic consumer-group protocol, live, over real TCP.

One process runs an embedded 3-broker ``kgroup serve`` (broker/server.py) on loopback ephemeral ports and
simulated consumer applications (client/driver.py driving the sans-IO consumer core). It narrates, phase by
phase, what the wire and the coordinator's records show: FIND_COORDINATOR (and why that broker), JOIN_GROUP
(member ids, the protocol vote, the leader), SYNC_GROUP (the leader's assignment), HEARTBEAT; then a clean
LeaveGroup and its rebalance; then a consumer killed without LeaveGroup, removed by its session timeout; then a
summary of every generation. Timeouts are shortened so that it all takes a few seconds (printed at the start).

``--protocol consumer`` tells the same story with KIP-848 consumers (kgroup/cmd_demo_cg.py); ``--compare`` runs it
in the simulator under the eager, cooperative and consumer protocols and tabulates each partition's unowned time
(kgroup/demo_compare.py).

Every sentence comes from the narration catalogue (kgroup/catalogue.py) in the language of ``--lang``.
``--step`` pauses after each protocol step (kgroup/stepper.py: the event loop's clock stands still during a
pause, so no timer of the brokers or the consumers sees it). ``--diagrams DIR`` writes a sequence diagram of each
phase (Mermaid text and SVG, kgroup/diagram.py) from the requests and responses on the wire and the coordinator's
records.
"""

from __future__ import annotations

import argparse
import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from kgroup.catalogue import Catalogue, display_width, pad, pad_left
from kgroup.diagram import Diagram, Message, Note, render
from kgroup.runlog import assignment_of, partitions_text
from kgroup.stepper import PausableClock, Stepper

DEFAULT_STRATEGIES = (("range", "roundrobin"), ("roundrobin", "range"))
API_NAMES = {10: "FIND_COORDINATOR", 11: "JOIN_GROUP", 12: "HEARTBEAT", 13: "LEAVE_GROUP", 14: "SYNC_GROUP",
             8: "OFFSET_COMMIT", 9: "OFFSET_FETCH"}



@dataclass
class Rebalance:
    started_ms: int
    reason: str
    generation: Optional[int] = None
    protocol: Optional[str] = None
    leader: Optional[str] = None
    members: tuple = ()
    stable_ms: Optional[int] = None
    assignment: dict = field(default_factory=dict)
    initial: bool = False
    extensions: int = 0


class Demo:
    def __init__(self, args: argparse.Namespace, topic: tuple[str, int],
                 clock: Optional[PausableClock] = None) -> None:
        self.args = args
        self.topic, self.partitions = topic
        self.group = args.group
        self.T = Catalogue(getattr(args, "lang", "en"))
        self.stepper = Stepper(getattr(args, "step", False), self.T, clock=clock)
        self.main_task: Optional[asyncio.Task] = None
        self.names: dict[str, str] = {}        # member id -> consumer name
        self.rebalances: list[Rebalance] = []
        self.t0 = 0.0
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self.heartbeats: dict[str, dict[int, int]] = {}   # consumer -> error code -> count
        self.quiet_heartbeats = True
        self.seen_rebalance_hb: set[tuple[str, int]] = set()
        self.seen_ids: set[str] = set()
        self.diagrams_dir: Optional[Path] = Path(args.diagrams) if getattr(args, "diagrams", None) else None
        self.diagram: Optional[Diagram] = None
        self.diagram_stem = ""
        self.diagram_files: list[Path] = []
        self.coordinator_node: Optional[int] = None

    # --- output helpers ------------------------------------------------------------------------------------

    def t(self) -> str:
        return f"{(self.loop.time() - self.t0):6.3f}s"

    def t_ms(self) -> int:
        return int((self.loop.time() - self.t0) * 1000)

    def say(self, text: str = "") -> None:
        if not self.stepper.quit:
            print(text, flush=True)

    def event(self, who: str, text: str) -> None:
        self.say(f"  [{self.t()}] {pad(who, 11)} {text}")
        self.pause()

    def pause(self) -> None:
        """--step: wait for the learner after a protocol step; q cancels the demo (it cleans up and exits 0)."""
        if not self.stepper.step() and self.main_task is not None and not self.main_task.done():
            self.main_task.cancel()

    def coordinator_who(self) -> str:
        return self.T("common.coordinator")

    def phase(self, title: str) -> None:
        self.say()
        self.say(f"== {title} " + "=" * max(0, 100 - display_width(title)))

    def mid(self, member_id: Optional[str]) -> str:
        if not member_id:
            return "-"
        self.seen_ids.add(member_id)
        name = self.names.get(member_id)
        short = member_id if len(member_id) <= 16 else member_id[:-28] + "…"  # client id + first 8 of the UUID
        return short if name is None or short.startswith(name + "-") else f"{name}({short})"

    def shorten(self, text: str) -> str:
        """Member ids inside free text (the coordinator's reasons) in their short form."""
        for m in sorted(self.seen_ids, key=len, reverse=True):
            if len(m) > 16:
                text = text.replace(m, self.mid(m))
        return text

    def tps(self, partitions) -> str:
        partitions = list(partitions)
        return partitions_text(partitions) if partitions else self.T("common.none")

    # --- sequence diagrams (--diagrams) ------------------------------------------------------------------------

    def start_diagram(self, stem: str, phase_title: str) -> None:
        self.finish_diagram()
        if self.diagrams_dir is None:
            return
        d = Diagram(self.T("diagram.title_demo", group=self.group, phase=phase_title))
        self.diagram_stem = stem
        for i in range(self.args.consumers):
            d.add_participant(f"C{i + 1}", f"c{i + 1}")
        node = "?" if self.coordinator_node is None else self.coordinator_node
        d.add_participant("K", self.T("diagram.coordinator", node=node))
        self.diagram = d

    def finish_diagram(self) -> None:
        d, self.diagram = self.diagram, None
        if d is None or self.diagrams_dir is None or not d.items:
            return
        self.diagrams_dir.mkdir(parents=True, exist_ok=True)
        for fmt, ext in (("mermaid", "mmd"), ("svg", "svg")):
            path = self.diagrams_dir / f"{self.diagram_stem}.{ext}"
            path.write_text(render(d, fmt), encoding="utf-8")
            self.diagram_files.append(path)

    def draw(self, item: Any) -> None:
        if self.diagram is not None:
            self.diagram.items.append(item)

    def pid(self, name: str) -> str:
        return "C" + name[1:] if name.startswith("c") and name[1:].isdigit() else "K"

    # --- the coordinator's records (server listener) ----------------------------------------------------------

    def on_server_output(self, o: Any) -> None:
        T = self.T
        who = self.coordinator_who()
        for e in o.records:
            r = e.record
            if getattr(r, "group_id", None) != self.group:
                continue
            kind = r.TYPE
            for attr in ("member_id", "leader"):
                if getattr(r, attr, None):
                    self.mid(getattr(r, attr))
            if kind == "PendingMemberAdded":
                self.event(who, T("demo.coord.pending", member=self.mid(r.member_id)))
            elif kind == "MemberJoined":
                protos = ", ".join(n for n, _ in r.protocols)
                self.event(who, T("demo.coord.joined", member=self.mid(r.member_id), protocols=protos))
            elif kind == "MemberRejoined":
                self.event(who, T("demo.coord.rejoined", member=self.mid(r.member_id)))
            elif kind == "RebalanceStarted":
                self.rebalances.append(Rebalance(e.timestamp_ms, r.reason, initial=r.initial))
                if r.initial:
                    self.draw(Note(self.t_ms(), ("K",), T("diagram.note_initial",
                                                          delay=f"{self.args.initial_rebalance_delay_ms} ms")))
                    self.event(who, T("demo.coord.rebalance_initial", reason=self.shorten(r.reason),
                                      delay=self.args.initial_rebalance_delay_ms))
                else:
                    self.draw(Note(self.t_ms(), ("K",), T("diagram.note_preparing", generation=r.generation_id,
                                                          reason=self.shorten(r.reason)[:60])))
                    self.event(who, T("demo.coord.rebalance", reason=self.shorten(r.reason)))
            elif kind == "InitialRebalanceExtended":
                if self.rebalances:
                    self.rebalances[-1].extensions += 1
                self.draw(Note(self.t_ms(), ("K",), T("diagram.note_extended", ms=r.delay_ms)))
                self.event(who, T("demo.coord.extended", ms=r.delay_ms))
            elif kind == "JoinCompleted":
                rb = self.rebalances[-1] if self.rebalances else None
                if rb is not None:
                    rb.generation, rb.protocol, rb.leader, rb.members = (r.generation_id, r.protocol_name,
                                                                        r.leader, tuple(r.members))
                if r.members:
                    self.draw(Note(self.t_ms(), ("K",), T("diagram.note_completing", generation=r.generation_id,
                                                          protocol=r.protocol_name, leader=self.mid(r.leader))))
                else:
                    self.draw(Note(self.t_ms(), ("K",), T("diagram.note_empty", generation=r.generation_id)))
                self.event(who, T("demo.coord.join_complete", generation=r.generation_id, protocol=r.protocol_name,
                                  leader=self.mid(r.leader), n=len(r.members)))
            elif kind == "SyncReceived":
                pass
            elif kind == "GroupMetadata" and r.members:
                rb = self.rebalances[-1] if self.rebalances else None
                self.draw(Note(self.t_ms(), ("K",), T("diagram.note_stable", generation=r.generation_id)))
                if rb is not None and rb.generation == r.generation_id and rb.stable_ms is None:
                    rb.stable_ms = e.timestamp_ms
                    self.event(who, T("demo.coord.stable_took", generation=r.generation_id,
                                      ms=rb.stable_ms - rb.started_ms))
                else:
                    self.event(who, T("demo.coord.stable", generation=r.generation_id))
            elif kind == "MemberRemoved":
                self.draw(Note(self.t_ms(), ("K",), T("diagram.note_removed", member=self.mid(r.member_id),
                                                      reason=self.shorten(r.reason)[:60])))
                self.event(who, T("demo.coord.removed", member=self.mid(r.member_id), reason=self.shorten(r.reason)))

    # --- what each consumer sends and receives ---------------------------------------------------------------

    def on_wire(self, name: str):
        T = self.T

        def cb(direction: str, node: int, kind: str, api_key: int, version: int, body: Any) -> None:
            api = API_NAMES.get(api_key)
            if api is None or api_key in (8, 9):
                return
            where = f"broker {node}"
            me = self.pid(name)
            if api_key == 12:
                if direction == "send":
                    self.draw(Message(self.t_ms(), me, "K", T("diagram.heartbeat_req",
                                                                generation=body.generation_id)))
                    return
                err = _error_name(body.error_code)
                self.draw(Message(self.t_ms(), "K", me, T("diagram.heartbeat_resp", error=err), reply=True))
                counts = self.heartbeats.setdefault(name, {})
                counts[body.error_code] = counts.get(body.error_code, 0) + 1
                if body.error_code == 0 and sum(counts.values()) == 1:
                    self.event(name, T("demo.wire.heartbeat_ok", where=where, ms=self.args.heartbeat_interval_ms))
                elif body.error_code == 27 and (name, len(self.rebalances)) not in self.seen_rebalance_hb:
                    self.seen_rebalance_hb.add((name, len(self.rebalances)))
                    self.event(name, T("demo.wire.heartbeat_rebalance", where=where))
                return
            if direction == "send":
                if api_key == 10:
                    key = body.coordinator_keys[0] if body.coordinator_keys else body.key
                    self.draw(Message(self.t_ms(), me, "K", T("diagram.find_req", key=key)))
                    self.event(name, T("demo.wire.find", api=api, version=version, key=key, where=where))
                elif api_key == 11:
                    protos = ", ".join(p.name for p in body.protocols)
                    mid = self.mid(body.member_id) if body.member_id else '""'
                    self.draw(Message(self.t_ms(), me, "K", T("diagram.join_req", member=mid, protocols=protos)))
                    self.event(name, T("demo.wire.join", api=api, version=version, where=where, member=mid,
                                       protocols=protos))
                elif api_key == 14:
                    if body.assignments:
                        self.draw(Message(self.t_ms(), me, "K", T("diagram.sync_req_leader",
                                                                    generation=body.generation_id,
                                                                    n=len(body.assignments))))
                        self.event(name, T("demo.wire.sync_leader", api=api, version=version, where=where,
                                           generation=body.generation_id, n=len(body.assignments)))
                    else:
                        self.draw(Message(self.t_ms(), me, "K", T("diagram.sync_req_follower",
                                                                    generation=body.generation_id)))
                        self.event(name, T("demo.wire.sync_follower", api=api, version=version, where=where,
                                           generation=body.generation_id))
                elif api_key == 13:
                    self.draw(Message(self.t_ms(), me, "K", T("diagram.leave_req")))
                    self.event(name, T("demo.wire.leave", api=api, version=version, where=where))
                return
            err = _error_name(getattr(body, "error_code", 0))
            if api_key == 10:
                c = body.coordinators[0] if getattr(body, "coordinators", None) else body
                err = _error_name(c.error_code)
                if c.error_code == 0:
                    self.coordinator_node = c.node_id
                    if self.diagram is not None:
                        self.diagram.participants[-1] = ("K", T("diagram.coordinator", node=c.node_id))
                self.draw(Message(self.t_ms(), "K", me, T("diagram.find_resp", error=err, node=c.node_id),
                                  reply=True))
                self.event(name, T("demo.wire.found", api=api, error=err, node=c.node_id, host=c.host, port=c.port))
            elif api_key == 11:
                if body.error_code == 0:
                    self.names.setdefault(body.member_id, name)
                    if body.leader == body.member_id:
                        self.draw(Message(self.t_ms(), "K", me, T("diagram.join_resp_leader",
                                                                    generation=body.generation_id,
                                                                    n=len(body.members)), reply=True))
                        self.event(name, T("demo.wire.join_leader", api=api, generation=body.generation_id,
                                           protocol=body.protocol_name, leader=self.mid(body.leader),
                                           n=len(body.members)))
                    else:
                        self.draw(Message(self.t_ms(), "K", me, T("diagram.join_resp_follower",
                                                                    generation=body.generation_id,
                                                                    leader=self.mid(body.leader)), reply=True))
                        self.event(name, T("demo.wire.join_follower", api=api, generation=body.generation_id,
                                           protocol=body.protocol_name, leader=self.mid(body.leader)))
                else:
                    if body.member_id:
                        self.names.setdefault(body.member_id, name)
                    if body.error_code == 79:
                        self.draw(Message(self.t_ms(), "K", me, T("diagram.join_resp_required",
                                                                    member=self.mid(body.member_id)), reply=True))
                    else:
                        self.draw(Message(self.t_ms(), "K", me, T("diagram.resp", api=api, error=err), reply=True))
                    if body.member_id:
                        self.event(name, T("demo.wire.error_member", api=api, error=err,
                                           member=self.mid(body.member_id)))
                    else:
                        self.event(name, T("demo.wire.error", api=api, error=err))
            elif api_key == 14:
                parts = self.tps(assignment_of(body.assignment)) if body.error_code == 0 else "-"
                self.draw(Message(self.t_ms(), "K", me, T("diagram.sync_resp", error=err, partitions=parts),
                                  reply=True))
                self.event(name, T("demo.wire.error", api=api, error=err))
            elif api_key == 13:
                self.draw(Message(self.t_ms(), "K", me, T("diagram.resp", api=api, error=err), reply=True))
                self.event(name, T("demo.wire.error", api=api, error=err))
        return cb

    def on_event(self, name: str):
        from consumer import outputs as out
        T = self.T

        def cb(o: Any) -> None:
            if isinstance(o, out.AssignmentComputed):
                rb = next((r for r in reversed(self.rebalances) if r.generation == o.generation_id), None)
                if rb is not None:
                    rb.assignment = dict(o.assignments)
                self.say(f"  [{self.t()}] {pad(name, 11)} " + T("demo.leader_assigns", protocol=o.protocol_name,
                                                                 generation=o.generation_id))
                for m, tps in sorted(o.assignments.items(), key=lambda kv: self.mid(kv[0])):
                    self.say(f"{'':25}{self.mid(m):<24} <- {self.tps(tps)}")
                self.pause()
            elif isinstance(o, out.PartitionsRevoked):
                self.draw(Note(self.t_ms(), (self.pid(name),), T("diagram.note_revoked",
                                                                 partitions=self.tps(o.partitions))))
                self.event(name, T("demo.cb.revoked", partitions=self.tps(o.partitions)))
            elif isinstance(o, out.PartitionsAssigned):
                self.draw(Note(self.t_ms(), (self.pid(name),), T("diagram.note_assigned",
                                                                 partitions=self.tps(o.partitions))))
                self.event(name, T("demo.cb.assigned", partitions=self.tps(o.partitions)))
            elif isinstance(o, out.PartitionsLost):
                self.event(name, T("demo.cb.lost", partitions=self.tps(o.partitions)))
        return cb

    # --- the script ------------------------------------------------------------------------------------------

    async def run(self) -> int:
        from client.driver import AsyncConsumer
        from coordinator.config import CoordinatorConfig
        from broker.server import KGroupServer, ServerSettings

        a = self.args
        T = self.T
        self.main_task = asyncio.current_task()
        self.loop = asyncio.get_running_loop()
        self.t0 = self.loop.time()
        min_session = min(500, a.session_timeout_ms)
        # __consumer_offsets is created only with offsets.topic.replication.factor brokers (Kafka's default 3)
        cfg = CoordinatorConfig.create({"group.initial.rebalance.delay.ms": a.initial_rebalance_delay_ms,
                                        "group.min.session.timeout.ms": min_session,
                                        "offsets.topic.replication.factor": min(3, a.brokers)})
        srv = KGroupServer(ServerSettings(brokers=a.brokers, port=0, topics=[(self.topic, self.partitions, 1)],
                                          config=cfg))
        await srv.start()
        consumers: list[AsyncConsumer] = []
        try:
            srv.add_listener(self.on_server_output)
            self.say(T("demo.title"))
            self.say(T("demo.timeouts", session=a.session_timeout_ms, heartbeat=a.heartbeat_interval_ms,
                       delay=a.initial_rebalance_delay_ms, min_session=min_session))
            self.say_cluster(srv, cfg)
            self.find_coordinator(srv, cfg)

            strategies = self._strategies()
            for i in range(a.consumers):
                name = f"c{i + 1}"
                c = AsyncConsumer(srv.bootstrap, {
                    "group.id": self.group, "client.id": name, "session.timeout.ms": a.session_timeout_ms,
                    "heartbeat.interval.ms": a.heartbeat_interval_ms,
                    "partition.assignment.strategy": ",".join(strategies[i]),
                    "auto.offset.reset": "earliest", "retry.backoff.ms": 50, "retry.backoff.max.ms": 200},
                    name=name, processing_ms=a.processing_ms, on_wire=self.on_wire(name),
                    on_event=self.on_event(name))
                consumers.append(c)
            title = T("demo.phase.live")
            self.phase(title)
            self.start_diagram("phase-1-3-join-sync", title)
            for c in consumers:
                await c.start([self.topic])
                await c.wait_until(lambda c: c.member_id != "", 10)  # join order = the order started
            await self.all_stable(consumers, 1)
            self.explain_vote(consumers, strategies)
            self.say()
            self.say(T("demo.assignments_now", generation=1))
            for c in consumers:
                self.say(f"    {self.mid(c.member_id):<24} {self.tps(c.assignment)}")
            self.pause()

            # --- phase 4: HEARTBEAT ----------------------------------------------------------------------------
            title = T("demo.phase.heartbeat", ms=a.heartbeat_phase_ms)
            self.phase(title)
            self.start_diagram("phase-4-heartbeat", title)
            before = {c.name: dict(self.heartbeats.get(c.name, {})) for c in consumers}
            await asyncio.sleep(a.heartbeat_phase_ms / 1000)
            for c in consumers:
                now = self.heartbeats.get(c.name, {})
                ok = now.get(0, 0) - before[c.name].get(0, 0)
                other = sum(v for k, v in now.items() if k != 0) - sum(v for k, v in before[c.name].items() if k != 0)
                self.say(T("demo.heartbeats", consumer=c.name, ok=ok,
                           errors=T("demo.heartbeat_errors", n=other) if other else "",
                           position=sum(c.positions.values()), partitions=len(c.assignment),
                           poll_ms=a.processing_ms))
            self.pause()

            # --- phase 5: clean leave --------------------------------------------------------------------------
            leaver = consumers[-1]
            title = T("demo.phase.leave", consumer=leaver.name)
            self.phase(title)
            self.start_diagram("phase-5-leave", title)
            await asyncio.wait_for(leaver.close(), 10)
            rest = consumers[:-1]
            await self.all_stable(rest, 2)
            self.say(T("demo.leave_explained"))
            self.pause()

            # --- phase 6: kill -------------------------------------------------------------------------------
            await self.kill_phase(rest, T("demo.phase.kill", consumer=rest[-1].name), "demo.killed",
                                  lambda survivors, timeout: self.all_stable(survivors, 3, timeout=timeout))
            self.ending()
        finally:
            for c in consumers:
                await c.kill()
            await srv.close()
        return 0

    def say_cluster(self, srv, cfg) -> None:
        T = self.T
        self.phase(T("demo.phase.cluster"))
        for b in sorted(srv.ports):
            self.say(T("demo.broker_listens", broker=b, host=srv.advertised_host, port=srv.ports[b]))
        self.say(T("demo.topic", topic=self.topic, partitions=self.partitions,
                   offsets_partitions=cfg.offsets_topic_num_partitions))

    def find_coordinator(self, srv, cfg) -> None:
        """Phase 1 is the same under both protocols: the group's coordinator is the leader of its
        ``__consumer_offsets`` partition."""
        from protocol.hashing import coordinator_partition, java_string_hash, kafka_abs
        T = self.T
        h = java_string_hash(self.group)
        n_off = cfg.offsets_topic_num_partitions
        p = coordinator_partition(self.group, n_off)
        leader = srv.cluster.partition("__consumer_offsets", p).leader
        self.coordinator_node = leader
        self.phase(T("demo.phase.find", group=self.group))
        self.say(T("demo.hash", group=self.group, hash=h))
        self.say(T("demo.abs", hash=h, abs=kafka_abs(h)))
        self.say(T("demo.mod", abs=kafka_abs(h), n=n_off, partition=p))
        self.say(T("demo.leader", partition=p, broker=leader, host=srv.advertised_host, port=srv.ports[leader]))
        self.say(T("demo.negotiate"))
        self.pause()

    async def kill_phase(self, consumers, title: str, killed_key: str, settle) -> None:
        """Phase 6 under both protocols: the last of ``consumers`` is killed (no leave) and the others wait for its
        session timeout; ``settle(survivors, timeout)`` waits until they own the topic again."""
        T, a = self.T, self.args
        victim, survivors = consumers[-1], consumers[:-1]
        self.phase(title)
        self.start_diagram("phase-6-kill", title)
        orphaned = self.tps(victim.assignment)
        killed_at = self.loop.time()
        await victim.kill()
        self.draw(Note(self.t_ms(), (self.pid(victim.name),), T("diagram.note_killed")))
        self.event(victim.name, T(killed_key, session=a.session_timeout_ms))
        await settle(survivors, a.session_timeout_ms / 1000 + 10)
        self.say(T("demo.kill_result", consumer=victim.name, seconds=self.loop.time() - killed_at,
                   partitions=orphaned))
        self.finish_diagram()

    def ending(self) -> None:
        T = self.T
        self.summary()
        self.say()
        if self.diagram_files:
            self.say(T("demo.diagrams_written", path=self.diagrams_dir))
        self.say(T("demo.done", seconds=self.loop.time() - self.t0))

    def _strategies(self) -> list[tuple[str, ...]]:
        if self.args.strategy:
            s = tuple(x.strip() for x in self.args.strategy.split(",") if x.strip())
            return [s] * self.args.consumers
        return [DEFAULT_STRATEGIES[i % 2] for i in range(self.args.consumers)]

    async def all_stable(self, consumers, generation: int, timeout: float = 15.0) -> None:
        def ok(c) -> bool:
            return c.stable and c.generation >= generation
        await asyncio.wait_for(asyncio.gather(*(c.wait_until(ok, timeout) for c in consumers)), timeout)

    def explain_vote(self, consumers, strategies) -> None:
        """ClassicGroup.selectProtocol: candidates = protocols every member supports; each member votes for its
        first candidate; most votes wins."""
        T = self.T
        rb = next((r for r in self.rebalances if r.generation == 1), None)
        self.say()
        self.say(T("demo.vote.header"))
        common = set(strategies[0]).intersection(*map(set, strategies[1:]))
        self.say(T("demo.vote.candidates", candidates=sorted(common)))
        votes: dict[str, int] = {}
        for c, s in zip(consumers, strategies):
            vote = next(x for x in s if x in common)
            votes[vote] = votes.get(vote, 0) + 1
            self.say(T("demo.vote.member", consumer=c.name, protocols=list(s), vote=vote))
        tally = ", ".join(f"{k}: {v}" for k, v in sorted(votes.items(), key=lambda kv: -kv[1]))
        self.say(T("demo.vote.tally", tally=tally, protocol=rb.protocol if rb else "?"))
        top = max(votes.values())
        if sum(1 for v in votes.values() if v == top) > 1:
            self.say(T("demo.vote.tie"))
        if rb is not None:
            self.say(T("demo.vote.leader", leader=self.mid(rb.leader)))

    def cause(self, rb: Rebalance) -> str:
        """The coordinator's reason, in a few words."""
        T = self.T
        who = ", ".join(self.mid(m) for m in sorted(self.seen_ids) if m in rb.reason) or T("demo.cause.someone")
        if "LeaveGroup" in rb.reason:
            return T("demo.cause.left", who=who)
        if "heartbeat expiration" in rb.reason:
            return T("demo.cause.session", who=who)
        if rb.reason.startswith("Adding new member"):
            d = self.args.initial_rebalance_delay_ms
            delay = T("demo.cause.delay_extended", n=1 + rb.extensions, ms=d) if rb.extensions else f"{d} ms"
            return T("demo.cause.joined_initial", who=who, delay=delay) if rb.initial else T("demo.cause.joined",
                                                                                             who=who)
        return self.shorten(rb.reason)

    def summary(self) -> None:
        T = self.T
        self.phase(T("demo.phase.summary"))
        self.say(T("demo.summary.header", gen=pad_left(T("demo.summary.gen"), 3),
                   took=pad_left(T("demo.summary.took"), 7), cause=pad(T("demo.summary.cause"), 46)))
        for rb in self.rebalances:
            if rb.generation is None:
                continue
            took = f"{rb.stable_ms - rb.started_ms} ms" if rb.stable_ms is not None else "-"
            cause = self.cause(rb)
            cause = cause if len(cause) <= 46 else cause[:45] + "…"
            rows = sorted(rb.assignment.items(), key=lambda kv: self.mid(kv[0])) or [(m, ()) for m in rb.members]
            first = True
            for m, tps in rows:
                lead = "*" if m == rb.leader else " "
                cell = f"{lead}{self.mid(m)} <- {self.tps(tps)}"
                if first:
                    self.say(f"  {rb.generation:>3}  {took:>7}  {pad(cause, 46)}  {cell}")
                    first = False
                else:
                    self.say(f"  {'':>3}  {'':>7}  {'':<46}  {cell}")
        self.say(T("demo.summary.legend"))


def _error_name(code: int) -> str:
    from protocol.errors import ErrorCode
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)
