"""The socket layer of ``kgroup serve``: listeners, connections, framing and the limits that keep one process
serving whatever its peers do (Kafka's ``SocketServer``: an ``Acceptor`` per listener, the ``Processor`` that owns
each channel, ``ConnectionQuotas``, the request ``MemoryPool``). asyncio, stdlib only.

Theory of operation
-------------------
* **Listeners** (:class:`SocketServer`). Each broker listens on its own non-blocking socket; accepting is ours, not
  ``asyncio.start_server``'s, so that it can stop and resume (Kafka's ``Acceptor``): a listener stops accepting
  while its broker is at ``max.connections`` or the process is at its connection budget (below), and new
  connections wait in the listen backlog, as on Kafka. Before stopping, the connection idle the longest (no
  request in flight, no partial frame, idle for at least a second) is closed to make room -- what Kafka does for
  its inter-broker listener (KIP-402) and what keeps leaked idle connections from starving new clients forever.
* **File descriptors.** The process raises its soft ``RLIMIT_NOFILE`` to the hard limit (as the JVM does) and
  allows ``limit - reserve`` connections in total, the reserve covering the log files, listeners and a margin.
  If ``accept()`` still fails with ``EMFILE``/``ENFILE``, the listener pauses and retries after a short delay
  (after closing the connection idle the longest, if any); one WARNING per interval says so, with a count --
  never a traceback per attempt.
* **Connections** (:class:`Connection`, an ``asyncio.BufferedProtocol``, Kafka's ``KafkaChannel`` on a ``Processor``).
  Bytes are framed here: the 4-byte size is checked *before* anything else is buffered (a negative size or one
  above ``socket.request.max.bytes`` closes the connection, ``NetworkReceive``'s ``InvalidReceiveException``);
  a complete frame goes to the handler (``KGroupServer._process``), which answers with bytes, ``None`` (close) or
  a coroutine (the request must wait: parked, a delayed fetch, a delay rule, the control channel).
* **One request at a time** (``Processor`` mutes a channel after a complete receive and unmutes it once the
  response is *sent*): while a request waits for its answer, or while its response is not completely written to
  the socket (the client does not read), no further frame is processed. The answers decided in one turn of the
  event loop are written together at its end (:meth:`SocketServer.flush`, as a ``Processor`` sends the responses
  of one poll): the connection stays muted until then. The connection keeps reading only up to
  ``connection_buffer_bytes`` (then reading pauses: the kernel's buffers and TCP flow control hold the rest), so a
  client that pipelines without reading its responses cannot grow the server's memory. Reading continues below
  that cap so that a client that closes its connection while its request is parked is noticed at once: the
  socket is closed and the parked request dropped (Kafka drops the response of a closed channel).
* **Partial frames** (``queued.max.request.bytes``, Kafka's ``MemoryPool``): a frame that has not arrived
  completely reserves its announced size from one pool shared by every connection; when the pool cannot grant
  it, the connection stops reading (Kafka mutes it) until memory is released. A frame whose first byte arrived
  more than ``request_read_timeout_ms`` ago and is still incomplete (a slow sender: one byte a second) closes
  the connection.
* **Idle connections** (``connections.max.idle.ms``, Kafka's ``Selector`` idle expiry): a connection with no
  byte read or written for that long, and no request the server is still answering, is closed.
* **Bad input is logged, rate-limited** (:class:`RateLimitedLog`): one WARNING line per kind of problem per
  interval, and at the end of the interval one line with the count of the others, so a fuzzer or a broken client
  cannot flood the log.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import struct
import time
import traceback
from collections import deque
from typing import Any, Callable

log = logging.getLogger("kgroup.server")

#: a connection must have been idle this long to be closed to make room for a new one
EVICT_MIN_IDLE_S = 1.0
#: how long a listener waits before trying ``accept()`` again after EMFILE/ENFILE with nothing to close
ACCEPT_RETRY_S = 0.25
#: how many connections one readiness event accepts at most (then the loop serves the others)
ACCEPT_BATCH = 64
#: file descriptors kept out of the connection budget (listeners, log files, the loop, margin)
FD_RESERVE = 64
_FD_ERRNOS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
#: answers written directly between two probes of how many answers a turn of the loop brings
BATCH_PROBE_EVERY = 64
#: answers in the rest of a probed turn that turn batching on
BATCH_ON_AT = 2
#: consecutive single-answer flushes that turn batching off
BATCH_OFF_AFTER = 8


class RateLimitedLog:
    """At most one line per kind per ``interval_s``; the occurrences in between are counted and reported in one
    line when the interval is over (:meth:`flush`, called by the server's periodic tick) or with the next line of
    that kind."""

    def __init__(self, logger: logging.Logger, interval_s: float, clock: Callable[[], float] = time.monotonic):
        self.logger = logger
        self.interval_s = interval_s
        self.clock = clock
        self._windows: dict[str, list] = {}  # kind -> [window start, suppressed count, level]

    def log(self, level: int, kind: str, msg: str, *args: Any, exc_info: Any = None) -> None:
        if not self.logger.isEnabledFor(level):
            return
        now = self.clock()
        w = self._windows.get(kind)
        if w is not None and now - w[0] < self.interval_s:
            w[1] += 1
            return
        if w is not None and w[1]:
            self._summary(kind, w, now)
        self._windows[kind] = [now, 0, level]
        self.logger.log(level, msg, *args, exc_info=exc_info)

    def warning(self, kind: str, msg: str, *args: Any) -> None:
        self.log(logging.WARNING, kind, msg, *args)

    def flush(self) -> None:
        """Report the counts of the windows that are over (and forget them)."""
        now = self.clock()
        for kind, w in list(self._windows.items()):
            if now - w[0] >= self.interval_s:
                if w[1]:
                    self._summary(kind, w, now)
                del self._windows[kind]

    def _summary(self, kind: str, w: list, now: float) -> None:
        self.logger.log(w[2], "%d more like the last '%s' message in the last %.0f s (logged once per %g s)",
                        w[1], kind, now - w[0], self.interval_s)
        w[1] = 0


class MemoryPool:
    """Kafka's ``SimpleMemoryPool`` for request bytes (``queued.max.request.bytes``): partial frames reserve their
    size; a reservation that does not fit waits (FIFO) until enough is released. Capacity <= 0: unbounded."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.used = 0
        self.waiters: deque[Connection] = deque()

    def try_reserve(self, n: int) -> bool:
        if self.capacity <= 0:
            self.used += n
            return True
        if self.waiters or self.used + n > self.capacity:  # first come, first served
            return False
        self.used += n
        return True

    def forget(self, conn: "Connection") -> None:
        try:
            self.waiters.remove(conn)
        except ValueError:
            pass

    def release(self, n: int) -> None:
        self.used -= n
        while self.waiters:
            conn = self.waiters[0]
            need = conn.frame_size
            if self.capacity > 0 and self.used + need > self.capacity:
                return
            self.waiters.popleft()
            self.used += need
            conn.memory_granted(need)


_SIZE = struct.Struct(">i")
#: bytes one read may bring (asyncio's own ``max_size`` for socket reads)
READ_BUFFER_BYTES = 256 * 1024


class Connection(asyncio.BufferedProtocol):
    """One client connection of one broker (see the module docstring).

    A ``BufferedProtocol``: the transport reads into the one read buffer of the process (``SocketServer.rview``,
    used by one read at a time) and the bytes read are copied out at once. ``asyncio.Protocol`` would have the
    transport allocate a fresh ``max_size`` (256 KiB) bytes object for every read and shrink it to the 20 bytes
    of a heartbeat: on this machine that costs more than the whole request path of a heartbeat."""

    __slots__ = ("net", "conn_id", "broker_id", "transport", "peer", "client_host", "buf", "in_flight",
                 "send_blocked", "paused", "closing", "last_active", "partial_since", "frame_size", "reserved",
                 "mem_wait", "task", "pending_rid")

    def __init__(self, net: "SocketServer", conn_id: int, broker_id: int, peer: str) -> None:
        self.net = net
        self.conn_id = conn_id
        self.broker_id = broker_id
        self.transport: asyncio.Transport | None = None
        self.peer = peer
        self.client_host = "/" + peer.rsplit(":", 1)[0]  # Kafka's clientHost: InetAddress.toString() -> "/ip"
        self.buf = bytearray()
        self.in_flight = False      # a request is being answered (the channel is muted)
        self.send_blocked = False   # a response is not completely written yet (muted until it is)
        self.paused = False         # reading is paused (buffer cap while muted, or waiting for pool memory)
        self.closing = False
        self.last_active = net.now()
        self.partial_since: float | None = None  # when the first byte of the incomplete frame in buf arrived
        self.frame_size = 0         # size of the frame being assembled (prefix included) once known
        self.reserved = 0           # bytes reserved from the pool for it
        self.mem_wait = False
        self.task: asyncio.Task | None = None
        self.pending_rid: Any = None  # the request id of a parked request (the server's)

    def __repr__(self) -> str:
        return f"connection {self.conn_id} from {self.peer} to broker {self.broker_id}"

    # --- asyncio.Protocol ------------------------------------------------------------------------------------

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        # "sent" means written to the socket: pause_writing as soon as anything stays buffered
        transport.set_write_buffer_limits(high=0, low=0)
        if self.closing:
            transport.abort()

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.net.rview

    def buffer_updated(self, nbytes: int) -> None:
        if self.closing:
            return
        net = self.net
        view = net.rview
        if nbytes > 4 and not (self.buf or self.in_flight or self.send_blocked):
            # the common case: exactly one whole frame in one read, handed over without going through buf
            size = _SIZE.unpack_from(view)[0]
            if size == nbytes - 4 and size <= net.max_request_bytes:
                self.last_active = net.now()
                self._handle(bytes(view[4:nbytes]))
                return
        self.data_received(bytes(view[:nbytes]))

    def data_received(self, data: bytes) -> None:
        if self.closing:
            return
        net = self.net
        self.last_active = net.now()
        if self.buf or self.in_flight or self.send_blocked:
            self.buf += data
            self._pump()
            return
        n = len(data)
        if n > 4:  # the common case: exactly one whole frame in one read, handled without copying into buf
            size = int.from_bytes(data[:4], "big", signed=True)
            if size == n - 4 and size <= net.max_request_bytes:
                self._handle(data[4:])
                return
        self.buf += data
        self._pump()

    def eof_received(self) -> bool:
        return False  # Kafka clients never half-close: treat it as a close

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closing and not self.in_flight and not self.send_blocked and self.buf:
            if len(self.buf) < 4:
                self.net.bad(self, "truncated", f"connection closed inside a size prefix ({len(self.buf)} of 4 bytes)")
            else:
                size = int.from_bytes(self.buf[:4], "big", signed=True)
                self.net.bad(self, "truncated", f"connection closed inside a request ({len(self.buf) - 4} of "
                                                f"{size} bytes)")
        self.closing = True
        self.buf = bytearray()
        self.net.connection_closed(self)

    def pause_writing(self) -> None:
        self.send_blocked = True

    def resume_writing(self) -> None:
        self.send_blocked = False
        self.last_active = self.net.now()
        if not self.in_flight and not self.closing:
            self._unmuted()

    # --- framing ---------------------------------------------------------------------------------------------

    def _pump(self) -> None:
        """Process the complete frames in the buffer while the channel is not muted; account for a partial one."""
        buf = self.buf
        net = self.net
        while not (self.in_flight or self.send_blocked or self.closing):
            n = len(buf)
            if n < 4:
                break
            size = int.from_bytes(buf[:4], "big", signed=True)
            if size < 0:  # NetworkReceive: InvalidReceiveException("Invalid receive (size = -1)")
                net.bad(self, "invalid size", f"invalid receive (size = {size})")
                self.close()
                return
            if size > net.max_request_bytes:  # larger than socket.request.max.bytes: before any allocation
                net.bad(self, "invalid size", f"invalid receive (size = {size} larger than {net.max_request_bytes})")
                self.close()
                return
            if n < size + 4:
                if not self.reserved and not self.mem_wait:
                    self.frame_size = size + 4
                    if not net.pool.try_reserve(size + 4):
                        self.mem_wait = True
                        net.pool.waiters.append(self)
                        self._pause()
                        self.partial_since = None
                        return
                    self.reserved = size + 4
                break
            frame = bytes(buf[4:size + 4])
            del buf[:size + 4]
            if self.reserved:
                r, self.reserved = self.reserved, 0
                net.pool.release(r)
            elif self.mem_wait:  # it arrived anyway (read before the pause took effect)
                self.mem_wait = False
                net.pool.forget(self)
                self._resume()
            self.partial_since = None
            self._handle(frame)
        if self.in_flight or self.send_blocked:
            self.partial_since = None
            if len(buf) > net.connection_buffer_bytes:
                self._pause()
        elif buf and not self.mem_wait:
            if self.partial_since is None:
                self.partial_since = net.now()
        else:
            self.partial_since = None

    def memory_granted(self, n: int) -> None:
        """The pool granted the reservation this connection waited for."""
        self.mem_wait = False
        self.reserved = n
        self.partial_since = self.net.now()
        self._resume()

    def _handle(self, frame: bytes) -> None:
        try:
            reply = self.net.handler(self, frame)
        except Exception:  # noqa: BLE001 - a bug in the request path: close this connection, keep serving
            self.net.limited.log(logging.ERROR, "handler", "%s: unexpected error handling a request; closing\n%s",
                                 self, traceback.format_exc().rstrip())
            reply = None
        if reply is None:
            self.close()
            return
        if type(reply) is bytes:
            if reply and not self.closing:
                net = self.net
                if net.batching:
                    # muted until written; written with the other answers of this turn of the loop
                    self.send_blocked = True
                    net.outbox.append((self, reply))
                    if not net.flush_scheduled:
                        net.flush_scheduled = True
                        net.loop.call_soon(net.flush)
                else:
                    self.transport.write(reply)  # may call pause_writing: muted until sent
                    net.written()
            return
        self.in_flight = True  # muted until the answer is written
        self.task = task = self.net.loop.create_task(reply)
        task.add_done_callback(self._answered)

    def _answered(self, task: asyncio.Task) -> None:
        self.task = None
        self.in_flight = False
        if self.closing:
            return
        if task.cancelled():
            self.close()
            return
        exc = task.exception()
        if exc is not None:
            self.net.limited.log(logging.ERROR, "handler", "%s: unexpected error answering a request; closing\n%s",
                                 self, "".join(traceback.format_exception(exc)).rstrip())
            self.close()
            return
        reply = task.result()
        if reply is None:
            self.close()
            return
        if reply:
            self.transport.write(reply)
        self.last_active = self.net.now()
        if not self.send_blocked:
            self._unmuted()

    def _unmuted(self) -> None:
        if self.paused and not self.mem_wait:
            self._resume()
        if self.buf:
            self._pump()

    def _pause(self) -> None:
        if not self.paused and not self.closing:
            self.paused = True
            self.transport.pause_reading()

    def _resume(self) -> None:
        if self.paused and not self.closing:
            self.paused = False
            self.transport.resume_reading()

    # --- closing ---------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Close now (bad input, an abandoned request, a stopped broker, a limit): any queued output is dropped."""
        if self.closing:
            return
        self.closing = True
        if self.transport is not None:
            self.transport.abort()

    abort = close

    @property
    def idle(self) -> bool:
        """No request in flight and no partial frame: closing it loses nothing the client has sent."""
        return not (self.in_flight or self.send_blocked or self.buf or self.closing)


class _Listener:
    __slots__ = ("broker_id", "sock", "port", "paused", "retry")

    def __init__(self, broker_id: int, sock: socket.socket) -> None:
        self.broker_id = broker_id
        self.sock = sock
        self.port = sock.getsockname()[1]
        self.paused = False
        self.retry: asyncio.TimerHandle | None = None


class SocketServer:
    """Listeners and connections of every broker of one process, with their limits (see the module docstring).

    ``handler(conn, frame)`` answers one complete request frame (without its size prefix): bytes to send (``b""``:
    nothing), None to close the connection, or an awaitable returning either. ``on_closed(conn)`` is called once
    per connection when it is gone."""

    def __init__(self, handler: Callable[[Connection, bytes], Any], on_closed: Callable[[Connection], None], *,
                 max_request_bytes: int, queued_max_request_bytes: int, connections_max_idle_ms: int,
                 max_connections: int, request_read_timeout_ms: int, connection_buffer_bytes: int,
                 log_interval_ms: int, backlog: int = 1024, fd_reserve: int = FD_RESERVE) -> None:
        self.handler = handler
        self.on_closed = on_closed
        self.max_request_bytes = max_request_bytes
        self.pool = MemoryPool(queued_max_request_bytes)
        self.idle_s = connections_max_idle_ms / 1000.0 if connections_max_idle_ms > 0 else None
        self.max_connections = max_connections
        self.read_timeout_s = request_read_timeout_ms / 1000.0 if request_read_timeout_ms > 0 else None
        self.connection_buffer_bytes = connection_buffer_bytes
        self.backlog = backlog
        self.limited = RateLimitedLog(log, log_interval_ms / 1000.0)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.now: Callable[[], float] = time.monotonic
        self.listeners: dict[int, _Listener] = {}
        self.conns: dict[int, set[Connection]] = {}
        self.count = 0
        self.budget = _connection_budget(fd_reserve)
        self._next_id = 0
        self._tick: asyncio.TimerHandle | None = None
        self.rview = memoryview(bytearray(READ_BUFFER_BYTES))  # every connection's reads (Connection.get_buffer)
        self.outbox: list[tuple[Connection, bytes]] = []  # answers to write at the end of this turn
        self.flush_scheduled = False
        self.batching = False     # answers go to the outbox (several requests per turn of the loop), see flush
        self._turn_answers = 0    # answers written directly since the probe was scheduled
        self._until_probe = BATCH_PROBE_EVERY
        self._probing = False
        self._single_turns = 0    # consecutive flushes of one answer
        self.closed_idle = 0      # counters, for tests and benchmarks
        self.closed_slow = 0
        self.evicted = 0
        self.accept_errors = 0

    # --- lifecycle -------------------------------------------------------------------------------------------

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.now = loop.time
        self._schedule_tick()

    async def listen(self, broker_id: int, host: str, port: int) -> int:
        """Listen for ``broker_id`` on host:port (port 0: ephemeral); returns the real port. Raises OSError."""
        loop = self.loop
        infos = await loop.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        if not infos:
            raise OSError(f"cannot resolve {host!r}")
        family, type_, proto, _, addr = infos[0]
        sock = socket.socket(family, type_, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(addr)
            sock.listen(self.backlog)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        lst = _Listener(broker_id, sock)
        self.listeners[broker_id] = lst
        self.conns.setdefault(broker_id, set())
        loop.add_reader(sock.fileno(), self._accept, lst)
        return lst.port

    def stop_listening(self, broker_id: int) -> None:
        lst = self.listeners.pop(broker_id, None)
        if lst is None:
            return
        if lst.retry is not None:
            lst.retry.cancel()
        if not lst.paused:
            self.loop.remove_reader(lst.sock.fileno())
        lst.sock.close()

    def abort_connections(self, broker_id: int | None = None) -> list[Connection]:
        """Close every connection (of one broker); returns them."""
        out = []
        for b, conns in self.conns.items():
            if broker_id is None or b == broker_id:
                for conn in list(conns):
                    conn.close()
                    out.append(conn)
        return out

    def close(self) -> None:
        for b in list(self.listeners):
            self.stop_listening(b)
        for conn in self.abort_connections():
            if conn.task is not None:
                conn.task.cancel()
        if self._tick is not None:
            self._tick.cancel()
            self._tick = None

    def connections(self, broker_id: int | None = None) -> list[Connection]:
        if broker_id is not None:
            return list(self.conns.get(broker_id, ()))
        return [c for conns in self.conns.values() for c in conns]

    # --- writing -----------------------------------------------------------------------------------------------

    def flush(self) -> None:
        """Write the answers decided in this turn of the loop (``batching``): every frame that arrived in one turn
        is answered first, then every answer is written, each in one ``send`` (what the streams echo server does
        too: its handlers run one turn after the reads). Writing each answer at once interleaves the request path
        with system calls that wake a client, which then preempts the server mid-turn on a loaded machine; a
        connection stays muted until its answer is written, so pipelined requests are still answered one at a
        time, in order. Batching costs a turn of the loop per answer when requests come one at a time, so it is
        on only while turns bring several (:meth:`written` probes for that; a run of single-answer flushes turns
        it off). Measured (docs/benchmarks.md, "Reliability"): at 100 connections batching cut the server's CPU
        per heartbeat round trip by 7-13%; always on, it added a sixth to the instructions per round trip at 1
        connection."""
        self.flush_scheduled = False
        out, self.outbox = self.outbox, []
        if len(out) <= 1:
            self._single_turns += 1
            if self._single_turns >= BATCH_OFF_AFTER:
                self.batching = False
                self._single_turns = 0
        else:
            self._single_turns = 0
        now = self.now()
        for conn, reply in out:
            if conn.closing:  # the client went away meanwhile: Kafka drops the response of a closed channel
                continue
            conn.send_blocked = False
            conn.transport.write(reply)  # may call pause_writing: muted until sent
            conn.last_active = now
            if not conn.send_blocked and not conn.in_flight:
                conn._unmuted()  # the frames it sent meanwhile (their answers go to the next flush)

    def written(self) -> None:
        """An answer was written at once (not batching). Every ``BATCH_PROBE_EVERY`` answers, count those written
        in the rest of that turn of the loop (a callback at the end of the turn): several mean concurrent
        connections, and batching is turned on."""
        self._turn_answers += 1
        if self._probing:
            return
        self._until_probe -= 1
        if self._until_probe <= 0:
            self._until_probe = BATCH_PROBE_EVERY
            self._probing = True
            self._turn_answers = 1
            self.loop.call_soon(self._probed)

    def _probed(self) -> None:
        self._probing = False
        if self._turn_answers >= BATCH_ON_AT:
            self.batching = True
            self._single_turns = 0

    # --- logging -----------------------------------------------------------------------------------------------

    def bad(self, conn: Connection, kind: str, why: str) -> None:
        """A connection closed for bad input: one WARNING line per kind per interval (Kafka logs at DEBUG/INFO)."""
        if not conn.closing:  # not when we dropped it ourselves (broker stopped, shutdown)
            self.limited.warning(kind, "%s: %s; closing the connection", conn, why)

    # --- accepting -------------------------------------------------------------------------------------------

    def _has_room(self, broker_id: int) -> bool:
        return self.count < self.budget and len(self.conns.get(broker_id, ())) < self.max_connections

    def _accept(self, lst: _Listener) -> None:
        for _ in range(ACCEPT_BATCH):
            if lst.broker_id not in self.listeners:
                return
            if not self._has_room(lst.broker_id):
                scope = None if self.count >= self.budget else lst.broker_id
                if self._evict_idle(scope):
                    # its socket closes on the loop's next turn: accept after that, one at a time
                    self._pause_listener(lst, 0.0)
                    return
                else:
                    self.limited.warning(
                        "connection limit", "broker %d: %s reached (%d connections open); new connections wait "
                        "until one closes", lst.broker_id,
                        "the process's connection budget" if scope is None else f"max.connections "
                                                                               f"({self.max_connections})",
                        self.count)
                    # wait in the backlog; try again when a connection closes or may have become evictable
                    self._pause_listener(lst, EVICT_MIN_IDLE_S / 2)
                    return
            try:
                sock, addr = lst.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                self.accept_errors += 1
                if e.errno in (errno.ECONNABORTED, errno.EPROTO):
                    continue
                fd = e.errno in _FD_ERRNOS
                self.limited.warning("accept", "broker %d cannot accept a connection: %s (%d connections open)%s",
                                     lst.broker_id, e.strerror or e, self.count,
                                     "; closing the connection idle the longest" if fd else "")
                if fd and self._evict_idle(None):
                    # the evicted socket is closed on the loop's next turn: try again right after
                    self._pause_listener(lst, 0.0)
                else:
                    self._pause_listener(lst, ACCEPT_RETRY_S)
                return
            self._start(lst.broker_id, sock, addr)

    def _start(self, broker_id: int, sock: socket.socket, addr: Any) -> None:
        sock.setblocking(False)
        peer = f"{addr[0]}:{addr[1]}" if isinstance(addr, tuple) else str(addr)
        self._next_id += 1
        conn = Connection(self, self._next_id, broker_id, peer)
        self.conns.setdefault(broker_id, set()).add(conn)
        self.count += 1

        async def attach() -> None:
            try:
                await self.loop.connect_accepted_socket(lambda: conn, sock)
            except Exception as e:  # noqa: BLE001 - e.g. the peer reset the connection already
                sock.close()
                if not conn.closing:
                    conn.closing = True
                    self.limited.warning("accept", "%s: cannot set up the connection: %s", conn, e)
                    self.connection_closed(conn)

        self.loop.create_task(attach())

    def _pause_listener(self, lst: _Listener, retry_s: float | None) -> None:
        if not lst.paused:
            lst.paused = True
            self.loop.remove_reader(lst.sock.fileno())
        if retry_s is not None and lst.retry is None:
            lst.retry = self.loop.call_later(retry_s, self._resume_listener, lst)

    def _resume_listener(self, lst: _Listener) -> None:
        lst.retry = None
        if lst.paused and self.listeners.get(lst.broker_id) is lst:
            lst.paused = False
            self.loop.add_reader(lst.sock.fileno(), self._accept, lst)

    def _evict_idle(self, broker_id: int | None) -> bool:
        """Close the connection idle the longest (of one broker, or of all), if it has been idle long enough."""
        now = self.now()
        victim = None
        for conn in (self.connections(broker_id)):
            if conn.idle and now - conn.last_active >= EVICT_MIN_IDLE_S and (
                    victim is None or conn.last_active < victim.last_active):
                victim = conn
        if victim is None:
            return False
        self.evicted += 1
        self.limited.log(logging.INFO, "evicted", "%s: closed after %.0f s idle to admit a new connection", victim,
                         now - victim.last_active)
        victim.close()
        self.connection_closed(victim)
        return True

    def connection_closed(self, conn: Connection) -> None:
        conns = self.conns.get(conn.broker_id)
        if conns is None or conn not in conns:
            return
        conns.discard(conn)
        self.count -= 1
        if conn.mem_wait:
            conn.mem_wait = False
            self.pool.forget(conn)
        if conn.reserved:
            r, conn.reserved = conn.reserved, 0
            self.pool.release(r)
        if conn.task is not None:
            conn.task.cancel()
        self.on_closed(conn)
        for lst in self.listeners.values():  # a slot is free: listeners stopped at a limit accept again
            if lst.paused:
                if lst.retry is not None:
                    lst.retry.cancel()
                self._resume_listener(lst)

    # --- the periodic tick: idle and slow connections, log summaries ----------------------------------------

    def _schedule_tick(self) -> None:
        period = 1.0
        if self.idle_s is not None:
            period = min(period, max(self.idle_s / 4, 0.01))
        if self.read_timeout_s is not None:
            period = min(period, max(self.read_timeout_s / 4, 0.01))
        self._tick = self.loop.call_later(period, self._on_tick)

    def _on_tick(self) -> None:
        try:
            self.sweep()
        finally:
            self._schedule_tick()

    def sweep(self) -> None:
        now = self.now()
        idle_s, read_s = self.idle_s, self.read_timeout_s
        for conn in self.connections():
            if conn.closing:
                continue
            if read_s is not None and conn.partial_since is not None and now - conn.partial_since > read_s:
                self.closed_slow += 1
                self.bad(conn, "slow sender", f"request not complete {now - conn.partial_since:.1f} s after its "
                                              f"first byte ({len(conn.buf)} bytes received; request.read.timeout.ms "
                                              f"is {read_s * 1000:.0f})")
                conn.close()
                self.connection_closed(conn)
            elif (idle_s is not None and not conn.in_flight and not conn.mem_wait
                  and now - conn.last_active > idle_s):
                self.closed_idle += 1
                self.limited.log(logging.INFO, "idle", "%s: idle for %.0f s (connections.max.idle.ms); closing",
                                 conn, now - conn.last_active)
                conn.close()
                self.connection_closed(conn)
        self.limited.flush()


def _connection_budget(reserve: int) -> int:
    """How many connections this process can hold: the soft RLIMIT_NOFILE (raised to the hard limit first, as the
    JVM does) minus ``reserve`` file descriptors."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not Unix
        return 1 << 30
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        hard = max(soft, 1 << 20) if soft != resource.RLIM_INFINITY else 1 << 20
    if soft == resource.RLIM_INFINITY or soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY:
        return 1 << 30
    return max(16, soft - reserve)
