"""The data path model: in-memory partition logs (what producers append) and consumption tallies (what each
group processed), for the at-least-once invariant and the per-consumer summaries.

A record is only its key (or None): offsets are list indexes. Consumption is counted when the application has
*finished processing* a batch (a consumer that crashes mid-batch has not consumed it), per (group, partition,
offset); a count above one is a duplicate, as Kafka's at-least-once delivery produces after rebalances.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Optional


class PartitionLogs:
    def __init__(self) -> None:
        self.logs: dict[tuple[str, int], list[Optional[str]]] = {}
        self.produce_time: dict[tuple[str, int], list[int]] = {}
        self.version = 0  # changes whenever a log is created or grows (readers cache what they derive from logs)
        self.count = 0  # records appended so far, over every partition

    def ensure(self, topic: str, partitions: int) -> None:
        for p in range(partitions):
            self.logs.setdefault((topic, p), [])
            self.produce_time.setdefault((topic, p), [])
        self.version += 1

    def append(self, topic: str, partition: int, key: Optional[str], now_ms: int) -> int:
        log = self.logs[(topic, partition)]
        log.append(key)
        self.produce_time[(topic, partition)].append(now_ms)
        self.version += 1
        self.count += 1
        return len(log) - 1

    def end_offset(self, tp: tuple[str, int]) -> int:
        log = self.logs.get(tp)
        return 0 if log is None else len(log)

    def total(self) -> int:
        return self.count


class Consumption:
    """Per group: how often each offset of each partition was processed, and by whom."""

    def __init__(self) -> None:
        self.counts: dict[str, dict[tuple[str, int], list[int]]] = defaultdict(dict)
        self.by_consumer: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.keys_by_consumer: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
        self.first_position: dict[str, dict[tuple[str, int], int]] = defaultdict(dict)

    def started(self, group: str, tp: tuple[str, int], offset: int) -> None:
        """A member of ``group`` initialized its position on ``tp`` by ``auto.offset.reset`` (no commit)."""
        self.first_position[group].setdefault(tp, offset)

    def processed(self, group: str, consumer: str, tp: tuple[str, int], start: int, end: int,
                  keys: list) -> None:
        arr = self.counts[group].setdefault(tp, [])
        if len(arr) < end:
            arr.extend([0] * (end - len(arr)))
        for o in range(start, end):
            arr[o] += 1
        self.by_consumer[group][consumer] += end - start
        sample = self.keys_by_consumer[group][consumer]
        if len(sample) < 20:
            sample.extend(keys[: 20 - len(sample)])

    def stats(self, group: str, logs: PartitionLogs, topics) -> dict:
        missing = []
        duplicates = 0
        processed = 0
        for tp, log in sorted(logs.logs.items()):
            if tp[0] not in topics:
                continue
            arr = self.counts[group].get(tp, [])
            start = self.first_position[group].get(tp, 0)
            for o in range(start, len(log)):
                c = arr[o] if o < len(arr) else 0
                processed += c
                if c == 0:
                    missing.append((tp, o))
                elif c > 1:
                    duplicates += c - 1
        return {"missing": missing, "duplicates": duplicates, "processed": processed}
