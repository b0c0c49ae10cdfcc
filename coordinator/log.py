"""The ``__consumer_offsets`` partition logs: append-only lists of typed records.

Each partition has one log shared by all its replicas (a replica that becomes leader reads the same records: no
data is lost when leadership moves; kgroup does not model replication lag or unclean election).

Only the shard's runtime appends, when an operation commits (``coordinator.runtime``): an operation that raised
leaves no entry. Persistence is the driver's: a :class:`PartitionLog` may be given the entries a previous run left
(``entries``) and a ``writer`` that receives every appended entry (``write``) and the end of each batch (``sync``:
the service syncs the logs a call appended to before it returns the call's responses, so an acknowledged response
is durable once ``sync`` returns). The core itself never touches a file: the broker process owns the writer
(``broker/storage.py``).
"""

from __future__ import annotations

from typing import Iterable, Iterator, Protocol

from coordinator.records import LogEntry, Record


class LogWriter(Protocol):
    """Where a partition log's appended entries go (a file, in ``kgroup serve --data-dir``)."""

    def write(self, entry: LogEntry) -> None: ...

    def sync(self) -> None: ...

    def close(self) -> None: ...


class PartitionLog:
    def __init__(self, partition: int, entries: Iterable[LogEntry] = (), writer: LogWriter | None = None) -> None:
        self.partition = partition
        self.entries: list[LogEntry] = list(entries)
        self.writer = writer

    def append(self, record: Record, timestamp_ms: int) -> LogEntry:
        entry = LogEntry(self.partition, len(self.entries), timestamp_ms, record)
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
