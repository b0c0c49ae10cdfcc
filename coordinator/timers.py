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
    """An armed timer (immutable; a NamedTuple because one is built per heartbeat)."""

    key: str
    deadline_ms: int
    action: tuple[Any, ...]
    seq: int


class TimerQueue:
    def __init__(self) -> None:
        self._timers: dict[str, Timer] = {}
        self._heap: list[tuple[int, int, str]] = []
        self._seq = 0
        self._watchers: set[Any] | None = None
        self._watch_key: Any = None

    def watch(self, changed: set[Any], key: Any) -> None:
        """Add ``key`` to ``changed`` whenever this queue's contents change (schedule, cancel, pop, clear), so an
        owner of many queues can cache their next deadlines and re-read only the queues that changed."""
        self._watchers, self._watch_key = changed, key

    def schedule(self, key: str, deadline_ms: int, action: tuple[Any, ...]) -> None:
        self._seq += 1
        seq = self._seq
        self._timers[key] = Timer(key, deadline_ms, action, seq)
        heap = self._heap
        heapq.heappush(heap, (deadline_ms, seq, key))
        if len(heap) > 4 * len(self._timers) + 64:
            # Replaced and cancelled timers leave stale heap entries, dropped only when they reach the top; a
            # member heartbeating far more often than its session timeout would grow the heap without bound.
            self._heap = [(t.deadline_ms, t.seq, t.key) for t in self._timers.values()]
            heapq.heapify(self._heap)
        if self._watchers is not None:
            self._watchers.add(self._watch_key)

    def cancel(self, key: str) -> None:
        if self._timers.pop(key, None) is not None and self._watchers is not None:
            self._watchers.add(self._watch_key)

    def get(self, key: str) -> Timer | None:
        return self._timers.get(key)

    def __contains__(self, key: str) -> bool:
        return key in self._timers

    def _clean(self) -> None:
        while self._heap:
            deadline, seq, key = self._heap[0]
            t = self._timers.get(key)
            if t is not None and t.seq == seq:
                return
            heapq.heappop(self._heap)

    def next_deadline(self) -> int | None:
        self._clean()
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now_ms: int) -> Timer | None:
        """The earliest timer due at ``now_ms`` (removed), or None."""
        self._clean()
        if not self._heap or self._heap[0][0] > now_ms:
            return None
        _, _, key = heapq.heappop(self._heap)
        if self._watchers is not None:
            self._watchers.add(self._watch_key)
        return self._timers.pop(key)

    def clear(self) -> None:
        self._timers.clear()
        self._heap.clear()
        if self._watchers is not None:
            self._watchers.add(self._watch_key)

    def snapshot(self) -> dict[str, int]:
        """key -> deadline, sorted by key (for tests and teaching views)."""
        return {k: t.deadline_ms for k, t in sorted(self._timers.items())}
