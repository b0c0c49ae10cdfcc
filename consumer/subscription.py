"""What a consumer is subscribed to, what it is assigned and where it stands in each partition, sans-IO.

Mirrors ``org.apache.kafka.clients.consumer.internals.SubscriptionState`` (subscription, group subscription,
assigned partitions with their positions, pending revocation) plus the two inputs Kafka's consumer gets from
elsewhere and the core gets from its driver: the topic metadata the leader assigns from (``ConsumerMetadata``)
and the log start / end offsets that ``auto.offset.reset`` resets to (``ListOffsets``).

Theory of operation
-------------------
The subscription is the application's wish (``KafkaConsumer.subscribe``); the group subscription is, while the
member leads, every member's topics (the leader needs their metadata). The assignment comes from the group
protocol (``assign_from_subscribed``, Kafka's ``assignFromSubscribed``): positions of partitions kept survive,
new partitions start without one until their committed offset is fetched (or reset). ``positions`` only ever
holds assigned partitions. A partition is *fetchable* (the application may consume it) when it is assigned, has
a position and is not pending revocation (EAGER members mark everything pending revocation while the commit
before a rebalance is in flight). The data path is outside the core: the driver reports what the application
consumed with :meth:`advance` / :meth:`seek`, and :meth:`all_consumed` is what a commit of "everything consumed"
commits (``allConsumed``).

Shared by every membership type: the classic protocol's and KIP-848's both assign through here (KIP-848's
assignments name topics by id: :attr:`SubscriptionState.topic_ids` maps them, from the driver's metadata).
"""

from __future__ import annotations

import uuid
from typing import Any, Iterable, Mapping, Optional

from consumer.assignors import TopicPartition
from consumer.errors import IllegalStateException
from protocol.uuids import uuid_from_string


def tp_key(tp) -> tuple[str, int]:
    return (tp.topic, tp.partition)


def sorted_tps(tps: Iterable) -> tuple:
    return tuple(sorted(tps, key=tp_key))


class SubscriptionState:
    __slots__ = ("subscription", "group_subscription", "assignment", "positions", "pending_revocation",
                 "metadata", "topic_ids", "log_start_offsets", "log_end_offsets")

    def __init__(self) -> None:
        self.subscription: frozenset[str] = frozenset()
        self.group_subscription: frozenset[str] = frozenset()
        self.assignment: tuple = ()                  # assigned partitions, sorted
        self.positions: dict = {}                    # partition -> next offset to consume
        self.pending_revocation: set = set()
        self.metadata: dict[str, int] = {}           # topic -> partition count (the driver's metadata)
        self.topic_ids: dict[str, uuid.UUID] = {}    # topic -> topic id (Metadata v10+; KIP-848 assignments)
        self.log_start_offsets: dict = {}
        self.log_end_offsets: dict = {}

    # --- inputs from the driver ------------------------------------------------------------------------------
    def set_metadata(self, partitions_per_topic: Mapping[str, int],
                     topic_ids: Optional[Mapping[str, Any]] = None) -> None:
        self.metadata = {str(t): int(n) for t, n in partitions_per_topic.items()}
        if topic_ids is not None:  # (Kafka's Metadata.topicIds; a string is Kafka's printed form)
            self.topic_ids = {str(t): tid if isinstance(tid, uuid.UUID) else uuid_from_string(str(tid))
                              for t, tid in topic_ids.items()}

    def set_log_offsets(self, start: Optional[Mapping] = None, end: Optional[Mapping] = None) -> None:
        if start is not None:
            self.log_start_offsets = dict(start)
        if end is not None:
            self.log_end_offsets = dict(end)

    # --- subscription ------------------------------------------------------------------------------------------
    def metadata_topics(self) -> tuple[str, ...]:
        """SubscriptionState.metadataTopics: the subscription, plus every member's topics while leading."""
        return tuple(sorted(self.subscription | self.group_subscription))

    def metadata_snapshot(self) -> dict[str, int]:
        """The partition counts of the metadata topics (ConsumerCoordinator's MetadataSnapshot)."""
        return {t: self.metadata[t] for t in self.metadata_topics() if t in self.metadata}

    # --- assignment and positions ------------------------------------------------------------------------------
    def assign_from_subscribed(self, partitions: Iterable) -> None:
        """SubscriptionState.assignFromSubscribed: positions of kept partitions survive, new ones start
        uninitialized (committed offsets are fetched on the next poll)."""
        new = sorted_tps(set(partitions))
        keep = set(new)
        self.positions = {tp: off for tp, off in self.positions.items() if tp in keep}
        self.pending_revocation.clear()
        self.assignment = new

    def owned_grouped(self) -> list[tuple[str, list[int]]]:
        """The assignment as (topic, sorted partitions), topics sorted (a subscription's owned partitions)."""
        grouped: dict[str, list[int]] = {}
        for tp in self.assignment:
            grouped.setdefault(tp.topic, []).append(tp.partition)
        return [(t, sorted(ps)) for t, ps in sorted(grouped.items())]

    def seek(self, tp, offset: int) -> None:
        tp = TopicPartition(*tp)
        if tp not in self.assignment:
            raise IllegalStateException(f"No current assignment for partition {tp}")
        self.positions[tp] = int(offset)

    def advance(self, tp, records: int = 1) -> None:
        tp = TopicPartition(*tp)
        if tp not in self.positions:
            raise IllegalStateException(f"Partition {tp} has no position (not assigned or not initialized)")
        self.positions[tp] += int(records)

    def all_consumed(self) -> dict:
        """SubscriptionState.allConsumed: the position of every assigned partition that has one."""
        return {tp: self.positions[tp] for tp in self.assignment if tp in self.positions}

    def fetchable(self) -> tuple:
        """Assigned partitions with a position that are not pending revocation (what Kafka would fetch)."""
        return tuple(tp for tp in self.assignment if tp in self.positions and tp not in self.pending_revocation)

    def missing_positions(self) -> frozenset:
        """Assigned partitions without a position (SubscriptionState.initializingPartitions)."""
        return frozenset(tp for tp in self.assignment if tp not in self.positions)

    def has_all_positions(self) -> bool:
        # (positions only ever holds assigned partitions -- assign_from_subscribed, seek and the offset fetch
        # keep it so -- so "some partition lacks a position" is a length comparison)
        return len(self.positions) >= len(self.assignment)

    def reset_position(self, tp, strategy: str) -> Optional[int]:
        """auto.offset.reset for ``tp`` (SubscriptionState.resetInitializingPositions): the log start
        (earliest) or end (latest) the driver supplied, 0 if it supplied none; None for "none"."""
        if strategy == "earliest":
            offset = self.positions[tp] = int(self.log_start_offsets.get(tp, 0))
        elif strategy == "latest":
            offset = self.positions[tp] = int(self.log_end_offsets.get(tp, 0))
        else:
            return None
        return offset


__all__ = ["SubscriptionState", "sorted_tps", "tp_key"]
