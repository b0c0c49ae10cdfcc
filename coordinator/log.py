"""The ``__consumer_offsets`` partition logs: append-only lists of typed records, optionally mirrored to files.

Each partition has one log shared by all its replicas (a replica that becomes leader reads the same records: no
data is lost when leadership moves; kgroup does not model replication lag or unclean election).

File persistence (optional): ``PartitionLog(partition, path=...)`` writes every appended record as one JSON line
(the docs/events.md schema). ``fsync`` policy: ``"batch"`` (default) flushes and fsyncs once per handler call --
after all records of one request or timer are written, before its responses are returned, so an acknowledged
response is durable; ``"never"`` only flushes to the OS; ``"always"`` fsyncs after every record.
"""

from __future__ import annotations

import json
import os
from typing import Iterable, Iterator

from coordinator.records import LogEntry, Record

FSYNC_POLICIES = ("batch", "never", "always")


class PartitionLog:
    def __init__(self, partition: int, path: str | os.PathLike | None = None, fsync: str = "batch") -> None:
        if fsync not in FSYNC_POLICIES:
            raise ValueError(f"fsync policy must be one of {FSYNC_POLICIES}, got {fsync!r}")
        self.partition = partition
        self.entries: list[LogEntry] = []
        self._fsync = fsync
        self._file = None
        self._dirty = False
        if path is not None:
            if os.path.exists(path):
                with open(path, encoding="utf-8") as fh:
                    for line in fh:
                        if line.strip():
                            self.entries.append(LogEntry.from_dict(json.loads(line)))
            self._file = open(path, "a", encoding="utf-8")

    def append(self, record: Record, timestamp_ms: int) -> LogEntry:
        entry = LogEntry(self.partition, len(self.entries), timestamp_ms, record)
        self.entries.append(entry)
        if self._file is not None:
            self._file.write(json.dumps(entry.to_dict(), sort_keys=True) + "\n")
            self._dirty = True
            if self._fsync == "always":
                self._file.flush()
                os.fsync(self._file.fileno())
        return entry

    def sync(self) -> None:
        """End of a batch: flush (and fsync under the ``batch``/``always`` policies)."""
        if self._file is not None and self._dirty:
            self._dirty = False
            self._file.flush()
            if self._fsync != "never":
                os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __iter__(self) -> Iterator[LogEntry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def durable(self) -> Iterable[tuple[Record, int]]:
        return ((e.record, e.timestamp_ms) for e in self.entries if e.record.DURABLE)
