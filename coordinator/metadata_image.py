"""The topic metadata a KIP-848 coordinator works with: Kafka's ``CoordinatorMetadataImage`` over kgroup's cluster
model, and the metadata hash of a group's subscribed topics (KIP-1101) (sans-IO).

Kafka's group coordinator sees the cluster's topics through a metadata image: topic ids, names, partition counts
and the racks of each partition's replicas; every image has a version, and ``GroupMetadataManager.onMetadataUpdate``
learns which topics a new image created, changed or deleted. kgroup's cluster model (``coordinator.cluster``) counts
its topic changes in ``Cluster.metadata_version``; :meth:`MetadataImage.from_cluster` takes a snapshot and
:func:`image_delta` compares two, which is what the consumer group manager does before each operation that reads
metadata (the same observable effect as Kafka's push of every new image: a group is only ever told at its next
heartbeat).

The metadata hash (``ConsumerGroupMetadata.metadata_hash``): Kafka 4.1+ stores one 64-bit hash over the subscribed
topics' metadata instead of the topics themselves (``Utils.computeTopicHash``: topic id, name, partition count and
each partition's sorted racks, streamed through XXH3-64 with a magic byte; ``Utils.computeGroupHash``: the topic
hashes in topic-name order through XXH3-64; 0 when no subscribed topic exists). kgroup computes a hash over the same
inputs in the same order with BLAKE2b-64 (the standard library has no XXH3): the *values* differ from Kafka's, but
they change exactly when Kafka's do -- which is all the protocol observes (a changed hash bumps the group epoch).
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from protocol.uuids import uuid_to_string

from coordinator.cluster import Cluster, topic_id

#: ``Utils.TOPIC_HASH_MAGIC_BYTE`` (the hash function's version).
TOPIC_HASH_MAGIC_BYTE = 0


@dataclass(frozen=True)
class TopicMetadata:
    """One topic of the image: its id (a Kafka Uuid string), name, partition count and each partition's racks."""

    topic_id: str
    name: str
    num_partitions: int
    partition_racks: tuple[tuple[str, ...], ...] = ()


class MetadataImage:
    """Kafka's ``CoordinatorMetadataImage``: topics by name and by id, and the image's version."""

    def __init__(self, version: int = 0, topics: Iterable[TopicMetadata] = ()) -> None:
        self.version = version
        self.topics: dict[str, TopicMetadata] = {t.name: t for t in topics}
        self.by_id: dict[str, TopicMetadata] = {t.topic_id: t for t in self.topics.values()}
        self._assignor_topics: dict[str, dict[str, Any]] | None = None
        self._ids_by_name: dict[str, str] | None = None

    @classmethod
    def from_cluster(cls, cluster: Cluster) -> "MetadataImage":
        topics = []
        for name in sorted(cluster.topics):
            parts = cluster.partitions(name)
            racks = tuple(tuple(sorted({cluster.brokers[b].rack for b in ps.replicas
                                         if b in cluster.brokers and cluster.brokers[b].rack is not None}))
                          for ps in parts)
            topics.append(TopicMetadata(uuid_to_string(topic_id(name)), name, len(parts), racks))
        return cls(cluster.metadata_version, topics)

    def topic_id(self, name: str) -> str | None:
        t = self.topics.get(name)
        return None if t is None else t.topic_id

    def topic_name(self, topic_id: str) -> str | None:
        t = self.by_id.get(topic_id)
        return None if t is None else t.name

    def topic_ids_by_name(self) -> dict[str, str]:
        """Topic name -> id (built once per image: every reconciliation step asks; callers only read it)."""
        if self._ids_by_name is None:
            self._ids_by_name = {n: t.topic_id for n, t in self.topics.items()}
        return self._ids_by_name

    def topic_names_by_id(self) -> dict[str, str]:
        return {i: t.name for i, t in self.by_id.items()}

    def assignor_topics(self) -> dict[str, dict[str, Any]]:
        """The topics as ``coordinator.assignors.assign_target`` takes them (topic id -> name, partitions)."""
        if self._assignor_topics is None:
            self._assignor_topics = {t.topic_id: {"name": t.name, "partitions": t.num_partitions}
                                     for t in self.topics.values()}
        return self._assignor_topics


@dataclass(frozen=True)
class ImageDelta:
    """What changed between two images (``CoordinatorMetadataDelta``): topic names created, changed (partitions,
    racks) and deleted."""

    created: tuple[str, ...]
    changed: tuple[str, ...]
    deleted: tuple[str, ...]


def image_delta(old: MetadataImage, new: MetadataImage) -> ImageDelta:
    created = tuple(n for n in new.topics if n not in old.topics)
    changed = tuple(n for n in new.topics if n in old.topics and new.topics[n] != old.topics[n])
    deleted = tuple(n for n in old.topics if n not in new.topics)
    return ImageDelta(created, changed, deleted)


def _hash64(data: bytes) -> int:
    v = struct.unpack(">q", hashlib.blake2b(data, digest_size=8).digest())[0]
    return v


def compute_topic_hash(topic: TopicMetadata) -> int:
    """``Utils.computeTopicHash``'s inputs (magic byte, topic id, name, partition count, each partition's sorted
    racks), hashed with BLAKE2b-64 (see the module docstring)."""
    out = bytearray([TOPIC_HASH_MAGIC_BYTE])
    out += topic.topic_id.encode("ascii")
    name = topic.name.encode("utf-8")
    out += struct.pack(">i", len(name)) + name
    out += struct.pack(">i", topic.num_partitions)
    for i, racks in enumerate(topic.partition_racks):
        out += struct.pack(">i", i)
        for rack in racks:
            r = rack.encode("utf-8")
            out += struct.pack(">i", len(r)) + r
    return _hash64(bytes(out))


def compute_group_hash(topic_hashes: Mapping[str, int]) -> int:
    """``Utils.computeGroupHash``: 0 without topics; otherwise the topic hashes in topic-name order."""
    if not topic_hashes:
        return 0
    out = bytearray()
    for name in sorted(topic_hashes, key=lambda s: s.encode("utf-16-be", "surrogatepass")):
        out += struct.pack(">q", topic_hashes[name])
    return _hash64(bytes(out))


def compute_metadata_hash(subscribed_topic_names: Iterable[str], image: MetadataImage) -> int:
    """``ModernGroup.computeMetadataHash``: the group hash over the subscribed topics the image knows."""
    return compute_group_hash({n: compute_topic_hash(image.topics[n]) for n in subscribed_topic_names
                               if n in image.topics})
