"""The consumer's side of Kafka's classic group protocol, sans-IO: the facade a driver talks to.

:class:`ConsumerCoordinator` is one consumer group member: what Kafka's ``KafkaConsumer`` asks of its
``ConsumerCoordinator`` (``poll``, ``commitSync`` / ``commitAsync``, ``subscribe``, ``close``) plus the network
and time that Kafka's ``ConsumerNetworkClient`` and ``HeartbeatThread`` bring, turned into calls a driver makes.
It wires the objects that own the state, Kafka's own seams, and runs only what spans them (the order of one
``poll``, ``close()``, the remembered poll deadline):

* ``consumer/_state.py`` - the member state machine: states, transition and error tables, generation
  (``AbstractCoordinator.MemberState``, ``Generation``, the response handlers' error cases);
* ``consumer/network.py`` - requests in flight, futures, timeouts, versions, the ordered outputs
  (``ConsumerNetworkClient``, ``RequestFuture``, ``NetworkClient``);
* ``consumer/discovery.py`` - the coordinator: lookup and loss (``AbstractCoordinator.lookupCoordinator``,
  ``markCoordinatorUnknown``);
* ``consumer/subscription.py`` - subscription, assignment, positions (``SubscriptionState``);
* ``consumer/commits.py`` - offset commit and fetch, auto-commit, commitSync (``ConsumerCoordinator``'s commits);
* ``consumer/membership.py`` - join/sync, the heartbeat thread, leave, rebalance callbacks
  (``AbstractCoordinator`` + ``ConsumerCoordinator``'s group management);
* ``consumer/listener.py`` - rebalance listener callbacks (``ConsumerRebalanceListenerInvoker``);
* ``consumer/heartbeat.py`` - heartbeat, session and poll timers (``Heartbeat``).

The membership is picked by ``group.protocol``: the classic protocol's (``ClassicMembership``,
``consumer/membership.py``) or KIP-848's (``ConsumerMembership``, ``consumer/consumer_membership.py``, Kafka's
``ConsumerMembershipManager`` + ``ConsumerHeartbeatRequestManager``); both share the network client, discovery,
subscription state, commits and listener invoker, and the driver interface below is the same for both.

Rules this file lives by
------------------------
* No sockets, no clocks, no threads. The driver passes the time (``now_ms``) into every call and moves bytes.
  The core never calls back into the driver: it queues *outputs* (``consumer/outputs.py``) which the driver
  drains in order with :meth:`ConsumerCoordinator.drain`.
* One plain driver interface: feed responses (:meth:`on_response`, :meth:`on_disconnect`) and time
  (:meth:`tick`, :meth:`poll`), drain outputs (:meth:`drain`), ask the next deadlines
  (:meth:`next_deadline_ms`, :meth:`next_poll_deadline_ms`, :meth:`poll_timeout_deadline_ms`). Calls return
  nothing a driver must interpret to stay correct; asking the deadlines after every call is cheap.
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
background does by :meth:`next_deadline_ms`. After a call the facade fails the requests of coordinator
connections it asked the driver to close, then lets a commitSync or close() in progress move on
(``_run_deferred``): the one funnel every entry point ends in.

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

import logging
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Iterable, Mapping, Optional

from consumer import outputs as out
from consumer._state import (HEARTBEAT_ERRORS, JOIN_GROUP_ERRORS, NO_GENERATION, REJOIN_IMMEDIATELY,
                             SYNC_GROUP_ERRORS, TRANSITIONS, Action, Generation, MemberState, Trigger)
from consumer.assignors import TopicPartition
from consumer.commits import CommitManager, SyncCommit
from consumer.config import ConsumerConfig
from consumer.discovery import CoordinatorDiscovery
from consumer.errors import IllegalStateException, KafkaException
from consumer.heartbeat import Heartbeat
from consumer.listener import RebalanceListenerInvoker
from consumer.consumer_membership import ConsumerMembership
from consumer.membership import ClassicMembership, RebalanceProtocol
from consumer.network import CLIENT_MAX_VERSIONS, DISCONNECTED, ConsumerNetworkClient, ExponentialBackoff
from consumer.subscription import SubscriptionState
from protocol.api import ApiKey
from protocol.exceptions import ProtocolError

log = logging.getLogger("kgroup.consumer")

#: KafkaConsumer.DEFAULT_CLOSE_TIMEOUT_MS
DEFAULT_CLOSE_TIMEOUT_MS = 30_000

_HEARTBEAT = int(ApiKey.HEARTBEAT)
_CONSUMER_GROUP_HEARTBEAT = int(ApiKey.CONSUMER_GROUP_HEARTBEAT)
_STALE: Any = object()  # a remembered deadline that must be computed afresh


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


class ConsumerCoordinator:
    """One consumer group member (classic or consumer protocol). See the module docstring for the driving
    rules."""

    # (the slots a heartbeat reads first: a simulation touches another member's core at every event)
    __slots__ = ("_net", "closed", "_membership", "_commits", "closing", "_poll_deadline", "_heartbeat", "_subs",
                 "_discovery", "config", "group_id", "client_id", "group_instance_id", "_close_deadline", "_close_commit", "_close_leave", "_close_left")

    def __init__(self, config: ConsumerConfig | Mapping[str, Any], *, listener: Any = None,
                 now_ms: int = 0, member_id: Optional[str] = None) -> None:
        if not isinstance(config, ConsumerConfig):
            config = ConsumerConfig.create(config)
        self.config = config
        self.group_id = config.group_id
        self.client_id = config.effective_client_id
        self.group_instance_id = config.group_instance_id
        net = self._net = ConsumerNetworkClient(request_timeout_ms=config.request_timeout_ms, now_ms=now_ms)
        heartbeat = self._heartbeat = Heartbeat(
            session_timeout_ms=config.session_timeout_ms, heartbeat_interval_ms=config.heartbeat_interval_ms,
            max_poll_interval_ms=config.rebalance_timeout_ms, retry_backoff_ms=config.retry_backoff_ms,
            now_ms=now_ms)
        retry_backoff = ExponentialBackoff(config.retry_backoff_ms, config.retry_backoff_max_ms)
        subs = self._subs = SubscriptionState()
        discovery = self._discovery = CoordinatorDiscovery(net, heartbeat, group_id=config.group_id,
                                                           retry_backoff=retry_backoff)
        commits = self._commits = CommitManager(config, net, discovery, subs, retry_backoff=retry_backoff,
                                                now_ms=now_ms)
        listeners = RebalanceListenerInvoker(net, listener)
        if config.group_protocol == "consumer":
            # KIP-848: ``member_id`` (default: a random Uuid, as Kafka's) lets a simulator keep runs replayable
            self._membership = ConsumerMembership(config, net, discovery, subs, heartbeat, commits, listeners,
                                                  self._run_deferred, member_id=member_id)
        else:
            self._membership = ClassicMembership(config, net, discovery, subs, heartbeat, commits, listeners,
                                                 self._run_deferred)
        commits.membership = self._membership
        # next_poll_deadline_ms's answer, computed when asked and forgotten (_STALE) after every call that may
        # change it: drivers ask after every call, and most calls are a heartbeat, which does not change it
        self._poll_deadline: Any = _STALE
        self.closing = False
        self.closed = False
        self._close_deadline = 0
        self._close_commit: Optional[SyncCommit] = None
        self._close_leave = None
        self._close_left = False

    # ------------------------------------------------------------------------------------------------
    # Driver API: inputs
    # ------------------------------------------------------------------------------------------------
    def set_api_versions(self, versions: Any) -> None:
        """The broker's ApiVersions answer: an ``ApiVersionsResponse`` or ``{api_key: (min, max)}``."""
        self._net.set_api_versions(versions)
        self._poll_deadline = _STALE

    def set_metadata(self, partitions_per_topic: Mapping[str, int],
                     topic_ids: Optional[Mapping[str, Any]] = None) -> None:
        """The driver's view of the cluster (topic -> partition count; ``topic_ids``: topic -> id, Metadata
        v10+). The classic leader assigns from it and, like Kafka's leader, rejoins when the partition count of a
        group-subscribed topic changes; a consumer-protocol member resolves its assignment's topic ids with it."""
        self._subs.set_metadata(partitions_per_topic, topic_ids)
        self._poll_deadline = _STALE

    def set_log_offsets(self, *, start: Optional[Mapping] = None, end: Optional[Mapping] = None) -> None:
        """Log start / end offsets used by ``auto.offset.reset`` (earliest / latest); missing means 0."""
        self._subs.set_log_offsets(start, end)
        self._poll_deadline = _STALE

    def subscribe(self, topics: Iterable[str], now_ms: Optional[int] = None) -> None:
        """KafkaConsumer.subscribe(topics): a changed subscription makes the member rejoin on its next poll
        (``joinedSubscription`` differs)."""
        topics = frozenset(topics)
        if now_ms is not None:
            self._net.now = now_ms
        if not topics:
            self.unsubscribe(self._net.now)
            return
        if self.closing or self.closed:
            raise IllegalStateException("This consumer has already been closed.")
        self._subs.subscription = topics
        self._poll_deadline = _STALE

    def unsubscribe(self, now_ms: int) -> None:
        """KafkaConsumer.unsubscribe: onLeavePrepare callbacks, LeaveGroup (dynamic members), no subscription."""
        self._net.now = now_ms
        subs, membership = self._subs, self._membership
        try:
            if subs.subscription:
                membership.on_leave_prepare()
                membership.maybe_leave_group("the consumer unsubscribed from all topics")
            subs.subscription = frozenset()
            membership.joined_subscription = None
            subs.group_subscription = frozenset()
            subs.assign_from_subscribed(())
            self._run_deferred()
        finally:
            self._poll_deadline = _STALE

    def seek(self, tp, offset: int) -> None:
        """Set the next offset to consume of an assigned partition (KafkaConsumer.seek)."""
        self._subs.seek(tp, offset)
        self._poll_deadline = _STALE

    def advance(self, tp, records: int = 1) -> None:
        """The application processed ``records`` more records of ``tp`` (its position moves on)."""
        self._subs.advance(tp, records)
        self._poll_deadline = _STALE

    def request_rejoin(self, reason: str) -> None:
        """Ask for a rebalance: the member rejoins at its next poll (AbstractCoordinator.requestRejoin; what
        ``KafkaConsumer.enforceRebalance`` does)."""
        self._membership.request_rejoin(reason)
        self._poll_deadline = _STALE

    # --- application poll ---------------------------------------------------------------------------
    def poll(self, now_ms: int) -> PollResult:
        """The application polled (``KafkaConsumer.poll`` -> ``ConsumerCoordinator.poll``).

        Raises what Kafka's poll throws: fatal group errors (``ApiException`` with e.g. FENCED_INSTANCE_ID,
        GROUP_AUTHORIZATION_FAILED, INCONSISTENT_GROUP_PROTOCOL), ``NoOffsetForPartitionException``, ...
        """
        self._net.now = now_ms
        if self.closing or self.closed:
            raise IllegalStateException("This consumer has already been closed.")
        commits = self._commits
        try:
            self._net.expire(now_ms)
            try:
                commits.raise_pending()
                if self._coordinator_poll(now_ms):
                    commits.update_fetch_positions(now_ms)
                self._membership.heartbeat_thread(now_ms)
                commits.service_sync_commits(now_ms)
            finally:
                self._run_deferred()
            commits.raise_pending()
        finally:
            self._poll_deadline = _STALE
        subs = self._subs
        return PollResult(fetchable=subs.fetchable(), positions=dict(subs.positions), state=self._membership.state,
                          rebalancing=self._membership.rebalance_in_progress())

    def _coordinator_poll(self, now_ms: int) -> bool:
        """ConsumerCoordinator.poll: the group (join if needed), then the auto-commit."""
        self._commits.raise_if_fenced()
        if self._subs.subscription and not self._membership.poll(now_ms):
            return False
        self._commits.maybe_auto_commit_async(now_ms)
        return True

    # --- background ------------------------------------------------------------------------------------
    def tick(self, now_ms: int) -> None:
        """Time passed without an application poll: the heartbeat thread, request timeouts, commitSync retries,
        close(). Safe to call at any time; needed at :meth:`next_deadline_ms`."""
        net = self._net
        net.now = now_ms
        if self.closed:
            return
        try:
            # (the guards repeat each step's own early return: a tick per heartbeat makes the calls add up)
            stale = False
            if net.inflight and net.expire(now_ms):
                stale = True
            if self._membership.heartbeat_thread(now_ms):
                stale = True
            if net.waiting or self.closing:
                self._run_blocked_calls(now_ms)
                stale = True
            if net.deferred:
                self._run_deferred()
                stale = True
        except BaseException:
            self._poll_deadline = _STALE
            raise
        if stale:  # (a tick that at most sent a heartbeat changes nothing an application poll waits for)
            self._poll_deadline = _STALE

    # --- network ----------------------------------------------------------------------------------------
    def on_response(self, handle: int, response: Any, now_ms: int) -> None:
        """The response (a decoded ``*Response`` object) to request ``handle``, or a failure: pass
        :data:`DISCONNECTED` (or any ``KafkaException``) if the connection broke or the request timed out.
        Responses to requests the core no longer waits for are ignored."""
        net = self._net
        net.now = now_ms
        inflight = net.inflight.pop(handle, None)
        if inflight is None:
            return
        stale = True
        try:
            if isinstance(response, BaseException):
                net.fail(inflight, response)
            else:
                api_key = inflight.api_key
                if api_key == _CONSUMER_GROUP_HEARTBEAT:
                    stable = self._membership.is_stable()
                try:
                    inflight.handler(response, inflight.future)
                except (KafkaException, ProtocolError) as exc:
                    if not inflight.future.done:
                        inflight.future.fail(exc)
                if api_key == _CONSUMER_GROUP_HEARTBEAT:
                    # a STABLE member's successful heartbeat without an assignment only moves its epoch and its
                    # heartbeat timer: nothing an application poll waits for
                    stale = not (stable and response.error_code == 0 and response.assignment is None
                                 and response.member_epoch >= 0 and self._membership.is_stable())
                else:
                    # a successful heartbeat only restarts the session timer (HeartbeatResponseHandler)
                    stale = api_key != _HEARTBEAT or response.error_code != 0
            if net.waiting or self.closing:
                self._run_blocked_calls(now_ms)
                stale = True
        finally:
            if net.deferred:
                self._run_deferred()
                stale = True
            if stale:
                self._poll_deadline = _STALE

    def on_disconnect(self, node_id: int, now_ms: int) -> None:
        """The connection to broker ``node_id`` closed: its in-flight requests fail; if it was the coordinator,
        the coordinator is marked unknown (``checkAndGetCoordinator`` / ``DisconnectException``)."""
        self._net.now = now_ms
        try:
            self._net.fail_node(node_id)
            self._discovery.connection_closed(node_id)
            self._run_blocked_calls(now_ms)
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
        self._net.now = now_ms
        if self.closing or self.closed:
            raise IllegalStateException("This consumer has already been closed.")
        offsets = self._subs.all_consumed() if offsets is None else {TopicPartition(*tp): int(o)
                                                                     for tp, o in offsets.items()}
        commits = self._commits
        commit_id = commits.next_commit_id()
        try:
            commits.raise_if_fenced()
            if sync:
                commits.start_sync_commit(commit_id, offsets, now_ms + self.config.default_api_timeout_ms, now_ms)
            else:
                commits.commit_async(offsets, commit_id)
        finally:
            self._run_deferred()
            self._poll_deadline = _STALE
        return commit_id

    # --- close ----------------------------------------------------------------------------------------------
    def close(self, now_ms: int, timeout_ms: int = DEFAULT_CLOSE_TIMEOUT_MS) -> None:
        """KafkaConsumer.close: a synchronous auto-commit (if enabled), then onLeavePrepare callbacks and, for a
        dynamic member, LeaveGroup (``internal.leave.group.on.close``); a static member only stops
        heartbeating. Finished when :class:`~consumer.outputs.Closed` is output (``closed`` is True)."""
        self._net.now = now_ms
        if self.closing or self.closed:
            return
        self.closing = True
        self._membership.heartbeat_closed = True
        self._close_deadline = now_ms + max(0, timeout_ms)
        try:
            if self.config.enable_auto_commit and self._subs.subscription:
                offsets = self._subs.all_consumed()
                if offsets:
                    commits = self._commits
                    self._close_commit = commits.start_sync_commit(commits.next_commit_id(), offsets,
                                                                   self._close_deadline, now_ms)
            self._advance_close(now_ms)
        finally:
            self._run_deferred()
            self._poll_deadline = _STALE

    def _advance_close(self, now_ms: int) -> None:
        """ConsumerCoordinator.close -> AbstractCoordinator.close, one step: the commit, then leave, then done."""
        if not self.closing or self.closed:
            return
        commits = self._commits
        op = self._close_commit
        if op is not None:
            if op in commits.sync_commits and now_ms < self._close_deadline:
                return
            self._close_commit = None
            if op in commits.sync_commits:
                commits.finish_sync_commit(op, KafkaException("close timed out before the offset commit completed"))
        if not self._close_left:
            self._close_left = True
            if self.config.internal_leave_group_on_close:
                membership = self._membership
                try:
                    membership.on_leave_prepare()
                except KafkaException as exc:
                    # Kafka's close() would propagate this and skip the LeaveGroup; a driver-facing close must
                    # finish, so the error is logged and the member still leaves.
                    log.error("rebalance listener failed while closing: %r", exc)
                self._close_leave = membership.maybe_leave_group("the consumer is being closed")
        leave = self._close_leave
        if leave is not None and not leave.done and now_ms < self._close_deadline:
            return
        self.closed = True
        self.closing = False
        self._net.fail_all("consumer closed")
        commits.drop_sync_commits()
        self._net.emit(out.Closed())

    def _run_deferred(self) -> None:
        """Fail the requests of a coordinator connection we asked the driver to close (Kafka:
        ``disconnectAsync`` then ``DisconnectException`` for pending requests on the next network poll), and let
        a commitSync or close() waiting on them move on."""
        net = self._net
        while net.deferred:
            net.fail_deferred()
            self._run_blocked_calls(net.now)

    def _run_blocked_calls(self, now_ms: int) -> None:
        """Let the calls Kafka blocks on the network (``client.poll(future, timer)``) move on after a response,
        a disconnect or time: commitSyncs in progress, then close()."""
        self._commits.service_sync_commits(now_ms)
        self._advance_close(now_ms)

    # ------------------------------------------------------------------------------------------------
    # Driver API: outputs and deadlines
    # ------------------------------------------------------------------------------------------------
    def drain(self) -> list:
        """All outputs queued since the last drain, in the order they happened."""
        net = self._net
        items = net.outputs
        if not items:
            return []
        net.outputs = ()
        return items

    def next_deadline_ms(self) -> Optional[int]:
        """The earliest time at which :meth:`tick` has work (None: nothing scheduled)."""
        if self.closed:
            return None
        net = self._net
        d: Optional[int] = None
        for f in net.inflight.values():  # request timeouts (NetworkClient.handleTimedOutRequests)
            if d is None or f.deadline_ms < d:
                d = f.deadline_ms
        t = self._membership.next_deadline_ms()
        if t is not None and (d is None or t < d):
            d = t
        if net.waiting:
            t = self._commits.next_deadline_ms()
            if t is not None and (d is None or t < d):
                d = t
        if self.closing and (d is None or self._close_deadline < d):
            d = self._close_deadline
        return d

    def next_poll_deadline_ms(self) -> Optional[int]:
        """The earliest time at which an application poll has work of its own (a join retry after a backoff,
        coordinator lookup, the next auto-commit); Kafka's ``timeToNextPoll`` plus the join loop's sleeps."""
        d = self._poll_deadline
        if d is _STALE:
            d = self._poll_deadline = self._next_poll_deadline()
        return d

    def _next_poll_deadline(self) -> Optional[int]:
        if self.closed or self.closing or not self._subs.subscription:
            return None
        discovery = self._discovery
        if discovery.coordinator is None:
            # while a FindCoordinator is in flight its response will wake the driver
            return discovery.next_lookup_ms()
        if self._membership.rejoin_needed_or_pending():
            return self._membership.next_join_ms()
        return self._commits.next_poll_deadline_ms()

    def poll_timeout_deadline_ms(self) -> int:
        """When the poll timer expires: ``max.poll.interval.ms`` after the application's last poll (or the last
        JoinGroup response), the moment ``Heartbeat.pollTimeoutExpired`` turns true and a joined member leaves the
        group. A driver that models an application blocked in ``poll`` uses it to poll again in time."""
        return self._heartbeat.poll_deadline_ms

    # ------------------------------------------------------------------------------------------------
    # Queries (read-only views of the parts)
    # ------------------------------------------------------------------------------------------------
    def api_version(self, api_key: int) -> int:
        """The highest version of ``api_key`` both this client and the broker support."""
        return self._net.api_version(api_key)

    def metadata_topics(self) -> tuple[str, ...]:
        """Topics whose metadata this member needs (SubscriptionState.metadataTopics): its subscription, plus
        every member's topics while it is the leader."""
        return self._subs.metadata_topics()

    def all_consumed(self) -> dict:
        """SubscriptionState.allConsumed: the position of every assigned partition that has one."""
        return self._subs.all_consumed()

    def coordinator_unknown(self) -> bool:
        return self._discovery.coordinator is None

    def rebalance_in_progress(self) -> bool:
        return self._membership.rebalance_in_progress()

    def generation_if_stable(self) -> Optional[Generation]:
        return self._membership.generation_if_stable()

    @property
    def in_flight(self) -> dict[int, int]:
        """handle -> api key of every request awaiting a response."""
        return {h: f.api_key for h, f in self._net.inflight.items()}

    # Read-only views of the parts' state, for drivers, tests and the simulator's checks (a property each,
    # read through C-level attrgetters). Writes go through the methods above.
    coordinator = property(attrgetter("_discovery.coordinator"), doc="The coordinator node (None: unknown).")
    state = property(attrgetter("_membership.state"), doc="MemberState.")
    generation = property(attrgetter("_membership.generation"), doc="Generation (id, member id, protocol).")
    member_id = property(attrgetter("_membership.generation.member_id"))
    rejoin_needed = property(attrgetter("_membership.rejoin_needed"))
    rejoin_reason = property(attrgetter("_membership.rejoin_reason"))
    is_leader = property(attrgetter("_membership.is_leader"))
    protocol = property(attrgetter("_membership.protocol"),
                        doc="The RebalanceProtocol (EAGER, COOPERATIVE); None under group.protocol=consumer.")
    group_protocol = property(attrgetter("config.group_protocol"), doc="classic or consumer (KIP-848).")
    assignors = property(attrgetter("_membership.assignors"))
    joined_subscription = property(attrgetter("_membership.joined_subscription"))
    last_rebalance_start_ms = property(attrgetter("_membership.last_rebalance_start_ms"))
    last_rebalance_end_ms = property(attrgetter("_membership.last_rebalance_end_ms"))
    subscription = property(attrgetter("_subs.subscription"))
    group_subscription = property(attrgetter("_subs.group_subscription"))
    assignment = property(attrgetter("_subs.assignment"), doc="Assigned partitions, sorted.")
    positions = property(attrgetter("_subs.positions"), doc="Partition -> next offset to consume.")
    pending_revocation = property(attrgetter("_subs.pending_revocation"))


__all__ = ["ConsumerCoordinator", "PollResult", "DEFAULT_CLOSE_TIMEOUT_MS",
           # the parts' names, importable from here as before the split
           "MemberState", "Trigger", "TRANSITIONS", "Action", "JOIN_GROUP_ERRORS", "SYNC_GROUP_ERRORS",
           "HEARTBEAT_ERRORS", "REJOIN_IMMEDIATELY", "RebalanceProtocol", "Generation", "NO_GENERATION",
           "DISCONNECTED", "CLIENT_MAX_VERSIONS", "ExponentialBackoff"]
