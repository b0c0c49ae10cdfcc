"""Rebuilding state from a partition log.

* ``replay_durable(entries)`` -- what a broker loads on failover: only Kafka's own records (Kafka's semantics).
* ``replay_live(entries)`` -- the live state of the coordinator that wrote the log: every record, in order; at a
  ``CoordinatorLoaded`` marker the state is reset to what the durable records before it give (that is what the new
  leader started from).

Both return ``(Groups, OffsetStore)``. Tests use ``replay_live`` to check that the in-memory state of a shard is
exactly the replay of its log ("state changes only by replaying records").
"""

from __future__ import annotations

from typing import Iterable

from coordinator import records as R
from coordinator.group import Groups, load_groups
from coordinator.offsets import OffsetStore


def replay_durable(entries: Iterable[R.LogEntry]) -> tuple[Groups, OffsetStore]:
    durable = [(e.record, e.timestamp_ms) for e in entries if e.record.DURABLE]
    offsets = OffsetStore()
    for rec, ts in durable:
        offsets.apply(rec, ts)
    return load_groups(durable), offsets


def replay_live(entries: Iterable[R.LogEntry]) -> tuple[Groups, OffsetStore]:
    seen: list[R.LogEntry] = []
    groups, offsets = Groups(), OffsetStore()
    for e in entries:
        if isinstance(e.record, R.CoordinatorLoaded):
            groups, offsets = replay_durable(seen)
        else:
            groups.apply(e.record, e.timestamp_ms)
            offsets.apply(e.record, e.timestamp_ms)
        seen.append(e)
    return groups, offsets
