"""Files behind the coordinator's ``__consumer_offsets`` logs (``kgroup serve --data-dir``).

Every appended record is one JSON line (the docs/events.md schema) in ``<data-dir>/__consumer_offsets-<p>.jsonl``.
``fsync`` policy: ``"batch"`` (default) flushes and fsyncs once per core call -- after all records of one request
or timer are written, before its responses are released, so an acknowledged response is durable; ``"never"`` only
flushes to the OS; ``"always"`` fsyncs after every record.

:class:`OffsetsLogStorage` is what the broker hands the core (``GroupCoordinatorService(storage=...)``): asked for
a partition, it returns the entries already on disk and a :class:`JsonLinesWriter` appending to the same file.
"""

from __future__ import annotations

import json
import os

from coordinator.cluster import OFFSETS_TOPIC
from coordinator.records import LogEntry

FSYNC_POLICIES = ("batch", "never", "always")


class JsonLinesWriter:
    def __init__(self, path: str | os.PathLike, fsync: str = "batch") -> None:
        if fsync not in FSYNC_POLICIES:
            raise ValueError(f"fsync policy must be one of {FSYNC_POLICIES}, got {fsync!r}")
        self._fsync = fsync
        self._file = open(path, "a", encoding="utf-8")
        self._dirty = False

    def write(self, entry: LogEntry) -> None:
        self._file.write(json.dumps(entry.to_dict(), sort_keys=True) + "\n")
        self._dirty = True
        if self._fsync == "always":
            self._file.flush()
            os.fsync(self._file.fileno())

    def sync(self) -> None:
        if self._dirty:
            self._dirty = False
            self._file.flush()
            if self._fsync != "never":
                os.fsync(self._file.fileno())

    def close(self) -> None:
        if not self._file.closed:
            self.sync()
            self._file.close()


def read_entries(path: str | os.PathLike) -> list[LogEntry]:
    """The entries of a JSON-lines log file (none if it does not exist)."""
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as fh:
        return [LogEntry.from_dict(json.loads(line)) for line in fh if line.strip()]


class OffsetsLogStorage:
    """The ``__consumer_offsets`` partition files of one data directory."""

    def __init__(self, data_dir: str | os.PathLike, fsync: str = "batch") -> None:
        if fsync not in FSYNC_POLICIES:
            raise ValueError(f"fsync policy must be one of {FSYNC_POLICIES}, got {fsync!r}")
        self.data_dir = data_dir
        self.fsync = fsync

    def path(self, partition: int) -> str:
        return os.path.join(self.data_dir, f"{OFFSETS_TOPIC}-{partition}.jsonl")

    def open(self, partition: int) -> tuple[list[LogEntry], JsonLinesWriter]:
        os.makedirs(self.data_dir, exist_ok=True)
        path = self.path(partition)
        return read_entries(path), JsonLinesWriter(path, self.fsync)
