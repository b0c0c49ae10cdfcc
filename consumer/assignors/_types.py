"""Value types shared by every assignor (mirrors ``ConsumerPartitionAssignor.Subscription``/``Assignment``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, NamedTuple, Optional, Protocol, Sequence, Union, runtime_checkable


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:  # Kafka's TopicPartition.toString: "topic-partition"
        return f"{self.topic}-{self.partition}"


#: Replica racks of each partition, for rack-aware range/sticky (KIP-881). Either per topic a sequence indexed
#: by partition number (``{"t0": [["a", "b"], ["b", "c"]]}``) or per partition (``{TopicPartition("t0", 0): ["a"]}``).
PartitionRacks = Union[Mapping[str, Sequence[Optional[Iterable[str]]]], Mapping[TopicPartition, Iterable[str]]]


@dataclass(frozen=True, slots=True)
class Subscription:
    """One member's JoinGroup metadata, as the leader sees it.

    ``generation_id`` < 0 means "absent" (Kafka maps -1 to ``Optional.empty()``); ``rack_id`` None or "" means
    no rack. Topics are kept in the member's order with duplicates removed.
    """

    topics: tuple[str, ...]
    user_data: Optional[bytes] = None
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation_id: int = -1
    group_instance_id: Optional[str] = None
    rack_id: Optional[str] = None

    def __post_init__(self) -> None:
        topics = self.topics
        if isinstance(topics, str):
            raise TypeError("Subscription.topics must be a sequence of topic names, not a string")
        object.__setattr__(self, "topics", tuple(dict.fromkeys(topics)))
        owned = self.owned_partitions
        if not isinstance(owned, tuple):
            owned = tuple(owned)
        object.__setattr__(self, "owned_partitions", owned)
        if self.user_data is not None and not isinstance(self.user_data, bytes):
            object.__setattr__(self, "user_data", bytes(self.user_data))


@dataclass(frozen=True, slots=True)
class Assignment:
    """The partitions one member receives (in the order the assignor produced them) plus its user data."""

    partitions: tuple[TopicPartition, ...] = ()
    user_data: Optional[bytes] = None

    def __post_init__(self) -> None:
        if not isinstance(self.partitions, tuple):
            object.__setattr__(self, "partitions", tuple(self.partitions))


@runtime_checkable
class Assignor(Protocol):
    """What the leader needs from a partition assignor (``ConsumerPartitionAssignor``)."""

    name: str
    rebalance_protocols: tuple[str, ...]

    def assign(self, partitions_per_topic: dict[str, int],
               subscriptions: dict[str, Subscription]) -> dict[str, Assignment]: ...

    def subscription_user_data(self, topics, owned_partitions, generation_id) -> bytes | None: ...

    def on_assignment(self, assignment: Assignment, generation_id: int) -> None: ...


__all__ = ["TopicPartition", "Subscription", "Assignment", "Assignor", "PartitionRacks"]
