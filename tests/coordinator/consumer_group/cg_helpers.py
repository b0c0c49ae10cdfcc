"""Builders shared by the consumer-group tests: Kafka's ``AssignmentTestUtil`` in Python, and the record
sequences that stand for the direct mutations Kafka's unit tests make (``updateMember``, ``removeMember``...)."""

from __future__ import annotations

import uuid

from protocol.uuids import uuid_to_string

from coordinator import records as R
from coordinator.consumer_group import (ConsumerGroup, ConsumerGroupMember, member_records,
                                        member_removal_records, target_assignment_record)

_NS = uuid.UUID("2f1e6c1a-1111-4c1b-9a77-8c8b7a1d0001")


def tid(name: str) -> str:
    """A topic id (a Kafka Uuid string) standing for Kafka tests' ``Uuid.randomUuid()``."""
    return uuid_to_string(uuid.uuid5(_NS, name))


def mk_assignment(*entries: tuple) -> dict[str, set[int]]:
    """``mkAssignment(mkTopicAssignment(topicId, partitions...), ...)``."""
    return {t: set(ps) for t, *ps in entries}


def with_epochs(assignment: dict[str, set[int]], epoch: int) -> dict[str, dict[int, int]]:
    """``Utils.toAssignmentWithEpochs``."""
    return {t: dict.fromkeys(sorted(ps), epoch) for t, ps in assignment.items()}


def mk_epochs(*entries: tuple) -> dict[str, dict[int, int]]:
    """``mkAssignmentWithEpochs(mkTopicAssignmentWithEpochs(topicId, epoch, partitions...), ...)`` (merged per
    topic)."""
    out: dict[str, dict[int, int]] = {}
    for t, epoch, *ps in entries:
        out.setdefault(t, {}).update(dict.fromkeys(ps, epoch))
    return out


def member(member_id: str, **fields) -> ConsumerGroupMember:
    """``new ConsumerGroupMember.Builder(memberId)...build()``; names given as a list become the set."""
    if "subscribed_topic_names" in fields:
        fields["subscribed_topic_names"] = frozenset(fields["subscribed_topic_names"])
    return ConsumerGroupMember(member_id, **fields)


def update_member(group: ConsumerGroup, m: ConsumerGroupMember) -> None:
    """Kafka's ``group.updateMember(m)``: the member's metadata and current assignment records."""
    for rec in member_records(group.group_id, m):
        group.replay(rec)


def remove_member(group: ConsumerGroup, member_id: str) -> None:
    """Kafka's ``group.removeMember(id)`` (with the target assignment tombstone replay requires first)."""
    for rec in member_removal_records(group.group_id, member_id):
        group.replay(rec)


def set_group_epoch(group: ConsumerGroup, epoch: int) -> None:
    group.replay(R.ConsumerGroupMetadata(group.group_id, epoch=epoch, metadata_hash=group.metadata_hash))


def set_target_assignment_metadata(group: ConsumerGroup, epoch: int, timestamp_ms: int) -> None:
    group.replay(R.ConsumerGroupTargetAssignmentMetadata(group.group_id, assignment_epoch=epoch,
                                                         assignment_timestamp_ms=timestamp_ms))


def update_target_assignment(group: ConsumerGroup, member_id: str, assignment: dict) -> None:
    group.replay(target_assignment_record(group.group_id, member_id, {t: sorted(ps) for t, ps in assignment.items()}))


def remove_target_assignment(group: ConsumerGroup, member_id: str) -> None:
    group.replay(R.ConsumerGroupTargetAssignmentMemberTombstone(group.group_id, member_id=member_id))


def update_resolved_regex(group: ConsumerGroup, regex: str, topics, version: int, timestamp_ms: int) -> None:
    group.replay(R.ConsumerGroupRegularExpression(group.group_id, regular_expression=regex, topics=sorted(topics),
                                                  version=version, timestamp_ms=timestamp_ms))


def remove_resolved_regex(group: ConsumerGroup, regex: str) -> None:
    group.replay(R.ConsumerGroupRegularExpressionTombstone(group.group_id, regular_expression=regex))
