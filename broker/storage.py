"""The files behind the logs (``kgroup serve --data-dir``): the only module of the broker that opens files.

Layout of a data directory::

    __consumer_offsets-<p>.jsonl              the active segment of offsets partition p: every record appended
                                              since its last compaction, one JSON line each (docs/events.md)
    __consumer_offsets-<p>.snapshot           its compacted records: the durable records still needed, latest per
                                              key (coordinator/log.py), and the offset the active segment starts at
    __consumer_offsets-<p>.<base>.jsonl       rolled segments: the history of the partition (the rebalance log
                                              ``kgroup analyze`` reads), kept up to --offsets-history-retention-bytes
    topics/<topic>-<p>.log                    a topic partition's record batches, back to back, as stored
    producer-ids.json                         the next producer id block (Kafka's ProducerIdsRecord)

**Offsets logs.** :class:`OffsetsLogStorage` is what the broker hands the core (``GroupCoordinatorService(
storage=...)``): asked for a partition, it returns the entries the partition needs -- the snapshot's records,
then the active segment's -- and a :class:`JsonLinesWriter`. The writer encodes each appended record at once and
writes the lines of one core call with one ``os.write`` at the end of the call (``sync``), before the call's
responses are released: an acknowledged response is on disk as whole lines, never in a buffer. A compaction
(``writer.compact``, from the core) writes the new snapshot to a temporary file, fsyncs and renames it over the old
one (a crash leaves the old snapshot or the new one, never half of one), then rolls the active segment into the
history and starts a new one; so a restart reads the live state's records plus at most one dirty segment, not the
history. Lines of the active segment below the snapshot's offset (a crash between the two steps) are skipped.

**Recovery.** Each line ends with a CRC-32 of its JSON (``"crc"``, docs/events.md). A line that cannot be read
or fails its CRC is reported with the file and its byte offset: at the end of the
file (a write cut short by a crash) it is dropped and the file truncated there; in the middle it is skipped and
everything else is loaded. An unreadable snapshot falls back to the history and the active segment (all of it),
with a warning. Nothing refuses to start.

**Topic logs** (the data path, ``broker/datapath.py``): :class:`TopicLogStorage` checks every stored batch
(length, magic, CRC-32C, offsets that only go up: ``broker.batchlog.recover_batches``). A corrupt region between
valid batches is reported (file, byte range) and skipped, the batches after it kept; an invalid tail (a torn
write) is reported and cut off. A :class:`BatchFileWriter` writes each batch with one ``os.write``.

**fsync policy** (``--fsync``): ``batch`` (default) fsyncs each offsets file a core call wrote to, and each topic
file after each batch, before the response is released -- an acknowledged commit or produce survives a crash of
the machine; ``always`` fsyncs after every record too; ``never`` leaves the flushing to the OS -- an acknowledged
write survives a crash of the process (it is in the page cache) but not of the machine. Compaction follows the
same policy for its snapshot (and fsyncs the directory after the rename unless ``never``).

**Producer ids** (:class:`ProducerIdBlocks`, Kafka's ``ProducerIdManager`` getting blocks from the controller's
``ProducerIdsRecord``): ids are handed out from blocks of 1,000 whose end is written to ``producer-ids.json`` (and
fsynced) before the first id of the block is used, so no restart -- however quick -- reuses an id. A data
directory without the file (written by an older kgroup) starts above every producer id found in its topic logs.
"""

from __future__ import annotations

import json
import logging
import os
import re
import struct
import zlib

from coordinator.cluster import OFFSETS_TOPIC
from coordinator.records import LogEntry

from broker.batchlog import recover_batches

FSYNC_POLICIES = ("batch", "never", "always")
log = logging.getLogger("kgroup.storage")

_SNAPSHOT_FORMAT = 1


def _check_policy(fsync: str) -> None:
    if fsync not in FSYNC_POLICIES:
        raise ValueError(f"fsync policy must be one of {FSYNC_POLICIES}, got {fsync!r}")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomically(path: str, data: bytes, fsync: bool) -> None:
    """Write ``path`` so that a crash leaves either its old content or all of ``data``."""
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        _write_all(fd, data)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if fsync:
        _fsync_dir(os.path.dirname(path) or ".")


def encode_entry(entry: LogEntry) -> bytes:
    """One JSON line (docs/events.md) ending with ``"crc"``: the CRC-32 of the line without it, so that a damaged
    record is detected even where the damage still parses as JSON."""
    text = json.dumps(entry.to_dict(), sort_keys=True)
    return f'{text[:-1]}, "crc": {zlib.crc32(text.encode())}}}\n'.encode()


_CRC_KEY = b', "crc": '


def decode_line(line: bytes) -> LogEntry:
    """The entry of one line written by :func:`encode_entry` (or without a CRC: an older kgroup, a hand-made
    file); raises ValueError if it is damaged."""
    i = line.rfind(_CRC_KEY)
    if i < 0:
        return LogEntry.from_dict(json.loads(line))
    body = line.rstrip()
    if not body.endswith(b"}"):
        raise ValueError("no closing brace after the CRC")
    crc = int(body[i + len(_CRC_KEY):-1])
    data = line[:i] + b"}"
    if zlib.crc32(data) != crc:
        raise ValueError("CRC mismatch")
    return LogEntry.from_dict(json.loads(data))


# --- the offsets logs --------------------------------------------------------------------------------------------

def read_entries(path: str | os.PathLike, *, repair: bool = False) -> list[LogEntry]:
    """The entries of a JSON-lines log file (none if it does not exist). A line that cannot be read is reported
    (file, byte offset) and skipped; with ``repair``, unreadable lines at the end of the file (a torn write) are
    also cut off the file."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        return []
    entries: list[LogEntry] = []
    bad: list[tuple[int, str]] = []
    pos, n = 0, len(raw)
    last_good_end = 0
    while pos < n:
        nl = raw.find(b"\n", pos)
        end = n if nl < 0 else nl + 1
        line = raw[pos:end]
        if line.strip():
            try:
                if nl < 0:
                    raise ValueError("no line end (a write cut short)")
                entries.append(decode_line(line))
                last_good_end = end
            except Exception as e:  # noqa: BLE001 - any unreadable line: report, never refuse to start
                bad.append((pos, f"{type(e).__name__}: {str(e)[:120]}"))
        pos = end
    tail = [b for b in bad if b[0] >= last_good_end]
    for off, why in bad:
        if off < last_good_end:
            log.warning("%s: skipping an unreadable record at byte %d (%s); the records after it are loaded",
                        path, off, why)
    if tail:
        off = tail[0][0]
        log.warning("%s: dropping a torn or corrupt record at the end of the file, at byte %d (%d bytes: %s)%s",
                    path, off, n - off, tail[0][1], "; truncating the file there" if repair else "")
        if repair:
            with open(path, "r+b") as fh:
                fh.truncate(off)
    return entries


def _read_snapshot(path: str) -> tuple[list[LogEntry], int] | None:
    """(entries, next offset) of a snapshot file; None if there is none. Raises ValueError if it is unreadable."""
    try:
        with open(path, "rb") as fh:
            lines = fh.read().split(b"\n")
    except FileNotFoundError:
        return None
    header = json.loads(lines[0])
    if header.get("kgroup_offsets_snapshot") != _SNAPSHOT_FORMAT:
        raise ValueError(f"unknown snapshot format {header!r}")
    entries = [decode_line(x) for x in lines[1:] if x.strip()]
    if len(entries) != header["records"]:
        raise ValueError(f"{len(entries)} records, the header says {header['records']}")
    return entries, int(header["next_offset"])


class JsonLinesWriter:
    """Appends one offsets partition's records to its active segment as whole JSON lines; compacts (see the
    module docstring)."""

    def __init__(self, path: str | os.PathLike, fsync: str = "batch", storage: "OffsetsLogStorage | None" = None,
                 partition: int = 0, segment_base: int | None = None) -> None:
        _check_policy(fsync)
        self.path = os.fspath(path)
        self._fsync = fsync
        self._storage = storage
        self._partition = partition
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._pending: list[bytes] = []
        self.segment_base = segment_base  # offset of the active segment's first record (None: empty)

    def write(self, entry: LogEntry) -> None:
        if self.segment_base is None:
            self.segment_base = entry.offset
        self._pending.append(encode_entry(entry))
        if self._fsync == "always":
            self.sync()

    def sync(self) -> None:
        """Write what was appended since the last call (one ``os.write``: whole lines) and fsync per the policy."""
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            _write_all(self._fd, data)
            if self._fsync != "never":
                os.fsync(self._fd)

    def compact(self, entries: list[LogEntry], next_offset: int) -> None:
        """The log was compacted to ``entries`` (every record below ``next_offset`` still needed): write them as the
        new snapshot, then roll the active segment into the history."""
        self.sync()
        storage = self._storage
        if storage is None:
            return
        body = [json.dumps({"kgroup_offsets_snapshot": _SNAPSHOT_FORMAT, "partition": self._partition,
                            "next_offset": next_offset, "records": len(entries)}).encode() + b"\n"]
        body += [encode_entry(e) for e in entries]
        write_atomically(storage.snapshot_path(self._partition), b"".join(body), self._fsync != "never")
        os.close(self._fd)
        if self.segment_base is not None and os.path.getsize(self.path) > 0:
            os.replace(self.path, storage.history_path(self._partition, self.segment_base))
        else:
            os.unlink(self.path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_TRUNC, 0o644)
        self.segment_base = None
        if self._fsync != "never":
            _fsync_dir(os.path.dirname(self.path) or ".")
        storage.enforce_history_retention()

    def close(self) -> None:
        if self._fd >= 0:
            self.sync()
            os.close(self._fd)
            self._fd = -1


class OffsetsLogStorage:
    """The ``__consumer_offsets`` partition files of one data directory."""

    def __init__(self, data_dir: str | os.PathLike, fsync: str = "batch",
                 history_retention_bytes: int = -1) -> None:
        _check_policy(fsync)
        self.data_dir = os.fspath(data_dir)
        self.fsync = fsync
        self.history_retention_bytes = history_retention_bytes

    def path(self, partition: int) -> str:
        return os.path.join(self.data_dir, f"{OFFSETS_TOPIC}-{partition}.jsonl")

    def snapshot_path(self, partition: int) -> str:
        return os.path.join(self.data_dir, f"{OFFSETS_TOPIC}-{partition}.snapshot")

    def history_path(self, partition: int, base_offset: int) -> str:
        return os.path.join(self.data_dir, f"{OFFSETS_TOPIC}-{partition}.{base_offset:020d}.jsonl")

    def history_segments(self, partition: int | None = None) -> list[tuple[int, int, str]]:
        """(partition, base offset, path) of the rolled segments, oldest first per partition."""
        pat = re.compile(re.escape(OFFSETS_TOPIC) + r"-(\d+)\.(\d{20})\.jsonl$")
        out = []
        try:
            names = os.listdir(self.data_dir)
        except FileNotFoundError:
            return []
        for name in names:
            m = pat.match(name)
            if m and (partition is None or int(m.group(1)) == partition):
                out.append((int(m.group(1)), int(m.group(2)), os.path.join(self.data_dir, name)))
        return sorted(out)

    def open(self, partition: int) -> tuple[list[LogEntry], JsonLinesWriter, int | None, int]:
        """(entries, writer, next offset, how many leading entries are compacted) of one partition."""
        os.makedirs(self.data_dir, exist_ok=True)
        path = self.path(partition)
        snap_path = self.snapshot_path(partition)
        try:
            snap = _read_snapshot(snap_path)
        except Exception as e:  # noqa: BLE001 - never refuse to start: rebuild from the history
            log.warning("%s: unreadable snapshot (%s); loading partition %d from its history and active segment "
                        "instead", snap_path, e, partition)
            entries = [e for _, _, p in self.history_segments(partition) for e in read_entries(p)]
            entries += read_entries(path, repair=True)
            return entries, JsonLinesWriter(path, self.fsync, self, partition,
                                            _first_offset(path)), None, 0
        active = read_entries(path, repair=True)
        if snap is None:
            return active, JsonLinesWriter(path, self.fsync, self, partition,
                                           active[0].offset if active else None), None, 0
        compacted, next_offset = snap
        dirty = [e for e in active if e.offset >= next_offset]
        base = dirty[0].offset if dirty else (active[0].offset if active else None)
        nxt = max(next_offset, dirty[-1].offset + 1 if dirty else 0)
        return compacted + dirty, JsonLinesWriter(path, self.fsync, self, partition, base), nxt, len(compacted)

    def enforce_history_retention(self) -> None:
        """Delete the oldest rolled segments (of any partition) while the history exceeds its retention."""
        limit = self.history_retention_bytes
        if limit < 0:
            return
        segs = []
        for p, base, path in self.history_segments():
            try:
                st = os.stat(path)
            except FileNotFoundError:
                continue
            segs.append((st.st_mtime, p, base, path, st.st_size))
        total = sum(s[4] for s in segs)
        for _, _, _, path, size in sorted(segs):
            if total <= limit:
                break
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            total -= size


def _first_offset(path: str) -> int | None:
    try:
        with open(path, "rb") as fh:
            first = fh.readline()
        return int(json.loads(first)["log_offset"]) if first.strip() else None
    except Exception:  # noqa: BLE001
        return None


# --- the topic logs ---------------------------------------------------------------------------------------------

class BatchFileWriter:
    """Appends record batches to one partition's file: each with one ``os.write``, fsynced unless
    ``fsync="never"``, before ``write`` returns."""

    def __init__(self, path: str | os.PathLike, fsync: str = "batch") -> None:
        _check_policy(fsync)
        self._fsync = fsync
        self._fd = os.open(os.fspath(path), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, data: bytes) -> None:
        _write_all(self._fd, data)
        if self._fsync != "never":
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class TopicLogStorage:
    """The topic partition files of one data directory (``<data-dir>/topics``) and its producer id blocks."""

    def __init__(self, data_dir: str | os.PathLike, fsync: str = "batch") -> None:
        _check_policy(fsync)
        self.data_dir = os.fspath(data_dir)
        self.dir = os.path.join(self.data_dir, "topics")
        self.fsync = fsync
        self.producer_ids = ProducerIdBlocks(self.data_dir, self.dir, fsync != "never")

    def path(self, topic: str, partition: int) -> str:
        return os.path.join(self.dir, f"{topic}-{partition}.log")

    def open(self, topic: str, partition: int) -> tuple[bytes, BatchFileWriter]:
        """The valid batches stored for the partition (recovered: see the module docstring) and its writer."""
        os.makedirs(self.dir, exist_ok=True)
        path = self.path(topic, partition)
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            raw = b""
        rec = recover_batches(raw)
        for a, b in rec.corrupt:
            after = sum(1 for x, _ in rec.batches if x >= b)
            log.warning("%s: corrupt data at bytes %d-%d (%d bytes: a batch whose length, magic or CRC is wrong); "
                        "skipped, %d later batches loaded", path, a, b, b - a, after)
        if rec.torn_at is not None:  # a torn write at the tail (a crash during an append): cut it off
            log.warning("%s: dropping a torn or corrupt batch at the end of the file, at byte %d (%d bytes); "
                        "truncating the file there", path, rec.torn_at, len(raw) - rec.torn_at)
            with open(path, "r+b") as f:
                f.truncate(rec.torn_at)
        good = rec.valid_bytes(raw) if rec.corrupt or rec.torn_at is not None else raw
        return good, BatchFileWriter(path, self.fsync)

    def allocate_producer_ids(self, block_size: int) -> int:
        return self.producer_ids.allocate(block_size)

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


class ProducerIdBlocks:
    """Durable producer id blocks (see the module docstring)."""

    def __init__(self, data_dir: str, topics_dir: str, fsync: bool) -> None:
        self.path = os.path.join(data_dir, "producer-ids.json")
        self.topics_dir = topics_dir
        self.fsync = fsync

    def allocate(self, block_size: int) -> int:
        """Reserve the next block; returns its first id (the block is durable when this returns)."""
        try:
            with open(self.path, encoding="utf-8") as f:
                start = int(json.load(f)["next_block_start"])
        except FileNotFoundError:
            start = max_producer_id(self.topics_dir) + 1
        except Exception as e:  # noqa: BLE001 - unreadable: never reuse an id -- start above every stored one
            start = max_producer_id(self.topics_dir) + 1
            log.warning("%s: unreadable (%s); starting producer ids at %d, above every id in the topic logs",
                        self.path, e, start)
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        write_atomically(self.path, json.dumps({"next_block_start": start + block_size}).encode(), self.fsync)
        return start


def max_producer_id(topics_dir: str) -> int:
    """The largest producer id in the stored batches (headers only); -1 if none."""
    best = -1
    try:
        names = os.listdir(topics_dir)
    except FileNotFoundError:
        return best
    for name in names:
        if not name.endswith(".log"):
            continue
        with open(os.path.join(topics_dir, name), "rb") as f:
            raw = f.read()
        for a, _ in recover_batches(raw).batches:
            (pid,) = struct.unpack_from(">q", raw, a + 43)
            best = max(best, pid)
    return best
