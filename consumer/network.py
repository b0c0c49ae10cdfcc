"""Request tracking of the consumer core, sans-IO: what Kafka's ``ConsumerNetworkClient`` (``send`` returning a
``RequestFuture``, ``disconnectAsync``, failing pending requests) and ``NetworkClient`` (in-flight requests,
request timeouts, ``ApiVersions.latestUsableVersion``) do for the Java consumer, minus the sockets.

Theory of operation
-------------------
:class:`ConsumerNetworkClient` is the core's one door to its driver. Everything the core wants done goes out
through it, in order, as *outputs* (``consumer/outputs.py``): :meth:`~ConsumerNetworkClient.send` queues a
:class:`~consumer.outputs.SendRequest` with a fresh handle (1, 2, 3, ... per core, as Kafka's correlation ids
are per client) and returns the :class:`RequestFuture` that the request's handler completes when the driver
feeds the response back (:meth:`~ConsumerNetworkClient.complete`); listener callbacks and observability records
are queued with :meth:`~ConsumerNetworkClient.emit` in ``outputs``, which the facade's ``drain`` hands over.
It also holds the time the driver last gave (``now``), which every part of the core reads.

A request ends in one of four ways: its response arrives (the handler decides success or failure), the driver
reports the connection lost (``DisconnectException``), its ``timeout_ms`` passes (:meth:`expire`: as in
``NetworkClient.handleTimedOutRequests``, the node is disconnected and every request on it fails), or the core
asked for the coordinator connection to be closed (:meth:`disconnect_async`; its requests fail at the end of
the current call, as Kafka fails them in the next network poll). A failure of a coordinator request by
disconnect is reported to ``on_coordinator_disconnect`` first (Kafka's ``CoordinatorResponseHandler.onFailure``
marks the coordinator unknown), then to the future's listeners.

Versions: the broker's ApiVersions answer is given with :meth:`set_api_versions`; a request goes out at the
highest version both sides support (:data:`CLIENT_MAX_VERSIONS` are the Java consumer's maxima).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from consumer import outputs as out
from consumer.errors import DisconnectException, UnsupportedVersionException
from protocol.api import APIS, ApiKey

#: The highest version of each API this client speaks (the Java consumer's maxima the brief pins); the lowest
#: is what ``protocol/`` implements. The version used is the highest both sides support.
CLIENT_MAX_VERSIONS: dict[int, int] = {
    ApiKey.FIND_COORDINATOR: 4, ApiKey.JOIN_GROUP: 9, ApiKey.SYNC_GROUP: 5, ApiKey.HEARTBEAT: 4,
    ApiKey.LEAVE_GROUP: 5, ApiKey.OFFSET_COMMIT: 9, ApiKey.OFFSET_FETCH: 9,
}

# The consumer's APIs have consecutive keys (OffsetCommit 8 ... SyncGroup 14): their usable versions are a tuple
# indexed by api_key - _FIRST_API, computed when the broker's versions are learned (NodeApiVersions).
_FIRST_API, _API_COUNT = min(CLIENT_MAX_VERSIONS), len(CLIENT_MAX_VERSIONS)
assert sorted(CLIENT_MAX_VERSIONS) == list(range(_FIRST_API, _FIRST_API + _API_COUNT))

#: What a driver passes to ``on_response`` when a connection broke before the response arrived.
DISCONNECTED = DisconnectException("disconnected")


class RequestFuture:
    """Kafka's ``RequestFuture``, single-threaded: completes or fails once; listeners run in the order added,
    at once if the future is already done."""

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
    def succeeded_with(cls, value: Any = None) -> "RequestFuture":
        f = cls()
        f.complete(value)
        return f

    @classmethod
    def failed_with(cls, exc: BaseException) -> "RequestFuture":
        f = cls()
        f.fail(exc)
        return f


@dataclass(slots=True)
class InFlight:
    """A request awaiting its response (``NetworkClient``'s ``InFlightRequest`` + its completion handler)."""

    api_key: int
    node_id: Optional[int]
    to_coordinator: bool
    deadline_ms: int
    future: RequestFuture
    handler: Callable[[Any, RequestFuture], None]
    version: int


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


class ConsumerNetworkClient:
    """Requests in flight, their futures and timeouts, version negotiation, and the ordered outputs of one
    consumer core (see the module docstring)."""

    __slots__ = ("now", "inflight", "outputs", "deferred", "waiting", "_versions", "_last_handle", "request_timeout_ms",
                 "_api_versions", "on_coordinator_disconnect", "_other_versions")

    def __init__(self, *, request_timeout_ms: int, now_ms: int = 0) -> None:
        self.now = now_ms  # the time the driver last gave
        self.inflight: dict[int, InFlight] = {}  # handle -> request awaiting its response
        # coordinator connections the core asked the driver to close (their requests fail at the end of the call);
        # () when there are none (read after every call: no list of its own to touch then)
        self.deferred: list[int] | tuple[()] = ()
        #: commitSync calls in progress. Kafka blocks them in client.poll(future, timer); here the facade moves
        #: them on after every response and at their deadlines, and reads this count (kept by the commits) to know
        #: whether there are any without touching the commits' own state on every heartbeat
        self.waiting = 0
        # outputs since the last drain: () when there are none (a drained core holds no list of its own: with
        # thousands of cores, a fresh list per drain lived until the next heartbeat and was freed cold)
        self.outputs: list[Any] | tuple[()] = ()
        self._last_handle = 0  # request handles are 1, 2, 3, ...
        # the broker's {api_key: (min, max)} (None: not known), and the usable version of each of the consumer's
        # APIs, or why there is none (a message)
        self._api_versions: Optional[dict[int, tuple[int, int]]] = None
        self._versions: tuple = self._usable_versions()
        # the usable versions of the other APIs asked for (ConsumerGroupHeartbeat, 68: on every heartbeat)
        self._other_versions: dict[int, int] = {}
        self.request_timeout_ms = request_timeout_ms
        #: called with (node_id, cause) before a coordinator request fails by disconnect (set by the discovery)
        self.on_coordinator_disconnect: Callable[[int, str], None] = lambda _node, _cause: None

    # --- outputs -------------------------------------------------------------------------------------------------
    def emit(self, item: Any) -> None:
        """Queue an output (the facade's ``drain`` hands ``outputs`` over and leaves ``()``)."""
        if self.outputs:
            self.outputs.append(item)
        else:
            self.outputs = [item]

    # --- versions --------------------------------------------------------------------------------------------------
    def set_api_versions(self, versions: Any) -> None:
        """The broker's ApiVersions answer: an ``ApiVersionsResponse`` or ``{api_key: (min, max)}``."""
        if hasattr(versions, "api_keys"):
            versions = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
        self._api_versions = {int(k): (int(lo), int(hi)) for k, (lo, hi) in dict(versions).items()}
        self._versions = self._usable_versions()
        self._other_versions = {}

    def api_version(self, api_key: int) -> int:
        """The highest version of ``api_key`` both this client and the broker support (NetworkClient's
        ``ApiVersions.latestUsableVersion``); ``UnsupportedVersionException`` if there is none."""
        i = api_key - _FIRST_API
        if not 0 <= i < _API_COUNT:
            v = self._other_versions.get(api_key)
            if v is None:
                v = self._other_versions[api_key] = self._usable_version(api_key)
            return v
        v = self._versions[i]
        if type(v) is not int:
            raise UnsupportedVersionException(v)
        return v

    def _usable_versions(self) -> tuple:
        versions = []
        for api_key in range(_FIRST_API, _FIRST_API + _API_COUNT):
            try:
                versions.append(self._usable_version(api_key))
            except UnsupportedVersionException as exc:
                versions.append(str(exc))
        return tuple(versions)

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

    # --- requests ----------------------------------------------------------------------------------------------
    def send(self, api_key: int, body: Any, handler: Callable[[Any, RequestFuture], None], node_id: Optional[int],
             to_coordinator: bool, timeout_ms: Optional[int] = None, version: Optional[int] = None) -> RequestFuture:
        """ConsumerNetworkClient.send: queue a SendRequest and return the future its handler completes (failed
        at once with ``UnsupportedVersionException`` if the broker speaks no version of the API we do)."""
        if version is None:
            i = api_key - _FIRST_API
            version = self._versions[i] if 0 <= i < _API_COUNT else self._other_versions.get(api_key)
            if type(version) is not int:
                try:
                    version = self.api_version(api_key)
                except UnsupportedVersionException as exc:
                    return RequestFuture.failed_with(exc)
        handle = self._last_handle = self._last_handle + 1
        timeout = self.request_timeout_ms if timeout_ms is None else timeout_ms
        future = RequestFuture()
        self.inflight[handle] = InFlight(api_key, node_id, to_coordinator, self.now + timeout, future, handler,
                                         version)
        self.emit(out.SendRequest(handle, api_key, version, body, node_id, to_coordinator, timeout))
        return future

    def fail(self, inflight: InFlight, exc: BaseException) -> None:
        """Fail a request that is no longer in flight (CoordinatorResponseHandler.onFailure: a disconnect of the
        coordinator connection is reported first)."""
        if inflight.to_coordinator and isinstance(exc, DisconnectException):
            self.on_coordinator_disconnect(inflight.node_id, str(exc))
        inflight.future.fail(exc)

    def fail_node(self, node_id: int) -> None:
        """The connection to ``node_id`` closed: every request on it fails with a disconnect."""
        for handle in [h for h, f in self.inflight.items() if f.node_id == node_id]:
            self.fail(self.inflight.pop(handle), DisconnectException(f"connection to node {node_id} closed"))

    def expire(self, now_ms: int) -> bool:
        """NetworkClient.handleTimedOutRequests: a timed-out request disconnects its node, failing every
        request on that connection. Returns whether any request timed out."""
        inflight = self.inflight
        if not inflight:
            return False
        expired = sorted(h for h, f in inflight.items() if f.deadline_ms <= now_ms)
        for handle in expired:
            request = inflight.pop(handle, None)
            if request is None:
                continue
            exc = DisconnectException(f"request {handle} timed out")
            if request.node_id is not None:
                self.emit(out.CloseConnection(request.node_id, "request timed out"))
                for other in [h for h, f in inflight.items() if f.node_id == request.node_id]:
                    self.fail(inflight.pop(other), exc)
            self.fail(request, exc)
        return bool(expired)

    def disconnect_async(self, node_id: int, cause: str) -> None:
        """ConsumerNetworkClient.disconnectAsync: ask the driver to close the coordinator connection; its
        requests fail with a disconnect when the current call ends (:meth:`fail_deferred`)."""
        self.emit(out.CloseConnection(node_id, cause))
        if self.deferred:
            self.deferred.append(node_id)
        else:
            self.deferred = [node_id]

    def fail_deferred(self) -> None:
        """The oldest coordinator connection that :meth:`disconnect_async` closed: its requests fail."""
        node_id = self.deferred.pop(0)
        if not self.deferred:
            self.deferred = ()
        for handle in [h for h, f in self.inflight.items() if f.node_id == node_id and f.to_coordinator]:
            self.inflight.pop(handle).future.fail(DisconnectException(
                f"coordinator connection to node {node_id} closed"))

    def fail_all(self, cause: str) -> None:
        """Every request in flight fails with a disconnect (the consumer closed)."""
        for handle in list(self.inflight):
            self.inflight.pop(handle).future.fail(DisconnectException(cause))


__all__ = ["ConsumerNetworkClient", "RequestFuture", "InFlight", "ExponentialBackoff", "CLIENT_MAX_VERSIONS",
           "DISCONNECTED"]
