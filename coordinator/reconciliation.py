"""KIP-848 member reconciliation: Kafka 4.4's ``CurrentAssignmentBuilder`` as a pure function (sans-IO).

Mirrors ``group-coordinator/src/main/java/org/apache/kafka/coordinator/group/modern/consumer/
CurrentAssignmentBuilder.java`` (and the ``TopicIds`` set it reconciles against), Apache Kafka 4.4 as carried by
confluentinc/kafka branch ``4.4``, commit 8d3916cfe15f13a2d878c79d302ba2d63172f0af.

Theory of operation
-------------------
Each heartbeat moves a member one step from its current assignment towards the group's target assignment
(:func:`reconcile`); the caller writes a ``ConsumerGroupCurrentMemberAssignment`` record iff the result differs
from the member. The steps never let two members own a partition at once:

* **revocation before assignment** -- partitions the member must give up move to *pending revocation* and the
  member stays at its epoch in ``UNREVOKED_PARTITIONS`` until its heartbeat's owned partitions no longer contain
  any of them (a heartbeat without owned partitions counts as still owning everything);
* **unreleased partitions are withheld** -- a target partition still owned by another member (its current
  partition epoch is not -1) is not given yet; the member moves to the target epoch in ``UNRELEASED_PARTITIONS``
  with what it can have, and gets the rest on a later heartbeat, once the owner has revoked it;
* otherwise the member moves to the target epoch, ``STABLE``, with its whole target.

By member state (``build``)::

    STABLE                 epoch != target epoch     -> next assignment
                           subscription changed      -> drop unsubscribed topics
                           else                      -> unchanged
    UNREVOKED_PARTITIONS   still owns a pending one  -> drop unsubscribed topics if the subscription changed,
                                                        else unchanged
                           else                      -> next assignment
    UNRELEASED_PARTITIONS                            -> next assignment
    UNKNOWN                owned None or non-empty   -> FENCED_MEMBER_EPOCH (the member must rejoin empty)
                           else                      -> next assignment, from the target epoch

Next assignment (``computeNextAssignment``), per topic of target or assigned (the target counts as empty for a
topic the member no longer subscribes to)::

    kept       = assigned & target           (each keeps the epoch it was assigned at, 4.4)
    revoke     = assigned - kept
    to assign  = target - kept - unreleased  (unreleased: owned by someone, unless it is this member's own
                                              partition pending revocation)
    1. revoke non-empty and still owned   -> UNREVOKED_PARTITIONS, epoch kept (previous := epoch),
                                             assigned = kept, pending revocation = revoke
    2. else to assign non-empty           -> STABLE or UNRELEASED_PARTITIONS, epoch := target, assigned = kept +
                                             to assign (at the target epoch), nothing pending
    3. else something unreleased          -> UNRELEASED_PARTITIONS, epoch := target, assigned = kept
    4. else                               -> STABLE, epoch := target, assigned = kept

Dropping unsubscribed topics (``updateCurrentAssignment``, a subscription change at the same epoch): with no
subscribed topic names and nothing pending, all assigned partitions move to pending revocation; otherwise each
assigned topic no longer subscribed moves (merged) to pending revocation. If something moved and the member still
owns some pending partition -> ``UNREVOKED_PARTITIONS`` at the same epoch; else the assigned partitions shrink and
the state stays. Every transition goes through ``updateMemberEpoch``: the previous epoch becomes the epoch the
member had, even when the epoch does not change.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from protocol.errors import ErrorCode

from coordinator.consumer_group import (Assignment, ConsumerGroupMember, MemberState, PartitionEpochs,
                                        ResolvedRegularExpression)
from coordinator.errors import ApiError

#: The owned partitions a heartbeat reports: (topic id, partitions) in request order; None = not sent.
OwnedPartitions = Sequence[tuple[str, Iterable[int]]] | None

UNKNOWN_STATE_MESSAGE = ("The consumer group member is in a unknown state. The member must abandon all its "
                         "partitions and rejoin.")


@dataclass(frozen=True)
class SubscribedTopicIds(Collection[str]):
    """Kafka's ``TopicIds`` over a member's subscription: contains the ids of the subscribed topic *names* the
    metadata image knows, but its size (and emptiness) is the number of names, resolvable or not."""

    names: frozenset[str]
    ids: frozenset[str]

    def __contains__(self, topic_id: object) -> bool:
        return topic_id in self.ids

    def __len__(self) -> int:
        return len(self.names)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self.ids))


def subscribed_topic_names(member: ConsumerGroupMember,
                           resolved_regular_expressions: Mapping[str, ResolvedRegularExpression]) -> frozenset[str]:
    """The topic names a member subscribes to: its names plus the topics its regex resolved to (an unresolved
    regex counts as matching nothing, to be conservative)."""
    names = member.subscribed_topic_names
    regex = member.subscribed_topic_regex
    if regex:
        resolved = resolved_regular_expressions.get(regex)
        if resolved is not None:
            if not names:
                names = resolved.topics
            elif resolved.topics:
                names = names | resolved.topics
    return frozenset(names)


def subscribed_topic_ids(member: ConsumerGroupMember,
                         resolved_regular_expressions: Mapping[str, ResolvedRegularExpression],
                         topic_ids_by_name: Mapping[str, str]) -> SubscribedTopicIds:
    """``CurrentAssignmentBuilder.subscribedTopicIds`` against a metadata image (topic name -> topic id)."""
    names = subscribed_topic_names(member, resolved_regular_expressions)
    return SubscribedTopicIds(names, frozenset(topic_ids_by_name[n] for n in names if n in topic_ids_by_name))


def reconcile(member: ConsumerGroupMember, *, target_epoch: int,
              target: Assignment | Mapping[str, Collection[int]],
              current_partition_epoch: Callable[[str, int], int],
              owned_topic_partitions: OwnedPartitions,
              subscribed_topic_ids: Collection[str],
              has_subscription_changed: bool = False) -> ConsumerGroupMember:
    """``CurrentAssignmentBuilder.build``: the member one step closer to ``target`` (the member itself when no
    step is possible). Raises :class:`~coordinator.errors.ApiError` FENCED_MEMBER_EPOCH for a member in the
    UNKNOWN state that reports owned partitions (or none at all).

    ``current_partition_epoch(topic_id, partition)`` is the group's (-1: free); ``subscribed_topic_ids`` is what
    :func:`subscribed_topic_ids` gives (a plain set of ids works when every subscribed name exists)."""
    target_parts = target.partitions if isinstance(target, Assignment) else target
    step = _Step(member, target_epoch, target_parts, current_partition_epoch, owned_topic_partitions,
                 subscribed_topic_ids)
    state = member.state
    if state == MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return step.next_assignment(member.member_epoch)
        if has_subscription_changed:
            return step.drop_unsubscribed()
        return member
    if state == MemberState.UNREVOKED_PARTITIONS:
        if step.owns_revoked(member.partitions_pending_revocation):
            return step.drop_unsubscribed() if has_subscription_changed else member
        return step.next_assignment(member.member_epoch)
    if state == MemberState.UNRELEASED_PARTITIONS:
        return step.next_assignment(member.member_epoch)
    # UNKNOWN: only after a coordinator downgrade; the member must reset and rejoin with nothing.
    if owned_topic_partitions is None or len(owned_topic_partitions) > 0:
        raise ApiError(ErrorCode.FENCED_MEMBER_EPOCH, UNKNOWN_STATE_MESSAGE)
    return step.next_assignment(target_epoch)


class _Step:
    __slots__ = ("member", "target_epoch", "target", "partition_epoch", "owned", "subscribed")

    def __init__(self, member, target_epoch, target, partition_epoch, owned, subscribed) -> None:
        self.member: ConsumerGroupMember = member
        self.target_epoch: int = target_epoch
        self.target: Mapping[str, Collection[int]] = target
        self.partition_epoch: Callable[[str, int], int] = partition_epoch
        self.owned: OwnedPartitions = owned
        self.subscribed: Collection[str] = subscribed

    def owns_revoked(self, pending: PartitionEpochs) -> bool:
        """``ownsRevokedPartitions``: no owned list, or an owned partition among ``pending``."""
        if self.owned is None:
            return True
        for topic_id, partitions in self.owned:
            revoking = pending.get(topic_id)
            if revoking and any(p in revoking for p in partitions):
                return True
        return False

    def drop_unsubscribed(self) -> ConsumerGroupMember:
        """``updateCurrentAssignment``."""
        m = self.member
        assigned, pending = m.assigned_partitions, m.partitions_pending_revocation
        if len(self.subscribed) == 0 and not pending:
            # Kafka returns the member unchanged here only when its assigned map *is* the Map.of() singleton, which
            # a member replayed from a record never holds; so this always counts as a change, as in the heartbeat.
            new_assigned: PartitionEpochs = {}
            new_pending = assigned
        else:
            new_assigned, new_pending = assigned, pending
            changed = False
            for topic_id, epochs in assigned.items():
                if topic_id not in self.subscribed:
                    if not changed:
                        new_assigned, new_pending, changed = dict(assigned), dict(pending), True
                    del new_assigned[topic_id]
                    new_pending[topic_id] = {**new_pending[topic_id], **epochs} if topic_id in new_pending else epochs
            if not changed:
                return m
        if new_pending and self.owns_revoked(new_pending):
            return m.replace(state=MemberState.UNREVOKED_PARTITIONS, assigned_partitions=new_assigned,
                             partitions_pending_revocation=new_pending).update_member_epoch(m.member_epoch)
        # Already revoked: keep the state, shrink the assigned partitions (the pending ones are left as they were).
        return m.replace(assigned_partitions=new_assigned).update_member_epoch(m.member_epoch)

    def next_assignment(self, member_epoch: int) -> ConsumerGroupMember:
        """``computeNextAssignment``."""
        m = self.member
        assigned = m.assigned_partitions
        own_pending = m.partitions_pending_revocation
        has_unreleased = False
        new_assigned: PartitionEpochs = {}
        new_pending: PartitionEpochs = {}
        to_assign: dict[str, list[int]] = {}
        for topic_id in sorted(set(self.target) | set(assigned)):
            target = frozenset(self.target.get(topic_id, ())) if topic_id in self.subscribed else frozenset()
            current = assigned.get(topic_id, {})
            kept = {p: e for p, e in current.items() if p in target}
            revoke = {p: e for p, e in current.items() if p not in kept}
            mine = own_pending.get(topic_id, {})
            wanted = []
            for p in sorted(target):
                if p in kept:
                    continue
                if self.partition_epoch(topic_id, p) != -1 and p not in mine:
                    has_unreleased = True  # still owned by another member
                else:
                    wanted.append(p)
            if kept:
                new_assigned[topic_id] = kept
            if revoke:
                new_pending[topic_id] = revoke
            if wanted:
                to_assign[topic_id] = wanted

        if new_pending and self.owns_revoked(new_pending):
            return m.replace(state=MemberState.UNREVOKED_PARTITIONS, assigned_partitions=new_assigned,
                             partitions_pending_revocation=new_pending).update_member_epoch(member_epoch)
        for topic_id, partitions in to_assign.items():  # new partitions are assigned at the target epoch
            epochs = new_assigned.setdefault(topic_id, {})
            for p in partitions:
                epochs[p] = self.target_epoch
        state = MemberState.UNRELEASED_PARTITIONS if has_unreleased else MemberState.STABLE
        return m.replace(state=state, assigned_partitions=new_assigned,
                         partitions_pending_revocation={}).update_member_epoch(self.target_epoch)
