"""The consumer's side of Kafka's classic group protocol, sans-IO.

Mirrors ``org.apache.kafka.clients.consumer.internals.AbstractCoordinator`` (coordinator discovery, JoinGroup /
SyncGroup / Heartbeat / LeaveGroup, the heartbeat thread) and ``ConsumerCoordinator`` (subscriptions, the leader's
assignment, rebalance listener callbacks for the EAGER and COOPERATIVE (KIP-429) protocols, offset commit and
fetch, auto-commit), plus ``Heartbeat`` (see ``consumer/heartbeat.py``).

Rules this file lives by
------------------------
* Everything that changes the member's state machine lives here: ``MemberState`` transitions are the
  :data:`TRANSITIONS` table and go through :meth:`ConsumerCoordinator._transition`; what each error code in a
  JoinGroup/SyncGroup/Heartbeat response does is the ``*_ERRORS`` tables.
* No sockets, no clocks, no threads. The driver passes the time (``now_ms``) into every call and moves bytes.
  The core never calls back into the driver: it queues *outputs* (``consumer/outputs.py``) which the driver
  drains in order with :meth:`ConsumerCoordinator.drain`.
* Apache Kafka's Java client is the specification; comments name the Java method a piece of code follows.

Theory of operation
-------------------
Kafka runs a consumer on two threads: the application thread calls ``KafkaConsumer.poll`` (which drives
``ConsumerCoordinator.poll``: find the coordinator, run ``joinGroupIfNeeded``, auto-commit, fetch committed
offsets) and a background heartbeat thread that sends heartbeats, notices an expired session (coordinator
marked unknown) or an expired poll interval (the member leaves the group). Responses are handled by whichever
thread polls the network, but rebalance *callbacks* and new JoinGroups only ever happen on the application
thread. That split is what makes ``max.poll.interval.ms`` the rebalance timeout: a member whose application is
busy cannot rejoin.

The sans-IO core keeps the same split as three kinds of entry points:

* :meth:`poll` - the application polled (``KafkaConsumer.poll``). Restarts the poll timer, discovers the
  coordinator, runs one non-blocking step of the join loop (``onJoinPrepare`` -> JoinGroup -> SyncGroup ->
  ``onJoinComplete``), auto-commits, fetches committed offsets for new partitions, and returns a
  :class:`PollResult` saying which partitions the application may process now.
* :meth:`tick` - time passed (the heartbeat thread, request timeouts, retries of synchronous commits and of
  close). Call it at :meth:`next_deadline_ms`.
* :meth:`on_response` / :meth:`on_disconnect` - the network delivered a response or broke a connection.
  Response handlers update state exactly as Kafka's ``*ResponseHandler`` classes do (a JoinGroup success sends
  the SyncGroup right away), but listener callbacks wait for the next :meth:`poll`.

Where Kafka blocks (``timer.sleep(retryBackoffMs)``, ``client.poll(future, timer)``) the core records a
deadline or a pending request and returns; the next call carries on. Work that needs an application poll
(join retries after a backoff, auto-commit) is announced by :meth:`next_poll_deadline_ms`; work the
background does by :meth:`next_deadline_ms`.

The simulated application
-------------------------
The data path (Fetch) is outside this core. The application is modelled by positions: after a rebalance the
core fetches committed offsets (OffsetFetch, ``require_stable``) for newly assigned partitions and sets each
position to the committed offset, or applies ``auto.offset.reset`` with the log offsets the driver supplied
(:meth:`set_log_offsets`; default 0). :meth:`poll` returns the partitions with a position (Kafka's
"fetchable" partitions); the driver simulates processing for as long as it likes and reports progress with
:meth:`advance` / :meth:`seek`. Auto-commit and ``commit()`` without offsets commit these positions (Kafka's
``SubscriptionState.allConsumed``).

Listener callbacks (``ConsumerRebalanceListener``) are outputs (:class:`~consumer.outputs.PartitionsRevoked`,
``PartitionsAssigned``, ``PartitionsLost``); an optional ``listener`` object with ``on_partitions_revoked`` /
``on_partitions_assigned`` / ``on_partitions_lost`` methods is also called synchronously, at the moment Kafka
would call it (so it may still commit the revoked partitions' positions).
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Iterable, Mapping, Optional

import consumer.assignors as assignors_api  # only its public API: get_assignor, Subscription, Assignment
from consumer import outputs as out
from consumer.assignors import TopicPartition
from consumer.config import ConfigError, ConsumerConfig
from consumer.errors import (ApiException, CommitFailedException, DisconnectException, FencedInstanceIdException,
                             IllegalStateException, KafkaException, NoOffsetForPartitionException,
                             RebalanceInProgressException, RetriableCommitFailedException,
                             UnjoinedGroupException, UnsupportedVersionException, exception_for)
from consumer.heartbeat import Heartbeat
from protocol.api import APIS, ApiKey
from protocol.consumer_protocol import (PROTOCOL_TYPE, ConsumerProtocolAssignment, ConsumerProtocolSubscription,
                                        decode_assignment, decode_subscription, encode_assignment,
                                        encode_subscription)
from protocol.errors import ErrorCode
from protocol.exceptions import ProtocolError
from protocol.messages import (FindCoordinatorRequest, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest,
                               OffsetCommitRequest, OffsetFetchRequest, SyncGroupRequest)

log = logging.getLogger("kgroup.consumer")

E = ErrorCode

#: The highest version of each API this client speaks (the Java consumer's maxima the brief pins); the lowest
#: is what ``protocol/`` implements. The version used is the highest both sides support.
CLIENT_MAX_VERSIONS: dict[int, int] = {
    ApiKey.FIND_COORDINATOR: 4, ApiKey.JOIN_GROUP: 9, ApiKey.SYNC_GROUP: 5, ApiKey.HEARTBEAT: 4,
    ApiKey.LEAVE_GROUP: 5, ApiKey.OFFSET_COMMIT: 9, ApiKey.OFFSET_FETCH: 9,
}

#: AbstractCoordinator.JOIN_GROUP_TIMEOUT_LAPSE: JoinGroup may block on the broker for the rebalance timeout.
JOIN_GROUP_TIMEOUT_LAPSE_MS = 5000
#: KafkaConsumer.DEFAULT_CLOSE_TIMEOUT_MS
DEFAULT_CLOSE_TIMEOUT_MS = 30_000
#: JoinGroupRequest.maybeTruncateReason
MAX_REASON_LENGTH = 255


# ======================================================================================================
# The member state machine (AbstractCoordinator.MemberState) as data
# ======================================================================================================

class MemberState(str, Enum):
    UNJOINED = "UNJOINED"                          # not in a group, or reset after an error / leave
    PREPARING_REBALANCE = "PREPARING_REBALANCE"    # JoinGroup sent, waiting for its response
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"  # JoinGroup answered, SyncGroup sent
    STABLE = "STABLE"                              # SyncGroup answered: generation and assignment known

    def has_not_joined_group(self) -> bool:
        return self in _NOT_JOINED


class Trigger(str, Enum):
    SEND_JOIN = "send JoinGroup"            # initiateJoinGroup
    JOIN_SUCCEEDED = "JoinGroup answered"   # JoinGroupResponseHandler, error NONE
    SYNC_SUCCEEDED = "SyncGroup answered"   # SyncGroupResponseHandler, error NONE
    RESET = "reset generation"              # resetStateAndGeneration (errors, leave, poll timeout)


S, T = MemberState, Trigger
_NOT_JOINED = frozenset((S.UNJOINED, S.PREPARING_REBALANCE))  # MemberState.hasNotJoinedGroup
#: (state, trigger) -> next state. A missing pair is a bug (IllegalStateException).
TRANSITIONS: dict[tuple[MemberState, Trigger], MemberState] = {
    (S.UNJOINED, T.SEND_JOIN): S.PREPARING_REBALANCE,
    (S.PREPARING_REBALANCE, T.SEND_JOIN): S.PREPARING_REBALANCE,     # retry after REBALANCE_IN_PROGRESS etc.
    (S.COMPLETING_REBALANCE, T.SEND_JOIN): S.PREPARING_REBALANCE,    # SyncGroup failed, rejoin
    (S.STABLE, T.SEND_JOIN): S.PREPARING_REBALANCE,                  # rejoin requested
    (S.PREPARING_REBALANCE, T.JOIN_SUCCEEDED): S.COMPLETING_REBALANCE,
    (S.COMPLETING_REBALANCE, T.SYNC_SUCCEEDED): S.STABLE,
    **{(s, T.RESET): S.UNJOINED for s in MemberState},
}


class Action(str, Enum):
    """What an error code in a group response makes the member do (before the error reaches the join loop)."""

    RETRY = "retry"                        # nothing here; the join loop retries (after a backoff if retriable)
    REDISCOVER = "rediscover"              # markCoordinatorUnknown, then retry
    RESET_MEMBER = "reset member id"       # if generation unchanged: resetStateAndRejoin(reset member id)
    RESET_GENERATION = "reset generation"  # if generation unchanged: resetStateAndRejoin(keep member id)
    ADOPT_MEMBER_ID = "adopt member id"    # KIP-394: rejoin with the member id from the response
    REJOIN_IF_STABLE = "rejoin if stable"  # Heartbeat REBALANCE_IN_PROGRESS
    FATAL = "fatal"                        # raised from poll()


A = Action
#: JoinGroupResponseHandler. Unlisted codes (FENCED_INSTANCE_ID, INCONSISTENT_GROUP_PROTOCOL,
#: INVALID_SESSION_TIMEOUT, INVALID_GROUP_ID, GROUP_AUTHORIZATION_FAILED, GROUP_MAX_SIZE_REACHED,
#: UNSUPPORTED_VERSION, anything unexpected) are fatal.
JOIN_GROUP_ERRORS: dict[ErrorCode, Action] = {
    E.COORDINATOR_LOAD_IN_PROGRESS: A.RETRY,   # retriable: backoff, retry (no rediscovery)
    E.UNKNOWN_MEMBER_ID: A.RESET_MEMBER,
    E.COORDINATOR_NOT_AVAILABLE: A.REDISCOVER,
    E.NOT_COORDINATOR: A.REDISCOVER,
    E.MEMBER_ID_REQUIRED: A.ADOPT_MEMBER_ID,
    E.REBALANCE_IN_PROGRESS: A.RETRY,          # rejoin immediately
}
#: The fatal JoinGroup errors Kafka names (anything else is "Unexpected error in join group response").
KNOWN_FATAL_JOIN_ERRORS = frozenset({E.FENCED_INSTANCE_ID, E.INCONSISTENT_GROUP_PROTOCOL, E.INVALID_SESSION_TIMEOUT,
                                     E.INVALID_GROUP_ID, E.GROUP_AUTHORIZATION_FAILED, E.GROUP_MAX_SIZE_REACHED,
                                     E.UNSUPPORTED_VERSION})
#: SyncGroupResponseHandler. Unlisted (FENCED_INSTANCE_ID, GROUP_AUTHORIZATION_FAILED, ...) are fatal.
SYNC_GROUP_ERRORS: dict[ErrorCode, Action] = {
    E.REBALANCE_IN_PROGRESS: A.RETRY,
    E.UNKNOWN_MEMBER_ID: A.RESET_MEMBER,
    E.ILLEGAL_GENERATION: A.RESET_GENERATION,  # the member id may still be valid
    E.COORDINATOR_NOT_AVAILABLE: A.REDISCOVER,
    E.NOT_COORDINATOR: A.REDISCOVER,
}
#: HeartbeatResponseHandler. Unlisted codes fail the heartbeat (retried after retry.backoff.ms).
HEARTBEAT_ERRORS: dict[ErrorCode, Action] = {
    E.COORDINATOR_NOT_AVAILABLE: A.REDISCOVER,
    E.NOT_COORDINATOR: A.REDISCOVER,
    E.REBALANCE_IN_PROGRESS: A.REJOIN_IF_STABLE,
    E.ILLEGAL_GENERATION: A.RESET_GENERATION,
    E.UNKNOWN_MEMBER_ID: A.RESET_MEMBER,
    E.FENCED_INSTANCE_ID: A.RESET_MEMBER,      # and the heartbeat thread fails: raised by the next poll()
}
#: Join-loop errors after which the member rejoins at once (AbstractCoordinator.joinGroupIfNeeded).
REJOIN_IMMEDIATELY = frozenset({E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION, E.REBALANCE_IN_PROGRESS,
                                E.MEMBER_ID_REQUIRED})


class RebalanceProtocol(str, Enum):
    """ConsumerPartitionAssignor.RebalanceProtocol; the order is Kafka's id order (higher = more advanced)."""

    EAGER = "EAGER"
    COOPERATIVE = "COOPERATIVE"


_PROTOCOL_RANK = {RebalanceProtocol.EAGER: 0, RebalanceProtocol.COOPERATIVE: 1}


@dataclass(frozen=True, slots=True)
class Generation:
    """AbstractCoordinator.Generation."""

    generation_id: int
    member_id: str
    protocol_name: Optional[str]

    def has_member_id(self) -> bool:
        return self.member_id != ""


NO_GENERATION = Generation(-1, "", None)


@dataclass(frozen=True)
class PollResult:
    """What one application poll found: the partitions it may process now (assigned, position known)."""

    fetchable: tuple
    positions: Mapping
    state: MemberState
    rebalancing: bool

    @property
    def may_process(self) -> bool:
        return bool(self.fetchable)


DISCONNECTED = DisconnectException("disconnected")

_STALE: Any = object()  # a remembered deadline that must be computed afresh


# ======================================================================================================
# Small request futures (Kafka's RequestFuture, single-threaded)
# ======================================================================================================

class _Future:
    __slots__ = ("done", "value", "exception", "_listeners")

    def __init__(self) -> None:
        self.done = False
        self.value: Any = None
        self.exception: Optional[BaseException] = None
        self._listeners: list[tuple[Optional[Callable], Optional[Callable]]] = []

    @property
    def succeeded(self) -> bool:
        return self.done and self.exception is None

    @property
    def failed(self) -> bool:
        return self.done and self.exception is not None

    @property
    def retriable(self) -> bool:
        return self.failed and bool(getattr(self.exception, "retriable", False))

    def complete(self, value: Any = None) -> None:
        if self.done:
            return
        self.done, self.value = True, value
        for ok, _ in self._listeners:
            if ok is not None:
                ok(value)
        self._listeners.clear()

    def fail(self, exc: BaseException) -> None:
        if self.done:
            return
        self.done, self.exception = True, exc
        for _, err in self._listeners:
            if err is not None:
                err(exc)
        self._listeners.clear()

    def add_listener(self, on_success: Optional[Callable] = None, on_failure: Optional[Callable] = None) -> None:
        if self.done:
            if self.exception is None:
                if on_success is not None:
                    on_success(self.value)
            elif on_failure is not None:
                on_failure(self.exception)
        else:
            self._listeners.append((on_success, on_failure))

    @classmethod
    def succeeded_with(cls, value: Any = None) -> "_Future":
        f = cls()
        f.complete(value)
        return f

    @classmethod
    def failed_with(cls, exc: BaseException) -> "_Future":
        f = cls()
        f.fail(exc)
        return f


@dataclass(slots=True)
class _InFlight:
    api_key: int
    node_id: Optional[int]
    to_coordinator: bool
    deadline_ms: int
    future: _Future
    handler: Callable[[Any, _Future], None]
    version: int


@dataclass
class _SyncCommit:
    """A commitSync in progress: retried on retriable errors until it succeeds or its deadline passes."""

    commit_id: int
    offsets: dict
    deadline_ms: int
    attempts: int = 0
    retry_at_ms: int = 0
    future: Optional[_Future] = None
    result: Optional[_Future] = field(default_factory=_Future)


@dataclass
class _PendingFetch:
    partitions: frozenset
    generation: Optional[Generation]
    future: _Future


def _tp_key(tp) -> tuple[str, int]:
    return (tp.topic, tp.partition)


def _sorted_tps(tps: Iterable) -> tuple:
    return tuple(sorted(tps, key=_tp_key))


_EXCEPTION_NAMES = {E.GROUP_AUTHORIZATION_FAILED: "GroupAuthorizationException",
                    E.TOPIC_AUTHORIZATION_FAILED: "TopicAuthorizationException"}


def _kafka_exception_name(exc: BaseException) -> str:
    """The simple name of the Java exception for ``exc`` (``Errors.exception().getClass().getSimpleName()``), used
    in JoinGroup reasons such as "rebalance failed due to UnknownMemberIdException" (KIP-800)."""
    error = getattr(exc, "error", None)
    if isinstance(exc, ApiException) and error is not None:
        if str(exc).startswith("Unexpected error"):
            return "KafkaException"
        return _EXCEPTION_NAMES.get(error) or "".join(p.capitalize() for p in error.name.split("_")) + "Exception"
    return type(exc).__name__


def _truncate_reason(reason: str) -> str:
    return reason[:MAX_REASON_LENGTH]


class ExponentialBackoff:
    """``org.apache.kafka.common.utils.ExponentialBackoff`` (multiplier 2) without jitter, so runs are
    deterministic (Kafka adds +-20% random jitter)."""

    def __init__(self, initial_ms: int, max_ms: int, multiplier: int = 2) -> None:
        self.initial_ms, self.max_ms, self.multiplier = initial_ms, max(max_ms, initial_ms), multiplier

    def backoff(self, attempts: int) -> int:
        if self.initial_ms <= 0:
            return 0
        value = self.initial_ms * (self.multiplier ** min(attempts, 32))
        return int(min(value, self.max_ms))


# ======================================================================================================
# The coordinator
# ======================================================================================================

class ConsumerCoordinator:
    """One consumer group member (classic protocol). See the module docstring for the driving rules."""

    # Slots, most-used first: a simulation touches a different member's core at every event, so at 1,000 members
    # the cost per message is dominated by cache misses. ~60 attributes at fixed offsets take far fewer cache
    # lines than a per-instance dict (more than 30 attributes defeat CPython's shared-key instance dicts).
    __slots__ = ("_now", "closed", "closing", "subscription", "state", "_heartbeat_failure", "coordinator",
                 "heartbeat", "_inflight", "_sync_commits", "_deferred_disconnects", "_outputs", "_version_cache",
                 "_handles", "_request_timeout_ms", "generation", "group_id", "group_instance_id",
                 "_find_future", "_find_backoff_until", "_assignment_snapshot", "joined_subscription",
                 "rejoin_needed", "_join_future", "_join_prepare_commit", "_join_backoff_until", "_auto_commit",
                 "_next_auto_commit_ms", "_pending_fetch", "_fetch_backoff_until", "positions", "assignment",
                 "pending_revocation", "_api_versions", "_async_commit_fenced", "_close_commit", "_close_deadline",
                 "_close_leave", "_close_left", "_fatal_find_exception", "_fetch_attempts", "_find_attempts",
                 "_join_prepare_deadline", "_log_end_offsets", "_log_start_offsets", "_metadata",
                 "_needs_join_prepare", "_next_commit_id", "_pending_exception", "_retry_backoff", "assignors",
                 "client_id", "config", "group_subscription", "is_leader", "last_rebalance_end_ms",
                 "last_rebalance_start_ms", "listener", "protocol", "rejoin_reason", "_only_postponed",
                 "_poll_deadline")

    def __init__(self, config: ConsumerConfig | Mapping[str, Any], *, listener: Any = None,
                 now_ms: int = 0) -> None:
        if not isinstance(config, ConsumerConfig):
            config = ConsumerConfig.create(config)
        self.config = config
        self.group_id = config.group_id
        self.client_id = config.effective_client_id
        self.group_instance_id = config.group_instance_id
        self.listener = listener
        api = assignors_api
        self.assignors = []
        for spec in config.partition_assignment_strategy:
            try:
                self.assignors.append(api.get_assignor(spec))
            except LookupError as exc:
                raise ConfigError(f"partition.assignment.strategy: {exc}") from None
        self.protocol = self._select_rebalance_protocol()

        self._now = now_ms
        # outputs since the last drain: () when there are none (a drained core holds no list of its own: with
        # thousands of cores, a fresh list per drain lived until the next heartbeat and was freed cold)
        self._outputs: list[Any] | tuple[()] = ()
        self._inflight: dict[int, _InFlight] = {}
        self._handles = itertools.count(1)  # request handles 1, 2, 3, ... (not an int object kept per request)
        self._next_commit_id = 1
        self._deferred_disconnects: list[int] = []
        # the broker's {api_key: (min, max)} (None: not known) and api_key -> usable version (filled when asked)
        self._api_versions: Optional[dict[int, tuple[int, int]]] = None
        self._version_cache: dict[int, int] = {}
        self._only_postponed = False  # see on_response
        # next_poll_deadline_ms's answer, computed when asked and forgotten (_STALE) after every call that may
        # change it: drivers ask after every call, and most calls are a heartbeat, which does not change it
        self._poll_deadline: Any = _STALE
        # settings read on every request (the pydantic config's attributes cost ~3x a plain attribute)
        self._request_timeout_ms = config.request_timeout_ms
        self._auto_commit = config.enable_auto_commit

        # AbstractCoordinator state
        self.state = MemberState.UNJOINED
        self.generation = NO_GENERATION
        self.coordinator: Optional[out.Node] = None
        self.rejoin_needed = True
        self.rejoin_reason = ""
        self._needs_join_prepare = True
        self._join_future: Optional[_Future] = None
        self._join_backoff_until = 0
        self._find_future: Optional[_Future] = None
        self._find_attempts = 0
        self._find_backoff_until = 0
        self._fatal_find_exception: Optional[BaseException] = None
        self._heartbeat_failure: Optional[BaseException] = None
        self.heartbeat = Heartbeat(session_timeout_ms=config.session_timeout_ms,
                                   heartbeat_interval_ms=config.heartbeat_interval_ms,
                                   max_poll_interval_ms=config.rebalance_timeout_ms,
                                   retry_backoff_ms=config.retry_backoff_ms, now_ms=now_ms)
        self._retry_backoff = ExponentialBackoff(config.retry_backoff_ms, config.retry_backoff_max_ms)
        self.last_rebalance_start_ms = -1
        self.last_rebalance_end_ms = -1

        # ConsumerCoordinator / SubscriptionState state
        self.subscription: frozenset[str] = frozenset()
        self.joined_subscription: Optional[frozenset[str]] = None
        self.group_subscription: frozenset[str] = frozenset()
        self.assignment: tuple = ()                  # assigned partitions, sorted
        self.positions: dict = {}                    # partition -> next offset to consume
        self.pending_revocation: set = set()
        self.is_leader = False
        self._metadata: dict[str, int] = {}
        self._assignment_snapshot: Optional[dict[str, int]] = None
        self._log_start_offsets: dict = {}
        self._log_end_offsets: dict = {}
        self._join_prepare_deadline: Optional[int] = None
        self._join_prepare_commit: Optional[_Future] = None
        self._next_auto_commit_ms = now_ms + config.auto_commit_interval_ms
        self._sync_commits: list[_SyncCommit] = []
        self._async_commit_fenced = False
        self._pending_fetch: Optional[_PendingFetch] = None
        self._fetch_attempts = 0
        self._fetch_backoff_until = 0
        self._pending_exception: Optional[BaseException] = None

        # close()
        self.closing = False
        self.closed = False
        self._close_deadline = 0
        self._close_commit: Optional[_SyncCommit] = None
        self._close_leave: Optional[_Future] = None
        self._close_left = False

    # ------------------------------------------------------------------------------------------------
    # Driver API
    # ------------------------------------------------------------------------------------------------
    def drain(self) -> list:
        """All outputs queued since the last drain, in the order they happened."""
        items = self._outputs
        if not items:
            return []
        self._outputs = ()
        return items

    def set_api_versions(self, versions: Any) -> None:
        """The broker's ApiVersions answer: an ``ApiVersionsResponse`` or ``{api_key: (min, max)}``."""
        if hasattr(versions, "api_keys"):
            versions = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
        self._api_versions = {int(k): (int(lo), int(hi)) for k, (lo, hi) in dict(versions).items()}
        self._version_cache = {}
        self._poll_deadline = _STALE

    def api_version(self, api_key: int) -> int:
        """The highest version of ``api_key`` both this client and the broker support (NetworkClient's
        ``ApiVersions.latestUsableVersion``)."""
        v = self._version_cache.get(api_key)
        if v is None:
            v = self._version_cache[api_key] = self._usable_version(api_key)
        return v

    def _usable_version(self, api_key: int) -> int:
        ours = APIS[api_key]
        lo, hi = ours.min_version, min(CLIENT_MAX_VERSIONS.get(api_key, ours.max_version), ours.max_version)
        if self._api_versions is not None:
            if api_key not in self._api_versions:
                raise UnsupportedVersionException(f"The broker does not support {ours.name}")
            blo, bhi = self._api_versions[api_key]
            lo, hi = max(lo, blo), min(hi, bhi)
            if lo > hi:
                raise UnsupportedVersionException(
                    f"The broker supports {ours.name} versions {blo}-{bhi}; this client supports "
                    f"{ours.min_version}-{CLIENT_MAX_VERSIONS.get(api_key, ours.max_version)}")
        return hi

    def set_metadata(self, partitions_per_topic: Mapping[str, int]) -> None:
        """The driver's view of the cluster (topic -> partition count). The leader assigns from it and, like
        Kafka's leader, rejoins when the partition count of a group-subscribed topic changes."""
        self._metadata = {str(t): int(n) for t, n in partitions_per_topic.items()}
        self._poll_deadline = _STALE

    def set_log_offsets(self, *, start: Optional[Mapping] = None, end: Optional[Mapping] = None) -> None:
        """Log start / end offsets used by ``auto.offset.reset`` (earliest / latest); missing means 0."""
        if start is not None:
            self._log_start_offsets = dict(start)
        if end is not None:
            self._log_end_offsets = dict(end)
        self._poll_deadline = _STALE

    def metadata_topics(self) -> tuple[str, ...]:
        """Topics whose metadata this member needs (SubscriptionState.metadataTopics): its subscription, plus
        every member's topics while it is the leader."""
        return tuple(sorted(self.subscription | self.group_subscription))

    def subscribe(self, topics: Iterable[str], now_ms: Optional[int] = None) -> None:
        """KafkaConsumer.subscribe(topics): a changed subscription makes the member rejoin on its next poll
        (``joinedSubscription`` differs)."""
        topics = frozenset(topics)
        if now_ms is not None:
            self._now = now_ms
        if not topics:
            self.unsubscribe(self._now)
            return
        if self.closing or self.closed:
            raise IllegalStateException("This consumer has already been closed.")
        self.subscription = topics
        self._poll_deadline = _STALE

    def unsubscribe(self, now_ms: int) -> None:
        """KafkaConsumer.unsubscribe: onLeavePrepare callbacks, LeaveGroup (dynamic members), no subscription."""
        self._now = now_ms
        try:
            if self.subscription:
                self._on_leave_prepare()
                self._maybe_leave_group("the consumer unsubscribed from all topics")
            self.subscription = frozenset()
            self.joined_subscription = None
            self.group_subscription = frozenset()
            self._assign_from_subscribed(())
            self._run_deferred()
        finally:
            self._poll_deadline = _STALE

    def seek(self, tp, offset: int) -> None:
        """Set the next offset to consume of an assigned partition (KafkaConsumer.seek)."""
        tp = TopicPartition(*tp)
        if tp not in self.assignment:
            raise IllegalStateException(f"No current assignment for partition {tp}")
        self.positions[tp] = int(offset)
        self._poll_deadline = _STALE

    def advance(self, tp, records: int = 1) -> None:
        """The application processed ``records`` more records of ``tp`` (its position moves on)."""
        tp = TopicPartition(*tp)
        if tp not in self.positions:
            raise IllegalStateException(f"Partition {tp} has no position (not assigned or not initialized)")
        self.positions[tp] += int(records)
        self._poll_deadline = _STALE

    def all_consumed(self) -> dict:
        """SubscriptionState.allConsumed: the position of every assigned partition that has one."""
        return {tp: self.positions[tp] for tp in self.assignment if tp in self.positions}

    # --- application poll ---------------------------------------------------------------------------
    def poll(self, now_ms: int) -> PollResult:
        """The application polled (``KafkaConsumer.poll`` -> ``ConsumerCoordinator.poll``).

        Raises what Kafka's poll throws: fatal group errors (``ApiException`` with e.g. FENCED_INSTANCE_ID,
        GROUP_AUTHORIZATION_FAILED, INCONSISTENT_GROUP_PROTOCOL), ``NoOffsetForPartitionException``, ...
        """
        self._now = now_ms
        if self.closing or self.closed:
            raise IllegalStateException("This consumer has already been closed.")
        try:
            self._expire_requests(now_ms)
            try:
                self._raise_pending()
                if self._coordinator_poll(now_ms):
                    self._update_fetch_positions(now_ms)
                self._heartbeat_thread(now_ms)
                self._service_sync_commits(now_ms)
            finally:
                self._run_deferred()
            self._raise_pending()
        finally:
            self._poll_deadline = _STALE
        fetchable = tuple(tp for tp in self.assignment
                          if tp in self.positions and tp not in self.pending_revocation)
        return PollResult(fetchable=fetchable, positions=dict(self.positions), state=self.state,
                          rebalancing=self.rebalance_in_progress())

    # --- background ------------------------------------------------------------------------------------
    def tick(self, now_ms: int) -> None:
        """Time passed without an application poll: the heartbeat thread, request timeouts, commitSync retries,
        close(). Safe to call at any time; needed at :meth:`next_deadline_ms`."""
        self._now = now_ms
        if self.closed:
            return
        try:
            changed = self._tick(now_ms)
        except BaseException:
            self._poll_deadline = _STALE
            raise
        if changed:
            self._poll_deadline = _STALE

    def _tick(self, now_ms: int) -> bool:
        """One tick; returns False if it did nothing but (perhaps) send a heartbeat, which changes no
        application deadline (so the remembered next_poll_deadline_ms still holds)."""
        # (the guards repeat each step's own early return: a tick per heartbeat makes the calls add up)
        changed = False
        if self._inflight and self._expire_requests(now_ms):
            changed = True
        if self._heartbeat_thread(now_ms):
            changed = True
        if self._sync_commits:
            self._service_sync_commits(now_ms)
            changed = True
        if self.closing:
            self._advance_close(now_ms)
            changed = True
        if self._deferred_disconnects:
            self._run_deferred()
            changed = True
        return changed

    def next_deadline_ms(self) -> Optional[int]:
        """The earliest time at which :meth:`tick` has work (None: nothing scheduled)."""
        if self.closed:
            return None
        # Drivers ask after every call into the core, so the common case (a joined member with at most one
        # request in flight) is written out without building a list.
        d: Optional[int] = None
        for f in self._inflight.values():
            if d is None or f.deadline_ms < d:
                d = f.deadline_ms
        if self._heartbeat_enabled():
            if self.coordinator is None:
                if self._find_future is None and (d is None or self._find_backoff_until < d):
                    d = self._find_backoff_until
            else:
                hb = self.heartbeat
                t = min(hb.heartbeat_deadline_ms, hb.session_deadline_ms, hb.poll_deadline_ms)
                if d is None or t < d:
                    d = t
        if not self._sync_commits and not self.closing:
            return d
        candidates = [] if d is None else [d]
        for op in self._sync_commits:
            if op.future is None:
                if self.coordinator is not None:
                    candidates.append(op.retry_at_ms)
                elif self._find_future is None:
                    candidates.append(max(op.retry_at_ms, self._find_backoff_until))
            candidates.append(op.deadline_ms)
        if self.closing:
            candidates.append(self._close_deadline)
        return min(candidates) if candidates else None

    def poll_timeout_deadline_ms(self) -> int:
        """When the poll timer expires: ``max.poll.interval.ms`` after the application's last poll (or the last
        JoinGroup response), the moment ``Heartbeat.pollTimeoutExpired`` turns true and a joined member leaves the
        group. A driver that models an application blocked in ``poll`` uses it to poll again in time."""
        return self.heartbeat.poll_deadline_ms

    def next_poll_deadline_ms(self) -> Optional[int]:
        """The earliest time at which an application poll has work of its own (a join retry after a backoff,
        coordinator lookup, the next auto-commit); Kafka's ``timeToNextPoll`` plus the join loop's sleeps."""
        d = self._poll_deadline
        if d is _STALE:
            d = self._poll_deadline = self._next_poll_deadline()
        return d

    def _next_poll_deadline(self) -> Optional[int]:
        if self.closed or self.closing or not self.subscription:
            return None
        if self.coordinator is None:
            # while a FindCoordinator is in flight its response will wake the driver
            return self._find_backoff_until if self._find_future is None else None
        if self._rejoin_needed_or_pending():
            prepare = self._join_prepare_commit
            waiting = (self._join_future is not None and not self._join_future.done) or (
                prepare is not None and not prepare.done)
            return None if waiting else self._join_backoff_until
        d = self._next_auto_commit_ms if self._auto_commit else None
        # Positions are fetched only once the join is complete (KafkaConsumer.updateAssignmentMetadataIfNeeded
        # returns early while coordinator.poll cannot finish the rebalance); asking for a poll before then
        # would make a driver spin at this deadline.
        # (positions only ever holds assigned partitions -- _assign_from_subscribed, seek and the offset fetch
        # keep it so -- so "some partition lacks a position" is a length comparison)
        if self._pending_fetch is None and len(self.positions) < len(self.assignment) and (
                d is None or self._fetch_backoff_until < d):
            return self._fetch_backoff_until
        return d

    # --- network ----------------------------------------------------------------------------------------
    def on_response(self, handle: int, response: Any, now_ms: int) -> None:
        """The response (a decoded ``*Response`` object) to request ``handle``, or a failure: pass
        :data:`DISCONNECTED` (or any ``KafkaException``) if the connection broke or the request timed out.
        Responses to requests the core no longer waits for are ignored."""
        self._now = now_ms
        inflight = self._inflight.pop(handle, None)
        if inflight is None:
            return
        self._only_postponed = False
        stale = True
        try:
            if isinstance(response, BaseException):
                self._fail_inflight(inflight, response)
            else:
                try:
                    inflight.handler(response, inflight.future)
                except (KafkaException, ProtocolError) as exc:
                    if not inflight.future.done:
                        inflight.future.fail(exc)
            if self._sync_commits:
                self._service_sync_commits(now_ms)
            if self.closing:
                self._advance_close(now_ms)
            # a successful heartbeat only restarts the session timer: the application's deadline stands
            stale = not self._only_postponed or self._sync_commits or self.closing
        finally:
            if self._deferred_disconnects:
                self._run_deferred()
                stale = True
            if stale:
                self._poll_deadline = _STALE

    def on_disconnect(self, node_id: int, now_ms: int) -> None:
        """The connection to broker ``node_id`` closed: its in-flight requests fail; if it was the coordinator,
        the coordinator is marked unknown (``checkAndGetCoordinator`` / ``DisconnectException``)."""
        self._now = now_ms
        try:
            for handle in [h for h, f in self._inflight.items() if f.node_id == node_id]:
                inflight = self._inflight.pop(handle)
                self._fail_inflight(inflight, DisconnectException(f"connection to node {node_id} closed"))
            if self.coordinator is not None and self.coordinator.node_id == node_id:
                self._mark_coordinator_unknown("coordinator unavailable", disconnected=True)
            self._service_sync_commits(now_ms)
            self._advance_close(now_ms)
        finally:
            self._run_deferred()
            self._poll_deadline = _STALE

    # --- commits -----------------------------------------------------------------------------------------
    def commit(self, offsets: Optional[Mapping] = None, *, now_ms: int, sync: bool = False) -> int:
        """Commit ``offsets`` ({partition: next offset}; default: all consumed positions). Returns a commit id;
        an :class:`~consumer.outputs.OffsetCommitCompleted` with that id reports the outcome.

        ``sync=True`` is ``commitSync``: retriable failures (coordinator moved, loading, disconnect) are
        retried with backoff until ``default.api.timeout.ms``. ``sync=False`` is ``commitAsync``: one attempt;
        a retriable failure is reported as ``RetriableCommitFailedException``.
        """
        self._now = now_ms
        if self.closing or self.closed:
            raise IllegalStateException("This consumer has already been closed.")
        offsets = self.all_consumed() if offsets is None else {TopicPartition(*tp): int(o)
                                                               for tp, o in offsets.items()}
        commit_id = self._next_commit_id
        self._next_commit_id += 1
        try:
            self._raise_pending_commit_fenced()
            if sync:
                op = _SyncCommit(commit_id, offsets, deadline_ms=now_ms + self.config.default_api_timeout_ms,
                                 retry_at_ms=now_ms)
                op.result.add_listener(
                    lambda _v, op=op: self._emit(out.OffsetCommitCompleted(op.commit_id, op.offsets)),
                    lambda e, op=op: self._emit(out.OffsetCommitCompleted(op.commit_id, op.offsets, e)))
                self._sync_commits.append(op)
                self._service_sync_commits(now_ms)
            else:
                self._commit_offsets_async(offsets, commit_id)
        finally:
            self._run_deferred()
            self._poll_deadline = _STALE
        return commit_id

    # --- close ----------------------------------------------------------------------------------------------
    def close(self, now_ms: int, timeout_ms: int = DEFAULT_CLOSE_TIMEOUT_MS) -> None:
        """KafkaConsumer.close: a synchronous auto-commit (if enabled), then onLeavePrepare callbacks and, for a
        dynamic member, LeaveGroup (``internal.leave.group.on.close``); a static member only stops
        heartbeating. Finished when :class:`~consumer.outputs.Closed` is output (``closed`` is True)."""
        self._now = now_ms
        if self.closing or self.closed:
            return
        self.closing = True
        self._close_deadline = now_ms + max(0, timeout_ms)
        try:
            if self.config.enable_auto_commit and self.subscription:
                offsets = self.all_consumed()
                if offsets:
                    op = _SyncCommit(self._next_commit_id, offsets, deadline_ms=self._close_deadline,
                                     retry_at_ms=now_ms)
                    self._next_commit_id += 1
                    op.result.add_listener(
                        lambda _v, op=op: self._emit(out.OffsetCommitCompleted(op.commit_id, op.offsets)),
                        lambda e, op=op: self._emit(out.OffsetCommitCompleted(op.commit_id, op.offsets, e)))
                    self._sync_commits.append(op)
                    self._close_commit = op
                    self._service_sync_commits(now_ms)
            self._advance_close(now_ms)
        finally:
            self._run_deferred()
            self._poll_deadline = _STALE

    # --- queries ----------------------------------------------------------------------------------------------
    def coordinator_unknown(self) -> bool:
        return self.coordinator is None

    def rebalance_in_progress(self) -> bool:
        return self.state in (MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE)

    def generation_if_stable(self) -> Optional[Generation]:
        return self.generation if self.state == MemberState.STABLE else None

    @property
    def member_id(self) -> str:
        return self.generation.member_id

    @property
    def in_flight(self) -> dict[int, int]:
        """handle -> api key of every request awaiting a response."""
        return {h: f.api_key for h, f in self._inflight.items()}

    # ------------------------------------------------------------------------------------------------
    # Internals: outputs and plumbing
    # ------------------------------------------------------------------------------------------------
    def _emit(self, item: Any) -> None:
        if self._outputs:
            self._outputs.append(item)
        else:
            self._outputs = [item]

    def _emit_listener(self, kind: type, partitions: tuple) -> Optional[BaseException]:
        """ConsumerRebalanceListenerInvoker: queue the callback and call the in-process listener, if any.
        A listener's exception is returned (not raised), so the caller can finish the rebalance step first."""
        self._emit(kind(partitions))
        if self.listener is None:
            return None
        name = {out.PartitionsRevoked: "on_partitions_revoked", out.PartitionsAssigned: "on_partitions_assigned",
                out.PartitionsLost: "on_partitions_lost"}[kind]
        method = getattr(self.listener, name, None)
        if method is None and kind is out.PartitionsLost:  # onPartitionsLost defaults to onPartitionsRevoked
            method = getattr(self.listener, "on_partitions_revoked", None)
        if method is None:
            return None
        try:
            method(partitions)
        except Exception as exc:  # noqa: BLE001 - Kafka logs it and rethrows after the step completes
            log.error("User provided listener failed on %s for partitions %s: %r", name, partitions, exc)
            return exc
        return None

    @staticmethod
    def _raise_callback_error(exc: Optional[BaseException], keep_kafka_exception: bool) -> None:
        if exc is None:
            return
        if keep_kafka_exception and isinstance(exc, KafkaException):
            raise exc
        raise KafkaException("User rebalance callback throws an error") from exc

    def _transition(self, trigger: Trigger, reason: str = "") -> None:
        new = TRANSITIONS.get((self.state, trigger))
        if new is None:
            raise IllegalStateException(f"no transition from {self.state.value} on {trigger.value}")
        if new != self.state:
            self._emit(out.StateChanged(self.state.value, new.value, reason or trigger.value))
        self.state = new

    def _raise_pending(self) -> None:
        exc = self._pending_exception
        if exc is not None:
            self._pending_exception = None
            raise exc

    def _raise_pending_commit_fenced(self) -> None:
        # ConsumerCoordinator.invokeCompletedOffsetCommitCallbacks
        if self._async_commit_fenced:
            raise FencedInstanceIdException(
                f"Get fenced exception for group.instance.id {self.group_instance_id}, current member.id is "
                f"{self.generation.member_id}")

    def _send(self, api_key: int, body: Any, handler: Callable[[Any, _Future], None], *,
              to_coordinator: bool = True, timeout_ms: Optional[int] = None, version: Optional[int] = None) -> _Future:
        """ConsumerNetworkClient.send: queue a SendRequest and return the future its handler completes."""
        if to_coordinator and self.coordinator is None:
            return _Future.failed_with(ApiException(E.COORDINATOR_NOT_AVAILABLE))  # coordinatorNotAvailable()
        try:
            version = self.api_version(api_key) if version is None else version
        except UnsupportedVersionException as exc:
            return _Future.failed_with(exc)
        handle = next(self._handles)
        timeout = self._request_timeout_ms if timeout_ms is None else timeout_ms
        node_id = self.coordinator.node_id if to_coordinator else None
        future = _Future()
        self._inflight[handle] = _InFlight(api_key, node_id, to_coordinator, self._now + timeout, future, handler,
                                           version)
        self._emit(out.SendRequest(handle, api_key, version, body, node_id, to_coordinator, timeout))
        return future

    def _fail_inflight(self, inflight: _InFlight, exc: BaseException) -> None:
        # CoordinatorResponseHandler.onFailure: a disconnect marks the coordinator dead
        if inflight.to_coordinator and isinstance(exc, DisconnectException):
            if self.coordinator is not None and self.coordinator.node_id == inflight.node_id:
                self._mark_coordinator_unknown(str(exc), disconnected=True)
        inflight.future.fail(exc)

    def _expire_requests(self, now_ms: int) -> bool:
        """NetworkClient.handleTimedOutRequests: a timed-out request disconnects its node, failing every
        request on that connection. Returns whether any request timed out."""
        if not self._inflight:
            return False
        expired = sorted(h for h, f in self._inflight.items() if f.deadline_ms <= now_ms)
        for handle in expired:
            inflight = self._inflight.pop(handle, None)
            if inflight is None:
                continue
            exc = DisconnectException(f"request {handle} timed out")
            if inflight.node_id is not None:
                self._emit(out.CloseConnection(inflight.node_id, "request timed out"))
                for other in [h for h, f in self._inflight.items() if f.node_id == inflight.node_id]:
                    self._fail_inflight(self._inflight.pop(other), exc)
            self._fail_inflight(inflight, exc)
        return bool(expired)

    def _run_deferred(self) -> None:
        """Fail the requests of a coordinator connection we asked the driver to close (Kafka:
        ``disconnectAsync`` then ``DisconnectException`` for pending requests on the next network poll)."""
        while self._deferred_disconnects:
            node_id = self._deferred_disconnects.pop(0)
            for handle in [h for h, f in self._inflight.items() if f.node_id == node_id and f.to_coordinator]:
                inflight = self._inflight.pop(handle)
                inflight.future.fail(DisconnectException(f"coordinator connection to node {node_id} closed"))
            self._service_sync_commits(self._now)
            self._advance_close(self._now)

    # ------------------------------------------------------------------------------------------------
    # Coordinator discovery (AbstractCoordinator.ensureCoordinatorReady / lookupCoordinator)
    # ------------------------------------------------------------------------------------------------
    def _ensure_coordinator_ready(self, now_ms: int) -> bool:
        if self.coordinator is not None:
            return True
        if self._fatal_find_exception is not None:
            exc, self._fatal_find_exception = self._fatal_find_exception, None
            raise exc
        self._lookup_coordinator(now_ms)
        return self.coordinator is not None

    def _lookup_coordinator(self, now_ms: int) -> Optional[_Future]:
        if self._find_future is None:
            if now_ms < self._find_backoff_until:
                return None
            self._find_future = self._send_find_coordinator()
        return self._find_future

    def _send_find_coordinator(self) -> _Future:
        version = None
        try:
            version = self.api_version(ApiKey.FIND_COORDINATOR)
        except UnsupportedVersionException as exc:
            self._fatal_find_exception = exc
            return _Future.failed_with(exc)
        if version >= 4:
            body = FindCoordinatorRequest(key_type=0, coordinator_keys=[self.group_id])
        else:
            body = FindCoordinatorRequest(key=self.group_id, key_type=0)
        future = self._send(ApiKey.FIND_COORDINATOR, body, self._handle_find_coordinator, to_coordinator=False,
                            version=version)
        future.add_listener(self._on_find_coordinator_success, self._on_find_coordinator_failure)
        return future

    def _handle_find_coordinator(self, response: Any, future: _Future) -> None:
        # FindCoordinatorResponseHandler
        if getattr(response, "coordinators", None):
            if len(response.coordinators) != 1:
                future.fail(IllegalStateException("Group coordinator lookup failed: Invalid response containing "
                                                  "more than a single coordinator"))
                return
            c = response.coordinators[0]
            error, node_id, host, port = E.from_code(c.error_code), c.node_id, c.host, c.port
        else:
            error, node_id, host, port = (E.from_code(response.error_code), response.node_id, response.host,
                                          response.port)
        if error == E.NONE:
            self.coordinator = out.Node(node_id, host, port)
            self.heartbeat.reset_session_timeout(self._now)
            self._emit(out.CoordinatorDiscovered(self.coordinator))
            future.complete(self.coordinator)
        else:
            future.fail(exception_for(error))

    def _on_find_coordinator_success(self, _node: Any) -> None:
        self._find_future = None
        self._find_attempts = 0

    def _on_find_coordinator_failure(self, exc: BaseException) -> None:
        self._find_future = None
        if not getattr(exc, "retriable", False):
            # remembered so the application thread throws it (fatalFindCoordinatorException)
            self._fatal_find_exception = exc
        self._find_backoff_until = self._now + self._retry_backoff.backoff(self._find_attempts)
        self._find_attempts += 1

    def _mark_coordinator_unknown(self, cause: str, disconnected: bool = False) -> None:
        """AbstractCoordinator.markCoordinatorUnknown: forget the coordinator; unless the connection already
        broke, ask the driver to close it (its in-flight requests then fail with a disconnect)."""
        if self.coordinator is None:
            return
        old = self.coordinator
        self.coordinator = None
        log.info("group coordinator %s is unavailable or invalid due to cause: %s; rediscovery will be attempted",
                 old, cause)
        self._emit(out.StateChanged(self.state.value, self.state.value, f"coordinator unknown: {cause}"))
        if not disconnected:
            self._emit(out.CloseConnection(old.node_id, cause))
            self._deferred_disconnects.append(old.node_id)

    # ------------------------------------------------------------------------------------------------
    # Generation bookkeeping
    # ------------------------------------------------------------------------------------------------
    def _request_rejoin(self, reason: str) -> None:
        self.rejoin_reason = reason
        self.rejoin_needed = True

    def _request_rejoin_if_necessary(self, reason: str) -> None:
        if not self.rejoin_needed:
            self._request_rejoin(reason)

    def _reset_state_and_generation(self, reason: str, reset_member_id: bool) -> None:
        self._transition(Trigger.RESET, reason)
        if reset_member_id:
            self.generation = NO_GENERATION
        else:
            self.generation = Generation(NO_GENERATION.generation_id, self.generation.member_id, None)

    def _reset_state_and_rejoin(self, reason: str, reset_member_id: bool) -> None:
        self._reset_state_and_generation(reason, reset_member_id)
        self._request_rejoin(reason)
        self._needs_join_prepare = True

    def _reset_state_on_response_error(self, api: str, error: ErrorCode, reset_member_id: bool) -> None:
        self._reset_state_and_rejoin(f"encountered {error.name} from {api} response", reset_member_id)

    @staticmethod
    def _has_generation_reset(gen: Generation) -> bool:
        return gen.generation_id == NO_GENERATION.generation_id and gen.protocol_name is None

    def _rejoin_needed_or_pending(self) -> bool:
        """ConsumerCoordinator.rejoinNeededOrPending."""
        if not self.subscription:
            return False
        if self._assignment_snapshot is not None and self._assignment_snapshot != self._metadata_snapshot():
            self._request_rejoin_if_necessary("cached metadata has changed")
            return True
        joined = self.joined_subscription
        if joined is not None and joined is not self.subscription and joined != self.subscription:
            self._request_rejoin_if_necessary("subscription has changed")
            return True
        return self.rejoin_needed or self._join_future is not None

    def _metadata_snapshot(self) -> dict[str, int]:
        return {t: self._metadata[t] for t in self.metadata_topics() if t in self._metadata}

    # ------------------------------------------------------------------------------------------------
    # The application thread: ConsumerCoordinator.poll and joinGroupIfNeeded
    # ------------------------------------------------------------------------------------------------
    def _coordinator_poll(self, now_ms: int) -> bool:
        self._raise_pending_commit_fenced()
        if self.subscription:
            self._poll_heartbeat(now_ms)
            join_done = self._join_future is not None and self._join_future.done
            if self.coordinator is None and not join_done and not self._ensure_coordinator_ready(now_ms):
                return False
            if self._rejoin_needed_or_pending():
                if not self._join_group_if_needed(now_ms):
                    return False
        self._maybe_auto_commit_offsets_async(now_ms)
        return True

    def _poll_heartbeat(self, now_ms: int) -> None:
        """AbstractCoordinator.pollHeartbeat: surface a heartbeat-thread failure once, restart the poll timer."""
        if self._heartbeat_failure is not None:
            exc, self._heartbeat_failure = self._heartbeat_failure, None
            raise exc
        self.heartbeat.poll(now_ms)

    def _join_group_if_needed(self, now_ms: int) -> bool:
        """One non-blocking pass of AbstractCoordinator.joinGroupIfNeeded: True when the group is joined."""
        for _ in range(32):  # the errors that "continue" are bounded by responses; this is only a safety net
            if not self._rejoin_needed_or_pending():
                return True
            future = self._join_future
            if future is not None and future.done:
                # the outcome of the previous JoinGroup/SyncGroup round (Kafka handles it right after client.poll)
                self._join_future = None
                if future.succeeded:
                    gen, state = self.generation, self.state
                    if not self._has_generation_reset(gen) and state == MemberState.STABLE:
                        self._join_future = future  # kept until the callbacks complete, as Kafka does
                        self._on_join_complete(gen.generation_id, gen.member_id, gen.protocol_name, future.value)
                        self._join_future = None
                        self._needs_join_prepare = True
                    else:
                        self._reset_state_and_rejoin(
                            f"rebalance failed since the generation/state was modified by heartbeat thread to "
                            f"{gen}/{state.value} before the rebalance callback triggered", True)
                    continue
                exc = future.exception
                error = getattr(exc, "error", None)
                if error != E.MEMBER_ID_REQUIRED:
                    self._request_rejoin(f"rebalance failed due to {_kafka_exception_name(exc)}")
                if isinstance(exc, ApiException) and error in REJOIN_IMMEDIATELY:
                    continue
                if not getattr(exc, "retriable", False):
                    raise exc
                self._join_backoff_until = now_ms + self.config.retry_backoff_ms
                continue  # rediscover first if needed, then wait out the backoff
            if self.coordinator is None and not self._ensure_coordinator_ready(now_ms):
                return False
            if future is None and now_ms < self._join_backoff_until:
                return False
            if self._needs_join_prepare:
                self._needs_join_prepare = False
                if not self._on_join_prepare(now_ms, self.generation.generation_id, self.generation.member_id):
                    self._needs_join_prepare = True
                    return False
            if self._join_future is None:
                self._initiate_join_group(now_ms)
            if not self._join_future.done:
                return False
        return False

    def _initiate_join_group(self, now_ms: int) -> None:
        self._transition(Trigger.SEND_JOIN, self.rejoin_reason)
        if self.last_rebalance_start_ms == -1:
            self.last_rebalance_start_ms = now_ms
        self._join_future = self._send_join_group()

    def _send_join_group(self) -> _Future:
        if self.coordinator is None:
            return _Future.failed_with(ApiException(E.COORDINATOR_NOT_AVAILABLE))
        try:
            version = self.api_version(ApiKey.JOIN_GROUP)
        except UnsupportedVersionException as exc:
            return _Future.failed_with(exc)
        if self.group_instance_id is not None and version < 5:
            return _Future.failed_with(UnsupportedVersionException(
                f"The broker join group protocol version {version} does not support usage of config "
                f"group.instance.id."))
        body = JoinGroupRequest(
            group_id=self.group_id, session_timeout_ms=self.config.session_timeout_ms,
            rebalance_timeout_ms=self.config.rebalance_timeout_ms, member_id=self.generation.member_id,
            group_instance_id=self.group_instance_id, protocol_type=PROTOCOL_TYPE,
            protocols=self._join_protocols(), reason=_truncate_reason(self.rejoin_reason))
        timeout = max(self.config.request_timeout_ms, self.config.rebalance_timeout_ms + JOIN_GROUP_TIMEOUT_LAPSE_MS)
        sent = self.generation
        return self._send(ApiKey.JOIN_GROUP, body, lambda r, f: self._handle_join_group(r, f, sent),
                          timeout_ms=timeout, version=version)

    def _join_protocols(self) -> list:
        """ConsumerCoordinator.metadata: one protocol per configured assignor, in preference order."""
        self.joined_subscription = self.subscription
        topics = sorted(self.subscription)
        owned = self._owned_grouped()
        protocols = []
        for assignor in self.assignors:
            sub = ConsumerProtocolSubscription(
                topics=topics, user_data=assignor.subscription_user_data(topics, None, None),
                owned_partitions=owned, generation_id=self.generation.generation_id, rack_id=self.config.client_rack)
            protocols.append(JoinGroupRequest.Protocol(name=assignor.name, metadata=encode_subscription(sub)))
        return protocols

    def _owned_grouped(self) -> list[tuple[str, list[int]]]:
        grouped: dict[str, list[int]] = {}
        for tp in self.assignment:
            grouped.setdefault(tp.topic, []).append(tp.partition)
        return [(t, sorted(ps)) for t, ps in sorted(grouped.items())]

    def _handle_join_group(self, response: Any, future: _Future, sent: Generation) -> None:
        """JoinGroupResponseHandler."""
        error = E.from_code(response.error_code)
        if error == E.NONE:
            if response.protocol_type is not None and response.protocol_type != PROTOCOL_TYPE:
                future.fail(ApiException(E.INCONSISTENT_GROUP_PROTOCOL))
                return
            if self.state != MemberState.PREPARING_REBALANCE:
                # woken up / left the group while the JoinGroup was in flight
                future.fail(UnjoinedGroupException("the consumer left the group during the rebalance"))
                return
            self._transition(Trigger.JOIN_SUCCEEDED, "JoinGroup answered")
            self.heartbeat.reset_timeouts(self._now)  # HeartbeatThread.enable
            self.generation = Generation(response.generation_id, response.member_id, response.protocol_name)
            is_leader = response.leader == response.member_id
            self._emit(out.GroupJoined(response.generation_id, response.member_id, response.leader,
                                       response.protocol_name, is_leader,
                                       tuple(m.member_id for m in response.members)))
            if is_leader:
                try:
                    assignments = self._on_leader_elected(response)
                except KafkaException as exc:
                    future.fail(exc)
                    return
                sync = self._send_sync_group(assignments)
            else:
                sync = self._send_sync_group([])
            sync.add_listener(future.complete, future.fail)
            return
        action = JOIN_GROUP_ERRORS.get(error, Action.FATAL)
        if action == Action.RESET_MEMBER:
            if self.generation == sent:
                self._reset_state_on_response_error("JOIN_GROUP", error, True)
        elif action == Action.REDISCOVER:
            self._mark_coordinator_unknown(f"error response {error.name}")
        elif action == Action.ADOPT_MEMBER_ID:
            self.generation = Generation(NO_GENERATION.generation_id, response.member_id, None)
            self._request_rejoin(f"need to re-join with the given member-id: {response.member_id}")
        elif action == Action.FATAL and error not in KNOWN_FATAL_JOIN_ERRORS:
            future.fail(ApiException(error, f"Unexpected error in join group response: {error.message}"))
            return
        future.fail(exception_for(error))

    def _on_leader_elected(self, response: Any) -> list:
        """ConsumerCoordinator.onLeaderElected: run the elected assignor over every member's subscription."""
        api = assignors_api
        protocol_name = response.protocol_name
        assignor = self._lookup_assignor(protocol_name)
        if assignor is None:
            raise IllegalStateException(f"Coordinator selected invalid assignment protocol: {protocol_name}")
        subscriptions: dict[str, Any] = {}
        owned: dict[str, set] = {}
        all_topics: set[str] = set()
        for member in response.members:
            try:
                _version, sub = decode_subscription(member.metadata)
            except ProtocolError as exc:
                raise KafkaException(f"invalid subscription of member {member.member_id}: {exc}") from None
            owned_tps = tuple(TopicPartition(t, p) for t, ps in sub.owned_partitions for p in ps)
            subscriptions[member.member_id] = api.Subscription(
                topics=tuple(sub.topics), user_data=sub.user_data, owned_partitions=owned_tps,
                generation_id=sub.generation_id, group_instance_id=member.group_instance_id,
                rack_id=sub.rack_id or None)
            owned[member.member_id] = set(owned_tps)
            all_topics.update(sub.topics)
        self.group_subscription = frozenset(all_topics)
        self.is_leader = True
        if getattr(response, "skip_assignment", False):
            # KIP-814: a returning static leader keeps the group's assignment; SyncGroup without assignments
            self._assignment_snapshot = self._metadata_snapshot()
            return []
        partitions_per_topic = {t: self._metadata[t] for t in sorted(all_topics) if t in self._metadata}
        result = assignor.assign(partitions_per_topic, subscriptions)
        if self.protocol == RebalanceProtocol.COOPERATIVE and assignor.name != "cooperative-sticky":
            self._validate_cooperative_assignment(owned, result)
        self._assignment_snapshot = self._metadata_snapshot()
        self._emit(out.AssignmentComputed(response.generation_id, protocol_name,
                                          {m: tuple(result[m].partitions) for m in sorted(result)}))
        assignments = []
        for member_id in sorted(result):
            a = result[member_id]
            grouped: dict[str, list[int]] = {}
            for tp in a.partitions:
                grouped.setdefault(tp.topic, []).append(tp.partition)
            data = encode_assignment(ConsumerProtocolAssignment(list(grouped.items()), a.user_data))
            assignments.append(SyncGroupRequest.Assignment(member_id=member_id, assignment=data))
        return assignments

    @staticmethod
    def _validate_cooperative_assignment(owned: Mapping[str, set], result: Mapping[str, Any]) -> None:
        """ConsumerCoordinator.validateCooperativeAssignment: no partition may move between members in one
        round (it must be revoked first, then assigned in a follow-up rebalance)."""
        added: set = set()
        revoked: set = set()
        for member_id, assignment in result.items():
            mine = owned.get(member_id, set())
            got = set(assignment.partitions)
            added |= got - mine
            revoked |= mine - got
        if added & revoked:
            raise IllegalStateException("Assignor supporting the COOPERATIVE protocol violates its requirements")

    def _send_sync_group(self, assignments: list) -> _Future:
        gen = self.generation
        body = SyncGroupRequest(group_id=self.group_id, generation_id=gen.generation_id, member_id=gen.member_id,
                                group_instance_id=self.group_instance_id, protocol_type=PROTOCOL_TYPE,
                                protocol_name=gen.protocol_name, assignments=assignments)
        return self._send(ApiKey.SYNC_GROUP, body, lambda r, f: self._handle_sync_group(r, f, gen))

    def _handle_sync_group(self, response: Any, future: _Future, sent: Generation) -> None:
        """SyncGroupResponseHandler."""
        error = E.from_code(response.error_code)
        if error == E.NONE:
            if response.protocol_type is not None and response.protocol_type != PROTOCOL_TYPE:
                future.fail(ApiException(E.INCONSISTENT_GROUP_PROTOCOL))
                return
            if not self._has_generation_reset(self.generation) and self.state == MemberState.COMPLETING_REBALANCE:
                if response.protocol_name is not None and response.protocol_name != self.generation.protocol_name:
                    future.fail(ApiException(E.INCONSISTENT_GROUP_PROTOCOL))
                    return
                self._transition(Trigger.SYNC_SUCCEEDED, "SyncGroup answered")
                self.rejoin_reason = ""
                self.rejoin_needed = False
                self.last_rebalance_end_ms = self._now
                self.last_rebalance_start_ms = -1
                future.complete(bytes(response.assignment))
            else:
                # the heartbeat thread reset the generation meanwhile: retry at once
                future.fail(ApiException(E.ILLEGAL_GENERATION))
            return
        action = SYNC_GROUP_ERRORS.get(error, Action.FATAL)
        if action in (Action.RESET_MEMBER, Action.RESET_GENERATION):
            if self.generation == sent:
                self._reset_state_on_response_error("SYNC_GROUP", error, action == Action.RESET_MEMBER)
        elif action == Action.REDISCOVER:
            self._mark_coordinator_unknown(f"error response {error.name}")
        elif action == Action.FATAL and error not in (E.GROUP_AUTHORIZATION_FAILED, E.FENCED_INSTANCE_ID):
            future.fail(ApiException(error, f"Unexpected error from SyncGroup: {error.message}"))
            return
        future.fail(exception_for(error))

    # --- onJoinPrepare / onJoinComplete / onLeavePrepare (ConsumerCoordinator) --------------------------------
    def _on_join_prepare(self, now_ms: int, generation_id: int, member_id: str) -> bool:
        """ConsumerCoordinator.onJoinPrepare: commit (auto-commit), then revoke or lose partitions."""
        if self._join_prepare_deadline is None:
            self._join_prepare_deadline = now_ms + self.config.rebalance_timeout_ms
        if self.config.enable_auto_commit and self._join_prepare_commit is None:
            if self.protocol == RebalanceProtocol.EAGER:  # maybeMarkPartitionsPendingRevocation
                self.pending_revocation |= set(self.assignment)
            self._join_prepare_commit = self._auto_commit_offsets_async(now_ms)
        commit = self._join_prepare_commit
        if commit is not None:
            completed = True
            if now_ms >= self._join_prepare_deadline:
                log.error("Asynchronous auto-commit of offsets failed: joinPrepare timeout. Will continue to join")
            elif not commit.done:
                completed = False
            elif commit.retriable:
                completed = False
            if commit.done:
                self._join_prepare_commit = None
            if not completed:
                if commit.done:
                    self._join_backoff_until = now_ms + self.config.retry_backoff_ms
                return False

        owned = self.assignment
        error = None
        if generation_id == NO_GENERATION.generation_id or member_id == NO_GENERATION.member_id:
            # the generation was reset (error, poll timeout, leave): whatever we owned is lost
            if owned:
                error = self._emit_listener(out.PartitionsLost, owned)
                self._assign_from_subscribed(())
        elif self.protocol == RebalanceProtocol.EAGER:
            error = self._emit_listener(out.PartitionsRevoked, owned)  # invoked even with no partitions
            self._assign_from_subscribed(())
        else:
            # COOPERATIVE: only partitions of topics no longer subscribed
            revoked = tuple(tp for tp in owned if tp.topic not in self.subscription)
            if revoked:
                error = self._emit_listener(out.PartitionsRevoked, revoked)
                self._assign_from_subscribed(tuple(tp for tp in owned if tp not in set(revoked)))
        self.is_leader = False
        self.group_subscription = frozenset()
        self._join_prepare_deadline = None
        self._join_prepare_commit = None
        self._raise_callback_error(error, keep_kafka_exception=False)
        return True

    def _on_join_complete(self, generation_id: int, member_id: str, protocol_name: Optional[str],
                          assignment_bytes: bytes) -> None:
        """ConsumerCoordinator.onJoinComplete: the listener order of KIP-429."""
        if not self.is_leader:
            self._assignment_snapshot = None
        assignor = self._lookup_assignor(protocol_name)
        if assignor is None:
            raise IllegalStateException(f"Coordinator selected invalid assignment protocol: {protocol_name}")
        if len(assignment_bytes) < 2:
            raise IllegalStateException(
                f"There are insufficient bytes available to read assignment from the sync-group response (actual "
                f"byte size {len(assignment_bytes)}), this is not expected; it is possible that the leader's assign "
                f"function is buggy and did not return any assignment for this member, or because static member "
                f"is configured and the protocol is buggy hence did not get the assignment for this member")
        try:
            _version, decoded = decode_assignment(assignment_bytes)
        except ProtocolError as exc:
            raise KafkaException(f"invalid assignment from the sync-group response: {exc}") from None
        api = assignors_api
        partitions = tuple(TopicPartition(t, p) for t, ps in decoded.assigned_partitions for p in ps)
        assigned = _sorted_tps(set(partitions))
        owned = self.assignment
        if any(tp.topic not in self.subscription for tp in assigned):
            self._request_rejoin("received assignment does not match the current subscription")
            return
        owned_set, assigned_set = set(owned), set(assigned)
        added = tuple(tp for tp in assigned if tp not in owned_set)
        first_error: Optional[BaseException] = None
        if self.protocol == RebalanceProtocol.COOPERATIVE:
            revoked = tuple(tp for tp in owned if tp not in assigned_set)
            if revoked:
                # revoke BEFORE updating the assignment, then ask for a follow-up rebalance (KIP-429)
                first_error = self._emit_listener(out.PartitionsRevoked, revoked)
                self._request_rejoin("need to revoke partitions and re-join")
        try:
            assignor.on_assignment(api.Assignment(partitions, decoded.user_data), generation_id)
        except Exception as exc:  # noqa: BLE001
            first_error = first_error or exc
        if self.config.enable_auto_commit:
            self._next_auto_commit_ms = self._now + self.config.auto_commit_interval_ms
        self._assign_from_subscribed(assigned)
        error = self._emit_listener(out.PartitionsAssigned, added)  # always invoked, possibly empty
        self._raise_callback_error(first_error or error, keep_kafka_exception=True)

    def _on_leave_prepare(self) -> None:
        """ConsumerCoordinator.onLeavePrepare: lost if the generation was reset or a rebalance is under way,
        revoked otherwise; only when partitions are owned."""
        dropped = self.assignment
        if self.subscription and dropped:
            gen = self.generation
            if (gen.generation_id == NO_GENERATION.generation_id or gen.member_id == NO_GENERATION.member_id
                    or self.rebalance_in_progress()):
                error = self._emit_listener(out.PartitionsLost, dropped)
            else:
                error = self._emit_listener(out.PartitionsRevoked, dropped)
            self._assign_from_subscribed(())
            self._raise_callback_error(error, keep_kafka_exception=False)

    def _assign_from_subscribed(self, partitions: Iterable) -> None:
        """SubscriptionState.assignFromSubscribed: positions of kept partitions survive, new ones start
        uninitialized (committed offsets are fetched on the next poll)."""
        new = _sorted_tps(set(partitions))
        keep = set(new)
        self.positions = {tp: off for tp, off in self.positions.items() if tp in keep}
        self.pending_revocation.clear()
        self.assignment = new

    def _lookup_assignor(self, name: Optional[str]):
        for assignor in self.assignors:
            if assignor.name == name:
                return assignor
        return None

    def _select_rebalance_protocol(self) -> RebalanceProtocol:
        """ConsumerCoordinator's constructor: the most advanced protocol every configured assignor supports."""
        common: Optional[set] = None
        for assignor in self.assignors:
            protocols = {RebalanceProtocol(p) for p in getattr(assignor, "rebalance_protocols", ("EAGER",))}
            common = protocols if common is None else common & protocols
        if not common:
            names = sorted(a.name for a in self.assignors)
            raise ConfigError(f"partition.assignment.strategy: specified assignors {names} do not have commonly "
                              f"supported rebalance protocol")
        return max(common, key=_PROTOCOL_RANK.__getitem__)

    # ------------------------------------------------------------------------------------------------
    # The heartbeat thread (AbstractCoordinator.HeartbeatThread.run, one pass)
    # ------------------------------------------------------------------------------------------------
    def _heartbeat_enabled(self) -> bool:
        return (not self.closing and not self.closed and bool(self.subscription)
                and not self.state.has_not_joined_group() and self._heartbeat_failure is None)

    def _heartbeat_thread(self, now_ms: int) -> bool:
        """One pass; returns False if it did nothing or only sent a heartbeat (see :meth:`tick`)."""
        if not self._heartbeat_enabled():
            return False
        hb = self.heartbeat
        if self.coordinator is None:
            self._lookup_coordinator(now_ms)
            return True
        if hb.session_timeout_expired(now_ms):
            # no successful heartbeat response for a whole session: suspect the coordinator
            self._mark_coordinator_unknown("session timed out without receiving a heartbeat response")
            self._run_deferred()
            self._lookup_coordinator(now_ms)
            return True
        if hb.poll_timeout_expired(now_ms):
            self._handle_poll_timeout_expiry()
            return True
        if hb.should_heartbeat(now_ms):
            hb.sent_heartbeat(now_ms)
            future = self._send_heartbeat()
            future.add_listener(self._on_heartbeat_success, self._on_heartbeat_failure)
        return False

    def _on_heartbeat_success(self, _value: Any) -> None:
        self.heartbeat.receive_heartbeat(self._now)

    def _on_heartbeat_failure(self, exc: BaseException) -> None:
        if isinstance(exc, RebalanceInProgressException):
            # heartbeating through a rebalance keeps the member in the group until it rejoins
            self.heartbeat.receive_heartbeat(self._now)
        elif isinstance(exc, FencedInstanceIdException):
            self._heartbeat_failure = exc
        else:
            self.heartbeat.fail_heartbeat(self._now)

    def _send_heartbeat(self) -> _Future:
        gen = self.generation
        body = HeartbeatRequest(group_id=self.group_id, generation_id=gen.generation_id, member_id=gen.member_id,
                                group_instance_id=self.group_instance_id)
        return self._send(ApiKey.HEARTBEAT, body, lambda r, f: self._handle_heartbeat(r, f, gen))

    def _handle_heartbeat(self, response: Any, future: _Future, sent: Generation) -> None:
        """HeartbeatResponseHandler."""
        if response.error_code == 0:
            self._only_postponed = True  # its one listener restarts the session timer (see on_response)
            future.complete()
            return
        error = E.from_code(response.error_code)
        action = HEARTBEAT_ERRORS.get(error)
        if action == Action.REDISCOVER:
            self._mark_coordinator_unknown(f"error response {error.name}")
            future.fail(exception_for(error))
        elif action == Action.REJOIN_IF_STABLE:
            if self.state == MemberState.STABLE:
                self._request_rejoin("group is already rebalancing")
                future.fail(exception_for(error))
            else:
                future.complete()
        elif action in (Action.RESET_MEMBER, Action.RESET_GENERATION):
            if self.generation == sent:
                self._reset_state_on_response_error("HEARTBEAT", error, action == Action.RESET_MEMBER)
                future.fail(exception_for(error))
            else:
                future.complete()  # a stale generation's error is ignored
        elif error == E.GROUP_AUTHORIZATION_FAILED:
            exc = exception_for(error)
            self._heartbeat_failure = exc
            future.fail(exc)
        else:
            future.fail(ApiException(error, f"Unexpected error in heartbeat response: {error.message}"))

    def _handle_poll_timeout_expiry(self) -> None:
        log.warning("consumer poll timeout has expired: the time between subsequent calls to poll() was longer "
                    "than max.poll.interval.ms (%d)", self.config.max_poll_interval_ms)
        self._maybe_leave_group("consumer poll timeout has expired.")

    def _maybe_leave_group(self, reason: str) -> Optional[_Future]:
        """AbstractCoordinator.maybeLeaveGroup: dynamic members with a member id send LeaveGroup (best effort);
        every member then resets its generation and member id."""
        future = None
        if (self.group_instance_id is None and self.coordinator is not None
                and self.state != MemberState.UNJOINED and self.generation.has_member_id()):
            future = self._send_leave_group(reason)
            self._emit(out.LeftGroup(self.generation.member_id, reason))
        self._reset_state_and_rejoin("consumer pro-actively leaving the group", True)
        return future

    def _send_leave_group(self, reason: str) -> _Future:
        try:
            version = self.api_version(ApiKey.LEAVE_GROUP)
        except UnsupportedVersionException as exc:
            return _Future.failed_with(exc)
        member_id = self.generation.member_id
        if version >= 3:
            body = LeaveGroupRequest(group_id=self.group_id, members=[
                LeaveGroupRequest.MemberIdentity(member_id=member_id, reason=_truncate_reason(reason))])
        else:
            body = LeaveGroupRequest(group_id=self.group_id, member_id=member_id)
        return self._send(ApiKey.LEAVE_GROUP, body, self._handle_leave_group, version=version)

    @staticmethod
    def _handle_leave_group(response: Any, future: _Future) -> None:
        members = getattr(response, "members", None) or []
        if len(members) > 1:
            future.fail(IllegalStateException(f"The expected leave group response should only contain no more "
                                              f"than one member info, however get {members}"))
            return
        error = E.from_code(response.error_code)
        if error == E.NONE:
            for m in members:
                if m.error_code != 0:
                    error = E.from_code(m.error_code)
                    break
        if error == E.NONE:
            future.complete()
        else:
            future.fail(exception_for(error))

    # ------------------------------------------------------------------------------------------------
    # Offset commit (ConsumerCoordinator.sendOffsetCommitRequest / OffsetCommitResponseHandler)
    # ------------------------------------------------------------------------------------------------
    def _maybe_auto_commit_offsets_async(self, now_ms: int) -> None:
        if self.config.enable_auto_commit and now_ms >= self._next_auto_commit_ms:
            self._next_auto_commit_ms = now_ms + self.config.auto_commit_interval_ms
            self._auto_commit_offsets_async(now_ms)

    def _auto_commit_offsets_async(self, now_ms: int) -> _Future:
        offsets = self.all_consumed()
        future = self._commit_offsets_async(offsets, None, auto=True)

        def on_failure(exc: BaseException) -> None:
            if isinstance(exc, RetriableCommitFailedException):
                self._next_auto_commit_ms = self._now + self.config.retry_backoff_ms
        future.add_listener(None, on_failure)
        return future

    def _commit_offsets_async(self, offsets: dict, commit_id: Optional[int], auto: bool = False) -> _Future:
        """commitOffsetsAsync: one attempt (after a coordinator lookup if needed); the returned future fails with
        RetriableCommitFailedException for retriable errors."""
        result = _Future()
        report_id = commit_id if commit_id is not None else 0

        def done(_v: Any) -> None:
            self._emit(out.OffsetCommitCompleted(report_id, dict(offsets), None))
            result.complete()

        def failed(exc: BaseException) -> None:
            if getattr(exc, "retriable", False):
                exc = RetriableCommitFailedException(exc)
            if isinstance(exc, FencedInstanceIdException):
                self._async_commit_fenced = True
            self._emit(out.OffsetCommitCompleted(report_id, dict(offsets), exc))
            result.fail(exc)

        if not offsets or self.coordinator is not None:
            self._send_offset_commit(offsets).add_listener(done, failed)
        else:
            lookup = self._lookup_coordinator(self._now)
            if lookup is None:
                failed(ApiException(E.COORDINATOR_NOT_AVAILABLE))
            else:
                lookup.add_listener(lambda _n: self._send_offset_commit(offsets).add_listener(done, failed), failed)
        return result

    def _service_sync_commits(self, now_ms: int) -> None:
        """commitOffsetsSync as a state machine: resend after retriable failures until the deadline."""
        if not self._sync_commits:
            return
        for op in list(self._sync_commits):
            if op.future is not None and not op.future.done:
                if now_ms >= op.deadline_ms:  # commitSync returns when its timer expires, even mid-request
                    op.future = None
                    self._finish_sync_commit(op, KafkaException(
                        f"Timeout of {self.config.default_api_timeout_ms}ms expired before successfully "
                        f"committing offsets"))
                continue
            if op.future is not None:
                fut, op.future = op.future, None
                if fut.succeeded:
                    self._finish_sync_commit(op, None)
                    continue
                if not fut.retriable:
                    self._finish_sync_commit(op, fut.exception)
                    continue
                op.retry_at_ms = now_ms + self._retry_backoff.backoff(op.attempts)
                op.attempts += 1
            if now_ms >= op.deadline_ms:
                self._finish_sync_commit(op, KafkaException(
                    f"Timeout of {self.config.default_api_timeout_ms}ms expired before successfully committing "
                    f"offsets {sorted((str(tp), o) for tp, o in op.offsets.items())}"))
                continue
            if now_ms < op.retry_at_ms:
                continue
            if self.coordinator is None:
                self._lookup_coordinator(now_ms)
                continue
            op.future = self._send_offset_commit(op.offsets)
            op.future.add_listener(lambda _v: None, lambda _e: None)

    def _finish_sync_commit(self, op: _SyncCommit, exc: Optional[BaseException]) -> None:
        if op in self._sync_commits:
            self._sync_commits.remove(op)
        if exc is None:
            op.result.complete()
        else:
            op.result.fail(exc)

    def _send_offset_commit(self, offsets: dict) -> _Future:
        if not offsets:
            return _Future.succeeded_with()
        if self.coordinator is None:
            return _Future.failed_with(ApiException(E.COORDINATOR_NOT_AVAILABLE))
        for tp, offset in offsets.items():
            if offset < 0:
                return _Future.failed_with(KafkaException(f"Invalid offset: {offset}"))
        if self.subscription:
            gen = self.generation_if_stable()
            instance = self.group_instance_id
            if gen is None:
                if self.rebalance_in_progress():
                    return _Future.failed_with(RebalanceInProgressException(
                        "Offset commit cannot be completed since the consumer is undergoing a rebalance for auto "
                        "partition assignment. You can try completing the rebalance by calling poll() and then "
                        "retry the operation."))
                return _Future.failed_with(CommitFailedException(
                    "Offset commit cannot be completed since the consumer is not part of an active group for auto "
                    "partition assignment; it is likely that the consumer was kicked out of the group."))
        else:
            gen, instance = NO_GENERATION, None
        topics: dict[str, list] = {}
        for tp in _sorted_tps(offsets):
            topics.setdefault(tp.topic, []).append(OffsetCommitRequest.Topic.Partition(
                partition_index=tp.partition, committed_offset=offsets[tp], committed_leader_epoch=-1,
                committed_metadata=""))
        body = OffsetCommitRequest(group_id=self.group_id, generation_id_or_member_epoch=gen.generation_id,
                                   member_id=gen.member_id, group_instance_id=instance,
                                   topics=[OffsetCommitRequest.Topic(name=t, partitions=ps)
                                           for t, ps in topics.items()])
        return self._send(ApiKey.OFFSET_COMMIT, body, lambda r, f: self._handle_offset_commit(r, f, gen))

    def _handle_offset_commit(self, response: Any, future: _Future, sent: Generation) -> None:
        """OffsetCommitResponseHandler: the first failed partition decides."""
        unauthorized = set()
        for topic in response.topics:
            for part in topic.partitions:
                error = E.from_code(part.error_code)
                if error == E.NONE:
                    continue
                if error == E.GROUP_AUTHORIZATION_FAILED:
                    future.fail(exception_for(error))
                    return
                if error == E.TOPIC_AUTHORIZATION_FAILED:
                    unauthorized.add(topic.name)
                elif error in (E.OFFSET_METADATA_TOO_LARGE, E.INVALID_COMMIT_OFFSET_SIZE,
                               E.COORDINATOR_LOAD_IN_PROGRESS, E.UNKNOWN_TOPIC_OR_PARTITION):
                    future.fail(exception_for(error))
                    return
                elif error in (E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR, E.REQUEST_TIMED_OUT):
                    self._mark_coordinator_unknown(f"error response {error.name}")
                    future.fail(exception_for(error))
                    return
                elif error == E.FENCED_INSTANCE_ID:
                    if self.generation == sent:
                        future.fail(exception_for(error))
                    elif self.state == MemberState.PREPARING_REBALANCE:
                        future.fail(RebalanceInProgressException(
                            "Offset commit cannot be completed since the consumer member's old generation is fenced "
                            "by its group instance id"))
                    else:
                        future.fail(CommitFailedException())
                    return
                elif error == E.REBALANCE_IN_PROGRESS:
                    self._request_rejoin("offset commit failed since group is already rebalancing")
                    future.fail(RebalanceInProgressException(
                        "Offset commit cannot be completed since the consumer group is executing a rebalance at "
                        "the moment. You can try completing the rebalance by calling poll() and then retry "
                        "commit again"))
                    return
                elif error in (E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION):
                    if self.generation != sent and self.state == MemberState.PREPARING_REBALANCE:
                        future.fail(RebalanceInProgressException(
                            "Offset commit cannot be completed since the consumer member's generation is already "
                            "stale, meaning it has already participated another rebalance and got a new "
                            "generation."))
                    else:
                        self._reset_state_on_response_error("OFFSET_COMMIT", error,
                                                            error != E.ILLEGAL_GENERATION)
                        future.fail(CommitFailedException())
                    return
                else:
                    future.fail(ApiException(error, f"Unexpected error in commit: {error.message}"))
                    return
        if unauthorized:
            future.fail(ApiException(E.TOPIC_AUTHORIZATION_FAILED,
                                     f"Not authorized to access topics: {sorted(unauthorized)}"))
        else:
            future.complete()

    # ------------------------------------------------------------------------------------------------
    # Committed offsets -> positions (ConsumerCoordinator.fetchCommittedOffsets, auto.offset.reset)
    # ------------------------------------------------------------------------------------------------
    def _update_fetch_positions(self, now_ms: int) -> None:
        initializing = frozenset(tp for tp in self.assignment if tp not in self.positions)
        if not initializing:
            return
        gen = self.generation_if_stable()
        pending = self._pending_fetch
        if pending is not None and (pending.partitions != initializing or pending.generation != gen):
            self._pending_fetch = pending = None  # a different request: forget the old one
        if pending is not None or now_ms < self._fetch_backoff_until:
            return
        if self.coordinator is None:
            self._ensure_coordinator_ready(now_ms)
            if self.coordinator is None:
                return
        future = self._send_offset_fetch(initializing)
        fetch = _PendingFetch(initializing, gen, future)
        self._pending_fetch = fetch
        future.add_listener(lambda offsets: self._on_offsets_fetched(fetch, offsets),
                            lambda exc: self._on_offset_fetch_failed(fetch, exc))

    def _send_offset_fetch(self, partitions: frozenset) -> _Future:
        try:
            version = self.api_version(ApiKey.OFFSET_FETCH)
        except UnsupportedVersionException as exc:
            return _Future.failed_with(exc)
        grouped: dict[str, list[int]] = {}
        for tp in _sorted_tps(partitions):
            grouped.setdefault(tp.topic, []).append(tp.partition)
        if version >= 8:
            body = OffsetFetchRequest(groups=[OffsetFetchRequest.Group(
                group_id=self.group_id,
                topics=[OffsetFetchRequest.Group.Topic(name=t, partition_indexes=ps) for t, ps in grouped.items()])],
                require_stable=True)
        else:
            body = OffsetFetchRequest(group_id=self.group_id, require_stable=True, topics=[
                OffsetFetchRequest.Topic(name=t, partition_indexes=ps) for t, ps in grouped.items()])
        return self._send(ApiKey.OFFSET_FETCH, body, self._handle_offset_fetch, version=version)

    _GROUP_LEVEL_FETCH_ERRORS = (E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR,
                                 E.GROUP_AUTHORIZATION_FAILED)

    def _handle_offset_fetch(self, response: Any, future: _Future) -> None:
        """OffsetFetchResponseHandler (the group-level error first, then per partition)."""
        if getattr(response, "groups", None):
            group = next((g for g in response.groups if g.group_id == self.group_id), response.groups[0])
            group_error, topics = E.from_code(group.error_code), group.topics
        else:
            group_error, topics = E.from_code(getattr(response, "error_code", 0) or 0), response.topics
            if group_error == E.NONE:  # v0/v1 copy the group error into every partition
                for t in topics:
                    for p in t.partitions:
                        if E.from_code(p.error_code) in self._GROUP_LEVEL_FETCH_ERRORS:
                            group_error = E.from_code(p.error_code)
        if group_error != E.NONE:
            if group_error in (E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE):
                self._mark_coordinator_unknown(f"error response {group_error.name}")
            if group_error in (E.COORDINATOR_LOAD_IN_PROGRESS, E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE,
                               E.GROUP_AUTHORIZATION_FAILED):
                future.fail(exception_for(group_error))
            else:
                future.fail(ApiException(group_error, f"Unexpected error in fetch offset response: "
                                                      f"{group_error.message}"))
            return
        offsets: dict = {}
        unstable = False
        unauthorized = set()
        for t in topics:
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                error = E.from_code(p.error_code)
                if error == E.NONE:
                    offsets[tp] = p.committed_offset if p.committed_offset >= 0 else None
                elif error == E.UNKNOWN_TOPIC_OR_PARTITION:
                    future.fail(ApiException(error, f"Topic or Partition {tp} does not exist"))
                    return
                elif error == E.TOPIC_AUTHORIZATION_FAILED:
                    unauthorized.add(t.name)
                elif error == E.UNSTABLE_OFFSET_COMMIT:
                    unstable = True
                else:
                    future.fail(ApiException(error, f"Unexpected error in fetch offset response for partition "
                                                    f"{tp}: {error.message}"))
                    return
        if unauthorized:
            future.fail(ApiException(E.TOPIC_AUTHORIZATION_FAILED, f"Not authorized to access topics: "
                                                                   f"{sorted(unauthorized)}"))
        elif unstable:
            future.fail(exception_for(E.UNSTABLE_OFFSET_COMMIT))
        else:
            future.complete(offsets)

    def _on_offsets_fetched(self, fetch: _PendingFetch, offsets: dict) -> None:
        if self._pending_fetch is fetch:
            self._pending_fetch = None
        self._fetch_attempts = 0
        committed, reset, undefined = {}, {}, []
        for tp in _sorted_tps(fetch.partitions):
            if tp not in self.assignment or tp in self.positions:
                continue  # no longer assigned, or positioned meanwhile
            offset = offsets.get(tp)
            if offset is not None:
                committed[tp] = self.positions[tp] = offset
            elif self.config.auto_offset_reset == "earliest":
                reset[tp] = self.positions[tp] = int(self._log_start_offsets.get(tp, 0))
            elif self.config.auto_offset_reset == "latest":
                reset[tp] = self.positions[tp] = int(self._log_end_offsets.get(tp, 0))
            else:
                undefined.append(tp)
        if committed or reset:
            self._emit(out.PositionsInitialized(committed, reset))
        if undefined:
            self._pending_exception = NoOffsetForPartitionException(undefined)

    def _on_offset_fetch_failed(self, fetch: _PendingFetch, exc: BaseException) -> None:
        if self._pending_fetch is fetch:
            self._pending_fetch = None
        if getattr(exc, "retriable", False):
            self._fetch_backoff_until = self._now + self._retry_backoff.backoff(self._fetch_attempts)
            self._fetch_attempts += 1
        else:
            self._pending_exception = exc

    # ------------------------------------------------------------------------------------------------
    # close (ConsumerCoordinator.close -> AbstractCoordinator.close)
    # ------------------------------------------------------------------------------------------------
    def _advance_close(self, now_ms: int) -> None:
        if not self.closing or self.closed:
            return
        op = self._close_commit
        if op is not None:
            if op in self._sync_commits and now_ms < self._close_deadline:
                return
            self._close_commit = None
            if op in self._sync_commits:
                self._finish_sync_commit(op, KafkaException("close timed out before the offset commit completed"))
        if not self._close_left:
            self._close_left = True
            if self.config.internal_leave_group_on_close:
                try:
                    self._on_leave_prepare()
                except KafkaException as exc:
                    # Kafka's close() would propagate this and skip the LeaveGroup; a driver-facing close must
                    # finish, so the error is logged and the member still leaves.
                    log.error("rebalance listener failed while closing: %r", exc)
                self._close_leave = self._maybe_leave_group("the consumer is being closed")
        leave = self._close_leave
        if leave is not None and not leave.done and now_ms < self._close_deadline:
            return
        self.closed = True
        self.closing = False
        for handle in list(self._inflight):
            self._inflight.pop(handle).future.fail(DisconnectException("consumer closed"))
        self._sync_commits.clear()
        self._emit(out.Closed())


__all__ = ["ConsumerCoordinator", "MemberState", "Trigger", "TRANSITIONS", "Action", "JOIN_GROUP_ERRORS",
           "SYNC_GROUP_ERRORS", "HEARTBEAT_ERRORS", "REJOIN_IMMEDIATELY", "RebalanceProtocol", "Generation",
           "NO_GENERATION", "PollResult", "DISCONNECTED", "CLIENT_MAX_VERSIONS", "ExponentialBackoff"]
