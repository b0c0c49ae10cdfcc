"""The timeline: a scenario's actions and faults (``[[timeline]]``, docs/scenarios.md) carried out at their virtual
times, and the producers.

Theory of operation
-------------------
* **Scheduling.** At the start of a run every member with a start time and every timeline action is put on the
  event queue at its ``at`` (members first, then actions in file order), so simultaneous actions happen in the
  order they were written. An action is traced (``action``) when it happens, with its fields.
* **What an action does** is some other part's operation, resolved at the moment it happens: consumer
  processes start, stop, crash, pause (:mod:`scenarios.consumers`); ``restart`` is a stop (or a crash) and a
  start ``down_ms`` later -- a process still closing by then is killed; ``rolling_restart`` restarts the group's
  members ``batch`` at a time every ``interval_ms``; ``slow`` slows the application (:mod:`scenarios.application`);
  ``network_partition`` and ``message_fault`` add fault rules to the network (:mod:`scenarios.network`; the
  partition's ``broker = "coordinator"`` is the group's coordinator *now*); brokers stop, start and elect
  leaders (:mod:`scenarios.brokers`); ``add_partitions`` grows a topic, and each consumer sees it at a seeded
  random moment within ``metadata_max_age_ms`` (the ``metadata`` stream); ``subscribe`` changes subscriptions.
* **Producing.** ``produce`` appends ``count`` records to a topic's partition logs, all at once or at
  ``rate_per_s`` (one action re-scheduling itself at the next record's time), choosing partitions with the
  producer's partitioners (:mod:`scenarios.partitioners`: murmur2 for keys, round-robin, sticky) over the
  partitions that have a leader; then the idle owners of the touched partitions wake up to fetch.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from coordinator.cluster import NO_LEADER

from scenarios import model as M
from scenarios.tracing import API_BY_NAME


class Timeline:
    """The scenario's actions, at their times."""

    def __init__(self, scenario: M.Scenario, clock: Any, call: Callable[..., None], tracer: Any, consumers: Any,
                 app: Any, network: Any, brokers: Any, logs: Any, partitioners: Any, meta_rng: Any) -> None:
        self.scenario = scenario
        self._clock = clock
        self._call = call
        self.tracer = tracer
        self.consumers = consumers
        self.app = app
        self.network = network
        self.brokers = brokers
        self.logs = logs
        self.partitioners = partitioners
        self.meta_rng = meta_rng
        self.armed: list[tuple[Any, int]] = []  # phase-triggered faults waiting for their phase

    def schedule(self) -> None:
        """Put the members' starts and every action on the event queue."""
        for c in self.consumers.consumers:
            if c.spec.start is not None:
                self._call(c.spec.start, self.consumers.start, c.name)
        for a in self.scenario.timeline:
            self._call(a.at, self.act, a)

    def act(self, a: Any) -> None:
        now = self._clock.now
        kind = a.action
        consumers = self.consumers
        brokers = self.brokers
        self.tracer.trace("action", action=kind, **{k: v for k, v in a.model_dump().items()
                                                     if k not in ("action", "at") and v is not None})
        if getattr(a, "during", None) is not None:
            self.arm_phase(a, now + (a.within_ms if a.within_ms is not None else M.PHASE_WAIT_MS))
        else:
            self.perform(a)

    def perform(self, a: Any) -> None:
        """What action ``a`` does, now."""
        now = self._clock.now
        kind = a.action
        consumers = self.consumers
        brokers = self.brokers
        if kind == "start":
            consumers.start(a.consumer)
        elif kind == "stop":
            consumers.stop(a.consumer)
        elif kind == "crash":
            consumers.crash(consumers.by_name[a.consumer])
        elif kind == "restart":
            self.restart(a.consumer, a.down_ms, a.graceful, a.protocol)
        elif kind == "gc_pause":
            consumers.pause(a.consumer, a.duration_ms)
        elif kind == "slow":
            self.app.slow(consumers.by_name[a.consumer], now + a.duration_ms, a.poll_ms)
        elif kind == "network_partition":
            if a.broker == "all":
                targets = None
            elif a.broker == "coordinator":
                targets = frozenset([brokers.svc.coordinator_of(consumers.by_name[a.consumer].group)])
            else:
                targets = frozenset([a.broker])
            self.network.partition(a.consumer, targets, a.direction in ("both", "to_broker"),
                                   a.direction in ("both", "from_broker"), a.mode, a.delay_ms, now + a.duration_ms)
        elif kind == "message_fault":
            self.network.message_fault(a.consumer, None if a.api == "any" else API_BY_NAME[a.api],
                                       a.direction in ("both", "request"), a.direction in ("both", "response"),
                                       a.mode, a.delay_ms, a.probability, a.count, now + a.duration_ms,
                                       None if a.phase is None else frozenset([a.phase]), a.epoch)
        elif kind == "hold_revocation":
            consumers.hold_revocation(consumers.by_name[a.consumer], now + a.within_ms, a.duration_ms)
        elif kind == "broker_crash":
            b = a.broker
            if b == "coordinator":
                b = brokers.svc.coordinator_of(a.group or self.scenario.groups[0].id)
            if b < 0:
                return
            brokers.stop_broker(b)
            if a.duration_ms is not None:
                self._call(now + a.duration_ms, brokers.start_broker, b, a.elect_preferred)
        elif kind == "broker_restart":
            brokers.start_broker(a.broker, a.elect_preferred)
        elif kind == "elect_leaders":
            brokers.elect_preferred_leaders()
        elif kind == "add_partitions":
            meta = brokers.add_partitions(a.topic, a.partitions)
            self.logs.ensure(a.topic, a.partitions)
            age = self.scenario.cluster.metadata_max_age_ms
            for c in consumers.consumers:
                self._call(now + (self.meta_rng.randint(0, age) if age else 0), consumers.refresh_metadata, c, meta)
        elif kind == "subscribe":
            targets = ([consumers.by_name[a.consumer]] if a.consumer
                       else [c for c in consumers.consumers if c.group == a.group])
            for c in targets:
                consumers.subscribe(c, a.topics)
        elif kind == "rolling_restart":
            members = [c for c in consumers.consumers if c.group == a.group]
            if a.count is not None:
                members = members[: a.count]
            for i, c in enumerate(members):
                self._call(now + (i // a.batch) * a.interval_ms, self.restart, c.name, a.down_ms, a.graceful,
                           a.protocol)
        elif kind == "produce":
            self.produce(a, 0)

    # --- faults aimed at a phase ------------------------------------------------------------------------------------
    def phase_group(self, a: Any) -> str:
        """The group whose phase an action with ``during`` waits for."""
        if getattr(a, "group", None):
            return a.group
        if getattr(a, "consumer", None):
            return self.consumers.by_name[a.consumer].group
        return self.scenario.groups[0].id

    def arm_phase(self, a: Any, until_ms: int) -> None:
        """An action with ``during`` (``broker_crash``, ``subscribe``, ``add_partitions``): do it at the first moment,
        until ``until_ms``, its group is in that phase (checked now and after every coordinator operation)."""
        self.armed.append((a, until_ms))
        self.brokers.on_operation = self.check_armed
        self._call(until_ms + 1, self.check_armed)  # (to say so if the phase never came)
        self.check_armed()

    def in_phase(self, gid: str, phase: str) -> bool:
        svc = self.brokers.svc
        if phase == "rebalancing":
            g = svc.group(gid)
            return g is not None and g.state.value in ("PreparingRebalance", "CompletingRebalance")
        cg = svc.consumer_group(gid)
        return cg is not None and str(cg.state) == ("Reconciling" if phase == "reconciling" else "Assigning")

    def check_armed(self) -> None:
        now = self._clock.now
        keep = []
        for a, until in self.armed:
            gid = self.phase_group(a)
            if now > until:
                self.tracer.trace("phase_not_reached", action=a.action, group=gid, during=a.during)
            elif self.in_phase(gid, a.during):
                self.tracer.trace("phase_reached", action=a.action, group=gid, during=a.during)
                self._call(now, self.perform, a)
            else:
                keep.append((a, until))
        self.armed = keep
        if not keep:
            self.brokers.on_operation = None

    # --- restarts ---------------------------------------------------------------------------------------------------
    def restart(self, name: str, down_ms: int, graceful: bool, protocol: Optional[str] = None) -> None:
        consumers = self.consumers
        if protocol is None:
            self.tracer.trace("restart", consumer=name, down_ms=down_ms, graceful=graceful)
        else:
            self.tracer.trace("restart", consumer=name, down_ms=down_ms, graceful=graceful, protocol=protocol)
        if graceful:
            consumers.stop(name)
        else:
            consumers.crash(consumers.by_name[name])
        self._call(self._clock.now + down_ms, self._restart_up, name, protocol)

    def _restart_up(self, name: str, protocol: Optional[str] = None) -> None:
        consumers = self.consumers
        c = consumers.by_name[name]
        if c.alive:  # still closing: the process is killed
            consumers.crash(c, reason="killed while closing")
        if protocol is not None:
            consumers.set_protocol(c, protocol)
        consumers.start(name)

    # --- producing --------------------------------------------------------------------------------------------------
    def produce(self, a: M.Produce, done: int) -> None:
        """Append the records of ``a`` due by now (``done`` of them already appended)."""
        now = self._clock.now
        if a.rate_per_s is None:
            due = a.count
        else:
            elapsed = now - a.at
            due = min(a.count, int(elapsed * a.rate_per_s / 1000) + 1)
        cluster = self.brokers.cluster
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
            self._call(nxt, self.produce, a, due)
        # wake idle owners
        owners = self.consumers.owners
        everyone = self.consumers.consumers
        for tp in sorted(touched):
            for idx in sorted(owners.get(tp, ())):
                self.app.records_arrived(everyone[idx])
