"""The simulated world: one run of one scenario with one seed -- the coordinator core and every consumer core, the
same sans-IO cores the TCP drivers use, over an in-memory network on a virtual clock. No sockets, no asyncio, no
sleeping.

This module only wires the parts together; each part's docstring gives its theory of operation:

==============================  ==============================================================================
:mod:`scenarios.events`         the event queue: virtual time, a timing wheel + heap, FIFO per millisecond
:mod:`scenarios.network`        connections, latency and jitter, TCP order, message faults and partitions
                                (``broker.faultrules``), the wire codec
:mod:`scenarios.brokers`        the brokers: ``broker.apis.BrokerApis`` over the coordinator service, one
                                request per connection at a time, timers, broker stop/start
:mod:`scenarios.consumers`      the consumer processes: a ``ConsumerCoordinator`` each, its heartbeat thread,
                                the driver of its outputs, start/stop/crash/pause, ownership
:mod:`scenarios.application`    the application thread: the ``KafkaConsumer.poll`` loop, processing time,
                                blocked in poll
:mod:`scenarios.timeline`       the scenario's actions and faults at their times, and the producers
:mod:`scenarios.settle`         what "settled" means, by when, and how long a run lasts
:mod:`scenarios.invariants`     the invariant checker
:mod:`scenarios.tracing`        the trace, the coordinator's records, the recent-events ring
:mod:`scenarios.datapath`       the partition-log model (records produced, records consumed)
==============================  ==============================================================================

**Randomness** comes from one :class:`~scenarios.rng.SimRandom` seeded with the run's seed, in named child
streams (``network``: jitter and bootstrap brokers, ``faults``: fault probabilities, ``producer``: the sticky
partitioner, ``metadata``: when consumers see new partitions) and a derived seed for the coordinator's member
UUIDs: a run is a pure function of (scenario, seed).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import protocol.messages  # noqa: F401  (registers every API)
from coordinator import CoordinatorConfig

from scenarios import model as M
from scenarios.application import Application
from scenarios.brokers import SimBrokers
from scenarios.consumers import Consumers, SimConsumer
from scenarios.datapath import Consumption, PartitionLogs
from scenarios.events import LIVELOCK_EVENTS, EventQueue, SimulationError
from scenarios.invariants import Checker
from scenarios.network import Network
from scenarios.partitioners import Partitioners
from scenarios.rng import SimRandom
from scenarios.timeline import Timeline
from scenarios.tracing import API_NAMES, Tracer

__all__ = ["Simulation", "SimConsumer", "SimulationError"]


class Simulation:
    """One run of one scenario with one seed."""

    def __init__(self, scenario: M.Scenario, seed: int, *, trace: bool = True, codec: Optional[bool] = None,
                 recent_size: int = 40) -> None:
        self.scenario = scenario
        self.seed = seed
        self.rng = SimRandom(seed)
        self.queue = queue = EventQueue(self._livelock_message)
        self.tracer = tracer = Tracer(queue, trace, recent_size)
        self.checker = checker = Checker(scenario.invariants.check, seed, tracer.recent.render,
                                         commit_rule=scenario.invariants.commit_rule)
        self.stats = {"requests": 0, "responses": 0, "dropped": 0, "duplicated": 0, "delayed": 0,
                      "refused": 0, "events": 0}
        self.logs = PartitionLogs()
        self.consumption = Consumption()
        self.settled_ok: dict[str, int] = {}
        self.end_ms: Optional[int] = None
        self.network = network = Network(
            queue, queue.push, tracer.note, latency_ms=scenario.network.latency_ms,
            jitter_ms=scenario.network.jitter_ms, codec=scenario.network.codec if codec is None else codec,
            num_brokers=scenario.cluster.brokers, rng=self.rng.child("network"), fault_rng=self.rng.child("faults"),
            stats=self.stats)
        self.broker_config = CoordinatorConfig.create(M.broker_settings(scenario))
        self.brokers = brokers = SimBrokers(self.broker_config, scenario.cluster.brokers,
                                            self.rng.derive_seed("coordinator"), queue, queue.push, tracer, checker,
                                            network, codec=network.codec)
        for t in scenario.cluster.topics:
            brokers.create_topic(t.name, t.partitions, t.replication_factor)
            self.logs.ensure(t.name, t.partitions)
        checker.topic_names = {tid: name for name, tid in brokers.topic_ids.items()}
        self.app = app = Application(queue, queue.push, self.logs, self.consumption, network.latency)
        self.processes = processes = Consumers(scenario, queue, queue.push, queue.call, tracer, checker, network,
                                               brokers, app, seed)
        self.timeline = Timeline(scenario, queue, queue.call, tracer, processes, app, network, brokers, self.logs,
                                 Partitioners(self.rng.child("producer")), self.rng.child("metadata"))
        # the other ends of the wires
        network.arrive = brokers.arrive
        network.received = processes.received
        network.disconnected = processes.disconnected
        brokers.consumers = processes.consumers
        app.driver = processes

        self.svc = brokers.svc
        self.consumers: list[SimConsumer] = processes.consumers
        self.by_name = processes.by_name
        self.consumer_errors = processes.errors
        self.trace = tracer.events
        self.records = tracer.records
        tracer.trace("scenario", name=scenario.scenario.name, seed=seed)
        self.timeline.schedule()

    @property
    def now(self) -> int:
        """Virtual time (ms)."""
        return self.queue.now

    @property
    def api_counts(self) -> dict[str, int]:
        """Requests sent, by API name."""
        return {API_NAMES.get(k, str(k)): n for k, n in self.network.request_counts.items()}

    def call(self, t: int, fn: Callable, *args: Any) -> None:
        """Schedule ``fn(*args)`` at virtual time ``t``."""
        self.queue.call(t, fn, *args)

    def run(self, until_ms: int) -> None:
        """Process every event due by ``until_ms`` (virtual time then stands at ``until_ms``)."""
        try:
            self.queue.run(until_ms)
        finally:
            self.stats["events"] = self.queue.events
            self.stats["requests"] = sum(self.network.request_counts.values())
            self.stats["responses"] = self.network.responses

    def _livelock_message(self, t: int) -> str:
        return (f"livelock: more than {LIVELOCK_EVENTS} events at t={t} ms (seed {self.seed}); last events:\n"
                + "\n".join(self.tracer.recent.render()))
