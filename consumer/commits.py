"""Offset commits and committed-offset fetches of a consumer, sans-IO: the commit half of Kafka's
``ConsumerCoordinator`` (``commitOffsetsAsync``, ``commitOffsetsSync``, ``maybeAutoCommitOffsetsAsync``,
``OffsetCommitResponseHandler``, ``fetchCommittedOffsets`` / ``OffsetFetchResponseHandler``) plus
``KafkaConsumer``'s position initialization (``auto.offset.reset``). KIP-848's consumer does the same work in
``CommitRequestManager``.

Theory of operation
-------------------
* **commitAsync** (:meth:`CommitManager.commit_async`): one attempt, after a coordinator lookup if the
  coordinator is unknown; a retriable failure is reported as ``RetriableCommitFailedException``. The outcome is
  an :class:`~consumer.outputs.OffsetCommitCompleted` output.
* **commitSync** (:meth:`CommitManager.start_sync_commit`): Kafka blocks, retrying retriable failures with
  backoff until ``default.api.timeout.ms``; here it is a small state machine (:class:`SyncCommit`) that
  :meth:`CommitManager.service_sync_commits` moves on whenever time passes or a response arrives.
* **Auto-commit**: every ``auto.commit.interval.ms`` during an application poll, and before a rebalance
  (``onJoinPrepare``, asked by the membership), the consumed positions are committed asynchronously.
* **Generation**: a member of an active group commits with its generation and member id, and only while STABLE
  (otherwise ``RebalanceInProgressException`` or ``CommitFailedException`` without a request); a consumer
  without a subscription commits with generation -1 (Kafka's manual assignment). The response handler resets
  the membership or asks it to rejoin as Kafka's ``OffsetCommitResponseHandler`` does.
* **Positions**: when partitions are assigned without a position, the next poll fetches their committed
  offsets (OffsetFetch, ``require_stable``) and sets each position to the committed offset, or applies
  ``auto.offset.reset``; retriable failures are retried with backoff, others are raised by the next poll.

It works with any membership that answers ``generation_if_stable()``, ``rebalance_in_progress()``,
``generation``, ``state`` and can ``request_rejoin`` / ``reset_state_on_response_error``: the classic one, and
KIP-848's (``uses_member_epoch``), whose commits carry the member id and epoch (OffsetCommit v9+; OffsetFetch v9+
while the member has an epoch) and whose commit errors never change the membership (UNKNOWN_MEMBER_ID is a
``CommitFailedException``, STALE_MEMBER_EPOCH fails the commit; ``CommitRequestManager``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from consumer import outputs as out
from consumer._state import NO_GENERATION, Generation, MemberState
from consumer.assignors import TopicPartition
from consumer.config import ConsumerConfig
from consumer.discovery import CoordinatorDiscovery
from consumer.errors import (ApiException, CommitFailedException, FencedInstanceIdException, KafkaException,
                             NoOffsetForPartitionException, RebalanceInProgressException,
                             RetriableCommitFailedException, UnsupportedVersionException, exception_for)
from consumer.network import ConsumerNetworkClient, ExponentialBackoff, RequestFuture
from consumer.subscription import SubscriptionState, sorted_tps
from protocol.api import ApiKey
from protocol.errors import ErrorCode
from protocol.messages import OffsetCommitRequest, OffsetFetchRequest

E = ErrorCode


@dataclass
class SyncCommit:
    """A commitSync in progress: retried on retriable errors until it succeeds or its deadline passes."""

    commit_id: int
    offsets: dict
    deadline_ms: int
    attempts: int = 0
    retry_at_ms: int = 0
    future: Optional[RequestFuture] = None
    result: Optional[RequestFuture] = field(default_factory=RequestFuture)


@dataclass
class _PendingFetch:
    partitions: frozenset
    generation: Optional[Generation]
    future: RequestFuture


class CommitManager:
    __slots__ = ("sync_commits", "pending_exception", "_next_commit_id", "_auto_commit", "_next_auto_commit_ms",
                 "_async_commit_fenced", "_pending_fetch", "_fetch_attempts", "_fetch_backoff_until", "_net",
                 "_discovery", "_subs", "membership", "_retry_backoff", "_group_id", "_group_instance_id",
                 "_auto_commit_interval_ms", "_retry_backoff_ms", "_default_api_timeout_ms", "_auto_offset_reset")

    def __init__(self, config: ConsumerConfig, net: ConsumerNetworkClient, discovery: CoordinatorDiscovery,
                 subscriptions: SubscriptionState, *, retry_backoff: ExponentialBackoff, now_ms: int) -> None:
        # commitSyncs in progress; () when there are none (read on every tick: no list of its own to touch then)
        self.sync_commits: list[SyncCommit] | tuple[()] = ()
        #: an error of the committed-offset fetch, raised by the next poll (NoOffsetForPartitionException, ...)
        self.pending_exception: Optional[BaseException] = None
        self._next_commit_id = 1
        self._auto_commit = config.enable_auto_commit
        self._next_auto_commit_ms = now_ms + config.auto_commit_interval_ms
        self._async_commit_fenced = False
        self._pending_fetch: Optional[_PendingFetch] = None
        self._fetch_attempts = 0
        self._fetch_backoff_until = 0
        self._net = net
        self._discovery = discovery
        self._subs = subscriptions
        self.membership: Any = None  # the member the commits speak for (set by the facade)
        self._retry_backoff = retry_backoff
        self._group_id = config.group_id
        self._group_instance_id = config.group_instance_id
        self._auto_commit_interval_ms = config.auto_commit_interval_ms
        self._retry_backoff_ms = config.retry_backoff_ms
        self._default_api_timeout_ms = config.default_api_timeout_ms
        self._auto_offset_reset = config.auto_offset_reset

    # --- deadlines ---------------------------------------------------------------------------------------------
    def next_deadline_ms(self) -> Optional[int]:
        """When a commitSync must be retried or gives up (None: none in progress)."""
        discovery = self._discovery
        candidates = []
        for op in self.sync_commits:
            if op.future is None:
                if discovery.coordinator is not None:
                    candidates.append(op.retry_at_ms)
                elif not discovery.lookup_in_flight():
                    candidates.append(max(op.retry_at_ms, discovery.find_backoff_until))
            candidates.append(op.deadline_ms)
        return min(candidates) if candidates else None

    def next_poll_deadline_ms(self) -> Optional[int]:
        """When an application poll has commit work: the next auto-commit, or fetching positions."""
        d = self._next_auto_commit_ms if self._auto_commit else None
        # Positions are fetched only once the join is complete (KafkaConsumer.updateAssignmentMetadataIfNeeded
        # returns early while coordinator.poll cannot finish the rebalance); the membership answers first.
        if self._pending_fetch is None and not self._subs.has_all_positions() and (
                d is None or self._fetch_backoff_until < d):
            return self._fetch_backoff_until
        return d

    # --- commit -------------------------------------------------------------------------------------------------
    def next_commit_id(self) -> int:
        commit_id = self._next_commit_id
        self._next_commit_id += 1
        return commit_id

    def raise_if_fenced(self) -> None:
        """ConsumerCoordinator.invokeCompletedOffsetCommitCallbacks: an async commit was fenced."""
        if self._async_commit_fenced:
            raise FencedInstanceIdException(
                f"Get fenced exception for group.instance.id {self._group_instance_id}, current member.id is "
                f"{self.membership.generation.member_id}")

    def raise_pending(self) -> None:
        exc = self.pending_exception
        if exc is not None:
            self.pending_exception = None
            raise exc

    def start_sync_commit(self, commit_id: int, offsets: dict, deadline_ms: int, now_ms: int) -> SyncCommit:
        """commitSync: commit ``offsets``, retrying retriable failures until ``deadline_ms``."""
        op = SyncCommit(commit_id, offsets, deadline_ms=deadline_ms, retry_at_ms=now_ms)
        emit = self._net.emit
        op.result.add_listener(lambda _v, op=op: emit(out.OffsetCommitCompleted(op.commit_id, op.offsets)),
                               lambda e, op=op: emit(out.OffsetCommitCompleted(op.commit_id, op.offsets, e)))
        if self.sync_commits:
            self.sync_commits.append(op)
        else:
            self.sync_commits = [op]
        self._net.waiting += 1
        self.service_sync_commits(now_ms)
        return op

    def maybe_auto_commit_async(self, now_ms: int) -> None:
        """ConsumerCoordinator.maybeAutoCommitOffsetsAsync: every auto.commit.interval.ms."""
        if self._auto_commit and now_ms >= self._next_auto_commit_ms:
            self._next_auto_commit_ms = now_ms + self._auto_commit_interval_ms
            self.auto_commit_async(now_ms)

    def restart_auto_commit_timer(self, now_ms: int) -> None:
        """A new assignment: the next auto-commit is a whole interval away (ConsumerCoordinator.onJoinComplete)."""
        if self._auto_commit:
            self._next_auto_commit_ms = now_ms + self._auto_commit_interval_ms

    def auto_commit_async(self, now_ms: int) -> RequestFuture:
        """Commit everything consumed, asynchronously; a retriable failure brings the next attempt forward to
        retry.backoff.ms (ConsumerCoordinator.autoCommitOffsetsAsync)."""
        offsets = self._subs.all_consumed()
        future = self.commit_async(offsets, None, auto=True)

        def on_failure(exc: BaseException) -> None:
            if isinstance(exc, RetriableCommitFailedException):
                self._next_auto_commit_ms = self._net.now + self._retry_backoff_ms
        future.add_listener(None, on_failure)
        return future

    def commit_async(self, offsets: dict, commit_id: Optional[int], auto: bool = False) -> RequestFuture:
        """commitOffsetsAsync: one attempt (after a coordinator lookup if needed); the returned future fails with
        RetriableCommitFailedException for retriable errors."""
        result = RequestFuture()
        report_id = commit_id if commit_id is not None else 0
        emit = self._net.emit

        def done(_v: Any) -> None:
            emit(out.OffsetCommitCompleted(report_id, dict(offsets), None))
            result.complete()

        def failed(exc: BaseException) -> None:
            if getattr(exc, "retriable", False):
                exc = RetriableCommitFailedException(exc)
            if isinstance(exc, FencedInstanceIdException):
                self._async_commit_fenced = True
            emit(out.OffsetCommitCompleted(report_id, dict(offsets), exc))
            result.fail(exc)

        discovery = self._discovery
        if not offsets or discovery.coordinator is not None:
            self._send_offset_commit(offsets).add_listener(done, failed)
        else:
            lookup = discovery.lookup(self._net.now)
            if lookup is None:
                failed(ApiException(E.COORDINATOR_NOT_AVAILABLE))
            else:
                lookup.add_listener(lambda _n: self._send_offset_commit(offsets).add_listener(done, failed), failed)
        return result

    def service_sync_commits(self, now_ms: int) -> None:
        """commitOffsetsSync as a state machine: resend after retriable failures until the deadline."""
        if not self.sync_commits:
            return
        discovery = self._discovery
        for op in list(self.sync_commits):
            if op.future is not None and not op.future.done:
                if now_ms >= op.deadline_ms:  # commitSync returns when its timer expires, even mid-request
                    op.future = None
                    self.finish_sync_commit(op, KafkaException(
                        f"Timeout of {self._default_api_timeout_ms}ms expired before successfully "
                        f"committing offsets"))
                continue
            if op.future is not None:
                fut, op.future = op.future, None
                if fut.succeeded:
                    self.finish_sync_commit(op, None)
                    continue
                if not fut.retriable:
                    exc = fut.exception
                    if getattr(exc, "error", None) == E.STALE_MEMBER_EPOCH:  # commitSyncExceptionForError
                        exc = CommitFailedException(f"OffsetCommit failed with stale member epoch. "
                                                    f"{E.STALE_MEMBER_EPOCH.message}")
                    self.finish_sync_commit(op, exc)
                    continue
                op.retry_at_ms = now_ms + self._retry_backoff.backoff(op.attempts)
                op.attempts += 1
            if now_ms >= op.deadline_ms:
                self.finish_sync_commit(op, KafkaException(
                    f"Timeout of {self._default_api_timeout_ms}ms expired before successfully committing "
                    f"offsets {sorted((str(tp), o) for tp, o in op.offsets.items())}"))
                continue
            if now_ms < op.retry_at_ms:
                continue
            if discovery.coordinator is None:
                discovery.lookup(now_ms)
                continue
            op.future = self._send_offset_commit(op.offsets)
            op.future.add_listener(lambda _v: None, lambda _e: None)

    def drop_sync_commits(self) -> None:
        """Forget every commitSync in progress (the consumer closed); their outcomes are not reported."""
        self.sync_commits = ()
        self._net.waiting = 0

    def finish_sync_commit(self, op: SyncCommit, exc: Optional[BaseException]) -> None:
        if op in self.sync_commits:
            self.sync_commits.remove(op)
            self._net.waiting -= 1
            if not self.sync_commits:
                self.sync_commits = ()
        if exc is None:
            op.result.complete()
        else:
            op.result.fail(exc)

    def _send_offset_commit(self, offsets: dict) -> RequestFuture:
        if not offsets:
            return RequestFuture.succeeded_with()
        discovery = self._discovery
        if discovery.coordinator is None:
            return RequestFuture.failed_with(ApiException(E.COORDINATOR_NOT_AVAILABLE))
        for tp, offset in offsets.items():
            if offset < 0:
                return RequestFuture.failed_with(KafkaException(f"Invalid offset: {offset}"))
        member = self.membership
        if self._subs.subscription:
            gen = member.generation_if_stable()
            instance = self._group_instance_id
            if gen is None:
                if member.rebalance_in_progress():
                    return RequestFuture.failed_with(RebalanceInProgressException(
                        "Offset commit cannot be completed since the consumer is undergoing a rebalance for auto "
                        "partition assignment. You can try completing the rebalance by calling poll() and then "
                        "retry the operation."))
                return RequestFuture.failed_with(CommitFailedException(
                    "Offset commit cannot be completed since the consumer is not part of an active group for auto "
                    "partition assignment; it is likely that the consumer was kicked out of the group."))
        else:
            gen, instance = NO_GENERATION, None
        topics: dict[str, list] = {}
        for tp in sorted_tps(offsets):
            topics.setdefault(tp.topic, []).append(OffsetCommitRequest.Topic.Partition(
                partition_index=tp.partition, committed_offset=offsets[tp], committed_leader_epoch=-1,
                committed_metadata=""))
        body = OffsetCommitRequest(group_id=self._group_id, generation_id_or_member_epoch=gen.generation_id,
                                   member_id=gen.member_id, group_instance_id=instance,
                                   topics=[OffsetCommitRequest.Topic(name=t, partitions=ps)
                                           for t, ps in topics.items()])
        return discovery.send(ApiKey.OFFSET_COMMIT, body, lambda r, f: self._handle_offset_commit(r, f, gen))

    def _handle_offset_commit(self, response: Any, future: RequestFuture, sent: Generation) -> None:
        """OffsetCommitResponseHandler: the first failed partition decides."""
        member = self.membership
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
                    self._discovery.mark_unknown(f"error response {error.name}")
                    future.fail(exception_for(error))
                    return
                elif error in (E.UNKNOWN_MEMBER_ID, E.STALE_MEMBER_EPOCH) and getattr(member, "uses_member_epoch",
                                                                                     False):
                    # KIP-848 (CommitRequestManager.OffsetCommitRequestState.onResponse): only heartbeats change
                    # the membership; a sync commit turns STALE_MEMBER_EPOCH into CommitFailedException
                    # (commitSyncExceptionForError), the commit before a revocation retries it with the new epoch
                    if error == E.UNKNOWN_MEMBER_ID:
                        future.fail(CommitFailedException(f"OffsetCommit failed with unknown member ID. "
                                                          f"{error.message}"))
                    else:
                        future.fail(ApiException(error))
                    return
                elif error == E.FENCED_INSTANCE_ID:
                    if member.generation == sent:
                        future.fail(exception_for(error))
                    elif member.state == MemberState.PREPARING_REBALANCE:
                        future.fail(RebalanceInProgressException(
                            "Offset commit cannot be completed since the consumer member's old generation is fenced "
                            "by its group instance id"))
                    else:
                        future.fail(CommitFailedException())
                    return
                elif error == E.REBALANCE_IN_PROGRESS:
                    member.request_rejoin("offset commit failed since group is already rebalancing")
                    future.fail(RebalanceInProgressException(
                        "Offset commit cannot be completed since the consumer group is executing a rebalance at "
                        "the moment. You can try completing the rebalance by calling poll() and then retry "
                        "commit again"))
                    return
                elif error in (E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION):
                    if member.generation != sent and member.state == MemberState.PREPARING_REBALANCE:
                        future.fail(RebalanceInProgressException(
                            "Offset commit cannot be completed since the consumer member's generation is already "
                            "stale, meaning it has already participated another rebalance and got a new "
                            "generation."))
                    else:
                        member.reset_state_on_response_error("OFFSET_COMMIT", error, error != E.ILLEGAL_GENERATION)
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

    # --- committed offsets -> positions (fetchCommittedOffsets, auto.offset.reset) -------------------------------
    def update_fetch_positions(self, now_ms: int) -> None:
        """Fetch the committed offsets of assigned partitions without a position (one OffsetFetch at a time)."""
        initializing = self._subs.missing_positions()
        if not initializing:
            return
        gen = self.membership.generation_if_stable()
        pending = self._pending_fetch
        if pending is not None and (pending.partitions != initializing or pending.generation != gen):
            self._pending_fetch = pending = None  # a different request: forget the old one
        if pending is not None or now_ms < self._fetch_backoff_until:
            return
        discovery = self._discovery
        if discovery.coordinator is None:
            discovery.ensure_ready(now_ms)
            if discovery.coordinator is None:
                return
        future = self._send_offset_fetch(initializing)
        fetch = _PendingFetch(initializing, gen, future)
        self._pending_fetch = fetch
        future.add_listener(lambda offsets: self._on_offsets_fetched(fetch, offsets),
                            lambda exc: self._on_offset_fetch_failed(fetch, exc))

    def _send_offset_fetch(self, partitions: frozenset) -> RequestFuture:
        try:
            version = self._net.api_version(ApiKey.OFFSET_FETCH)
        except UnsupportedVersionException as exc:
            return RequestFuture.failed_with(exc)
        grouped: dict[str, list[int]] = {}
        for tp in sorted_tps(partitions):
            grouped.setdefault(tp.topic, []).append(tp.partition)
        if version >= 8:
            group = OffsetFetchRequest.Group(
                group_id=self._group_id,
                topics=[OffsetFetchRequest.Group.Topic(name=t, partition_indexes=ps) for t, ps in grouped.items()])
            member = self.membership
            if version >= 9 and getattr(member, "uses_member_epoch", False) and member.member_epoch > 0:
                # KIP-848: OffsetFetchRequestState sends the member id and epoch while the member has one
                group.member_id, group.member_epoch = member.member_id, member.member_epoch
            body = OffsetFetchRequest(groups=[group], require_stable=True)
        else:
            body = OffsetFetchRequest(group_id=self._group_id, require_stable=True, topics=[
                OffsetFetchRequest.Topic(name=t, partition_indexes=ps) for t, ps in grouped.items()])
        return self._discovery.send(ApiKey.OFFSET_FETCH, body, self._handle_offset_fetch, version=version)

    _GROUP_LEVEL_FETCH_ERRORS = (E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR,
                                 E.GROUP_AUTHORIZATION_FAILED)

    def _handle_offset_fetch(self, response: Any, future: RequestFuture) -> None:
        """OffsetFetchResponseHandler (the group-level error first, then per partition)."""
        if getattr(response, "groups", None):
            group = next((g for g in response.groups if g.group_id == self._group_id), response.groups[0])
            group_error, topics = E.from_code(group.error_code), group.topics
        else:
            group_error, topics = E.from_code(getattr(response, "error_code", 0) or 0), response.topics
            if group_error == E.NONE:  # v0/v1 copy the group error into every partition
                for t in topics:
                    for p in t.partitions:
                        if E.from_code(p.error_code) in self._GROUP_LEVEL_FETCH_ERRORS:
                            group_error = E.from_code(p.error_code)
        if group_error != E.NONE:
            if group_error in (E.UNKNOWN_MEMBER_ID, E.STALE_MEMBER_EPOCH):
                # KIP-848 (OffsetFetchRequestState.onFailure): a stale epoch is retried with the latest one while
                # the member is in the group; an unknown member fails
                exc = ApiException(group_error)
                if group_error == E.STALE_MEMBER_EPOCH and getattr(self.membership, "member_epoch", 0) > 0:
                    exc.retriable = True
                future.fail(exc)
                return
            if group_error in (E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE):
                self._discovery.mark_unknown(f"error response {group_error.name}")
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

    def _on_offsets_fetched(self, fetch: _PendingFetch, offsets: Mapping) -> None:
        if self._pending_fetch is fetch:
            self._pending_fetch = None
        self._fetch_attempts = 0
        subs = self._subs
        committed, reset, undefined = {}, {}, []
        for tp in sorted_tps(fetch.partitions):
            if tp not in subs.assignment or tp in subs.positions:
                continue  # no longer assigned, or positioned meanwhile
            offset = offsets.get(tp)
            if offset is not None:
                committed[tp] = subs.positions[tp] = offset
                continue
            offset = subs.reset_position(tp, self._auto_offset_reset)
            if offset is not None:
                reset[tp] = offset
            else:
                undefined.append(tp)
        if committed or reset:
            self._net.emit(out.PositionsInitialized(committed, reset))
        if undefined:
            self.pending_exception = NoOffsetForPartitionException(undefined)

    def _on_offset_fetch_failed(self, fetch: _PendingFetch, exc: BaseException) -> None:
        if self._pending_fetch is fetch:
            self._pending_fetch = None
        if getattr(exc, "retriable", False):
            self._fetch_backoff_until = self._net.now + self._retry_backoff.backoff(self._fetch_attempts)
            self._fetch_attempts += 1
        else:
            self.pending_exception = exc


__all__ = ["CommitManager", "SyncCommit"]
