"""Mixed groups and online migration between the classic and the consumer (KIP-848) group protocols (Kafka 4.4
``GroupMetadataManager``: ``convertToConsumerGroup``, ``convertToClassicGroup``, ``classicGroupJoinToConsumerGroup``,
``classicGroupSyncToConsumerGroup``, ``classicGroupHeartbeatToConsumerGroup``, ``classicGroupLeaveToConsumerGroup``;
``ConsumerGroup.fromClassicGroup``, ``ClassicGroup.fromConsumerGroup``; confluentinc/kafka branch ``4.4``, commit
8d3916cfe15f13a2d878c79d302ba2d63172f0af).

``group.consumer.migration.policy`` decides (``bidirectional`` by default; conversions of *empty* groups always
happen):

* **upgrade** -- a ConsumerGroupHeartbeat at epoch 0 to a non-empty classic group that uses the consumer embedded
  protocol: parked JoinGroup/SyncGroup requests are answered REBALANCE_IN_PROGRESS, the classic group is
  tombstoned and re-created as a consumer group whose members are the classic members (classic member metadata
  kept, STABLE at the generation as member epoch, assignment decoded from the classic assignment bytes, each a
  session timer with its classic session timeout); the heartbeat then proceeds on it (its new subscription bumps
  the epoch and the classic members are asked to rejoin through REBALANCE_IN_PROGRESS).
* **classic members inside a consumer group** -- JoinGroup, SyncGroup, Heartbeat and LeaveGroup of a non-empty
  consumer group are served by the consumer group: the classic member is a consumer group member with classic
  member metadata, reconciled by the same ``CurrentAssignmentBuilder`` (its generation is its member epoch), told to
  rejoin with REBALANCE_IN_PROGRESS (epoch behind the target, partitions to revoke or newly free), with
  ``join-<group>-<member>`` / ``sync-<group>-<member>`` timers instead of the rebalance timer. With policy
  ``disabled`` such a join is INCONSISTENT_GROUP_PROTOCOL.
* **downgrade** -- when the last consumer-protocol member leaves (or is fenced, or a classic member replaces the
  last consumer-protocol static member) and the classic members left fit ``group.max.size``: the consumer group is
  tombstoned and replaced by a Stable classic group of the remaining members (their target assignments serialized
  in their protocol's version), which then rebalances.

kgroup's classic group is rebuilt from its ``GroupMetadata`` record (every member with the *selected* protocol
only, where Kafka's in-memory group after a downgrade keeps each member's full protocol list until it rejoins).
"""

from __future__ import annotations

from typing import Any

from protocol.consumer_protocol import (PROTOCOL_TYPE, ConsumerProtocolAssignment, decode_assignment,
                                        decode_subscription, encode_assignment)
from protocol.error_responses import (heartbeat_error, join_group_error, shape_join_group_response,
                                      sync_group_error)
from protocol.errors import ErrorCode
from protocol.exceptions import ProtocolError
from protocol.messages import HeartbeatResponse, JoinGroupResponse, SyncGroupResponse
from protocol.java import hashmap_order

from coordinator import records as R
from coordinator.consumer_group import (ConsumerGroup, ConsumerGroupMember, MemberState, current_assignment_record,
                                        group_tombstone_records, member_metadata_record, target_assignment_record)
from coordinator.errors import ApiError
from coordinator.group import ClassicGroup, GroupState, Member
from coordinator.responses import leave_response
from coordinator.timeline import TimelineHashMap
from coordinator.timers import consumer_join_timer, consumer_sync_timer, session_timeout_timer

E = ErrorCode
EMPTY_ASSIGNMENT = b""


# ======================================================================================================================
# Upgrade: classic -> consumer
# ======================================================================================================================

def convert_to_consumer_group(mgr: Any, classic: ClassicGroup, records: list) -> ConsumerGroup:
    """``convertToConsumerGroup`` (``validateOnlineUpgrade`` passed): the records that turn ``classic`` into a
    consumer group, appended to ``records``; returns that consumer group (in memory: the records create it when the
    operation commits)."""
    gid = classic.group_id
    # completeAllJoinFutures / completeAllSyncFutures(REBALANCE_IN_PROGRESS)
    rt = mgr.rt
    for table in (rt.parked_joins, rt.parked_syncs):
        for key in [k for k in table.keys() if k[0] == gid]:
            parked = table.pop(key)
            if table is rt.parked_joins:
                rt.release(parked.request_id, shape_join_group_response(
                    join_group_error(E.REBALANCE_IN_PROGRESS, key[1]), parked.api_version))
            else:
                rt.release(parked.request_id, sync_group_error(E.REBALANCE_IN_PROGRESS))
    records.append(R.GroupTombstone(gid, reason="upgraded the classic group to a consumer group"))
    try:
        consumer_records = _consumer_group_records_from_classic(mgr, classic)
    except _Malformed:
        raise ApiError(E.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {gid} to consumer group because the "
                                             "embedded consumer protocol is malformed.") from None
    except _CustomAssignor:
        raise ApiError(E.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {gid} to consumer group because an "
                                             "unsupported custom assignor is in use. Please refer to the "
                                             "documentation or switch to a default assignor before re-attempting "
                                             "the upgrade.") from None
    records += consumer_records
    group = ConsumerGroup(gid)
    for rec in consumer_records:
        group.replay(rec)
    # The classic group's timers would find no classic group; the members get consumer session timers (their
    # classic session timeouts).
    mgr.timers.cancel_group(gid)
    for mid, m in group.members.items():
        mgr.timers.schedule(session_timeout_timer(gid, mid), rt.now_ms + m.classic_protocol_session_timeout_ms)
    return group


class _Malformed(Exception):
    pass


class _CustomAssignor(Exception):
    pass


def _consumer_group_records_from_classic(mgr: Any, classic: ClassicGroup) -> list[R.Record]:
    """``ConsumerGroup.fromClassicGroup`` + ``createConsumerGroupRecords``: group epoch and assignment epoch = the
    generation (timestamp 0), every member STABLE at the generation with its last classic assignment."""
    image = mgr.image
    gid = classic.group_id
    generation = classic.generation_id
    members: TimelineHashMap[str, ConsumerGroupMember] = TimelineHashMap()
    targets: dict[str, dict[str, list[int]]] = {}
    # ClassicGroup.allMembers() iterates its HashMap (kgroup's dict keeps the insertion order Kafka's puts had).
    for cm in (classic.members[mid] for mid in hashmap_order(list(classic.members))):
        try:
            if cm.assignment == EMPTY_ASSIGNMENT:
                assigned: dict[str, list[int]] = {}
            else:
                _, assignment = decode_assignment(cm.assignment)
                if assignment.user_data:
                    raise _CustomAssignor()
                assigned = _topic_partition_map(assignment.assigned_partitions, image)
            _, sub = decode_subscription(cm.metadata(classic.protocol_name))
        except ProtocolError:
            raise _Malformed() from None
        member = ConsumerGroupMember(
            cm.member_id, member_epoch=generation, state=MemberState.STABLE, previous_member_epoch=generation,
            instance_id=cm.group_instance_id, rack_id=sub.rack_id or None, rebalance_timeout_ms=cm.rebalance_timeout_ms,
            client_id=cm.client_id, client_host=cm.client_host, subscribed_topic_names=frozenset(sub.topics),
            assigned_partitions={t: dict.fromkeys(ps, generation) for t, ps in assigned.items()},
            classic_member_metadata=R.ClassicMemberMetadata(cm.session_timeout_ms, cm.protocols))
        members[cm.member_id] = member
        targets[cm.member_id] = assigned
    subscribed = set()
    for m in members.values():
        subscribed |= m.subscribed_topic_names
    metadata_hash = mgr._metadata_hash(subscribed)
    out: list[R.Record] = [member_metadata_record(gid, m) for m in members.values()]
    out.append(R.ConsumerGroupMetadata(gid, epoch=generation, metadata_hash=metadata_hash))
    out += [target_assignment_record(gid, mid, targets[mid]) for mid in members]
    out.append(R.ConsumerGroupTargetAssignmentMetadata(gid, assignment_epoch=generation, assignment_timestamp_ms=0))
    out += [current_assignment_record(gid, m) for m in members.values()]
    return out


def _topic_partition_map(partitions, image) -> dict[str, list[int]]:
    """``Utils.toTopicPartitionMap``: topic names to ids; topics the image does not know are dropped."""
    out: dict[str, list[int]] = {}
    for topic, ps in partitions:
        tid = image.topic_id(topic)
        if tid is not None:
            out[tid] = sorted(set(ps))
    return out


def _owned_from_subscription(owned, image) -> list[tuple[str, list[int]]]:
    """``Utils.toTopicPartitions``: a classic member's owned partitions by topic id (unknown topics dropped)."""
    return [(image.topic_id(t), list(ps)) for t, ps in owned if image.topic_id(t) is not None]


# ======================================================================================================================
# Downgrade: consumer -> classic
# ======================================================================================================================

def validate_online_downgrade_with_replaced_member(mgr: Any, group: ConsumerGroup,
                                                   replaced: ConsumerGroupMember) -> bool:
    """``validateOnlineDowngradeWithReplacedMember``."""
    if not group.all_members_use_classic_protocol_except(replaced):
        return False
    if not mgr.config.downgrade_enabled:
        return False
    return len(group.members) <= mgr.config.group_max_size


def convert_to_classic_group(mgr: Any, group: ConsumerGroup, leaving: list[ConsumerGroupMember],
                             joining: ConsumerGroupMember | None, *, rebalance: bool, reason: str | None,
                             records: list | None = None) -> None:
    """``convertToClassicGroup``: the consumer group's tombstones (the joining static member's id in place of the
    one it replaces, whose records are already in ``records``), then the classic group's ``GroupMetadata``; the
    records are appended (after ``records``, if given), every member's classic session timer armed, and the group
    rebalances if asked."""
    gid = group.group_id
    rt = mgr.rt
    out = list(records or [])
    if joining is None:
        out += group_tombstone_records(group)
    else:
        replaced = group.static_member(joining.instance_id)
        if replaced is None:
            raise ValueError("joining must be a static member when not None")
        out += group_tombstone_records(group, replaced=(replaced.member_id, joining.member_id))
    classic = _classic_group_from_consumer_group(mgr, group, leaving, joining, rt.now_ms)
    out.append(classic.to_group_metadata())
    for rec in out:
        rt.append(rec)
    mgr.timers.cancel_group(gid)
    mgr._refresh_deadlines.pop(gid, None)
    cmgr = mgr.classic
    g = cmgr.groups.get(gid)
    for m in g.members.values():
        cmgr.reschedule_heartbeat(g, m)
    if rebalance:
        cmgr._prepare_rebalance(g, reason or "")


def _classic_group_from_consumer_group(mgr: Any, group: ConsumerGroup, leaving: list[ConsumerGroupMember],
                                       joining: ConsumerGroupMember | None, now_ms: int) -> ClassicGroup:
    """``ClassicGroup.fromConsumerGroup``: Stable, generation = group epoch, protocol type "consumer", the first
    member the leader, the protocol voted, each member's target assignment serialized in the version of its
    metadata for that protocol."""
    leaving_ids = {m.member_id for m in leaving}
    cg = ClassicGroup(group.group_id, state=GroupState.STABLE, previous_state=GroupState.STABLE,
                      generation_id=group.group_epoch, protocol_type=PROTOCOL_TYPE,
                      current_state_timestamp_ms=now_ms)

    def add(m: ConsumerGroupMember) -> None:
        cg._add_member(Member(m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                              m.classic_protocol_session_timeout_ms, PROTOCOL_TYPE,
                              tuple(m.supported_classic_protocols)))
        if cg.leader_id is None:
            cg.leader_id = m.member_id
        if m.instance_id is not None:
            cg.static_members[m.instance_id] = m.member_id

    for mid, m in group.members.items():
        if mid in leaving_ids:
            continue
        if joining is not None and joining.instance_id is not None and joining.instance_id == m.instance_id:
            continue
        add(m)
    if joining is not None:
        add(joining)
    cg.protocol_name = cg.select_protocol()
    image = mgr.image
    for cm in cg.members.values():
        source = cm.member_id
        if joining is not None and cm.member_id == joining.member_id:
            source = group.static_member(joining.instance_id).member_id
        target = group.target_assignment.get(source)
        parts = dict(target.partitions) if target is not None else {}
        version = _metadata_version(cm.metadata(cg.protocol_name))
        cm.assignment = encode_assignment(ConsumerProtocolAssignment(_by_name(parts, image)), version)
    return cg


def _metadata_version(metadata: bytes) -> int:
    """``ConsumerProtocol.deserializeVersion``: the version a member's subscription was written in."""
    if len(metadata) < 2:
        raise ApiError(E.UNKNOWN_SERVER_ERROR, "Malformed embedded consumer protocol in version deserialization.")
    return int.from_bytes(metadata[:2], "big", signed=True)


def _by_name(parts, image) -> list[tuple[str, list[int]]]:
    """``Utils.toConsumerProtocolAssignment``: topic ids to names (topics the image does not know are left out)."""
    out = []
    for tid, ps in parts.items():
        name = image.topic_name(tid)
        if name is not None:
            out.append((name, sorted(ps)))
    return out


# ======================================================================================================================
# Classic members inside a consumer group
# ======================================================================================================================

def classic_join(mgr: Any, req: Any) -> Any:
    """``classicGroupJoinToConsumerGroup`` (the group is a non-empty consumer group)."""
    rt = mgr.rt
    context = rt.request
    version = context.api_version
    group = mgr.groups.get(req.group_id)
    try:
        return _classic_join(mgr, group, req, version, context)
    except ApiError as e:
        # The JoinGroup error answers (GroupCoordinatorService.joinGroup: handleOperationException -> the error and
        # the request's member id).
        return shape_join_group_response(join_group_error(e.error, req.member_id), version)


def _classic_join(mgr: Any, group: ConsumerGroup, req: Any, version: int, context: Any) -> Any:
    rt = mgr.rt
    gid = group.group_id
    if mgr.config.group_consumer_migration_policy == "disabled":
        raise ApiError(E.INCONSISTENT_GROUP_PROTOCOL, f"Cannot join the consumer group {gid} with the classic "
                                                      "protocol because the group migration is disabled.")
    now = rt.now_ms
    records: list[R.Record] = []
    instance_id = req.group_instance_id if version >= 5 else None
    protocols = tuple((p.name, bytes(p.metadata)) for p in req.protocols)
    member_id = req.member_id
    is_unknown = member_id == ""
    if is_unknown:
        member_id = rt.new_kafka_uuid()
    mgr._throw_if_full(group, member_id, instance_id)
    if not group.supports_classic_protocols(req.protocol_type, [n for n, _ in protocols]):
        raise ApiError(E.INCONSISTENT_GROUP_PROTOCOL, f"Member {member_id}'s protocols are not supported.")
    if is_unknown and version >= 4 and instance_id is None:  # JoinGroupRequest.requiresKnownMemberId
        return shape_join_group_response(join_group_error(E.MEMBER_ID_REQUIRED, member_id), version)

    if instance_id is None:
        member = group.get_or_create_member(member_id, True)
    else:
        member = mgr._get_or_maybe_subscribe_static_member(group, member_id, -1, instance_id, [], is_unknown,
                                                           records, use_classic_protocol=True)
    existing = group.static_member(instance_id)
    downgrade = existing is not None and validate_online_downgrade_with_replaced_member(mgr, group, existing)
    group_epoch, sub_type = group.group_epoch, group.subscription_type
    try:
        _, subscription = decode_subscription(protocols[0][1])
    except (ProtocolError, IndexError):
        raise ApiError(E.INCONSISTENT_GROUP_PROTOCOL,
                       "Malformed embedded consumer protocol in subscription deserialization.") from None

    changes: dict[str, Any] = {"subscribed_topic_names": frozenset(subscription.topics), "subscribed_topic_regex": "",
                               "client_id": context.client_id, "client_host": context.client_host,
                               "classic_member_metadata": R.ClassicMemberMetadata(req.session_timeout_ms,
                                                                                   protocols)}
    if instance_id is not None:
        changes["instance_id"] = instance_id
    if subscription.rack_id:  # Utils.toOptional: null or empty is "no rack"
        changes["rack_id"] = subscription.rack_id
    rebalance_timeout = req.rebalance_timeout_ms if version >= 1 else -1
    if rebalance_timeout != -1:
        changes["rebalance_timeout_ms"] = rebalance_timeout
    updated = member.replace(**changes)

    changed = mgr._has_member_subscription_changed(gid, member, updated, records)
    regex_status = mgr._maybe_update_regular_expressions(group, member, updated, records)
    bump = changed or regex_status != "NO_CHANGE"
    if bump or mgr._has_metadata_expired(group, now):
        group_epoch, sub_type = mgr._update_subscription_metadata(group, bump, member, updated, records)
    owned = _owned_from_subscription(subscription.owned_partitions, mgr.image)

    if downgrade:
        rebalance = group.assignment_epoch < group_epoch
        if not rebalance:
            updated = mgr._maybe_reconcile(group, updated, group.assignment_epoch,
                                           group.target_assignment_of(updated.member_id, updated.instance_id),
                                           bump, owned, records)
        convert_to_classic_group(mgr, group, [], updated, rebalance=rebalance,
                                 reason=(f"Downgrade group {gid} from consumer to classic with stale assignment."
                                         if rebalance else None), records=records)
    else:
        target_epoch, target = mgr._maybe_update_target_assignment(group, group_epoch, member, updated, sub_type,
                                                                   records)
        updated = mgr._maybe_reconcile(group, updated, target_epoch, target, bump, owned, records)
        for rec in records:
            rt.append(rec)
    resp = JoinGroupResponse(error_code=0, generation_id=updated.member_epoch, protocol_type=PROTOCOL_TYPE,
                             protocol_name=updated.supported_classic_protocols[0][0], leader="",
                             skip_assignment=False, member_id=updated.member_id, members=[])
    # After the write: the join timer goes; the session and sync timers are armed (unless the group was
    # downgraded: the classic group has its own).
    mgr.timers.cancel(consumer_join_timer(gid, updated.member_id))
    if not downgrade:
        mgr._schedule_session_timeout(gid, updated.member_id, req.session_timeout_ms)
        mgr.timers.schedule(consumer_sync_timer(gid, updated.member_id), rt.now_ms + rebalance_timeout)
    return shape_join_group_response(resp, version)


def _validate_member(group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerGroupMember:
    """``validateConsumerGroupMember``."""
    if instance_id is None:
        return group.get_or_create_member(member_id, False)
    member = group.static_member(instance_id)
    if member is None:
        raise ApiError(E.UNKNOWN_MEMBER_ID, f"Member with instance id {instance_id} is not a member of group "
                                            f"{group.group_id}.")
    if member.member_id != member_id:
        raise ApiError(E.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id {instance_id} was fenced "
                                             f"by member {member.member_id}.")
    return member


def _throw_if_not_classic(member: ConsumerGroupMember) -> None:
    if not member.use_classic_protocol:
        raise ApiError(E.UNKNOWN_MEMBER_ID, f"Member {member.member_id} does not use the classic protocol.")


def _throw_if_generation_unmatched(member_id: str, member_epoch: int, generation: int) -> None:
    if member_epoch != generation:
        raise ApiError(E.ILLEGAL_GENERATION, f"The request generation id {generation} is not equal to the member "
                                             f"epoch {member_epoch} of member {member_id}.")


def _schedule_join_timeout_if_absent(mgr: Any, group_id: str, member: ConsumerGroupMember) -> None:
    key = consumer_join_timer(group_id, member.member_id)
    if key not in mgr.timers:
        mgr.timers.schedule(key, mgr.rt.now_ms + member.rebalance_timeout_ms)


def classic_sync(mgr: Any, req: Any) -> Any:
    """``classicGroupSyncToConsumerGroup``: the member's current assignment, serialized; REBALANCE_IN_PROGRESS
    (and a join timer) when a newer target awaits it."""
    version = mgr.rt.request.api_version
    group = mgr.groups.get(req.group_id)
    instance_id = req.group_instance_id if version >= 3 else None
    protocol_type = req.protocol_type if version >= 5 else None
    protocol_name = req.protocol_name if version >= 5 else None
    try:
        member = _validate_member(group, req.member_id, instance_id)
        _throw_if_not_classic(member)
        _throw_if_generation_unmatched(member.member_id, member.member_epoch, req.generation_id)
        name = member.supported_classic_protocols[0][0]
        if protocol_type is not None and protocol_type != PROTOCOL_TYPE:
            raise ApiError(E.INCONSISTENT_GROUP_PROTOCOL)
        if protocol_name is not None and protocol_name != name:
            raise ApiError(E.INCONSISTENT_GROUP_PROTOCOL)
        if group.assignment_epoch > member.member_epoch and member.state != MemberState.UNREVOKED_PARTITIONS:
            _schedule_join_timeout_if_absent(mgr, group.group_id, member)  # kept: Kafka schedules, then throws
            return sync_group_error(E.REBALANCE_IN_PROGRESS)
    except ApiError as e:
        return sync_group_error(e.error)
    gid = group.group_id
    mgr.timers.cancel(consumer_sync_timer(gid, req.member_id))
    mgr._schedule_session_timeout(gid, req.member_id, member.classic_protocol_session_timeout_ms)
    assignment = encode_assignment(ConsumerProtocolAssignment(_by_name(member.assigned_partitions, mgr.image)),
                                   _metadata_version(member.supported_classic_protocols[0][1]))
    return SyncGroupResponse(error_code=0, protocol_type=protocol_type, protocol_name=protocol_name,
                             assignment=assignment)


def classic_heartbeat(mgr: Any, req: Any) -> Any:
    """``classicGroupHeartbeatToConsumerGroup``: REBALANCE_IN_PROGRESS when the member is behind the target
    assignment epoch, must revoke, or can now get its unreleased partitions."""
    version = mgr.rt.request.api_version
    group = mgr.groups.get(req.group_id)
    instance_id = req.group_instance_id if version >= 3 else None
    try:
        member = _validate_member(group, req.member_id, instance_id)
        _throw_if_not_classic(member)
        _throw_if_generation_unmatched(req.member_id, member.member_epoch, req.generation_id)
    except ApiError as e:
        return heartbeat_error(e.error)
    gid = group.group_id
    mgr._schedule_session_timeout(gid, req.member_id, member.classic_protocol_session_timeout_ms)
    if (member.member_epoch < group.assignment_epoch or member.state == MemberState.UNREVOKED_PARTITIONS
            or (member.state == MemberState.UNRELEASED_PARTITIONS
                and not group.waiting_on_unreleased_partition(member))):
        _schedule_join_timeout_if_absent(mgr, gid, member)
        return HeartbeatResponse(error_code=int(E.REBALANCE_IN_PROGRESS))
    return HeartbeatResponse(error_code=0)


def classic_leave(mgr: Any, req: Any) -> Any:
    """``classicGroupLeaveToConsumerGroup``: each identity validated (an instance id alone removes its static
    member: the admin path), the valid ones fenced together (which may downgrade the group)."""
    version = mgr.rt.request.api_version
    group = mgr.groups.get(req.group_id)
    if version >= 3:
        identities = [(m.member_id, m.group_instance_id) for m in req.members]
    else:
        identities = [(req.member_id, None)]
    results: list[tuple[str, str | None, ErrorCode]] = []
    valid: list[ConsumerGroupMember] = []
    for mid, iid in identities:
        try:
            if iid is None:
                member = group.get_or_create_member(mid, False)
            else:
                member = group.static_member(iid)
                mgr._throw_if_static_member_unknown(member, iid)
                if mid != "":
                    mgr._throw_if_instance_id_fenced(member, mid, iid)
            results.append((mid, iid, E.NONE))
            if member not in valid:
                valid.append(member)
        except ApiError as e:
            results.append((mid, iid, e.error))
    mgr.fence_members(group, valid, "the member left through LeaveGroup")
    return leave_response(results, version)


__all__ = ["classic_heartbeat", "classic_join", "classic_leave", "classic_sync", "convert_to_classic_group",
           "convert_to_consumer_group", "validate_online_downgrade_with_replaced_member"]
