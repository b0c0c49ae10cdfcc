"""Named, replaceable timers in virtual time (Kafka's ``CoordinatorTimer``: ``schedule(key, ...)`` replaces the
timer of that key, ``cancel(key)`` removes it).

The timer table
---------------
Every timer a shard arms has a :class:`TimerKey` built by one function of this table; its ``name`` is what views
and tests show. A key names *what* is timed; a firing timer hands its key and payload to the shard, which looks
the kind up in its dispatch table (``GroupCoordinatorShard``) -- the queue never calls anything.

* ``heartbeat-<group>-<member>`` -- :func:`heartbeat_timer`: a member's session expires
  (``ClassicGroupManager.expire_heartbeat``);
* ``pending-<group>-<member>`` -- :func:`pending_member_timer`: a MEMBER_ID_REQUIRED id was not used to rejoin
  (``expire_pending``);
* ``initial-<group>`` -- :func:`initial_rebalance_timer`: the end of an initial-delay window
  (``try_complete_initial_rebalance``; payload: delay, remaining);
* ``join-<group>`` -- :func:`join_timer`: the rebalance timeout of the join phase (``join_timeout``);
* ``sync-<group>`` -- :func:`pending_sync_timer`: members that never sent SyncGroup, KAFKA-12890
  (``expire_pending_sync``; payload: generation);
* ``offsets-retention`` -- :data:`RETENTION_TIMER`: the offset-expiry sweep of the shard
  (``GroupCoordinatorShard._cleanup_group_metadata``).

KIP-848 consumer groups (``ConsumerGroupManager``), Kafka's own keys:

* ``session-timeout-<group>-<member>`` -- :func:`session_timeout_timer`: the member's session expired, it is fenced
  (``GroupMetadataManager.scheduleConsumerGroupSessionTimeout``);
* ``rebalance-timeout-<group>-<member>`` -- :func:`rebalance_timeout_timer`: the member did not revoke its
  partitions within its rebalance timeout (payload: the member epoch it was armed at, the timeout);
* ``join-<group>-<member>`` / ``sync-<group>-<member>`` -- :func:`consumer_join_timer` /
  :func:`consumer_sync_timer`: a classic-protocol member inside a consumer group did not rejoin / sync in time
  (``consumerGroupJoinKey`` / ``consumerGroupSyncKey``; the same kinds as the classic group's ``join``/``sync``,
  told apart by having a member);
* ``<group>-regex`` -- :func:`regex_resolution_timer`: the resolution of the group's subscription regexes, which
  Kafka runs on its executor (``CoordinatorExecutor`` key ``groupId + "-regex"``) and kgroup as an operation due
  at once (payload: the member that asked).

Kafka keys pending member ids under ``heartbeat-...`` and both join timers ``join-<group>``; kgroup gives them
names of their own so views can tell them apart (and cancels both join keys wherever Kafka cancels its one).

The queue
---------
Expired timers come out in (deadline, scheduling order); a timer is due when ``now_ms >= deadline_ms`` (as Kafka's
``MockCoordinatorTimer``). The timers of a group are indexed by group id, so deleting a group cancels exactly
its timers -- also those of members already gone (a replaced static member's session timer) -- without a scan.

A shard's runtime attaches a journal (:attr:`TimerQueue.journal`): every change records how to undo it (the key
and its previous timer, no copy), and :meth:`TimerQueue.undo` rolls back an operation that raised
(``coordinator.runtime``).
"""

from __future__ import annotations

import heapq
from typing import Any, NamedTuple

HEARTBEAT = "heartbeat"
PENDING_MEMBER = "pending"
INITIAL_REBALANCE = "initial"
JOIN = "join"
PENDING_SYNC = "sync"
RETENTION = "offsets-retention"
SESSION_TIMEOUT = "session-timeout"
REBALANCE_TIMEOUT = "rebalance-timeout"
REGEX_RESOLUTION = "regex"


class TimerKey(NamedTuple):
    """What a timer times: its kind, and the group and member it belongs to (None where it has none)."""

    kind: str
    group_id: str | None = None
    member_id: str | None = None

    @property
    def name(self) -> str:
        if self.kind == REGEX_RESOLUTION:
            return f"{self.group_id}-regex"  # Kafka's executor key
        return "-".join(p for p in self if p is not None)


def heartbeat_timer(group_id: str, member_id: str) -> TimerKey:
    """A member's session timeout (5 minutes for a new member awaiting its first join, KAFKA-9232)."""
    return TimerKey(HEARTBEAT, group_id, member_id)


def pending_member_timer(group_id: str, member_id: str) -> TimerKey:
    """A MEMBER_ID_REQUIRED id that has not rejoined yet (KIP-394; the request's session timeout)."""
    return TimerKey(PENDING_MEMBER, group_id, member_id)


def initial_rebalance_timer(group_id: str) -> TimerKey:
    """The initial delayed join of a group that was Empty (``group.initial.rebalance.delay.ms``)."""
    return TimerKey(INITIAL_REBALANCE, group_id)


def join_timer(group_id: str) -> TimerKey:
    """The rebalance timeout of a join phase."""
    return TimerKey(JOIN, group_id)


def pending_sync_timer(group_id: str) -> TimerKey:
    """Members that joined but never sent SyncGroup (KAFKA-12890)."""
    return TimerKey(PENDING_SYNC, group_id)


def session_timeout_timer(group_id: str, member_id: str) -> TimerKey:
    """A consumer group member's session (``group.consumer.session.timeout.ms``)."""
    return TimerKey(SESSION_TIMEOUT, group_id, member_id)


def rebalance_timeout_timer(group_id: str, member_id: str) -> TimerKey:
    """A consumer group member's revocation deadline (its rebalance timeout)."""
    return TimerKey(REBALANCE_TIMEOUT, group_id, member_id)


def consumer_join_timer(group_id: str, member_id: str) -> TimerKey:
    """A classic-protocol member of a consumer group that must rejoin (``join-<group>-<member>``)."""
    return TimerKey(JOIN, group_id, member_id)


def consumer_sync_timer(group_id: str, member_id: str) -> TimerKey:
    """A classic-protocol member of a consumer group that must send SyncGroup (``sync-<group>-<member>``)."""
    return TimerKey(PENDING_SYNC, group_id, member_id)


def regex_resolution_timer(group_id: str) -> TimerKey:
    """The resolution of a consumer group's subscription regexes (Kafka's executor job ``<group>-regex``)."""
    return TimerKey(REGEX_RESOLUTION, group_id)


#: The shard's periodic offset-expiry sweep (``offsets.retention.check.interval.ms``).
RETENTION_TIMER = TimerKey(RETENTION)

NO_PAYLOAD: tuple = ()


class Timer(NamedTuple):
    """An armed timer, as :meth:`TimerQueue.get` and :meth:`TimerQueue.pop_due` return it."""

    deadline_ms: int
    seq: int
    key: TimerKey
    payload: tuple[Any, ...]


# A timer's place in the queue is one int, deadline * 2**SEQ_BITS + scheduling order: ordering by it is ordering
# by (deadline, scheduling order), and one int per armed timer is one object fewer than two (see TimerQueue).
SEQ_BITS = 40
_SEQ_MASK = (1 << SEQ_BITS) - 1


class TimerQueue:
    def __init__(self) -> None:
        # Each armed timer is one plain tuple (order, key, payload) shared by the dict and the heap, where order is
        # deadline * 2**SEQ_BITS + seq: tuples compare by order, which is unique, so keys and payloads are never
        # compared. A heartbeat re-arms its member's timer, so this is one tuple and one int per heartbeat, which
        # live until the member's next heartbeat; with thousands of members they are freed cold, so each object
        # saved counts (a NamedTuple would add a Python-level __new__, a separate seq int one more object).
        self._timers: dict[TimerKey, tuple] = {}
        self._heap: list[tuple] = []  # armed timers plus stale ones (replaced or cancelled), dropped at the top
        self._by_group: dict[str, dict[TimerKey, None]] = {}  # group id -> its armed keys (ordered set)
        self._seq = 0
        self._watchers: set[Any] | None = None
        self._watch_key: Any = None
        #: Attached by the runtime: (key, previous timer tuple or None) per change, flattened into one list.
        self.journal: list | None = None

    def watch(self, changed: set[Any], key: Any) -> None:
        """Add ``key`` to ``changed`` whenever this queue's contents change (schedule, cancel, pop, clear), so an
        owner of many queues can cache their next deadlines and re-read only the queues that changed."""
        self._watchers, self._watch_key = changed, key

    def schedule(self, key: TimerKey, deadline_ms: int, payload: tuple[Any, ...] = NO_PAYLOAD) -> None:
        self._seq += 1
        t = ((deadline_ms << SEQ_BITS) + self._seq, key, payload)
        timers = self._timers
        old = timers.get(key)
        timers[key] = t
        if old is None and key.group_id is not None:
            self._index(key)
        journal = self.journal
        if journal is not None:
            journal.append(key)
            journal.append(old)
        heap = self._heap
        heapq.heappush(heap, t)
        if len(heap) > 4 * len(timers) + 64:
            # Replaced and cancelled timers leave stale heap entries, dropped only when they reach the top; a
            # member heartbeating far more often than its session timeout would grow the heap without bound.
            self._heap = list(timers.values())
            heapq.heapify(self._heap)
        if self._watchers is not None:
            self._watchers.add(self._watch_key)

    def cancel(self, key: TimerKey) -> None:
        old = self._timers.pop(key, None)
        if old is None:
            return
        self._unindex(key)
        if self.journal is not None:
            self.journal.append(key)
            self.journal.append(old)
        if self._watchers is not None:
            self._watchers.add(self._watch_key)

    def cancel_group(self, group_id: str) -> None:
        """Cancel every timer of ``group_id`` (its join/sync timers and its members' timers)."""
        keys = self._by_group.get(group_id)
        if keys:
            for key in list(keys):
                self.cancel(key)

    def get(self, key: TimerKey) -> Timer | None:
        t = self._timers.get(key)
        return None if t is None else _timer(t)

    def __contains__(self, key: TimerKey) -> bool:
        return key in self._timers

    def _index(self, key: TimerKey) -> None:
        keys = self._by_group.get(key.group_id)
        if keys is None:
            keys = self._by_group[key.group_id] = {}
        keys[key] = None

    def _unindex(self, key: TimerKey) -> None:
        if key.group_id is not None:
            keys = self._by_group[key.group_id]
            del keys[key]
            if not keys:
                del self._by_group[key.group_id]

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
        self._unindex(t[1])
        if self.journal is not None:
            self.journal.append(t[1])
            self.journal.append(t)
        return _timer(t)

    def clear(self) -> None:
        if self.journal is not None:
            for key, t in self._timers.items():
                self.journal.append(key)
                self.journal.append(t)
        self._timers.clear()
        self._heap.clear()
        self._by_group.clear()
        if self._watchers is not None:
            self._watchers.add(self._watch_key)

    def undo(self, journal: list) -> None:
        """Roll back the changes recorded in ``journal`` (newest first): each key gets its previous timer back,
        with its original deadline and scheduling order, or is disarmed if it had none."""
        timers, heap = self._timers, self._heap
        for i in range(len(journal) - 2, -1, -2):
            key, old = journal[i], journal[i + 1]
            current = timers.pop(key, None)
            if current is not None:
                self._unindex(key)
            if old is not None:
                timers[key] = old
                if key.group_id is not None:
                    self._index(key)
                heapq.heappush(heap, old)  # a copy may still be in the heap: the stale one is dropped at the top
        if self._watchers is not None:
            self._watchers.add(self._watch_key)

    def snapshot(self) -> dict[str, int]:
        """timer name -> deadline, sorted by name (for tests and teaching views)."""
        return dict(sorted((k.name, t[0] >> SEQ_BITS) for k, t in self._timers.items()))


def _timer(t: tuple) -> Timer:
    order, key, payload = t
    return Timer(order >> SEQ_BITS, order & _SEQ_MASK, key, payload)


def session_timer(group_id: str, member_id: str) -> tuple[TimerKey, tuple]:
    """(key, payload) of a member's session timer, for ``TimerQueue.schedule(key, deadline, payload)``. Kept for
    ``broker/faults.py`` until it expires sessions through ``GroupCoordinatorService.expire_sessions``."""
    return heartbeat_timer(group_id, member_id), NO_PAYLOAD
