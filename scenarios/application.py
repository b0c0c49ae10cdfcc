"""The application model: the thread of each consumer process that calls ``KafkaConsumer.poll`` and processes what
it returns.

Theory of operation
-------------------
* **The loop.** The application polls; if the poll returns fetchable partitions with records it takes up to
  ``max_poll_records`` (advancing the positions, as ``KafkaConsumer.poll`` does: ``ConsumerCoordinator.advance``)
  and is busy for ``poll_ms + record_ms * records``; then it polls again. Records count as consumed
  (:class:`scenarios.datapath.Consumption`) when processing *finishes*: a consumer that crashes mid-batch has not
  consumed them. A ``slow`` fault makes every poll in its window take at least ``poll_ms`` (past
  ``max.poll.interval.ms``: a poll timeout).
* **Idle is inside poll.** An idle application is always inside ``poll(poll_timeout_ms)``; the simulator calls
  ``poll`` when it has work -- the core's ``next_poll_deadline_ms()`` (a join step, an auto-commit, positions to
  fetch) or records waiting in an assigned partition -- and at least once per ``poll_timeout_ms`` before the
  core's poll timer would expire (``poll_timeout_deadline_ms()``). Polls that would do nothing are elided: they
  could change no state but the poll timer, which the guard keeps alive.
* **Blocked in poll.** A poll that cannot make progress although the core asks for one at once (positions it
  will only fetch once the join in progress completes) leaves the application blocked in ``poll`` until a
  response or a disconnect arrives (the consumer process clears ``blocked``) or ``poll_timeout_ms`` passes --
  ``KafkaConsumer.poll`` blocks instead of spinning.
* **New records** wake an idle owner one network latency later (a waiting fetch answered). With
  ``auto.offset.reset = latest`` the core is told the log end offsets (``ListOffsets`` LATEST) whenever the logs
  changed since it last heard.

The records themselves are :mod:`scenarios.datapath`'s partition-log model: offsets are list indexes.
"""

from __future__ import annotations

from typing import Any, Callable

from consumer.assignors import TopicPartition


class Application:
    """The poll loop of every simulated consumer."""

    def __init__(self, clock: Any, push: Callable[[int, tuple], None], logs: Any, consumption: Any,
                 latency_ms: int) -> None:
        self._clock = clock
        self._push = push
        self.logs = logs
        self.consumption = consumption
        self.latency = latency_ms
        self.driver: Any = None  # the consumer processes (scenarios.consumers.Consumers), wired by the world

    def on_turn(self, c: Any, _: Any) -> None:
        """The application thread's wake-up (event handler)."""
        if c.app_at == self._clock.now and c.alive:
            c.app_at = None
            if c.paused_until is None:
                self.turn(c)

    def schedule(self, c: Any, core: Any, now: int) -> None:
        """Schedule the application's next turn, if earlier than the one already scheduled."""
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

    def _has_records(self, c: Any) -> bool:
        core = c.core
        pos = core.positions
        pend = core.pending_revocation
        logs = self.logs.logs
        for tp in core.assignment:
            p = pos.get(tp)
            if p is not None and tp not in pend and p < len(logs.get((tp.topic, tp.partition), ())):
                return True
        return False

    def turn(self, c: Any) -> None:
        """The application thread's turn: finish the current batch, or poll (and maybe start a batch)."""
        now = self._clock.now
        driver = self.driver
        if c.busy_until is not None:
            if now < c.busy_until:
                driver.reschedule(c)
                return
            self.finish_batch(c)
        if c.closing:
            return
        core = c.core
        if c.latest_reset and c.log_version != self.logs.version:
            # auto.offset.reset=latest resets to the log end at the time of the reset (ListOffsets LATEST)
            c.log_version = self.logs.version
            core.set_log_offsets(end={TopicPartition(t, p): len(v) for (t, p), v in self.logs.logs.items()})
        c.blocked = None
        res = driver.guard(c, core.poll, now)
        if c.owed is not None:
            driver.polled(c)
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
                self.finish_batch(c)
        elif c.busy_until is None:
            # KafkaConsumer.poll returns empty-handed; if the core still says "poll now" (e.g. positions to
            # fetch that the join in progress does not let it fetch), the application waits in poll
            c.blocked = now
            c.app_at = None
        driver.reschedule(c)

    def finish_batch(self, c: Any) -> None:
        """Processing of the current batch is over: its records count as consumed."""
        c.busy_until = None
        logs = self.logs.logs
        for tp, start, end in c.batch:
            self.consumption.processed(c.group, c.name, tp, start, end, logs[tp][start:min(end, start + 20)])
        c.batch = []

    def positions_reset(self, c: Any, reset: dict) -> None:
        """The core initialized positions by ``auto.offset.reset`` (no committed offset): where consumption
        starts."""
        for tp, off in reset.items():
            self.consumption.started(c.group, (tp.topic, tp.partition), off)

    def slow(self, c: Any, until_ms: int, poll_ms: int) -> None:
        """Until ``until_ms``, every poll is followed by at least ``poll_ms`` of processing."""
        c.slow_until = until_ms
        c.slow_poll_ms = poll_ms
        if c.alive and c.core is not None and c.busy_until is None and not c.closing:
            c.app_at = None
            self.driver.reschedule(c)

    def records_arrived(self, c: Any) -> None:
        """New records in a partition ``c`` holds: an idle application's fetch returns them one latency later."""
        if c.alive and c.core is not None and c.busy_until is None and not c.closing:
            t = self._clock.now + self.latency
            if c.app_at is None or t < c.app_at:
                c.app_at = t
                self._push(t, c.app_ev)
