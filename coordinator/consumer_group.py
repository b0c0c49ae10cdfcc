"""KIP-848's consumer group as replayed state: Kafka 4.4's ``ConsumerGroup`` and ``ConsumerGroupMember`` (sans-IO).

Mirrors ``group-coordinator/src/main/java/org/apache/kafka/coordinator/group/modern/consumer/ConsumerGroup.java``,
``ConsumerGroupMember.java``, ``modern/ModernGroup.java``, ``modern/ModernGroupMember.java``,
``modern/MemberState.java``, ``modern/Assignment.java``, ``modern/SubscriptionCount.java`` and the replay methods
of ``GroupMetadataManager`` for the ``ConsumerGroup*`` records -- Apache Kafka 4.4 as carried by
confluentinc/kafka branch ``4.4``, commit 8d3916cfe15f13a2d878c79d302ba2d63172f0af.

Rules this file lives by
------------------------
* Everything that *is* consumer-group state lives here; it changes **only** by replaying records
  (``coordinator.records``, the ``ConsumerGroup*`` types): :meth:`ConsumerGroups.replay` for a partition's
  groups, :meth:`ConsumerGroup.replay` for one group. :data:`REPLAY` -- record type -> (creates the group?,
  handler) -- is the mechanism, not a description of it.
* Nothing here reads a clock, schedules a timer, computes an assignment or answers a request: the heartbeat
  handler decides, emits records (the helpers at the bottom build them as Kafka's
  ``GroupCoordinatorRecordHelpers`` does), and the runtime replays them. The reconciliation
  (``coordinator.reconciliation``) and the target assignment (``coordinator.target_assignment``) are pure
  functions of this state.
* A record that cannot be applied raises :class:`~coordinator.errors.IllegalStateError` (Kafka's
  ``IllegalStateException``) *before* anything changes, so a failed replay leaves the group as it was.

Theory of operation
-------------------
A consumer group is created by the first record naming it. Its **group epoch** (``ConsumerGroupMetadata``) is
bumped whenever the target assignment must be recomputed (membership, subscriptions, subscribed topic metadata,
preferred assignor); the **target assignment** (one ``ConsumerGroupTargetAssignmentMember`` per member, then
``ConsumerGroupTargetAssignmentMetadata`` with its epoch) is what the assignor computed for an epoch; each
member's **current assignment** (``ConsumerGroupCurrentMemberAssignment``) is where its reconciliation stands:
its member epoch, previous epoch, state, partitions assigned (each with the epoch it was assigned at, 4.4) and
partitions it still has to revoke. Groups start at group epoch 1 with target assignment epoch 1 (an empty
assignment; KAFKA-20268, 4.3+), members at epoch 0.

Replaying a member record maintains the derived indexes Kafka keeps: subscribed topic name counts (by name and
by resolved regex), regex subscriber counts, server assignor counts, static members (instance id -> member id),
the inverted target assignment (partition -> member) and the **current partition epochs** (partition -> epoch of
the member owning it, assigned or pending revocation; a partition is free when absent). A member may only take a
partition at an epoch greater than its current owner's; that is what makes a partition *unreleased* for its next
owner until the previous one has revoked it.

The **group state** is derived after every record (``ConsumerGroup.maybeUpdateGroupState``)::

    no members                                   -> EMPTY
    group epoch > target assignment epoch        -> ASSIGNING
    a member not (STABLE at the assignment epoch) -> RECONCILING
    otherwise                                    -> STABLE
    (DEAD: only the detached object of a group whose ConsumerGroupMetadataTombstone was replayed)

Replay rules (``GroupMetadataManager.replay``), per record::

    ConsumerGroupMetadata                    creates the group; sets group epoch and metadata hash
    ConsumerGroupMetadataTombstone           needs no members, no target assignment and the target assignment
                                             metadata tombstoned (epoch -1); deletes the group
    ConsumerGroupPartitionMetadataTombstone  nothing to undo (the pre-4.1 value is not modelled)
    ConsumerGroupMemberMetadata              creates the group and the member; sets its subscription/metadata
    ConsumerGroupMemberMetadataTombstone     needs the member's current assignment tombstoned (epoch -1) and its
                                             target assignment gone; removes the member
    ConsumerGroupTargetAssignmentMember      creates the group; sets the member's target (and the inverted index)
    ConsumerGroupTargetAssignmentMemberTombstone   removes it
    ConsumerGroupTargetAssignmentMetadata    creates the group; sets assignment epoch and timestamp
    ConsumerGroupTargetAssignmentMetadataTombstone needs the target assignment empty; epoch -1, timestamp 0
    ConsumerGroupCurrentMemberAssignment     creates the group and the member; sets epochs, state, partitions
    ConsumerGroupCurrentMemberAssignmentTombstone  member epoch and previous epoch -1, owns nothing
    ConsumerGroupRegularExpression           creates the group; sets the regex's resolution (and topic counts)
    ConsumerGroupRegularExpressionTombstone  removes it

Tombstones for an unknown group or member are ignored, as in Kafka. Whether a group id belongs to a *classic*
group is the runtime's business (Kafka replaces a simple classic group and refuses any other).

Orders that decide results
--------------------------
Members iterate in Kafka's ``TimelineHashMap`` order (``coordinator.timeline``): the assignor gets them in it and
ConsumerGroupDescribe lists them in it. The preferred server assignor is the first most-voted name in
``TimelineHashMap`` order (:meth:`ConsumerGroup.preferred_server_assignor`) or, for a member update not yet
replayed, in the order of the ``java.util.HashMap`` copy Kafka counts in
(:meth:`ConsumerGroup.compute_preferred_server_assignor`). Record field lists (subscribed topic names, current
assignment partitions) are written sorted; Kafka writes names sorted and partitions in ``HashMap`` order, which
carries no meaning.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum, IntEnum
from typing import Callable

from protocol.errors import ErrorCode
from protocol.hashing import java_string_hash
from protocol.messages import ConsumerGroupDescribeResponse
from protocol.uuids import uuid_from_string

from coordinator import records as R
from coordinator.errors import ApiError, IllegalStateError
from coordinator.timeline import TimelineHashMap

# ConsumerGroupHeartbeatRequest's special member epochs.
JOIN_GROUP_MEMBER_EPOCH = 0
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
# JoinGroupRequest's "no generation / no member id" (TxnOffsetCommit without group membership).
UNKNOWN_GENERATION_ID = -1
UNKNOWN_MEMBER_ID = ""

#: topic id -> partition -> the epoch the partition was assigned to the member at (4.4).
PartitionEpochs = dict[str, dict[int, int]]


class MemberState(IntEnum):
    """``modern.MemberState``; the value is the byte stored in ``ConsumerGroupCurrentMemberAssignment.state``."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127

    @classmethod
    def from_value(cls, value: int) -> "MemberState":
        """``MemberState.fromValue``: a byte this version does not know is UNKNOWN (a coordinator downgrade)."""
        state = _MEMBER_STATES.get(value)  # (every replayed current assignment: a lookup, not Enum's call)
        if state is not None:
            return state
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN


_MEMBER_STATES: dict[int, MemberState] = {m.value: m for m in MemberState}


class ConsumerGroupState(str, Enum):
    """``ConsumerGroup.ConsumerGroupState``; the value is what ConsumerGroupDescribe and ListGroups report."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value

    def lower(self) -> str:
        """``toLowerCaseString`` (ListGroups' states filter compares lower-cased)."""
        return self.value.lower()


class SubscriptionType(str, Enum):
    """``api.assignor.SubscriptionType``; the value is what ``coordinator.assignors.assign_target`` takes."""

    HOMOGENEOUS = "homogeneous"
    HETEROGENEOUS = "heterogeneous"


@dataclass(frozen=True)
class SubscriptionCount:
    """``modern.SubscriptionCount``: how many members subscribe to a topic by name, how many resolved regexes
    match it."""

    by_name_count: int = 0
    by_regex_count: int = 0

    # The Map.compute helpers: None removes the entry.
    @staticmethod
    def inc_name(c: "SubscriptionCount | None") -> "SubscriptionCount":
        return SubscriptionCount(1, 0) if c is None else SubscriptionCount(c.by_name_count + 1, c.by_regex_count)

    @staticmethod
    def dec_name(c: "SubscriptionCount | None") -> "SubscriptionCount | None":
        if c is None or (c.by_name_count == 1 and c.by_regex_count == 0):
            return None
        return SubscriptionCount(c.by_name_count - 1, c.by_regex_count)

    @staticmethod
    def inc_regex(c: "SubscriptionCount | None") -> "SubscriptionCount":
        return SubscriptionCount(0, 1) if c is None else SubscriptionCount(c.by_name_count, c.by_regex_count + 1)

    @staticmethod
    def dec_regex(c: "SubscriptionCount | None") -> "SubscriptionCount | None":
        if c is None or (c.by_regex_count == 1 and c.by_name_count == 0):
            return None
        return SubscriptionCount(c.by_name_count, c.by_regex_count - 1)


@dataclass(frozen=True)
class ResolvedRegularExpression:
    """``modern.consumer.ResolvedRegularExpression``: the topics a regex matched, at which metadata image version,
    when."""

    topics: frozenset[str]
    version: int
    timestamp_ms: int


@dataclass(frozen=True, eq=False)
class Assignment:
    """``modern.Assignment``: a member's *target* partitions, topic id -> partitions.

    Equal when the topic -> partition *sets* are equal (Kafka compares ``Map<Uuid, Set<Integer>>``); the order of
    the record it was read from is kept, because the server assignors rebuild their input from it."""

    partitions: Mapping[str, tuple[int, ...]] = field(default_factory=dict)

    def as_sets(self) -> dict[str, frozenset[int]]:
        return {t: frozenset(ps) for t, ps in self.partitions.items()}

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Assignment):
            return False
        # the same partition lists are the same sets (the common case: a target recomputed unchanged)
        return self.partitions == other.partitions or self.as_sets() == other.as_sets()

    def __hash__(self) -> int:
        return hash(frozenset(self.as_sets().items()))

    def __repr__(self) -> str:
        return f"Assignment({dict(self.partitions)!r})"

    @classmethod
    def of(cls, partitions: Mapping[str, Iterable[int]]) -> "Assignment":
        return cls({t: tuple(ps) for t, ps in partitions.items()})

    @classmethod
    def from_record(cls, rec: R.ConsumerGroupTargetAssignmentMember) -> "Assignment":
        """``Assignment.fromRecord`` (``Collectors.toMap``: a topic listed twice is an ``IllegalStateException``)."""
        out: dict[str, tuple[int, ...]] = {}
        for tp in rec.topic_partitions:
            if tp.topic_id in out:
                raise IllegalStateError(f"Duplicate key {tp.topic_id} in the target assignment of member "
                                        f"{rec.member_id} of group {rec.group_id}")
            out[tp.topic_id] = tuple(tp.partitions)
        return cls(out)


EMPTY_ASSIGNMENT = Assignment()


def java_string_key(s: str) -> bytes:
    """A sort key giving Java's ``String.compareTo`` order (UTF-16 code units), as ``Collections.sort`` uses."""
    return s.encode("utf-16-be", "surrogatepass")


# --- the member ----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ConsumerGroupMember:
    """``ConsumerGroupMember`` (immutable; the defaults are ``ConsumerGroupMember.Builder``'s).

    Note Kafka's defaults: previous epoch -1, regex ``""`` (not null), client id and host ``""``."""

    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset[str] = frozenset()
    subscribed_topic_regex: str | None = ""
    server_assignor_name: str | None = None
    assigned_partitions: PartitionEpochs = field(default_factory=dict)
    partitions_pending_revocation: PartitionEpochs = field(default_factory=dict)
    classic_member_metadata: R.ClassicMemberMetadata | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.subscribed_topic_names, frozenset):  # Builder.setSubscribedTopicNames: a set
            object.__setattr__(self, "subscribed_topic_names", frozenset(self.subscribed_topic_names))

    # --- ModernGroupMember / ConsumerGroupMember predicates --------------------------------------------------

    def is_reconciled_to(self, target_assignment_epoch: int) -> bool:
        """``isReconciledTo``: STABLE and at that epoch."""
        return self.state == MemberState.STABLE and self.member_epoch == target_assignment_epoch

    @property
    def use_classic_protocol(self) -> bool:
        return self.classic_member_metadata is not None

    @property
    def supported_classic_protocols(self) -> tuple[tuple[str, bytes], ...] | None:
        return self.classic_member_metadata.supported_protocols if self.classic_member_metadata else None

    @property
    def classic_protocol_session_timeout_ms(self) -> int | None:
        return self.classic_member_metadata.session_timeout_ms if self.classic_member_metadata else None

    def assignment_epoch(self, topic_id: str, partition: int) -> int | None:
        """The epoch an assigned partition was assigned at, or None."""
        return self.assigned_partitions.get(topic_id, {}).get(partition)

    def pending_revocation_epoch(self, topic_id: str, partition: int) -> int | None:
        return self.partitions_pending_revocation.get(topic_id, {}).get(partition)

    # --- Builder operations (each returns a new member) ------------------------------------------------------

    def replace(self, **changes) -> "ConsumerGroupMember":
        # A steady member's heartbeat changes nothing: keep the member itself (an immutable value), sparing a copy
        # per heartbeat (Builder.maybeUpdate* leave the same values; the result compares equal either way).
        for k, v in changes.items():
            if getattr(self, k) != v:
                return self._copy(changes)
        return self

    def _copy(self, changes: dict) -> "ConsumerGroupMember":
        """``dataclasses.replace(self, **changes)`` without its generic machinery (field walk, keyword call,
        ``__init__``): every epoch bump copies each member twice or three times (reconciliation, the record's
        replay). The same checks: only known fields; the topic names made a frozenset as ``__post_init__`` does."""
        if not changes.keys() <= _MEMBER_FIELDS:
            return dataclasses.replace(self, **changes)  # its TypeError for an unknown field
        new = object.__new__(type(self))
        d = new.__dict__
        d.update(self.__dict__)
        d.update(changes)
        if not isinstance(d["subscribed_topic_names"], frozenset):
            d["subscribed_topic_names"] = frozenset(d["subscribed_topic_names"])
        return new

    def update_member_epoch(self, member_epoch: int) -> "ConsumerGroupMember":
        """``Builder.updateMemberEpoch``: previous := current, current := ``member_epoch`` -- even when equal."""
        return self._copy({"member_epoch": member_epoch, "previous_member_epoch": self.member_epoch})

    def with_new_member_id(self, member_id: str) -> "ConsumerGroupMember":
        """``new Builder(member, newMemberId)``: a copy under another id (static member replacement)."""
        return self._copy({"member_id": member_id})

    def reset_assigned_partitions_epochs_to_zero(self) -> "ConsumerGroupMember":
        """``Builder.resetAssignedPartitionsEpochsToZero`` (a static member's temporary leave): commits under the
        old member id are fenced by the epoch check once a new id takes the instance over."""
        if not self.assigned_partitions:
            return self
        return self._copy({"assigned_partitions": {t: dict.fromkeys(ps, 0)
                                                   for t, ps in self.assigned_partitions.items()}})

    def with_metadata_record(self, rec: R.ConsumerGroupMemberMetadata) -> "ConsumerGroupMember":
        """``Builder.updateWith(ConsumerGroupMemberMetadataValue)``."""
        return self._copy(dict(
            instance_id=rec.instance_id, rack_id=rec.rack_id, client_id=rec.client_id,
            client_host=rec.client_host, subscribed_topic_names=frozenset(rec.subscribed_topic_names),
            subscribed_topic_regex=rec.subscribed_topic_regex, rebalance_timeout_ms=rec.rebalance_timeout_ms,
            server_assignor_name=rec.server_assignor, classic_member_metadata=rec.classic_member_metadata))

    def with_current_assignment_record(self, rec: R.ConsumerGroupCurrentMemberAssignment) -> "ConsumerGroupMember":
        """``Builder.updateWith(ConsumerGroupCurrentMemberAssignmentValue)``: partitions without (or with a
        mismatched list of) assignment epochs get ``max(member epoch, 0)`` (``Utils.assignmentFromTopicPartitions``;
        a static member away at epoch -2 must not give them a negative epoch)."""
        default = max(rec.member_epoch, 0)
        return self._copy(dict(
            member_epoch=rec.member_epoch, previous_member_epoch=rec.previous_member_epoch,
            state=MemberState.from_value(rec.state),
            assigned_partitions=_epochs_from_record(rec.assigned_partitions, default),
            partitions_pending_revocation=_epochs_from_record(rec.partitions_pending_revocation, default)))

    # --- views ---------------------------------------------------------------------------------------------------

    def as_describe_member(self, target: Assignment | None,
                           topic_names: Mapping[str, str]) -> ConsumerGroupDescribeResponse.DescribedGroup.Member:
        """``asConsumerGroupDescribeMember``: ``Assignment`` = assigned and pending-revocation partitions merged per
        topic (4.4, KAFKA-20431), ``TargetAssignment`` = the target; topics missing from ``topic_names`` (the
        metadata image, topic id -> name) are left out. Topics sorted by name, partitions ascending (Kafka: the
        order of its hash maps)."""
        M = ConsumerGroupDescribeResponse.DescribedGroup.Member
        merged: dict[str, list[int]] = {}
        for source in (self.assigned_partitions, self.partitions_pending_revocation):
            for t, eps in source.items():
                if t in topic_names:
                    merged.setdefault(t, []).extend(eps)
        target_parts = dict(target.partitions) if target is not None else {}
        return M(
            member_id=self.member_id, instance_id=self.instance_id, rack_id=self.rack_id,
            member_epoch=self.member_epoch, client_id=self.client_id, client_host=self.client_host,
            subscribed_topic_names=(sorted(self.subscribed_topic_names, key=java_string_key)
                                    if self.subscribed_topic_names is not None else None),
            subscribed_topic_regex=self.subscribed_topic_regex,
            assignment=M.Assignment(topic_partitions=_describe_topics(M, merged, topic_names)),
            target_assignment=M.Assignment(topic_partitions=_describe_topics(M, target_parts, topic_names)),
            member_type=0 if self.use_classic_protocol else 1)


_MEMBER_FIELDS = frozenset(f.name for f in dataclasses.fields(ConsumerGroupMember))


def _describe_topics(M, parts: Mapping[str, Iterable[int]], topic_names: Mapping[str, str]) -> list:
    rows = [(topic_names[t], t, sorted(set(ps))) for t, ps in parts.items() if t in topic_names]
    return [M.Assignment.TopicPartitions(topic_id=uuid_from_string(t), topic_name=name, partitions=ps)
            for name, t, ps in sorted(rows, key=lambda r: (java_string_key(r[0]), r[1]))]


def _epochs_from_record(tps: Iterable[R.TopicPartitionEpochs], default: int) -> PartitionEpochs:
    out: PartitionEpochs = {}
    for tp in tps:
        epochs = tp.assignment_epochs
        if epochs is not None and len(epochs) == len(tp.partitions):
            out[tp.topic_id] = dict(zip(tp.partitions, epochs))
        else:  # Kafka logs an error for a length mismatch and falls back to the default epoch
            out[tp.topic_id] = dict.fromkeys(tp.partitions, default)
    return out


def has_assigned_partitions_changed(a: ConsumerGroupMember, b: ConsumerGroupMember) -> bool:
    """``ConsumerGroupMember.hasAssignedPartitionsChanged``: topic -> {partition -> epoch} maps differ (in 4.4 an
    epoch-only change counts)."""
    return a.assigned_partitions != b.assigned_partitions


def subscribed_topic_regex_or_none(member: ConsumerGroupMember | None) -> str | None:
    """``ConsumerGroupMember.subscribedTopicRegexOrNull``: a non-empty regex, else None."""
    if member is not None and member.subscribed_topic_regex:
        return member.subscribed_topic_regex
    return None


# --- a java.util.HashMap, for the one place Kafka's result depends on its order here ---------------------------------

class _JavaStringHashMap:
    """The iteration order of a small ``java.util.HashMap<String, V>`` built by copying a map then ``compute``-ing
    (JDK 21; no bucket reaches the treeify threshold: the keys are server assignor names).

    ``new HashMap<>(m)`` sizes its table to ``tableSizeFor(ceil(|m| / 0.75))`` and appends in ``m``'s order; an empty
    copy gets 16 buckets at the first ``compute``, which resizes *before* looking when ``size > threshold`` and puts a
    new key at the *head* of its bucket (``HashMap.compute``); removal unlinks; a resize splits each bucket into a
    low and a high one, keeping their order."""

    def __init__(self, source: Iterable[tuple[str, int]]) -> None:
        items = list(source)
        self.table: list[list[list]] | None = None
        self.threshold = 0
        self.size = 0
        if items:
            t = -(-len(items) * 4 // 3)  # ceil(s / 0.75)
            self._new_table(1 << (t - 1).bit_length())
            for k, v in items:
                self.table[self._bucket(k)].append([k, v])
                self.size += 1
                if self.size > self.threshold:
                    self._resize()

    def _new_table(self, capacity: int) -> None:
        self.table = [[] for _ in range(capacity)]
        self.threshold = int(capacity * 0.75)

    def _bucket(self, key: str) -> int:
        h = java_string_hash(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (len(self.table) - 1)

    def _resize(self) -> None:
        old = self.table
        if old is None:
            self._new_table(16)
            return
        self._new_table(len(old) * 2)
        for bucket in old:
            for node in bucket:
                self.table[self._bucket(node[0])].append(node)

    def compute(self, key: str, fn: Callable[[int | None], int | None]) -> None:
        if self.table is None or self.size > self.threshold:
            self._resize()
        bucket = self.table[self._bucket(key)]
        node = next((n for n in bucket if n[0] == key), None)
        value = fn(node[1] if node else None)
        if node is not None:
            if value is None:
                bucket.remove(node)
                self.size -= 1
            else:
                node[1] = value
        elif value is not None:
            bucket.insert(0, [key, value])
            self.size += 1

    def items(self) -> Iterator[tuple[str, int]]:
        for bucket in self.table or ():
            for k, v in bucket:
                yield k, v


def _inc(v: int | None) -> int:
    return 1 if v is None else v + 1


def _dec(v: int | None) -> int | None:
    return None if v is None or v == 1 else v - 1


def _compute(m, key, fn) -> None:
    """``Map.compute`` on a Python mapping (None removes)."""
    v = fn(m.get(key))
    if v is None:
        m.pop(key, None)
    else:
        m[key] = v


def _first_max(items: Iterable[tuple[str, int]]) -> str | None:
    """``entrySet().stream().max(comparingByValue())``: ``BinaryOperator.maxBy`` keeps the earlier on ties."""
    best, best_count = None, None
    for name, count in items:
        if best_count is None or count > best_count:
            best, best_count = name, count
    return best


# --- offset commit validation ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class OffsetCommitValidation:
    """``ConsumerGroup.validateOffsetCommit``'s outcome: ``error`` fails the whole request; otherwise
    :meth:`partition_error` is Kafka's ``CommitPartitionValidator`` (4.3+, per-partition assignment epochs). In
    Kafka the first failing partition fails the whole request too (the exception escapes ``commitOffset``)."""

    error: ApiError | None = None
    member: ConsumerGroupMember | None = None  # set when the received epoch is older than the member's
    received_epoch: int = 0

    def partition_error(self, topic_name: str, topic_id: str | None, partition: int) -> ApiError | None:
        """``createAssignmentEpochValidator``: the partition must be assigned or pending revocation, at an
        assignment epoch not newer than the received epoch."""
        m = self.member
        if self.error is not None or m is None:
            return self.error
        code = ErrorCode.ILLEGAL_GENERATION if m.use_classic_protocol else ErrorCode.STALE_MEMBER_EPOCH
        tid = topic_id or ""
        epoch = m.assignment_epoch(tid, partition)
        if epoch is None:
            epoch = m.pending_revocation_epoch(tid, partition)
        if epoch is None:
            return ApiError(code, f"Partition {topic_name}-{partition} is not assigned or pending revocation for "
                                  "member.")
        if self.received_epoch < epoch:
            what = "generation id" if m.use_classic_protocol else "member epoch"
            return ApiError(code, f"Received {what} {self.received_epoch} is older than assignment epoch {epoch} "
                                  f"for partition {topic_name}-{partition}.")
        return None


NO_OP_VALIDATION = OffsetCommitValidation()


# --- the group -----------------------------------------------------------------------------------------------------

class ConsumerGroup:
    """A consumer group's state (``ConsumerGroup`` + ``ModernGroup``), changed only by :meth:`replay`.

    Read-only to everyone else: ``members`` (member id -> :class:`ConsumerGroupMember`, ``TimelineHashMap``
    order), ``static_members`` (instance id -> member id), ``target_assignment`` (member id -> :class:`Assignment`),
    ``inverted_target_assignment`` (topic id -> partition -> member id), ``subscribed_topic_names`` (name ->
    :class:`SubscriptionCount`), ``subscribed_regular_expressions`` (regex -> members), ``resolved_regular_expressions``
    (regex -> :class:`ResolvedRegularExpression`), ``server_assignors`` (name -> members preferring it)."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        # the preferred server assignor, in TimelineHashMap order and in a HashMap copy's (computePreferred-
        # ServerAssignor with the counts unchanged), remembered per version of ``server_assignors``
        self._assignors_version = 0
        self._preferred: tuple = (-1, None)
        self._preferred_copy: tuple = (-1, None)
        self._steady_assignor_changed: tuple = (-1, None, False)
        self.group_epoch = 1  # KAFKA-20268 (4.3+): groups start at epoch 1 with an empty target at epoch 1
        self.metadata_hash = 0
        self.assignment_epoch = 1
        self.assignment_timestamp_ms = 0
        self.members: TimelineHashMap[str, ConsumerGroupMember] = TimelineHashMap()
        self.static_members: dict[str, str] = {}
        self.target_assignment: dict[str, Assignment] = {}
        self.inverted_target_assignment: dict[str, dict[int, str]] = {}
        self.current_partition_epochs: dict[str, dict[int, int]] = {}
        self.subscribed_topic_names: dict[str, SubscriptionCount] = {}
        self.subscribed_regular_expressions: dict[str, int] = {}
        self.resolved_regular_expressions: TimelineHashMap[str, ResolvedRegularExpression] = TimelineHashMap()
        self.server_assignors: TimelineHashMap[str, int] = TimelineHashMap()
        self.num_classic_protocol_members = 0
        self.classic_protocol_members_supported_protocols: dict[str, int] = {}
        self.subscription_type = SubscriptionType.HOMOGENEOUS
        self.state = ConsumerGroupState.EMPTY
        # Members not reconciled to the assignment epoch, kept so the state is O(1) per record (Kafka walks the
        # members each time); recounted when the assignment epoch changes.
        self._unreconciled = 0

    # --- replay (the only mutation path) ---------------------------------------------------------------------

    def replay(self, rec: R.Record) -> None:
        """Apply one ``ConsumerGroup*`` record of this group (see the module docstring for the rules)."""
        if rec.group_id != self.group_id:
            raise ValueError(f"record for group {rec.group_id!r} replayed into group {self.group_id!r}")
        entry = REPLAY.get(type(rec))
        if entry is None:
            raise TypeError(f"{rec.TYPE or type(rec).__name__} is not a consumer group record")
        if self.state == ConsumerGroupState.DEAD:
            raise IllegalStateError(f"Group {self.group_id} was deleted; cannot replay {rec.TYPE}")
        entry[1](self, rec)
        if self.state != ConsumerGroupState.DEAD:
            self._update_state()

    def _group_epoch(self, r: R.ConsumerGroupMetadata) -> None:
        self.group_epoch = r.epoch
        self.metadata_hash = r.metadata_hash

    def _group_tombstone(self, r: R.ConsumerGroupMetadataTombstone) -> None:
        if self.members:
            raise IllegalStateError(f"Received a tombstone record to delete group {self.group_id} but the group "
                                    f"still has {len(self.members)} members.")
        if self.target_assignment:
            raise IllegalStateError(f"Received a tombstone record to delete group {self.group_id} but the target "
                                    f"assignment still has {len(self.target_assignment)} members.")
        if self.assignment_epoch != -1:
            raise IllegalStateError(f"Received a tombstone record to delete group {self.group_id} but did not "
                                    "receive ConsumerGroupTargetAssignmentMetadataValue tombstone.")
        self.state = ConsumerGroupState.DEAD

    def _partition_metadata_tombstone(self, r: R.ConsumerGroupPartitionMetadataTombstone) -> None:
        pass  # removes the legacy subscription metadata, which kgroup never writes

    def _member_metadata(self, r: R.ConsumerGroupMemberMetadata) -> None:
        old = self.members.get(r.member_id) or ConsumerGroupMember(r.member_id)
        self._update_member(old.with_metadata_record(r))

    def _member_tombstone(self, r: R.ConsumerGroupMemberMetadataTombstone) -> None:
        old = self.members.get(r.member_id)
        if old is None:
            return
        if old.member_epoch != LEAVE_GROUP_MEMBER_EPOCH:
            raise IllegalStateError(f"Received a tombstone record to delete member {r.member_id} but did not "
                                    "receive ConsumerGroupCurrentMemberAssignmentValue tombstone.")
        if r.member_id in self.target_assignment:
            raise IllegalStateError(f"Received a tombstone record to delete member {r.member_id} but did not "
                                    "receive ConsumerGroupTargetAssignmentMetadataValue tombstone.")
        self._remove_member(r.member_id)

    def _target_member(self, r: R.ConsumerGroupTargetAssignmentMember) -> None:
        self._update_target_assignment(r.member_id, Assignment.from_record(r))

    def _target_member_tombstone(self, r: R.ConsumerGroupTargetAssignmentMemberTombstone) -> None:
        self._update_inverted_target_assignment(r.member_id, self.target_assignment.get(r.member_id,
                                                                                        EMPTY_ASSIGNMENT),
                                                EMPTY_ASSIGNMENT)
        self.target_assignment.pop(r.member_id, None)

    def _target_metadata(self, r: R.ConsumerGroupTargetAssignmentMetadata) -> None:
        # TargetAssignmentMetadata's constructor checks (IllegalArgumentException in Kafka).
        if r.assignment_epoch < 0 and r.assignment_epoch != -1:
            raise IllegalStateError("The assignment epoch must be non-negative or -1.")
        if r.assignment_timestamp_ms < 0:
            raise IllegalStateError("The assignment timestamp must be non-negative.")
        self._set_assignment_epoch(r.assignment_epoch)
        self.assignment_timestamp_ms = r.assignment_timestamp_ms

    def _target_metadata_tombstone(self, r: R.ConsumerGroupTargetAssignmentMetadataTombstone) -> None:
        if self.target_assignment:
            raise IllegalStateError(f"Received a tombstone record to delete target assignment of {self.group_id} "
                                    f"but the assignment still has {len(self.target_assignment)} members.")
        self._set_assignment_epoch(-1)
        self.assignment_timestamp_ms = 0

    def _current_assignment(self, r: R.ConsumerGroupCurrentMemberAssignment) -> None:
        old = self.members.get(r.member_id) or ConsumerGroupMember(r.member_id)
        self._update_member(old.with_current_assignment_record(r))

    def _current_assignment_tombstone(self, r: R.ConsumerGroupCurrentMemberAssignmentTombstone) -> None:
        old = self.members.get(r.member_id)
        if old is None:
            return
        self._update_member(old.replace(member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                                        previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                                        assigned_partitions={}, partitions_pending_revocation={}))

    def _regex(self, r: R.ConsumerGroupRegularExpression) -> None:
        self._remove_resolved_regex(r.regular_expression)
        resolved = ResolvedRegularExpression(frozenset(r.topics), r.version, r.timestamp_ms)
        self.resolved_regular_expressions[r.regular_expression] = resolved
        for topic in resolved.topics:
            _compute(self.subscribed_topic_names, topic, SubscriptionCount.inc_regex)

    def _regex_tombstone(self, r: R.ConsumerGroupRegularExpressionTombstone) -> None:
        self._remove_resolved_regex(r.regular_expression)

    # --- member bookkeeping (ConsumerGroup.updateMember / removeMember) --------------------------------------

    def _update_member(self, new: ConsumerGroupMember) -> None:
        old = self.members.get(new.member_id)
        self._check_partition_epochs(old, new)  # before any change: a refused record changes nothing
        self.members[new.member_id] = new
        self._unreconciled += ((not new.is_reconciled_to(self.assignment_epoch))
                               - (old is not None and not old.is_reconciled_to(self.assignment_epoch)))
        recount = old is None or not self._same_counts(old, new)
        if recount:
            self._count_member(old, -1)
            self._count_member(new, +1)
        if old is not None:
            self._remove_partition_epochs(old.assigned_partitions, old.member_epoch)
            self._remove_partition_epochs(old.partitions_pending_revocation, old.member_epoch)
        self._add_partition_epochs(new.assigned_partitions, new.member_epoch)
        self._add_partition_epochs(new.partitions_pending_revocation, new.member_epoch)
        # updateStaticMember: the old instance id's entry goes whoever it points to.
        if old is not None and old.instance_id is not None:
            self.static_members.pop(old.instance_id, None)
        if new.instance_id is not None:
            self.static_members[new.instance_id] = new.member_id
        self.subscription_type = subscription_type(self.subscribed_regular_expressions,
                                                   self.subscribed_topic_names, len(self.members))

    def _same_counts(self, old: ConsumerGroupMember, new: ConsumerGroupMember) -> bool:
        """Whether counting ``old`` out and ``new`` in would leave every count as it is -- the same topic names,
        regex and server assignor, none of them counted by this member alone (a count dropping to zero removes
        its key and the re-count re-inserts it, which may move it in its map's order) and no classic-protocol
        member: an epoch step (a new current assignment) changes none of them, so the counts and the server
        assignors' version (the preferred assignor stays remembered) are left."""
        if old.classic_member_metadata is not None or new.classic_member_metadata is not None:
            return False
        names = new.subscribed_topic_names
        if names is not old.subscribed_topic_names and names != old.subscribed_topic_names:
            return False
        counts = self.subscribed_topic_names
        for t in names:
            c = counts.get(t)
            if c is None or (c.by_name_count == 1 and c.by_regex_count == 0):
                return False
        a = new.server_assignor_name
        if a != old.server_assignor_name or (a is not None and self.server_assignors.get(a, 0) <= 1):
            return False
        r = new.subscribed_topic_regex
        if r != old.subscribed_topic_regex or (r and self.subscribed_regular_expressions.get(r, 0) <= 1):
            return False
        return True

    def _remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is None:
            return
        self._unreconciled -= not old.is_reconciled_to(self.assignment_epoch)
        self._count_member(old, -1)
        self._remove_partition_epochs(old.assigned_partitions, old.member_epoch)
        self._remove_partition_epochs(old.partitions_pending_revocation, old.member_epoch)
        if old.instance_id is not None:
            self.static_members.pop(old.instance_id, None)
        self.subscription_type = subscription_type(self.subscribed_regular_expressions,
                                                   self.subscribed_topic_names, len(self.members))

    def _count_member(self, m: ConsumerGroupMember | None, sign: int) -> None:
        """Topic name, server assignor, regex and classic-protocol counts for a member leaving (-1) or arriving
        (+1)."""
        if m is None:
            return
        name_fn = SubscriptionCount.inc_name if sign > 0 else SubscriptionCount.dec_name
        count_fn = _inc if sign > 0 else _dec
        for topic in m.subscribed_topic_names:
            _compute(self.subscribed_topic_names, topic, name_fn)
        if m.server_assignor_name is not None:
            _compute(self.server_assignors, m.server_assignor_name, count_fn)
            self._assignors_version += 1
        if m.subscribed_topic_regex:
            _compute(self.subscribed_regular_expressions, m.subscribed_topic_regex, count_fn)
        if m.use_classic_protocol:
            self.num_classic_protocol_members += sign
            for name, _ in m.supported_classic_protocols or ():
                _compute(self.classic_protocol_members_supported_protocols, name, count_fn)

    def _check_partition_epochs(self, old: ConsumerGroupMember | None, new: ConsumerGroupMember) -> None:
        """What ``addPartitionEpochs`` would refuse after ``removePartitionEpochs(old)``: a partition still owned at
        an epoch >= the new member epoch (also a partition both assigned and pending revocation)."""
        epoch = new.member_epoch
        taken: set[tuple[str, int]] = set()
        for source in (new.assigned_partitions, new.partitions_pending_revocation):
            for t, eps in source.items():
                owners = self.current_partition_epochs.get(t, {})
                for p in eps:
                    if (t, p) in taken:
                        prev: int | None = epoch
                    else:
                        prev = owners.get(p)
                        if (prev is not None and old is not None and prev == old.member_epoch
                                and (p in old.assigned_partitions.get(t, ())
                                     or p in old.partitions_pending_revocation.get(t, ()))):
                            prev = None  # the old version of this member releases it first
                    if prev is not None and prev >= epoch:
                        raise IllegalStateError(f"Cannot set the epoch of {t}-{p} to {epoch} because the partition "
                                                f"is still owned at epoch {prev}")
                    taken.add((t, p))

    def _remove_partition_epochs(self, assignment: PartitionEpochs, expected_epoch: int) -> None:
        """``removePartitionEpochs``: only partitions still owned at the member's epoch are freed."""
        for t, eps in assignment.items():
            owners = self.current_partition_epochs.get(t)
            if owners is None:
                continue
            for p in eps:
                if owners.get(p) == expected_epoch:
                    del owners[p]
            if not owners:
                del self.current_partition_epochs[t]

    def _add_partition_epochs(self, assignment: PartitionEpochs, epoch: int) -> None:
        for t, eps in assignment.items():
            if eps:
                owners = self.current_partition_epochs.setdefault(t, {})
                for p in eps:
                    owners[p] = epoch

    def _update_target_assignment(self, member_id: str, new: Assignment) -> None:
        self._update_inverted_target_assignment(member_id, self.target_assignment.get(member_id, EMPTY_ASSIGNMENT),
                                                new)
        self.target_assignment[member_id] = new

    def _update_inverted_target_assignment(self, member_id: str, old: Assignment, new: Assignment) -> None:
        """``ModernGroup.updateInvertedTargetAssignment``: a partition leaves the index only if it still points to
        this member (it may already have been given to another member whose record came first)."""
        old_sets, new_sets = old.as_sets(), new.as_sets()
        for t in set(old_sets) | set(new_sets):
            before, after = old_sets.get(t, frozenset()), new_sets.get(t, frozenset())
            index = self.inverted_target_assignment.setdefault(t, {})
            for p in before - after:
                if index.get(p) == member_id:
                    del index[p]
            for p in after - before:
                index[p] = member_id
            if not index:
                del self.inverted_target_assignment[t]

    def _remove_resolved_regex(self, regex: str) -> None:
        old = self.resolved_regular_expressions.pop(regex, None)
        if old is not None:
            for topic in old.topics:
                _compute(self.subscribed_topic_names, topic, SubscriptionCount.dec_regex)

    def _set_assignment_epoch(self, epoch: int) -> None:
        if epoch != self.assignment_epoch:
            self.assignment_epoch = epoch
            self._unreconciled = sum(not m.is_reconciled_to(epoch) for m in self.members.values())

    def _update_state(self) -> None:
        """``maybeUpdateGroupState``."""
        if not self.members:
            self.state = ConsumerGroupState.EMPTY
        elif self.group_epoch > self.assignment_epoch:
            self.state = ConsumerGroupState.ASSIGNING
        elif self._unreconciled:  # a member not STABLE at the assignment epoch
            self.state = ConsumerGroupState.RECONCILING
        else:
            self.state = ConsumerGroupState.STABLE

    # --- reads -------------------------------------------------------------------------------------------------

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def member(self, member_id: str) -> ConsumerGroupMember | None:
        return self.members.get(member_id)

    def get_or_create_member(self, member_id: str, create_if_not_exists: bool) -> ConsumerGroupMember:
        """``getOrMaybeCreateMember``: the member, or a new one (not added: records add it), or
        UNKNOWN_MEMBER_ID."""
        m = self.members.get(member_id)
        if m is not None:
            return m
        if not create_if_not_exists:
            raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group "
                                                        f"{self.group_id}.")
        return ConsumerGroupMember(member_id)

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def static_member(self, instance_id: str | None) -> ConsumerGroupMember | None:
        mid = self.static_member_id(instance_id)
        return None if mid is None else self.members.get(mid)

    def has_static_member(self, instance_id: str | None) -> bool:
        return instance_id is not None and instance_id in self.static_members

    def target_assignment_of(self, member_id: str, instance_id: str | None = None) -> Assignment:
        """``targetAssignment(memberId, instanceId)``: by member id for a dynamic member; for a static one, the
        target of the member id currently holding the instance id (a replacement not yet computed)."""
        if instance_id is None:
            return self.target_assignment.get(member_id, EMPTY_ASSIGNMENT)
        previous = self.static_members.get(instance_id)
        return self.target_assignment.get(previous, EMPTY_ASSIGNMENT) if previous is not None else EMPTY_ASSIGNMENT

    def current_partition_epoch(self, topic_id: str, partition: int) -> int:
        """The epoch of the partition's current owner, or -1 when free."""
        return self.current_partition_epochs.get(topic_id, {}).get(partition, -1)

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return topic in self.subscribed_topic_names

    def num_subscribed_members(self, regex: str) -> int:
        return self.subscribed_regular_expressions.get(regex, 0)

    def last_resolved_regular_expression_refresh_time_ms(self) -> int | None:
        """The first resolved regex's timestamp (they are resolved together), None when there is none (Kafka:
        ``Long.MIN_VALUE``)."""
        for resolved in self.resolved_regular_expressions.values():
            return resolved.timestamp_ms
        return None

    def last_resolved_regular_expression_version(self) -> int:
        for resolved in self.resolved_regular_expressions.values():
            return resolved.version
        return 0

    def preferred_server_assignor(self) -> str | None:
        """``preferredServerAssignor``: the name most members prefer, ties to the first in ``TimelineHashMap``
        order; None when no member named one (the broker's default assignor applies)."""
        cached = self._preferred
        if cached[0] != self._assignors_version:
            cached = self._preferred = (self._assignors_version, _first_max(self.server_assignors.items()))
        return cached[1]

    def compute_preferred_server_assignor(self, old: ConsumerGroupMember | None,
                                          new: ConsumerGroupMember | None) -> str | None:
        """``computePreferredServerAssignor``: the same, counted as if ``old`` became ``new`` (either None), in the
        ``HashMap`` copy Kafka counts in (its order breaks ties)."""
        old_name = None if old is None else old.server_assignor_name
        new_name = None if new is None else new.server_assignor_name
        if old_name == new_name and (old_name is None or self.server_assignors.get(old_name, 0) > 1):
            # the counts are unchanged (a steady member's heartbeat): the HashMap copy's answer depends on them
            # only, so it is remembered until they change. (A count of 1 is decremented away and re-inserted,
            # which may move the key within its HashMap bucket: computed in full below.)
            cached = self._preferred_copy
            if cached[0] != self._assignors_version:
                cached = self._preferred_copy = (
                    self._assignors_version, _first_max(_JavaStringHashMap(self.server_assignors.items()).items()))
            return cached[1]
        counts = _JavaStringHashMap(self.server_assignors.items())
        if old is not None and old.server_assignor_name is not None:
            counts.compute(old.server_assignor_name, _dec)
        if new is not None and new.server_assignor_name is not None:
            counts.compute(new.server_assignor_name, _inc)
        return _first_max(counts.items())

    def preferred_server_assignor_changed_by(self, member: ConsumerGroupMember, default: str | None) -> bool:
        """Whether ``member``'s heartbeat, updating it to itself, changes the preferred server assignor (each side
        ``or default``): ``computePreferredServerAssignor(member, member)`` against ``preferredServerAssignor()``.
        With the counts unchanged by it (no preference, or one shared with others) the answer depends on the
        counts only: remembered per version of them."""
        name = member.server_assignor_name
        if name is not None and self.server_assignors.get(name, 0) <= 1:
            return ((self.preferred_server_assignor() or default)
                    != (self.compute_preferred_server_assignor(member, member) or default))
        cached = self._steady_assignor_changed
        if cached[0] != self._assignors_version or cached[1] != default:
            cached = self._steady_assignor_changed = (
                self._assignors_version, default,
                (self.preferred_server_assignor() or default)
                != (self.compute_preferred_server_assignor(member, member) or default))
        return cached[2]

    def waiting_on_unreleased_partition(self, member: ConsumerGroupMember) -> bool:
        """``waitingOnUnreleasedPartition``: an UNRELEASED_PARTITIONS member whose target holds a partition it
        does not have yet and someone else still owns."""
        if member.state != MemberState.UNRELEASED_PARTITIONS:
            return False
        target = self.target_assignment.get(member.member_id, EMPTY_ASSIGNMENT)
        for t, ps in target.partitions.items():
            assigned = member.assigned_partitions.get(t, {})
            if any(p not in assigned and self.current_partition_epoch(t, p) != -1 for p in ps):
                return True
        return False

    # --- what the heartbeat computes before it writes (copies; the group is not changed) -------------------------

    def compute_subscribed_topic_names(self, old: ConsumerGroupMember | None,
                                       new: ConsumerGroupMember | None) -> dict[str, SubscriptionCount]:
        """The topic counts as if ``old`` became ``new``; when ``old`` was the last subscriber of its regex and
        ``new`` does not use it, the regex's resolved topics are discounted too."""
        counts = dict(self.subscribed_topic_names)
        for m, fn in ((old, SubscriptionCount.dec_name), (new, SubscriptionCount.inc_name)):
            if m is not None:
                for topic in m.subscribed_topic_names:
                    _compute(counts, topic, fn)
        old_regex = subscribed_topic_regex_or_none(old)
        if (old_regex is not None and old_regex != subscribed_topic_regex_or_none(new)
                and self.num_subscribed_members(old_regex) == 1):
            resolved = self.resolved_regular_expressions.get(old_regex)
            for topic in resolved.topics if resolved else ():
                _compute(counts, topic, SubscriptionCount.dec_regex)
        return counts

    def compute_subscribed_regular_expressions(self, old: ConsumerGroupMember | None,
                                               new: ConsumerGroupMember | None) -> dict[str, int]:
        counts = dict(self.subscribed_regular_expressions)
        old_regex, new_regex = subscribed_topic_regex_or_none(old), subscribed_topic_regex_or_none(new)
        if old_regex != new_regex:
            if old_regex is not None:
                _compute(counts, old_regex, _dec)
            if new_regex is not None:
                _compute(counts, new_regex, _inc)
        return counts

    def compute_subscribed_topic_names_without_deleted_members(
            self, removed_members: Iterable[ConsumerGroupMember],
            removed_regexes: Iterable[str]) -> dict[str, SubscriptionCount]:
        counts = dict(self.subscribed_topic_names)
        for m in removed_members:
            for topic in m.subscribed_topic_names:
                _compute(counts, topic, SubscriptionCount.dec_name)
        for regex in removed_regexes:
            resolved = self.resolved_regular_expressions.get(regex)
            for topic in resolved.topics if resolved else ():
                _compute(counts, topic, SubscriptionCount.dec_regex)
        return counts

    # --- classic-protocol members (mixed groups) ---------------------------------------------------------------

    def classic_members_supported_protocols(self) -> dict[str, int]:
        return dict(self.classic_protocol_members_supported_protocols)

    def supports_classic_protocols(self, protocol_type: str, protocol_names: Collection[str]) -> bool:
        """``supportsClassicProtocols``: a classic JoinGroup fits if its type is "consumer" and (empty group) it
        names a protocol, or one of its protocols is supported by every classic member."""
        if protocol_type != "consumer":
            return False
        if self.state == ConsumerGroupState.EMPTY:
            return bool(protocol_names)
        n = self.num_classic_protocol_members
        return any(self.classic_protocol_members_supported_protocols.get(p, 0) == n for p in protocol_names)

    def all_members_use_classic_protocol_except(self, member: ConsumerGroupMember) -> bool:
        """``allMembersUseClassicProtocolExcept(member)``: ``member`` uses the consumer protocol and is the only one
        (a leave that may downgrade the group to classic)."""
        return self.num_classic_protocol_members == len(self.members) - 1 and not member.use_classic_protocol

    def all_members_use_classic_protocol_except_all(self, members: Collection[ConsumerGroupMember]) -> bool:
        """``allMembersUseClassicProtocolExcept(Set<member>)``: once ``members`` are gone, all left use the classic
        protocol."""
        excluded = sum(1 for m in members if m.use_classic_protocol)
        return self.num_classic_protocol_members - excluded == len(self.members) - len(members)

    # --- validation (returns the error instead of throwing) ------------------------------------------------------

    def validate_offset_commit(self, member_id: str, group_instance_id: str | None, member_epoch: int, *,
                               api_version: int, is_transactional: bool = False,
                               assignment_epoch_validation: bool = True) -> OffsetCommitValidation:
        """``ConsumerGroup.validateOffsetCommit`` (the group exists; OffsetMetadataManager handles absent groups).

        * epoch < 0 and no members: accepted (admin / manual commits); a TxnOffsetCommit without member id,
          generation and instance id: accepted;
        * unknown member -> UNKNOWN_MEMBER_ID; a consumer-protocol member with OffsetCommit < v9 ->
          UNSUPPORTED_VERSION;
        * epoch == member epoch: accepted; newer -> STALE_MEMBER_EPOCH (classic member: ILLEGAL_GENERATION);
        * older: with ``assignment_epoch_validation`` (KIP-1251; Kafka 4.3 and 4.4 always, no setting) each
          partition is checked by :meth:`OffsetCommitValidation.partition_error`; without it (Kafka 4.0-4.2) any
          other epoch is STALE_MEMBER_EPOCH / ILLEGAL_GENERATION.
        """
        if member_epoch < 0 and not self.members:
            return NO_OP_VALIDATION
        if (is_transactional and member_epoch == UNKNOWN_GENERATION_ID and member_id == UNKNOWN_MEMBER_ID
                and group_instance_id is None):
            return NO_OP_VALIDATION
        member = self.members.get(member_id)
        if member is None:
            return OffsetCommitValidation(ApiError(ErrorCode.UNKNOWN_MEMBER_ID,
                                                   f"Member {member_id} is not a member of group {self.group_id}."))
        if not is_transactional and not member.use_classic_protocol and api_version < 9:
            return OffsetCommitValidation(ApiError(ErrorCode.UNSUPPORTED_VERSION,
                                                   "OffsetCommit version 9 or above must be used by members using "
                                                   "the consumer group protocol"))
        if member_epoch == member.member_epoch:
            return NO_OP_VALIDATION
        if not assignment_epoch_validation:
            return OffsetCommitValidation(_epoch_mismatch(member_epoch, member))
        if member_epoch > member.member_epoch:
            if member.use_classic_protocol:
                err = ApiError(ErrorCode.ILLEGAL_GENERATION, f"Received generation id {member_epoch} is newer than "
                                                             f"current member epoch {member.member_epoch}.")
            else:
                err = ApiError(ErrorCode.STALE_MEMBER_EPOCH, f"Received member epoch {member_epoch} is newer than "
                                                             f"current member epoch {member.member_epoch}.")
            return OffsetCommitValidation(err)
        return OffsetCommitValidation(member=member, received_epoch=member_epoch)

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> ApiError | None:
        """``validateOffsetFetch`` (OffsetFetch v9+): no member id and a negative epoch is an admin fetch;
        otherwise the member must exist and the epoch must be exactly its epoch."""
        if member_id is None and member_epoch < 0:
            return None
        member = self.members.get(member_id) if member_id is not None else None
        if member is None:
            shown = "null" if member_id is None else member_id  # Java's String.format of a null id
            return ApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {shown} is not a member of group {self.group_id}.")
        if member_epoch != member.member_epoch:
            return _epoch_mismatch(member_epoch, member)
        return None

    def validate_delete_group(self) -> ApiError | None:
        """``validateDeleteGroup``: only an EMPTY group can be deleted."""
        return None if self.state == ConsumerGroupState.EMPTY else ApiError(ErrorCode.NON_EMPTY_GROUP)

    def is_in_states(self, states: Collection[str]) -> bool:
        """``isInStates``: ListGroups' filter, lower-cased by the caller."""
        return self.state.lower() in states

    # --- views -------------------------------------------------------------------------------------------------

    def as_described_group(self, default_assignor: str,
                           topic_names: Mapping[str, str]) -> ConsumerGroupDescribeResponse.DescribedGroup:
        """``asDescribedGroup``: ConsumerGroupDescribe's entry for this group (members in ``TimelineHashMap``
        order; ``topic_names`` is the metadata image, topic id -> name)."""
        return ConsumerGroupDescribeResponse.DescribedGroup(
            error_code=0, group_id=self.group_id, group_state=str(self.state), group_epoch=self.group_epoch,
            assignment_epoch=self.assignment_epoch,
            assignor_name=self.preferred_server_assignor() or default_assignor,
            members=[m.as_describe_member(self.target_assignment.get(mid), topic_names)
                     for mid, m in self.members.items()])

    def snapshot(self) -> dict:
        """Everything this group is, as plain data, member order included (for "state equals replay" checks)."""
        return {
            "group_id": self.group_id, "group_epoch": self.group_epoch, "metadata_hash": self.metadata_hash,
            "assignment_epoch": self.assignment_epoch, "assignment_timestamp_ms": self.assignment_timestamp_ms,
            "state": self.state, "subscription_type": self.subscription_type,
            "members": list(self.members.items()), "static_members": dict(self.static_members),
            "target_assignment": {m: a.as_sets() for m, a in self.target_assignment.items()},
            "target_assignment_order": {m: dict(a.partitions) for m, a in self.target_assignment.items()},
            "inverted_target_assignment": self.inverted_target_assignment,
            "current_partition_epochs": self.current_partition_epochs,
            "subscribed_topic_names": self.subscribed_topic_names,
            "subscribed_regular_expressions": self.subscribed_regular_expressions,
            "resolved_regular_expressions": list(self.resolved_regular_expressions.items()),
            "server_assignors": list(self.server_assignors.items()),
            "num_classic_protocol_members": self.num_classic_protocol_members,
            "classic_protocol_members_supported_protocols": self.classic_protocol_members_supported_protocols,
        }

    def __repr__(self) -> str:
        return (f"ConsumerGroup({self.group_id!r}, state={self.state}, group_epoch={self.group_epoch}, "
                f"assignment_epoch={self.assignment_epoch}, members={list(self.members)})")


def _epoch_mismatch(received: int, member: ConsumerGroupMember) -> ApiError:
    """``validateMemberEpoch``."""
    if member.use_classic_protocol:
        return ApiError(ErrorCode.ILLEGAL_GENERATION, f"The received generation id {received} does not match the "
                                                      f"expected member epoch {member.member_epoch}.")
    return ApiError(ErrorCode.STALE_MEMBER_EPOCH, f"The received member epoch {received} does not match the "
                                                  f"expected member epoch {member.member_epoch}.")


def subscription_type(subscribed_regular_expressions: Mapping[str, int],
                      subscribed_topic_names: Mapping[str, SubscriptionCount],
                      number_of_members: int) -> SubscriptionType:
    """``ConsumerGroup.subscriptionType``: HOMOGENEOUS when every member subscribes by name to the same topics and
    no regex is used, or when every member uses the same single regex and no names; else HETEROGENEOUS."""
    if not subscribed_regular_expressions:
        if all(c.by_name_count == number_of_members for c in subscribed_topic_names.values()):
            return SubscriptionType.HOMOGENEOUS
        return SubscriptionType.HETEROGENEOUS
    if next(iter(subscribed_regular_expressions.values())) == number_of_members:
        if all(c.by_regex_count == 1 and c.by_name_count == 0 for c in subscribed_topic_names.values()):
            return SubscriptionType.HOMOGENEOUS
    return SubscriptionType.HETEROGENEOUS


#: record type -> (whether a record of this type creates its group, the handler). The dispatch of every replay.
REPLAY: dict[type[R.Record], tuple[bool, Callable[[ConsumerGroup, R.Record], None]]] = {
    R.ConsumerGroupMetadata: (True, ConsumerGroup._group_epoch),
    R.ConsumerGroupMetadataTombstone: (False, ConsumerGroup._group_tombstone),
    R.ConsumerGroupPartitionMetadataTombstone: (False, ConsumerGroup._partition_metadata_tombstone),
    R.ConsumerGroupMemberMetadata: (True, ConsumerGroup._member_metadata),
    R.ConsumerGroupMemberMetadataTombstone: (False, ConsumerGroup._member_tombstone),
    R.ConsumerGroupTargetAssignmentMember: (True, ConsumerGroup._target_member),
    R.ConsumerGroupTargetAssignmentMemberTombstone: (False, ConsumerGroup._target_member_tombstone),
    R.ConsumerGroupTargetAssignmentMetadata: (True, ConsumerGroup._target_metadata),
    R.ConsumerGroupTargetAssignmentMetadataTombstone: (False, ConsumerGroup._target_metadata_tombstone),
    R.ConsumerGroupCurrentMemberAssignment: (True, ConsumerGroup._current_assignment),
    R.ConsumerGroupCurrentMemberAssignmentTombstone: (False, ConsumerGroup._current_assignment_tombstone),
    R.ConsumerGroupRegularExpression: (True, ConsumerGroup._regex),
    R.ConsumerGroupRegularExpressionTombstone: (False, ConsumerGroup._regex_tombstone),
}


class ConsumerGroups:
    """The consumer groups of one ``__consumer_offsets`` partition (``GroupMetadataManager``'s consumer-group part
    of ``groups``), changed only by :meth:`replay`."""

    def __init__(self) -> None:
        self.groups: dict[str, ConsumerGroup] = {}

    def get(self, group_id: str) -> ConsumerGroup | None:
        return self.groups.get(group_id)

    def __contains__(self, group_id: str) -> bool:
        return group_id in self.groups

    def __iter__(self) -> Iterator[ConsumerGroup]:
        return iter(self.groups.values())

    def __len__(self) -> int:
        return len(self.groups)

    def replay(self, rec: R.Record) -> None:
        """Apply a record of the partition log; records of other kinds are not ours and are skipped.
        (``getOrMaybeCreatePersistedConsumerGroup``: a value record creates its group; a tombstone for an unknown
        group is ignored; the group tombstone deletes it.)"""
        entry = REPLAY.get(type(rec))
        if entry is None:
            return
        group = self.groups.get(rec.group_id)
        if group is None:
            if not entry[0]:
                return
            group = ConsumerGroup(rec.group_id)
            group.replay(rec)  # added only once the record applied
            self.groups[rec.group_id] = group
            return
        group.replay(rec)
        if group.state == ConsumerGroupState.DEAD:
            del self.groups[rec.group_id]

    def snapshot(self) -> dict:
        return {gid: g.snapshot() for gid, g in sorted(self.groups.items())}


def replay_all(records: Iterable[R.Record]) -> ConsumerGroups:
    """The consumer groups a sequence of records gives (a partition load)."""
    groups = ConsumerGroups()
    for rec in records:
        groups.replay(rec)
    return groups


# --- records (GroupCoordinatorRecordHelpers, consumer group part) -----------------------------------------------------

def member_metadata_record(group_id: str, member: ConsumerGroupMember) -> R.ConsumerGroupMemberMetadata:
    """``newConsumerGroupMemberSubscriptionRecord`` (topic names sorted as Java sorts strings)."""
    return R.ConsumerGroupMemberMetadata(
        group_id, member_id=member.member_id, instance_id=member.instance_id, rack_id=member.rack_id,
        client_id=member.client_id, client_host=member.client_host,
        subscribed_topic_names=tuple(sorted(member.subscribed_topic_names, key=java_string_key)),
        subscribed_topic_regex=member.subscribed_topic_regex, rebalance_timeout_ms=member.rebalance_timeout_ms,
        server_assignor=member.server_assignor_name, classic_member_metadata=member.classic_member_metadata)


def _topic_partition_epochs(assignment: PartitionEpochs) -> tuple[R.TopicPartitionEpochs, ...]:
    out = []
    for t in sorted(assignment):
        ps = sorted(assignment[t])
        out.append(R.TopicPartitionEpochs(t, tuple(ps), tuple(assignment[t][p] for p in ps)))
    return tuple(out)


def current_assignment_record(group_id: str, member: ConsumerGroupMember) -> R.ConsumerGroupCurrentMemberAssignment:
    """``newConsumerGroupCurrentAssignmentRecord`` (topics and partitions sorted, epochs alongside)."""
    return R.ConsumerGroupCurrentMemberAssignment(
        group_id, member_id=member.member_id, member_epoch=member.member_epoch,
        previous_member_epoch=member.previous_member_epoch, state=int(member.state),
        assigned_partitions=_topic_partition_epochs(member.assigned_partitions),
        partitions_pending_revocation=_topic_partition_epochs(member.partitions_pending_revocation))


def target_assignment_record(group_id: str, member_id: str,
                             assignment: Assignment | Mapping[str, Iterable[int]]
                             ) -> R.ConsumerGroupTargetAssignmentMember:
    """``newConsumerGroupTargetAssignmentRecord``: topics and partitions in the order given (the assignor's)."""
    parts = assignment.partitions if isinstance(assignment, Assignment) else assignment
    return R.ConsumerGroupTargetAssignmentMember(
        group_id, member_id=member_id, topic_partitions=tuple(R.TopicPartitions(t, tuple(ps))
                                                              for t, ps in parts.items()))


def member_records(group_id: str, member: ConsumerGroupMember) -> list[R.Record]:
    """The member metadata and current assignment records that make ``member`` what it is."""
    return [member_metadata_record(group_id, member), current_assignment_record(group_id, member)]


def member_removal_records(group_id: str, member_id: str) -> list[R.Record]:
    """A member's removal, in the only order replay accepts: current assignment, target assignment, metadata."""
    return [R.ConsumerGroupCurrentMemberAssignmentTombstone(group_id, member_id=member_id),
            R.ConsumerGroupTargetAssignmentMemberTombstone(group_id, member_id=member_id),
            R.ConsumerGroupMemberMetadataTombstone(group_id, member_id=member_id)]


def group_tombstone_records(group: ConsumerGroup, replaced: tuple[str, str] | None = None) -> list[R.Record]:
    """``createGroupTombstoneRecords`` (``replaced`` = (leaving id, joining id):
    ``createGroupTombstoneRecordsWithReplacedMember``, the joining id tombstoned in place of the leaving one):
    current assignments, target assignments, target metadata, member metadata, regexes, partition metadata, epoch."""
    gid = group.group_id
    ids = [replaced[1] if replaced and mid == replaced[0] else mid for mid in group.members]
    return ([R.ConsumerGroupCurrentMemberAssignmentTombstone(gid, member_id=m) for m in ids]
            + [R.ConsumerGroupTargetAssignmentMemberTombstone(gid, member_id=m) for m in ids]
            + [R.ConsumerGroupTargetAssignmentMetadataTombstone(gid)]
            + [R.ConsumerGroupMemberMetadataTombstone(gid, member_id=m) for m in ids]
            + [R.ConsumerGroupRegularExpressionTombstone(gid, regular_expression=x)
               for x in group.resolved_regular_expressions]
            + [R.ConsumerGroupPartitionMetadataTombstone(gid), R.ConsumerGroupMetadataTombstone(gid)])
