"""The simulated brokers: the same sans-IO broker the TCP server runs (:class:`broker.apis.BrokerApis` over the
coordinator core, :class:`coordinator.service.GroupCoordinatorService`), driven in virtual time.

Theory of operation
-------------------
* **One request path.** A request that arrives over the simulated network goes to ``BrokerApis.handle`` --
  Kafka's ``KafkaApis``: FindCoordinator routing, the group APIs into the coordinator service -- exactly as
  ``kgroup serve`` hands it a decoded request (``broker/server.py``). What comes back is the coordinator's
  ``Output``: responses (to this request or to earlier, parked ones), abandoned requests, log records and
  leadership changes. :meth:`SimBrokers.apply` acts on it in the server's order: records (to the trace, the
  invariant checker), leadership changes, responses (onto the wire), abandoned requests (Kafka never answers
  them: the connection closes, as ``kgroup serve`` does), then the coordinator's next timer.
* **One request per connection at a time**: Kafka's ``SocketServer`` mutes a channel after a complete request
  until its response is sent, so a parked JoinGroup holds back the requests behind it on that connection; a
  request arriving meanwhile waits in the connection's queue. A request that reaches a stopped broker is
  refused: the connection closes and the client sees a disconnect one latency later.
* **Timers.** The coordinator is woken at ``GroupCoordinatorService.next_deadline`` (one wake-up event, moved
  earlier when the deadline does; a wake-up whose deadline moved does nothing).
* **No network hop for bootstrap.** The consumers are given the ApiVersions answer (``BrokerApis.api_versions``:
  exactly the APIs ``kgroup serve`` advertises) and the topics' partition counts from a Metadata answer
  (``BrokerApis.metadata``, all topics, internal ones left out as the Java consumer's
  ``exclude.internal.topics`` does) directly: both are the broker's answers, computed once and again whenever
  the simulator changes the topics (the only way they change here).
* **Failover.** Stopping a broker closes its connections and moves its offsets-partition leaderships
  (``GroupCoordinatorService.stop_broker``); the new leaders load the log. Before any leadership moves, the
  shards about to lose it are checked for *state equals the replay of the log* (what the new leader will load),
  and every shard is checked again when its load completes (the ``CoordinatorLoaded`` record).

The data path (Produce, Fetch, ...) is not exchanged here: the simulator's producers and consumers use the
partition-log model of :mod:`scenarios.datapath` (docs/scenarios.md, "Limits").
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from coordinator import CoordinatorConfig, GroupCoordinatorService, RequestContext
from coordinator import records as R
from coordinator.cluster import OFFSETS_TOPIC, topic_id
from protocol.uuids import uuid_to_string
from protocol.frames import decode_request
from protocol.messages import ApiVersionsRequest, MetadataRequest

from broker.apis import BrokerApis

#: what the simulated consumers say they are in ApiVersions (KIP-511: client software name and version)
CLIENT_SOFTWARE = ("kgroup-simulator", "0.1.0")
#: the ApiVersions version the simulator asks at (v3+: the client says its software name and version, KIP-511)
API_VERSIONS_VERSION = 3
#: the Metadata version the simulator asks at (v12, Kafka 3.0+; the partition counts read the same at every version)
METADATA_VERSION = 12


def _topic_id(name: str) -> str:
    """A topic's id as the coordinator's records write it."""
    return uuid_to_string(topic_id(name))


class SimBrokers:
    """Every broker of the simulated cluster: ``BrokerApis`` plus what the TCP server adds around it."""

    def __init__(self, config: CoordinatorConfig, num_brokers: int, seed: int, clock: Any,
                 push: Callable[[int, tuple], None], tracer: Any, checker: Any, network: Any, *,
                 codec: bool) -> None:
        self.config = config
        self.svc = GroupCoordinatorService(num_brokers=num_brokers, config=config, seed=seed)
        self.apis = BrokerApis(self.svc)
        self.cluster = self.svc.cluster
        self._clock = clock
        self._push = push
        self.tracer = tracer
        self.checker = checker
        self.network = network
        self.codec = codec
        self._timer_at: Optional[int] = None
        self._timer_ev = (self.on_timer, None, None)
        self._h_serve = self.serve_next  # (one bound method, not one per event)
        self._rid = 0
        self._rids: dict[int, tuple] = {}  # request id -> (connection, its epoch, the request message)
        self.consumers: list = []  # wired by the world (whose connections a stopped broker closes)
        self.api_versions = self.apis.api_versions(0, ApiVersionsRequest(client_software_name=CLIENT_SOFTWARE[0],
                                                                         client_software_version=CLIENT_SOFTWARE[1]),
                                                   API_VERSIONS_VERSION)
        self.metadata: dict[str, int] = {}
        #: topic -> topic id (Metadata v10+): consumer-protocol members resolve their assignments with it
        self.topic_ids: dict[str, str] = {}
        #: called after each coordinator operation while a phase-triggered fault waits (scenarios.timeline)
        self.on_operation: Optional[Callable[[], None]] = None

    # --- topics ---------------------------------------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int, replication_factor: int) -> None:
        self.cluster.create_topic(name, partitions, replication_factor)
        self.metadata = self._metadata()
        self.topic_ids[name] = _topic_id(name)

    def add_partitions(self, topic: str, partitions: int) -> dict[str, int]:
        self.cluster.add_partitions(topic, partitions)
        self.metadata = self._metadata()
        return self.metadata

    def _metadata(self) -> dict[str, int]:
        """Partition counts per topic from the broker's Metadata answer for every topic."""
        resp = self.apis.metadata(0, MetadataRequest(topics=None, allow_auto_topic_creation=False), METADATA_VERSION)
        return {t.name: len(t.partitions) for t in resp.topics if t.error_code == 0 and not t.is_internal}

    # --- requests -------------------------------------------------------------------------------------------------
    def arrive(self, conn: Any, msg: tuple) -> None:
        """A request reaches the broker end of its connection (event handler)."""
        if msg[0] != conn.epoch:
            return
        if not self.cluster.is_alive(conn.node):
            self.network.stats["refused"] += 1
            self.network.close(conn, notify=True)
            return
        if conn.busy is None and not conn.queue:
            self._handle(conn, msg)  # the common case: nothing queued ahead of it
        else:
            conn.queue.append(msg)

    def serve_next(self, conn: Any, _: Any = None) -> None:
        """The connection's previous request was answered: serve the next queued one (Kafka unmutes it)."""
        if conn.busy is not None or not conn.queue:
            return
        if not self.cluster.is_alive(conn.node):
            return
        self._handle(conn, conn.queue.pop(0))

    def _handle(self, conn: Any, msg: tuple) -> None:
        _epoch, handle, api_key, version, body, client_id, corr = msg
        self._rid += 1
        rid = self._rid
        conn.busy = rid
        self._rids[rid] = (conn, conn.epoch, msg)
        if self.codec:
            _header, body = decode_request(body[4:])
        if api_key == 68 or api_key == 8:  # ConsumerGroupHeartbeat, OffsetCommit: the consumer-group invariants
            self.checker.on_request(rid, api_key, body)
        self.apply(self.apis.handle(conn.node, body, RequestContext(rid, version, client_id, conn.consumer.host),
                                    self._clock.now))

    # --- what the coordinator produced ----------------------------------------------------------------------------
    def apply(self, out: Any) -> None:
        """Act on an ``Output``: records, leadership changes, responses, abandoned requests; re-arm the timer."""
        now = self._clock.now
        for e in out.records:
            self.tracer.record(e)
            self.checker.on_record(e)
            if isinstance(e.record, R.CoordinatorLoaded):
                svc = self.svc
                self.checker.on_loaded(now, e.partition, svc.partition_for, svc.committed_offsets)
                self.checker.check_replay(now, f"after loading offsets partition {e.partition}",
                                          lambda p=e.partition: svc.state_replay_mismatches({p}))
        checker = self.checker
        if out.records:
            checker.end_operation(now)
        for ch in out.leadership:
            if ch.topic == OFFSETS_TOPIC:
                self.tracer.trace("leader", partition=ch.partition, old=ch.old_leader, new=ch.new_leader)
        for rid, resp in out.responses:
            info = self._rids.pop(rid, None)
            if info is None:
                continue
            conn, epoch, msg = info
            if checker.cg_requests:
                checker.on_response(rid, resp, now, _topic_id)
            if conn.epoch != epoch:
                continue  # the connection closed meanwhile: the answer goes nowhere
            if conn.busy == rid:
                conn.busy = None
                if conn.queue:
                    self._push(now, (self._h_serve, conn, None))
            self.network.respond(conn, msg, resp)
        if self.on_operation is not None:
            self.on_operation()
        for rid in out.abandoned:
            checker.cg_requests.pop(rid, None)
            info = self._rids.pop(rid, None)
            if info is None:
                continue
            conn, epoch, msg = info
            if conn.epoch == epoch:
                # Kafka never answers it; the server closes the connection (the client sees a disconnect)
                self.network.close(conn, notify=True)
        self._schedule_timer()

    def _schedule_timer(self) -> None:
        """Schedule a wake-up at the coordinator's next timer (``GroupCoordinatorService.next_deadline``)."""
        d = self.svc.next_deadline()
        if d is not None:
            now = self._clock.now
            if d < now:
                d = now
            if self._timer_at is None or d < self._timer_at:
                self._timer_at = d
                self._push(d, self._timer_ev)

    def on_timer(self, _a: Any, _b: Any) -> None:
        """The coordinator's timer wake-up (event handler): fire what is due."""
        t = self._clock.now
        if self._timer_at == t:
            self._timer_at = None
            self.apply(self.svc.poll(t))

    # --- brokers and leadership -----------------------------------------------------------------------------------
    def _check_before_leadership_moves(self, partitions: Any, why: str) -> None:
        self.checker.check_replay(self._clock.now, why, lambda: self.svc.state_replay_mismatches(partitions))

    def stop_broker(self, b: int) -> None:
        if not self.cluster.is_alive(b):
            return
        self.tracer.trace("broker_stop", broker=b)
        led = {ps.partition for ps in self.cluster.partitions(OFFSETS_TOPIC) if ps.leader == b}
        self._check_before_leadership_moves(led, f"before broker {b} stops")
        out = self.svc.stop_broker(b, self._clock.now)
        self.network.close_broker(b, self.consumers)
        self.apply(out)

    def start_broker(self, b: int, elect: bool = False) -> None:
        if self.cluster.is_alive(b):
            return
        self.tracer.trace("broker_start", broker=b)
        self.apply(self.svc.start_broker(b, self._clock.now))
        if elect:
            self.elect_preferred_leaders()

    def elect_preferred_leaders(self) -> None:
        self._check_before_leadership_moves(None, "before a preferred-leader election")
        self.apply(self.svc.elect_preferred_leaders(self._clock.now))

    def check_replay(self, why: str) -> None:
        """Check "state equals the replay of the log" on every loaded shard (the end of a run)."""
        self.checker.check_replay(self._clock.now, why, self.svc.state_replay_mismatches)
