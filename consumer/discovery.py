"""Finding the group coordinator, sans-IO: ``AbstractCoordinator.lookupCoordinator`` / ``ensureCoordinatorReady``
/ ``markCoordinatorUnknown`` and ``FindCoordinatorResponseHandler`` of the Java client (KIP-848's consumer has
the same job in ``CoordinatorRequestManager``).

Theory of operation
-------------------
The coordinator is unknown at first and whenever something says it moved or died: an error response
(NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, ...), a disconnect of the coordinator connection, or a session
timeout of the heartbeat thread. :meth:`CoordinatorDiscovery.lookup` sends one FindCoordinator at a time, to
any broker (the driver picks one: Kafka's ``leastLoadedNode``); a failed lookup is retried after an exponential
backoff (``retry.backoff.ms`` doubling to ``retry.backoff.max.ms``, no jitter), and a non-retriable failure
(GROUP_AUTHORIZATION_FAILED, an unsupported version) is remembered for the application thread to raise
(``fatalFindCoordinatorException``). Requests to the coordinator go through :meth:`send`, which fails them at
once (COORDINATOR_NOT_AVAILABLE) while the coordinator is unknown.

Marking the coordinator unknown asks the driver to close the coordinator connection (``disconnectAsync``),
unless that connection already broke; a newly found coordinator gets a whole session before the heartbeat
thread suspects it (``Heartbeat.resetSessionTimeout``).

Shared by every membership type and by the commits.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Optional

from consumer import outputs as out
from consumer.errors import ApiException, IllegalStateException, UnsupportedVersionException, exception_for
from consumer.heartbeat import Heartbeat
from consumer.network import ConsumerNetworkClient, ExponentialBackoff, RequestFuture
from protocol.api import ApiKey
from protocol.errors import ErrorCode
from protocol.messages import FindCoordinatorRequest

log = logging.getLogger("kgroup.consumer")

E = ErrorCode


class CoordinatorDiscovery:
    __slots__ = ("coordinator", "_find_future", "_find_attempts", "find_backoff_until", "_fatal_exception",
                 "_net", "_heartbeat", "_retry_backoff", "_group_id", "state_label")

    def __init__(self, net: ConsumerNetworkClient, heartbeat: Heartbeat, *, group_id: str,
                 retry_backoff: ExponentialBackoff) -> None:
        self.coordinator: Optional[out.Node] = None
        self._find_future: Optional[RequestFuture] = None
        self._find_attempts = 0
        self.find_backoff_until = 0
        self._fatal_exception: Optional[BaseException] = None
        self._net = net
        self._heartbeat = heartbeat
        self._retry_backoff = retry_backoff
        self._group_id = group_id
        #: the member's state as shown in the StateChanged record of a coordinator loss (set by the membership)
        self.state_label: Callable[[], str] = lambda: ""
        net.on_coordinator_disconnect = self._coordinator_disconnected

    # --- queries ---------------------------------------------------------------------------------------------------
    def lookup_in_flight(self) -> bool:
        return self._find_future is not None

    def next_lookup_ms(self) -> Optional[int]:
        """When a lookup may be sent (None: one is in flight, its response will come)."""
        return self.find_backoff_until if self._find_future is None else None

    # --- ensureCoordinatorReady / lookupCoordinator -----------------------------------------------------------------
    def ensure_ready(self, now_ms: int) -> bool:
        """Start a lookup if none is running; raise a remembered fatal lookup failure. True if known."""
        if self.coordinator is not None:
            return True
        if self._fatal_exception is not None:
            exc, self._fatal_exception = self._fatal_exception, None
            raise exc
        self.lookup(now_ms)
        return self.coordinator is not None

    def lookup(self, now_ms: int) -> Optional[RequestFuture]:
        """The lookup in flight, or a new one; None while backing off after a failed one."""
        if self._find_future is None:
            if now_ms < self.find_backoff_until:
                return None
            self._find_future = self._send_find_coordinator()
        return self._find_future

    def _send_find_coordinator(self) -> RequestFuture:
        net = self._net
        try:
            version = net.api_version(ApiKey.FIND_COORDINATOR)
        except UnsupportedVersionException as exc:
            self._fatal_exception = exc
            return RequestFuture.failed_with(exc)
        if version >= 4:
            body = FindCoordinatorRequest(key_type=0, coordinator_keys=[self._group_id])
        else:
            body = FindCoordinatorRequest(key=self._group_id, key_type=0)
        future = net.send(ApiKey.FIND_COORDINATOR, body, self._handle_find_coordinator, None, False,
                          version=version)
        future.add_listener(self._on_success, self._on_failure)
        return future

    def _handle_find_coordinator(self, response: Any, future: RequestFuture) -> None:
        """FindCoordinatorResponseHandler."""
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
            self._heartbeat.reset_session_timeout(self._net.now)
            self._net.emit(out.CoordinatorDiscovered(self.coordinator))
            future.complete(self.coordinator)
        else:
            future.fail(exception_for(error))

    def _on_success(self, _node: Any) -> None:
        self._find_future = None
        self._find_attempts = 0

    def _on_failure(self, exc: BaseException) -> None:
        self._find_future = None
        if not getattr(exc, "retriable", False):
            # remembered so the application thread throws it (fatalFindCoordinatorException)
            self._fatal_exception = exc
        self.find_backoff_until = self._net.now + self._retry_backoff.backoff(self._find_attempts)
        self._find_attempts += 1

    # --- markCoordinatorUnknown ----------------------------------------------------------------------------------
    def mark_unknown(self, cause: str, disconnected: bool = False) -> None:
        """AbstractCoordinator.markCoordinatorUnknown: forget the coordinator; unless the connection already
        broke, ask the driver to close it (its in-flight requests then fail with a disconnect)."""
        if self.coordinator is None:
            return
        old = self.coordinator
        self.coordinator = None
        log.info("group coordinator %s is unavailable or invalid due to cause: %s; rediscovery will be attempted",
                 old, cause)
        state = self.state_label()
        self._net.emit(out.StateChanged(state, state, f"coordinator unknown: {cause}"))
        if not disconnected:
            self._net.disconnect_async(old.node_id, cause)

    def _coordinator_disconnected(self, node_id: int, cause: str) -> None:
        # CoordinatorResponseHandler.onFailure: a disconnect of the coordinator we know marks it dead
        if self.coordinator is not None and self.coordinator.node_id == node_id:
            self.mark_unknown(cause, disconnected=True)

    def connection_closed(self, node_id: int) -> None:
        """The driver reports the connection to ``node_id`` closed (``checkAndGetCoordinator``)."""
        if self.coordinator is not None and self.coordinator.node_id == node_id:
            self.mark_unknown("coordinator unavailable", disconnected=True)

    # --- requests to the coordinator -----------------------------------------------------------------------------
    def send(self, api_key: int, body: Any, handler: Callable[[Any, RequestFuture], None], *,
             timeout_ms: Optional[int] = None, version: Optional[int] = None) -> RequestFuture:
        """Send to the coordinator connection; fails at once while the coordinator is unknown
        (``coordinatorNotAvailable``)."""
        if self.coordinator is None:
            return RequestFuture.failed_with(ApiException(E.COORDINATOR_NOT_AVAILABLE))
        return self._net.send(api_key, body, handler, self.coordinator.node_id, True, timeout_ms, version)


__all__ = ["CoordinatorDiscovery"]
