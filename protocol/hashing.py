"""Kafka's hash functions (sans-IO): which coordinator owns a group, which partition a key goes to.

* :func:`java_string_hash` -- ``java.lang.String.hashCode()``, re-exported from :mod:`protocol.java` (the one home
  of Java semantics: UTF-16 code units, int32 wrap-around).
* :func:`kafka_abs` -- ``org.apache.kafka.common.utils.Utils.abs``: ``Integer.MIN_VALUE`` maps to 0, not to
  itself (Java's ``Math.abs``) nor to 2**31 (Python's ``abs``).
* :func:`coordinator_partition` -- ``GroupCoordinator.partitionFor`` / ``GroupMetadataManager.partitionFor`` (and
  ``GroupCoordinatorService.partitionFor`` in the KIP-848 coordinator): ``Utils.abs(groupId.hashCode()) %
  groupMetadataTopicPartitionCount`` (``offsets.topic.num.partitions``, default 50).  The partition's leader is the
  group's coordinator.  Note: the naive ``abs(hash) % n`` differs exactly when the hash is ``Integer.MIN_VALUE``
  (``2**31 % 50 == 48`` but Kafka gives 0) -- see the tests for such a group id.
* :func:`murmur2` -- ``Utils.murmur2`` (MurmurHash2, seed ``0x9747b28c``, little-endian 4-byte blocks, the tail
  mixed in with fall-through), returned as a signed 32-bit int like Java.
* :func:`to_positive` -- ``Utils.toPositive``: ``n & 0x7fffffff`` (not ``abs``: MIN_VALUE -> 0, -1 -> 2**31-1).
* :func:`partition_for_key` -- the default partitioner for a keyed record
  (``BuiltInPartitioner.partitionForKey``, formerly ``DefaultPartitioner``):
  ``toPositive(murmur2(keyBytes)) % numPartitions``.
"""

from __future__ import annotations

import struct

from protocol.java import int32, java_string_hash

_MASK32 = 0xFFFFFFFF
_INT_MIN = -(1 << 31)


__all__ = ["java_string_hash", "kafka_abs", "coordinator_partition", "murmur2", "to_positive", "partition_for_key"]


def kafka_abs(n: int) -> int:
    """Kafka's ``Utils.abs`` for a 32-bit int: ``Integer.MIN_VALUE`` -> 0, otherwise ``abs(n)``."""
    return 0 if n == _INT_MIN else abs(n)


def coordinator_partition(group_id: str, num_partitions: int = 50) -> int:
    """The ``__consumer_offsets`` partition (hence coordinator) for ``group_id``, as Kafka computes it."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    return kafka_abs(java_string_hash(group_id)) % num_partitions


_M = 0x5BD1E995
_SEED = 0x9747B28C


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` of ``data`` as a signed 32-bit int."""
    data = bytes(data)
    length = len(data)
    h = (_SEED ^ length) & _MASK32
    n4 = length >> 2
    if n4:
        for (k,) in struct.iter_unpack("<I", data[: n4 * 4]):
            k = (k * _M) & _MASK32
            k ^= k >> 24
            k = (k * _M) & _MASK32
            h = ((h * _M) & _MASK32) ^ k
    tail = length & 3
    base = n4 * 4
    if tail == 3:
        h ^= data[base + 2] << 16
    if tail >= 2:
        h ^= data[base + 1] << 8
    if tail >= 1:
        h ^= data[base]
        h = (h * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    h ^= h >> 15
    return int32(h)


def to_positive(n: int) -> int:
    """Kafka's ``Utils.toPositive``: clear the sign bit of a 32-bit int."""
    return n & 0x7FFFFFFF


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition Kafka's default partitioner picks for a non-null serialized ``key``."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    return to_positive(murmur2(key)) % num_partitions
