"""Offset commit, fetch, delete and expiry (Kafka 4.x ``OffsetMetadataManager``).

The committed offsets live in ``coordinator.offsets.OffsetStore`` and change only by records (``OffsetCommit``,
``OffsetTombstone``) appended through the shard's runtime; who may commit when is the group's rule
(``ClassicGroup.validate_offset_commit``, ``validate_offset_delete``; for a KIP-848 consumer group
``ConsumerGroup.validate_offset_commit`` with its per-partition assignment epochs, KIP-1251, and
``validate_offset_fetch``), as Kafka asks the group of whatever type it is. The expiry condition is
``coordinator.offsets.expired_partitions`` (classic) and the commit time (consumer groups).
"""

from __future__ import annotations

from typing import Any

from protocol.error_responses import offset_delete_error
from protocol.errors import ErrorCode
from protocol.messages import OffsetCommitResponse, OffsetDeleteResponse

from coordinator import records as R
from coordinator.classic_manager import ClassicGroupManager
from coordinator.config import CoordinatorConfig
from coordinator.consumer_group import ConsumerGroup
from coordinator.group import ClassicGroup, GroupState
from coordinator.offsets import expired_partitions
from coordinator.runtime import CoordinatorRuntime

S = GroupState
E = ErrorCode


def _utf16_len(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


class OffsetMetadataManager:
    """The committed offsets of one offsets partition: commit, fetch, delete, expiry."""

    def __init__(self, rt: CoordinatorRuntime, config: CoordinatorConfig, classic: ClassicGroupManager,
                 consumer: Any = None) -> None:
        self.rt = rt
        self.config = config
        self.offsets = rt.state.offsets  # read-only here: changed by rt.append only
        self.groups = rt.state.groups
        self.consumer_groups = rt.state.consumer_groups
        self.classic = classic
        self.consumer = consumer  # the ConsumerGroupManager (its metadata image resolves topic names to ids)

    def commit(self, req: Any) -> Any:
        """``OffsetMetadataManager.commitOffset``; the broker has already answered the partitions it does not have
        (the request holds only the rest)."""
        version = self.rt.request.api_version
        gen = req.generation_id_or_member_epoch
        instance_id = req.group_instance_id if version >= 7 else None
        cg = self.consumer_groups.get(req.group_id)
        if cg is not None:
            return self._commit_to_consumer_group(cg, req, version, gen, instance_id)
        g = self.groups.get(req.group_id)
        error: ErrorCode | None = None
        if g is None:
            if gen < 0:
                pass  # a "simple" group is created by the first OffsetCommit record
            else:
                error = E.GROUP_ID_NOT_FOUND if version >= 9 else E.ILLEGAL_GENERATION
        else:
            error = g.validate_offset_commit(req.member_id, instance_id, gen)
            if error is None and g.state in (S.STABLE, S.PREPARING_REBALANCE):
                # Offset commits keep the session alive in Stable and PreparingRebalance.
                self.classic.reschedule_heartbeat(g, g.members[req.member_id])
        now = self.rt.now_ms
        out = []
        for t in req.topics:
            parts = []
            for p in t.partitions:
                if error is not None:
                    e = error
                elif p.committed_metadata is not None and \
                        _utf16_len(p.committed_metadata) > self.config.offset_metadata_max_bytes:
                    e = E.OFFSET_METADATA_TOO_LARGE
                else:
                    e = self._append_commit(req, t.name, p, version, now)
                parts.append(OffsetCommitResponse.Topic.Partition(partition_index=p.partition_index,
                                                                  error_code=int(e)))
            out.append(OffsetCommitResponse.Topic(name=t.name, partitions=parts))
        return OffsetCommitResponse(topics=out)

    def _append_commit(self, req: Any, topic: str, p: Any, version: int, now: int) -> ErrorCode:
        """The OffsetCommit record of one accepted partition (v2-4: ``retention_time_ms`` sets an expire
        timestamp; the leader epoch from v6)."""
        retention = req.retention_time_ms if 2 <= version <= 4 else -1
        self.rt.append(R.OffsetCommit(
            group_id=req.group_id, topic=topic, partition=p.partition_index,
            offset=p.committed_offset, leader_epoch=p.committed_leader_epoch if version >= 6 else -1,
            metadata=p.committed_metadata or "", commit_timestamp_ms=now,
            expire_timestamp_ms=now + retention if retention != -1 else -1))
        return E.NONE

    def _commit_to_consumer_group(self, g: ConsumerGroup, req: Any, version: int, gen: int,
                                  instance_id: str | None) -> Any:
        """``commitOffset`` into a consumer group: ``ConsumerGroup.validateOffsetCommit`` then, per partition whose
        metadata is not too large, ``CommitPartitionValidator.validate``. Kafka throws from the first failure, so the
        whole request fails with it (every partition gets the error, nothing is written): raised as an ApiError.
        A commit does not keep a consumer group member's session alive (only classic groups do that)."""
        validation = g.validate_offset_commit(req.member_id, instance_id, gen, api_version=version)
        if validation.error is not None:
            raise validation.error
        max_bytes = self.config.offset_metadata_max_bytes
        image = self.consumer.image if self.consumer is not None else None
        too_large: set[tuple[str, int]] = set()
        for t in req.topics:
            tid = image.topic_id(t.name) if image is not None else None  # KafkaApis resolves names to ids (< v10)
            for p in t.partitions:
                if p.committed_metadata is not None and _utf16_len(p.committed_metadata) > max_bytes:
                    too_large.add((t.name, p.partition_index))
                    continue
                err = validation.partition_error(t.name, tid, p.partition_index)
                if err is not None:
                    raise err
        now = self.rt.now_ms
        out = []
        for t in req.topics:
            parts = []
            for p in t.partitions:
                if (t.name, p.partition_index) in too_large:
                    e = E.OFFSET_METADATA_TOO_LARGE
                else:
                    e = self._append_commit(req, t.name, p, version, now)
                parts.append(OffsetCommitResponse.Topic.Partition(partition_index=p.partition_index,
                                                                  error_code=int(e)))
            out.append(OffsetCommitResponse.Topic(name=t.name, partitions=parts))
        return OffsetCommitResponse(topics=out)

    def validate_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> None:
        """``OffsetMetadataManager.validateOffsetFetch``: only a consumer group checks the member (OffsetFetch v9+
        member id and epoch); an unknown group is not an error (its offsets read as -1)."""
        cg = self.consumer_groups.get(group_id)
        if cg is not None:
            err = cg.validate_offset_fetch(member_id, member_epoch)
            if err is not None:
                raise err

    def fetch(self, group_id: str, topics: list[tuple[str, list[int]]] | None
              ) -> list[tuple[str, list[tuple[int, int, int, str]]]]:
        """``fetchOffsets`` / ``fetchAllOffsets``: (topic, [(partition, offset, leader_epoch, metadata)]);
        ``topics=None``: every committed offset. Unknown group/partition: offset -1, epoch -1, metadata ""."""
        if topics is None:
            by_topic: dict[str, list[tuple[int, int, int, str]]] = {}
            for (t, p), o in self.offsets.group_offsets(group_id).items():
                by_topic.setdefault(t, []).append((p, o.offset, o.leader_epoch, o.metadata))
            return list(by_topic.items())
        out = []
        for t, parts in topics:
            rows = []
            for p in parts:
                o = self.offsets.get(group_id, t, p)
                rows.append((p, -1, -1, "") if o is None else (p, o.offset, o.leader_epoch, o.metadata))
            out.append((t, rows))
        return out

    def delete(self, req: Any) -> Any:
        """``OffsetMetadataManager.deleteOffsets`` with ``ClassicGroup.validateOffsetDelete`` (a consumer group's
        ``validateOffsetDelete`` accepts everything; its subscribed topics are refused per partition)."""
        g = self.consumer_groups.get(req.group_id) or self.groups.get(req.group_id)
        if g is None:
            return offset_delete_error(E.GROUP_ID_NOT_FOUND)
        e = None if isinstance(g, ConsumerGroup) else g.validate_offset_delete()
        if e is not None:
            return offset_delete_error(e)
        out = []
        for t in req.topics:
            subscribed = g.is_subscribed_to_topic(t.name)
            parts = []
            for p in t.partitions:
                if subscribed:
                    e = E.GROUP_SUBSCRIBED_TO_TOPIC
                else:
                    if self.offsets.get(g.group_id, t.name, p.partition_index) is not None:
                        self.rt.append(R.OffsetTombstone(group_id=g.group_id, topic=t.name,
                                                         partition=p.partition_index, reason="OffsetDelete"))
                    e = E.NONE
                parts.append(OffsetDeleteResponse.Topic.Partition(partition_index=p.partition_index,
                                                                  error_code=int(e)))
            out.append(OffsetDeleteResponse.Topic(name=t.name, partitions=parts))
        return OffsetDeleteResponse(error_code=0, topics=out)

    def delete_all(self, g: ClassicGroup | ConsumerGroup, reason: str) -> None:
        """Tombstone every committed offset of ``g`` (a group being deleted)."""
        for (t, p) in self.offsets.group_offsets(g.group_id):
            self.rt.append(R.OffsetTombstone(group_id=g.group_id, topic=t, partition=p, reason=reason))

    def cleanup_expired(self, g: ClassicGroup | ConsumerGroup) -> bool:
        """``cleanupExpiredOffsets``: tombstone ``g``'s expired offsets; True if the group has no offsets left."""
        if isinstance(g, ConsumerGroup):
            expired = consumer_group_expired_partitions(self.offsets, g, self.rt.now_ms,
                                                        self.config.offsets_retention_ms)
        else:
            expired = expired_partitions(self.offsets, g, self.rt.now_ms, self.config.offsets_retention_ms)
        for (t, p) in expired:
            self.rt.append(R.OffsetTombstone(group_id=g.group_id, topic=t, partition=p, reason="offset expired"))
        return not self.offsets.has_offsets(g.group_id)


def consumer_group_expired_partitions(store: Any, group: ConsumerGroup, now_ms: int,
                                      retention_ms: int) -> list[tuple[str, int]]:
    """A consumer group's expired offsets (``ConsumerGroup.offsetExpirationCondition``: the commit time is the base,
    whatever the group's state; ``cleanupExpiredOffsets``: only topics no member subscribes to, by name or regex).
    An explicit expire timestamp (OffsetCommit v2-v4 ``retention_time_ms``) wins when present."""
    out = []
    for (t, p), o in store.group_offsets(group.group_id).items():
        if group.is_subscribed_to_topic(t):
            continue
        if o.expire_timestamp_ms >= 0:
            if now_ms >= o.expire_timestamp_ms:
                out.append((t, p))
        elif now_ms - o.commit_timestamp_ms >= retention_ms:
            out.append((t, p))
    return out
