"""The simulator's event queue: virtual time and everything scheduled to happen in it.

Theory of operation
-------------------
* **Time** is an integer of virtual milliseconds, :attr:`EventQueue.now`. Nothing else in a run tells the time:
  every part of the simulator reads the queue's ``now``.
* **An event** is a tuple ``(handler, a, b)``; at its millisecond the queue calls ``handler(a, b)``. The parts of
  the simulator build their events with their own handlers (a delivery is ``(network.deliver, connection,
  message)``, a consumer's wake-up ``(driver.on_tick, consumer, None)``), so the queue knows nothing about what
  it runs. :meth:`EventQueue.call` schedules any function with arguments (timeline actions).
* **Order.** Each virtual millisecond has one FIFO list of its events, so simultaneous events run in the order
  they were scheduled, and an event scheduled for the millisecond being processed joins the end of its list.
  That order, with the seeded randomness, is what makes a run a pure function of (scenario, seed).
* **Storage.** Milliseconds less than :data:`WHEEL_MS` ahead of the cursor live in a timing wheel (a list indexed
  by time modulo its size: the next event is found by stepping through the slots, at most one step per virtual
  millisecond); later ones in a dict with a heap of their times, moved into the wheel -- ahead of anything
  scheduled there since, since they were scheduled first -- as the cursor comes within reach. Most events are a
  millisecond or a heartbeat interval away, so they never touch the heap (whose sifts chase pointers to
  scattered int objects: cache misses at 1,000 members).
* **Lazy deletion** is the handlers' business: a wake-up whose deadline moved finds a newer deadline recorded on
  its owner when it is popped, and does nothing.
* **A livelock** -- more than :data:`LIVELOCK_EVENTS` events at one virtual millisecond, something spinning
  without time passing -- stops the run with :class:`SimulationError` instead of hanging.
"""

from __future__ import annotations

import gc
import heapq
from typing import Any, Callable

#: more events than this at one virtual millisecond means something spins without time passing
LIVELOCK_EVENTS = 200_000
#: the timing wheel's span in virtual milliseconds (a power of two); events further ahead wait in a heap
WHEEL_MS = 1 << 14
WHEEL_MASK = WHEEL_MS - 1


class SimulationError(RuntimeError):
    """The simulation itself went wrong (e.g. a livelock); the message carries the seed and recent events."""


def _apply(fn: Callable, args: tuple) -> None:
    fn(*args)


class EventQueue:
    """Virtual time and the events scheduled in it."""

    def __init__(self, livelock_message: Callable[[int], str] | None = None) -> None:
        self.now = 0
        #: events processed so far
        self.events = 0
        self._livelock_message = livelock_message or (lambda t: f"livelock: more than {LIVELOCK_EVENTS} events "
                                                                f"at t={t} ms")
        self._wheel: list = [None] * WHEEL_MS
        self._cursor = 0  # every wheel event is in [cursor, cursor + WHEEL_MS)
        self._near = 0  # events in the wheel
        self._times: list[int] = []  # the far milliseconds (heap)
        self._at: dict[int, list] = {}  # far millisecond -> its events

    def push(self, t: int, ev: tuple) -> None:
        """Schedule event ``ev`` = ``(handler, a, b)`` at virtual time ``t``."""
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
        """Schedule ``fn(*args)`` at virtual time ``t``."""
        self.push(t, (_apply, fn, args))

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
                handler, a, b = q[k]
                k += 1
                handler(a, b)
                if k > LIVELOCK_EVENTS:
                    raise SimulationError(self._livelock_message(t))
            n += k
            self._near -= k
            wheel[i] = None
        self._cursor = max(cursor, self._cursor)
        self.events += n
        if self.now < until_ms:
            self.now = until_ms
