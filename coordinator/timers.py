"""Named, replaceable timers in virtual time (Kafka's ``CoordinatorTimer`` keyed by name).

``schedule(key, deadline_ms, action)`` replaces any timer with the same key; ``cancel(key)`` removes it. Timers
are data: the action is a tuple the owner interprets, so the queue never calls back into anything. Expired
timers come out in (deadline, scheduling order) order; a timer is due when ``now_ms >= deadline_ms`` (as Kafka's
``MockCoordinatorTimer``).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Timer:
    key: str
    deadline_ms: int
    action: tuple[Any, ...]
    seq: int


class TimerQueue:
    def __init__(self) -> None:
        self._timers: dict[str, Timer] = {}
        self._heap: list[tuple[int, int, str]] = []
        self._seq = 0

    def schedule(self, key: str, deadline_ms: int, action: tuple[Any, ...]) -> None:
        self._seq += 1
        t = Timer(key, deadline_ms, action, self._seq)
        self._timers[key] = t
        heapq.heappush(self._heap, (deadline_ms, t.seq, key))

    def cancel(self, key: str) -> None:
        self._timers.pop(key, None)

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
        return self._timers.pop(key)

    def clear(self) -> None:
        self._timers.clear()
        self._heap.clear()

    def snapshot(self) -> dict[str, int]:
        """key -> deadline, sorted by key (for tests and teaching views)."""
        return {k: t.deadline_ms for k, t in sorted(self._timers.items())}
