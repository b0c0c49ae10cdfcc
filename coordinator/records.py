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
