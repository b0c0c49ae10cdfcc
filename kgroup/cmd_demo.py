"""`kgroup demo` (the README's `make demo`): the classic consumer-group protocol, live, over real TCP.

One process runs an embedded 3-broker ``kgroup serve`` (broker/server.py) on loopback ephemeral ports and
simulated consumer applications (client/driver.py driving the sans-IO consumer core). It narrates, phase by
phase, what the wire and the coordinator's records show: FIND_COORDINATOR (and why that broker), JOIN_GROUP
(member ids, the protocol vote, the leader), SYNC_GROUP (the leader's assignment), HEARTBEAT; then a clean
LeaveGroup and its rebalance; then a consumer killed without LeaveGroup, removed by its session timeout; then a
summary of every generation. Timeouts are shortened so that it all takes a few seconds (printed at the start).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from dataclasses import dataclass, field
from typing import Any, Optional

DEFAULT_STRATEGIES = (("range", "roundrobin"), ("roundrobin", "range"))
API_NAMES = {10: "FIND_COORDINATOR", 11: "JOIN_GROUP", 12: "HEARTBEAT", 13: "LEAVE_GROUP", 14: "SYNC_GROUP",
             8: "OFFSET_COMMIT", 9: "OFFSET_FETCH"}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="a guided, live tour of the consumer-group protocol over TCP",
                       description="Start a 3-broker coordinator and simulated consumers on loopback and narrate "
                                   "FIND_COORDINATOR -> JOIN_GROUP -> SYNC_GROUP -> HEARTBEAT, a clean leave and a "
                                   "session-timeout removal.")
    p.add_argument("--group", default="demo-group", help="group id (default: demo-group)")
    p.add_argument("--topic", default="orders:6", metavar="NAME:PARTITIONS", help="topic (default: orders:6)")
    p.add_argument("--consumers", type=int, default=3, help="number of consumers, >= 3 (default: 3)")
    p.add_argument("--strategy", default=None,
                   help="partition.assignment.strategy of every consumer, e.g. 'cooperative-sticky' or "
                        "'range,roundrobin' (default: a mix of [range, roundrobin] and [roundrobin, range], "
                        "to show the vote)")
    p.add_argument("--brokers", type=int, default=3, help="brokers in the embedded cluster (default: 3)")
    p.add_argument("--session-timeout-ms", type=int, default=2000, help="session.timeout.ms (default: 2000)")
    p.add_argument("--heartbeat-interval-ms", type=int, default=500, help="heartbeat.interval.ms (default: 500)")
    p.add_argument("--initial-rebalance-delay-ms", type=int, default=500,
                   help="the brokers' group.initial.rebalance.delay.ms (default: 500)")
    p.add_argument("--processing-ms", type=float, default=50.0,
                   help="simulated processing time per poll (default: 50)")
    p.add_argument("--heartbeat-phase-ms", type=int, default=1500,
                   help="how long to watch the stable group heartbeat (default: 1500)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        name, _, parts = args.topic.rpartition(":")
        topic = (name, int(parts))
        if not name or topic[1] < 1:
            raise ValueError
    except ValueError:
        print(f"kgroup demo: --topic must be NAME:PARTITIONS, got {args.topic!r}", file=sys.stderr)
        return 2
    if args.consumers < 3:
        print("kgroup demo: --consumers must be >= 3 (one leaves, one is killed, the rest stay)", file=sys.stderr)
        return 2
    if args.heartbeat_interval_ms >= args.session_timeout_ms:
        print("kgroup demo: --heartbeat-interval-ms must be lower than --session-timeout-ms", file=sys.stderr)
        return 2
    if args.brokers < 1:
        print("kgroup demo: --brokers must be >= 1", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.ERROR)
    try:
        return asyncio.run(asyncio.wait_for(Demo(args, topic).run(), 120))
    except asyncio.TimeoutError:
        print("kgroup demo: timed out", file=sys.stderr)
        return 1


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
    def __init__(self, args: argparse.Namespace, topic: tuple[str, int]) -> None:
        self.args = args
        self.topic, self.partitions = topic
        self.group = args.group
        self.names: dict[str, str] = {}        # member id -> consumer name
        self.rebalances: list[Rebalance] = []
        self.t0 = 0.0
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self.heartbeats: dict[str, dict[int, int]] = {}   # consumer -> error code -> count
        self.quiet_heartbeats = True
        self.seen_rebalance_hb: set[tuple[str, int]] = set()
        self.seen_ids: set[str] = set()

    # --- output helpers ------------------------------------------------------------------------------------

    def t(self) -> str:
        return f"{(self.loop.time() - self.t0):6.3f}s"

    def say(self, text: str = "") -> None:
        print(text, flush=True)

    def event(self, who: str, text: str) -> None:
        self.say(f"  [{self.t()}] {who:<11} {text}")

    def phase(self, title: str) -> None:
        self.say()
        self.say(f"== {title} " + "=" * max(0, 100 - len(title)))

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
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        if not by_topic:
            return "(none)"
        return " ".join(f"{t}-{sorted(ps)}".replace(" ", "") for t, ps in sorted(by_topic.items()))

    # --- the coordinator's records (server listener) ----------------------------------------------------------

    def on_server_output(self, o: Any) -> None:
        for e in o.records:
            r = e.record
            if getattr(r, "group_id", None) != self.group:
                continue
            kind = r.TYPE
            for attr in ("member_id", "leader"):
                if getattr(r, attr, None):
                    self.mid(getattr(r, attr))
            if kind == "PendingMemberAdded":
                self.event("coordinator", f"JoinGroup without member id -> MEMBER_ID_REQUIRED, new id "
                                          f"{self.mid(r.member_id)} (KIP-394)")
            elif kind == "MemberJoined":
                protos = ", ".join(n for n, _ in r.protocols)
                self.event("coordinator", f"member {self.mid(r.member_id)} joined, supports [{protos}]; its "
                                          f"JoinGroup is parked until the join phase completes")
            elif kind == "MemberRejoined":
                self.event("coordinator", f"member {self.mid(r.member_id)} rejoined")
            elif kind == "RebalanceStarted":
                self.rebalances.append(Rebalance(e.timestamp_ms, r.reason, initial=r.initial))
                extra = (f" (initial rebalance: waits group.initial.rebalance.delay.ms="
                         f"{self.args.initial_rebalance_delay_ms} ms for more members)" if r.initial else "")
                self.event("coordinator", f"rebalance started: {self.shorten(r.reason)}{extra}")
            elif kind == "InitialRebalanceExtended":
                if self.rebalances:
                    self.rebalances[-1].extensions += 1
                self.event("coordinator", f"a member arrived during the initial delay: extended by {r.delay_ms} ms")
            elif kind == "JoinCompleted":
                rb = self.rebalances[-1] if self.rebalances else None
                if rb is not None:
                    rb.generation, rb.protocol, rb.leader, rb.members = (r.generation_id, r.protocol_name,
                                                                        r.leader, tuple(r.members))
                self.event("coordinator", f"join phase complete: generation {r.generation_id}, protocol "
                                          f"{r.protocol_name!r}, leader {self.mid(r.leader)}, "
                                          f"{len(r.members)} member(s)")
            elif kind == "SyncReceived":
                pass
            elif kind == "GroupMetadata" and r.members:
                rb = self.rebalances[-1] if self.rebalances else None
                if rb is not None and rb.generation == r.generation_id and rb.stable_ms is None:
                    rb.stable_ms = e.timestamp_ms
                    took = f" (rebalance took {rb.stable_ms - rb.started_ms} ms)"
                else:
                    took = ""
                self.event("coordinator", f"leader's SyncGroup stored -> group Stable at generation "
                                          f"{r.generation_id}{took}")
            elif kind == "MemberRemoved":
                self.event("coordinator", f"member {self.mid(r.member_id)} removed: {self.shorten(r.reason)}")

    # --- what each consumer sends and receives ---------------------------------------------------------------

    def on_wire(self, name: str):
        def cb(direction: str, node: int, kind: str, api_key: int, version: int, body: Any) -> None:
            api = API_NAMES.get(api_key)
            if api is None or api_key in (8, 9):
                return
            where = f"broker {node}"
            if api_key == 12:
                if direction == "recv":
                    counts = self.heartbeats.setdefault(name, {})
                    counts[body.error_code] = counts.get(body.error_code, 0) + 1
                    if body.error_code == 0 and sum(counts.values()) == 1:
                        self.event(name, f"<- HEARTBEAT NONE from {where} (then every "
                                         f"{self.args.heartbeat_interval_ms} ms; counted, not printed)")
                    elif body.error_code == 27 and (name, len(self.rebalances)) not in self.seen_rebalance_hb:
                        self.seen_rebalance_hb.add((name, len(self.rebalances)))
                        self.event(name, f"<- HEARTBEAT REBALANCE_IN_PROGRESS from {where}: must rejoin")
                return
            if direction == "send":
                if api_key == 10:
                    key = body.coordinator_keys[0] if body.coordinator_keys else body.key
                    self.event(name, f"-> {api} v{version} key={key!r} to {where} (any broker will do)")
                elif api_key == 11:
                    protos = ", ".join(p.name for p in body.protocols)
                    mid = self.mid(body.member_id) if body.member_id else '""'
                    self.event(name, f"-> {api} v{version} to {where} member_id={mid} protocols=[{protos}]")
                elif api_key == 14:
                    what = (f"{len(body.assignments)} assignment(s) (leader)" if body.assignments
                            else "no assignments (follower)")
                    self.event(name, f"-> {api} v{version} to {where} generation {body.generation_id}, {what}")
                elif api_key == 13:
                    self.event(name, f"-> {api} v{version} to {where} (clean shutdown)")
                return
            err = _error_name(getattr(body, "error_code", 0))
            if api_key == 10:
                c = body.coordinators[0] if getattr(body, "coordinators", None) else body
                err = _error_name(c.error_code)
                self.event(name, f"<- {api} {err}: coordinator is broker {c.node_id} ({c.host}:{c.port})")
            elif api_key == 11:
                if body.error_code == 0:
                    role = (f"LEADER, gets the subscriptions of all {len(body.members)} member(s)"
                            if body.leader == body.member_id else "follower")
                    self.names.setdefault(body.member_id, name)
                    self.event(name, f"<- {api} NONE generation {body.generation_id} protocol "
                                     f"{body.protocol_name!r} leader {self.mid(body.leader)}: {role}")
                else:
                    if body.member_id:
                        self.names.setdefault(body.member_id, name)
                    self.event(name, f"<- {api} {err}" + (f" member_id={self.mid(body.member_id)}"
                                                          if body.member_id else ""))
            elif api_key == 14:
                self.event(name, f"<- {api} {err}")
            elif api_key == 13:
                self.event(name, f"<- {api} {err}")
        return cb

    def on_event(self, name: str):
        from consumer import outputs as out

        def cb(o: Any) -> None:
            if isinstance(o, out.AssignmentComputed):
                rb = next((r for r in reversed(self.rebalances) if r.generation == o.generation_id), None)
                if rb is not None:
                    rb.assignment = dict(o.assignments)
                self.event(name, f"as leader, runs the {o.protocol_name!r} assignor (generation {o.generation_id}):")
                for m, tps in sorted(o.assignments.items(), key=lambda kv: self.mid(kv[0])):
                    self.say(f"{'':25}{self.mid(m):<24} <- {self.tps(tps)}")
            elif isinstance(o, out.PartitionsRevoked):
                self.event(name, f"onPartitionsRevoked({self.tps(o.partitions)})")
            elif isinstance(o, out.PartitionsAssigned):
                self.event(name, f"onPartitionsAssigned({self.tps(o.partitions)})")
            elif isinstance(o, out.PartitionsLost):
                self.event(name, f"onPartitionsLost({self.tps(o.partitions)})")
        return cb

    # --- the script ------------------------------------------------------------------------------------------

    async def run(self) -> int:
        from client.driver import AsyncConsumer
        from coordinator.config import CoordinatorConfig
        from broker.server import KGroupServer, ServerSettings
        from protocol.hashing import coordinator_partition, java_string_hash, kafka_abs

        a = self.args
        self.loop = asyncio.get_running_loop()
        self.t0 = self.loop.time()
        min_session = min(500, a.session_timeout_ms)
        cfg = CoordinatorConfig.create({"group.initial.rebalance.delay.ms": a.initial_rebalance_delay_ms,
                                        "group.min.session.timeout.ms": min_session})
        srv = KGroupServer(ServerSettings(brokers=a.brokers, port=0, topics=[(self.topic, self.partitions, 1)],
                                          config=cfg))
        await srv.start()
        consumers: list[AsyncConsumer] = []
        try:
            srv.add_listener(self.on_server_output)
            self.say("kgroup demo: Kafka's classic consumer-group protocol, live over TCP on loopback.")
            self.say(f"Short timeouts for the demo: session.timeout.ms={a.session_timeout_ms}, heartbeat.interval.ms="
                     f"{a.heartbeat_interval_ms}, group.initial.rebalance.delay.ms={a.initial_rebalance_delay_ms},")
            self.say(f"group.min.session.timeout.ms={min_session} (Kafka's defaults: 45000, 3000, 3000, 6000).")
            self.phase("the cluster")
            for b in sorted(srv.ports):
                self.say(f"  broker {b} listens on {srv.advertised_host}:{srv.ports[b]}")
            self.say(f"  topic {self.topic!r}: {self.partitions} partitions; __consumer_offsets: "
                     f"{cfg.offsets_topic_num_partitions} partitions spread over the brokers")

            # --- phase 1: FIND_COORDINATOR --------------------------------------------------------------------
            h = java_string_hash(self.group)
            n_off = cfg.offsets_topic_num_partitions
            p = coordinator_partition(self.group, n_off)
            leader = srv.cluster.partition("__consumer_offsets", p).leader
            self.phase(f"phase 1: FIND_COORDINATOR -- which broker coordinates group {self.group!r}?")
            self.say(f"  {self.group!r}.hashCode()  = {h}   (Java String.hashCode, 32-bit)")
            self.say(f"  Utils.abs({h}) = {kafka_abs(h)}   (Kafka's abs: Integer.MIN_VALUE -> 0)")
            self.say(f"  {kafka_abs(h)} % offsets.topic.num.partitions ({n_off}) = {p}  -> __consumer_offsets "
                     f"partition {p}")
            self.say(f"  the leader of __consumer_offsets-{p} is broker {leader}  -> broker {leader} "
                     f"({srv.advertised_host}:{srv.ports[leader]}) is the group coordinator")
            self.say("  (every connection first negotiates versions with API_VERSIONS; METADATA gives the brokers)")

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
            self.phase("phases 1-3: FIND_COORDINATOR -> JOIN_GROUP -> SYNC_GROUP, as it happens")
            for c in consumers:
                await c.start([self.topic])
                await c.wait_until(lambda c: c.member_id != "", 10)  # join order = the order started
            await self.all_stable(consumers, 1)
            self.explain_vote(consumers, strategies)
            self.say()
            self.say("  assignments now (generation 1):")
            for c in consumers:
                self.say(f"    {self.mid(c.member_id):<24} {self.tps(c.assignment)}")

            # --- phase 4: HEARTBEAT ----------------------------------------------------------------------------
            self.phase(f"phase 4: HEARTBEAT -- the group is stable; watching for {a.heartbeat_phase_ms} ms")
            before = {c.name: dict(self.heartbeats.get(c.name, {})) for c in consumers}
            await asyncio.sleep(a.heartbeat_phase_ms / 1000)
            for c in consumers:
                now = self.heartbeats.get(c.name, {})
                ok = now.get(0, 0) - before[c.name].get(0, 0)
                other = sum(v for k, v in now.items() if k != 0) - sum(v for k, v in before[c.name].items() if k != 0)
                self.say(f"  {c.name}: {ok} heartbeats answered NONE" + (f", {other} with errors" if other else "")
                         + f"; position advanced to {sum(c.positions.values())} records over "
                           f"{len(c.assignment)} partitions ({a.processing_ms:g} ms per poll)")

            # --- phase 5: clean leave --------------------------------------------------------------------------
            leaver = consumers[-1]
            self.phase(f"phase 5: {leaver.name} leaves cleanly (close(): commit, onPartitionsRevoked, LEAVE_GROUP)")
            await asyncio.wait_for(leaver.close(), 10)
            rest = consumers[:-1]
            await self.all_stable(rest, 2)
            self.say("  the LeaveGroup started the rebalance at once (no session timeout needed); the others learned of it")
            self.say("  from their next heartbeat and rejoined at their next poll")

            # --- phase 6: kill -------------------------------------------------------------------------------
            victim = rest[-1]
            survivors = rest[:-1]
            self.phase(f"phase 6: {victim.name} is killed (sockets dropped, no LEAVE_GROUP)")
            orphaned = self.tps(victim.assignment)
            killed_at = self.loop.time()
            await victim.kill()
            self.event(victim.name, f"killed; the coordinator hears nothing until session.timeout.ms="
                                    f"{a.session_timeout_ms} ms pass without a heartbeat")
            await self.all_stable(survivors, 3, timeout=a.session_timeout_ms / 1000 + 10)
            self.say(f"  {victim.name} was removed and the group rebalanced {self.loop.time() - killed_at:.2f} s after "
                     f"the kill; meanwhile nobody consumed {orphaned}")

            self.summary()
            self.say()
            self.say(f"done in {self.loop.time() - self.t0:.1f} s.")
        finally:
            for c in consumers:
                await c.kill()
            await srv.close()
        return 0

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
        rb = next((r for r in self.rebalances if r.generation == 1), None)
        self.say()
        self.say("  the protocol vote (ClassicGroup.selectProtocol):")
        common = set(strategies[0]).intersection(*map(set, strategies[1:]))
        self.say(f"    candidates (supported by every member): {sorted(common)}")
        votes: dict[str, int] = {}
        for c, s in zip(consumers, strategies):
            vote = next(x for x in s if x in common)
            votes[vote] = votes.get(vote, 0) + 1
            self.say(f"    {c.name} prefers {list(s)} -> votes {vote!r}")
        tally = ", ".join(f"{k}: {v}" for k, v in sorted(votes.items(), key=lambda kv: -kv[1]))
        self.say(f"    tally {tally} -> the coordinator chose {rb.protocol if rb else '?'!r}")
        top = max(votes.values())
        if sum(1 for v in votes.values() if v == top) > 1:
            self.say("    (a tie: Kafka takes the first maximum in java.util.HashMap iteration order of the names)")
        if rb is not None:
            self.say(f"  the leader is the first member that joined: {self.mid(rb.leader)}; only the leader runs the "
                     f"assignor, followers get their share in the SyncGroup response")

    def cause(self, rb: Rebalance) -> str:
        """The coordinator's reason, in a few words."""
        who = ", ".join(self.mid(m) for m in sorted(self.seen_ids) if m in rb.reason) or "a member"
        if "LeaveGroup" in rb.reason:
            return f"{who} left (LeaveGroup)"
        if "heartbeat expiration" in rb.reason:
            return f"{who}: session timeout"
        if rb.reason.startswith("Adding new member"):
            d = self.args.initial_rebalance_delay_ms
            delay = f"{1 + rb.extensions} x {d} ms" if rb.extensions else f"{d} ms"
            return f"{who} joined (initial delay {delay})" if rb.initial else f"{who} joined"
        return self.shorten(rb.reason)

    def summary(self) -> None:
        self.phase("summary: one row per rebalance (times from the coordinator's records)")
        self.say(f"  {'gen':>3}  {'took':>7}  {'cause':<46}  members <- partitions")
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
                    self.say(f"  {rb.generation:>3}  {took:>7}  {cause:<46}  {cell}")
                    first = False
                else:
                    self.say(f"  {'':>3}  {'':>7}  {'':<46}  {cell}")
        self.say("  (* = the generation's leader; 'took' = from RebalanceStarted to the Stable GroupMetadata record)")


def _error_name(code: int) -> str:
    from protocol.errors import ErrorCode
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)
