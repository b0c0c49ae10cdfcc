"""The files behind the logs (``kgroup serve --data-dir``): the only module of the broker that opens files.

* **The coordinator's ``__consumer_offsets`` logs.** Every appended record is one JSON line (the docs/events.md
  schema) in ``<data-dir>/__consumer_offsets-<p>.jsonl``. ``fsync`` policy: ``"batch"`` (default) flushes and
  fsyncs once per core call -- after all records of one request or timer are written, before its responses are
  released, so an acknowledged response is durable; ``"never"`` only flushes to the OS; ``"always"`` fsyncs after
  every record. :class:`OffsetsLogStorage` is what the broker hands the core (``GroupCoordinatorService(storage=
  ...)``): asked for a partition, it returns the entries already on disk and a :class:`JsonLinesWriter` appending
  to the same file.
* **The topics' record batches** (the data path, ``broker/datapath.py``): ``<data-dir>/topics/<topic>-<p>.log``
  holds the partition's batches back to back, as stored (base offset and leader epoch assigned).
  :class:`TopicLogStorage` returns the whole batches on disk -- cutting off a torn write at the tail, as Kafka's
  log recovery does -- and a :class:`BatchFileWriter` that appends and flushes each batch before the Produce is
  answered (and fsyncs it unless the policy is ``"never"``).
"""

from __future__ import annotations

import json
import os
import re

from coordinator.cluster import OFFSETS_TOPIC
from coordinator.records import LogEntry

from broker.batchlog import valid_prefix_length

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


class BatchFileWriter:
    """Appends record batches to one partition's file: each is flushed (and fsynced unless ``fsync="never"``)
    before ``write`` returns."""

    def __init__(self, path: str | os.PathLike, fsync: str = "batch") -> None:
        if fsync not in FSYNC_POLICIES:
            raise ValueError(f"fsync policy must be one of {FSYNC_POLICIES}, got {fsync!r}")
        self._fsync = fsync
        self._file = open(path, "ab")

    def write(self, data: bytes) -> None:
        self._file.write(data)
        self._file.flush()
        if self._fsync != "never":
            os.fsync(self._file.fileno())

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()


class TopicLogStorage:
    """The topic partition files of one data directory (``<data-dir>/topics``)."""

    def __init__(self, data_dir: str | os.PathLike, fsync: str = "batch") -> None:
        if fsync not in FSYNC_POLICIES:
            raise ValueError(f"fsync policy must be one of {FSYNC_POLICIES}, got {fsync!r}")
        self.dir = os.path.join(data_dir, "topics")
        self.fsync = fsync

    def path(self, topic: str, partition: int) -> str:
        return os.path.join(self.dir, f"{topic}-{partition}.log")

    def open(self, topic: str, partition: int) -> tuple[bytes, BatchFileWriter]:
        os.makedirs(self.dir, exist_ok=True)
        path = self.path(topic, partition)
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            raw = b""
        good = valid_prefix_length(raw)
        if good != len(raw):  # a torn write at the tail (crash during an append): drop it, as log recovery does
            with open(path, "r+b") as f:
                f.truncate(good)
            raw = raw[:good]
        return raw, BatchFileWriter(path, self.fsync)

    def delete_topic(self, topic: str) -> None:
        """Remove every partition file of a deleted topic."""
        pattern = re.compile(re.escape(topic) + r"-\d+\.log")
        try:
            names = os.listdir(self.dir)
        except FileNotFoundError:
            return
        for name in names:
            if pattern.fullmatch(name):
                os.remove(os.path.join(self.dir, name))
