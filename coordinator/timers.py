"""Named, replaceable timers in virtual time (Kafka's ``CoordinatorTimer`` keyed by name).

``schedule(key, deadline_ms, action)`` replaces any timer with the same key; ``cancel(key)`` removes it. Timers
are data: the action is a tuple the owner interprets, so the queue never calls back into anything. Expired
timers come out in (deadline, scheduling order) order; a timer is due when ``now_ms >= deadline_ms`` (as Kafka's
``MockCoordinatorTimer``).
"""

from __future__ import annotations

import heapq
from typing import Any, NamedTuple


class Timer(NamedTuple):
    """An armed timer, as :meth:`TimerQueue.get` and :meth:`TimerQueue.pop_due` return it."""

    deadline_ms: int
    seq: int
    key: str
    action: tuple[Any, ...]


# A timer's place in the queue is one int, deadline * 2**SEQ_BITS + scheduling order: ordering by it is ordering
# by (deadline, scheduling order), and one int per armed timer is one object fewer than two (see TimerQueue).
SEQ_BITS = 40
_SEQ_MASK = (1 << SEQ_BITS) - 1


class TimerQueue:
    def __init__(self) -> None:
        # Each armed timer is one plain tuple (order, key, action) shared by the dict and the heap, where order is
        # deadline * 2**SEQ_BITS + seq: tuples compare by order, which is unique, so key and action are never
        # compared. A heartbeat re-arms its member's timer, so this is one tuple and one int per heartbeat, which
        # live until the member's next heartbeat; with thousands of members they are freed cold, so each object
        # saved counts (a NamedTuple would add a Python-level __new__, a separate seq int one more object).
        self._timers: dict[str, tuple] = {}
        self._heap: list[tuple] = []  # armed timers plus stale ones (replaced or cancelled), dropped at the top
        self._seq = 0
        self._watchers: set[Any] | None = None
        self._watch_key: Any = None

    def watch(self, changed: set[Any], key: Any) -> None:
        """Add ``key`` to ``changed`` whenever this queue's contents change (schedule, cancel, pop, clear), so an
        owner of many queues can cache their next deadlines and re-read only the queues that changed."""
        self._watchers, self._watch_key = changed, key

    def schedule(self, key: str, deadline_ms: int, action: tuple[Any, ...]) -> None:
        self._seq += 1
        t = self._timers[key] = ((deadline_ms << SEQ_BITS) + self._seq, key, action)
        heap = self._heap
        heapq.heappush(heap, t)
        if len(heap) > 4 * len(self._timers) + 64:
            # Replaced and cancelled timers leave stale heap entries, dropped only when they reach the top; a
            # member heartbeating far more often than its session timeout would grow the heap without bound.
            self._heap = list(self._timers.values())
            heapq.heapify(self._heap)
        if self._watchers is not None:
            self._watchers.add(self._watch_key)

    def cancel(self, key: str) -> None:
        if self._timers.pop(key, None) is not None and self._watchers is not None:
            self._watchers.add(self._watch_key)

    def get(self, key: str) -> Timer | None:
        t = self._timers.get(key)
        return None if t is None else _timer(t)

    def __contains__(self, key: str) -> bool:
        return key in self._timers

    def _clean(self) -> None:
        heap, timers = self._heap, self._timers
        while heap:
            t = heap[0]
            if timers.get(t[1]) is t:  # (its key) still armed, not replaced or cancelled
                return
            heapq.heappop(heap)

    def next_deadline(self) -> int | None:
        self._clean()
        return self._heap[0][0] >> SEQ_BITS if self._heap else None

    def pop_due(self, now_ms: int) -> Timer | None:
        """The earliest timer due at ``now_ms`` (removed), or None."""
        self._clean()
        if not self._heap or self._heap[0][0] >> SEQ_BITS > now_ms:
            return None
        t = heapq.heappop(self._heap)
        if self._watchers is not None:
            self._watchers.add(self._watch_key)
        del self._timers[t[1]]
        return _timer(t)

    def clear(self) -> None:
        self._timers.clear()
        self._heap.clear()
        if self._watchers is not None:
            self._watchers.add(self._watch_key)

    def snapshot(self) -> dict[str, int]:
        """key -> deadline, sorted by key (for tests and teaching views)."""
        return {k: t[0] >> SEQ_BITS for k, t in sorted(self._timers.items())}


def _timer(t: tuple) -> Timer:
    order, key, action = t
    return Timer(order >> SEQ_BITS, order & _SEQ_MASK, key, action)
