"""The simulated consumer processes: one ``consumer.ConsumerCoordinator`` each (the same sans-IO core
``client/driver.py`` runs over TCP), driven through its plain driver interface, with the process's lifecycle.

Theory of operation
-------------------
* **A process** (:class:`SimConsumer`) has two threads, as the Java consumer: the *heartbeat thread* -- here a
  wake-up at the core's ``next_deadline_ms()`` that calls ``tick`` -- and the *application thread*, the poll
  loop of :mod:`scenarios.application`. Each has one wake-up event, built once per consumer; a wake-up is pushed
  only when it is earlier than the one already scheduled, and one whose deadline moved finds a newer deadline
  on the consumer when it is popped and does nothing (lazy deletion). Nothing scans all consumers per tick.
* **Driving the core** (:meth:`Consumers.guard`): every call into the core (tick, poll, a response, a
  disconnect, close) is followed by draining its outputs in order -- requests onto the network, connection
  closes, rebalance callbacks (ownership, the trace, the invariant checker), state changes into the trace -- and
  by asking both deadlines again (docs/consumer.md: the core's plain driver interface; no hints). A fatal client
  error (what ``KafkaConsumer.poll`` throws, e.g. ``FencedInstanceIdException``) ends the application: the
  process exits without a LeaveGroup and the run lists it under ``consumer_errors``.
* **Lifecycle.** ``start`` is a new process: a new core (a new member id for a dynamic member), given the
  broker's ApiVersions and Metadata answers (:mod:`scenarios.brokers`), subscribed, and polled at once.
  ``stop`` is ``KafkaConsumer.close`` after the application's current iteration (auto-commit, revoke,
  LeaveGroup); the process exits when the core outputs ``Closed``. ``crash`` exits at once: no commit, no
  LeaveGroup; its connections die with it. ``pause`` freezes the process (a GC pause): no heartbeat thread, no
  application, responses wait in its socket buffer and are handled in order when it resumes (then the
  heartbeat thread runs first). Each start is a new *incarnation*, so a disconnect meant for an earlier one is
  ignored.
* **The members' own heartbeats** (consumer protocol) feed two invariants: every epoch-0 ConsumerGroupHeartbeat
  goes to ``join-heartbeats-full`` as it is sent; a member that goes FENCED, leaves on its poll timer, or loses its
  coordinator through a heartbeat error *owes* a heartbeat, and ``heartbeats-resume`` is checked
  ``retry.backoff.max.ms`` after it could send it (its application's next poll; its coordinator found).
* **Ownership.** The partitions each consumer holds (between its ``PartitionsAssigned`` and
  ``PartitionsRevoked`` / ``PartitionsLost`` callbacks, or its exit) feed the ownership invariants and tell the
  producer whom new records wake.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from consumer import outputs as O
from consumer.config import ConsumerConfig
from consumer.coordinator import DISCONNECTED, ConsumerCoordinator, RebalanceProtocol
from consumer.consumer_membership import POLL_TIMEOUT_LEAVE_REASON
from consumer.errors import KafkaException
from protocol.messages import ConsumerGroupHeartbeatResponse
from protocol.uuids import random_uuid

from scenarios import model as M


@dataclass(slots=True)
class SimConsumer:
    spec: M.ResolvedMember
    config: ConsumerConfig
    index: int
    core: Optional[ConsumerCoordinator] = None
    alive: bool = False
    closing: bool = False
    paused_until: Optional[int] = None
    busy_until: Optional[int] = None
    batch: list = field(default_factory=list)
    slow_until: int = -1
    slow_poll_ms: int = 0
    tick_at: Optional[int] = None
    app_at: Optional[int] = None
    conns: dict = field(default_factory=dict)  # 2 * broker (+1 for the coordinator connection) -> Connection
    coord_conn: Any = None  # the coordinator connection last used (saves a dict lookup per request)
    inbox: list = field(default_factory=list)  # the socket buffer of a paused process: (handler, conn, item)
    owned: set = field(default_factory=set)
    incarnation: int = 0
    cooperative: bool = False
    latest_reset: bool = False
    topics: Optional[tuple] = None  # subscription changed by the timeline
    # the time of a poll that could make no progress; any delivery or disconnect clears it (wakes the poll)
    blocked: Optional[int] = None
    log_version: int = -1  # PartitionLogs.version last given to the core as log end offsets
    protocol: str = "classic"  # group.protocol of the next start (a timeline restart may switch it)
    hold: Optional[tuple] = None  # hold_revocation armed: (until, duration)
    #: heartbeats-resume: the heartbeat this consumer-protocol member owes, [why, since, rejoin?, able_ms, armed?]
    owed: Optional[list] = None
    # copies of spec fields read on every message (plain attributes are cheaper than properties)
    name: str = field(init=False)
    group: str = field(init=False)
    host: str = field(init=False)  # the client address the coordinator sees
    poll_timeout_ms: int = field(init=False)
    # this consumer's wake-up events, built once: a new tuple per heartbeat would live in the queue for a whole
    # interval and then be freed cold (cache misses when thousands of members cycle through)
    tick_ev: tuple = field(init=False)
    app_ev: tuple = field(init=False)

    def __post_init__(self) -> None:
        self.name = self.spec.name
        self.group = self.spec.group
        self.host = f"/10.0.{self.index // 250}.{self.index % 250 + 1}"
        self.poll_timeout_ms = self.spec.app.poll_timeout_ms
        self.protocol = self.spec.protocol


def new_core(config: ConsumerConfig, now_ms: int, member_id: Optional[str] = None) -> ConsumerCoordinator:
    """A consumer core for ``config``: the classic membership, or (``group.protocol = consumer``) KIP-848's,
    behind the same driver interface. A consumer-protocol member makes its own member id (KIP-1082); the
    simulator gives it one drawn from the run's seed so that runs replay byte for byte."""
    if member_id is None:
        return ConsumerCoordinator(config, now_ms=now_ms)
    return ConsumerCoordinator(config, now_ms=now_ms, member_id=member_id)


def consumer_member_id(seed: int, name: str, incarnation: int) -> str:
    """The member id a consumer-protocol consumer generates (``Uuid.randomUuid()``), from (seed, name, start):
    a new process gets a new id, as Kafka's client does; the same run gets the same ids."""
    digest = hashlib.sha256(f"{seed}/{name}/{incarnation}".encode()).digest()
    return random_uuid(random.Random(int.from_bytes(digest[:8], "big")))


#: ConsumerGroupHeartbeat's API key
CGH_API = 68
#: heartbeat errors that make a member rediscover its coordinator, then owe a heartbeat (heartbeats-resume)
_COORDINATOR_ERRORS = {16: "NOT_COORDINATOR", 15: "COORDINATOR_NOT_AVAILABLE"}


class Consumers:
    """Every consumer process of a run, and the driver of their cores."""

    def __init__(self, scenario: M.Scenario, clock: Any, push: Callable[[int, tuple], None],
                 call: Callable[..., None], tracer: Any, checker: Any, network: Any, brokers: Any,
                 app: Any, seed: int = 0) -> None:
        self.seed = seed
        self._clock = clock
        self._push = push
        self._call = call
        self.tracer = tracer
        self.checker = checker
        self.network = network
        self._send = network.send
        self.brokers = brokers
        self.app = app
        self.consumers: list[SimConsumer] = []
        self.by_name: dict[str, SimConsumer] = {}
        self.owners: dict[tuple[str, int], set] = {}  # partition -> indexes of the consumers holding it
        self.errors: list[dict] = []  # fatal client errors
        on_tick, on_turn = self.on_tick, app.on_turn  # one bound method each, shared by every consumer's events
        for rm in M.resolve_members(scenario):
            c = SimConsumer(rm, ConsumerConfig.create(rm.config), len(self.consumers))
            c.latest_reset = c.config.auto_offset_reset == "latest"
            c.tick_ev = (on_tick, c, None)
            c.app_ev = (on_turn, c, None)
            self.consumers.append(c)
            self.by_name[rm.name] = c

    # --- the heartbeat thread -------------------------------------------------------------------------------------
    def on_tick(self, c: SimConsumer, _: Any) -> None:
        """The heartbeat thread's wake-up (event handler)."""
        t = self._clock.now
        if c.tick_at == t and c.alive:
            c.tick_at = None
            if c.paused_until is None:
                self.guard(c, c.core.tick, t)

    # --- driving the core -----------------------------------------------------------------------------------------
    def guard(self, c: SimConsumer, fn: Callable, *args: Any) -> Any:
        """Call into a consumer core, then act on its outputs and reschedule it. A fatal client error (what
        ``KafkaConsumer.poll`` throws) ends the application: the consumer crashes."""
        try:
            result = fn(*args)
        except KafkaException as exc:
            self.outputs(c)
            self._fatal(c, exc)
            return None
        self.outputs(c)
        if c.alive:
            self.reschedule(c)
        return result

    def _fatal(self, c: SimConsumer, exc: BaseException) -> None:
        err = {"t": self._clock.now, "consumer": c.name, "error": f"{type(exc).__name__}: {exc}"}
        self.errors.append(err)
        self.tracer.trace("consumer_error", consumer=c.name, error=err["error"])
        self.crash(c, reason="fatal error")

    def reschedule(self, c: SimConsumer) -> None:
        """Schedule the core's next tick and the application's next turn, if earlier than the wake-ups already
        scheduled."""
        core = c.core
        now = self._clock.now
        d = core.next_deadline_ms()
        if d is not None:
            if d < now:
                d = now
            if c.tick_at is None or d < c.tick_at:
                c.tick_at = d
                self._push(d, c.tick_ev)
        if not c.closing:
            self.app.schedule(c, core, now)

    def received(self, c: SimConsumer, handle: int, resp: Any) -> None:
        """A response reached the process (from the network)."""
        c.blocked = None  # a response wakes an application blocked in poll()
        self.guard(c, c.core.on_response, handle, resp, self._clock.now)
        if type(resp) is ConsumerGroupHeartbeatResponse and resp.error_code in _COORDINATOR_ERRORS:
            # (a leave's answer is only logged: the member keeps its coordinator and owes nothing)
            if c.alive and not c.closing and c.core.coordinator is None:
                self._owe(c, f"told {_COORDINATOR_ERRORS[resp.error_code]}", False)

    def disconnected(self, c: SimConsumer, conn: Any, handles: list[int]) -> None:
        """The other side closed a connection: its requests in flight failed (from the network)."""
        core = c.core
        now = self._clock.now

        def fail() -> None:
            for h in handles:
                core.on_response(h, DISCONNECTED, now)
            if conn.coord:
                core.on_disconnect(conn.node, now)
        c.blocked = None
        self.guard(c, fail)

    def outputs(self, c: SimConsumer) -> None:
        core = c.core
        for o in core.drain():
            t = type(o)
            if t is O.SendRequest:
                self._send(c, o)
                if o.api_key == CGH_API:
                    self._cg_heartbeat_sent(c, o.body)
            elif t is O.CloseConnection:
                self.network.client_close(c, o.node_id, core.in_flight)
            elif t is O.PartitionsAssigned:
                self._assigned(c, o.partitions)
            elif t is O.PartitionsRevoked or t is O.PartitionsLost:
                self._released(c, o.partitions, "revoked" if t is O.PartitionsRevoked else "lost")
            elif t is O.PositionsInitialized:
                self.app.positions_reset(c, o.reset)
            elif t is O.StateChanged:
                self.tracer.trace("state", consumer=c.name, old=o.old, new=o.new, reason=o.reason)
                if o.new == "FENCED" and not c.closing:
                    self._owe(c, "fenced", True)
                if c.hold is not None and o.new == "RECONCILING":
                    self._hold(c)
            elif t is O.GroupJoined:
                self.tracer.trace("joined", consumer=c.name, generation=o.generation_id, member_id=o.member_id,
                      leader=o.is_leader, protocol=o.protocol_name)
            elif t is O.LeftGroup:
                self.tracer.trace("left", consumer=c.name, member_id=o.member_id, reason=o.reason)
                if o.reason == POLL_TIMEOUT_LEAVE_REASON and c.protocol == "consumer" and not c.closing:
                    self._owe(c, "left on its poll timeout", True)
            elif t is O.CoordinatorDiscovered:
                self.tracer.trace("coordinator", consumer=c.name, node=o.node.node_id)
                if c.owed is not None and not c.owed[2]:
                    self._arm_owed(c)
            elif t is O.Closed:
                self.tracer.trace("closed", consumer=c.name)
                self._gone(c)
                return
            elif t is O.OffsetCommitCompleted:
                if o.exception is not None:
                    self.tracer.trace("commit_failed", consumer=c.name, error=type(o.exception).__name__)

    # --- heartbeats-resume / join-heartbeats-full (consumer protocol; scenarios/invariants.py) ---------------------
    def _owe(self, c: SimConsumer, why: str, rejoin: bool) -> None:
        """``c`` now owes a heartbeat: a rejoin (fenced, left on its poll timeout) or any (its coordinator moved).
        A rejoin owed already stays owed from its first cause."""
        if c.owed is None or (rejoin and not c.owed[2]):
            c.owed = [why, self._clock.now, rejoin, None, False]

    def _cg_heartbeat_sent(self, c: SimConsumer, body: Any) -> None:
        now = self._clock.now
        epoch = body.member_epoch
        if epoch == 0:
            self.checker.on_join_heartbeat(now, c.group, c.name, body, c.config.group_remote_assignor)
        owed = c.owed
        if owed is not None and (epoch == 0 or not owed[2]):
            c.owed = None
            self.checker.heartbeat_owed(now, c.group, c.name, owed[0], owed[1], owed[3], owed[2], False)

    def polled(self, c: SimConsumer) -> None:
        """The application called poll: a member owing a rejoin can now send it (Kafka's client releases the
        partitions in poll, onPartitionsLost, and transitions to JOINING)."""
        if c.owed is not None and c.owed[2] and not c.owed[4]:
            self._arm_owed(c)

    def _arm_owed(self, c: SimConsumer) -> None:
        owed = c.owed
        now = self._clock.now
        owed[3] = now
        owed[4] = True
        self._call(now + c.config.retry_backoff_max_ms, self._check_owed, c, c.incarnation, owed)

    def _check_owed(self, c: SimConsumer, incarnation: int, owed: list, was_blocked: bool = False) -> None:
        """The deadline of an owed heartbeat: still owed by a running process that could send it is a violation.
        A paused process, or one without a coordinator, gets another ``retry.backoff.max.ms`` -- and one more full
        window once it is neither (a heartbeat that failed meanwhile may wait out its backoff)."""
        if c.owed is not owed:
            return
        if not c.alive or c.incarnation != incarnation or c.closing:
            c.owed = None
            return
        blocked = c.paused_until is not None or c.core.coordinator is None
        if blocked or was_blocked:
            self._call(max(self._clock.now, c.paused_until or 0) + c.config.retry_backoff_max_ms, self._check_owed,
                       c, incarnation, owed, blocked)
            return
        c.owed = None
        self.checker.heartbeat_owed(self._clock.now, c.group, c.name, owed[0], owed[1], owed[3], owed[2], True)

    # --- ownership --------------------------------------------------------------------------------------------------
    def _assigned(self, c: SimConsumer, added: tuple) -> None:
        core = c.core
        if c.protocol == "consumer":
            self._cg_assigned(c, added)
            return
        gen = core.generation
        parts = [(tp.topic, tp.partition) for tp in core.assignment]
        self.tracer.trace("assigned", consumer=c.name, generation=gen.generation_id,
                          added=[f"{t}-{p}" for t, p in ((tp.topic, tp.partition) for tp in added)],
                          owned=[f"{t}-{p}" for t, p in parts])
        for tp in parts:
            if tp not in c.owned:
                c.owned.add(tp)
                self.owners.setdefault(tp, set()).add(c.index)
        svc = self.brokers.svc
        group = svc.group(c.group)

        def is_member(member_id: str, group=group) -> Optional[bool]:
            return None if group is None else member_id in group.members
        self.checker.on_assigned(self._clock.now, c.group, c.name, gen.member_id, gen.generation_id, parts,
                                 c.cooperative, is_member)
        # a classic member's holdings count for one-owner-at-a-time once its group is a consumer group (migration)
        cg = svc.consumer_group(c.group)
        self.checker.on_cg_assigned(self._clock.now, c.group, c.name, gen.member_id,
                                    [(tp.topic, tp.partition) for tp in added], self._owns(c.group), cg is not None)

    def _cg_assigned(self, c: SimConsumer, added: tuple) -> None:
        """A consumer-protocol member's ``onPartitionsAssigned``: its ownership and the one-owner-at-a-time check
        (a holder counts while it is a member of the coordinator's consumer group)."""
        core = c.core
        member_id = core.generation.member_id
        parts = [(tp.topic, tp.partition) for tp in core.assignment]
        self.tracer.trace("assigned", consumer=c.name, epoch=core.generation.generation_id,
                          added=[f"{tp.topic}-{tp.partition}" for tp in added],
                          owned=[f"{t}-{p}" for t, p in parts])
        new = [(tp.topic, tp.partition) for tp in added]
        for tp in parts:
            if tp not in c.owned:
                c.owned.add(tp)
                self.owners.setdefault(tp, set()).add(c.index)
        self.checker.on_cg_assigned(self._clock.now, c.group, c.name, member_id, new, self._owns(c.group))

    def _owns(self, gid: str) -> Callable[[str, str, tuple], bool]:
        """Whether a holder (consumer name, member id) still owns a partition for the coordinator: it is running
        and could commit the partition at the epoch (generation) it has now (``Checker.can_commit``)."""
        def owns(name: str, member_id: str, tp: tuple) -> bool:
            h = self.by_name.get(name)
            if h is None or not h.alive or h.core is None:
                return False
            return self.checker.can_commit(gid, member_id, h.core.generation.generation_id, tp)
        return owns

    def _released(self, c: SimConsumer, parts: tuple, how: str) -> None:
        tps = [(tp.topic, tp.partition) for tp in parts]
        self.tracer.trace(how, consumer=c.name, partitions=[f"{t}-{p}" for t, p in tps])
        for tp in tps:
            c.owned.discard(tp)
            s = self.owners.get(tp)
            if s is not None:
                s.discard(c.index)
        self.checker.on_cg_released(c.group, c.name, tps)
        if c.protocol != "consumer":
            self.checker.on_released(c.group, c.name, tps)

    def _drop_ownership(self, c: SimConsumer) -> None:
        tps = sorted(c.owned)
        for tp in tps:
            s = self.owners.get(tp)
            if s is not None:
                s.discard(c.index)
        c.owned.clear()
        self.checker.on_cg_released(c.group, c.name, tps)
        if c.protocol != "consumer":
            self.checker.on_released(c.group, c.name, tps)

    # --- lifecycle --------------------------------------------------------------------------------------------------
    def start(self, name: str) -> None:
        """Start the consumer's process (a new incarnation and a new core)."""
        c = self.by_name[name]
        if c.alive:
            return
        c.incarnation += 1
        c.alive = True
        c.closing = False
        c.paused_until = None
        c.busy_until = None
        c.batch = []
        c.tick_at = c.app_at = None
        c.inbox = []
        self.network.reset_all(c)
        consumer_protocol = c.protocol == "consumer"
        core = new_core(c.config, self._clock.now,
                        consumer_member_id(self.seed, name, c.incarnation) if consumer_protocol else None)
        core.set_api_versions(self.brokers.api_versions)
        if consumer_protocol:  # KIP-848 assignments name topics by id (Metadata v10+)
            core.set_metadata(self.brokers.metadata, self.brokers.topic_ids)
        else:
            core.set_metadata(self.brokers.metadata)
        core.subscribe(c.topics if c.topics is not None else c.spec.topics)
        c.core = core
        c.log_version = -1
        c.cooperative = core.protocol == RebalanceProtocol.COOPERATIVE
        if consumer_protocol:  # (its member id is its own, KIP-1082: no JoinGroup answer will name it)
            self.tracer.trace("start", consumer=name, incarnation=c.incarnation, member_id=core.generation.member_id)
        else:
            self.tracer.trace("start", consumer=name, incarnation=c.incarnation)
        self.app.turn(c)

    def stop(self, name: str) -> None:
        """``KafkaConsumer.close()``, after the application's current iteration."""
        c = self.by_name[name]
        if not c.alive or c.closing:
            return
        self.tracer.trace("stop", consumer=name)
        if c.paused_until is not None:
            c.paused_until = None
            self._resume_inbox(c)
        if c.busy_until is not None:
            self.app.finish_batch(c)  # close() is called after the application's current iteration
        c.closing = True
        self.guard(c, c.core.close, self._clock.now)

    def _gone(self, c: SimConsumer) -> None:
        """The consumer process has exited (after close, or a crash)."""
        c.alive = False
        c.closing = False
        c.tick_at = c.app_at = None
        c.busy_until = None
        c.batch = []
        c.paused_until = None
        c.inbox = []
        self._drop_ownership(c)
        self.network.reset_all(c)

    def crash(self, c: SimConsumer, reason: str = "crash") -> None:
        if not c.alive:
            return
        self.tracer.trace("crash", consumer=c.name, reason=reason)
        self._gone(c)

    def set_protocol(self, c: SimConsumer, protocol: str) -> None:
        """The next start runs ``group.protocol = protocol`` (a migration step: a restart into another protocol)."""
        if protocol != c.protocol:
            c.protocol = protocol
            c.config = ConsumerConfig.create(c.spec.configs[protocol])
            c.latest_reset = c.config.auto_offset_reset == "latest"

    def hold_revocation(self, c: SimConsumer, until: int, duration: int) -> None:
        """Arm ``hold_revocation``: the next reconciliation before ``until`` keeps the application out of poll for
        ``duration`` ms (its revocation callback and acknowledgement wait)."""
        c.hold = (until, duration)

    def _hold(self, c: SimConsumer) -> None:
        until, duration = c.hold
        c.hold = None
        now = self._clock.now
        if now > until:
            return
        self.tracer.trace("hold_revocation", consumer=c.name, until=now + duration)
        end = now + duration
        if c.busy_until is None or c.busy_until < end:
            c.busy_until = end
        c.app_at = None

    def pause(self, name: str, duration: int) -> None:
        """Freeze the process for ``duration`` ms (a GC pause)."""
        c = self.by_name[name]
        if not c.alive:
            return
        end = self._clock.now + duration
        if c.paused_until is not None and c.paused_until >= end:
            return
        self.tracer.trace("gc_pause", consumer=name, until=end)
        c.paused_until = end
        self._call(end, self._resume, c, c.incarnation, end)

    def _resume(self, c: SimConsumer, incarnation: int, end: int) -> None:
        if not c.alive or c.incarnation != incarnation or c.paused_until != end:
            return
        self.tracer.trace("resume", consumer=c.name)
        c.paused_until = None
        self._resume_inbox(c)
        if c.alive:
            self.guard(c, c.core.tick, self._clock.now)
            if c.alive:
                c.app_at = None
                self.reschedule(c)

    def _resume_inbox(self, c: SimConsumer) -> None:
        items, c.inbox = c.inbox, []
        for handler, conn, item in items:
            if not c.alive:
                return
            handler(conn, item)

    def subscribe(self, c: SimConsumer, topics: list[str]) -> None:
        """``KafkaConsumer.subscribe`` (a running consumer rejoins; a stopped one subscribes when it starts)."""
        c.topics = tuple(topics)
        if c.alive and not c.closing:
            self.guard(c, c.core.subscribe, topics, self._clock.now)

    def refresh_metadata(self, c: SimConsumer, meta: dict) -> None:
        """The consumer's metadata refresh sees new partition counts."""
        if c.alive and c.core is not None and not c.closing:
            if c.protocol == "consumer":
                self.guard(c, c.core.set_metadata, meta, self.brokers.topic_ids)
            else:
                self.guard(c, c.core.set_metadata, meta)
