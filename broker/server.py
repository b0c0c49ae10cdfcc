"""The asyncio TCP driver of the coordinator core: one process, N brokers, one listener per broker.

:class:`KGroupServer` is what ``kgroup serve`` runs (and what ``kgroup demo`` and the tests embed). It owns the
sockets and the clock; every decision about groups and offsets is the sans-IO core's
(:class:`coordinator.service.GroupCoordinatorService`). The server itself answers only what Kafka's network
layer and ``KafkaApis`` answer without the group coordinator: ApiVersions, Metadata, and FindCoordinator for
transaction keys.

Theory of operation
-------------------
* **Listeners.** Broker *b* listens on ``port + b`` (``port=0``: every broker on an ephemeral port). The cluster
  model's brokers get the real host/port, so Metadata and FindCoordinator advertise addresses that work.
* **One request at a time per connection** (Kafka's ``SocketServer.Processor``: after a complete receive the
  channel is *muted*, and unmuted only when the response has been sent -- ``processCompletedReceives`` /
  ``processCompletedSends`` / ``tryUnmuteChannel``). Each connection is one coroutine that reads a frame, has it
  handled, waits for the response (a JoinGroup or SyncGroup may stay parked for a whole rebalance), writes it,
  drains, and only then reads the next frame. So pipelined requests are answered in order, and a parked JoinGroup
  holds back every later request of its connection, exactly as on a Kafka broker. Other connections are
  unaffected.
* **Framing** (Kafka's ``NetworkReceive``): the 4-byte size is checked *before* the body is read: a negative size
  or one above ``max_request_bytes`` (``socket.request.max.bytes``) closes the connection
  (``InvalidReceiveException``).
* **Bad requests** (Kafka's ``SocketServer.parseRequestHeader`` + ``RequestContext.parseRequest``): an unknown API
  key, an API this server does not serve (not advertised), an unsupported version of any API other than
  ApiVersions, an unreadable header or body -> ``InvalidRequestException`` -> Kafka closes the connection; so do
  we, and log one line. ApiVersions is special (``ApiKeys.isVersionEnabled`` accepts every ApiVersions version):
  a version above ours gets the KIP-511 fallback (v0 body, UNSUPPORTED_VERSION, ApiVersions' own range) and the
  connection stays open; a v3+ request whose client software name/version do not match Kafka's pattern gets
  INVALID_REQUEST (``KafkaApis.handleApiVersionsRequest``, ``ApiVersionsRequest.isValid``).
* **Parked requests.** Each request handed to the core gets an opaque request id and a future. The core answers
  ``(request_id, response)`` from any later call (another member's request, a timer, a leadership change);
  the future of that id is resolved and the owning connection writes it. An ``abandoned`` id is a request Kafka
  never answers: the connection is closed (a client sees what it would see on Kafka -- no answer -- sooner).
* **Time.** The only clock is the asyncio loop's (``loop.time()``), anchored once at start to the wall clock so
  that record timestamps are epoch milliseconds (Kafka's record timestamps are, and offset retention counts from
  them across restarts). One timer handle is armed at ``svc.next_deadline()`` and re-armed after every call.
* **Persistence** (``data_dir``): the core's JSON-lines partition logs; a restart replays them (Kafka's load of
  ``__consumer_offsets``), so groups and committed offsets survive. Topics are not persisted: pass the same
  ``--topic`` flags again.
* **Failover.** :meth:`KGroupServer.stop_broker` stops a broker as a crash would: its listener closes, its
  connections drop, its parked requests are abandoned, and its offsets partitions move to the next in-sync
  replica (the core's controller model). :meth:`KGroupServer.start_broker` brings it back on the same port.

Served APIs (advertised in ApiVersions): ApiVersions, Metadata, FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
LeaveGroup, OffsetCommit, OffsetFetch, DescribeGroups, ListGroups, DeleteGroups, OffsetDelete, and the data path --
Produce, Fetch, ListOffsets, InitProducerId, OffsetForLeaderEpoch -- served by broker/datapath.py (``self.plane``);
fault rules and the control API are broker/faults.py's (``self.faults``, ``self.control``). A client that sends any other API has its
connection closed, as Kafka does for an API that is not enabled on a listener.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import itertools
import logging
import os
import re
import socket
import struct
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

import protocol.messages  # noqa: F401  (registers every API)
from protocol.api import APIS, CONTROL_API_KEY, ApiKey
from protocol.errors import ErrorCode
from protocol.exceptions import ProtocolError
from protocol.frames import DEFAULT_MAX_FRAME_BYTES, decode_request_header, encode_response
from protocol.messages import ApiVersionsResponse, FindCoordinatorResponse, MetadataResponse
from protocol.versions import api_versions_response, unsupported_api_versions_frame

from coordinator.cluster import NO_LEADER, OFFSETS_TOPIC, ClusterError
from coordinator.config import CoordinatorConfig
from coordinator.service import BrokerStopped, GroupCoordinatorService, Output, RequestContext

from broker.datapath import DATA_APIS, NO_RESPONSE, DataPlane
from broker.faults import ControlChannel, FaultControl
from broker.storage import OffsetsLogStorage

E = ErrorCode
log = logging.getLogger("kgroup.server")

#: The APIs ``kgroup serve`` implements and advertises (the data path comes in a later issue).
SERVED_APIS: tuple[int, ...] = (
    ApiKey.METADATA, ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP,
    ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP, ApiKey.SYNC_GROUP, ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS,
    ApiKey.API_VERSIONS, ApiKey.DELETE_GROUPS, ApiKey.OFFSET_DELETE,
    # the data path (broker/datapath.py): ReplicaManager/UnifiedLog reduced to in-process partition logs
    ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.INIT_PRODUCER_ID, ApiKey.OFFSET_FOR_LEADER_EPOCH,
)

#: ``ApiVersionsRequest.SOFTWARE_NAME_VERSION_PATTERN`` (KIP-511).
_SOFTWARE_RE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")
#: ``org.apache.kafka.common.internals.Topic``: legal topic names.
_TOPIC_RE = re.compile(r"[a-zA-Z0-9._-]+")
_TOPIC_MAX_LENGTH = 249
_CLUSTER_UUID = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/kgroup/cluster")
#: Kafka prints cluster ids as URL-safe base64 of a UUID without padding (``Uuid.toString``).
CLUSTER_ID = base64.urlsafe_b64encode(_CLUSTER_UUID.bytes).decode().rstrip("=")


def topic_id(name: str) -> uuid.UUID:
    """A stable topic id (Kafka draws a random one at creation; ours is derived from the name so it survives a
    restart)."""
    return uuid.uuid5(_CLUSTER_UUID, name)


def valid_topic_name(name: str) -> bool:
    return (bool(name) and len(name) <= _TOPIC_MAX_LENGTH and name not in (".", "..")
            and _TOPIC_RE.fullmatch(name) is not None)


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


_UNANSWERED = object()

#: The group APIs whose every request goes to the core: they take the fast request path (``_process``).
_CORE_APIS = frozenset({
    ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP, ApiKey.OFFSET_COMMIT,
    ApiKey.OFFSET_FETCH, ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS, ApiKey.DELETE_GROUPS, ApiKey.OFFSET_DELETE,
})
_CORR_CLIENT_ID_LEN = struct.Struct(">ih")  # request header after api key + version: correlation id, INT16 length
_SLOW = object()  # _process_fast: take the general path
_SIZE_CORR = struct.Struct(">ii")           # response frame: size prefix, correlation id


class _Connection:
    __slots__ = ("conn_id", "broker_id", "reader", "writer", "peer", "client_host", "task", "closing")

    def __init__(self, conn_id: int, broker_id: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 peer: str) -> None:
        self.conn_id = conn_id
        self.broker_id = broker_id
        self.reader = reader
        self.writer = writer
        self.peer = peer
        self.client_host = "/" + peer.rsplit(":", 1)[0]  # Kafka's clientHost: InetAddress.toString() -> "/ip"
        self.task: asyncio.Task | None = None
        self.closing = False

    def abort(self) -> None:
        self.closing = True
        self.writer.transport.abort()

    def __repr__(self) -> str:
        return f"connection {self.conn_id} from {self.peer} to broker {self.broker_id}"


class KGroupServer:
    """N Kafka brokers in one asyncio process, coordinating consumer groups through the sans-IO core."""

    def __init__(self, settings: ServerSettings | None = None) -> None:
        self.settings = s = settings or ServerSettings()
        if s.brokers < 1:
            raise ValueError("brokers must be >= 1")
        seed = s.seed if s.seed is not None else int.from_bytes(os.urandom(8), "big")
        self._anchor_ms = int(time.time() * 1000)  # the one wall-clock read: record timestamps are epoch ms
        self._anchor_loop: float | None = None
        self._last_ms = self._anchor_ms
        self.svc = GroupCoordinatorService(config=s.config, num_brokers=s.brokers, seed=seed,
                                           storage=OffsetsLogStorage(s.data_dir, s.fsync) if s.data_dir else None,
                                           start_ms=self._anchor_ms)
        self.cluster = self.svc.cluster
        for name, parts, rf in s.topics:
            self.cluster.create_topic(name, parts, rf)
        # advertised.listeners defaults to the listener; a wildcard listener advertises the host's name (Kafka:
        # InetAddress.getLocalHost.getCanonicalHostName), never 0.0.0.0
        self.advertised_host = s.advertised_host or (socket.getfqdn() if s.host in ("", "0.0.0.0", "::") else s.host)
        self.ports: dict[int, int] = {}
        self._servers: dict[int, asyncio.base_events.Server] = {}
        self._conns: dict[int, set[_Connection]] = {b: set() for b in self.cluster.broker_ids()}
        self._pending: dict[int, tuple[_Connection, asyncio.Future]] = {}
        self._next_rid = 0
        self._next_conn = 0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_deadline: int | None = None
        self._current: int | None = None
        self._current_resp: Any = _UNANSWERED
        self.check_deadlines = False  # tests: verify the core's cached next deadline against a full scan
        self._loop: asyncio.AbstractEventLoop | None = None
        self._listeners: list[Callable[[Output], None]] = []
        self._served = frozenset(int(k) for k in SERVED_APIS)
        # Fast request path: the first 4 bytes of a request (api key, version) -> (api, version, header v2?,
        # response header template, decoder, encoder), for the served group APIs; filled on first use.
        self._fast_keys = {struct.pack(">hh", k, v): (int(k), v) for k in _CORE_APIS if int(k) in self._served
                           for v in range(APIS[k].min_version, APIS[k].max_version + 1) if APIS[k].supports(v)}
        self._fast: dict[bytes, tuple] = {}
        self.plane = DataPlane(self)  # the data path (broker/datapath.py)
        self.faults = FaultControl(self)  # fault rules and clock control (broker/faults.py)
        self.fault_active = False  # a fault rule exists: every request goes through faults.intercept
        self.control = ControlChannel(self)  # the private fault-control API (kgroup ctl)
        self.running = False

    # --- lifecycle -------------------------------------------------------------------------------------------

    async def start(self) -> "KGroupServer":
        self._loop = asyncio.get_running_loop()
        self._anchor_loop = self._loop.time()
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
        return self

    async def _listen(self, broker_id: int, port: int) -> None:
        srv = await asyncio.start_server(functools.partial(self._on_connection, broker_id), self.settings.host, port,
                                         backlog=self.settings.backlog)
        self._servers[broker_id] = srv
        real = srv.sockets[0].getsockname()[1]
        self.ports[broker_id] = real
        b = self.cluster.brokers[broker_id]
        adv = self.settings.advertised_port
        b.host, b.port = self.advertised_host, (real if adv is None else adv + broker_id)

    @property
    def bootstrap(self) -> str:
        """``host:port,...`` of the live brokers (what a client's bootstrap.servers should say)."""
        return ",".join(f"{self.advertised_host}:{self.ports[b]}" for b in sorted(self._servers))

    def address(self, broker_id: int) -> tuple[str, int]:
        return self.advertised_host, self.ports[broker_id]

    async def close(self) -> None:
        """Stop listening, drop every connection, close the logs. Idempotent."""
        self.running = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
            self._timer_deadline = None
        servers = list(self._servers.values())
        self._servers.clear()
        for srv in servers:
            srv.close()
        tasks = []
        for conns in self._conns.values():
            for conn in list(conns):
                conn.abort()
                if conn.task is not None and conn.task is not asyncio.current_task():
                    tasks.append(conn.task)
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        for srv in servers:  # after the connections: from Python 3.12 wait_closed also waits for them
            await srv.wait_closed()
        for _, fut in self._pending.values():
            if not fut.done():
                fut.cancel()
        self._pending.clear()
        self.plane.close()
        for lg in self.svc.logs.values():
            lg.sync()
            lg.close()

    async def __aenter__(self) -> "KGroupServer":
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    # --- control API (failover) ------------------------------------------------------------------------------

    async def stop_broker(self, broker_id: int) -> Output:
        """Stop a broker as a crash would: listener closed, connections dropped, leaderships moved."""
        out = self.svc.stop_broker(broker_id, self.now_ms())
        srv = self._servers.pop(broker_id, None)
        if srv is not None:
            srv.close()
        for conn in list(self._conns.get(broker_id, ())):
            conn.abort()
        self._apply(out)
        if srv is not None:
            await srv.wait_closed()
        log.info("broker %d stopped; leadership changes: %d", broker_id, len(out.leadership))
        return out

    async def start_broker(self, broker_id: int) -> Output:
        """Bring a stopped broker back on its old port."""
        if broker_id not in self._servers:
            await self._listen(broker_id, self.ports[broker_id])
        out = self.svc.start_broker(broker_id, self.now_ms())
        self._apply(out)
        log.info("broker %d started", broker_id)
        return out

    def add_listener(self, fn: Callable[[Output], None]) -> None:
        """Call ``fn(output)`` after every core call (records, leadership changes): for demos and event logs."""
        self._listeners.append(fn)

    # --- clock and timers ------------------------------------------------------------------------------------

    def now_ms(self) -> int:
        loop = self._loop or asyncio.get_running_loop()
        if self._anchor_loop is None:
            self._anchor_loop = loop.time()
        t = self._anchor_ms + int((loop.time() - self._anchor_loop) * 1000)
        if t > self._last_ms:
            self._last_ms = t
        return self._last_ms

    def _rearm_timer(self) -> None:
        """Arm the one timer handle at the core's next deadline (``svc.next_deadline()`` is O(1): the core caches
        it)."""
        if not self.running:
            return
        d = self.svc.next_deadline()
        if self.check_deadlines:  # test aid: the core's cached deadline is exact
            self.svc.verify_next_deadline()
        if d == self._timer_deadline and self._timer is not None:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_deadline = d
        if d is None:
            return
        # +1 ms: loop.call_at may fire up to the clock resolution early; now_ms() truncates.
        when = self._anchor_loop + (d + 1 - self._anchor_ms) / 1000.0
        self._timer = self._loop.call_at(when, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_deadline = None
        try:
            out = self.svc.poll(self.now_ms())
        except Exception:  # noqa: BLE001 - a core bug must not stop the server; it is logged with its traceback
            log.exception("coordinator poll failed")
            out = Output()
        self._apply(out)

    def _apply(self, out: Output) -> None:
        """Resolve the futures of the answered requests (abandoned ones resolve to None: close the connection),
        tell the listeners, re-arm the timer."""
        current = self._current
        for rid, resp in itertools.chain(out.responses, ((rid, None) for rid in out.abandoned)):
            if rid == current:
                self._current_resp = resp
                continue
            entry = self._pending.pop(rid, None)
            if entry is not None and not entry[1].done():
                entry[1].set_result(resp)
        for fn in self._listeners:
            try:
                fn(out)
            except Exception:  # noqa: BLE001
                log.exception("output listener failed")
        self._rearm_timer()

    # --- connections -----------------------------------------------------------------------------------------

    async def _on_connection(self, broker_id: int, reader: asyncio.StreamReader,
                             writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        peer_s = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self._next_conn += 1
        conn = _Connection(self._next_conn, broker_id, reader, writer, peer_s)
        conn.task = asyncio.current_task()
        if not self.running or not self.cluster.is_alive(broker_id) or broker_id not in self._servers:
            writer.transport.abort()
            return
        self._conns.setdefault(broker_id, set()).add(conn)
        max_bytes = self.settings.max_request_bytes
        transport = writer.transport
        try:
            while not conn.closing:
                try:
                    prefix = await reader.readexactly(4)
                except asyncio.IncompleteReadError as e:
                    if e.partial:
                        self._bad(conn, f"connection closed inside a size prefix ({len(e.partial)} of 4 bytes)")
                    break
                size = int.from_bytes(prefix, "big", signed=True)
                if size < 0:  # NetworkReceive: InvalidReceiveException("Invalid receive (size = -1)")
                    self._bad(conn, f"invalid receive (size = {size})")
                    break
                if size > max_bytes:  # NetworkReceive: larger than socket.request.max.bytes
                    self._bad(conn, f"invalid receive (size = {size} larger than {max_bytes})")
                    break
                try:
                    data = await reader.readexactly(size)
                except asyncio.IncompleteReadError as e:
                    self._bad(conn, f"connection closed inside a request ({len(e.partial)} of {size} bytes)")
                    break
                reply = self._process_fast(conn, data)
                if reply is _SLOW:
                    reply = await self._process(conn, data)
                elif type(reply) is tuple:  # a parked JoinGroup/SyncGroup: the channel stays muted until answered
                    reply = await self._finish_parked(conn, *reply)
                if reply is None:
                    break
                writer.write(reply)
                # "sent" before the channel is unmuted (Processor.processCompletedSends): write() hands the frame
                # to the socket at once when nothing is queued; only a queued remainder needs drain() (which
                # waits only above the transport's high-water mark).
                if transport.get_write_buffer_size():
                    await writer.drain()
        except (ConnectionError, OSError):
            pass  # the peer went away (or we aborted the connection)
        except asyncio.CancelledError:
            pass
        except Exception:  # noqa: BLE001 - never let one connection take the server down
            log.exception("%s: unexpected error; closing", conn)
        finally:
            self._conns.get(broker_id, set()).discard(conn)
            conn.closing = True
            try:
                writer.transport.abort() if not writer.is_closing() else None
            except Exception:  # noqa: BLE001
                pass

    def _bad(self, conn: _Connection, why: str) -> None:
        """One log line per connection closed for bad input (Kafka logs at DEBUG/INFO and closes)."""
        if not conn.closing:  # not when we dropped it ourselves (broker stopped, shutdown)
            log.warning("%s: %s; closing the connection", conn, why)

    def _fast_entry(self, prefix: bytes) -> tuple:
        key, version = self._fast_keys[prefix]
        api = APIS[key]
        _, dec = api.request.codec(version)
        enc, _ = api.response.codec(version)
        head = bytes(9 if api.response_header_version(version) >= 1 else 8)
        entry = self._fast[prefix] = (api, version, api.request_header_version(version) >= 2, head, dec, enc)
        return entry

    def _process_fast(self, conn: _Connection, data: bytes) -> Any:
        """Fast path for the group APIs (every Heartbeat), synchronous so that a request answered at once costs
        no coroutine: the same steps as :meth:`_process` without the generic header object and lookups. Returns
        the response frame, None to close the connection, ``(future, corr, head, enc, api, version)`` for a
        parked request, or ``_SLOW`` for anything unusual (header tagged fields, a malformed client id or body,
        an active fault), which :meth:`_process` then decodes again and reports."""
        prefix = data[:4]
        fast = self._fast.get(prefix)
        if fast is None:
            if prefix not in self._fast_keys:
                return _SLOW
            fast = self._fast_entry(prefix)
        if self.fault_active:
            return _SLOW
        api, version, header_v2, head, dec, enc = fast
        try:
            corr, n = _CORR_CLIENT_ID_LEN.unpack_from(data, 4)
            if n == -1:
                client_id, pos = "", 10
            elif 0 <= n <= len(data) - 10:
                client_id, pos = str(data[10:10 + n], "utf-8"), 10 + n
            else:
                return _SLOW
            if header_v2:
                if data[pos] != 0:  # header tagged fields
                    return _SLOW
                pos += 1
            body, _ = dec(data, pos)
        except Exception:  # noqa: BLE001 - the general path reports it
            return _SLOW
        try:
            resp = self._call_core(conn, body, version, client_id)
        except Exception:  # noqa: BLE001 - a handler bug: close this connection, keep serving the others
            log.exception("%s: %s v%d failed; closing", conn, api.name, version)
            return None
        if isinstance(resp, asyncio.Future):  # parked
            return (resp, corr, head, enc, api, version)
        if resp is None:
            return None
        return self._encode_fast(conn, resp, corr, head, enc, api, version)

    def _encode_fast(self, conn: _Connection, resp: Any, corr: int, head: bytes, enc: Any, api: Any,
                     version: int) -> bytes | None:
        try:
            out = bytearray(head)
            enc(resp, out)
            _SIZE_CORR.pack_into(out, 0, len(out) - 4, corr)
            return bytes(out)
        except Exception:  # noqa: BLE001
            log.exception("%s: cannot encode the %s v%d response; closing", conn, api.name, version)
            return None

    async def _finish_parked(self, conn: _Connection, fut: asyncio.Future, corr: int, head: bytes, enc: Any,
                             api: Any, version: int) -> bytes | None:
        resp = await fut
        if resp is None:
            log.info("%s: request abandoned by the coordinator (Kafka never answers it); closing", conn)
            return None
        return self._encode_fast(conn, resp, corr, head, enc, api, version)

    async def _process(self, conn: _Connection, data: bytes) -> bytes | None:
        """One request frame -> the response frame, or None to close the connection (the general path)."""
        try:
            header, pos = decode_request_header(data)
        except ProtocolError as e:
            self._bad(conn, f"unreadable request header: {e}")
            return None
        except Exception as e:  # noqa: BLE001
            self._bad(conn, f"unreadable request header: {e!r}")
            return None
        key, version, corr = header.api_key, header.api_version, header.correlation_id
        if key == CONTROL_API_KEY:  # the private fault-control API (broker/faults.py), loopback peers only
            return await self.control.handle(conn, header, data, pos)
        api = APIS.get(key)
        if api is None or key not in self._served:
            # SocketServer.parseRequestHeader: ApiKeys.forId throws / isApiEnabled is false ->
            # InvalidRequestException -> the Processor closes the channel.
            what = f"unknown API key {key}" if api is None else f"API {api.name} (key {key}) is not served"
            self._bad(conn, what)
            return None
        if not api.supports(version):
            if key == ApiKey.API_VERSIONS:
                # ApiKeys.isVersionEnabled accepts any ApiVersions version; RequestContext.parseRequest reads an
                # unknown one as v0 and KafkaApis answers UNSUPPORTED_VERSION in a v0 body (KIP-511).
                return unsupported_api_versions_frame(corr)
            self._bad(conn, f"{api.name} v{version} is not supported (supported: "
                            f"{api.min_version}-{api.max_version})")
            return None
        try:
            body, _ = api.request.decode_from(data, version, pos)
        except Exception as e:  # noqa: BLE001 - RequestContext.parseRequest: InvalidRequestException -> close
            self._bad(conn, f"unreadable {api.name} v{version} request: {e}")
            return None
        try:
            if self.fault_active and (resp := await self.faults.intercept(conn, key, version, body)) \
                    is not None:
                if resp is NO_RESPONSE:  # a dropped request: the connection is closed (broker/faults.py)
                    return None
            elif key == ApiKey.API_VERSIONS:
                resp = self._api_versions(body, version)
            elif key == ApiKey.METADATA:
                resp = self._metadata(body, version)
            elif key in DATA_APIS:
                resp = await self.plane.handle(conn, body, version, header)
                if resp is NO_RESPONSE:  # Produce acks=0: Kafka sends nothing back
                    return b""
                if resp is None:
                    return None
            elif key == ApiKey.FIND_COORDINATOR and version >= 1 and body.key_type == 1:
                resp = self._find_transaction_coordinator(body, version)
            else:
                resp = await self._core(conn, body, version, header.client_id or "")
                if resp is None:
                    return None
        except Exception:  # noqa: BLE001 - a handler bug: close this connection, keep serving the others
            log.exception("%s: %s v%d failed; closing", conn, api.name, version)
            return None
        try:
            return encode_response(key, version, corr, resp)
        except Exception:  # noqa: BLE001
            log.exception("%s: cannot encode the %s v%d response; closing", conn, api.name, version)
            return None

    async def _core(self, conn: _Connection, body: Any, version: int, client_id: str) -> Any | None:
        resp = self._call_core(conn, body, version, client_id)
        if isinstance(resp, asyncio.Future):  # parked
            resp = await resp
            if resp is None:
                log.info("%s: request abandoned by the coordinator (Kafka never answers it); closing", conn)
        return resp

    def _call_core(self, conn: _Connection, body: Any, version: int, client_id: str) -> Any:
        """Hand a request to the core: its response, None (abandoned, or the broker is stopped: close the
        connection), or a future resolved with either when the request was parked."""
        self._next_rid += 1
        rid = self._next_rid
        self._current = rid  # an answer to this id inside this very call is taken directly (no future)
        self._current_resp = _UNANSWERED
        try:
            out = self.svc.handle(conn.broker_id, body, RequestContext(rid, version, client_id, conn.client_host),
                                  self.now_ms())
        except BrokerStopped:
            self._current = None
            return None
        except Exception:
            self._current = None
            raise
        self._apply(out)
        self._current = None
        resp = self._current_resp
        if resp is _UNANSWERED:  # parked: answered by a later call (another member, a timer, a failover)
            fut = self._loop.create_future()
            self._pending[rid] = (conn, fut)
            return fut
        if resp is None:
            log.info("%s: request abandoned by the coordinator (Kafka never answers it); closing", conn)
        return resp

    # --- APIs answered by the network layer / KafkaApis ------------------------------------------------------

    def _api_versions(self, req: Any, version: int) -> ApiVersionsResponse:
        if version >= 3 and not (_SOFTWARE_RE.fullmatch(req.client_software_name or "")
                                 and _SOFTWARE_RE.fullmatch(req.client_software_version or "")):
            # KafkaApis.handleApiVersionsRequest: !apiVersionRequest.isValid -> INVALID_REQUEST, no api keys.
            return ApiVersionsResponse(error_code=int(E.INVALID_REQUEST), api_keys=[])
        return api_versions_response(keys=self._served)

    def _find_transaction_coordinator(self, req: Any, version: int) -> FindCoordinatorResponse:
        # KafkaApis.getCoordinator: the __transaction_state topic does not exist (kgroup has no transaction
        # coordinator) -> COORDINATOR_NOT_AVAILABLE, Node.noNode.
        e = E.COORDINATOR_NOT_AVAILABLE
        if version >= 4:
            return FindCoordinatorResponse(coordinators=[
                FindCoordinatorResponse.Coordinator(key=k, node_id=-1, host="", port=-1, error_code=int(e),
                                                    error_message=e.message) for k in req.coordinator_keys])
        return FindCoordinatorResponse(error_code=int(e), error_message=e.message, node_id=-1, host="", port=-1)

    def _metadata(self, req: Any, version: int) -> MetadataResponse:
        """KafkaApis.handleTopicMetadataRequest over the cluster model (KRaftMetadataCache.getTopicMetadata)."""
        cluster = self.cluster
        live = cluster.live_brokers()
        brokers = [MetadataResponse.Broker(node_id=b, host=cluster.brokers[b].host, port=cluster.brokers[b].port,
                                           rack=cluster.brokers[b].rack) for b in live]
        # KRaft brokers report a live broker as "controller" (clients cannot reach the quorum); take the lowest.
        controller = live[0] if live else -1
        all_topics = (req.topics is not None and len(req.topics) == 0) if version == 0 else req.topics is None
        allow_auto = req.allow_auto_topic_creation if version >= 4 else True
        topics: list[Any] = []
        if all_topics:
            for name in sorted(cluster.topics):
                topics.append(self._topic_metadata(name, version))
        else:
            seen: set[str] = set()
            zero = uuid.UUID(int=0)
            for t in req.topics:
                name, tid = t.name, getattr(t, "topic_id", None) or zero
                if name is None and version >= 12:  # lookup by topic id (KIP-516)
                    name = next((n for n in sorted(cluster.topics) if topic_id(n) == tid), None)
                    if name is None:
                        topics.append(MetadataResponse.Topic(error_code=int(E.UNKNOWN_TOPIC_ID), name=None,
                                                             topic_id=tid, partitions=[]))
                        continue
                elif name is None or (version < 12 and tid != zero):
                    # KafkaApis: "Topic IDs are not supported in requests for version 10/11" (InvalidRequest)
                    topics.append(self._topic_error(name or "", E.INVALID_REQUEST))
                    continue
                if name in seen:
                    continue
                seen.add(name)
                if name in cluster.topics:
                    topics.append(self._topic_metadata(name, version))
                elif not valid_topic_name(name):
                    topics.append(self._topic_error(name, E.INVALID_TOPIC_EXCEPTION))
                elif name == OFFSETS_TOPIC:
                    # not created yet (too few brokers for offsets.topic.replication.factor)
                    topics.append(self._topic_error(name, E.COORDINATOR_NOT_AVAILABLE, internal=True))
                elif allow_auto and self.settings.auto_create_topics:
                    # AutoTopicCreationManager: the topic is being created -> LEADER_NOT_AVAILABLE this time.
                    rf = min(self.settings.default_replication_factor, len(cluster.broker_ids()))
                    try:
                        cluster.create_topic(name, self.settings.num_partitions, rf)
                        log.info("auto-created topic %s (%d partitions, replication %d)", name,
                                 self.settings.num_partitions, rf)
                        topics.append(self._topic_error(name, E.LEADER_NOT_AVAILABLE))
                    except ClusterError as exc:
                        log.warning("cannot auto-create topic %s: %s", name, exc)
                        topics.append(self._topic_error(name, E.INVALID_REPLICATION_FACTOR))
                else:
                    topics.append(self._topic_error(name, E.UNKNOWN_TOPIC_OR_PARTITION))
        return MetadataResponse(throttle_time_ms=0, brokers=brokers, cluster_id=CLUSTER_ID, controller_id=controller,
                                topics=topics, error_code=0)

    def _topic_error(self, name: str, e: ErrorCode, internal: bool = False) -> Any:
        return MetadataResponse.Topic(error_code=int(e), name=name, topic_id=uuid.UUID(int=0),
                                      is_internal=internal, partitions=[])

    def _topic_metadata(self, name: str, version: int) -> Any:
        cluster = self.cluster
        error_unavailable_endpoints = version == 0  # KafkaApis: only v0 reports REPLICA_NOT_AVAILABLE
        parts = []
        for ps in cluster.partitions(name):
            offline = [r for r in ps.replicas if not cluster.is_alive(r)]
            replicas, isr = list(ps.replicas), list(ps.isr)
            if error_unavailable_endpoints:
                replicas = [r for r in replicas if cluster.is_alive(r)]
                isr = [r for r in isr if cluster.is_alive(r)]
            if ps.leader == NO_LEADER or not cluster.is_alive(ps.leader):
                err, leader = E.LEADER_NOT_AVAILABLE, -1
            elif error_unavailable_endpoints and (len(replicas) < len(ps.replicas) or len(isr) < len(ps.isr)):
                err, leader = E.REPLICA_NOT_AVAILABLE, ps.leader
            else:
                err, leader = E.NONE, ps.leader
            parts.append(MetadataResponse.Topic.Partition(
                error_code=int(err), partition_index=ps.partition, leader_id=leader, leader_epoch=ps.leader_epoch,
                replica_nodes=replicas, isr_nodes=isr, offline_replicas=offline))
        return MetadataResponse.Topic(error_code=0, name=name, topic_id=topic_id(name),
                                      is_internal=name == OFFSETS_TOPIC, partitions=parts)


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
