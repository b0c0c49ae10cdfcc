"""Records -> state: what one ``__consumer_offsets`` partition's records build (Kafka's ``GroupCoordinatorShard.replay``
and ``CoordinatorLoaderImpl``).

* :class:`ShardState` -- the groups of both types (classic: ``coordinator.group``; KIP-848 consumer groups:
  ``coordinator.consumer_group``) and the committed offsets of one partition; :meth:`ShardState.apply` folds one
  record into them. A group id names one group of one type (Kafka's single ``groups`` map): a consumer group record
  replaces a *simple* classic group (an offsets holder, ``getOrMaybeCreatePersistedConsumerGroup``) and refuses any
  other classic group; an offset commit creates a simple classic group only when no group of either type exists. It is the only way a shard's state changes: the runtime applies each record a handler appends.
* :func:`load_durable` -- **the** durable load: what a broker that takes over a partition rebuilds from Kafka's own
  records only (a group with members is Stable, else Empty; nothing of a rebalance in flight survives). The shard's
  load (``GroupCoordinatorShard.load``) and :func:`replay_live` both use it.
* :func:`replay_live` -- the live state of the coordinator that wrote a log: every record in order, except that at
  a ``CoordinatorLoaded`` marker the state is what :func:`load_durable` gives for the records before it (that is
  what the new leader started from).
* :func:`state_snapshot` / :func:`snapshot_differences` -- a canonical, comparable form of a state, and where two
  states differ: the invariant "state equals the replay of the log" is ``snapshot_differences(live, replayed)``
  being empty (``GroupCoordinatorShard.replay_mismatches``, ``GroupCoordinatorService.state_replay_mismatches``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable

from coordinator import records as R
from coordinator.consumer_group import REPLAY as CONSUMER_GROUP_REPLAY
from coordinator.consumer_group import ConsumerGroups
from coordinator.errors import IllegalStateError
from coordinator.group import Groups, group_from_metadata
from coordinator.offsets import OffsetStore


class ShardState:
    """The classic groups (``Groups``), the consumer groups (``ConsumerGroups``) and the committed offsets
    (``OffsetStore``) of one offsets partition.

    The containers are the same objects for the shard's whole life (managers keep references to them); a load or
    a rollback replaces their *contents* (:meth:`replace`)."""

    __slots__ = ("groups", "consumer_groups", "offsets")

    def __init__(self, groups: Groups | None = None, offsets: OffsetStore | None = None,
                 consumer_groups: ConsumerGroups | None = None) -> None:
        self.groups = groups if groups is not None else Groups()
        self.consumer_groups = consumer_groups if consumer_groups is not None else ConsumerGroups()
        self.offsets = offsets if offsets is not None else OffsetStore()

    def apply(self, rec: R.Record, ts_ms: int) -> None:
        """Fold one record into the state (``GroupCoordinatorShard.replay``)."""
        entry = CONSUMER_GROUP_REPLAY.get(type(rec))
        if entry is not None:
            self._apply_consumer_group_record(rec, entry[0])
        elif type(rec) is R.OffsetCommit and rec.group_id in self.consumer_groups:
            pass  # OffsetMetadataManager.replay: the group exists (a consumer group): no simple group
        elif type(rec) is R.GroupMetadata and rec.group_id in self.consumer_groups:
            # getOrMaybeCreatePersistedClassicGroup: "Group G is not a classic group" (IllegalStateException).
            raise IllegalStateError(f"Group {rec.group_id} is not a classic group")
        else:
            self.groups.apply(rec, ts_ms)
        self.offsets.apply(rec, ts_ms)

    def _apply_consumer_group_record(self, rec: R.Record, creates: bool) -> None:
        classic = self.groups.get(rec.group_id)
        if classic is not None:
            if not creates:
                return  # a tombstone for a group of another type: nothing of ours to remove
            if not classic.is_simple_group():
                raise IllegalStateError(f"Group {rec.group_id} is not a consumer group")
            # getOrMaybeCreatePersistedConsumerGroup: a simple classic group (no records of its own) is replaced.
            self.consumer_groups.replay(rec)
            del self.groups.groups[rec.group_id]
            return
        self.consumer_groups.replay(rec)

    def replace(self, other: "ShardState") -> None:
        """Take over ``other``'s contents, keeping this state's container objects."""
        self.groups.groups = other.groups.groups
        self.consumer_groups.groups = other.consumer_groups.groups
        self.offsets._offsets = other.offsets._offsets

    def group_type(self, group_id: str) -> str | None:
        """``"classic"``, ``"consumer"`` or None (no such group)."""
        if group_id in self.consumer_groups:
            return "consumer"
        return "classic" if group_id in self.groups else None


def load_durable(entries: Iterable[R.LogEntry]) -> ShardState:
    """Kafka's partition load: replay only the durable records (``GroupMetadata``, ``GroupTombstone``,
    ``OffsetCommit``, ``OffsetTombstone`` and the KIP-848 ``ConsumerGroup*`` records); each classic group ends as its
    last metadata value says (``ClassicGroup.fromRecord``: Stable with members, else Empty), a consumer group is
    exactly what its records say (they hold all of its state), an offset commit of an unknown group creates a
    simple group, and offsets follow their commits and tombstones."""
    state = ShardState()
    groups, offsets = state.groups, state.offsets
    for e in entries:
        rec = e.record
        if not rec.DURABLE:
            continue
        ts = e.timestamp_ms
        if type(rec) in CONSUMER_GROUP_REPLAY:
            state.apply(rec, ts)
            continue
        if isinstance(rec, R.GroupMetadata):
            groups.groups[rec.group_id] = group_from_metadata(rec, ts)
        elif isinstance(rec, R.GroupTombstone):
            groups.groups.pop(rec.group_id, None)
        elif isinstance(rec, R.OffsetCommit) and rec.group_id not in state.consumer_groups:
            groups.ensure_simple_group(rec.group_id, ts)
        offsets.apply(rec, ts)
    return state


def replay_live(entries: Iterable[R.LogEntry]) -> ShardState:
    """The live state of the coordinator that wrote ``entries``: the durable load of what precedes the last
    ``CoordinatorLoaded`` marker, then every record after it."""
    entries = list(entries)
    start = 0
    for i in range(len(entries) - 1, -1, -1):
        if isinstance(entries[i].record, R.CoordinatorLoaded):
            start = i
            break
    state = load_durable(entries[:start]) if start else ShardState()
    for e in entries[start:]:
        state.apply(e.record, e.timestamp_ms)
    return state


def state_snapshot(state: ShardState) -> dict[str, Any]:
    """A canonical, comparable form of ``state``: classic groups by id (every field, members in the group's order;
    caches that are not state left out), consumer groups by id (``ConsumerGroup.snapshot``) and committed offsets by
    group."""
    groups = {}
    for g in sorted(state.groups, key=lambda g: g.group_id):
        d = {f.name: getattr(g, f.name) for f in dataclasses.fields(g) if f.compare and f.name != "members"}
        d["members"] = [tuple((f.name, getattr(m, f.name)) for f in dataclasses.fields(m) if f.compare)
                        for m in g.members.values()]
        groups[g.group_id] = d
    return {"groups": groups, "consumer_groups": state.consumer_groups.snapshot(),
            "offsets": state.offsets.snapshot()}


def snapshot_differences(live: dict[str, Any], replayed: dict[str, Any]) -> list[str]:
    """Where two :func:`state_snapshot` results differ, one line per group field or offset map (empty: equal)."""
    out = []
    for kind, label in (("groups", "group"), ("consumer_groups", "consumer group")):
        for gid in sorted(set(live[kind]) | set(replayed[kind])):
            a, b = live[kind].get(gid), replayed[kind].get(gid)
            if a is None or b is None:
                out.append(f"{label} {gid!r}: {'missing live' if a is None else 'missing in the replay'}")
                continue
            for name in a:
                if a[name] != b[name]:
                    out.append(f"{label} {gid!r} {name}: live {a[name]!r} != replayed {b[name]!r}")
    for gid in sorted(set(live["offsets"]) | set(replayed["offsets"])):
        if live["offsets"].get(gid) != replayed["offsets"].get(gid):
            out.append(f"offsets of {gid!r}: live {live['offsets'].get(gid)!r} != replayed "
                       f"{replayed['offsets'].get(gid)!r}")
    return out
