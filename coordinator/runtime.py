"""The write path of one coordinator shard: operations in, one :class:`CoordinatorResult` out (Kafka's
``CoordinatorRuntime`` write operations, ``CoordinatorResult`` and ``SnapshottableCoordinator``).

Theory of operation
-------------------
Everything that happens to a shard is an *operation*: a request's handler, a timer that fired, the partition's
load or unload. :meth:`CoordinatorRuntime.run` runs one: the handler decides from the current state and returns
the response to its request (or :data:`PARKED`); everything else it produces goes through the runtime --

* :meth:`~CoordinatorRuntime.append` -- a record: appended to the operation's records and *replayed into the state
  at once* (``ShardState.apply``, the same fold as the load and the log replay), so the handler's next step sees it;
* :meth:`~CoordinatorRuntime.release` / :meth:`~CoordinatorRuntime.abandon` -- the answer to an earlier, parked
  request, or the news that Kafka will never answer it;
* the timer queue and the parked-request tables, changed in place.

If the handler returns, the runtime *commits*: the records go to the partition log (the writer sees them), and the
records, the response, the released answers and the abandoned ids come back as one :class:`CoordinatorResult`;
the driver-facing service releases the responses after the log's ``sync`` ("write, then respond"). If the handler
raises, the runtime *rolls back*: nothing reaches the log, the timers and parked requests are restored from the
operation's journal, the state is restored (below), the UUID generator is rewound, and the exception propagates
(an :class:`OperationError` -- a Kafka error by design, e.g. an ``IllegalStateException`` the coordinator throws on
purpose -- is answered with that error by the service; anything else is a bug and reaches the driver).

Why records are applied as they are appended
--------------------------------------------
Kafka's handlers build a record list and see their records only once the runtime replays them after the
operation. kgroup's handlers are written as sequences of steps where each step reads the state the previous
record made (remove a member, *then* elect the next leader; persist the assignment, *then* answer the parked
syncs): applying each record when it is appended keeps that code -- and every trace -- exactly as it was, while
the state still changes only by records (``ShardState.apply``, nothing else writes it).

How the rollback restores the state
-----------------------------------
Kafka snapshots its timeline data structures at every write and reverts to the snapshot (``revertLastWrittenOffset``).
kgroup keeps no snapshots: its state *is* the replay of its log (asserted after every call of the coordinator's
tests and available to the simulator as an invariant), and a failed operation never reached the log, so rolling
back is replaying the log: :func:`coordinator.replay.replay_live`, or the empty state if the partition was not
loaded yet. This costs nothing on the request path (a snapshot per operation would copy a 1,000-member group on
every JoinGroup) and O(log) only when a handler raises, which is a bug or a deliberate Kafka error that happens
before any record is appended (then the state is untouched and nothing is replayed). Timers and parked requests
are not in the log: their changes are journalled (a list of (key, previous value) pairs, no copy) and undone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

from protocol.uuids import random_uuid

from coordinator import records as R
from coordinator.errors import ApiError
from coordinator.log import PartitionLog
from coordinator.replay import ShardState, replay_live
from coordinator.timers import TimerQueue


class Marker:
    """A named answer that is not a response (an instruction to the driver): PARKED, ABANDONED, and the broker's
    data-path decisions."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: A handler's response when its request is parked: it is answered by a later operation (``released``) or
#: abandoned.
PARKED: Any = Marker("PARKED")
#: ``Output.answer`` of a request that was parked and abandoned within the same call (Kafka never answers it).
ABANDONED: Any = Marker("ABANDONED")

_EMPTY: tuple = ()


#: A Kafka error an operation fails with on purpose (Kafka: an ``ApiException``, or an exception the runtime maps
#: with ``Errors.forException``): the operation is rolled back and the request answered with ``error`` (and, where
#: the response has an ``ErrorMessage``, ``message`` as ``ApiError.fromThrowable`` keeps it). One class for the
#: classic and the consumer group handlers: ``coordinator.errors.ApiError``.
OperationError = ApiError


@dataclass(slots=True)
class CoordinatorResult:
    """What one operation produced (Kafka's ``CoordinatorResult``): the log entries it appended, the response to
    its request (:data:`PARKED` if parked; None for timers, loads and unloads; a group deletion's ErrorCode), the
    answers it released for earlier parked requests and the ids of parked requests Kafka will never answer."""

    records: list[R.LogEntry] | tuple
    response: Any
    released: list[tuple[Any, Any]] | tuple
    abandoned: list[Any] | tuple


class Parked(NamedTuple):
    """A request whose response comes later (Kafka: the JoinGroup/SyncGroup future of a member)."""

    request_id: Any
    api_version: int


class ParkedRequests:
    """Parked requests of one API, by (group id, member id); at most one per member (a newer one replaces it)."""

    __slots__ = ("_by_member", "journal")

    def __init__(self, journal: list) -> None:
        self._by_member: dict[tuple[str, str], Parked] = {}
        self.journal = journal  # (table, key, previous value) per change; cleared when an operation starts

    def park(self, key: tuple[str, str], parked: Parked) -> Parked | None:
        """Park ``parked``; returns the request it replaced, if any."""
        old = self._by_member.get(key)
        self._by_member[key] = parked
        self.journal.append((self, key, old))
        return old

    def pop(self, key: tuple[str, str]) -> Parked | None:
        p = self._by_member.pop(key, None)
        if p is not None:
            self.journal.append((self, key, p))
        return p

    def __contains__(self, key: tuple[str, str]) -> bool:
        return key in self._by_member

    def __len__(self) -> int:
        return len(self._by_member)

    def keys(self) -> list[tuple[str, str]]:
        """The (group id, member id) of every parked request, in parking order."""
        return list(self._by_member)

    def drain(self) -> list[tuple[tuple[str, str], Parked]]:
        """Remove and return every parked request, in parking order."""
        items = list(self._by_member.items())
        for key, p in items:
            self.pop(key)
        return items

    def _restore(self, key: tuple[str, str], old: Parked | None) -> None:
        if old is None:
            self._by_member.pop(key, None)
        else:
            self._by_member[key] = old


class CoordinatorRuntime:
    """The log, state, timers and parked requests of one offsets partition, and the operation that runs on them.

    Handlers read :attr:`now_ms` (the operation's time: a request's arrival, a timer's deadline) and
    :attr:`request` (the ``RequestContext`` of the request being handled: its id and version for parking, the
    client id and host a new member gets; None for timers, loads and unloads)."""

    def __init__(self, partition: int, log: PartitionLog, new_uuid: Callable[[], str],
                 rng: Any = None) -> None:
        self.partition = partition
        self.log = log
        self.state = ShardState()
        self.loaded = False  # the state is the replay of the log (else: empty, the partition was never loaded)
        # Journals of the changes to timers and parked requests, always attached: cleared when an operation starts,
        # so during an operation they hold exactly what it changed.
        self._journal: list = []
        self._ptr_journal: list = []
        self.timers = TimerQueue()
        self.timers.journal = self._journal
        self.parked_joins = ParkedRequests(self._ptr_journal)
        self.parked_syncs = ParkedRequests(self._ptr_journal)
        self._new_uuid = new_uuid
        self._rng = rng  # the generator behind new_uuid: rewound on rollback
        # the operation in flight
        self.now_ms = 0
        self.request: Any = None
        self._records: list[tuple[R.Record, int]] = []
        self._state_replaced = False
        self._released: list[tuple[Any, Any]] = []
        self._abandoned: list[Any] = []
        self._rng_state: Any = None

    # --- what handlers call ------------------------------------------------------------------------------------

    def append(self, record: R.Record) -> None:
        """Append ``record`` to the operation's records and replay it into the state now."""
        self.state.apply(record, self.now_ms)
        self._records.append((record, self.now_ms))

    def release(self, request_id: Any, response: Any) -> None:
        """Answer an earlier, parked request."""
        self._released.append((request_id, response))

    def abandon(self, request_id: Any) -> None:
        """A parked request Kafka will never answer (its future was replaced or dropped)."""
        self._abandoned.append(request_id)

    def replace_state(self, state: ShardState) -> None:
        """Make ``state`` the shard's state (the partition's load)."""
        self._state_replaced = True
        self.state.replace(state)

    def new_uuid(self) -> str:
        if self._rng is not None and self._rng_state is None:
            self._rng_state = self._rng.getstate()
        return self._new_uuid()

    def new_kafka_uuid(self) -> str:
        """``Uuid.randomUuid().toString()`` (KIP-848 member ids the coordinator generates, ConsumerGroupHeartbeat
        v0), drawn from the shard's seeded generator (rewound on rollback)."""
        if self._rng is None:
            raise RuntimeError("this runtime has no random generator")
        if self._rng_state is None:
            self._rng_state = self._rng.getstate()
        return random_uuid(self._rng)

    # --- one operation ---------------------------------------------------------------------------------------

    def run(self, now_ms: int, context: Any, op: Callable[[Any], Any], arg: Any) -> CoordinatorResult:
        """Run ``op(arg)`` as one operation at ``now_ms``; commit what it produced, or roll it back if it raises
        (then the exception propagates). For a request, ``op`` is its handler, ``arg`` the request and ``context``
        the driver's ``RequestContext`` (request id, API version, client id and host); for a timer, the load, the
        unload, ``context`` is None."""
        self.now_ms = now_ms
        self.request = context
        journal, ptr_journal = self._journal, self._ptr_journal
        if journal:  # changes made outside an operation (a timer popped to fire) are not this operation's
            journal.clear()
        if ptr_journal:
            ptr_journal.clear()
        try:
            response = op(arg)
        except BaseException:
            self._rollback()
            raise
        if self._records or self._released or self._abandoned or self._rng_state is not None or \
                self._state_replaced:
            return self._commit(response)
        return CoordinatorResult(_EMPTY, response, _EMPTY, _EMPTY)  # a heartbeat: nothing to write or release

    def _commit(self, response: Any) -> CoordinatorResult:
        # The journals are left as they are: the next operation clears them before it starts.
        self._rng_state = None
        self._state_replaced = False
        pending = self._records
        if pending:
            log = self.log
            records = [log.append(rec, ts) for rec, ts in pending]
            pending.clear()
        else:
            records = _EMPTY
        released, abandoned = self._released, self._abandoned
        if released:
            self._released = []
        else:
            released = _EMPTY
        if abandoned:
            self._abandoned = []
        else:
            abandoned = _EMPTY
        return CoordinatorResult(records, response, released, abandoned)

    def _rollback(self) -> None:
        if self._records or self._state_replaced:
            self.state.replace(replay_live(self.log.entries) if self.loaded else ShardState())
            self._records.clear()
            self._state_replaced = False
        journal = self._journal
        if journal:
            self.timers.journal = None
            self.timers.undo(journal)
            self.timers.journal = journal
            journal.clear()
        ptr = self._ptr_journal
        for i in range(len(ptr) - 1, -1, -1):
            table, key, old = ptr[i]
            table._restore(key, old)
        ptr.clear()
        if self._rng_state is not None:
            self._rng.setstate(self._rng_state)
            self._rng_state = None
        self._released.clear()
        self._abandoned.clear()
