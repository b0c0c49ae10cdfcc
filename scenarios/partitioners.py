"""The producer's partitioners, as Kafka's Java producer chooses a partition for a record.

* ``murmur2`` -- keyed records: ``toPositive(murmur2(keyBytes)) % numPartitions`` (``BuiltInPartitioner.
  partitionForKey``; the same as the pre-2.4 ``DefaultPartitioner``). Keys are UTF-8 encoded strings.
* ``round-robin`` -- ``RoundRobinPartitioner`` (KIP-369): a per-topic counter starting at 0,
  ``toPositive(counter++) % available.size()`` over the partitions that have a leader (all partitions when none
  has).
* ``sticky`` -- KIP-480 ``StickyPartitionCache``: stick to one partition until a batch is complete
  (``batch_records`` records here; Kafka: batch.size bytes or linger.ms), then pick a random *other* available
  partition (seeded RNG).
* ``default`` -- Kafka 2.4+'s default: murmur2 for keyed records, sticky for records without a key.
"""

from __future__ import annotations

from typing import Optional, Sequence

from protocol.hashing import murmur2, to_positive

from scenarios.rng import SimRandom


class Partitioners:
    def __init__(self, rng: SimRandom) -> None:
        self.rng = rng
        self._rr: dict[str, int] = {}
        self._sticky: dict[str, tuple[int, int]] = {}  # topic -> (partition, records in the current batch)

    def murmur2(self, key: bytes, num_partitions: int) -> int:
        return to_positive(murmur2(key)) % num_partitions

    def round_robin(self, topic: str, num_partitions: int, available: Sequence[int]) -> int:
        n = self._rr.get(topic, 0)
        self._rr[topic] = n + 1
        if available:
            return available[to_positive(n) % len(available)]
        return to_positive(n) % num_partitions

    def sticky(self, topic: str, num_partitions: int, available: Sequence[int], batch_records: int) -> int:
        cur = self._sticky.get(topic)
        if cur is not None and cur[1] < batch_records and cur[0] < num_partitions:
            self._sticky[topic] = (cur[0], cur[1] + 1)
            return cur[0]
        prev = cur[0] if cur is not None else None
        choices = list(available) if available else list(range(num_partitions))
        if len(choices) == 1:
            new = choices[0]
        else:
            new = self.rng.choice(choices)
            while new == prev:
                new = self.rng.choice(choices)
        self._sticky[topic] = (new, 1)
        return new

    def partition(self, kind: str, topic: str, key: Optional[str], num_partitions: int,
                  available: Sequence[int], batch_records: int = 16) -> int:
        if kind == "default":
            kind = "murmur2" if key is not None else "sticky"
        if kind == "murmur2":
            if key is None:
                raise ValueError("the murmur2 partitioner needs a key")
            return self.murmur2(key.encode("utf-8"), num_partitions)
        if kind == "round-robin":
            return self.round_robin(topic, num_partitions, available)
        if kind == "sticky":
            return self.sticky(topic, num_partitions, available, batch_records)
        raise ValueError(f"unknown partitioner {kind!r}")
