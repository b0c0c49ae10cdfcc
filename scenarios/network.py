"""The simulated network between the consumers and the brokers: connections, latency and jitter, TCP order, and the
faults that change what happens to a message.

Theory of operation
-------------------
* **Connections.** Each consumer has up to two connections per broker, as the Java client does: a normal one
  (FindCoordinator goes to any broker, Kafka's ``leastLoadedNode``: a seeded random one here) and the
  coordinator connection (Kafka uses a separate connection, id ``Integer.MAX_VALUE - node_id``). A
  :class:`Connection` has an *epoch*: closing it starts a new epoch, and every message of an older epoch still on
  the wire is dropped when it arrives (both directions) -- an RST, not a FIN: a request sent on a connection the
  client then closed is never processed. Connection set-up costs nothing.
* **Timing.** A message takes ``latency_ms`` plus seeded jitter in ``[0, jitter_ms]`` (the ``network`` stream)
  plus the delays of the fault rules it matches, and never overtakes an earlier message of the same connection
  and direction (TCP). At a fixed latency an undelayed message arrives after every earlier one by itself, so a
  connection keeps its last arrival time only when jitter or a delay can break the order.
* **The wire format.** With ``codec`` every request and response is encoded and decoded at its negotiated
  version (``protocol.frames``), so a run also exercises the wire format; the results are the same without.
* **Requests in flight.** Each connection keeps the handles of its requests not yet answered, in order; when
  it closes, the client learns one latency later (if the other side closed it) that those requests failed with
  a disconnect, and, for the coordinator connection, that the coordinator is unreachable
  (``ConsumerCoordinator.on_disconnect``). A duplicate or late response no request waits for is ignored by the
  client (Kafka: an unknown correlation id).
* **Message faults and network partitions** are rules of the broker's fault-rule model
  (:class:`broker.faultrules.FaultRules`, shared with ``kgroup ctl``'s fault control): ``message_fault`` drops,
  delays or duplicates requests and/or responses of one API of one consumer (or all), each message with a
  probability, at most ``count`` of them; ``network_partition`` drops or delays everything between a consumer
  and some brokers, in one or both directions. Every matching rule applies to a message
  (:meth:`FaultRules.all`: delays add up, any drop drops, any duplicate duplicates); a probability is drawn from
  the ``faults`` stream only for a rule that matches otherwise, in the order the rules were added, so the
  draws -- and the run -- depend only on the seed. A duplicated request is served twice. (Fault control of a
  running server uses the same rules differently: the first matching rule applies, ``FaultRules.take``.)
* **Aimed at KIP-848's phases.** A rule may aim at ConsumerGroupHeartbeat responses by phase -- the one that
  raises the member's epoch above the last epoch the consumer received (``epoch_bump``), the one that carries an
  assignment (``assignment``) -- or by member epoch; the network tells the rules which phases a response is in.
  ``reorder`` holds a response back until the next response on its connection has been delivered (then it
  follows it) or ``delay_ms`` passed: the two arrive out of order, as no TCP connection would deliver them --
  the fault behind KAFKA-19335.
* **Delivery into a consumer process** goes through its socket buffer: a frozen process (GC pause) leaves
  responses and disconnects waiting there, handled in order when it wakes; a dead one loses them.

The broker side of a connection (one request served at a time, refused at a stopped broker) is
:mod:`scenarios.brokers`'; what the consumer does with a response is :mod:`scenarios.consumers`'.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from broker.faultrules import FaultRule, FaultRules
from consumer import outputs as O
from protocol.frames import decode_response, encode_request, encode_response

from scenarios.tracing import fmt_response, fmt_request

#: ConsumerGroupHeartbeat (KIP-848)
CGH_API = 68


class Connection:
    """One TCP connection of a consumer to a broker, both ends: the client's requests not yet answered and the
    broker's queue of requests waiting behind the one being served."""

    __slots__ = ("consumer", "node", "coord", "epoch", "up_last", "down_last", "queue", "busy", "pending", "held")

    def __init__(self, consumer: Any, node: int, coord: bool) -> None:
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
        self.held: Optional[list] = None  # responses held back by a reorder fault: [item, ...]

    def reset(self) -> list[int]:
        """Start a new epoch; returns the handles of the requests that were in flight, in the order they were sent
        (their answers can no longer arrive)."""
        self.epoch += 1
        self.queue.clear()
        self.busy = None
        self.held = None
        p = self.pending
        if p is None:
            return []
        self.pending = None
        return [p] if type(p) is int else p


class Network:
    """Messages between consumers and brokers in virtual time."""

    def __init__(self, clock: Any, push: Callable[[int, tuple], None], note: Callable[[tuple], None], *,
                 latency_ms: int, jitter_ms: int, codec: bool, num_brokers: int, rng: Any, fault_rng: Any,
                 stats: dict) -> None:
        self._clock = clock
        self._push = push
        self._note = note
        self.latency = latency_ms
        self.jitter = jitter_ms
        self.codec = codec
        self.num_brokers = num_brokers
        self.rng = rng
        self._draw = fault_rng.random
        self.stats = stats
        self.rules = FaultRules()
        self.request_counts: dict[int, int] = {}  # api key -> requests sent
        self.responses = 0
        self._corr = 0
        # the other ends, wired by the world: the broker side's arrival handler, and the consumer process's
        # handlers for a response and for a lost connection
        self.arrive: Callable[[Connection, tuple], None] = None  # type: ignore[assignment]
        self.received: Callable[[Any, int, Any], None] = None  # type: ignore[assignment]
        self.disconnected: Callable[[Any, Connection, list], None] = None  # type: ignore[assignment]
        # this network's own event handlers as bound methods made once (not one new object per message)
        self._h_deliver = self.deliver
        self._h_lost = self.lost
        self._h_release = self.release
        self._releasing = False
        #: the member epoch of the last ConsumerGroupHeartbeat response each consumer received (epoch_bump phase)
        self.cg_epochs: dict[str, int] = {}

    # --- faults --------------------------------------------------------------------------------------------------
    def message_fault(self, consumer: Optional[str], api: Optional[int], requests: bool, responses: bool, mode: str,
                      delay_ms: int, probability: float, count: Optional[int], until_ms: int,
                      phases: Optional[frozenset] = None, epoch: Optional[int] = None) -> None:
        """Drop, delay, duplicate or reorder messages of one API (None: every API) of one consumer (None: every
        one); ``phases`` / ``epoch``: only ConsumerGroupHeartbeat responses in those phases / of that epoch."""
        self.rules.add(FaultRule(mode, api=api, client=consumer, requests=requests, responses=responses,
                                 until_ms=until_ms, probability=probability, count=count, delay_ms=delay_ms,
                                 phases=phases, epoch=epoch))

    def partition(self, consumer: str, brokers: Optional[frozenset], to_broker: bool, from_broker: bool, mode: str,
                  delay_ms: int, until_ms: int) -> None:
        """Cut (``drop``) or slow down (``delay``) the links between a consumer and some brokers (None: all)."""
        self.rules.add(FaultRule(mode, client=consumer, brokers=brokers, requests=to_broker, responses=from_broker,
                                 until_ms=until_ms, delay_ms=delay_ms))

    def _delay(self) -> int:
        if self.jitter:
            return self.latency + self.rng.randint(0, self.jitter)
        return self.latency

    # --- client -> broker ---------------------------------------------------------------------------------------
    def send(self, c: Any, o: O.SendRequest) -> None:
        """A consumer core's ``SendRequest``: on the wire towards the broker."""
        node = o.node_id
        to_coordinator = o.to_coordinator
        if node is None:
            node = self.rng.randrange(self.num_brokers)  # leastLoadedNode: any bootstrap broker
        conn = c.coord_conn
        if not to_coordinator or conn is None or conn.node != node:
            key = 2 * node + 1 if to_coordinator else 2 * node
            conn = c.conns.get(key)
            if conn is None:
                conn = c.conns[key] = Connection(c, node, to_coordinator)
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
        counts = self.request_counts
        counts[api_key] = counts.get(api_key, 0) + 1
        now = self._clock.now
        self._note((now, fmt_request, (c.name, api_key, node, handle, body)))
        if self.codec:
            self._corr += 1
            body = encode_request(api_key, version, self._corr, c.name, body)
        msg = (conn.epoch, handle, api_key, version, body, c.name, self._corr)
        dup = False
        delay = 0
        if self.rules.rules:
            drop, delay, dup = self.rules.all(api_key, c.name, node, False, now, self._draw)
            if drop:
                self.stats["dropped"] += 1
                self._note((now, "dropped request #{} of {}".format, (handle, c.name)))
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
        ev = (self.arrive, conn, msg)
        self._push(t, ev)
        if dup:
            self.stats["duplicated"] += 1
            self._push(t, ev)

    # --- broker -> client ---------------------------------------------------------------------------------------
    def respond(self, conn: Connection, msg: tuple, resp: Any) -> None:
        """The broker's answer to request ``msg``: on the wire back to the consumer."""
        _epoch, handle, api_key, version, _body, _client, corr = msg
        self.responses += 1
        resp_obj = resp
        if self.codec:
            resp = encode_response(api_key, version, corr, resp)
        dup = False
        delay = 0
        held = 0
        if self.rules.rules:
            now = self._clock.now
            if api_key == CGH_API:
                phases, epoch = self._cg_phases(conn.consumer.name, resp_obj)
                drop, delay, dup = self.rules.all(api_key, conn.consumer.name, conn.node, True, now, self._draw,
                                                  phases, epoch)
            else:
                drop, delay, dup = self.rules.all(api_key, conn.consumer.name, conn.node, True, now, self._draw)
            held = self.rules.held
            if drop:
                self.stats["dropped"] += 1
                self._note((now, "dropped response #{} to {}".format, (handle, conn.consumer.name)))
                return
            if delay:
                self.stats["delayed"] += 1
        t = self._clock.now + self._delay() + delay
        if held:
            # reorder: not in TCP order; delivered right after the next response on this connection, or at the
            # end of the hold
            item = (conn.epoch, handle, api_key, version, resp)
            if conn.held is None:
                conn.held = []
            conn.held.append(item)
            self.stats["reordered"] = self.stats.get("reordered", 0) + 1
            self._note((self._clock.now, "holding back response #{} to {}".format, (handle, conn.consumer.name)))
            self._push(t + held, (self._h_release, conn, item))
            return
        if t < conn.down_last:
            t = conn.down_last
        elif delay or self.jitter:
            conn.down_last = t
        item = (conn.epoch, handle, api_key, version, resp)
        ev = (self._h_deliver, conn, item)
        self._push(t, ev)
        if dup:
            self.stats["duplicated"] += 1
            self._push(t, ev)

    def deliver(self, conn: Connection, item: tuple) -> None:
        """A response reaches the consumer's host (event handler)."""
        epoch, handle, api_key, version, resp = item
        if epoch != conn.epoch:
            return
        c = conn.consumer
        if not c.alive:
            return
        if c.paused_until is not None:
            c.inbox.append((self._h_deliver, conn, item))  # the socket buffer of a frozen process
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
        if api_key == CGH_API and resp.error_code == 0:
            self.cg_epochs[c.name] = resp.member_epoch
        self._note((self._clock.now, fmt_response, (c.name, handle, resp)))
        self.received(c, handle, resp)
        if conn.held and not self._releasing:
            self._release_all(conn)

    def _cg_phases(self, name: str, resp: Any) -> tuple[frozenset, Optional[int]]:
        """The phases of a ConsumerGroupHeartbeat response to ``name`` (broker.faultrules.PHASES) and its epoch."""
        if resp.error_code != 0:
            return frozenset(), None
        phases = []
        if resp.member_epoch > self.cg_epochs.get(name, 0):
            phases.append("epoch_bump")
        if resp.assignment is not None:
            phases.append("assignment")
        return frozenset(phases), resp.member_epoch

    def release(self, conn: Connection, item: tuple) -> None:
        """A held-back response's hold is over (event handler): deliver it now if still held."""
        if conn.held and item in conn.held:
            conn.held.remove(item)
            self._releasing = True
            try:
                self.deliver(conn, item)
            finally:
                self._releasing = False

    def _release_all(self, conn: Connection) -> None:
        """A response overtook the held-back ones: they arrive right after it."""
        held, conn.held = conn.held, None
        self._releasing = True
        try:
            for item in held:
                self.deliver(conn, item)
        finally:
            self._releasing = False

    # --- closing --------------------------------------------------------------------------------------------------
    def close(self, conn: Connection, notify: bool) -> None:
        """Close a connection: everything in flight on it is lost; with ``notify`` the client learns it one
        latency later (the server closed it, or refused it)."""
        c = conn.consumer
        handles = conn.reset()
        if notify and c.alive:
            self._push(self._clock.now + self.latency, (self._h_lost, conn, (c.incarnation, handles)))

    def lost(self, conn: Connection, data: tuple) -> None:
        """The client learns that the other side closed the connection (event handler)."""
        c = conn.consumer
        incarnation, handles = data
        if not c.alive or c.incarnation != incarnation:
            return
        if c.paused_until is not None:
            c.inbox.append((self._h_lost, conn, data))
            return
        self._note((self._clock.now, "{}: connection to broker {} lost".format, (c.name, conn.node)))
        self.disconnected(c, conn, handles)

    def client_close(self, c: Any, node: int, in_flight: Any) -> None:
        """The client closes its connections to ``node`` (the coordinator was marked unknown): the coordinator
        connection, and the normal one unless a request the core still waits for is on it."""
        conn = c.conns.get(2 * node + 1)
        if conn is not None:
            self.close(conn, notify=False)
        conn = c.conns.get(2 * node)
        if conn is not None:
            p = conn.pending
            if p is None or not any(h in in_flight for h in ([p] if type(p) is int else p)):
                self.close(conn, notify=False)

    def close_broker(self, b: int, consumers: list) -> None:
        """A broker stopped: it closes every connection to it (the clients learn it one latency later)."""
        for c in consumers:
            for _key, conn in sorted(c.conns.items()):  # (broker, normal before coordinator connection)
                if conn.node == b:
                    self.close(conn, notify=True)

    def reset_all(self, c: Any) -> None:
        """A consumer process started or exited: its connections are gone, with everything on them."""
        for conn in c.conns.values():
            conn.reset()
