"""The simulated world: one virtual clock driving the coordinator core and every consumer core over an in-memory
network -- the same sans-IO cores the TCP drivers use, no sockets, no asyncio, no sleeping.

Theory of operation
-------------------
* **Time** is an integer of virtual milliseconds. Everything that will happen is an event ``(kind, a, b)`` in
  the list of its millisecond; a timing wheel holds the next ~16 s of milliseconds and a heap the later ones.
  Simultaneous events run in the order they were scheduled (FIFO), so a run is reproducible. Cores are woken
  at their own deadlines (``ConsumerCoordinator.next_deadline_ms`` for the heartbeat thread,
  ``next_poll_deadline_ms`` for the application, ``GroupCoordinatorService.next_deadline`` for coordinator
  timers): nothing scans all consumers per tick. A wake-up whose deadline moved is dropped when popped (lazy deletion).
* **Randomness** comes from one :class:`~scenarios.rng.SimRandom` seeded with the run's seed (child streams for
  the network, the producers, the coordinator's UUIDs and the fuzzer).
* **Network.** Each consumer has up to two connections per broker, as the Java client does: a normal one
  (FindCoordinator) and the coordinator connection. Messages take ``latency_ms`` (+ seeded jitter) and stay in
  order per connection and direction (TCP). The broker side serves one request per connection at a time
  (Kafka mutes a channel until its response is sent), so a parked JoinGroup holds back later requests on the
  same connection. A closed connection drops everything still in flight on it (both directions); a request
  that reaches a stopped broker is refused (the client sees a disconnect one latency later). Optionally every
  request and response is encoded and decoded with the wire codec at the negotiated version.
* **Faults** change what the network does with a message (drop, delay, duplicate; one member's link to a
  broker), or freeze a consumer (GC pause: no heartbeat thread, no application; responses wait in its socket
  buffer), or slow its application, or crash consumers and brokers.
* **The application** around each consumer: it polls; if the poll returns fetchable partitions with records
  it takes up to ``max_poll_records``, advances the positions (as ``KafkaConsumer.poll`` does) and is busy for
  ``poll_ms + record_ms * records``; then it polls again. Records count as consumed when processing finishes.
  An idle application is always inside ``poll``: the simulator calls ``poll`` when it has work (a join step,
  an auto-commit, new records, a position to fetch) and at least once per ``poll_timeout_ms`` before the poll
  timer would expire; polls that would do nothing are elided (they cannot change any state but the poll timer).
  A poll that cannot make progress although the core asks for one at once leaves the application blocked in
  ``poll`` until a response or a disconnect arrives, or ``poll_timeout_ms`` passes (``KafkaConsumer.poll`` blocks).
"""

from __future__ import annotations

import gc
import heapq
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import protocol.messages  # noqa: F401  (registers every API)
from consumer import outputs as O
from consumer.assignors import TopicPartition
from consumer.config import ConsumerConfig
from consumer.coordinator import DISCONNECTED, ConsumerCoordinator, RebalanceProtocol
from consumer.errors import KafkaException
from coordinator import CoordinatorConfig, GroupCoordinatorService, RequestContext
from coordinator import records as R
from coordinator.cluster import NO_LEADER
from protocol.api import APIS, ApiKey
from protocol.frames import decode_request, decode_response, encode_request, encode_response
from protocol.versions import api_versions_response

from scenarios import model as M
from scenarios.datapath import Consumption, PartitionLogs
from scenarios.invariants import Checker, Recent
from scenarios.partitioners import Partitioners
from scenarios.rng import SimRandom

#: more events than this at one virtual millisecond means something spins without time passing
LIVELOCK_EVENTS = 200_000
#: the timing wheel's span in virtual milliseconds (a power of two); events further ahead wait in a heap
WHEEL_MS = 1 << 14
WHEEL_MASK = WHEEL_MS - 1


class SimulationError(RuntimeError):
    """The simulation itself went wrong (e.g. a livelock); the message carries the seed and recent events."""


# event kinds
K_REQ, K_SERVE, K_RESP, K_LOST, K_TICK, K_APP, K_SVC, K_CALL = range(8)
API_NAMES = {int(k): APIS[k].name for k in APIS}
API_BY_NAME = {v: k for k, v in API_NAMES.items()}


class _Conn:
    __slots__ = ("consumer", "node", "coord", "epoch", "up_last", "down_last", "queue", "busy", "pending")

    def __init__(self, consumer: "SimConsumer", node: int, coord: bool) -> None:
        self.consumer = consumer
        self.node = node
        self.coord = coord
        self.epoch = 0
        self.up_last = 0
        self.down_last = 0
        self.queue: list = []  # requests waiting behind the one being served (rarely more than one)
        self.busy: Optional[int] = None
        # the handles of the requests sent on it and not answered, in order: None, one handle (the common case:
        # no list object of its own to touch per request), or a list of them
        self.pending: Any = None

    def reset(self) -> None:
        self.epoch += 1
        self.queue.clear()
        self.busy = None


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
    conns: dict = field(default_factory=dict)  # 2 * broker (+1 for the coordinator connection) -> _Conn
    coord_conn: Optional[_Conn] = None  # the coordinator connection last used (saves a dict lookup per request)
    inbox: list = field(default_factory=list)
    owned: set = field(default_factory=set)
    incarnation: int = 0
    cooperative: bool = False
    latest_reset: bool = False
    topics: Optional[tuple] = None  # subscription changed by the timeline
    # the time of a poll that could make no progress; any delivery or disconnect clears it (wakes the poll)
    blocked: Optional[int] = None
    log_version: int = -1  # PartitionLogs.version last given to the core as log end offsets
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
        self.tick_ev = (K_TICK, self, None)
        self.app_ev = (K_APP, self, None)
        self.name = self.spec.name
        self.group = self.spec.group
        self.host = f"/10.0.{self.index // 250}.{self.index % 250 + 1}"
        self.poll_timeout_ms = self.spec.app.poll_timeout_ms


@dataclass
class _NetFault:
    kind: str  # "partition" | "message"
    end_ms: int
    consumer: Optional[str]
    brokers: Optional[frozenset]  # partition: affected brokers (None: all)
    api: Optional[int]
    to_broker: bool
    from_broker: bool
    mode: str
    delay_ms: int
    probability: float = 1.0
    remaining: Optional[int] = None


class Simulation:
    """One run of one scenario with one seed."""

    def __init__(self, scenario: M.Scenario, seed: int, *, trace: bool = True, codec: Optional[bool] = None,
                 recent_size: int = 40) -> None:
        self.scenario = scenario
        self.seed = seed
        self.rng = SimRandom(seed)
        self.net_rng = self.rng.child("network")
        self.fault_rng = self.rng.child("faults")
        self.meta_rng = self.rng.child("metadata")
        self.partitioners = Partitioners(self.rng.child("producer"))
        self.now = 0
        # The event queue: one FIFO list of (kind, a, b) per virtual millisecond, so simultaneous events run in
        # the order they were scheduled. Milliseconds less than WHEEL_MS ahead of the cursor live in a timing
        # wheel (a list indexed by time modulo its size: the next event is found by stepping through the slots,
        # at most one step per virtual millisecond); later ones in a dict with a heap of their times, moved into
        # the wheel as the cursor comes within reach. Most events are a millisecond or a heartbeat interval away,
        # so they never touch the heap (whose sifts chase pointers to scattered int objects: cache misses).
        self._wheel: list = [None] * WHEEL_MS
        self._cursor = 0  # every wheel event is in [cursor, cursor + WHEEL_MS)
        self._near = 0  # events in the wheel
        self._times: list[int] = []  # the far milliseconds (heap)
        self._at: dict[int, list] = {}  # far millisecond -> its events
        self.codec = scenario.network.codec if codec is None else codec
        self.latency = scenario.network.latency_ms
        self.jitter = scenario.network.jitter_ms
        self.trace_enabled = trace
        self.trace: list[dict] = []
        self.recent = Recent(recent_size)
        self._recent = self.recent.append  # entries (t, format_function, args), formatted only if rendered
        self.records: list = []  # coordinator LogEntry objects, in order of appearance
        self.stats = {"requests": 0, "responses": 0, "dropped": 0, "duplicated": 0, "delayed": 0,
                      "refused": 0, "events": 0}
        self._request_counts: dict[int, int] = {}  # api key -> requests sent
        self._responses = 0
        self.checker = Checker(scenario.invariants.check, seed, self.recent.render)
        self.faults: list[_NetFault] = []
        self.logs = PartitionLogs()
        self.consumption = Consumption()
        self.last_disturbance_ms = 0
        self.settle_checks: list[tuple[int, str]] = []
        self.settled_ok: dict[str, int] = {}
        self.consumer_errors: list[dict] = []

        cfg = CoordinatorConfig.create(M.broker_settings(scenario))
        self.broker_config = cfg
        self.svc = GroupCoordinatorService(num_brokers=scenario.cluster.brokers, config=cfg,
                                           seed=self.rng.derive_seed("coordinator"))
        self.num_brokers = scenario.cluster.brokers
        for t in scenario.cluster.topics:
            self.svc.cluster.create_topic(t.name, t.partitions, t.replication_factor)
            self.logs.ensure(t.name, t.partitions)
        self.api_versions = api_versions_response()
        self._svc_at: Optional[int] = None
        self._rid = 0
        self._rids: dict[int, tuple] = {}
        self._corr = 0
        self.consumers: list[SimConsumer] = []
        self.by_name: dict[str, SimConsumer] = {}
        for rm in M.resolve_members(scenario):
            c = SimConsumer(rm, ConsumerConfig.create(rm.config), len(self.consumers))
            c.latest_reset = c.config.auto_offset_reset == "latest"
            self.consumers.append(c)
            self.by_name[rm.name] = c
        self.owners: dict[tuple[str, int], set] = {}
        self._trace("scenario", name=scenario.scenario.name, seed=seed)
        for c in self.consumers:
            if c.spec.start is not None:
                self.call(c.spec.start, self.start_consumer, c.name)
        for a in scenario.timeline:
            self.call(a.at, self._action, a)

    # ==========================================================================================================
    # scheduling
    # ==========================================================================================================
    @property
    def api_counts(self) -> dict[str, int]:
        """Requests sent, by API name."""
        return {API_NAMES.get(k, str(k)): n for k, n in self._request_counts.items()}

    def _push(self, t: int, ev: tuple) -> None:
        """Schedule event ``ev`` = ``(kind, a, b)`` at virtual time ``t``."""
        cursor = self._cursor
        if t < cursor + WHEEL_MS:
            if t < cursor:
                t = cursor  # (never asked for: nothing schedules into the past)
            i = t & WHEEL_MASK
            q = self._wheel[i]
            if q is None:
                self._wheel[i] = [ev]
            else:
                q.append(ev)
            self._near += 1
            return
        q = self._at.get(t)
        if q is None:
            self._at[t] = [ev]
            heapq.heappush(self._times, t)
        else:
            q.append(ev)

    def call(self, t: int, fn: Callable, *args: Any) -> None:
        self._push(t, (K_CALL, fn, args))

    def run(self, until_ms: int) -> None:
        """Process every event due by ``until_ms`` (virtual time then stands at ``until_ms``)."""
        thresholds = gc.get_threshold()
        # A run allocates millions of short-lived tuples and messages while the coordinator's state and the event
        # log keep growing; at CPython's default thresholds the cyclic collector rescans that growing heap so
        # often that it took ~30% of a 1,000-member run. Collect less often while running (cycles are still
        # collected), and restore the caller's thresholds after.
        gc.set_threshold(max(thresholds[0], 100_000), max(thresholds[1], 20), max(thresholds[2], 20))
        try:
            self._run(until_ms)
        finally:
            gc.set_threshold(*thresholds)

    def _run(self, until_ms: int) -> None:
        times, at, wheel = self._times, self._at, self._wheel
        pop = heapq.heappop
        n = 0
        cursor = self._cursor
        while True:
            # far milliseconds now within the wheel's reach join it, ahead of anything scheduled there since
            # (they were scheduled first)
            while times and times[0] < cursor + WHEEL_MS:
                t = pop(times)
                far = at.pop(t)
                i = t & WHEEL_MASK
                wheel[i] = far if wheel[i] is None else far + wheel[i]
                self._near += len(far)
            if not self._near:
                if not times or times[0] > until_ms:
                    break
                cursor = self._cursor = times[0] - WHEEL_MS + 1  # skip the empty stretch
                continue
            while wheel[cursor & WHEEL_MASK] is None and cursor <= until_ms:
                cursor += 1
            if cursor > until_ms:
                cursor = until_ms
                break
            t = self._cursor = cursor
            self.now = t
            i = t & WHEEL_MASK
            q = wheel[i]
            k = 0
            while k < len(q):  # events scheduled for t while t is being processed join the end of q
                kind, a, b = q[k]
                k += 1
                if kind == K_TICK:
                    if a.tick_at == t and a.alive:
                        a.tick_at = None
                        if a.paused_until is None:
                            self._guard(a, a.core.tick, t)
                elif kind == K_REQ:
                    self._arrive(a, b)
                elif kind == K_RESP:
                    self._deliver(a, b)
                elif kind == K_APP:
                    if a.app_at == t and a.alive:
                        a.app_at = None
                        if a.paused_until is None:
                            self._app(a)
                elif kind == K_SVC:
                    if self._svc_at == t:
                        self._svc_at = None
                        self._svc_out(self.svc.poll(t))
                elif kind == K_SERVE:
                    self._serve(a)
                elif kind == K_LOST:
                    self._lost(a, b)
                else:
                    a(*b)
                if k > LIVELOCK_EVENTS:
                    raise SimulationError(f"livelock: more than {LIVELOCK_EVENTS} events at t={t} ms (seed "
                                          f"{self.seed}); last events:\n" + "\n".join(self.recent.render()))
            n += k
            self._near -= k
            wheel[i] = None
        self._cursor = max(cursor, self._cursor)
        self.stats["events"] += n
        self.stats["requests"] = sum(self._request_counts.values())
        self.stats["responses"] = self._responses
        if self.now < until_ms:
            self.now = until_ms

    # ==========================================================================================================
    # trace
    # ==========================================================================================================
    def _trace(self, type_: str, **data: Any) -> None:
        if self.trace_enabled:
            d = {"t": self.now, "type": type_}
            d.update(data)
            self.trace.append(d)
        self._recent((self.now, _fmt_trace, (type_, data)))

    # ==========================================================================================================
    # coordinator side
    # ==========================================================================================================
    def _svc_schedule(self) -> None:
        """Schedule a wake-up at the coordinator's next timer (``GroupCoordinatorService.next_deadline``)."""
        d = self.svc.next_deadline()
        if d is not None:
            if d < self.now:
                d = self.now
            if self._svc_at is None or d < self._svc_at:
                self._svc_at = d
                self._push(d, (K_SVC, None, None))

    def _svc_out(self, out: Any) -> None:
        for e in out.records:
            self.records.append(e)
            self._recent((self.now, _fmt_record, (e,)))
            self.checker.on_record(e)
            if isinstance(e.record, R.CoordinatorLoaded):
                svc = self.svc
                self.checker.on_loaded(self.now, e.partition, svc.partition_for, svc.committed_offsets)
        for ch in out.leadership:
            if ch.topic == "__consumer_offsets":
                self._trace("leader", partition=ch.partition, old=ch.old_leader, new=ch.new_leader)
        for rid, resp in out.responses:
            info = self._rids.pop(rid, None)
            if info is None:
                continue
            conn, epoch, msg = info
            if conn.epoch != epoch:
                continue  # the connection closed meanwhile: the answer goes nowhere
            if conn.busy == rid:
                conn.busy = None
                if conn.queue:
                    self._push(self.now, (K_SERVE, conn, None))
            self._send_down(conn, msg, resp)
        for rid in out.abandoned:
            info = self._rids.pop(rid, None)
            if info is None:
                continue
            conn, epoch, msg = info
            if conn.epoch == epoch:
                # Kafka never answers it; the server closes the connection (the client sees a disconnect)
                self._close(conn, notify=True)
        self._svc_schedule()

    def _arrive(self, conn: _Conn, msg: tuple) -> None:
        if msg[0] != conn.epoch:
            return
        if not self.svc.cluster.is_alive(conn.node):
            self.stats["refused"] += 1
            self._close(conn, notify=True)
            return
        if conn.busy is None and not conn.queue:
            self._handle(conn, msg)  # the common case: nothing queued ahead of it
        else:
            conn.queue.append(msg)

    def _serve(self, conn: _Conn) -> None:
        """The connection's previous request was answered: serve the next queued one (Kafka unmutes it)."""
        if conn.busy is not None or not conn.queue:
            return
        if not self.svc.cluster.is_alive(conn.node):
            return
        self._handle(conn, conn.queue.pop(0))

    def _handle(self, conn: _Conn, msg: tuple) -> None:
        _epoch, handle, api_key, version, body, client_id, corr = msg
        self._rid += 1
        rid = self._rid
        conn.busy = rid
        self._rids[rid] = (conn, conn.epoch, msg)
        if self.codec:
            _header, body = decode_request(body[4:])
        self._svc_out(self.svc.handle(conn.node, body, RequestContext(rid, version, client_id, conn.consumer.host),
                                      self.now))

    # ==========================================================================================================
    # network
    # ==========================================================================================================
    def _delay(self) -> int:
        if self.jitter:
            return self.latency + self.net_rng.randint(0, self.jitter)
        return self.latency

    def _faults_for(self, c: SimConsumer, node: int, api_key: int, to_broker: bool) -> tuple[bool, int, bool]:
        drop = False
        delay = 0
        dup = False
        now = self.now
        for f in self.faults:
            if f.end_ms <= now:
                continue
            if f.consumer is not None and f.consumer != c.name:
                continue
            if f.brokers is not None and node not in f.brokers:
                continue
            if f.api is not None and f.api != api_key:
                continue
            if to_broker and not f.to_broker or not to_broker and not f.from_broker:
                continue
            if f.remaining is not None and f.remaining <= 0:
                continue
            if f.probability < 1.0 and self.fault_rng.random() >= f.probability:
                continue
            if f.remaining is not None:
                f.remaining -= 1
            if f.mode == "drop":
                drop = True
            elif f.mode == "delay":
                delay += f.delay_ms
            else:
                dup = True
        return drop, delay, dup

    def _send_up(self, c: SimConsumer, o: O.SendRequest) -> None:
        node = o.node_id
        to_coordinator = o.to_coordinator
        if node is None:
            node = self.net_rng.randrange(self.num_brokers)  # leastLoadedNode: any bootstrap broker
        conn = c.coord_conn
        if not to_coordinator or conn is None or conn.node != node:
            key = 2 * node + 1 if to_coordinator else 2 * node
            conn = c.conns.get(key)
            if conn is None:
                conn = c.conns[key] = _Conn(c, node, to_coordinator)
            if to_coordinator:
                c.coord_conn = conn
        api_key, version, handle, body = o.api_key, o.api_version, o.handle, o.body
        p = conn.pending
        if p is None:
            conn.pending = handle
        elif type(p) is int:
            conn.pending = [p, handle]
        else:
            p.append(handle)
        counts = self._request_counts
        counts[api_key] = counts.get(api_key, 0) + 1
        now = self.now
        self._recent((now, _fmt_request, (c.name, api_key, node, handle, body)))
        if self.codec:
            self._corr += 1
            body = encode_request(api_key, version, self._corr, c.name, body)
        msg = (conn.epoch, handle, api_key, version, body, c.name, self._corr)
        dup = False
        delay = 0
        if self.faults:
            drop, delay, dup = self._faults_for(c, node, api_key, True)
            if drop:
                self.stats["dropped"] += 1
                self._recent((now, "dropped request #{} of {}".format, (handle, c.name)))
                return
            if delay:
                self.stats["delayed"] += 1
        t = now + self._delay() + delay
        if t < conn.up_last:
            t = conn.up_last  # TCP: in order per connection and direction
        elif delay or self.jitter:
            # (at a fixed latency an undelayed message arrives after every earlier one by itself, so only times
            # that can break the order are kept: a new int per message, replaced an interval later, costs cache
            # misses when thousands of members cycle through)
            conn.up_last = t
        ev = (K_REQ, conn, msg)
        self._push(t, ev)
        if dup:
            self.stats["duplicated"] += 1
            self._push(t, ev)

    def _send_down(self, conn: _Conn, msg: tuple, resp: Any) -> None:
        _epoch, handle, api_key, version, _body, _client, corr = msg
        self._responses += 1
        if self.codec:
            resp = encode_response(api_key, version, corr, resp)
        dup = False
        delay = 0
        if self.faults:
            drop, delay, dup = self._faults_for(conn.consumer, conn.node, api_key, False)
            if drop:
                self.stats["dropped"] += 1
                self._recent((self.now, "dropped response #{} to {}".format, (handle, conn.consumer.name)))
                return
            if delay:
                self.stats["delayed"] += 1
        t = self.now + self._delay() + delay
        if t < conn.down_last:
            t = conn.down_last
        elif delay or self.jitter:
            conn.down_last = t
        item = (conn.epoch, handle, api_key, version, resp)
        ev = (K_RESP, conn, item)
        self._push(t, ev)
        if dup:
            self.stats["duplicated"] += 1
            self._push(t, ev)

    def _deliver(self, conn: _Conn, item: tuple) -> None:
        epoch, handle, api_key, version, resp = item
        if epoch != conn.epoch:
            return
        c = conn.consumer
        if not c.alive:
            return
        if c.paused_until is not None:
            c.inbox.append((K_RESP, conn, item))
            return
        p = conn.pending
        if p is not None:
            if type(p) is int:
                if p == handle:
                    conn.pending = None
            elif handle in p:
                p.remove(handle)
                if not p:
                    conn.pending = None
        # (else a duplicate; and if the core gave up on it, Kafka's client ignores it: unknown correlation id)
        if self.codec:
            _corr, resp = decode_response(api_key, version, resp[4:])
        self._recent((self.now, _fmt_response, (c.name, handle, resp)))
        c.blocked = None  # a response wakes an application blocked in poll()
        self._guard(c, c.core.on_response, handle, resp, self.now)

    def _close(self, conn: _Conn, notify: bool) -> None:
        """Close a connection: everything in flight on it is lost; with ``notify`` the client learns it one
        latency later (the server closed it, or refused it)."""
        c = conn.consumer
        handles = self._reset_conn(conn)
        if notify and c.alive:
            self._push(self.now + self.latency, (K_LOST, conn, (c.incarnation, handles)))

    def _reset_conn(self, conn: _Conn) -> list[int]:
        """Start a new epoch of a connection; returns the handles of the requests that were in flight on it, in
        the order they were sent (their answers can no longer arrive)."""
        conn.reset()
        p = conn.pending
        if p is None:
            return []
        conn.pending = None
        return [p] if type(p) is int else p

    def _lost(self, conn: _Conn, data: tuple) -> None:
        c = conn.consumer
        incarnation, handles = data
        if not c.alive or c.incarnation != incarnation:
            return
        if c.paused_until is not None:
            c.inbox.append((K_LOST, conn, data))
            return
        core = c.core

        def fail() -> None:
            for h in handles:
                core.on_response(h, DISCONNECTED, self.now)
            if conn.coord:
                core.on_disconnect(conn.node, self.now)
        self._recent((self.now, "{}: connection to broker {} lost".format, (c.name, conn.node)))
        c.blocked = None
        self._guard(c, fail)

    # ==========================================================================================================
    # consumers: driving the core
    # ==========================================================================================================
    def _guard(self, c: SimConsumer, fn: Callable, *args: Any) -> Any:
        """Call into a consumer core, then act on its outputs and reschedule it. A fatal client error (what
        ``KafkaConsumer.poll`` throws) ends the application: the consumer crashes."""
        try:
            result = fn(*args)
        except KafkaException as exc:
            self._outputs(c)
            self._fatal(c, exc)
            return None
        self._outputs(c)
        if c.alive:
            self._reschedule(c)
        return result

    def _fatal(self, c: SimConsumer, exc: BaseException) -> None:
        err = {"t": self.now, "consumer": c.name, "error": f"{type(exc).__name__}: {exc}"}
        self.consumer_errors.append(err)
        self._trace("consumer_error", consumer=c.name, error=err["error"])
        self._crash(c, reason="fatal error")

    def _reschedule(self, c: SimConsumer) -> None:
        """Schedule the core's next tick and the application's next turn, if earlier than the wake-ups already
        scheduled."""
        core = c.core
        now = self.now
        d = core.next_deadline_ms()
        if d is not None:
            if d < now:
                d = now
            if c.tick_at is None or d < c.tick_at:
                c.tick_at = d
                self._push(d, c.tick_ev)
        if c.closing:
            return
        if c.busy_until is not None:
            d = c.busy_until
        else:
            d = core.next_poll_deadline_ms()
            guard = core.poll_timeout_deadline_ms() - c.poll_timeout_ms
            if d is None or guard < d:
                d = guard
            if d > now and self.logs.count and self._has_records(c):
                d = now
            if d <= now and c.blocked == now:
                # the last poll, at this very moment, could not make progress and nothing happened since: the
                # application is blocked inside poll() until a response arrives or its poll timeout passes
                d = now + c.spec.app.poll_timeout_ms
        if d < now:
            d = now
        if c.app_at is None or d < c.app_at:
            c.app_at = d
            self._push(d, c.app_ev)

    def _has_records(self, c: SimConsumer) -> bool:
        core = c.core
        pos = core.positions
        pend = core.pending_revocation
        logs = self.logs.logs
        for tp in core.assignment:
            p = pos.get(tp)
            if p is not None and tp not in pend and p < len(logs.get((tp.topic, tp.partition), ())):
                return True
        return False

    def _app(self, c: SimConsumer) -> None:
        """The application thread's turn: finish the current batch, or poll (and maybe start a batch)."""
        now = self.now
        if c.busy_until is not None:
            if now < c.busy_until:
                self._reschedule(c)
                return
            self._finish_batch(c)
        if c.closing:
            return
        core = c.core
        if c.latest_reset and c.log_version != self.logs.version:
            # auto.offset.reset=latest resets to the log end at the time of the reset (ListOffsets LATEST)
            c.log_version = self.logs.version
            core.set_log_offsets(end={TopicPartition(t, p): len(v) for (t, p), v in self.logs.logs.items()})
        c.blocked = None
        res = self._guard(c, core.poll, now)
        if res is None or not c.alive:
            return
        taken = 0
        batch = []
        limit = c.spec.app.max_poll_records
        logs = self.logs.logs
        for tp in res.fetchable:
            if taken >= limit:
                break
            pos = core.positions.get(tp)
            end = len(logs.get((tp.topic, tp.partition), ()))
            n = min(end - pos, limit - taken)
            if n > 0:
                core.advance(tp, n)
                batch.append(((tp.topic, tp.partition), pos, pos + n))
                taken += n
        busy = 0
        if taken:
            busy = c.spec.app.poll_ms + int(c.spec.app.record_ms * taken)
        if c.slow_until > now:
            busy = max(busy, c.slow_poll_ms)
        if taken or busy:
            c.batch = batch
            c.busy_until = now + busy
            if busy == 0:
                self._finish_batch(c)
        elif c.busy_until is None:
            # KafkaConsumer.poll returns empty-handed; if the core still says "poll now" (e.g. positions to
            # fetch that the join in progress does not let it fetch), the application waits in poll
            c.blocked = now
            c.app_at = None
        self._reschedule(c)

    def _finish_batch(self, c: SimConsumer) -> None:
        c.busy_until = None
        logs = self.logs.logs
        for tp, start, end in c.batch:
            self.consumption.processed(c.group, c.name, tp, start, end, logs[tp][start:min(end, start + 20)])
        c.batch = []

    def _outputs(self, c: SimConsumer) -> None:
        core = c.core
        for o in core.drain():
            t = type(o)
            if t is O.SendRequest:
                self._send_up(c, o)
            elif t is O.CloseConnection:
                self._client_close(c, o.node_id)
            elif t is O.PartitionsAssigned:
                self._assigned(c, o.partitions)
            elif t is O.PartitionsRevoked or t is O.PartitionsLost:
                self._released(c, o.partitions, "revoked" if t is O.PartitionsRevoked else "lost")
            elif t is O.PositionsInitialized:
                for tp, off in o.reset.items():
                    self.consumption.started(c.group, (tp.topic, tp.partition), off)
            elif t is O.StateChanged:
                self._trace("state", consumer=c.name, old=o.old, new=o.new, reason=o.reason)
            elif t is O.GroupJoined:
                self._trace("joined", consumer=c.name, generation=o.generation_id, member_id=o.member_id,
                            leader=o.is_leader, protocol=o.protocol_name)
            elif t is O.LeftGroup:
                self._trace("left", consumer=c.name, member_id=o.member_id, reason=o.reason)
            elif t is O.CoordinatorDiscovered:
                self._trace("coordinator", consumer=c.name, node=o.node.node_id)
            elif t is O.Closed:
                self._trace("closed", consumer=c.name)
                self._gone(c)
                return
            elif t is O.OffsetCommitCompleted:
                if o.exception is not None:
                    self._trace("commit_failed", consumer=c.name, error=type(o.exception).__name__)

    def _client_close(self, c: SimConsumer, node: int) -> None:
        conn = c.conns.get(2 * node + 1)
        if conn is not None:
            self._close(conn, notify=False)
        conn = c.conns.get(2 * node)
        if conn is not None:
            inflight = c.core.in_flight
            p = conn.pending
            if p is None or not any(h in inflight for h in ([p] if type(p) is int else p)):
                self._close(conn, notify=False)

    def _assigned(self, c: SimConsumer, added: tuple) -> None:
        core = c.core
        gen = core.generation
        parts = [(tp.topic, tp.partition) for tp in core.assignment]
        self._trace("assigned", consumer=c.name, generation=gen.generation_id,
                    added=[f"{t}-{p}" for t, p in ((tp.topic, tp.partition) for tp in added)],
                    owned=[f"{t}-{p}" for t, p in parts])
        for tp in parts:
            if tp not in c.owned:
                c.owned.add(tp)
                self.owners.setdefault(tp, set()).add(c.index)
        group = self.svc.group(c.group)

        def is_member(member_id: str, group=group) -> Optional[bool]:
            return None if group is None else member_id in group.members
        self.checker.on_assigned(self.now, c.group, c.name, gen.member_id, gen.generation_id, parts,
                                 c.cooperative, is_member)

    def _released(self, c: SimConsumer, parts: tuple, how: str) -> None:
        tps = [(tp.topic, tp.partition) for tp in parts]
        self._trace(how, consumer=c.name, partitions=[f"{t}-{p}" for t, p in tps])
        for tp in tps:
            c.owned.discard(tp)
            s = self.owners.get(tp)
            if s is not None:
                s.discard(c.index)
        self.checker.on_released(c.group, c.name, tps)

    def _drop_ownership(self, c: SimConsumer) -> None:
        tps = sorted(c.owned)
        for tp in tps:
            s = self.owners.get(tp)
            if s is not None:
                s.discard(c.index)
        c.owned.clear()
        self.checker.on_released(c.group, c.name, tps)

    # ==========================================================================================================
    # consumer lifecycle
    # ==========================================================================================================
    def start_consumer(self, name: str) -> None:
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
        for conn in c.conns.values():
            self._reset_conn(conn)
        core = ConsumerCoordinator(c.config, now_ms=self.now)
        core.set_api_versions(self.api_versions)
        core.set_metadata(self._metadata())
        core.subscribe(c.topics if c.topics is not None else c.spec.topics)
        c.core = core
        c.log_version = -1
        c.cooperative = core.protocol == RebalanceProtocol.COOPERATIVE
        self._trace("start", consumer=name, incarnation=c.incarnation)
        self._app(c)

    def _metadata(self) -> dict[str, int]:
        return {t: len(ps) for t, ps in sorted(self.svc.cluster.topics.items()) if not t.startswith("__")}

    def stop_consumer(self, name: str) -> None:
        c = self.by_name[name]
        if not c.alive or c.closing:
            return
        self._trace("stop", consumer=name)
        if c.paused_until is not None:
            c.paused_until = None
            self._resume_inbox(c)
        if c.busy_until is not None:
            self._finish_batch(c)  # close() is called after the application's current iteration
        c.closing = True
        self._guard(c, c.core.close, self.now)

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
        for conn in c.conns.values():
            self._reset_conn(conn)

    def _crash(self, c: SimConsumer, reason: str = "crash") -> None:
        if not c.alive:
            return
        self._trace("crash", consumer=c.name, reason=reason)
        self._gone(c)

    def crash_consumer(self, name: str) -> None:
        self._crash(self.by_name[name])

    def pause_consumer(self, name: str, duration: int) -> None:
        c = self.by_name[name]
        if not c.alive:
            return
        end = self.now + duration
        if c.paused_until is not None and c.paused_until >= end:
            return
        self._trace("gc_pause", consumer=name, until=end)
        c.paused_until = end
        self.call(end, self._resume, c, c.incarnation, end)

    def _resume(self, c: SimConsumer, incarnation: int, end: int) -> None:
        if not c.alive or c.incarnation != incarnation or c.paused_until != end:
            return
        self._trace("resume", consumer=c.name)
        c.paused_until = None
        self._resume_inbox(c)
        if c.alive:
            self._guard(c, c.core.tick, self.now)
            if c.alive:
                c.app_at = None
                self._reschedule(c)

    def _resume_inbox(self, c: SimConsumer) -> None:
        items, c.inbox = c.inbox, []
        for kind, conn, item in items:
            if not c.alive:
                return
            if kind == K_RESP:
                self._deliver(conn, item)
            else:
                self._lost(conn, item)

    def restart_consumer(self, name: str, down_ms: int, graceful: bool) -> None:
        c = self.by_name[name]
        self._trace("restart", consumer=name, down_ms=down_ms, graceful=graceful)
        if graceful:
            self.stop_consumer(name)
        else:
            self._crash(c)
        self.call(self.now + down_ms, self._restart_up, name)

    def _restart_up(self, name: str) -> None:
        c = self.by_name[name]
        if c.alive:  # still closing: the process is killed
            self._crash(c, reason="killed while closing")
        self.start_consumer(name)

    # ==========================================================================================================
    # timeline actions
    # ==========================================================================================================
    def _action(self, a: Any) -> None:
        now = self.now
        kind = a.action
        self._trace("action", action=kind, **{k: v for k, v in a.model_dump().items() if k not in ("action", "at")
                                              and v is not None})
        if kind == "start":
            self.start_consumer(a.consumer)
        elif kind == "stop":
            self.stop_consumer(a.consumer)
        elif kind == "crash":
            self.crash_consumer(a.consumer)
        elif kind == "restart":
            self.restart_consumer(a.consumer, a.down_ms, a.graceful)
        elif kind == "gc_pause":
            self.pause_consumer(a.consumer, a.duration_ms)
        elif kind == "slow":
            c = self.by_name[a.consumer]
            c.slow_until = now + a.duration_ms
            c.slow_poll_ms = a.poll_ms
            if c.alive and c.core is not None and c.busy_until is None and not c.closing:
                c.app_at = None
                self._reschedule(c)
        elif kind == "network_partition":
            if a.broker == "all":
                brokers = None
            elif a.broker == "coordinator":
                brokers = frozenset([self.svc.coordinator_of(self.by_name[a.consumer].group)])
            else:
                brokers = frozenset([a.broker])
            self.faults.append(_NetFault("partition", now + a.duration_ms, a.consumer, brokers, None,
                                         a.direction in ("both", "to_broker"), a.direction in ("both", "from_broker"),
                                         a.mode, a.delay_ms))
        elif kind == "message_fault":
            api = None if a.api == "any" else API_BY_NAME[a.api]
            self.faults.append(_NetFault("message", now + a.duration_ms, a.consumer, None, api,
                                         a.direction in ("both", "request"), a.direction in ("both", "response"),
                                         a.mode, a.delay_ms, a.probability, a.count))
        elif kind == "broker_crash":
            b = a.broker
            if b == "coordinator":
                b = self.svc.coordinator_of(a.group or self.scenario.groups[0].id)
            if b < 0:
                return
            self.stop_broker(b)
            if a.duration_ms is not None:
                self.call(now + a.duration_ms, self.start_broker, b, a.elect_preferred)
        elif kind == "broker_restart":
            self.start_broker(a.broker, a.elect_preferred)
        elif kind == "elect_leaders":
            self._svc_out(self.svc.elect_preferred_leaders(now))
        elif kind == "add_partitions":
            self.svc.cluster.add_partitions(a.topic, a.partitions)
            self.logs.ensure(a.topic, a.partitions)
            meta = self._metadata()
            age = self.scenario.cluster.metadata_max_age_ms
            for c in self.consumers:
                self.call(now + (self.meta_rng.randint(0, age) if age else 0), self._refresh_metadata, c, meta)
        elif kind == "subscribe":
            targets = [self.by_name[a.consumer]] if a.consumer else [c for c in self.consumers if c.group == a.group]
            for c in targets:
                c.topics = tuple(a.topics)
                if c.alive and not c.closing:
                    self._guard(c, c.core.subscribe, a.topics, now)
        elif kind == "rolling_restart":
            members = [c for c in self.consumers if c.group == a.group]
            if a.count is not None:
                members = members[: a.count]
            for i, c in enumerate(members):
                self.call(now + (i // a.batch) * a.interval_ms, self.restart_consumer, c.name, a.down_ms, a.graceful)
        elif kind == "produce":
            self._produce(a, 0)

    def _refresh_metadata(self, c: SimConsumer, meta: dict) -> None:
        if c.alive and c.core is not None and not c.closing:
            self._guard(c, c.core.set_metadata, meta)

    def stop_broker(self, b: int) -> None:
        if not self.svc.cluster.is_alive(b):
            return
        self._trace("broker_stop", broker=b)
        out = self.svc.stop_broker(b, self.now)
        for c in self.consumers:
            for _key, conn in sorted(c.conns.items()):  # (broker, normal before coordinator connection)
                if conn.node == b:
                    self._close(conn, notify=True)
        self._svc_out(out)

    def start_broker(self, b: int, elect: bool = False) -> None:
        if self.svc.cluster.is_alive(b):
            return
        self._trace("broker_start", broker=b)
        self._svc_out(self.svc.start_broker(b, self.now))
        if elect:
            self._svc_out(self.svc.elect_preferred_leaders(self.now))

    # --- producing ------------------------------------------------------------------------------------------------
    def _produce(self, a: M.Produce, done: int) -> None:
        now = self.now
        if a.rate_per_s is None:
            due = a.count
        else:
            elapsed = now - a.at
            due = min(a.count, int(elapsed * a.rate_per_s / 1000) + 1)
        cluster = self.svc.cluster
        nparts = len(cluster.partitions(a.topic))
        available = [ps.partition for ps in cluster.partitions(a.topic) if ps.leader != NO_LEADER]
        touched = set()
        for i in range(done, due):
            if a.keys is not None:
                key: Optional[str] = a.keys[i % len(a.keys)]
            elif a.key_format is not None:
                key = a.key_format.format(i=i)
            else:
                key = None
            if a.partition is not None:
                p = a.partition
            else:
                p = self.partitioners.partition(a.partitioner, a.topic, key, nparts, available, a.batch_records)
            self.logs.append(a.topic, p, key, now)
            touched.add((a.topic, p))
        if due < a.count:
            nxt = a.at + int(due * 1000 / a.rate_per_s)
            if nxt <= now:
                nxt = now + 1
            self.call(nxt, self._produce, a, due)
        # wake idle owners
        for tp in sorted(touched):
            for idx in sorted(self.owners.get(tp, ())):
                c = self.consumers[idx]
                if c.alive and c.core is not None and c.busy_until is None and not c.closing:
                    t = now + self.latency
                    if c.app_at is None or t < c.app_at:
                        c.app_at = t
                        self._push(t, c.app_ev)


def _fmt_trace(type_: str, data: dict) -> str:
    return f"{type_} {json.dumps(data, sort_keys=True, default=str)}"


def _fmt_record(e: Any) -> str:
    return f"record {e.record.TYPE} {json.dumps(e.to_dict()['data'], sort_keys=True)[:300]}"


def _fmt_request(consumer: str, api_key: int, node: int, handle: int, body: Any) -> str:
    return f"{consumer} -> broker {node}: {API_NAMES.get(api_key, api_key)} #{handle} {_brief(body)}"


def _fmt_response(consumer: str, handle: int, resp: Any) -> str:
    return f"{consumer} <- #{handle} {_brief(resp)}"


def _brief(obj: Any) -> str:
    """A short rendering of a request or response for the recent-events context."""
    if isinstance(obj, BaseException):
        return repr(obj)
    name = type(obj).__name__
    parts = []
    for attr in ("error_code", "generation_id", "member_id", "leader", "protocol_name"):
        v = getattr(obj, attr, None)
        if v not in (None, "", 0) or attr == "error_code" and v:
            parts.append(f"{attr}={v}")
    return f"{name}({', '.join(parts)})"


# ==============================================================================================================
# settling and the end of a run
# ==============================================================================================================

def disturbance_end(sc: M.Scenario) -> int:
    """When the last disturbance (membership change, fault, topology change) is over."""
    last = 0
    for m in M.resolve_members(sc):
        if m.start is not None:
            last = max(last, m.start)
    age = sc.cluster.metadata_max_age_ms
    for a in sc.timeline:
        end = a.at
        k = a.action
        if k == "restart":
            end = a.at + a.down_ms
        elif k == "gc_pause":
            end = a.at + a.duration_ms
        elif k == "slow":
            end = a.at + a.duration_ms + a.poll_ms  # a slow poll started just before the end lasts poll_ms
        elif k in ("network_partition", "message_fault"):
            end = a.at + a.duration_ms + a.delay_ms
        elif k == "broker_crash":
            end = a.at + (a.duration_ms or 0)
        elif k == "add_partitions":
            end = a.at + age
        elif k == "rolling_restart":
            n = a.count if a.count is not None else sum(1 for m in M.resolve_members(sc) if m.group == a.group)
            end = a.at + ((max(n, 1) - 1) // a.batch) * a.interval_ms + a.down_ms
        elif k == "produce":
            continue
        last = max(last, end)
    return last


def settle_bound(sc: M.Scenario, group: str, broker: CoordinatorConfig) -> int:
    """How long a group may take to settle after the last disturbance: session timeout + rebalance timeout (the
    issue's bound) + the initial rebalance delay + coordinator loading + the scenario's slack; and, when the
    timeline has network faults that lose messages, the time a lost request takes to time out first
    (max(request.timeout.ms, rebalance timeout + 5 s) + retry.backoff.max.ms)."""
    lossy = any(a.action in ("network_partition", "message_fault") and a.mode == "drop" for a in sc.timeline)
    worst = 0
    for m in M.resolve_members(sc):
        if m.group != group:
            continue
        cfg = ConsumerConfig.create(m.config)
        bound = cfg.session_timeout_ms + cfg.rebalance_timeout_ms
        if lossy:
            bound += max(cfg.request_timeout_ms, cfg.rebalance_timeout_ms + 5000) + cfg.retry_backoff_max_ms
        worst = max(worst, bound)
    return (worst + broker.group_initial_rebalance_delay_ms + broker.coordinator_load_time_ms
            + sc.invariants.settle_slack_ms)


def _check_settled(sim: Simulation, gid: str) -> None:
    from coordinator.group import GroupState
    from consumer.coordinator import MemberState

    if "settles" not in sim.checker.enabled:
        return
    sim.checker.checked["settles"] += 1
    live = [c for c in sim.consumers if c.group == gid and c.alive and not c.closing and c.paused_until is None]
    if not live:
        sim.settled_ok[gid] = sim.now
        return
    problems = []
    g = sim.svc.group(gid)
    if g is None:
        problems.append("the coordinator does not know the group (unavailable or loading)")
    elif g.state != GroupState.STABLE:
        problems.append(f"group state is {g.state.value}")
    owners: dict[tuple[str, int], list[str]] = {}
    topics: set[str] = set()
    for c in live:
        core = c.core
        topics |= set(core.subscription)
        if core.state != MemberState.STABLE:
            problems.append(f"{c.name} is {core.state.value}")
        elif g is not None and (core.generation.generation_id != g.generation_id
                                or core.generation.member_id not in g.members):
            problems.append(f"{c.name} is in generation {core.generation.generation_id} as "
                            f"{core.generation.member_id}, the group in {g.generation_id}")
        for tp in core.assignment:
            owners.setdefault((tp.topic, tp.partition), []).append(c.name)
    for t in sorted(topics):
        for ps in sim.svc.cluster.partitions(t):
            who = owners.get((t, ps.partition), [])
            if len(who) != 1:
                problems.append(f"{t}-{ps.partition} owned by {who or 'nobody'}")
    if problems:
        sim.checker.violate("settles", sim.now, f"group {gid} has not settled: " + "; ".join(problems[:8])
                            + (f" (+{len(problems) - 8} more)" if len(problems) > 8 else ""))
    else:
        sim.settled_ok[gid] = sim.now


def _all_consumed(sim: Simulation) -> bool:
    for gid in sorted({c.group for c in sim.consumers}):
        live = [c for c in sim.consumers if c.group == gid and c.alive]
        if not live:
            continue
        topics = set()
        for c in live:
            topics |= set(c.core.subscription)
        if sim.consumption.stats(gid, sim.logs, topics)["missing"]:
            return False
    return True


def _check_at_least_once(sim: Simulation) -> dict[str, dict]:
    result = {}
    for gid in [g.id for g in sim.scenario.groups]:
        live = [c for c in sim.consumers if c.group == gid and c.alive]
        topics = set()
        for c in (live or [c for c in sim.consumers if c.group == gid]):
            topics |= set(c.topics if c.topics is not None else c.spec.topics)
        st = sim.consumption.stats(gid, sim.logs, topics)
        result[gid] = st
        if live and "at-least-once" in sim.checker.enabled:
            sim.checker.checked["at-least-once"] += 1
            if st["missing"]:
                miss = st["missing"]
                sim.checker.violate("at-least-once", sim.now, f"group {gid}: {len(miss)} produced records were "
                                    f"never processed, e.g. {[f'{t}-{p}@{o}' for (t, p), o in miss[:5]]}")
    return result


def run_simulation(sim: Simulation, drain_limit_ms: int = 120_000) -> dict:
    """Run to the end: the scenario's duration, every group's settle deadline, then (if records are still
    unprocessed) until they are or ``drain_limit_ms`` passed. Returns the end-of-run facts."""
    sc = sim.scenario
    last = disturbance_end(sc)
    end = sc.scenario.duration_ms
    checks = []
    for g in sc.groups:
        t = last + settle_bound(sc, g.id, sim.broker_config)
        checks.append((t, g.id))
        end = max(end, t)
    for t, gid in checks:
        sim.call(t, _check_settled, sim, gid)
    sim.run(end)
    extra = 0
    while extra < drain_limit_ms and not _all_consumed(sim):
        extra += 1000
        sim.run(end + extra)
    sim.end_ms = sim.now
    delivery = _check_at_least_once(sim)
    return {"end_ms": sim.now, "settle_checks": checks, "delivery": delivery, "last_disturbance_ms": last}
