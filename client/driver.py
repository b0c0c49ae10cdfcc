"""The asyncio TCP driver of the sans-IO consumer core: a simulated Kafka consumer application.

:class:`AsyncConsumer` runs one :class:`~consumer.coordinator.ConsumerCoordinator` against real brokers
(``kgroup serve`` or anything speaking Kafka's wire protocol) over asyncio streams:

```python
c = AsyncConsumer("127.0.0.1:9092", {"group.id": "g", "session.timeout.ms": 6000}, processing_ms=20)
await c.start(["orders"])                     # bootstrap, ApiVersions, Metadata, then the application loop
await c.wait_until(lambda c: c.stable, timeout=10)
await c.commit()                              # commitSync of the consumed positions
await c.close()                               # LeaveGroup (dynamic members);  c.kill(): sockets dropped, no LeaveGroup
```

Theory of operation (Kafka's ``KafkaConsumer`` + ``ConsumerNetworkClient`` + ``NetworkClient``, with threads
replaced by tasks of one event loop):

* **Bootstrap.** ``bootstrap.servers`` become pseudo-nodes -1, -2, ... (as in ``NetworkClient``); the first
  Metadata response replaces them with the real brokers (node id, host, port).
* **Connections.** One connection per broker for requests to "any node" (FindCoordinator, Metadata), plus a
  separate *coordinator connection* per coordinator node (Kafka's ``Integer.MAX_VALUE - nodeId`` connection), so
  a parked JoinGroup never holds back a FindCoordinator. Every new connection negotiates ApiVersions first
  (KIP-511 fallback included, :meth:`WireClient.negotiate`); the core is given the intersection of the version
  ranges of every broker seen (the brokers of one cluster agree; Kafka picks per node). Requests queued while a
  connection is being set up are written in order once it is ready.
* **Requests by destination.** ``SendRequest.node_id is None`` goes to the least loaded node
  (``NetworkClient.leastLoadedNode``: a ready connection with the fewest requests in flight, else a node not in
  reconnect backoff); ``to_coordinator`` requests go to that node's coordinator connection.
* **Failures.** A connection that cannot be opened or breaks fails its requests: requests to "any node" get
  ``DISCONNECTED`` (``on_response``); a coordinator connection's loss is ``on_disconnect(node)``. The node then
  sits out a reconnect backoff (``reconnect.backoff.ms`` doubling to ``reconnect.backoff.max.ms``) and a metadata
  refresh is requested. Request timeouts are the core's (it fails them as disconnects and asks for the connection
  to be closed: ``CloseConnection``); the driver's own requests (ApiVersions, Metadata) are bounded by
  ``request.timeout.ms`` / ``socket.connection.setup.timeout.ms``.
* **Threads as tasks.** The *application task* calls ``poll`` and then "processes" the returned partitions for
  ``processing_ms`` (positions advance by ``records_per_poll`` per partition at each poll, as Kafka moves the
  position when poll returns records); with nothing to process it waits for progress, at most
  ``poll_timeout_ms``. The *heartbeat task* calls ``tick`` at ``next_deadline_ms()``. A *metadata task* refreshes
  the topics the core needs (``metadata_topics()``) every ``metadata.max.age.ms`` and on request. The clock is the
  event loop's (``loop.time()``) and nothing else.
* **Callbacks.** Every core output can be forwarded to user callables: ``on_assigned/on_revoked/on_lost`` for
  the rebalance listener outputs, ``on_event`` for every output. A plain function is called at once, in the
  order the core emitted the outputs (so a revocation is seen before the LeaveGroup goes out); a coroutine
  function is awaited, in order, by one dispatcher task (and so runs a little later). An in-process ``listener`` object is passed to the core and called synchronously (it may commit).
  ``on_wire(direction, node, conn_kind, api_key, version, body)`` (sync) sees every request and response.
* **Protocols.** ``group.protocol`` (``classic``, the default, or ``consumer``: KIP-848) is a core setting: the
  same driver runs either membership; Metadata v10+ topic ids are handed to the core with the partition counts
  (a KIP-848 assignment names topics by id).
* **close()** is ``KafkaConsumer.close``: the application task stops, the core commits (auto-commit), runs the
  revocation callbacks and sends LeaveGroup (dynamic members); done at its ``Closed`` output or the timeout.
  **kill()** is a crash: tasks cancelled, sockets aborted, nothing sent.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional

import protocol.messages  # noqa: F401  (registers every API)
from protocol.api import APIS, ApiKey
from protocol.messages import MetadataRequest

from consumer import outputs as out
from consumer.coordinator import DISCONNECTED, ConsumerCoordinator, MemberState
from client.wire import ConnectionClosed, KafkaResponseError, WireClient

log = logging.getLogger("kgroup.consumer")

#: Settings of the network layer (Kafka's names and defaults) that the core does not take.
DRIVER_DEFAULTS: dict[str, Any] = {
    "bootstrap.servers": None,
    "metadata.max.age.ms": 300_000,
    "reconnect.backoff.ms": 50,
    "reconnect.backoff.max.ms": 1_000,
    "socket.connection.setup.timeout.ms": 10_000,
}

Callback = Callable[..., Any]


def parse_bootstrap(servers: str | Iterable[str] | Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    """``"h1:p1,h2:p2"`` (or a list of ``"h:p"`` / ``(h, p)``) -> ``[(h, p), ...]``."""
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    result = []
    for item in items:
        if isinstance(item, tuple):
            result.append((str(item[0]), int(item[1])))
            continue
        item = item.strip()
        if not item:
            continue
        host, _, port = item.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"bootstrap.servers: invalid address {item!r} (expected host:port)")
        result.append((host.strip("[]"), int(port)))
    if not result:
        raise ValueError("bootstrap.servers: no address given")
    return result


@dataclass
class _Conn:
    """One connection: to a node for 'any node' requests (kind 'node') or to the coordinator (kind 'coord')."""

    kind: str
    node_id: int
    host: str
    port: int
    client: Optional[WireClient] = None
    ready: bool = False
    dead: bool = False
    closed_by_us: bool = False
    queued: list = field(default_factory=list)      # SendRequests waiting for the connection
    inflight: dict = field(default_factory=dict)    # handle -> SendRequest (written, unanswered)
    task: Optional[asyncio.Task] = None
    ready_future: Optional[asyncio.Future] = None

    @property
    def load(self) -> int:
        return len(self.queued) + len(self.inflight)


class AsyncConsumer:
    """A simulated consumer application running the consumer core over TCP (see the module docstring)."""

    def __init__(self, bootstrap: str | Iterable[Any] | None, config: Mapping[str, Any], *,
                 name: Optional[str] = None, processing_ms: float = 10.0, records_per_poll: int = 1,
                 poll_timeout_ms: float = 100.0, listener: Any = None, on_assigned: Optional[Callback] = None,
                 on_revoked: Optional[Callback] = None, on_lost: Optional[Callback] = None,
                 on_event: Optional[Callback] = None, on_wire: Optional[Callable[..., None]] = None,
                 log_start_offsets: Optional[Mapping] = None, log_end_offsets: Optional[Mapping] = None) -> None:
        cfg = dict(config)
        self.driver_config = {k: cfg.pop(k, v) for k, v in DRIVER_DEFAULTS.items()}
        bootstrap = bootstrap if bootstrap is not None else self.driver_config["bootstrap.servers"]
        if bootstrap is None:
            raise ValueError("bootstrap.servers is required")
        self.bootstrap = parse_bootstrap(bootstrap)
        self.core_config = cfg
        self.name = name or cfg.get("client.id") or "consumer"
        self.processing_ms = processing_ms
        self.records_per_poll = records_per_poll
        self.poll_timeout_ms = poll_timeout_ms
        self.listener = listener
        self.on_assigned, self.on_revoked, self.on_lost = on_assigned, on_revoked, on_lost
        self.on_event = on_event
        self.on_wire = on_wire
        self._log_start, self._log_end = log_start_offsets, log_end_offsets
        self.core: Optional[ConsumerCoordinator] = None

        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._nodes: dict[int, tuple[str, int]] = {-(i + 1): hp for i, hp in enumerate(self.bootstrap)}
        self._conns: dict[tuple[str, int], _Conn] = {}
        self._versions: dict[int, dict[int, tuple[int, int]]] = {}
        self._backoff_until: dict[int, float] = {}
        self._failures: dict[int, int] = {}
        self._partitions: dict[str, int] = {}
        self._topic_ids: dict[str, Any] = {}
        self._metadata_topics: tuple[str, ...] = ()
        self._tasks: list[asyncio.Task] = []
        self._events: asyncio.Queue = asyncio.Queue()
        self._wake_app = asyncio.Event()
        self._wake_bg = asyncio.Event()
        self._wake_metadata = asyncio.Event()
        self._changed = asyncio.Event()
        self._commit_waiters: dict[int, asyncio.Future] = {}
        self._closed_event = asyncio.Event()
        self.error: Optional[BaseException] = None
        self.polls = 0
        self.committed_seen: dict = {}    # partition -> committed offset found by OffsetFetch (PositionsInitialized)
        self.state_log: list[tuple[int, str]] = []
        self.assigned_generation = -1     # generation of the last onPartitionsAssigned (the join completed)
        self.started = self.stopping = self.killed = self.closed = False

    # --- public API ------------------------------------------------------------------------------------------

    def now_ms(self) -> int:
        return int((self._loop or asyncio.get_running_loop()).time() * 1000)

    async def start(self, topics: Iterable[str], *, timeout: float = 10.0) -> "AsyncConsumer":
        """Bootstrap (ApiVersions + Metadata), subscribe, and start the application and heartbeat tasks."""
        if self.started:
            raise RuntimeError("already started")
        self.started = True
        self._loop = asyncio.get_running_loop()
        self.core = ConsumerCoordinator(self.core_config, listener=self.listener, now_ms=self.now_ms())
        if self._log_start is not None or self._log_end is not None:
            self.core.set_log_offsets(start=self._log_start, end=self._log_end)
        self.core.subscribe(list(topics), self.now_ms())
        self._tasks.append(asyncio.create_task(self._dispatch_events(), name=f"{self.name}-events"))
        try:
            await asyncio.wait_for(self._refresh_metadata_until_ok(), timeout)
        except BaseException:
            self.killed = True
            await self._shutdown()
            raise
        self._tasks += [asyncio.create_task(self._app_loop(), name=f"{self.name}-app"),
                        asyncio.create_task(self._heartbeat_loop(), name=f"{self.name}-heartbeat"),
                        asyncio.create_task(self._metadata_loop(), name=f"{self.name}-metadata")]
        return self

    async def close(self, timeout: float = 10.0) -> None:
        """``KafkaConsumer.close``: commit (auto-commit), revocation callbacks, LeaveGroup; bounded by ``timeout``."""
        if self.closed or self.killed or self.core is None:
            return
        self.stopping = True
        await self._cancel(self._tasks_named("app"))
        core = self.core
        if not core.closing and not core.closed:
            core.close(self.now_ms(), int(timeout * 1000))
            self._pump()
        try:
            await asyncio.wait_for(self._closed_event.wait(), timeout)
        except asyncio.TimeoutError:
            log.warning("close timed out: %s", self.describe())
        try:  # let the callbacks of the last outputs run
            await asyncio.wait_for(self._events.join(), timeout)
        except asyncio.TimeoutError:
            pass
        await self._shutdown()
        self.closed = True
        self._notify()

    async def kill(self) -> None:
        """A crash: every task cancelled, every socket aborted; no LeaveGroup, no commit."""
        if self.killed or self.closed:
            return
        self.killed = self.stopping = True
        await self._shutdown()
        self._notify()

    async def commit(self, offsets: Optional[Mapping] = None, *, timeout: float = 10.0) -> Mapping:
        """``commitSync``: commit ``offsets`` (default: the consumed positions); returns them or raises."""
        assert self.core is not None
        cid = self.core.commit(offsets, now_ms=self.now_ms(), sync=True)
        fut = self._commit_waiters[cid] = asyncio.get_running_loop().create_future()
        self._pump()
        done: out.OffsetCommitCompleted = await asyncio.wait_for(fut, timeout)
        if done.exception is not None:
            raise done.exception
        return done.offsets

    async def wait_until(self, predicate: Callable[["AsyncConsumer"], bool], timeout: float) -> None:
        """Wait (at most ``timeout`` s) until ``predicate(self)`` holds; re-checked after every step of the core."""
        async def waiter() -> None:
            while not predicate(self):
                if self.error is not None:
                    raise self.error
                self._changed.clear()
                await self._changed.wait()
        await asyncio.wait_for(waiter(), timeout)

    def describe(self) -> str:
        """One line of state for logs and test failures."""
        c = self.core
        if c is None:
            return f"{self.name}: not started"
        inflight = ",".join(f"{APIS[k].name}" for k in c.in_flight.values())
        return (f"{self.name}: state={c.state.value} generation={c.generation.generation_id} "
                f"member={c.member_id or '-'} rejoin_needed={c.rejoin_needed} assigned_generation="
                f"{self.assigned_generation} assignment={len(c.assignment)} positions={len(c.positions)} "
                f"coordinator={c.coordinator.node_id if c.coordinator else None} in_flight=[{inflight}] "
                f"closing={c.closing} closed={c.closed} polls={self.polls} error={self.error!r} "
                f"conns={sorted(self._conns)}")

    # --- state (read-only views of the core) -----------------------------------------------------------------

    @property
    def state(self) -> Any:
        """The core's member state: ``consumer._state.MemberState`` (classic) or ``ConsumerMemberState``."""
        return self.core.state if self.core is not None else None

    @property
    def stable(self) -> bool:
        """In a stable generation with its assignment applied (onPartitionsAssigned ran for this generation), no
        rejoin pending, and a position for every assigned partition (``group.protocol=consumer``: STABLE, i.e. the
        target assignment reconciled and acknowledged, and a position for every assigned partition)."""
        c = self.core
        if c is None or c.closing or not all(tp in c.positions for tp in c.assignment):
            return False
        if c.group_protocol == "consumer":
            # KIP-848: STABLE means the member owns its target assignment and acknowledged it; the epoch may move
            # on without a new assignment, so no generation is compared
            return c.state.value == "STABLE"
        return (c.state == MemberState.STABLE and not c.rejoin_needed
                and self.assigned_generation == c.generation.generation_id)

    @property
    def member_id(self) -> str:
        return self.core.member_id if self.core is not None else ""

    @property
    def generation(self) -> int:
        """The generation (classic) or the member epoch (``group.protocol=consumer``)."""
        return self.core.generation.generation_id if self.core is not None else -1

    @property
    def assignment(self) -> tuple:
        return self.core.assignment if self.core is not None else ()

    @property
    def positions(self) -> dict:
        return dict(self.core.positions) if self.core is not None else {}

    @property
    def coordinator(self) -> Optional[out.Node]:
        return self.core.coordinator if self.core is not None else None

    # --- plumbing: outputs -----------------------------------------------------------------------------------

    def _notify(self) -> None:
        self._changed.set()

    def _pump(self, source: str = "") -> None:
        """Carry out everything the core asked for since the last call."""
        core = self.core
        if core is None:
            return
        for o in core.drain():
            if isinstance(o, out.SendRequest):
                self._send(o)
            elif isinstance(o, out.CloseConnection):
                self._close_conn(("coord", o.node_id), o.reason)
            else:
                if isinstance(o, out.OffsetCommitCompleted):
                    fut = self._commit_waiters.pop(o.commit_id, None)
                    if fut is not None and not fut.done():
                        fut.set_result(o)
                elif isinstance(o, out.PositionsInitialized):
                    self.committed_seen.update(o.committed)
                elif isinstance(o, out.PartitionsAssigned):  # onJoinComplete always emits it (maybe empty)
                    self.assigned_generation = core.generation.generation_id
                elif isinstance(o, out.StateChanged):
                    self.state_log.append((self.now_ms(), o.new))
                elif isinstance(o, out.Closed):
                    self._closed_event.set()
                self._queue_callbacks(o)
        if tuple(core.metadata_topics()) != self._metadata_topics:
            self._wake_metadata.set()
        if source != "bg":
            self._wake_bg.set()
        if source != "app":
            self._wake_app.set()
        self._notify()

    def _queue_callbacks(self, o: Any) -> None:
        fns = []
        specific = {out.PartitionsAssigned: self.on_assigned, out.PartitionsRevoked: self.on_revoked,
                    out.PartitionsLost: self.on_lost}.get(type(o))
        if specific is not None:
            fns.append((specific, o.partitions))
        if self.on_event is not None:
            fns.append((self.on_event, o))
        for fn, arg in fns:
            if inspect.iscoroutinefunction(fn):
                self._events.put_nowait((fn, arg))
                continue
            try:
                r = fn(arg)
            except Exception:  # noqa: BLE001 - a user callback must not stop the consumer
                log.exception("%s: callback %r failed", self.name, fn)
                continue
            if inspect.isawaitable(r):
                self._events.put_nowait((lambda _a, r=r: r, None))

    async def _dispatch_events(self) -> None:
        while True:
            fn, arg = await self._events.get()
            try:
                r = fn(arg)
                if inspect.isawaitable(r):
                    await r
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - a user callback must not stop the consumer
                log.exception("%s: callback %r failed", self.name, fn)
            finally:
                self._events.task_done()

    # --- plumbing: connections -------------------------------------------------------------------------------

    def _address(self, kind: str, node_id: int) -> Optional[tuple[str, int]]:
        c = self.core.coordinator if self.core is not None else None
        if kind == "coord" and c is not None and c.node_id == node_id:
            return c.host, c.port
        return self._nodes.get(node_id)

    def _least_loaded_node(self) -> Optional[int]:
        """``NetworkClient.leastLoadedNode``: a ready connection with the fewest in flight, else a node that is
        not in reconnect backoff, else the one whose backoff ends first."""
        now = self._loop.time()
        nodes = sorted(self._nodes)
        ready = [(self._conns[("node", n)].load, i, n) for i, n in enumerate(nodes)
                 if ("node", n) in self._conns and self._conns[("node", n)].ready]
        if ready:
            return min(ready)[2]
        idle = [n for n in nodes if self._backoff_until.get(n, 0) <= now]
        if idle:
            connecting = [n for n in idle if ("node", n) in self._conns]
            return (connecting or idle)[0]
        return min(nodes, key=lambda n: self._backoff_until.get(n, 0)) if nodes else None

    def _conn(self, kind: str, node_id: int) -> Optional[_Conn]:
        key = (kind, node_id)
        conn = self._conns.get(key)
        if conn is not None:
            return conn
        addr = self._address(kind, node_id)
        if addr is None:
            return None
        conn = _Conn(kind, node_id, addr[0], addr[1])
        conn.ready_future = self._loop.create_future()
        self._conns[key] = conn
        conn.task = asyncio.create_task(self._open(conn), name=f"{self.name}-{kind}-{node_id}")
        return conn

    async def _open(self, conn: _Conn) -> None:
        client_id = self.core.client_id if self.core is not None else "kgroup-consumer"
        timeout = self.driver_config["socket.connection.setup.timeout.ms"] / 1000
        try:
            client = await WireClient.connect(conn.host, conn.port, client_id=client_id, timeout=timeout)
        except (OSError, asyncio.TimeoutError) as exc:
            self._conn_lost(conn, f"connect failed: {exc!r}")
            return
        conn.client = client
        if conn.dead:  # closed while connecting
            await client.close()
            return
        client._read_task.add_done_callback(lambda _t, conn=conn: self._conn_lost(conn, "connection closed"))
        try:
            versions = await client.negotiate(timeout=self._request_timeout())
        except (ConnectionClosed, KafkaResponseError, OSError, asyncio.TimeoutError) as exc:
            if not conn.dead:
                client.writer.transport.abort()
                self._conn_lost(conn, f"ApiVersions failed: {exc!r}")
            return
        if conn.dead:
            return
        self._versions[conn.node_id] = versions
        self._set_core_versions()
        self._failures.pop(conn.node_id, None)
        conn.ready = True
        queued, conn.queued = conn.queued, []
        for req in queued:
            self._write(conn, req)
        if not conn.ready_future.done():
            conn.ready_future.set_result(conn)

    def _set_core_versions(self) -> None:
        merged: dict[int, tuple[int, int]] = {}
        for i, versions in enumerate(self._versions.values()):
            if i == 0:
                merged = dict(versions)
                continue
            merged = {k: (max(lo, versions[k][0]), min(hi, versions[k][1]))
                      for k, (lo, hi) in merged.items() if k in versions}
        self.core.set_api_versions(merged)

    def _request_timeout(self) -> float:
        return self.core.config.request_timeout_ms / 1000 if self.core is not None else 30.0

    def _send(self, req: out.SendRequest) -> None:
        if req.to_coordinator:
            conn = self._conn("coord", req.node_id) if req.node_id is not None else None
        else:
            node = req.node_id if req.node_id is not None else self._least_loaded_node()
            conn = self._conn("node", node) if node is not None else None
        if conn is None:  # no address for that node: a failure like any disconnect
            self._loop.call_soon(self._fail_request, req, "no address")
            return
        if conn.ready:
            self._write(conn, req)
        else:
            conn.queued.append(req)

    def _write(self, conn: _Conn, req: out.SendRequest) -> None:
        try:
            fut = conn.client.send(req.body, req.api_version, api_key=req.api_key)
        except ConnectionClosed:
            conn.queued.append(req)  # failed by _conn_lost, which is on its way
            return
        conn.inflight[req.handle] = req
        if self.on_wire is not None:
            self.on_wire("send", conn.node_id, conn.kind, req.api_key, req.api_version, req.body)
        fut.add_done_callback(lambda f, conn=conn, req=req: self._on_reply(conn, req, f))

    def _on_reply(self, conn: _Conn, req: out.SendRequest, fut: asyncio.Future) -> None:
        if fut.cancelled() or fut.exception() is not None:
            return  # the connection broke: _conn_lost fails everything in flight on it
        conn.inflight.pop(req.handle, None)
        if conn.closed_by_us or self.core is None or self.killed:
            return
        resp = fut.result()
        if self.on_wire is not None:
            self.on_wire("recv", conn.node_id, conn.kind, req.api_key, req.api_version, resp)
        self.core.on_response(req.handle, resp, self.now_ms())
        self._pump()

    def _fail_request(self, req: out.SendRequest, why: str) -> None:
        if self.core is None or self.killed:
            return
        log.debug("%s: request %d (%s) failed: %s", self.name, req.handle, APIS[req.api_key].name, why)
        self.core.on_response(req.handle, DISCONNECTED, self.now_ms())
        self._pump()

    def _conn_lost(self, conn: _Conn, why: str) -> None:
        if conn.dead:
            return
        conn.dead = True
        key = (conn.kind, conn.node_id)
        if self._conns.get(key) is conn:
            del self._conns[key]
        if conn.ready_future is not None and not conn.ready_future.done():
            conn.ready_future.set_exception(ConnectionClosed(why))
            conn.ready_future.exception()  # retrieved: nobody else may be waiting
        if conn.client is not None:
            conn.client.writer.close()
        if conn.closed_by_us or self.core is None or self.killed:
            return
        log.info("%s: %s connection to node %d lost: %s", self.name, conn.kind, conn.node_id, why)
        n = self._failures.get(conn.node_id, 0)
        self._failures[conn.node_id] = n + 1
        backoff = min(self.driver_config["reconnect.backoff.ms"] * (2 ** n),
                      self.driver_config["reconnect.backoff.max.ms"])
        self._backoff_until[conn.node_id] = self._loop.time() + backoff / 1000
        self._wake_metadata.set()
        failed = list(conn.inflight.values()) + conn.queued
        conn.inflight, conn.queued = {}, []
        now = self.now_ms()
        if conn.kind == "coord":
            self.core.on_disconnect(conn.node_id, now)
        for req in failed:
            self.core.on_response(req.handle, DISCONNECTED, now)  # ignored if the core already failed it
        self._pump()

    def _close_conn(self, key: tuple[str, int], reason: str) -> None:
        conn = self._conns.pop(key, None)
        if conn is None:
            return
        conn.closed_by_us = True
        conn.dead = True
        if conn.client is not None:
            conn.client.writer.transport.abort()
            conn.client.writer.close()
        if conn.ready_future is not None and not conn.ready_future.done():
            conn.ready_future.cancel()
        log.debug("%s: closed %s connection to node %d: %s", self.name, key[0], key[1], reason)

    # --- metadata ----------------------------------------------------------------------------------------------

    async def _refresh_metadata(self) -> bool:
        """One Metadata request to the least loaded node; True if it was answered."""
        node = self._least_loaded_node()
        if node is None:
            return False
        conn = self._conn("node", node)
        if conn is None:
            return False
        try:
            await asyncio.wait_for(asyncio.shield(conn.ready_future), self._request_timeout())
        except (ConnectionClosed, asyncio.CancelledError, asyncio.TimeoutError, OSError):
            if asyncio.current_task().cancelling():
                raise
            return False
        topics = self.core.metadata_topics()
        broker = self._versions.get(node, {}).get(ApiKey.METADATA, (0, APIS[ApiKey.METADATA].max_version))
        version = min(APIS[ApiKey.METADATA].max_version, broker[1])
        if version == 0:
            req = MetadataRequest(topics=[MetadataRequest.Topic(name=t) for t in topics])
        else:
            req = MetadataRequest(topics=[MetadataRequest.Topic(name=t) for t in topics],
                                  allow_auto_topic_creation=False)
        try:
            if self.on_wire is not None:
                self.on_wire("send", node, "node", ApiKey.METADATA, version, req)
            resp = await conn.client.call(req, version, timeout=self._request_timeout())
        except (ConnectionClosed, KafkaResponseError, OSError, asyncio.TimeoutError):
            return False
        if self.on_wire is not None:
            self.on_wire("recv", node, "node", ApiKey.METADATA, version, resp)
        if self.core is None or self.killed:
            return False
        self._metadata_topics = tuple(topics)
        if resp.brokers:
            self._nodes = {b.node_id: (b.host, b.port) for b in resp.brokers}
            for key in [k for k in self._conns if k[0] == "node" and k[1] < 0]:
                self._close_conn(key, "bootstrap connection replaced by metadata")
        for t in resp.topics:
            if t.error_code == 0 and t.name:
                self._partitions[t.name] = len(t.partitions)
                tid = getattr(t, "topic_id", None)  # Metadata v10+: KIP-848 assignments name topics by id
                if tid is not None and tid.int != 0:
                    self._topic_ids[t.name] = tid
        self.core.set_metadata({t: n for t, n in self._partitions.items()}, dict(self._topic_ids))
        self._pump("metadata")
        return True

    async def _refresh_metadata_until_ok(self) -> None:
        while not await self._refresh_metadata():
            await asyncio.sleep(self.driver_config["reconnect.backoff.ms"] / 1000)

    async def _metadata_loop(self) -> None:
        max_age = self.driver_config["metadata.max.age.ms"] / 1000
        while True:
            try:
                await asyncio.wait_for(self._wake_metadata.wait(), max_age)
            except asyncio.TimeoutError:
                pass
            self._wake_metadata.clear()
            if not await self._refresh_metadata():
                await asyncio.sleep(self.driver_config["reconnect.backoff.ms"] / 1000)
                self._wake_metadata.set()

    # --- the application and the heartbeat "thread" -----------------------------------------------------------

    async def _app_loop(self) -> None:
        core = self.core
        while not self.stopping:
            self._wake_app.clear()
            try:
                result = core.poll(self.now_ms())
            except Exception as exc:  # noqa: BLE001 - Kafka's poll throws: the application stops
                log.warning("%s: poll failed: %r", self.name, exc)
                self.error = exc
                self._pump("app")
                return
            self.polls += 1
            for tp in result.fetchable:  # poll returned records: the position moves past them
                core.advance(tp, self.records_per_poll)
            self._pump("app")
            if result.fetchable:
                await asyncio.sleep(max(0.0, self.processing_ms) / 1000)  # the application processes them
                continue
            wait = self.poll_timeout_ms / 1000
            d = core.next_poll_deadline_ms()
            if d is not None:
                wait = min(wait, max(0, d - self.now_ms()) / 1000)
            try:
                await asyncio.wait_for(self._wake_app.wait(), wait)
            except asyncio.TimeoutError:
                pass

    async def _heartbeat_loop(self) -> None:
        core = self.core
        while True:
            self._wake_bg.clear()
            d = core.next_deadline_ms()
            if d is None:
                await self._wake_bg.wait()
            else:
                delay = (d - self.now_ms()) / 1000
                if delay > 0:
                    try:
                        await asyncio.wait_for(self._wake_bg.wait(), delay + 0.001)
                        continue  # woken: recompute the deadline
                    except asyncio.TimeoutError:
                        pass
            try:
                core.tick(self.now_ms())
            except Exception as exc:  # noqa: BLE001 - a core bug: stop the consumer visibly, not silently
                log.exception("%s: tick failed", self.name)
                self.error = exc
                self._notify()
                return
            self._pump("bg")

    # --- shutdown ----------------------------------------------------------------------------------------------

    def _tasks_named(self, suffix: str) -> list[asyncio.Task]:
        return [t for t in self._tasks if t.get_name().endswith("-" + suffix)]

    async def _cancel(self, tasks: list[asyncio.Task]) -> None:
        for t in tasks:
            t.cancel()
        for t in tasks:
            try:
                await asyncio.wait_for(t, 5.0)
            except (asyncio.CancelledError, asyncio.TimeoutError):
                pass
            except Exception:  # noqa: BLE001
                log.exception("%s: task %s failed", self.name, t.get_name())
            if t in self._tasks:
                self._tasks.remove(t)

    async def _shutdown(self) -> None:
        current = asyncio.current_task()
        await self._cancel([t for t in self._tasks if t is not current])
        conns = list(self._conns.values())
        for conn in conns:
            self._close_conn((conn.kind, conn.node_id), "consumer stopped")
        for conn in conns:
            if conn.task is not None and not conn.task.done():
                conn.task.cancel()
            if conn.client is not None:
                await conn.client.close()
        for fut in self._commit_waiters.values():
            if not fut.done():
                fut.cancel()
