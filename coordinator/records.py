"""Typed records of the ``__consumer_offsets`` partition logs (event schema v1; see docs/events.md).

Every change to a group or to its offsets is one of these records. A handler never mutates state: it appends
records through its shard's runtime (``coordinator.runtime``), which applies each to the in-memory state at once
(``coordinator.replay.ShardState.apply``: ``Groups.apply`` and ``OffsetStore.apply``) and, when the operation
completes, appends them to the log of the group's ``__consumer_offsets`` partition. Replaying a log rebuilds the
state (``coordinator.replay``).

Two kinds of records:

* **durable** (``DURABLE = True``): what Kafka itself writes to ``__consumer_offsets`` -- the group metadata value
  (``GroupMetadata``), offset commits and their tombstones. A broker that takes over a partition loads it by
  replaying *only these*, which gives Kafka's load semantics exactly (a loaded group is Stable if it has members,
  else Empty; no pending members, parked requests or rebalance in flight).
* **transient** (``DURABLE = False``): what Kafka keeps in memory only (a member joined, a rebalance started, the
  join phase completed, a member was removed...). kgroup logs them too, because they are the rebalance log that
  analysis and the teaching views read, and because replaying *all* records rebuilds the live state of the
  coordinator that wrote them.

Records are frozen dataclasses; ``to_dict``/``from_dict`` give the versioned JSON form (bytes as hex).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Record:
    TYPE: ClassVar[str] = ""
    DURABLE: ClassVar[bool] = False
    group_id: str


@dataclass(frozen=True)
class MemberMetadata:
    """One member inside a ``GroupMetadata`` value (Kafka's ``GroupMetadataValue.MemberMetadata``)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes  # metadata of the selected protocol
    assignment: bytes


# --- durable records (Kafka's own __consumer_offsets content) ---------------------------------------------------

@dataclass(frozen=True)
class GroupMetadata(Record):
    """Kafka's group metadata value (``GroupMetadataValue`` v4): written when the leader's SyncGroup completes a
    rebalance, when a join phase completes into Empty, on a static member replacement in Stable, and when a
    JoinGroup creates a group (the new coordinator's "empty group" record)."""

    TYPE: ClassVar[str] = "GroupMetadata"
    DURABLE: ClassVar[bool] = True
    protocol_type: str | None = None
    generation_id: int = 0
    protocol_name: str | None = None
    leader: str | None = None
    current_state_timestamp_ms: int = -1
    members: tuple[MemberMetadata, ...] = ()


@dataclass(frozen=True)
class GroupTombstone(Record):
    """The group metadata key with a null value: the group is deleted (DeleteGroups or expiry)."""

    TYPE: ClassVar[str] = "GroupTombstone"
    DURABLE: ClassVar[bool] = True
    reason: str = ""


@dataclass(frozen=True)
class OffsetCommit(Record):
    """Kafka's offset commit value (``OffsetCommitValue``) for one partition."""

    TYPE: ClassVar[str] = "OffsetCommit"
    DURABLE: ClassVar[bool] = True
    topic: str = ""
    partition: int = 0
    offset: int = 0
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp_ms: int = 0
    expire_timestamp_ms: int = -1  # OffsetCommit v2-v4 retention_time_ms; -1 = none


@dataclass(frozen=True)
class OffsetTombstone(Record):
    """The offset key with a null value: the committed offset is deleted (OffsetDelete, expiry, group delete)."""

    TYPE: ClassVar[str] = "OffsetTombstone"
    DURABLE: ClassVar[bool] = True
    topic: str = ""
    partition: int = 0
    reason: str = ""


# --- transient records (kgroup's rebalance log; Kafka keeps this in memory only) ---------------------------------

@dataclass(frozen=True)
class MemberJoined(Record):
    """A member was added to the group with a parked JoinGroup (``addMemberThenRebalanceOrCompleteJoin``)."""

    TYPE: ClassVar[str] = "MemberJoined"
    member_id: str = ""
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = 0
    session_timeout_ms: int = 0
    protocol_type: str = ""
    protocols: tuple[tuple[str, bytes], ...] = ()
    reason: str = ""


@dataclass(frozen=True)
class MemberRejoined(Record):
    """An existing member sent JoinGroup and is now awaiting the join phase (``updateMember``)."""

    TYPE: ClassVar[str] = "MemberRejoined"
    member_id: str = ""
    rebalance_timeout_ms: int = 0
    session_timeout_ms: int = 0
    protocols: tuple[tuple[str, bytes], ...] = ()
    reason: str = ""


@dataclass(frozen=True)
class StaticMemberReplaced(Record):
    """A static member rejoined with an unknown member id: ``old_member_id`` is fenced and replaced by
    ``new_member_id`` (assignment and leadership carried over), with the request's protocols and timeouts."""

    TYPE: ClassVar[str] = "StaticMemberReplaced"
    group_instance_id: str = ""
    old_member_id: str = ""
    new_member_id: str = ""
    rebalance_timeout_ms: int = 0
    session_timeout_ms: int = 0
    protocols: tuple[tuple[str, bytes], ...] = ()
    awaiting_join: bool = True
    reason: str = ""


@dataclass(frozen=True)
class MemberRemoved(Record):
    """A member left the group (LeaveGroup, session expiry, not rejoined, pending-sync expiry, max size...).
    ``new_leader`` is the leader after the removal (``None``: no members left)."""

    TYPE: ClassVar[str] = "MemberRemoved"
    member_id: str = ""
    group_instance_id: str | None = None
    new_leader: str | None = None
    reason: str = ""


@dataclass(frozen=True)
class PendingMemberAdded(Record):
    """A dynamic member was given an id with MEMBER_ID_REQUIRED (KIP-394) and must rejoin with it."""

    TYPE: ClassVar[str] = "PendingMemberAdded"
    member_id: str = ""


@dataclass(frozen=True)
class PendingMemberRemoved(Record):
    """A pending member id was dropped (it rejoined, left, or its pending timer expired)."""

    TYPE: ClassVar[str] = "PendingMemberRemoved"
    member_id: str = ""
    reason: str = ""


@dataclass(frozen=True)
class RebalanceStarted(Record):
    """The group moved to PreparingRebalance (``prepareRebalance``). From CompletingRebalance all assignments are
    reset; the pending-sync set is cleared. ``initial``: the group was Empty (initial delayed join)."""

    TYPE: ClassVar[str] = "RebalanceStarted"
    initial: bool = False
    generation_id: int = 0
    reason: str = ""


@dataclass(frozen=True)
class InitialRebalanceExtended(Record):
    """The initial-delay timer fired after a new member arrived: the join phase is delayed by another
    ``delay_ms`` (``tryCompleteInitialRebalanceElseSchedule``); clears the group's new-member-added flag."""

    TYPE: ClassVar[str] = "InitialRebalanceExtended"
    delay_ms: int = 0
    remaining_ms: int = 0


@dataclass(frozen=True)
class JoinCompleted(Record):
    """The join phase completed (``completeClassicGroupJoin`` / ``initNextGeneration``): new generation; with
    members the group is CompletingRebalance with ``leader`` and ``protocol_name``, else Empty."""

    TYPE: ClassVar[str] = "JoinCompleted"
    generation_id: int = 0
    protocol_name: str | None = None
    leader: str | None = None
    members: tuple[str, ...] = ()


@dataclass(frozen=True)
class SyncReceived(Record):
    """A member of the current generation sent SyncGroup (it leaves the pending-sync set, KAFKA-12890)."""

    TYPE: ClassVar[str] = "SyncReceived"
    member_id: str = ""
    generation_id: int = 0


@dataclass(frozen=True)
class CoordinatorLoaded(Record):
    """Marker written by a broker that finished loading the partition (group_id is ""): from here on, the live
    state is what the durable records before it give (Kafka's load), not the previous leader's memory."""

    TYPE: ClassVar[str] = "CoordinatorLoaded"
    partition: int = 0
    broker_id: int = 0
    leader_epoch: int = 0


RECORD_TYPES: dict[str, type[Record]] = {
    cls.TYPE: cls for cls in (GroupMetadata, GroupTombstone, OffsetCommit, OffsetTombstone, MemberJoined,
                              MemberRejoined, StaticMemberReplaced, MemberRemoved, PendingMemberAdded,
                              PendingMemberRemoved, RebalanceStarted, InitialRebalanceExtended, JoinCompleted, SyncReceived, CoordinatorLoaded)
}


@dataclass(frozen=True)
class LogEntry:
    """A record at its position in a partition log."""

    partition: int
    offset: int
    timestamp_ms: int
    record: Record

    def to_dict(self) -> dict[str, Any]:
        return {"v": SCHEMA_VERSION, "log_partition": self.partition, "log_offset": self.offset,
                "timestamp_ms": self.timestamp_ms, "type": self.record.TYPE, "durable": self.record.DURABLE,
                "data": _encode(dataclasses.asdict(self.record))}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "LogEntry":
        if d.get("v") != SCHEMA_VERSION:
            raise ValueError(f"unsupported event schema version {d.get('v')!r} (this kgroup reads {SCHEMA_VERSION})")
        rtype = RECORD_TYPES.get(d["type"])
        if rtype is None:
            raise ValueError(f"unknown record type {d['type']!r}")
        return cls(d["log_partition"], d["log_offset"], d["timestamp_ms"], record_from_fields(rtype, d["data"]))


def _encode(v: Any) -> Any:
    if isinstance(v, (bytes, bytearray)):
        return {"hex": bytes(v).hex()}
    if isinstance(v, dict):
        return {k: _encode(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_encode(x) for x in v]
    return v


def _decode(v: Any) -> Any:
    if isinstance(v, dict) and set(v) == {"hex"}:
        return bytes.fromhex(v["hex"])
    if isinstance(v, list):
        return tuple(_decode(x) for x in v)
    return v


def record_from_fields(rtype: type[Record], d: dict[str, Any]) -> Record:
    kwargs = {}
    for f in dataclasses.fields(rtype):
        if f.name not in d:
            continue
        val = _decode(d[f.name])
        if f.name == "members" and rtype is GroupMetadata:
            val = tuple(MemberMetadata(**{k: _decode(x) for k, x in m.items()}) if isinstance(m, dict) else m
                        for m in d[f.name])
        kwargs[f.name] = val
    return rtype(**kwargs)


# --- KIP-848 consumer groups: Kafka's own records (durable) ---------------------------------------------------------
# Kafka 4.4 group-coordinator/src/main/resources/common/message/ConsumerGroup*{Key,Value}.json. A Kafka tombstone
# (key with a null value) is its own type here. Topic ids are Kafka Uuid strings (protocol/uuids.py). Replayed by
# coordinator/consumer_group.py; docs/events.md lists the fields.

def _struct(cls, v):
    return v if v is None or isinstance(v, cls) else cls(**{k: _decode(x) for k, x in v.items()})


@dataclass(frozen=True)
class TopicPartitions:
    """A topic id and partition indexes (``ConsumerGroupTargetAssignmentMemberValue.TopicPartition``)."""

    topic_id: str
    partitions: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "partitions", tuple(self.partitions))


@dataclass(frozen=True)
class TopicPartitionEpochs:
    """``ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions``: partitions with the epoch each was assigned
    at (tagged ``AssignmentEpochs``, 4.4; ``None`` when a writer did not set it)."""

    topic_id: str
    partitions: tuple[int, ...] = ()
    assignment_epochs: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "partitions", tuple(self.partitions))
        if self.assignment_epochs is not None:
            object.__setattr__(self, "assignment_epochs", tuple(self.assignment_epochs))


@dataclass(frozen=True)
class ClassicMemberMetadata:
    """``ConsumerGroupMemberMetadataValue.ClassicMemberMetadata``: set iff the member uses the classic protocol."""

    session_timeout_ms: int = 0
    supported_protocols: tuple[tuple[str, bytes], ...] = ()  # (name, metadata)

    def __post_init__(self) -> None:
        object.__setattr__(self, "supported_protocols", tuple((n, bytes(m)) for n, m in self.supported_protocols))


@dataclass(frozen=True)
class ConsumerGroupMetadata(Record):
    """The group epoch and the metadata hash of the subscribed topics (KIP-1101)."""

    TYPE: ClassVar[str] = "ConsumerGroupMetadata"
    DURABLE: ClassVar[bool] = True
    epoch: int = 0
    metadata_hash: int = 0


@dataclass(frozen=True)
class ConsumerGroupMetadataTombstone(Record):
    """The consumer group is deleted (last record of a deletion or conversion batch)."""

    TYPE: ClassVar[str] = "ConsumerGroupMetadataTombstone"
    DURABLE: ClassVar[bool] = True


@dataclass(frozen=True)
class ConsumerGroupPartitionMetadataTombstone(Record):
    """Removes the pre-4.1 subscription metadata record (its value is not modelled: 4.1+ never writes it)."""

    TYPE: ClassVar[str] = "ConsumerGroupPartitionMetadataTombstone"
    DURABLE: ClassVar[bool] = True


@dataclass(frozen=True)
class ConsumerGroupMemberMetadata(Record):
    """A member's subscription and client metadata (creates the member on replay)."""

    TYPE: ClassVar[str] = "ConsumerGroupMemberMetadata"
    DURABLE: ClassVar[bool] = True
    member_id: str = ""
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    classic_member_metadata: ClassicMemberMetadata | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "subscribed_topic_names", tuple(self.subscribed_topic_names))
        object.__setattr__(self, "classic_member_metadata",
                           _struct(ClassicMemberMetadata, self.classic_member_metadata))


@dataclass(frozen=True)
class ConsumerGroupMemberMetadataTombstone(Record):
    """The member is removed (after its current and target assignment tombstones)."""

    TYPE: ClassVar[str] = "ConsumerGroupMemberMetadataTombstone"
    DURABLE: ClassVar[bool] = True
    member_id: str = ""


@dataclass(frozen=True)
class ConsumerGroupTargetAssignmentMetadata(Record):
    """The epoch of the target assignment and when its computation finished (KIP-1263, 4.3+; 0 = unknown)."""

    TYPE: ClassVar[str] = "ConsumerGroupTargetAssignmentMetadata"
    DURABLE: ClassVar[bool] = True
    assignment_epoch: int = 0
    assignment_timestamp_ms: int = 0


@dataclass(frozen=True)
class ConsumerGroupTargetAssignmentMetadataTombstone(Record):
    TYPE: ClassVar[str] = "ConsumerGroupTargetAssignmentMetadataTombstone"
    DURABLE: ClassVar[bool] = True


@dataclass(frozen=True)
class ConsumerGroupTargetAssignmentMember(Record):
    """A member's target assignment, topics and partitions in the order the assignor produced them."""

    TYPE: ClassVar[str] = "ConsumerGroupTargetAssignmentMember"
    DURABLE: ClassVar[bool] = True
    member_id: str = ""
    topic_partitions: tuple[TopicPartitions, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "topic_partitions", tuple(_struct(TopicPartitions, t) for t in self.topic_partitions))


@dataclass(frozen=True)
class ConsumerGroupTargetAssignmentMemberTombstone(Record):
    TYPE: ClassVar[str] = "ConsumerGroupTargetAssignmentMemberTombstone"
    DURABLE: ClassVar[bool] = True
    member_id: str = ""


@dataclass(frozen=True)
class ConsumerGroupCurrentMemberAssignment(Record):
    """A member's epochs, state (``MemberState`` byte) and current assignment."""

    TYPE: ClassVar[str] = "ConsumerGroupCurrentMemberAssignment"
    DURABLE: ClassVar[bool] = True
    member_id: str = ""
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: int = 0
    assigned_partitions: tuple[TopicPartitionEpochs, ...] = ()
    partitions_pending_revocation: tuple[TopicPartitionEpochs, ...] = ()

    def __post_init__(self) -> None:
        for name in ("assigned_partitions", "partitions_pending_revocation"):
            object.__setattr__(self, name, tuple(_struct(TopicPartitionEpochs, t) for t in getattr(self, name)))


@dataclass(frozen=True)
class ConsumerGroupCurrentMemberAssignmentTombstone(Record):
    """The member's assignment is deleted: on replay its epochs become -1 and it owns nothing."""

    TYPE: ClassVar[str] = "ConsumerGroupCurrentMemberAssignmentTombstone"
    DURABLE: ClassVar[bool] = True
    member_id: str = ""


@dataclass(frozen=True)
class ConsumerGroupRegularExpression(Record):
    """A resolved subscription regex: the topics it matched (sorted), the metadata image version, the time."""

    TYPE: ClassVar[str] = "ConsumerGroupRegularExpression"
    DURABLE: ClassVar[bool] = True
    regular_expression: str = ""
    topics: tuple[str, ...] = ()
    version: int = 0
    timestamp_ms: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "topics", tuple(self.topics))


@dataclass(frozen=True)
class ConsumerGroupRegularExpressionTombstone(Record):
    TYPE: ClassVar[str] = "ConsumerGroupRegularExpressionTombstone"
    DURABLE: ClassVar[bool] = True
    regular_expression: str = ""


CONSUMER_GROUP_RECORD_TYPES: tuple[type[Record], ...] = (
    ConsumerGroupMetadata, ConsumerGroupMetadataTombstone, ConsumerGroupPartitionMetadataTombstone,
    ConsumerGroupMemberMetadata, ConsumerGroupMemberMetadataTombstone, ConsumerGroupTargetAssignmentMetadata,
    ConsumerGroupTargetAssignmentMetadataTombstone, ConsumerGroupTargetAssignmentMember,
    ConsumerGroupTargetAssignmentMemberTombstone, ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupCurrentMemberAssignmentTombstone, ConsumerGroupRegularExpression,
    ConsumerGroupRegularExpressionTombstone)
RECORD_TYPES.update({cls.TYPE: cls for cls in CONSUMER_GROUP_RECORD_TYPES})
