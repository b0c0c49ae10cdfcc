"""KIP-848 target assignment: Kafka 4.4's ``TargetAssignmentBuilder`` (consumer part) and
``UpdatedMembersAndTargetAssignmentView`` as functions (sans-IO).

Mirrors ``group-coordinator/src/main/java/org/apache/kafka/coordinator/group/modern/TargetAssignmentBuilder.java``
(``ConsumerTargetAssignmentBuilder``), ``util/UpdatedMembersAndTargetAssignmentView.java``, ``util/OverlayMap.java``
and the call in ``GroupMetadataManager.maybeUpdateTargetAssignment`` -- Apache Kafka 4.4 as carried by
confluentinc/kafka branch ``4.4``, commit 8d3916cfe15f13a2d878c79d302ba2d63172f0af.

Theory of operation
-------------------
When a heartbeat finds the group epoch ahead of the target assignment epoch (and the assignment interval allows),
Kafka recomputes the target assignment of the *whole* group with the preferred server assignor:

1. **The members as they will be** (:class:`UpdatedMembersView`): the group's members, static members and target
   assignment, overlaid with the heartbeating member's update -- not yet replayed. A static member rejoining under
   a new member id *replaces* the member holding its instance id: the old id leaves the view, the new id gets its
   target assignment. Iteration order (it decides the assignor's ``HashMap`` order within a bucket): the group's
   members in their ``TimelineHashMap`` order, an updated member in place, removed ones skipped, then new members
   (a replacing static member is new: it comes last).
2. **The assignor's input** (:func:`member_spec`): per member its rack, instance id, subscribed topic ids (names
   plus resolved regex topics, those in the metadata image) and its *current target* partitions, in the order of
   its target record; the topics of the metadata image; the subscription type.
3. **The records**: a ``ConsumerGroupTargetAssignmentMember`` for every member whose new target differs from its
   old one (or that had none; members that left were tombstoned when they left), in the assignor's member order,
   then ``ConsumerGroupTargetAssignmentMetadata`` (the group epoch, the time the computation finished).

The assignor is a parameter, called as ``assignor(members, topics, subscription_type=...)`` -- the real one is
``functools.partial(coordinator.assignors.assign_target, name)``; tests pass a fake as Kafka's tests mock
``PartitionAssignor``. Its exceptions propagate (Kafka's handler turns ``PartitionAssignorException`` into
UNKNOWN_SERVER_ERROR "Failed to compute a new target assignment for epoch N: ...").

``members`` argument (``coordinator.assignors.assign_target``)::

    {member_id: {"instance_id": str|None, "rack_id": str|None, "subscribed_topic_ids": [topic_id, ...],
                 "subscription_size": int, "current": {topic_id: [partitions]}}}

``subscription_size`` is the number of subscribed topic *names*, resolvable or not (Kafka's ``TopicIds.size()``).
Kafka iterates the subscribed names in the order of the member's ``HashSet``; here ``topic_name_order`` decides
(default: Java's ``String`` order) -- see :func:`member_spec`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from coordinator import records as R
from coordinator.assignors._spec import CurrentAssignment
from coordinator.consumer_group import (EMPTY_ASSIGNMENT, Assignment, ConsumerGroup, ConsumerGroupMember,
                                        ResolvedRegularExpression, SubscriptionType, java_string_key,
                                        target_assignment_record)
from coordinator.reconciliation import subscribed_topic_names

K = TypeVar("K")
V = TypeVar("V")

#: The assignor: (members, topics, subscription_type=...) -> {member_id: {topic_id: [partitions]}}.
Assignor = Callable[..., Mapping[str, Mapping[str, Collection[int]]]]


def _java_string_order(names: Collection[str]) -> list[str]:
    return sorted(names, key=java_string_key)


class OverlayMap(Mapping[K, V], Generic[K, V]):
    """``util.OverlayMap``: updates over an unchanged base map. Iterates the base in its order (replaced values in
    place, removed keys skipped), then the additions (a ``HashMap`` in Kafka; insertion order here -- the heartbeat
    adds at most one)."""

    def __init__(self, base: Mapping[K, V]) -> None:
        self._base = base
        self._additions: dict[K, V] = {}
        self._replacements: dict[K, V] = {}
        self._removals: set[K] = set()

    def __getitem__(self, key: K) -> V:
        if key in self._additions:
            return self._additions[key]
        if key in self._replacements:
            return self._replacements[key]
        if key in self._removals:
            raise KeyError(key)
        return self._base[key]

    def __contains__(self, key: object) -> bool:
        if key in self._additions or key in self._replacements:
            return True
        return key not in self._removals and key in self._base

    def __len__(self) -> int:
        return len(self._base) + len(self._additions) - len(self._removals)

    def __iter__(self) -> Iterator[K]:
        for key in self._base:
            if key not in self._removals:
                yield key
        yield from tuple(self._additions)

    def put(self, key: K, value: V) -> V | None:
        if key in self._additions:
            prev = self._additions[key]
            self._additions[key] = value
            return prev
        if key in self._replacements:
            prev = self._replacements[key]
            self._replacements[key] = value
            return prev
        if key in self._removals:
            self._removals.discard(key)
            self._replacements[key] = value  # back in its base slot
            return None
        if key in self._base:
            self._replacements[key] = value
            return self._base[key]
        self._additions[key] = value
        return None

    def remove(self, key: K) -> V | None:
        if key in self._additions:
            return self._additions.pop(key)
        if key in self._replacements:
            self._removals.add(key)
            return self._replacements.pop(key)
        if key in self._removals or key not in self._base:
            return None
        self._removals.add(key)
        return self._base[key]


class UpdatedMembersView:
    """``UpdatedMembersAndTargetAssignmentView``: a group's members, static members and target assignment after
    membership changes that are not written yet. The base maps must not change while the view is used."""

    def __init__(self, members: Mapping[str, Any], static_members: Mapping[str, str],
                 target_assignment: Mapping[str, Any],
                 instance_id_of: Callable[[Any], str | None] = lambda m: m.instance_id) -> None:
        self.members: OverlayMap[str, Any] = OverlayMap(members)
        self.static_members: OverlayMap[str, str] = OverlayMap(static_members)
        self.target_assignment: OverlayMap[str, Any] = OverlayMap(target_assignment)
        self._instance_id_of = instance_id_of

    @classmethod
    def of(cls, group: ConsumerGroup) -> "UpdatedMembersView":
        return cls(group.members, group.static_members, group.target_assignment)

    def add_or_update_member(self, member_id: str, member: Any) -> None:
        """A static member taking over another member's instance id inherits its target assignment and the other
        member leaves the view."""
        previous = self.members.put(member_id, member)
        previous_instance = self._instance_id_of(previous) if previous is not None else None
        instance = self._instance_id_of(member)
        if previous_instance is not None and previous_instance != instance:
            self.static_members.remove(previous_instance)  # the member changed its instance id
        if instance is not None:
            previous_id = self.static_members.put(instance, member_id)
            if previous_id is not None and previous_id != member_id:
                inherited = self.target_assignment.get(previous_id)
                if inherited is not None:
                    self.target_assignment.put(member_id, inherited)
                self.members.remove(previous_id)
                self.target_assignment.remove(previous_id)

    def remove_member(self, member_id: str) -> None:
        member = self.members.remove(member_id)
        instance = self._instance_id_of(member) if member is not None else None
        if instance is not None and self.static_members.get(instance) == member_id:
            self.static_members.remove(instance)
        self.target_assignment.remove(member_id)


@dataclass(frozen=True)
class TargetAssignmentResult:
    """``TargetAssignmentBuilder.TargetAssignmentResult``: the records to append and the new target assignment
    (member id -> :class:`Assignment`; members the assignor gave nothing may be absent)."""

    records: list[R.Record]
    target_assignment: dict[str, Assignment]


def member_spec(member: ConsumerGroupMember, current: Assignment,
                resolved_regular_expressions: Mapping[str, ResolvedRegularExpression],
                topic_ids_by_name: Mapping[str, str],
                topic_name_order: Callable[[Collection[str]], list[str]] = _java_string_order,
                current_cache: dict | None = None) -> dict:
    """``ConsumerTargetAssignmentBuilder.newMemberSubscriptionAndAssignment``, as ``assign_target`` takes it.

    ``current_cache`` (member id -> (its target :class:`Assignment`, the ``current`` made of it)) lets a caller
    that computes targets again and again hand the assignor the same ``current`` object for a member whose target
    is the same object as last time, so the assignor's input rebuilt from it is reused
    (:class:`~coordinator.assignors._spec.CurrentAssignment`)."""
    names = subscribed_topic_names(member, resolved_regular_expressions)
    if current_cache is None:
        cur: dict = {t: list(ps) for t, ps in current.partitions.items()}
    else:
        hit = current_cache.get(member.member_id)
        if hit is not None and hit[0] is current:
            cur = hit[1]
        else:
            cur = CurrentAssignment({t: list(ps) for t, ps in current.partitions.items()})
            current_cache[member.member_id] = (current, cur)
    return {
        "instance_id": member.instance_id,
        "rack_id": member.rack_id,
        "subscribed_topic_ids": [topic_ids_by_name[n] for n in topic_name_order(names) if n in topic_ids_by_name],
        "subscription_size": len(names),
        "current": cur,
    }


def build_target_assignment(group_id: str, group_epoch: int, *, members: Mapping[str, ConsumerGroupMember],
                            target_assignment: Mapping[str, Assignment], subscription_type: SubscriptionType,
                            topics: Mapping[str, Mapping[str, Any]],
                            resolved_regular_expressions: Mapping[str, ResolvedRegularExpression],
                            assignor: Assignor, now_ms: int,
                            topic_name_order: Callable[[Collection[str]], list[str]] = _java_string_order,
                            current_cache: dict | None = None) -> TargetAssignmentResult:
    """``TargetAssignmentBuilder.build``: ``members`` in the order Kafka puts them in its member map (an
    :class:`UpdatedMembersView`'s), ``target_assignment`` the previous target per member id, ``topics`` the metadata
    image (topic id -> {"name", "partitions"}), ``now_ms`` the time the computation finished; ``current_cache``
    see :func:`member_spec` (members no longer in ``members`` are dropped from it)."""
    topic_ids_by_name = {meta["name"]: tid for tid, meta in topics.items()}
    specs = {mid: member_spec(m, target_assignment.get(mid, EMPTY_ASSIGNMENT), resolved_regular_expressions,
                              topic_ids_by_name, topic_name_order, current_cache)
             for mid, m in members.items()}
    if current_cache is not None and len(current_cache) > len(specs):
        for mid in [mid for mid in current_cache if mid not in specs]:
            del current_cache[mid]
    result = assignor(specs, topics, subscription_type=subscription_type.value)
    new_target = {mid: Assignment.of(parts) for mid, parts in result.items()}

    records: list[R.Record] = []
    # Kafka walks its member map; the assignor's result lists the members in that order.
    order = [mid for mid in new_target if mid in specs] + [mid for mid in specs if mid not in new_target]
    for mid in order:
        new = new_target.get(mid, EMPTY_ASSIGNMENT)
        if new != target_assignment.get(mid):
            records.append(target_assignment_record(group_id, mid, new))
    records.append(R.ConsumerGroupTargetAssignmentMetadata(group_id, assignment_epoch=group_epoch,
                                                           assignment_timestamp_ms=now_ms))
    return TargetAssignmentResult(records, new_target)


def compute_target_assignment(group: ConsumerGroup, group_epoch: int, updated_member: ConsumerGroupMember | None,
                              *, subscription_type: SubscriptionType, topics: Mapping[str, Mapping[str, Any]],
                              assignor: Assignor, now_ms: int,
                              topic_name_order: Callable[[Collection[str]], list[str]] = _java_string_order,
                              current_cache: dict | None = None) -> TargetAssignmentResult:
    """What ``maybeUpdateTargetAssignment`` computes once it has decided to: the group with ``updated_member``
    added or updated (not replayed yet), at ``group_epoch`` (the bumped one), with the subscription type
    ``updateSubscriptionMetadata`` computed for the updated group."""
    view = UpdatedMembersView.of(group)
    if updated_member is not None:
        view.add_or_update_member(updated_member.member_id, updated_member)
    return build_target_assignment(group.group_id, group_epoch, members=view.members,
                                   target_assignment=view.target_assignment, subscription_type=subscription_type,
                                   topics=topics, resolved_regular_expressions=group.resolved_regular_expressions,
                                   assignor=assignor, now_ms=now_ms, topic_name_order=topic_name_order,
                                   current_cache=current_cache)
