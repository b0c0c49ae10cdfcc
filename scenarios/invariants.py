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

Consumer-protocol groups (KIP-848) have their own invariants, read from the coordinator's ``ConsumerGroup*``
records (a model of each group rebuilt from them here, independent of the coordinator's in-memory state), from
the ConsumerGroupHeartbeat and OffsetCommit requests the brokers answered, and from the members' callbacks:

* ``member-epochs-increase`` -- a member's epoch (``ConsumerGroupCurrentMemberAssignment``) never goes backwards
  while the member exists (a fenced member that rejoins is a new member: its records were tombstoned); the
  static-leave epoch -2 is the one exception (``GroupMetadataManager.consumerGroupStaticMemberGroupLeave``).
* ``epochs-bounded`` -- after each coordinator operation, every member's epoch <= the target assignment epoch <=
  the group epoch (``ConsumerGroup``'s epochs; the member is reconciled *towards* the target, which is computed
  for a group epoch).
* ``one-owner-at-a-time`` -- by partition epochs: a record never gives a member a partition another member still
  holds (assigned or pending revocation: Kafka's ``currentPartitionEpoch`` is not -1); and by the members' own
  callbacks: when a consumer's ``onPartitionsAssigned`` takes a partition, no other consumer holds it (since its own
  ``onPartitionsAssigned``, no ``onPartitionsRevoked`` / ``onPartitionsLost``) that could still commit it -- the
  coordinator would accept its commit of that partition at the epoch it has (:meth:`Checker.can_commit`); a zombie
  it would refuse is fenced and does not count.
* ``revocation-acknowledged`` -- a partition goes to a new owner only after its previous owner acknowledged the
  revocation: the previous owner's last accepted heartbeat no longer listed it in ``TopicPartitions``, or it is
  no longer a member (left, fenced). Kafka's ``CurrentAssignmentBuilder`` keeps it in ``UNREVOKED_PARTITIONS``
  until then.
* ``commits-by-epoch`` -- an OffsetCommit of a consumer-protocol member is accepted only under Kafka's member-epoch
  rule (``ConsumerGroup.validateOffsetCommit``): the member exists and its epoch is the received one; or, with
  ``commit_rule = "assignment-epoch"`` (Kafka 4.3+/4.4, KIP-1251, the default), an older epoch is accepted for a
  partition the member has assigned or pending revocation at an assignment epoch not newer than the received
  epoch. ``commit_rule = "member-epoch"`` checks the strict rule of Kafka 4.0-4.2.
* ``join-heartbeats-full`` -- every ConsumerGroupHeartbeat a consumer-protocol member sends with epoch 0 (a join or
  a rejoin: after fencing, after leaving on ``max.poll.interval.ms``) is a full request, as the Java client's
  ``HeartbeatState`` builds it while JOINING: RebalanceTimeoutMs, a subscription (SubscribedTopicNames or
  SubscribedTopicRegex), TopicPartitions present and empty, and the member's ``group.remote.assignor`` if it has
  one. The coordinator refuses the first three missing (``throwIfConsumerGroupHeartbeatRequestIsInvalid``:
  INVALID_REQUEST, fatal to the client) -- librdkafka #5541's rejoin after a poll timeout was such a request.
  Checked on the client side, as the member sends it.
* ``heartbeats-resume`` -- a running consumer-protocol member that is out of the group -- fenced (a heartbeat
  answered FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID) or left because its poll timer expired -- sends its rejoin
  heartbeat (epoch 0) within ``retry.backoff.max.ms`` of its application's next ``poll`` (where Kafka's client
  releases the partitions, ``onPartitionsLost``, and transitions to JOINING, its backoff reset); one whose heartbeat
  was answered NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE heartbeats again within ``retry.backoff.max.ms`` of
  rediscovering its coordinator. While the process is paused or its coordinator is unknown the deadline moves on (one more window after).
  The members of KAFKA-16215 (fenced on a delayed revocation) and KAFKA-16178 (NOT_COORDINATOR) never did: the
  error response left the heartbeat marked in flight. Fed by the simulator's consumer processes
  (:mod:`scenarios.consumers`).
* convergence is ``settles``: for a consumer group, the coordinator's group is Stable (target assignment epoch =
  group epoch, every member reconciled to it) and each running member holds by its callbacks exactly its target
  assignment (:func:`consumer_group_settle_problems`); and ``target-up-to-date`` (checked there too, in
  ``scenarios/settle.py``): the target it converged to is what the group's assignor gives for its members now.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional

from coordinator import records as R
from protocol.consumer_protocol import decode_assignment
from protocol.uuids import uuid_to_string

#: the consumer-protocol invariants (the rest apply to classic groups, or to both)
CONSUMER_INVARIANTS = ("member-epochs-increase", "epochs-bounded", "one-owner-at-a-time", "revocation-acknowledged",
                       "commits-by-epoch", "target-up-to-date")
#: consumer-protocol invariants of the members' own requests (fed by the simulator's consumer processes)
CLIENT_INVARIANTS = ("join-heartbeats-full", "heartbeats-resume")
#: ConsumerGroupHeartbeat and OffsetCommit API keys
CGH_API = 68
OFFSET_COMMIT_API = 8
#: ConsumerGroupHeartbeatRequest.LEAVE_GROUP_STATIC_MEMBER_EPOCH
STATIC_LEAVE_EPOCH = -2


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


class _CgMember:
    """A consumer-group member as its records say: epoch, assigned partitions (-> assignment epoch), pending
    revocation, whether it uses the classic protocol."""

    __slots__ = ("epoch", "assigned", "pending", "classic", "reported")

    def __init__(self) -> None:
        self.epoch: Optional[int] = None
        self.assigned: dict[tuple[str, int], int] = {}
        self.pending: dict[tuple[str, int], int] = {}
        self.classic = False
        #: the partitions its last accepted ConsumerGroupHeartbeat said it owns (None: it never said)
        self.reported: Optional[frozenset] = None


class _Cg:
    """A consumer group as its records say (``ConsumerGroup*`` records only), with two indexes so that a check
    costs no walk over the members: who holds each partition (assigned or pending revocation: Kafka's partition
    epochs) and whose last heartbeat reported owning it."""

    __slots__ = ("epoch", "assignment_epoch", "members", "holders", "reporters", "touched")

    def __init__(self) -> None:
        self.epoch = 1             # KAFKA-20268: a new group starts at epoch 1 with an empty target at epoch 1
        self.assignment_epoch = 1
        self.members: dict[str, _CgMember] = {}
        self.holders: dict[tuple[str, int], set[str]] = {}
        self.reporters: dict[tuple[str, int], set[str]] = {}
        self.touched: set[str] = set()  # members whose epoch an operation changed (epochs-bounded)

    def set_holdings(self, mid: str, m: _CgMember, assigned: dict, pending: dict) -> None:
        _move(self.holders, mid, set(m.assigned) | set(m.pending), set(assigned) | set(pending))
        m.assigned = assigned
        m.pending = pending

    def set_report(self, mid: str, m: _CgMember, owned: Optional[frozenset]) -> None:
        _move(self.reporters, mid, m.reported or (), owned or ())
        m.reported = owned

    def remove(self, mid: str) -> None:
        m = self.members.pop(mid, None)
        if m is not None:
            self.set_holdings(mid, m, {}, {})
            self.set_report(mid, m, None)


def _move(index: dict, mid: str, old: Iterable, new: Iterable) -> None:
    old, new = set(old), set(new)
    for tp in old - new:
        s = index.get(tp)
        if s is not None:
            s.discard(mid)
            if not s:
                del index[tp]
    for tp in new - old:
        index.setdefault(tp, set()).add(mid)


def _epochs(tps: Iterable[R.TopicPartitionEpochs], default: int) -> dict[tuple[str, int], int]:
    out = {}
    for t in tps:
        eps = t.assignment_epochs
        for i, p in enumerate(t.partitions):
            out[(t.topic_id, p)] = eps[i] if eps is not None and i < len(eps) else default
    return out


_CG_RECORDS = (R.ConsumerGroupMetadata, R.ConsumerGroupMetadataTombstone, R.ConsumerGroupMemberMetadata,
               R.ConsumerGroupMemberMetadataTombstone, R.ConsumerGroupTargetAssignmentMetadata,
               R.ConsumerGroupTargetAssignmentMetadataTombstone, R.ConsumerGroupCurrentMemberAssignment,
               R.ConsumerGroupCurrentMemberAssignmentTombstone)


def assignment_partitions(data: bytes) -> list[tuple[str, int]]:
    if not data:
        return []
    _, a = decode_assignment(data)
    return [(t, p) for t, ps in a.assigned_partitions for p in ps]


class Checker:
    def __init__(self, enabled: Iterable[str], seed: int, recent: Callable[[], list[str]],
                 max_violations: int = 50, commit_rule: str = "assignment-epoch") -> None:
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
        # consumer groups (KIP-848): the model of each group from its records, the groups an operation touched
        # (epochs-bounded is checked at the end of each operation), the requests awaiting their answer
        self.commit_rule = commit_rule
        self._cg: dict[str, _Cg] = {}
        self._cg_touched: set[str] = set()
        self.cg_requests: dict[int, tuple] = {}
        #: topic id -> topic name, for messages (set by the simulation)
        self.topic_names: dict[str, str] = {}
        # one-owner-at-a-time by callbacks: group -> tp -> {consumer: member id}
        self._cg_claims: dict[str, dict[tuple[str, int], dict[str, str]]] = {}

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
        if type(r) in _CG_RECORDS:
            self._on_cg_record(r, t)
            return
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
            # (committed offsets are not the group's metadata: they go only by their own tombstones, as the
            # coordinator loads them -- a classic group converted to a consumer group keeps them)
            self._durable_gen.pop(r.group_id, None)
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

    def _tp(self, tp: tuple[str, int]) -> str:
        """A partition named by topic id (as the records name it), shown by topic name."""
        return f"{self.topic_names.get(tp[0], tp[0])}-{tp[1]}"

    # --- consumer groups (KIP-848) ------------------------------------------------------------------------
    def _on_cg_record(self, r: Any, t: int) -> None:
        gid = r.group_id
        if isinstance(r, R.ConsumerGroupMetadataTombstone):
            self._cg.pop(gid, None)  # deleted, or converted to a classic group (downgrade)
            self._cg_touched.discard(gid)
            return
        g = self._cg.get(gid)
        if g is None:
            g = self._cg[gid] = _Cg()
        self._cg_touched.add(gid)
        if isinstance(r, R.ConsumerGroupMetadata):
            g.epoch = r.epoch
        elif isinstance(r, R.ConsumerGroupTargetAssignmentMetadata):
            if r.assignment_epoch < g.assignment_epoch:
                g.touched.update(g.members)  # (every member's bound moved down)
            g.assignment_epoch = r.assignment_epoch
        elif isinstance(r, R.ConsumerGroupMemberMetadata):
            m = g.members.get(r.member_id)
            if m is None:
                m = g.members[r.member_id] = _CgMember()
            m.classic = r.classic_member_metadata is not None
        elif isinstance(r, R.ConsumerGroupMemberMetadataTombstone):
            g.remove(r.member_id)
        elif isinstance(r, R.ConsumerGroupCurrentMemberAssignmentTombstone):
            m = g.members.get(r.member_id)
            if m is not None:
                m.epoch = None
                g.set_holdings(r.member_id, m, {}, {})
        elif isinstance(r, R.ConsumerGroupCurrentMemberAssignment):
            m = g.members.get(r.member_id)
            if m is None:
                m = g.members[r.member_id] = _CgMember()
            new_epoch = r.member_epoch
            if self._on("member-epochs-increase") and m.epoch is not None and new_epoch != STATIC_LEAVE_EPOCH \
                    and m.epoch != STATIC_LEAVE_EPOCH and new_epoch < m.epoch:
                self.violate("member-epochs-increase", t, f"group {gid}: member {r.member_id}'s epoch went back "
                             f"from {m.epoch} to {new_epoch}")
            assigned = _epochs(r.assigned_partitions, new_epoch)
            pending = _epochs(r.partitions_pending_revocation, new_epoch)
            new = [tp for tp in assigned if tp not in m.assigned and tp not in m.pending]
            if new:
                one = self._on("one-owner-at-a-time")
                ack = self._on("revocation-acknowledged")
                me = r.member_id
                for tp in sorted(new):
                    others = sorted(g.holders.get(tp, set()) - {me})
                    if others and one:
                        self.violate("one-owner-at-a-time", t, f"group {gid}: {self._tp(tp)} given to {me} at "
                                     f"epoch {new_epoch} while {others[0]} still holds it (its partition epoch is "
                                     f"set)")
                    if ack:
                        for mid in sorted(g.reporters.get(tp, set()) - {me}):
                            self.violate("revocation-acknowledged", t, f"group {gid}: {self._tp(tp)} given to "
                                         f"{me} at epoch {new_epoch} before {mid} acknowledged its revocation (its "
                                         f"last heartbeat still owned it)")
            m.epoch = new_epoch
            g.touched.add(r.member_id)
            g.set_holdings(r.member_id, m, assigned, pending)

    def end_operation(self, now_ms: int) -> None:
        """The coordinator finished an operation (an ``Output``): ``epochs-bounded`` on the groups it touched."""
        touched = self._cg_touched
        if not touched:
            return
        self._cg_touched = set()
        if "epochs-bounded" not in self.enabled:
            return
        for gid in sorted(touched):
            g = self._cg.get(gid)
            if g is None:
                continue
            self.checked["epochs-bounded"] += 1
            if g.assignment_epoch > g.epoch:
                self.violate("epochs-bounded", now_ms, f"group {gid}: target assignment epoch {g.assignment_epoch} "
                             f"is above the group epoch {g.epoch}")
            changed, g.touched = g.touched, set()
            for mid in sorted(changed):
                m = g.members.get(mid)
                if m is not None and m.epoch is not None and m.epoch > g.assignment_epoch:
                    self.violate("epochs-bounded", now_ms, f"group {gid}: member {mid}'s epoch {m.epoch} is above "
                                 f"the target assignment epoch {g.assignment_epoch}")

    def on_request(self, rid: int, api_key: int, body: Any) -> None:
        """A broker is about to handle a request (before the coordinator sees it)."""
        if api_key == CGH_API:
            g = self._cg.get(body.group_id)
            tps = body.topic_partitions
            owned = None if tps is None else frozenset(
                (uuid_to_string(t.topic_id), p) for t in tps for p in t.partitions)
            if body.member_epoch == 0:
                owned = frozenset()  # a (re)join owns nothing (TopicPartitions must be empty)
            self.cg_requests[rid] = (CGH_API, body.group_id, body.member_id, owned, g is not None)
        elif api_key == OFFSET_COMMIT_API and "commits-by-epoch" in self.enabled:
            g = self._cg.get(body.group_id)
            if g is None:
                return
            m = g.members.get(body.member_id)
            self.cg_requests[rid] = (OFFSET_COMMIT_API, body.group_id, body.member_id,
                                      body.generation_id_or_member_epoch, m and (m.epoch, dict(m.assigned),
                                                                                  dict(m.pending)),
                                      bool(g.members))

    def on_response(self, rid: int, resp: Any, now_ms: int, topic_id: Callable[[str], str]) -> None:
        """The broker answers request ``rid``."""
        req = self.cg_requests.pop(rid, None)
        if req is None:
            return
        if req[0] == CGH_API:
            _, gid, member_id, owned, _known = req
            if resp.error_code != 0 or owned is None:
                return
            g = self._cg.get(gid)
            mid = resp.member_id or member_id
            m = g.members.get(mid) if g is not None else None
            if m is not None:
                g.set_report(mid, m, owned)
            return
        _, gid, member_id, epoch, snap, has_members = req
        self.checked["commits-by-epoch"] += 1
        for t in resp.topics:
            for p in t.partitions:
                if p.error_code != 0:
                    continue
                why = self._commit_refusal(epoch, snap, has_members, (topic_id(t.name), p.partition_index))
                if why is not None:
                    self.violate("commits-by-epoch", now_ms, f"group {gid}: commit of {t.name}-{p.partition_index} "
                                 f"by {member_id or '(no member)'} at epoch {epoch} accepted, but {why}")

    def _commit_refusal(self, epoch: int, snap: Any, has_members: bool, tp: tuple[str, int],
                        rule: Optional[str] = None) -> Optional[str]:
        """Why Kafka's rule (``rule``, default the scenario's ``commit_rule``) refuses this partition's commit
        (None: it accepts it). A classic member inside a consumer group is held to the same rule, with its
        generation as the epoch (Kafka answers ILLEGAL_GENERATION instead of STALE_MEMBER_EPOCH)."""
        if snap is None:
            if epoch < 0 and not has_members:
                return None  # an admin commit to a group without members
            return "the member is not in the group"
        member_epoch, assigned, pending = snap
        if epoch == member_epoch:
            return None
        if epoch > member_epoch:
            return f"the member's epoch is {member_epoch}"
        if (rule or self.commit_rule) != "assignment-epoch":
            return f"the member's epoch is {member_epoch} (commit_rule = member-epoch)"
        a = assigned.get(tp, pending.get(tp))
        if a is None:
            return f"the partition is neither assigned to nor pending revocation from it (member epoch {member_epoch})"
        if epoch < a:
            return f"the partition was assigned at epoch {a} (KIP-1251)"
        return None

    def on_cg_assigned(self, now_ms: int, group: str, consumer: str, member_id: str,
                       partitions: Iterable[tuple[str, int]],
                       owns: Callable[[str, str, tuple[str, int]], Optional[bool]], check: bool = True) -> None:
        """A member's ``onPartitionsAssigned`` in a consumer group (``one-owner-at-a-time`` by callbacks). Classic
        members report theirs too, unchecked while their group is a classic group, so that across a migration a
        partition a classic member still holds is seen by the consumer-protocol member that takes it.
        ``owns(consumer, member id, partition)``: whether that holder still owns the partition for the coordinator
        -- it could commit it now (see :meth:`can_commit`); a holder that could not is a fenced zombie."""
        by_tp = self._cg_claims.setdefault(group, {})
        check = check and self._on("one-owner-at-a-time")
        for tp in partitions:
            holders = by_tp.setdefault(tp, {})
            if check:
                for other, other_id in sorted(holders.items()):
                    if other != consumer and owns(other, other_id, tp) is True:
                        self.violate("one-owner-at-a-time", now_ms, f"group {group}: {consumer} ({member_id}) was "
                                     f"given {tp[0]}-{tp[1]} while {other} ({other_id}), a member that could still "
                                     f"commit it, holds it (no onPartitionsRevoked/onPartitionsLost yet)")
            holders[consumer] = member_id

    # --- a consumer-protocol member's own heartbeats (client side) ------------------------------------------------
    def on_join_heartbeat(self, now_ms: int, group: str, consumer: str, body: Any,
                          remote_assignor: Optional[str]) -> None:
        """``join-heartbeats-full``: a member sends a ConsumerGroupHeartbeat with epoch 0 (``body``)."""
        if not self._on("join-heartbeats-full"):
            return
        missing = []
        if body.rebalance_timeout_ms is None or body.rebalance_timeout_ms < 0:
            missing.append("RebalanceTimeoutMs")
        if body.subscribed_topic_names is None and getattr(body, "subscribed_topic_regex", None) is None:
            missing.append("SubscribedTopicNames/SubscribedTopicRegex")
        if body.topic_partitions is None:
            missing.append("TopicPartitions (must be present and empty)")
        elif any(t.partitions for t in body.topic_partitions):
            missing.append("an empty TopicPartitions (it lists owned partitions)")
        if remote_assignor is not None and body.server_assignor is None:
            missing.append(f"ServerAssignor ({remote_assignor})")
        if missing:
            self.violate("join-heartbeats-full", now_ms, f"group {group}: {consumer} ({body.member_id}) sent a "
                         f"ConsumerGroupHeartbeat with epoch 0 that is not a full request: no " + ", no ".join(missing))

    def heartbeat_owed(self, now_ms: int, group: str, consumer: str, why: str, since_ms: int,
                       able_ms: Optional[int], rejoin: bool, overdue: bool) -> None:
        """``heartbeats-resume``: a member's episode of owing a heartbeat ends -- it sent one (``overdue`` False), or
        the simulator found it still owing it at its deadline (see the module docstring). ``able_ms``: when it could
        have sent it (its application's poll, its coordinator found)."""
        if not self._on("heartbeats-resume") or not overdue:
            return
        what = "no rejoin heartbeat (epoch 0)" if rejoin else "no ConsumerGroupHeartbeat"
        self.violate("heartbeats-resume", now_ms, f"group {group}: {consumer} was {why} at {since_ms} ms and has sent "
                     f"{what} by {now_ms} ms, {now_ms - able_ms} ms after it could "
                     f"({'its application polled' if rejoin else 'it found its coordinator'} at {able_ms} ms)")

    def can_commit(self, group: str, member_id: str, epoch: Optional[int], tp: tuple[str, int]) -> bool:
        """Whether the coordinator would accept, now, a commit of partition ``tp`` (topic name, partition) by
        ``member_id`` at ``epoch`` (its member epoch, or a classic member's generation): Kafka 4.4's rule
        (``ConsumerGroup.validateOffsetCommit``, per-partition assignment epochs) on the group as its records say.
        A member that could not is fenced for that partition (a zombie), however long it holds on."""
        g = self._cg.get(group)
        m = g.members.get(member_id) if g is not None else None
        if m is None or m.epoch is None or epoch is None:
            return False
        tid = next((i for i, n in self.topic_names.items() if n == tp[0]), tp[0])
        return self._commit_refusal(epoch, (m.epoch, m.assigned, m.pending), True, (tid, tp[1]),
                                    "assignment-epoch") is None

    def on_cg_released(self, group: str, consumer: str, partitions: Iterable[tuple[str, int]]) -> None:
        by_tp = self._cg_claims.get(group)
        if not by_tp:
            return
        for tp in partitions:
            holders = by_tp.get(tp)
            if holders:
                holders.pop(consumer, None)




def consumer_group_settle_problems(g: Any, owned_by_member: dict[str, set], topic_ids: dict[str, str]) -> list[str]:
    """Why consumer group ``g`` (the coordinator's ``ConsumerGroup``) has not converged, given what each running
    member holds by its callbacks (member id -> {(topic, partition)}): the group must be Stable -- the target
    assignment computed for the group epoch and every member reconciled to it (``ConsumerGroup``'s state rule) --
    and each running member must hold exactly its target assignment. ``topic_ids``: topic name -> topic id."""
    problems = []
    if g is None:
        return ["the coordinator does not know the group (unavailable or loading)"]
    if str(g.state) != "Stable":
        problems.append(f"group state is {g.state} (group epoch {g.group_epoch}, target assignment epoch "
                        f"{g.assignment_epoch})")
    names = {v: k for k, v in topic_ids.items()}
    for mid, owned in sorted(owned_by_member.items()):
        m = g.members.get(mid)
        if m is None:
            problems.append(f"{mid} is not a member")
            continue
        if m.member_epoch != g.assignment_epoch:
            problems.append(f"{mid} is at epoch {m.member_epoch}, the target at {g.assignment_epoch}")
        target = g.target_assignment.get(mid)
        want = set() if target is None else {(names.get(t, t), p) for t, ps in target.as_sets().items() for p in ps}
        if want != set(owned):
            problems.append(f"{mid} holds {sorted(owned)}, its target is {sorted(want)}")
    return problems
