"""Consumer lag over time: log end offsets (what was produced) against committed offsets (the group's
``OffsetCommit`` records), per group.

Lag of a partition at time t = its log end offset at t - the group's last committed offset at t (the committed
offset is the next record to consume: Kafka's ``ConsumerGroupCommand`` computes LAG the same way). A group's lag
is the sum over the partitions it has committed so far. The event log has the commits; the end offsets come from
beside it:

* a ``kgroup run`` directory: ``produce.jsonl``, one line per (time, topic, partition) with the end offset after
  that millisecond's appends (``scenarios.runner``);
* a ``kgroup serve --data-dir``: ``topics/<topic>-<partition>.log``, the record batches as produced; each batch
  ends at ``baseOffset + lastOffsetDelta + 1`` at its ``maxTimestamp`` (read with ``protocol.records``).

Without either, the report has no lag chart (and says why).
"""

from __future__ import annotations

import bisect
import json
import re
from pathlib import Path
from typing import Optional

EndOffsets = dict[tuple[str, int], list[tuple[int, int]]]   # (topic, partition) -> [(ts, end offset)], by ts

_LOG_NAME = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)\.log$")


def _monotonic(points: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    best = 0
    for ts, end in sorted(points):
        if end > best:
            best = end
            if out and out[-1][0] == ts:
                out[-1] = (ts, end)
            else:
                out.append((ts, end))
    return out


def from_produce_file(path: str) -> EndOffsets:
    pts: dict[tuple[str, int], list[tuple[int, int]]] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                d = json.loads(line)
                pts.setdefault((d["topic"], int(d["partition"])), []).append((int(d["t"]), int(d["end_offset"])))
            except (ValueError, KeyError, TypeError):
                continue
    return {tp: _monotonic(v) for tp, v in pts.items()}


def from_topics_dir(path: str, limit_bytes: int = 256 << 20) -> EndOffsets:
    """End offsets from a data directory's record batches (at most ``limit_bytes`` read in all)."""
    from protocol.records import decode_batches
    out: EndOffsets = {}
    budget = limit_bytes
    for f in sorted(Path(path).glob("*.log")):
        m = _LOG_NAME.match(f.name)
        if not m or budget <= 0:
            continue
        raw = f.read_bytes()[:budget]
        budget -= len(raw)
        try:
            batches = decode_batches(raw, verify_crc=False)
        except Exception:  # noqa: BLE001 - a damaged log gives no lag, not a failed analysis
            continue
        pts = [(b.max_timestamp, b.base_offset + b.last_offset_delta + 1) for b in batches
               if not b.is_control and b.max_timestamp is not None and b.max_timestamp >= 0]
        out[(m.group("topic"), int(m.group("partition")))] = _monotonic(pts)
    return out


def end_offset_at(points: list[tuple[int, int]], t: int) -> int:
    i = bisect.bisect_right(points, (t, float("inf")))
    return points[i - 1][1] if i else 0


def series(commits: list[tuple[int, str, int, int]], ends: EndOffsets) -> list[tuple[int, int]]:
    """``commits``: (ts, topic, partition, committed offset), sorted by ts. Returns [(ts, total lag)] at each
    commit time (the committed offsets change only there; the end offsets in between are also sampled at the
    produce times so that a growing backlog shows)."""
    if not commits:
        return []
    committed: dict[tuple[str, int], int] = {}
    times = sorted({c[0] for c in commits}
                   | {ts for tp, pts in ends.items() for ts, _ in pts if ts >= commits[0][0]})
    out = []
    i = 0
    for t in times:
        while i < len(commits) and commits[i][0] <= t:
            _, topic, p, off = commits[i]
            committed[(topic, p)] = max(committed.get((topic, p), 0), off)
            i += 1
        known = [(tp, off) for tp, off in committed.items() if tp in ends]
        if not known:
            continue
        out.append((t, sum(max(0, end_offset_at(ends[tp], t) - off) for tp, off in known)))
    return _thin(out)


def _thin(points: list[tuple[int, int]], limit: int = 600) -> list[tuple[int, int]]:
    """At most ``limit`` points, keeping each stretch's maximum (a spike must survive)."""
    if len(points) <= limit:
        return points
    step = len(points) / limit
    out = []
    for k in range(limit):
        chunk = points[int(k * step):int((k + 1) * step)] or points[-1:]
        out.append(max(chunk, key=lambda p: p[1]))
    return out


def load_end_offsets(produce: Optional[str], topics_dir: Optional[str]) -> Optional[EndOffsets]:
    if produce:
        return from_produce_file(produce)
    if topics_dir:
        return from_topics_dir(topics_dir)
    return None
