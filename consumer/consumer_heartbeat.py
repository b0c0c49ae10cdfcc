"""ConsumerGroupHeartbeat bookkeeping of a KIP-848 member (sans-IO): *when* the next heartbeat may go and *what*
it carries.

* :class:`HeartbeatRequestState` mirrors ``HeartbeatRequestState`` / ``RequestState`` of the Java client: a
  heartbeat timer whose interval the coordinator sets in every response (``HeartbeatIntervalMs``; 0 until the
  first response, so the first heartbeat goes at once), at most one request in flight, and an exponential
  backoff after a failed attempt (``retry.backoff.ms`` doubling to ``retry.backoff.max.ms``; no jitter here, for
  determinism). The timer restarts when a heartbeat is *sent*; a failure expires it, so the next one waits only
  for the backoff; a changed interval restarts it at the response.
* :class:`HeartbeatState` mirrors ``ConsumerHeartbeatRequestManager.HeartbeatState`` and its ``SentFields``:
  a JOINING member sends every field; otherwise a field is sent only when it differs from what the last request
  carried (``null`` on the wire means "unchanged"). The owned partitions are re-sent whenever the local
  assignment *or its local epoch* changed, which is how a reconciliation is acknowledged. The sent fields are
  forgotten after any failed heartbeat, so the next request is complete again.

Kafka's classes read a clock; these are told the time.
"""

from __future__ import annotations

from typing import Mapping, Optional
from uuid import UUID

from consumer.network import ExponentialBackoff
from protocol.messages import ConsumerGroupHeartbeatRequest


class LocalAssignment:
    """AbstractMembershipManager.LocalAssignment: topic id -> partitions, with a local epoch bumped whenever the
    target changes (so re-receiving the same partitions after a change is still a change to acknowledge)."""

    __slots__ = ("local_epoch", "partitions")
    NONE_EPOCH = -1

    def __init__(self, local_epoch: int, partitions: Mapping[UUID, frozenset[int]]) -> None:
        if local_epoch == self.NONE_EPOCH and partitions:
            raise ValueError("Local epoch must be set if there are partitions")
        self.local_epoch = local_epoch
        self.partitions = {t: frozenset(ps) for t, ps in partitions.items()}

    def is_none(self) -> bool:
        return self.local_epoch == self.NONE_EPOCH

    def update_with(self, assignment: Mapping[UUID, frozenset[int]]) -> Optional["LocalAssignment"]:
        """LocalAssignment.updateWith: None if nothing changed, else the assignment with the next local epoch."""
        assignment = {t: frozenset(ps) for t, ps in assignment.items()}
        if self.local_epoch != self.NONE_EPOCH and assignment == self.partitions:
            return None
        return LocalAssignment(self.local_epoch + 1, assignment)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, LocalAssignment) and other.local_epoch == self.local_epoch
                and other.partitions == self.partitions)

    def __hash__(self) -> int:
        return hash((self.local_epoch, frozenset(self.partitions.items())))

    def __repr__(self) -> str:
        parts = {str(t): sorted(ps) for t, ps in sorted(self.partitions.items(), key=lambda kv: str(kv[0]))}
        return f"LocalAssignment(local_epoch={self.local_epoch}, partitions={parts})"


LocalAssignment.NONE = LocalAssignment(LocalAssignment.NONE_EPOCH, {})  # type: ignore[attr-defined]
NO_ASSIGNMENT: LocalAssignment = LocalAssignment.NONE  # type: ignore[attr-defined]


class HeartbeatRequestState:
    """HeartbeatRequestState (+ RequestState): the heartbeat timer, the request in flight, the backoff."""

    __slots__ = ("interval_ms", "timer_deadline_ms", "in_flight", "last_sent_ms", "last_received_ms",
                 "backoff_ms", "attempts", "_backoff", "_backoff0")

    def __init__(self, *, retry_backoff_ms: int, retry_backoff_max_ms: int, now_ms: int = 0) -> None:
        self._backoff = ExponentialBackoff(retry_backoff_ms, retry_backoff_max_ms)
        self._backoff0 = self._backoff.backoff(0)  # the backoff after a success (every heartbeat response)
        self.interval_ms = 0                  # until the coordinator says otherwise
        self.timer_deadline_ms = now_ms       # the heartbeat timer (expired when now >= deadline)
        self.in_flight = False
        self.last_sent_ms = -1
        self.last_received_ms = -1
        self.backoff_ms = self._backoff.backoff(0)
        self.attempts = 0

    def reset(self) -> None:
        """RequestState.reset: no request in flight, no backoff to wait for."""
        self.in_flight = False
        self.last_sent_ms = -1
        self.last_received_ms = -1
        self.attempts = 0
        self.backoff_ms = self._backoff0

    def remaining_backoff_ms(self, now_ms: int) -> int:
        return max(0, self.backoff_ms - (now_ms - self.last_received_ms))

    def can_send(self, now_ms: int) -> bool:
        """HeartbeatRequestState.canSendRequest: the timer expired, nothing in flight, the backoff over."""
        return now_ms >= self.timer_deadline_ms and not self.in_flight and self.remaining_backoff_ms(now_ms) <= 0

    def next_send_ms(self) -> Optional[int]:
        """When :meth:`can_send` turns true (None: a request is in flight; its response comes first)."""
        if self.in_flight:
            return None
        return max(self.timer_deadline_ms, self.last_received_ms + self.backoff_ms)

    def on_send(self, now_ms: int) -> None:
        """onSendAttempt + resetTimer (AbstractHeartbeatRequestManager.makeHeartbeatRequest)."""
        self.in_flight = True
        self.last_sent_ms = now_ms
        self.timer_deadline_ms = now_ms + self.interval_ms

    def on_success(self, now_ms: int) -> None:
        self.in_flight = False
        self.last_received_ms = now_ms
        self.backoff_ms = self._backoff0
        self.attempts = 0

    def on_failure(self, now_ms: int) -> None:
        """HeartbeatRequestState.onFailedAttempt: the timer expires, the backoff grows."""
        self.timer_deadline_ms = now_ms
        self.in_flight = False
        self.last_received_ms = now_ms
        self.backoff_ms = self._backoff.backoff(self.attempts)
        self.attempts += 1

    def update_interval(self, interval_ms: int, now_ms: int) -> None:
        """updateHeartbeatIntervalMs: a new interval restarts the timer (Timer.updateAndReset)."""
        if interval_ms == self.interval_ms:
            return
        self.interval_ms = interval_ms
        self.timer_deadline_ms = now_ms + interval_ms


class HeartbeatState:
    """ConsumerHeartbeatRequestManager.HeartbeatState: builds each request, remembering the fields it sent."""

    __slots__ = ("rebalance_timeout_ms", "sent_rebalance_timeout_ms", "sent_topic_names", "sent_server_assignor",
                 "sent_local_assignment")

    def __init__(self, rebalance_timeout_ms: int) -> None:
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.reset()

    def reset(self) -> None:
        """SentFields.reset: the next request carries everything it has."""
        self.sent_rebalance_timeout_ms = -1
        self.sent_topic_names: Optional[frozenset[str]] = None
        self.sent_server_assignor: Optional[str] = None
        self.sent_local_assignment: Optional[LocalAssignment] = None

    def build(self, *, group_id: str, member_id: str, member_epoch: int, instance_id: Optional[str],
              rack_id: Optional[str], send_all_fields: bool, subscription: frozenset[str],
              server_assignor: Optional[str], local: LocalAssignment) -> ConsumerGroupHeartbeatRequest:
        """HeartbeatState.buildRequestData. ``send_all_fields`` is ``state == JOINING``."""
        body = ConsumerGroupHeartbeatRequest(group_id=group_id, member_id=member_id, member_epoch=member_epoch,
                                             instance_id=instance_id)
        if send_all_fields or self.sent_rebalance_timeout_ms != self.rebalance_timeout_ms:
            body.rebalance_timeout_ms = self.rebalance_timeout_ms
            self.sent_rebalance_timeout_ms = self.rebalance_timeout_ms
        if send_all_fields or subscription != self.sent_topic_names:
            body.subscribed_topic_names = sorted(subscription)  # (Kafka: a TreeSet's order)
            self.sent_topic_names = subscription
        # (pattern subscriptions, SubscribedTopicRegex, are not modelled: the field stays null)
        if server_assignor is not None and (send_all_fields or server_assignor != self.sent_server_assignor):
            body.server_assignor = server_assignor
            self.sent_server_assignor = server_assignor
        if send_all_fields or (local is not self.sent_local_assignment and local != self.sent_local_assignment):
            body.topic_partitions = [
                ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=t, partitions=sorted(ps))
                for t, ps in sorted(local.partitions.items(), key=lambda kv: str(kv[0]))]
            self.sent_local_assignment = local
        if send_all_fields:
            body.rack_id = rack_id
        return body


__all__ = ["LocalAssignment", "NO_ASSIGNMENT", "HeartbeatRequestState", "HeartbeatState"]
