"""The assignors' input as Kafka's coordinator hands it over (``GroupSpecImpl``), rebuilt from plain data.

What Kafka passes to a server-side assignor, and how kgroup rebuilds each part from :func:`assign_target`'s
arguments (Kafka 4.4, ``TargetAssignmentBuilder.build``):

* ``memberIds()`` -- the key set of a ``new HashMap<>()`` into which the members were put in the order of the
  ``members`` argument (``memberSpecs``): :func:`protocol.java.hashmap_order` over ``String.hashCode``.
* ``subscribedTopicIds()`` -- Kafka's ``TopicIds`` view: the member's topic names (a ``HashSet<String>``) resolved
  to ids, unresolvable names skipped. ``subscribed_topic_ids`` is that iteration order; ``subscription_size``
  (optional) is ``TopicIds.size()``, the count of names *including* unresolved ones, which some tables are sized by.
* ``memberAssignment(id).partitions()`` -- the member's previous *target* assignment as the coordinator replayed
  it from its ``ConsumerGroupTargetAssignmentMember`` record (``Assignment.fromRecord``): ``Collectors.toMap`` into
  a default ``HashMap`` (topics in record order), each partition list into ``new HashSet<>(list)``; unmodifiable.
  ``current`` is that record: topic id -> partitions in record order. Members without one get an empty map.
* ``isPartitionAssigned`` -- the inverted target assignment: here the union of every member's ``current``.
* ``SubscribedTopicDescriber.numPartitions`` -- ``topics[id]["partitions"]``, -1 for an unknown id.
* the subscription type -- HOMOGENEOUS when every member subscribes to the same topics (``ConsumerGroup``
  counts subscribers per topic name; with resolved ids that is "all sets equal"), unless given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from protocol.java import (DEFAULT_JDK, JavaHashMap, JavaIntSet, hashmap_order, string_hash, uuid_bits, uuid_hash,
                           uuid_sort_key, uuid_string)

HOMOGENEOUS = "homogeneous"
HETEROGENEOUS = "heterogeneous"


class PartitionAssignorError(Exception):
    """Kafka's ``PartitionAssignorException``: the assignor cannot compute a target assignment (the coordinator
    answers the heartbeat with UNKNOWN_SERVER_ERROR "Failed to compute a new target assignment for epoch N: ...")."""


def canonical_topic_id(topic_id: object) -> str:
    """``Uuid.fromString(s).toString()``; ``ValueError`` with a one-line reason if ``topic_id`` is not a Uuid."""
    try:
        return uuid_string(*uuid_bits(topic_id))
    except ValueError as exc:
        raise ValueError(f"topic id {topic_id!r} is not a Kafka Uuid: {exc}") from None


_topic_hash_cache: dict[str, int] = {}


def topic_hash(topic_id: str) -> int:
    """``Uuid.hashCode`` of a canonical topic id (memoised: the assignors ask for it per map)."""
    h = _topic_hash_cache.get(topic_id)
    if h is None:
        if len(_topic_hash_cache) > 1 << 16:
            _topic_hash_cache.clear()
        h = _topic_hash_cache[topic_id] = uuid_hash(topic_id)
    return h


def new_topic_map(initial_capacity: int | None = None) -> JavaHashMap:
    """A ``HashMap<Uuid, ...>`` (``Uuid`` is ``Comparable``: tree buckets order by ``compareTo``)."""
    return JavaHashMap(topic_hash, uuid_sort_key, initial_capacity)


@dataclass(eq=False)
class MemberSpec:
    """One member as the assignor sees it (``MemberSubscriptionAndAssignmentImpl``)."""
    member_id: str
    instance_id: str | None
    rack_id: str | None
    subscribed: list[str]                 # TopicIds iteration order
    subscription_size: int                # TopicIds.size()
    assignment: object                    # topic id -> set of partitions, iterated in Java order (unmodifiable)
    subscribed_set: frozenset = None  # type: ignore[assignment]

    def __post_init__(self):
        if self.subscribed_set is None:
            self.subscribed_set = frozenset(self.subscribed)


@dataclass(eq=False)
class GroupSpec:
    """``GroupSpecImpl`` + ``SubscribedTopicDescriber``: members in ``memberIds()`` order, partition counts."""
    members: list[MemberSpec]
    partitions: dict[str, int]
    subscription_type: str
    jdk: int = DEFAULT_JDK
    spelling: dict[str, str] = field(default_factory=dict)  # canonical id -> the caller's spelling of it
    _assigned: dict | None = None

    def num_partitions(self, topic_id: str) -> int:
        """``SubscribedTopicDescriber.numPartitions``: -1 for a topic not in the metadata."""
        return self.partitions.get(topic_id, -1)

    def assigned_marks(self, topic_id: str) -> bytearray | None:
        """``isPartitionAssigned`` for every partition of ``topic_id``: a bytearray of 0/1, or ``None`` if none is."""
        if self._assigned is None:
            marks: dict[str, bytearray] = {}
            parts = self.partitions
            for m in self.members:
                a = m.assignment
                for t in a.keys():
                    n = parts.get(t)
                    if n is None:
                        continue
                    b = marks.get(t)
                    if b is None:
                        b = marks[t] = bytearray(n)
                    s = a[t]
                    for p in (s.unordered() if isinstance(s, JavaIntSet) else s):
                        b[p] = 1
            self._assigned = marks
        return self._assigned.get(topic_id)


class CurrentAssignment(dict):
    """A member's ``current`` (topic id -> partitions, record order) that remembers the ``HashMap`` of
    ``HashSet`` :func:`build_group_spec` rebuilt from it, for a caller that hands the same object over again (the
    coordinator, once per target computation, for each member whose target did not change). The rebuilt map is
    reused only for the same JDK and the same partition counts of its topics -- everything its checks read -- and
    is never changed: the assignors copy a member's assignment before they change it. Never mutate one."""

    __slots__ = ("java",)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.java: tuple | None = None  # (jdk, ((topic id, its partition count), ...), the rebuilt map)


def _error(msg: str) -> ValueError:
    return ValueError(msg)


def build_group_spec(members: Mapping, topics: Mapping, subscription_type: str | None = None,
                     jdk: int = DEFAULT_JDK, with_assignments: bool = True) -> GroupSpec:
    """Validate :func:`assign_target`'s arguments and rebuild Kafka's view of them (see the module docstring).

    ``with_assignments=False`` skips rebuilding (and checking) the members' ``current`` beyond its type: for an
    assignor that never reads it (``range``)."""
    if not isinstance(members, Mapping):
        raise _error(f"members must be a mapping member_id -> member, got {type(members).__name__}")
    if not isinstance(topics, Mapping):
        raise _error(f"topics must be a mapping topic_id -> {{'name', 'partitions'}}, got {type(topics).__name__}")
    partitions: dict[str, int] = {}
    spelling: dict[str, str] = {}
    canon_of: dict = {}

    def canon(tid) -> str:
        cid = canon_of.get(tid) if isinstance(tid, str) else None
        if cid is None:
            cid = canon_of[tid] = canonical_topic_id(tid)
            spelling.setdefault(cid, tid)
        return cid

    for tid, meta in topics.items():
        cid = canon(tid)
        n = meta.get("partitions") if isinstance(meta, Mapping) else None
        if type(n) is not int or n < 0:
            raise _error(f"topic {tid}: 'partitions' must be an int >= 0, got {n!r}")
        partitions[cid] = n

    specs: dict[str, MemberSpec] = {}
    # Members usually share one subscription: canonicalise each distinct list once.
    last_raw: object = None
    last: tuple[list[str], frozenset] | None = None
    for member_id, m in members.items():
        if not isinstance(member_id, str):
            raise _error(f"member ids must be str, got {member_id!r}")
        if not isinstance(m, Mapping):
            raise _error(f"member {member_id}: must be a mapping, got {type(m).__name__}")
        instance_id = m.get("instance_id")
        rack_id = m.get("rack_id")
        for name, v in (("instance_id", instance_id), ("rack_id", rack_id)):
            if v is not None and not isinstance(v, str):
                raise _error(f"member {member_id}: {name} must be a str or None, got {v!r}")
        raw_subs = m.get("subscribed_topic_ids", ())
        if isinstance(raw_subs, (str, bytes)) or not hasattr(raw_subs, "__iter__"):
            raise _error(f"member {member_id}: subscribed_topic_ids must be a list of topic ids")
        if last is None or not (raw_subs is last_raw or (type(raw_subs) is type(last_raw) and raw_subs == last_raw)):
            subscribed = [canon(t) for t in raw_subs]
            subscribed_set = frozenset(subscribed)
            if len(subscribed_set) != len(subscribed):
                raise _error(f"member {member_id}: subscribed_topic_ids has duplicates")
            last_raw, last = raw_subs, (subscribed, subscribed_set)
        subscribed, subscribed_set = last
        size = m.get("subscription_size", len(subscribed))
        if type(size) is not int or size < len(subscribed):
            raise _error(f"member {member_id}: subscription_size must be an int >= the number of subscribed ids")
        current = m.get("current") or {}
        if not isinstance(current, Mapping):
            raise _error(f"member {member_id}: current must be a mapping topic_id -> [partitions]")
        # Assignment.fromRecord: Collectors.toMap -> new HashMap<>(), putIfAbsent in record order;
        # each partition list -> new HashSet<>(list).
        cached = current.java if type(current) is CurrentAssignment and with_assignments else None
        if cached is not None and cached[0] == jdk and all(partitions.get(canon(tid)) == n for tid, n in cached[1]):
            specs[member_id] = MemberSpec(member_id, instance_id, rack_id, subscribed, size, cached[2],
                                          subscribed_set)
            continue
        assignment = new_topic_map()
        for tid, plist in (current.items() if with_assignments else ()):
            cid = canon(tid)
            if cid in assignment:
                raise _error(f"member {member_id}: topic {tid} appears twice in current")
            if isinstance(plist, (str, bytes)) or not hasattr(plist, "__iter__"):
                raise _error(f"member {member_id}: current[{tid}] must be a list of partitions")
            plist = list(plist)
            if plist:
                n = partitions.get(cid)
                if set(map(type, plist)) != {int} or min(plist) < 0 or (n is not None and max(plist) >= n):
                    bad = next(p for p in plist if type(p) is not int or p < 0 or (n is not None and p >= n))
                    bound = f" (topic has {n} partitions)" if n is not None else ""
                    raise _error(f"member {member_id}: partition {bad!r} of topic {tid} is out of range{bound}")
            assignment.put(cid, JavaIntSet.from_collection(plist, jdk))
        if type(current) is CurrentAssignment and with_assignments:
            current.java = (jdk, tuple((tid, partitions.get(canon(tid))) for tid in current), assignment)
        specs[member_id] = MemberSpec(member_id, instance_id, rack_id, subscribed, size, assignment,
                                      subscribed_set)

    order = hashmap_order(list(specs), string_hash)
    ordered = [specs[mid] for mid in order]
    if subscription_type is None:
        first = ordered[0].subscribed_set if ordered else frozenset()
        subscription_type = HOMOGENEOUS if all(s.subscribed_set is first or s.subscribed_set == first
                                               for s in ordered) else HETEROGENEOUS
    elif subscription_type not in (HOMOGENEOUS, HETEROGENEOUS):
        raise _error(f"subscription_type must be {HOMOGENEOUS!r} or {HETEROGENEOUS!r}, got {subscription_type!r}")
    return GroupSpec(ordered, partitions, subscription_type, jdk, spelling)


def iteration_list(s) -> list[int]:
    """A partition set in Java iteration order (a :class:`JavaIntSet`, or a list standing for a LinkedHashSet)."""
    return s.order() if isinstance(s, JavaIntSet) else list(s)


def deep_copy_assignment(old, jdk: int) -> JavaHashMap:
    """``AssignorHelpers.deepCopyAssignment``: ``new HashMap<>(map.size())``, each set ``new HashSet<>(set)``."""
    copy = new_topic_map(len(old))
    for t in old.keys():
        copy.put(t, JavaIntSet.from_collection(iteration_list(old[t]), jdk))
    return copy


def output(spec: GroupSpec, target: Mapping[str, object]) -> dict[str, dict[str, list[int]]]:
    """{member_id: {topic_id: [partitions]}} in Java iteration order everywhere: members in ``memberIds()``
    order (the order Kafka writes their target-assignment records), topics in the member's map order,
    partitions in the set's order (what the record's list holds; fed back as ``current`` it rebuilds the same).
    Topic ids are spelled as the caller spelled them (Kafka would print the canonical base64 of the same Uuid)."""
    out: dict[str, dict[str, list[int]]] = {}
    for m in spec.members:
        a = target.get(m.member_id)
        if a is None:
            out[m.member_id] = {}
            continue
        name = spec.spelling.get
        out[m.member_id] = {name(t, t): iteration_list(a[t]) for t in a.keys()}
    return out
