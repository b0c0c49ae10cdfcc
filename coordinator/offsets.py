"""Committed offsets of one ``__consumer_offsets`` partition (Kafka's ``OffsetMetadataManager`` state).

Like the groups, the store changes only by applying records: ``OffsetCommit`` sets a partition's offset,
``OffsetTombstone`` deletes it. A group's tombstone does not touch its offsets (as in Kafka, whose group
metadata tombstone and offset records are independent): a deletion tombstones every offset first, and an empty
classic group converted to a KIP-848 consumer group keeps its committed offsets. The request-side rules
(who may commit when, the sweep) live in ``coordinator.offset_manager``; the expiry *condition* is here.
"""

from __future__ import annotations

from dataclasses import dataclass

from coordinator import records as R


@dataclass(frozen=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int = -1


class OffsetStore:
    def __init__(self) -> None:
        self._offsets: dict[str, dict[tuple[str, int], OffsetAndMetadata]] = {}

    def apply(self, rec: R.Record, ts_ms: int) -> None:
        if isinstance(rec, R.OffsetCommit):
            self._offsets.setdefault(rec.group_id, {})[(rec.topic, rec.partition)] = OffsetAndMetadata(
                rec.offset, rec.leader_epoch, rec.metadata, rec.commit_timestamp_ms, rec.expire_timestamp_ms)
        elif isinstance(rec, R.OffsetTombstone):
            parts = self._offsets.get(rec.group_id)
            if parts is not None:
                parts.pop((rec.topic, rec.partition), None)
                if not parts:
                    del self._offsets[rec.group_id]

    def get(self, group_id: str, topic: str, partition: int) -> OffsetAndMetadata | None:
        return self._offsets.get(group_id, {}).get((topic, partition))

    def group_offsets(self, group_id: str) -> dict[tuple[str, int], OffsetAndMetadata]:
        """All committed offsets of a group, sorted by (topic, partition)."""
        return dict(sorted(self._offsets.get(group_id, {}).items()))

    def has_offsets(self, group_id: str) -> bool:
        return bool(self._offsets.get(group_id))

    def group_ids(self) -> list[str]:
        return sorted(self._offsets)

    def snapshot(self) -> dict[str, dict[tuple[str, int], OffsetAndMetadata]]:
        return {g: dict(sorted(p.items())) for g, p in sorted(self._offsets.items())}


def expired_partitions(store: OffsetStore, group, now_ms: int, retention_ms: int) -> list[tuple[str, int]]:
    """Which offsets of ``group`` have expired (KIP-211; ``OffsetMetadataManager.cleanupExpiredOffsets`` with
    ``ClassicGroup.offsetExpirationCondition``):

    * group with a protocol type and Empty: base = the time it became Empty (its current state timestamp);
    * consumer-protocol group (Stable) with known subscriptions: only offsets of topics nobody subscribes to,
      base = commit time;
    * no protocol type (simple group): base = commit time;
    * otherwise nothing expires.
    An explicit expire timestamp (OffsetCommit v2-v4 ``retention_time_ms``) wins when present.
    """
    from coordinator.group import GroupState

    offsets = store.group_offsets(group.group_id)
    if not offsets:
        return []
    if group.protocol_type is not None and group.state == GroupState.EMPTY:
        def base(o: OffsetAndMetadata) -> int:
            return group.current_state_timestamp_ms if group.current_state_timestamp_ms >= 0 else o.commit_timestamp_ms
        eligible = list(offsets)
    elif (group.protocol_type == "consumer" and group.subscribed_topics is not None
          and group.state == GroupState.STABLE):
        def base(o: OffsetAndMetadata) -> int:
            return o.commit_timestamp_ms
        eligible = [tp for tp in offsets if tp[0] not in group.subscribed_topics]
    elif group.protocol_type is None:
        def base(o: OffsetAndMetadata) -> int:
            return o.commit_timestamp_ms
        eligible = list(offsets)
    else:
        return []
    out = []
    for tp in eligible:
        o = offsets[tp]
        if o.expire_timestamp_ms >= 0:
            if now_ms >= o.expire_timestamp_ms:
                out.append(tp)
        elif now_ms - base(o) >= retention_ms:
            out.append(tp)
    return out
