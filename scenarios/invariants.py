"""Invariants checked while a simulation runs (docs/scenarios.md, "Invariants").

Each check is fed as the run goes -- coordinator log records (:meth:`Checker.on_record`), the consumers'
ownership changes (:meth:`Checker.on_assigned` / :meth:`Checker.on_released`), coordinator loads, settle
deadlines -- and a violation is recorded at once with the virtual time, the seed and the simulator's most recent
events (what led to it).

* ``single-owner-per-generation`` -- no partition is assigned to two members in the same generation: neither in
  what members received (SyncGroup, as applied by each consumer) nor in a ``GroupMetadata`` record.
* ``exclusive-ownership`` -- cooperative groups: when a consumer takes a partition in generation G, no other
  consumer that still holds it is a live member: in the group and either holding it from G or having taken part
  in G's join phase (so the leader knew what it owned). Excluded, because Kafka fences them by generation: a
  member the coordinator removed (a zombie: paused or partitioned), and a static member that did not rejoin G's
  join phase (the leader saw its stale subscription; its commits fail with ILLEGAL_GENERATION and its next
  heartbeat makes it rejoin). Eager groups legitimately overlap across generations the same way; the
  per-generation check applies to them.
* ``generations-increase`` -- per coordinator incarnation of a group's offsets partition, each ``JoinCompleted``
  generation is above the previous one and above the last persisted (``GroupMetadata``) generation; persisted
  generations never decrease, across failovers too. (A new coordinator may reuse a generation the old one reached
  only in memory: Kafka persists the generation at SyncGroup, so that is Kafka's behaviour, not a violation.)
* ``settles`` -- after the last disturbance, within the group's settle bound, the group is Stable, every running
  member is Stable in the group's generation, and every partition of the subscribed topics is owned exactly once.
* ``offsets-monotonic`` -- a group's committed offset of a partition never goes backwards (unless deleted).
* ``offsets-survive-failover`` -- when a coordinator finishes loading, every group's committed offsets equal the
  last ones committed before the failover.
* ``at-least-once`` -- at the end, every record produced to a subscribed partition (from the group's first
  position on it) was processed by some member of every group that still has running members.
* ``state-equals-replay`` -- a coordinator shard's state (groups, members, assignments, committed offsets) equals
  the replay of its offsets-partition log (``GroupCoordinatorService.state_replay_mismatches``): state changes
  only by records, so what a new leader loads after a failover is what the old one had. A replay costs O(log),
  so it is checked at bounded moments: on the shards about to lose their leadership before a broker stops or a
  preferred-leader election, on each shard when its load completes, and on every shard at the end of the run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional

from coordinator import records as R
from protocol.consumer_protocol import decode_assignment


@dataclass
class Violation:
    invariant: str
    time_ms: int
    seed: int
    message: str
    context: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"invariant": self.invariant, "time_ms": self.time_ms, "seed": self.seed, "message": self.message,
                "context": self.context}

    def __str__(self) -> str:
        lines = [f"[{self.invariant}] t={self.time_ms}ms seed={self.seed}: {self.message}"]
        if self.context:
            lines.append("  preceding events:")
            lines += [f"    {c}" for c in self.context]
        return "\n".join(lines)


def assignment_partitions(data: bytes) -> list[tuple[str, int]]:
    if not data:
        return []
    _, a = decode_assignment(data)
    return [(t, p) for t, ps in a.assigned_partitions for p in ps]


class Checker:
    def __init__(self, enabled: Iterable[str], seed: int, recent: Callable[[], list[str]],
                 max_violations: int = 50) -> None:
        self.enabled = frozenset(enabled)
        self.seed = seed
        self._recent = recent
        self.max_violations = max_violations
        self.violations: list[Violation] = []
        self.counts: dict[str, int] = {name: 0 for name in self.enabled}
        self.checked: dict[str, int] = {name: 0 for name in self.enabled}
        # single-owner-per-generation: (group, generation) -> {tp: consumer}
        self._gen_claims: dict[tuple[str, int], dict[tuple[str, int], str]] = {}
        # exclusive-ownership: group -> tp -> {consumer: (member_id, generation of the claim)}
        self._claims: dict[str, dict[tuple[str, int], dict[str, tuple[str, int]]]] = {}
        # members that sent a JoinGroup since the group's last join phase completed, and per completed
        # generation who took part in its join phase (reported its owned partitions to the leader)
        self._joiners: dict[str, set[str]] = {}
        self._participants: dict[tuple[str, int], frozenset[str]] = {}
        # generations
        self._join_gen: dict[tuple[int, str], int] = {}      # (log partition, group) -> last JoinCompleted
        self._durable_gen: dict[str, int] = {}                # group -> last GroupMetadata generation
        # offsets
        self._committed: dict[str, dict[tuple[str, int], int]] = {}
        self._loaded_partitions: set[int] = set()

    # --- reporting ------------------------------------------------------------------------------------------
    def violate(self, name: str, now_ms: int, message: str) -> None:
        self.counts[name] = self.counts.get(name, 0) + 1
        if len(self.violations) < self.max_violations:
            self.violations.append(Violation(name, now_ms, self.seed, message, self._recent()))

    def _on(self, name: str) -> bool:
        if name in self.enabled:
            self.checked[name] += 1
            return True
        return False

    # --- coordinator records ----------------------------------------------------------------------------------
    def on_record(self, e: Any) -> None:
        r = e.record
        t = e.timestamp_ms
        if isinstance(r, (R.MemberJoined, R.MemberRejoined)):
            self._joiners.setdefault(r.group_id, set()).add(r.member_id)
        elif isinstance(r, R.StaticMemberReplaced):
            self._joiners.setdefault(r.group_id, set()).add(r.new_member_id)
        if isinstance(r, R.JoinCompleted):
            self._participants[(r.group_id, r.generation_id)] = frozenset(self._joiners.pop(r.group_id, set()))
            if self._on("generations-increase"):
                key = (e.partition, r.group_id)
                last = self._join_gen.get(key)
                if last is not None and r.generation_id <= last:
                    self.violate("generations-increase", t, f"group {r.group_id}: join completed generation "
                                 f"{r.generation_id} after generation {last} (same coordinator)")
                durable = self._durable_gen.get(r.group_id)
                if durable is not None and r.generation_id <= durable:
                    self.violate("generations-increase", t, f"group {r.group_id}: join completed generation "
                                 f"{r.generation_id}, not above the persisted generation {durable}")
                self._join_gen[key] = r.generation_id
        elif isinstance(r, R.GroupMetadata):
            if self._on("generations-increase"):
                last = self._durable_gen.get(r.group_id)
                if last is not None and r.generation_id < last:
                    self.violate("generations-increase", t, f"group {r.group_id}: persisted generation "
                                 f"{r.generation_id} after persisted generation {last}")
            self._durable_gen[r.group_id] = max(r.generation_id, self._durable_gen.get(r.group_id, -1))
            if r.members and self._on("single-owner-per-generation"):
                seen: dict[tuple[str, int], str] = {}
                for m in r.members:
                    try:
                        parts = assignment_partitions(m.assignment)
                    except Exception as exc:  # noqa: BLE001 - undecodable assignment is itself a finding
                        self.violate("single-owner-per-generation", t,
                                     f"group {r.group_id} generation {r.generation_id}: undecodable assignment of "
                                     f"{m.member_id}: {exc}")
                        continue
                    for tp in parts:
                        other = seen.get(tp)
                        if other is not None and other != m.member_id:
                            self.violate("single-owner-per-generation", t,
                                         f"group {r.group_id} generation {r.generation_id}: {tp[0]}-{tp[1]} "
                                         f"assigned to {other} and {m.member_id} (GroupMetadata record)")
                        seen[tp] = m.member_id
        elif isinstance(r, R.GroupTombstone):
            self._durable_gen.pop(r.group_id, None)
            self._committed.pop(r.group_id, None)
        elif isinstance(r, R.OffsetCommit):
            cur = self._committed.setdefault(r.group_id, {})
            tp = (r.topic, r.partition)
            if self._on("offsets-monotonic"):
                last = cur.get(tp)
                if last is not None and r.offset < last:
                    self.violate("offsets-monotonic", t, f"group {r.group_id}: committed offset of "
                                 f"{r.topic}-{r.partition} went back from {last} to {r.offset}")
            cur[tp] = r.offset
        elif isinstance(r, R.OffsetTombstone):
            self._committed.get(r.group_id, {}).pop((r.topic, r.partition), None)
        elif isinstance(r, R.CoordinatorLoaded):
            for key in [k for k in self._join_gen if k[0] == e.partition]:
                del self._join_gen[key]
            self._loaded_partitions.add(e.partition)

    def on_loaded(self, now_ms: int, partition: int, partition_for: Callable[[str], int],
                  committed: Callable[[str], dict]) -> None:
        """A broker finished loading offsets partition ``partition``: its groups' offsets must have survived."""
        if not self._on("offsets-survive-failover"):
            return
        for group in sorted(self._committed):
            if partition_for(group) != partition:
                continue
            expected = self._committed[group]
            got = {tp: om.offset for tp, om in committed(group).items()}
            if got != expected:
                diff = sorted(tp for tp in set(expected) | set(got) if expected.get(tp) != got.get(tp))[:5]
                self.violate("offsets-survive-failover", now_ms, f"group {group}: after loading partition "
                             f"{partition}, committed offsets differ for {diff}: expected "
                             f"{[expected.get(tp) for tp in diff]}, loaded {[got.get(tp) for tp in diff]}")

    def check_replay(self, now_ms: int, when: str, mismatches: Callable[[], list[str]]) -> None:
        """``state-equals-replay``: ``mismatches()`` (called only when the invariant is checked) lists where the
        coordinator's state differs from the replay of its log; empty: it holds."""
        if not self._on("state-equals-replay"):
            return
        found = mismatches()
        if found:
            self.violate("state-equals-replay", now_ms, f"{when}, the coordinator's state differs from the replay "
                         f"of its log: " + "; ".join(found[:5]) + (f" (+{len(found) - 5} more)" if len(found) > 5
                                                                    else ""))

    # --- consumer ownership ---------------------------------------------------------------------------------
    def on_assigned(self, now_ms: int, group: str, consumer: str, member_id: str, generation: int,
                    partitions: Iterable[tuple[str, int]], cooperative: bool,
                    is_member: Callable[[str], Optional[bool]]) -> None:
        parts = list(partitions)
        if self._on("single-owner-per-generation"):
            claims = self._gen_claims.setdefault((group, generation), {})
            for tp in parts:
                other = claims.get(tp)
                if other is not None and other != consumer:
                    self.violate("single-owner-per-generation", now_ms,
                                 f"group {group} generation {generation}: {tp[0]}-{tp[1]} received by {other} "
                                 f"and {consumer}")
                claims[tp] = consumer
        by_tp = self._claims.setdefault(group, {})
        check = cooperative and self._on("exclusive-ownership")
        participants = self._participants.get((group, generation))
        for tp in parts:
            holders = by_tp.setdefault(tp, {})
            if check:
                for other, (other_id, other_gen) in sorted(holders.items()):
                    if other == consumer or other_gen > generation:
                        continue  # the same consumer, or the new claim is the stale one
                    if is_member(other_id) is not True:
                        continue  # removed by the coordinator: a fenced zombie
                    if other_gen < generation and participants is not None and other_id not in participants:
                        # a (static) member that did not rejoin this generation's join phase: the leader saw
                        # its stale subscription; its generation is fenced (commits fail, heartbeats rejoin)
                        continue
                    self.violate("exclusive-ownership", now_ms,
                                 f"group {group}: {consumer} ({member_id}) took {tp[0]}-{tp[1]} in generation "
                                 f"{generation} while {other} ({other_id}, generation {other_gen}), a member "
                                 f"that took part in this generation's join phase, holds it")
            holders[consumer] = (member_id, generation)

    def holders(self, group: str, tp: tuple[str, int]) -> dict[str, tuple[str, int]]:
        return dict(self._claims.get(group, {}).get(tp, {}))

    def on_released(self, group: str, consumer: str, partitions: Iterable[tuple[str, int]]) -> None:
        by_tp = self._claims.get(group)
        if not by_tp:
            return
        for tp in partitions:
            holders = by_tp.get(tp)
            if holders:
                holders.pop(consumer, None)

