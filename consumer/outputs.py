"""What the sans-IO consumer core asks its driver to do: small immutable records, drained in order with
:meth:`ConsumerCoordinator.drain`.

* :class:`SendRequest` - put ``body`` on the wire (api key, negotiated version) to ``node_id`` (``None``: any
  broker, e.g. the bootstrap or least-loaded one; Kafka's ``leastLoadedNode``). ``to_coordinator`` requests go
  to the coordinator connection (Kafka opens a separate connection, id ``Integer.MAX_VALUE - node_id``). The
  driver later calls ``on_response(handle, response)`` or reports a failure.
* :class:`CloseConnection` - drop the coordinator connection (Kafka's ``client.disconnectAsync`` when the
  coordinator is marked unknown); responses still in flight on it will be ignored.
* Rebalance listener callbacks (``ConsumerRebalanceListener``): :class:`PartitionsRevoked`,
  :class:`PartitionsAssigned`, :class:`PartitionsLost`, in the order Kafka invokes them.
* :class:`OffsetCommitCompleted` - an ``OffsetCommitCallback``: ``exception`` is None on success.
* :class:`PositionsInitialized` - committed offsets fetched (or reset) for newly assigned partitions.
* Observability (no Kafka callback; for logs, the demo and scenario event records): :class:`StateChanged`,
  :class:`CoordinatorDiscovered`, :class:`GroupJoined`, :class:`AssignmentComputed`, :class:`LeftGroup`,
  :class:`Closed`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, NamedTuple, Optional

from consumer.assignors import TopicPartition


@dataclass(frozen=True, slots=True)
class Node:
    node_id: int
    host: str
    port: int


class SendRequest(NamedTuple):
    """Immutable like the other outputs, but a NamedTuple: one is built per request (every heartbeat), and a
    frozen dataclass's ``__init__`` costs ~4x more."""

    handle: int
    api_key: int
    api_version: int
    body: Any
    node_id: Optional[int]
    to_coordinator: bool
    timeout_ms: int


@dataclass(frozen=True)
class CloseConnection:
    node_id: int
    reason: str


@dataclass(frozen=True)
class PartitionsRevoked:
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class PartitionsAssigned:
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class PartitionsLost:
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class OffsetCommitCompleted:
    commit_id: int
    offsets: Mapping[TopicPartition, int]
    exception: Optional[BaseException] = None


@dataclass(frozen=True)
class PositionsInitialized:
    committed: Mapping[TopicPartition, int]
    reset: Mapping[TopicPartition, int]


@dataclass(frozen=True)
class StateChanged:
    old: str
    new: str
    reason: str = ""


@dataclass(frozen=True)
class CoordinatorDiscovered:
    node: Node


@dataclass(frozen=True)
class GroupJoined:
    generation_id: int
    member_id: str
    leader_id: str
    protocol_name: Optional[str]
    is_leader: bool
    members: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class AssignmentComputed:
    generation_id: int
    protocol_name: str
    assignments: Mapping[str, tuple[TopicPartition, ...]]


@dataclass(frozen=True)
class LeftGroup:
    member_id: str
    reason: str


@dataclass(frozen=True)
class Closed:
    pass


LISTENER_OUTPUTS = (PartitionsRevoked, PartitionsAssigned, PartitionsLost)

__all__ = ["Node", "SendRequest", "CloseConnection", "PartitionsRevoked", "PartitionsAssigned", "PartitionsLost",
           "OffsetCommitCompleted", "PositionsInitialized", "StateChanged", "CoordinatorDiscovered", "GroupJoined",
           "AssignmentComputed", "LeftGroup", "Closed", "LISTENER_OUTPUTS"]
