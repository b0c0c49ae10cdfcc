"""The ``__consumer_offsets`` partition logs: append-only lists of typed records, compacted by key.

Each partition has one log shared by all its replicas (a replica that becomes leader reads the same records: no
data is lost when leadership moves; kgroup does not model replication lag or unclean election).

Only the shard's runtime appends, when an operation commits (``coordinator.runtime``): an operation that raised
leaves no entry. Persistence is the driver's: a :class:`PartitionLog` may be given the entries a previous run left
(``entries``) and a ``writer`` that receives every appended entry (``write``) and the end of each batch (``sync``:
the service syncs the logs a call appended to before it returns the call's responses, so an acknowledged response
is durable once ``sync`` returns). The core itself never touches a file: the broker process owns the writer
(``broker/storage.py``).

Compaction (Kafka's ``LogCleaner`` on ``__consumer_offsets``, ``cleanup.policy=compact``)
------------------------------------------------------------------------------------------
Kafka keeps the latest record of every key -- a group's metadata (key: the group id), a committed offset (key:
group, topic, partition), each KIP-848 ``ConsumerGroup*`` record (key: its record type, the group id and the member
id or regular expression where the key has one) -- and drops a tombstoned key once the tombstone is older than
``log.cleaner.delete.retention.ms``; a partition is cleaned once its dirty (uncleaned) part reaches
``log.cleaner.min.cleanable.ratio`` of the log. kgroup's log holds more than Kafka's: the *transient* records
(the rebalance log, ``coordinator.records``) and the ``CoordinatorLoaded`` markers, which the live state -- and
the rollback of a failed operation, ``replay_log`` -- is replayed from. So a compaction (:meth:`PartitionLog.
maybe_compact`, run by the runtime right after an operation commits, when the state equals the replay of the log)
does two things:

* the *clean* part ``entries[:clean]`` becomes :func:`compact_durable` of the whole log: the durable records only,
  the latest per key, in log order (offsets and timestamps kept: a compacted log is a subsequence of the log, as
  Kafka's is). Its durable load (``coordinator.replay.load_durable``, what a broker taking over the partition
  replays) is exactly the durable load of the uncompacted log;
* the live state at that point is kept as the *checkpoint* (a deep copy): the replay of the log used for rollback
  and for the "state equals the replay of the log" invariant is the checkpoint plus the records appended since
  (``replay_log``), unless a ``CoordinatorLoaded`` marker was appended since, which restarts from the durable load
  as before.

So memory follows the live state (the compacted keys, one state copy, and at most as many records again since the
last compaction) instead of the history. The records a call returns (``Output.records``, the rebalance log the
simulator writes to events.jsonl) are not touched: compaction changes no trace. The writer is told
(``writer.compact``, optional) so that the files are compacted too; where the history goes is the storage's
business (broker/storage.py keeps it in rolled segments for ``kgroup analyze``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Protocol

from coordinator.records import (ConsumerGroupMetadataTombstone, GroupMetadata, GroupTombstone, LogEntry, OffsetCommit,
                                 OffsetTombstone, Record)


class LogWriter(Protocol):
    """Where a partition log's appended entries go (a file, in ``kgroup serve --data-dir``). A writer may also
    have ``compact(entries, next_offset)``: the log was compacted to ``entries`` (every record below
    ``next_offset`` that is still needed)."""

    def write(self, entry: LogEntry) -> None: ...

    def sync(self) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class CompactionPolicy:
    """When a partition log is compacted and which tombstones it keeps (Kafka's cleaner settings)."""

    min_cleanable_ratio: float = 0.5      # log.cleaner.min.cleanable.ratio: dirty / (clean + dirty)
    min_dirty_records: int = 10_000       # kgroup.offsets.compaction.min.records: no compaction below this
    delete_retention_ms: int = 86_400_000  # log.cleaner.delete.retention.ms: how long tombstones are kept

    def due(self, clean: int, dirty: int) -> bool:
        if dirty < self.min_dirty_records or self.min_cleanable_ratio >= 1.0:
            return False
        return dirty >= self.min_cleanable_ratio * (clean + dirty)


#: compaction off (tests, tools)
NEVER = CompactionPolicy(min_dirty_records=2**62)


class PartitionLog:
    def __init__(self, partition: int, entries: Iterable[LogEntry] = (), writer: LogWriter | None = None,
                 next_offset: int | None = None, clean: int = 0) -> None:
        self.partition = partition
        self.entries: list[LogEntry] = list(entries)
        self.writer = writer
        #: the offset of the next appended record (records dropped by compaction keep their offsets)
        self.next_offset = next_offset if next_offset is not None else \
            max((e.offset for e in self.entries), default=-1) + 1
        #: ``entries[:clean]`` is the compacted part (durable records, the latest per key)
        self.clean = clean
        #: the live state right after ``entries[:clean]`` (set by a compaction; None: replay from the records)
        self.checkpoint: Any = None
        self.policy = CompactionPolicy()
        self.compactions = 0

    def append(self, record: Record, timestamp_ms: int) -> LogEntry:
        entry = LogEntry(self.partition, self.next_offset, timestamp_ms, record)
        self.next_offset += 1
        self.entries.append(entry)
        if self.writer is not None:
            self.writer.write(entry)
        return entry

    def sync(self) -> None:
        """End of a batch: make what was appended durable (the writer's policy)."""
        if self.writer is not None:
            self.writer.sync()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    def __iter__(self) -> Iterator[LogEntry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def durable(self) -> Iterable[tuple[Record, int]]:
        return ((e.record, e.timestamp_ms) for e in self.entries if e.record.DURABLE)

    # --- compaction ------------------------------------------------------------------------------------------

    def maybe_compact(self, state: Any, now_ms: int) -> bool:
        """Compact if the dirty part is due (:class:`CompactionPolicy`); ``state`` is the live state, equal to
        the replay of the log (the runtime calls this right after a commit). Returns whether it compacted."""
        clean = self.clean
        if not self.policy.due(clean, len(self.entries) - clean):
            return False
        self.compact(state, now_ms)
        return True

    def compact(self, state: Any, now_ms: int) -> None:
        self.entries = compact_durable(self.entries, now_ms, self.policy.delete_retention_ms)
        self.clean = len(self.entries)
        self.checkpoint = copy.deepcopy(state)
        self.compactions += 1
        compact = getattr(self.writer, "compact", None)
        if compact is not None:
            compact(self.entries, self.next_offset)


def _consumer_group_keys() -> dict[type, tuple[int, str | None]]:
    """Kafka 4.4's record key type of each KIP-848 consumer group record and its key field after the group id
    (``group-coordinator/src/main/resources/common/message/ConsumerGroup*Key.json``, ``CoordinatorRecordType``).
    A value record and its tombstone share the key."""
    from coordinator import records as R
    spec = {
        # type 3 ConsumerGroupMetadataKey (GroupId)
        R.ConsumerGroupMetadata: (3, None), R.ConsumerGroupMetadataTombstone: (3, None),
        # type 4 ConsumerGroupPartitionMetadataKey (GroupId): only tombstones are written since 4.1
        R.ConsumerGroupPartitionMetadataTombstone: (4, None),
        # type 5 ConsumerGroupMemberMetadataKey (GroupId, MemberId)
        R.ConsumerGroupMemberMetadata: (5, "member_id"), R.ConsumerGroupMemberMetadataTombstone: (5, "member_id"),
        # type 6 ConsumerGroupTargetAssignmentMetadataKey (GroupId)
        R.ConsumerGroupTargetAssignmentMetadata: (6, None),
        R.ConsumerGroupTargetAssignmentMetadataTombstone: (6, None),
        # type 7 ConsumerGroupTargetAssignmentMemberKey (GroupId, MemberId)
        R.ConsumerGroupTargetAssignmentMember: (7, "member_id"),
        R.ConsumerGroupTargetAssignmentMemberTombstone: (7, "member_id"),
        # type 8 ConsumerGroupCurrentMemberAssignmentKey (GroupId, MemberId)
        R.ConsumerGroupCurrentMemberAssignment: (8, "member_id"),
        R.ConsumerGroupCurrentMemberAssignmentTombstone: (8, "member_id"),
        # type 16 ConsumerGroupRegularExpressionKey (GroupId, RegularExpression)
        R.ConsumerGroupRegularExpression: (16, "regular_expression"),
        R.ConsumerGroupRegularExpressionTombstone: (16, "regular_expression"),
    }
    assert set(spec) == set(R.CONSUMER_GROUP_RECORD_TYPES)
    return spec


_CONSUMER_GROUP_KEYS = _consumer_group_keys()
_CG_TOMBSTONES = frozenset(t for t in _CONSUMER_GROUP_KEYS if t.__name__.endswith("Tombstone"))
#: consumer group records that create their group on replay (coordinator.consumer_group.REPLAY)
_CG_CREATING = frozenset(t for t in _CONSUMER_GROUP_KEYS if t not in _CG_TOMBSTONES)


def compaction_key(rec: Record) -> tuple | None:
    """The ``__consumer_offsets`` key a durable record is the latest value (or tombstone) of: Kafka's record key,
    the record type and its key fields -- ``OffsetCommitKey`` (group, topic, partition), ``GroupMetadataKey``
    (group) and the KIP-848 ``ConsumerGroup*Key`` types (group, and the member id or regular expression where the
    key has one). None: not a durable record."""
    t = type(rec)
    if t is OffsetCommit or t is OffsetTombstone:
        return ("offset", rec.group_id, rec.topic, rec.partition)  # OffsetCommitKey
    if t is GroupMetadata or t is GroupTombstone:
        return ("group", rec.group_id)  # GroupMetadataKey
    spec = _CONSUMER_GROUP_KEYS.get(t)
    if spec is not None:
        ktype, field = spec
        return (ktype, rec.group_id) if field is None else (ktype, rec.group_id, getattr(rec, field))
    return None


def is_tombstone(rec: Record) -> bool:
    """A key with a null value (Kafka's tombstone)."""
    t = type(rec)
    return t is GroupTombstone or t is OffsetTombstone or t in _CG_TOMBSTONES


def _simple_group_creators(entries: list[LogEntry]) -> dict[str, int]:
    """Per group, the offset commit that created the simple group its durable load ends with, if it ends with one
    (``coordinator.replay.load_durable``: a commit creates a simple classic group when no group of either type
    exists; a ``GroupMetadata`` replaces it, a ``GroupTombstone`` deletes it, a KIP-848 record replaces it with a
    consumer group, whose ``ConsumerGroupMetadataTombstone`` deletes it)."""
    state: dict[str, str] = {}      # group -> "simple" | "classic" | "consumer" (absent: no group)
    creator: dict[str, int] = {}
    for i, e in enumerate(entries):
        rec = e.record
        t = type(rec)
        g = rec.group_id
        if t is OffsetCommit:
            if g not in state:
                state[g], creator[g] = "simple", i
        elif t is GroupMetadata:
            state[g] = "classic"
            creator.pop(g, None)
        elif t is GroupTombstone:
            if state.get(g) != "consumer":
                state.pop(g, None)
                creator.pop(g, None)
        elif t in _CG_CREATING:
            state[g] = "consumer"
            creator.pop(g, None)
        elif t is ConsumerGroupMetadataTombstone:
            if state.get(g) == "consumer":
                del state[g]
    return creator


def compact_durable(entries: list[LogEntry], now_ms: int, delete_retention_ms: int) -> list[LogEntry]:
    """The durable records of ``entries`` that their durable load (``coordinator.replay.load_durable``) needs, in
    log order: the latest record of every key, tombstones only while younger than ``delete_retention_ms``
    (Kafka's ``LogCleaner``: a tombstone is removed once it has been in the cleaned part of the log for
    ``log.cleaner.delete.retention.ms``; kgroup measures from the tombstone's own timestamp).

    kgroup's load has two rules beyond "latest value per key", and the result keeps them exact:

    * a ``GroupTombstone`` does not touch the group's offsets (as in Kafka: a deletion tombstones every offset
      first), but an offset record that survives the group's tombstone must not create a simple group on load: a
      group tombstone with a kept offset record of its group before it is kept past ``delete_retention_ms``;
    * an ``OffsetCommit`` of a group that does not exist creates it, as a simple group stamped with that record's
      time (``Groups.ensure_simple_group``): the commit that created the simple group a group's load ends with is
      kept even when a later commit of the same key supersedes it (and that key's latest record is kept, even as
      an old tombstone, so that it still overrides it).

    The KIP-848 consumer group records are compacted by their own keys (:func:`compaction_key`). Their replay
    needs nothing more: a group's records after its deletion are all of its new incarnation, a member's removal
    tombstones its three keys in the order replay accepts, and the latest record of every key is a state the
    group passed through. One thing a compacted log cannot give back is the iteration order of the group's
    ``TimelineHashMap``s (members, resolved regular expressions, server assignor counts): that order depends on
    the map's history (its capacity never shrinks; colliding keys keep their insertion order), so a group loaded
    from a compacted log may list its members in another order -- as a Kafka coordinator loading a cleaned
    ``__consumer_offsets`` partition does.
    """
    latest: dict[tuple, int] = {}
    for i, e in enumerate(entries):
        rec = e.record
        if not rec.DURABLE:
            continue
        key = compaction_key(rec)
        if key is None:
            continue
        latest[key] = i
    creators: set[int] = set()      # commits that create a group (kept even when superseded)
    overriding: set[int] = set()    # the latest records of the creators' keys (kept even as old tombstones)
    for i in _simple_group_creators(entries).values():
        creators.add(i)
        overriding.add(latest[compaction_key(entries[i].record)])
    out = []
    first_kept_offset: dict[str, int] = {}  # per group, the first offset record kept
    for i, e in enumerate(entries):
        rec = e.record
        if not rec.DURABLE:
            continue
        key = compaction_key(rec)
        if key is None:
            out.append(e)
            continue
        if latest[key] != i and i not in creators:
            continue
        if is_tombstone(rec) and now_ms - e.timestamp_ms >= delete_retention_ms and i not in overriding \
                and not (type(rec) is GroupTombstone and first_kept_offset.get(rec.group_id, i) < i):
            continue  # everything it deleted is gone: the tombstone itself is no longer needed
        if key[0] == "offset":
            first_kept_offset.setdefault(rec.group_id, i)
        out.append(e)
    return out
