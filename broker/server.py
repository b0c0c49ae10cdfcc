"""The asyncio TCP driver of the sans-IO broker: one process, N brokers, one listener per broker.

:class:`KGroupServer` is what ``kgroup serve`` runs (and what ``kgroup demo`` and the tests embed). It owns the
sockets, the connections and the clock; every answer is decided by the sans-IO broker
(:class:`broker.apis.BrokerApis`: ApiVersions, Metadata, FindCoordinator routing, the data path's rules, and the
group APIs through :class:`coordinator.service.GroupCoordinatorService`) -- the same code the simulator runs.

Theory of operation
-------------------
* **Listeners, connections, framing and limits** are broker/network.py's (:class:`~broker.network.SocketServer`,
  Kafka's ``SocketServer``): broker *b* listens on ``port + b`` (``port=0``: every broker on an ephemeral port) and
  the cluster model's brokers get the real host/port, so Metadata and FindCoordinator advertise addresses that
  work. A connection hands each complete frame to :meth:`KGroupServer._process` and processes no further frame
  until the answer is written (Kafka's muted channel: pipelined requests are answered in order, and a parked
  JoinGroup holds back every later request of its connection, exactly as on a Kafka broker); the size prefix is
  checked before the body is buffered (``socket.request.max.bytes``); idle, slow and excess connections and
  partial frames are bounded there (docs/server.md, "Resource limits").
* **One request path** (:meth:`KGroupServer._process`), synchronous until something must wait: header (the
  codecs of each served (API, version) are looked up once by the frame's first four bytes), body, fault rules,
  ``BrokerApis.handle``, the answer encoded. Only a parked request, a waiting fetch, a delay rule or the control
  channel costs a coroutine. A Heartbeat's body bytes and its response's values are memoised (``_Codecs``): a
  steady member's heartbeat is decoded and encoded once per generation, not once per request.
* **Bad requests** (Kafka's ``SocketServer.parseRequestHeader`` + ``RequestContext.parseRequest``): an unknown API
  key, an API this server does not serve (not advertised), an unsupported version of any API other than
  ApiVersions, an unreadable header or body -> ``InvalidRequestException`` -> Kafka closes the connection; so do
  we, and log one line. An ApiVersions version above ours gets the KIP-511 fallback and the connection stays
  open (``BrokerApis.check_version``).
* **Answers.** Each request handed to the broker gets a request id. Its answer (``Output.answer``) is a
  response, *parked* -- the coordinator answers ``(request_id, response)`` from a later call (another member's
  request, a timer, a leadership change), and the future of that id is resolved --, *abandoned* (a request Kafka
  never answers: the connection is closed, so a client sees what it would see on Kafka -- no answer -- sooner),
  or a data-path decision: send nothing (acks=0), close, or wait for an append or the fetch's max wait
  (``FetchWait``, Kafka's ``DelayedFetch``: the waiting fetch is woken by the appends that
  ``DataPath.drain_appended`` reports after each Produce).
* **Time.** The only clock is :class:`broker.clock.Clock` (the loop's monotonic time anchored once to the wall
  clock: record timestamps are epoch milliseconds, as Kafka's are, and offset retention counts from them across
  restarts). One timer handle is armed at ``svc.next_deadline()``, unless the clock is frozen; it is re-armed
  after a call only when the next deadline moved *earlier* (a heartbeat moves it later: the armed timer then fires
  early once, finds nothing due and re-arms at the real deadline, without polling the core). Fault control
  freezes, advances and thaws it through :meth:`KGroupServer.freeze_clock`,
  :meth:`~KGroupServer.advance_clock` and :meth:`~KGroupServer.thaw_clock`.
* **Persistence** (``data_dir``): the core's JSON-lines partition logs and the topics' record batches
  (broker/storage.py); a restart replays them (Kafka's load of ``__consumer_offsets``), so groups, committed
  offsets and produced records survive. Topics are not persisted: pass the same ``--topic`` flags again.
* **Failover.** :meth:`KGroupServer.stop_broker` stops a broker as a crash would: its listener closes, its
  connections drop, its parked requests are abandoned, and its offsets partitions move to the next in-sync
  replica (the core's controller model). :meth:`KGroupServer.start_broker` brings it back on the same port.

Fault rules and the control API are broker/faults.py's (``self.faults``, ``self.control``); the rules themselves
(``self.fault_rules``, broker/faultrules.py) are checked on the request path, and fault control acts on the server
only through its public operations (stop/start a broker, move a coordinator, expire sessions, the clock).
"""

from __future__ import annotations

import asyncio
import logging
import operator
import os
import socket
import struct
from dataclasses import dataclass, field
from typing import Any, Callable

import protocol.messages  # noqa: F401  (registers every API)
from protocol import types as T
from protocol.error_responses import error_response
from protocol.api import APIS, CONTROL_API_KEY
from protocol.errors import ErrorCode
from protocol.frames import DEFAULT_MAX_FRAME_BYTES, decode_request_header
from protocol.messages import ProduceRequest
from protocol.versions import unsupported_api_versions_frame

from coordinator.config import CoordinatorConfig
from coordinator.runtime import ABANDONED, PARKED
from coordinator.service import BrokerStopped, GroupCoordinatorService, Output, RequestContext

from broker.apis import FALLBACK, BrokerApis
from broker.clock import Clock
from broker.datapath import CLOSE, NO_RESPONSE, DataPath, FetchWait
from broker.faultrules import FaultRules
from broker.faults import ControlChannel, FaultControl
from broker.network import Connection, SocketServer
from broker.storage import OffsetsLogStorage, TopicLogStorage

E = ErrorCode
log = logging.getLogger("kgroup.server")


@dataclass
class ServerSettings:
    """What ``kgroup serve`` is started with (the CLI flags, under Kafka's names where Kafka has one)."""

    brokers: int = 3
    host: str = "127.0.0.1"
    port: int = 9092                       # broker b listens on port + b; 0 = ephemeral ports
    advertised_host: str | None = None     # advertised.listeners host; defaults to host
    advertised_port: int | None = None     # advertised.listeners port of broker 0 (broker b: +b); None = real port
    data_dir: str | None = None
    max_request_bytes: int = DEFAULT_MAX_FRAME_BYTES  # socket.request.max.bytes
    topics: list[tuple[str, int, int]] = field(default_factory=list)  # (name, partitions, replication factor)
    auto_create_topics: bool = False       # auto.create.topics.enable (Kafka's default is true; ours is off)
    num_partitions: int = 1                # num.partitions (auto-created topics)
    default_replication_factor: int = 1    # default.replication.factor (auto-created topics)
    config: CoordinatorConfig = field(default_factory=CoordinatorConfig)
    seed: int | None = None                # member-id UUIDs; None = random (a restart must not reuse ids)
    fsync: str = "batch"
    backlog: int = 1024
    # resource limits (broker/network.py; docs/server.md "Resource limits")
    connections_max_idle_ms: int = 600000            # connections.max.idle.ms
    max_connections: int = 2147483647                # max.connections (per broker)
    queued_max_request_bytes: int = 2 * DEFAULT_MAX_FRAME_BYTES  # queued.max.request.bytes (Kafka: -1, unbounded)
    request_read_timeout_ms: int = 30000             # kgroup: a frame must arrive whole within this
    connection_buffer_bytes: int = 65536             # kgroup: bytes read ahead while a request is in flight
    log_interval_ms: int = 10000                     # kgroup: one bad-input WARNING per kind per interval
    offsets_history_retention_bytes: int = 1 << 30   # kgroup: rolled __consumer_offsets segments kept (-1: all)


_CORR_CLIENT_ID_LEN = struct.Struct(">ih")  # request header after api key + version: correlation id, INT16 length
_SIZE_CORR = struct.Struct(">ii")           # response frame: size prefix, correlation id
_KEY_VERSION = struct.Struct(">hh")


#: APIs whose requests a client repeats byte for byte (after the header) and whose responses are a few scalars:
#: Heartbeat, sent by every member every heartbeat.interval.ms. Their bodies are decoded once and their responses
#: encoded once per distinct value (see _Codecs); what the broker decides is untouched.
_MEMO_APIS = frozenset({12})
#: entries per memo before it is emptied (a memo holds one entry per member and generation)
_MEMO_MAX = 4096


class _Codecs:
    """What the request path needs for one served (API, version): found by the frame's first four bytes.

    For the APIs of ``_MEMO_APIS``, ``bodies`` maps a request body's bytes to its decoded request (requests are
    read, never changed, by the broker) and ``answers`` maps a response's field values to its encoded frame after
    the correlation id: a steady member's heartbeat costs two dictionary look-ups instead of a decode and an
    encode. ``answer_key`` reads a response's field values (None: no memo)."""

    __slots__ = ("api", "version", "header_v2", "head", "decode", "encode", "bodies", "answers", "answer_key",
                 "response_cls")

    def __init__(self, api: Any, version: int) -> None:
        self.api = api
        self.version = version
        self.header_v2 = api.request_header_version(version) >= 2
        # the response frame's start: size and correlation id (filled in), and header v1's empty tagged fields
        self.head = bytes(9 if api.response_header_version(version) >= 1 else 8)
        _, self.decode = api.request.codec(version)
        self.encode, _ = api.response.codec(version)
        self.response_cls = api.response.cls
        self.bodies: dict[bytes, Any] | None = None
        self.answers: dict[tuple, bytes] = {}
        self.answer_key: Callable[[Any], tuple] | None = None
        if api.key in _MEMO_APIS:
            fields = [f for f in api.response.fields if f.present(version)]
            if all(not f.is_array and not f.is_struct and f.tag is None for f in fields):
                self.bodies = {}
                # the field values, and the unknown tagged fields (None unless set: then never memoised)
                self.answer_key = operator.attrgetter(*[f.name for f in fields], "unknown_tagged_fields")


class KGroupServer:
    """N Kafka brokers in one asyncio process, answering through the sans-IO broker."""

    def __init__(self, settings: ServerSettings | None = None) -> None:
        self.settings = s = settings or ServerSettings()
        if s.brokers < 1:
            raise ValueError("brokers must be >= 1")
        seed = s.seed if s.seed is not None else int.from_bytes(os.urandom(8), "big")
        self.clock = Clock()
        start_ms = self.clock.now_ms()
        offsets_storage = (OffsetsLogStorage(s.data_dir, s.fsync, s.offsets_history_retention_bytes)
                           if s.data_dir else None)
        self.svc = GroupCoordinatorService(config=s.config, num_brokers=s.brokers, seed=seed,
                                           storage=offsets_storage, start_ms=start_ms)
        self.cluster = self.svc.cluster
        for name, parts, rf in s.topics:
            self.cluster.create_topic(name, parts, rf)
        # ProducerIdManager: with a data directory, durable blocks (never reused across restarts); without one,
        # nothing survives a restart but the clients' own producer ids, so start above any id an earlier run of
        # this process can have handed out (1,000 per millisecond of the start time)
        self.data = DataPath(self.cluster, TopicLogStorage(s.data_dir, s.fsync) if s.data_dir else None,
                             first_producer_id=0 if s.data_dir else start_ms * 1000)
        if s.data_dir:  # log recovery (every batch's CRC) before serving, not on the first request
            for name, parts, _ in s.topics:
                for p in range(parts):
                    self.data.log(name, p)
        self.broker = BrokerApis(self.svc, self.data, auto_create_topics=s.auto_create_topics,
                                 num_partitions=s.num_partitions,
                                 default_replication_factor=s.default_replication_factor)
        # advertised.listeners defaults to the listener; a wildcard listener advertises the host's name (Kafka:
        # InetAddress.getLocalHost.getCanonicalHostName), never 0.0.0.0
        self.advertised_host = s.advertised_host or (socket.getfqdn() if s.host in ("", "0.0.0.0", "::") else s.host)
        self.ports: dict[int, int] = {}
        self.network = SocketServer(self._process, self._on_closed, max_request_bytes=s.max_request_bytes,
                                    queued_max_request_bytes=s.queued_max_request_bytes,
                                    connections_max_idle_ms=s.connections_max_idle_ms,
                                    max_connections=s.max_connections,
                                    request_read_timeout_ms=s.request_read_timeout_ms,
                                    connection_buffer_bytes=s.connection_buffer_bytes,
                                    log_interval_ms=s.log_interval_ms, backlog=s.backlog,
                                    fd_reserve=_fd_reserve(s))
        self._pending: dict[int, tuple[Connection, asyncio.Future]] = {}
        self._fetch_waiters: dict[tuple[str, int], list[asyncio.Future]] = {}
        self._next_rid = 0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_deadline: int | None = None
        self.check_deadlines = False  # tests: verify the core's cached next deadline against a full scan
        self._loop: asyncio.AbstractEventLoop | None = None
        self._listeners: list[Callable[[Output], None]] = []
        #: the request being handled while the listeners hear of its output (None for timers and fault control)
        self.handling: Any = None
        self._codecs: dict[bytes, _Codecs] = {}  # first 4 bytes of a request (api key, version) -> its codecs
        self.fault_rules = FaultRules()  # checked on the request path (broker/faultrules.py)
        self.faults = FaultControl(self)  # fault injection through the public operations below (broker/faults.py)
        self.control = ControlChannel(self)  # the private fault-control API (kgroup ctl)
        self.running = False

    # --- lifecycle -------------------------------------------------------------------------------------------

    async def start(self) -> "KGroupServer":
        self._loop = asyncio.get_running_loop()
        self.clock.attach(self._loop.time)
        self.network.attach(self._loop)
        try:
            for b in self.cluster.broker_ids():
                port = 0 if self.settings.port == 0 else self.settings.port + b
                await self._listen(b, port)
        except BaseException:
            await self.close()
            raise
        self.running = True
        self._rearm_timer()
        log.info("kgroup serving bootstrap=%s", self.bootstrap)
        if not self.loopback_only:
            log.warning("listening on %s, which is not a loopback address: any host that can reach it may use the "
                        "brokers and their fault control; nothing is authenticated or encrypted",
                        self.settings.host or "every interface")
        return self

    async def _listen(self, broker_id: int, port: int) -> None:
        real = await self.network.listen(broker_id, self.settings.host, port)
        self.ports[broker_id] = real
        b = self.cluster.brokers[broker_id]
        adv = self.settings.advertised_port
        b.host, b.port = self.advertised_host, (real if adv is None else adv + broker_id)

    @property
    def loopback_only(self) -> bool:
        """Whether the listeners accept loopback peers only (the default host)."""
        return _is_loopback_host(self.settings.host)

    @property
    def bootstrap(self) -> str:
        """``host:port,...`` of the live brokers (what a client's bootstrap.servers should say)."""
        return ",".join(f"{self.advertised_host}:{self.ports[b]}" for b in sorted(self.network.listeners))

    def address(self, broker_id: int) -> tuple[str, int]:
        return self.advertised_host, self.ports[broker_id]

    async def close(self) -> None:
        """Stop listening, drop every connection, close the logs. Idempotent."""
        self.running = False
        self._cancel_timer()
        tasks = [c.task for c in self.network.connections() if c.task is not None]
        self.network.close()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.sleep(0)  # the aborted transports close their sockets on the loop's next turn
        for _, fut in self._pending.values():
            if not fut.done():
                fut.cancel()
        self._pending.clear()
        for futs in self._fetch_waiters.values():
            for f in futs:
                if not f.done():
                    f.cancel()
        self._fetch_waiters.clear()
        self.data.close()
        for lg in self.svc.logs.values():
            lg.sync()
            lg.close()

    async def __aenter__(self) -> "KGroupServer":
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    # --- public operations (failover, fault control) ---------------------------------------------------------

    async def stop_broker(self, broker_id: int) -> Output:
        """Stop a broker as a crash would: listener closed, connections dropped, leaderships moved."""
        out = self.svc.stop_broker(broker_id, self.now_ms())
        self.network.stop_listening(broker_id)
        self.network.abort_connections(broker_id)
        self._apply(out)
        log.info("broker %d stopped; leadership changes: %d", broker_id, len(out.leadership))
        return out

    async def start_broker(self, broker_id: int) -> Output:
        """Bring a stopped broker back on its old port."""
        if broker_id not in self.network.listeners:
            await self._listen(broker_id, self.ports[broker_id])
        out = self.svc.start_broker(broker_id, self.now_ms())
        self._apply(out)
        log.info("broker %d started", broker_id)
        return out

    def move_coordinator(self, group_id: str, broker_id: int) -> Output:
        """Elect a live broker leader of the group's ``__consumer_offsets`` partition while every broker stays up
        (``GroupCoordinatorService.move_coordinator``); raises ClusterError (a ValueError) if it cannot lead it."""
        out = self.svc.move_coordinator(group_id, broker_id, self.now_ms())
        self._apply(out)
        return out

    def expire_sessions(self, group_id: str, member_ids: list[str]) -> Output:
        """The members' sessions expire now (``GroupCoordinatorService.expire_sessions``)."""
        out = self.svc.expire_sessions(group_id, member_ids, self.now_ms())
        self._apply(out)
        return out

    def add_listener(self, fn: Callable[[Output], None]) -> None:
        """Call ``fn(output)`` after every core call (records, leadership changes): for demos and event logs."""
        self._listeners.append(fn)

    # --- clock and timers ------------------------------------------------------------------------------------

    def now_ms(self) -> int:
        return self.clock.now_ms()

    def freeze_clock(self) -> int:
        """Stop the clock (returns its time in ms): no timer fires; requests are handled at the frozen time."""
        t = self.clock.freeze()
        self._cancel_timer()
        return t

    def advance_clock(self, ms: int) -> int:
        """Move the clock forward by ``ms`` (frozen or not), firing every timer that falls due."""
        t = self.clock.advance(ms)
        self._cancel_timer()
        self._apply(self.svc.poll(t))
        return t

    def thaw_clock(self) -> int:
        """Let the clock run again from where it stood."""
        t = self.clock.thaw()
        self._cancel_timer()
        self._rearm_timer()
        return t

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = None
        self._timer_deadline = None

    def _rearm_timer(self) -> None:
        """Arm the one timer handle at the core's next deadline (``svc.next_deadline()`` is O(1): the core caches
        it); none while the clock is frozen."""
        if not self.running:
            return
        d = self.svc.next_deadline()
        if self.check_deadlines:  # test aid: the core's cached deadline is exact
            self.svc.verify_next_deadline()
        if self._timer is not None and d is not None and self._timer_deadline is not None and \
                d >= self._timer_deadline:
            # The armed timer is not late for it. A heartbeat pushes its member's deadline later, which pushes the
            # earliest deadline later almost every time: re-arming a loop timer per heartbeat costs more than
            # letting the armed one fire early once, find nothing due and re-arm (_on_timer).
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_deadline = d
        if d is None:
            return
        # +1 ms: loop.call_at may fire up to the clock resolution early; now_ms() truncates.
        when = self.clock.source_time(d + 1)
        if when is None:  # frozen: time does not pass, nothing falls due
            self._timer_deadline = None
            return
        self._timer = self._loop.call_at(when, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_deadline = None
        d = self.svc.next_deadline()
        if d is None or d >= self.now_ms():
            # fired early (the deadline it was armed for moved later, see _rearm_timer): nothing is due by the
            # rule below (a deadline d is polled at d + 1 ms), so poll nothing -- as if it had been re-armed when
            # the deadline moved
            self._rearm_timer()
            return
        try:
            out = self.svc.poll(self.now_ms())
        except Exception:  # noqa: BLE001 - a core bug must not stop the server; it is logged with its traceback
            log.exception("coordinator poll failed")
            out = Output()
        self._apply(out)

    def _apply(self, out: Output) -> None:
        """Resolve the futures of the parked requests this call answered (abandoned ones resolve to None: close
        the connection), tell the listeners, re-arm the timer. (The answer to the request just handled has no
        future yet: :meth:`_process` takes it from ``out.answer``.)"""
        pending = self._pending
        if pending:
            for rid, resp in out.responses:
                entry = pending.pop(rid, None)
                if entry is not None and not entry[1].done():
                    entry[1].set_result(resp)
            for rid in out.abandoned:
                entry = pending.pop(rid, None)
                if entry is not None and not entry[1].done():
                    entry[1].set_result(None)
        for fn in self._listeners:
            try:
                fn(out)
            except Exception:  # noqa: BLE001
                log.exception("output listener failed")
        self._rearm_timer()

    # --- connections -----------------------------------------------------------------------------------------

    def _on_closed(self, conn: Connection) -> None:
        """A connection is gone: a request parked for it will be answered into the void (Kafka drops the response
        of a closed channel); forget its future now so that nothing holds on to the connection."""
        rid = conn.pending_rid
        if rid is not None:
            conn.pending_rid = None
            entry = self._pending.pop(rid, None)
            if entry is not None and not entry[1].done():
                entry[1].cancel()

    def _bad(self, conn: Connection, kind: str, why: str) -> None:
        self.network.bad(conn, kind, why)

    # --- the request path ------------------------------------------------------------------------------------

    def _process(self, conn: Connection, data: bytes) -> Any:
        """One request frame -> the response frame (``b""``: send nothing), None to close the connection, or a
        coroutine that returns either once what the answer waits for has happened."""
        codecs = self._codecs.get(data[:4])
        if codecs is None:
            codecs = self._unusual(conn, data)
            if type(codecs) is not _Codecs:
                return codecs
        api, version = codecs.api, codecs.version
        try:  # the request header (v1, or v2 with tagged fields)
            corr, n = _CORR_CLIENT_ID_LEN.unpack_from(data, 4)
            if n == -1:
                client_id, pos = "", 10
            elif 0 <= n <= len(data) - 10:
                client_id, pos = str(data[10:10 + n], "utf-8"), 10 + n
            else:
                raise ValueError(f"client id length {n} exceeds the frame")
            if codecs.header_v2:
                if data[pos] == 0:
                    pos += 1
                else:
                    _, pos = T.read_tagged_fields(data, pos)
        except Exception as e:  # noqa: BLE001 - RequestHeader.parse fails -> InvalidRequestException -> close
            self._bad(conn, "unreadable header", f"unreadable request header: {e}")
            return None
        bodies = codecs.bodies
        body = None if bodies is None else bodies.get(raw := data[pos:])
        if body is None:
            try:
                body, end = codecs.decode(data, pos)
            except Exception as e:  # noqa: BLE001 - RequestContext.parseRequest: InvalidRequestException -> close
                self._bad(conn, "unreadable body", f"unreadable {api.name} v{version} request: {e}")
                return None
            if bodies is not None and end == len(data) and not body.unknown_tagged_fields:
                if len(bodies) >= _MEMO_MAX:
                    bodies.clear()
                bodies[raw] = body
        rules = self.fault_rules
        if rules.rules and (rule := rules.take(api.key, body)) is not None:
            if rule.action == "drop":  # a network failure: the request never arrives, the connection is lost
                log.info("fault: dropping %s v%d on %s", api.name, version, conn)
                return None
            if rule.action == "fail":  # AbstractRequest.getErrorResponse, without processing the request
                log.info("fault: failing %s v%d with %s", api.name, version, ErrorCode(rule.error).name)
                return self._frame(conn, error_response(api.key, version, body, rule.error), corr, codecs)
            if rule.action == "delay":
                return self._delayed(conn, rule.delay_ms, body, corr, client_id, codecs)
        return self._handle(conn, body, corr, client_id, codecs)

    def _handle(self, conn: Connection, body: Any, corr: int, client_id: str, codecs: _Codecs) -> Any:
        """Hand a decoded request to the broker and turn its answer into what :meth:`_process` returns."""
        self._next_rid += 1
        rid = self._next_rid
        try:
            out = self.broker.handle(conn.broker_id, body, RequestContext(rid, codecs.version, client_id,
                                                                          conn.client_host), self.clock.now_ms())
        except BrokerStopped:  # the broker stopped while the request was on its way
            return None
        except Exception:  # noqa: BLE001 - a handler bug: close this connection, keep serving the others
            log.exception("%s: %s v%d failed; closing", conn, codecs.api.name, codecs.version)
            return None
        answer = out.answer
        self.handling = body  # listeners may read the request whose output they are told about
        try:
            self._apply(out)
        finally:
            self.handling = None
        if type(body) is ProduceRequest:
            self._wake_fetches(self.data.drain_appended())
        if answer is PARKED:  # answered by a later call (another member, a timer, a failover)
            fut = self._loop.create_future()
            self._pending[rid] = (conn, fut)
            conn.pending_rid = rid
            return self._parked(conn, fut, corr, codecs)
        if answer is ABANDONED:
            log.info("%s: request abandoned by the coordinator (Kafka never answers it); closing", conn)
            return None
        if type(answer) is FetchWait:
            return self._wait_fetch(conn, answer, corr, codecs)
        if answer is NO_RESPONSE:
            return b""
        if answer is CLOSE:
            return None
        return self._frame(conn, answer, corr, codecs)

    def _frame(self, conn: Connection, resp: Any, corr: int, codecs: _Codecs) -> bytes | None:
        key = codecs.answer_key
        if key is not None and type(resp) is codecs.response_cls:
            k = key(resp)
            tail = codecs.answers.get(k)
            if tail is not None:
                return _SIZE_CORR.pack(len(tail) + 4, corr) + tail
            frame = self._encode(conn, resp, corr, codecs)
            if frame is not None and k[-1] is None:
                answers = codecs.answers
                if len(answers) >= _MEMO_MAX:
                    answers.clear()
                answers[k] = frame[8:]
            return frame
        return self._encode(conn, resp, corr, codecs)

    def _encode(self, conn: Connection, resp: Any, corr: int, codecs: _Codecs) -> bytes | None:
        try:
            out = bytearray(codecs.head)
            codecs.encode(resp, out)
            _SIZE_CORR.pack_into(out, 0, len(out) - 4, corr)
            return bytes(out)
        except Exception:  # noqa: BLE001
            log.exception("%s: cannot encode the %s v%d response; closing", conn, codecs.api.name, codecs.version)
            return None

    def _unusual(self, conn: Connection, data: bytes) -> Any:
        """A frame whose first four bytes are not (yet) a known served (API, version): the codecs of a served
        version seen for the first time, or what to do instead (a bad request, the KIP-511 fallback, the
        control channel)."""
        if len(data) >= 4:
            key, version = _KEY_VERSION.unpack_from(data)
            if key != CONTROL_API_KEY:
                verdict = self.broker.check_version(key, version)
                if verdict is None:
                    codecs = self._codecs[bytes(data[:4])] = _Codecs(APIS[key], version)
                    return codecs
                if verdict is not FALLBACK:
                    # SocketServer.parseRequestHeader: ApiKeys.forId throws / isApiEnabled is false, or an
                    # unsupported version -> InvalidRequestException -> the Processor closes the channel.
                    self._bad(conn, "unsupported request", verdict)
                    return None
        try:
            header, pos = decode_request_header(data)
        except Exception as e:  # noqa: BLE001
            self._bad(conn, "unreadable header", f"unreadable request header: {e}")
            return None
        if header.api_key == CONTROL_API_KEY:  # the private fault-control API (broker/faults.py), loopback only
            return self.control.handle(conn, header, data, pos)
        # ApiVersionsRequest above our versions: RequestContext.parseRequest reads it as v0 and KafkaApis answers
        # UNSUPPORTED_VERSION in a v0 body (KIP-511)
        return unsupported_api_versions_frame(header.correlation_id)

    async def _parked(self, conn: Connection, fut: asyncio.Future, corr: int, codecs: _Codecs) -> bytes | None:
        resp = await fut
        conn.pending_rid = None
        if resp is None:
            log.info("%s: request abandoned by the coordinator (Kafka never answers it); closing", conn)
            return None
        return self._frame(conn, resp, corr, codecs)

    async def _delayed(self, conn: Connection, delay_ms: int, body: Any, corr: int, client_id: str,
                       codecs: _Codecs) -> bytes | None:
        """A delay rule: the request reaches the broker ``delay_ms`` later (the connection is held meanwhile)."""
        await asyncio.sleep(delay_ms / 1000.0)
        reply = self._handle(conn, body, corr, client_id, codecs)
        if reply is not None and type(reply) is not bytes:
            reply = await reply
        return reply

    async def _wait_fetch(self, conn: Connection, wait: FetchWait, corr: int, codecs: _Codecs) -> bytes | None:
        """DelayedFetch: wait for an append to one of the fetch's partitions or for its max wait, then ask the
        broker again, until it answers."""
        loop = self._loop
        deadline = loop.time() + wait.max_wait_ms / 1000.0
        while True:
            remaining = deadline - loop.time()
            if remaining > 0:
                if not wait.partitions:  # nothing fetchable at all: the delayed fetch just times out
                    await asyncio.sleep(remaining)
                else:
                    fut = loop.create_future()
                    for k in wait.partitions:
                        self._fetch_waiters.setdefault(k, []).append(fut)
                    try:
                        await asyncio.wait_for(fut, remaining)
                    except asyncio.TimeoutError:
                        pass
                    finally:
                        for k in wait.partitions:
                            lst = self._fetch_waiters.get(k)
                            if lst is not None and fut in lst:
                                lst.remove(fut)
                                if not lst:
                                    del self._fetch_waiters[k]
            try:
                answer = self.broker.resume_fetch(conn.broker_id, wait, deadline - loop.time() > 0)
            except BrokerStopped:
                return None
            except Exception:  # noqa: BLE001
                log.exception("%s: %s v%d failed; closing", conn, codecs.api.name, codecs.version)
                return None
            if type(answer) is not FetchWait:
                return self._frame(conn, answer, corr, codecs)
            wait = answer

    def _wake_fetches(self, partitions: list[tuple[str, int]]) -> None:
        """DelayedFetch.tryComplete after an append: the fetches waiting on these partitions ask again."""
        for key in partitions:
            for f in self._fetch_waiters.pop(key, ()):
                if not f.done():
                    f.set_result(None)


def _fd_reserve(s: ServerSettings) -> int:
    """File descriptors kept out of the connection budget: the network's margin plus the log files a data
    directory may hold open (one per offsets partition, one per topic partition, a snapshot being written)."""
    from broker.network import FD_RESERVE
    if not s.data_dir:
        return FD_RESERVE
    return FD_RESERVE + s.config.offsets_topic_num_partitions + 2 + sum(p for _, p, _ in s.topics)


def _is_loopback_host(host: str) -> bool:
    """Whether every address ``host`` names is a loopback address ("" and wildcards are not)."""
    import ipaddress
    if not host or host in ("0.0.0.0", "::"):
        return False
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return False
    try:
        return bool(infos) and all(ipaddress.ip_address(i[4][0].split("%")[0]).is_loopback for i in infos)
    except ValueError:
        return False


async def serve(settings: ServerSettings, *, ready: Callable[[KGroupServer], None] | None = None,
                stop: asyncio.Event | None = None) -> None:
    """Run a server until ``stop`` is set (or SIGINT/SIGTERM when installed by the caller); then shut down."""
    server = KGroupServer(settings)
    await server.start()
    try:
        if ready is not None:
            ready(server)
        if stop is None:
            stop = asyncio.Event()
        await stop.wait()
    finally:
        await server.close()
