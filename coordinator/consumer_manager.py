"""KIP-848's consumer group protocol on the coordinator: ConsumerGroupHeartbeat (join, heartbeat, leave), the
session / rebalance timers, the regex resolution, the partition load (Kafka 4.4 ``GroupMetadataManager``, its
``consumerGroup*`` part; Apache Kafka 4.4 as carried by confluentinc/kafka branch ``4.4``, commit
8d3916cfe15f13a2d878c79d302ba2d63172f0af).

Rules this file lives by
------------------------
* One operation per request or timer (the shard runs it on its runtime, ``coordinator.runtime``). A handler reads
  the consumer group (``coordinator.consumer_group``, changed only by replaying records), decides as Kafka's
  ``consumerGroupHeartbeat`` does -- *collecting* its records in a list, exactly as Kafka does, so every decision
  sees the group as it was before the request -- and appends them all at the end (``runtime.append`` replays each).
  A Kafka error is raised as :class:`~coordinator.errors.ApiError` before anything is appended: the runtime rolls
  back the timers it touched and the service answers with the error and its message.
* Everything Kafka keeps in memory only (the metadata refresh deadlines, the last image with new topics) is kept
  here and, as in Kafka, lost on failover.
* Reconciliation is ``coordinator.reconciliation`` (``CurrentAssignmentBuilder``); the target assignment is
  ``coordinator.target_assignment`` (``TargetAssignmentBuilder``) with ``coordinator.assignors`` (``uniform``,
  ``range``); regexes are ``coordinator.topic_regex`` (RE2J's syntax).

The heartbeat (``consumerGroupHeartbeat``), step by step
--------------------------------------------------------
1. the group: created for epoch 0 (an *empty* classic group of that id is tombstoned and replaced, a non-empty one
   is upgraded when ``group.consumer.migration.policy`` allows), else GROUP_ID_NOT_FOUND; ``group.consumer.max.size``;
2. the member: dynamic (by member id; v0 with an empty id gets ``Uuid.randomUuid()``) or static (by instance id: a
   rejoin at epoch 0 *replaces* the member that left with epoch -2, else UNRELEASED_INSTANCE_ID; FENCED_INSTANCE_ID,
   "Instance id I is unknown."); the epoch check: 0 always passes, a newer epoch is FENCED_MEMBER_EPOCH, an older
   one passes only if it is the member's previous epoch and the owned partitions are a subset of its assignment;
3. the member updated with the request's non-null fields (client id and host from the connection); a
   ``ConsumerGroupMemberMetadata`` record if anything changed; regex bookkeeping (a new regex is compiled -- RE2J
   syntax -- and its resolution scheduled: the epoch is bumped when it resolves, not now);
4. the group epoch bumped (``ConsumerGroupMetadata``) when the subscribed names changed, an already-resolved regex
   was (un)subscribed, the preferred assignor changed, or -- when the group's metadata refresh is due -- the hash of
   the subscribed topics' metadata changed;
5. the target assignment recomputed when the group epoch is ahead of the assignment epoch and
   ``group.consumer.assignment.interval.ms`` has passed since the last computation (``ConsumerGroupTargetAssignment*``
   records); otherwise the member reconciles towards the last target;
6. reconciliation one step towards the target (``ConsumerGroupCurrentMemberAssignment`` when the member changed;
   the rebalance timer armed while it has partitions to revoke, cancelled otherwise); the session timer re-armed;
7. the response: member id, epoch, heartbeat interval, and the assignment when the member (re)joined, sent a full
   request, or its assigned partitions changed.

Leave (epoch -1, or -2 for a static member's temporary leave) and fencing (session or rebalance timeout) remove the
member: current assignment, target assignment and metadata tombstones, regex tombstones, the group epoch bumped
(and the target assignment epoch too when the group becomes empty, KAFKA-20442).

Deviation (documented in docs/coordinator.md): Kafka resolves regexes asynchronously on an executor; kgroup runs the
resolution as its own operation due at the same instant (a timer keyed ``<group>-regex``), after the heartbeat that
asked for it -- the epochs move exactly as in Kafka, only without the few milliseconds the executor takes.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Mapping

from protocol.errors import ErrorCode
from protocol.java import hashmap_order, hashset_copy_capacity
from protocol.messages import ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatResponse
from protocol.uuids import uuid_from_string, uuid_to_string

from coordinator import records as R
from coordinator.assignors import PartitionAssignorError, assign_target
from coordinator.cluster import Cluster
from coordinator.config import CoordinatorConfig
from coordinator.consumer_group import (EMPTY_ASSIGNMENT, JOIN_GROUP_MEMBER_EPOCH, LEAVE_GROUP_MEMBER_EPOCH,
                                        LEAVE_GROUP_STATIC_MEMBER_EPOCH, Assignment, ConsumerGroup,
                                        ConsumerGroupMember, ConsumerGroupState, MemberState,
                                        ResolvedRegularExpression, SubscriptionType, current_assignment_record,
                                        group_tombstone_records, has_assigned_partitions_changed,
                                        member_metadata_record, member_removal_records, subscription_type,
                                        target_assignment_record)
from coordinator.errors import ApiError
from coordinator.group import GroupState
from coordinator.metadata_image import MetadataImage, compute_metadata_hash, image_delta
from coordinator.reconciliation import reconcile, subscribed_topic_ids
from coordinator.runtime import CoordinatorRuntime
from coordinator.target_assignment import compute_target_assignment
from coordinator.timers import (consumer_join_timer, consumer_sync_timer, rebalance_timeout_timer,
                                regex_resolution_timer, session_timeout_timer)
from coordinator.topic_regex import RegexError, compile_topic_regex

E = ErrorCode

#: ``METADATA_REFRESH_INTERVAL_MS``: Integer.MAX_VALUE -- time-based refresh is effectively off; a refresh is
#: requested by a metadata change (``onMetadataUpdate``).
METADATA_REFRESH_INTERVAL_MS = 2**31 - 1
#: ``REGEX_BATCH_REFRESH_MIN_INTERVAL_MS``.
REGEX_BATCH_REFRESH_MIN_INTERVAL_MS = 10_000
#: ``Long.MIN_VALUE``: "never refreshed".
_NEVER = -(2**63)

# UpdateRegularExpressionStatus
NO_CHANGE, REGEX_UPDATED, REGEX_UPDATED_AND_RESOLVED = "NO_CHANGE", "REGEX_UPDATED", "REGEX_UPDATED_AND_RESOLVED"

#: The assignor as the manager calls it: (name, members, topics, subscription_type=...) -> target assignment.
AssignorFn = Callable[..., Mapping[str, Mapping[str, Any]]]


def java_hashset_order(names) -> list[str]:
    """The iteration order of ``new HashSet<>(names)`` for a member's subscribed topic names (Kafka builds the set
    from its record's sorted list). Remembered per set of names: every target assignment asks it for every member,
    and members mostly share one subscription."""
    key = names if isinstance(names, frozenset) else frozenset(names)
    order = _HASHSET_ORDERS.get(key)
    if order is None:
        ordered = sorted(key, key=lambda s: s.encode("utf-16-be", "surrogatepass"))
        if len(_HASHSET_ORDERS) >= 4096:
            _HASHSET_ORDERS.clear()
        order = _HASHSET_ORDERS[key] = tuple(hashmap_order(ordered,
                                                           initial_capacity=hashset_copy_capacity(len(ordered))))
    return list(order)


_HASHSET_ORDERS: dict[frozenset, tuple[str, ...]] = {}


def _not_empty(s: str | None) -> bool:
    return s is not None and s != ""


class ConsumerGroupManager:
    """The KIP-848 consumer groups of one offsets partition: the heartbeat, leave, timers, load, describe."""

    def __init__(self, rt: CoordinatorRuntime, config: CoordinatorConfig, cluster: Cluster | None = None,
                 assignor: AssignorFn | None = None, classic: Any = None) -> None:
        self.rt = rt
        self.config = config
        self.cluster = cluster
        self.groups = rt.state.consumer_groups   # read-only here: changed by rt.append only
        self.classic_groups = rt.state.groups
        self.classic = classic                     # the classic manager (conversions between the two types)
        self.timers = rt.timers
        self._assignor = assignor if assignor is not None else assign_target
        # In memory only, as in Kafka (lost on failover): metadata refresh deadlines (group -> (deadline, epoch);
        # absent = expired), the metadata image and the last image version that created topics.
        self._refresh_deadlines: dict[str, tuple[int, int]] = {}
        self._image = MetadataImage()
        self._last_image_with_new_topics = -1
        # per group, member id -> (its target Assignment, the assignor's ``current`` made of it): a target
        # computation reuses what the assignor rebuilt from an unchanged target (coordinator.target_assignment)
        self._current_cache: dict[str, dict] = {}

    # ==========================================================================================================
    # Metadata (onMetadataUpdate)
    # ==========================================================================================================

    @property
    def image(self) -> MetadataImage:
        self._sync_image()
        return self._image

    def _sync_image(self) -> None:
        """Catch up with the cluster's topics (``GroupMetadataManager.onMetadataUpdate`` for every change since the
        last look)."""
        c = self.cluster
        if c is None or (self._image.version == c.metadata_version and self._last_image_with_new_topics != -1):
            return
        self._apply_image(MetadataImage.from_cluster(c))

    def set_image(self, image: MetadataImage) -> None:
        """Use ``image`` as the metadata image (tests that pin Kafka's test images; the coordinator itself follows
        its cluster)."""
        self._apply_image(image)

    def _apply_image(self, new: MetadataImage) -> None:
        """``onMetadataUpdate``: groups subscribed to a created, changed or deleted topic refresh their metadata at
        their next heartbeat; an image that created topics makes the regexes due for a refresh."""
        old = self._image
        self._image = new
        if self._last_image_with_new_topics == -1:
            self._last_image_with_new_topics = new.version
        delta = image_delta(old, new)
        if delta.created:
            self._last_image_with_new_topics = new.version
        touched = set(delta.created + delta.changed + delta.deleted)
        if touched:
            for g in self.groups:
                if any(g.is_subscribed_to_topic(t) for t in touched):
                    self._refresh_deadlines.pop(g.group_id, None)  # requestMetadataRefresh

    def _has_metadata_expired(self, group: ConsumerGroup, now_ms: int) -> bool:
        """``ModernGroup.hasMetadataExpired``: the deadline passed, or it was set for an epoch the group never
        reached (the operation that set it failed)."""
        deadline, epoch = self._refresh_deadlines.get(group.group_id, (0, 0))
        return now_ms >= deadline or group.group_epoch < epoch

    def _metadata_hash(self, subscribed_topic_names) -> int:
        return compute_metadata_hash(subscribed_topic_names, self.image)

    # ==========================================================================================================
    # Settings (Kafka's per-group overrides are not modelled: the broker's values)
    # ==========================================================================================================

    def session_timeout_ms(self, group_id: str) -> int:
        return self.config.group_consumer_session_timeout_ms

    def heartbeat_interval_ms(self, group_id: str) -> int:
        return self.config.group_consumer_heartbeat_interval_ms

    def assignment_interval_ms(self, group_id: str) -> int:
        return self.config.group_consumer_assignment_interval_ms

    # ==========================================================================================================
    # ConsumerGroupHeartbeat
    # ==========================================================================================================

    def heartbeat(self, req: Any) -> Any:
        """``GroupMetadataManager.consumerGroupHeartbeat`` (the request was validated by the service)."""
        self._sync_image()
        if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return self._leave(req.group_id, req.instance_id, req.member_id, req.member_epoch)
        return self._regular_heartbeat(req)

    def _incremental_heartbeat(self, req: Any) -> Any:
        """The heartbeat of a known dynamic member at its current epoch sending only its id, epoch and maybe its
        owned partitions (Kafka's incremental heartbeat: every other field null), when the group needs no new
        epoch and no new target: ``consumerGroupHeartbeat``'s first steps find nothing to do -- the member is
        unchanged (no metadata record, no subscription or regex change), the preferred assignor and the metadata
        hash bump nothing, the target assignment is the last one -- so what is left is ``maybeReconcile`` (for a
        member already reconciled: nothing), the session timer and the response. Returns None when any of that
        does not hold: the full path decides."""
        if (req.rebalance_timeout_ms != -1 or req.instance_id is not None or req.subscribed_topic_names is not None
                or req.server_assignor is not None or req.rack_id is not None
                or getattr(req, "subscribed_topic_regex", None) is not None):
            return None
        group = self.groups.get(req.group_id)
        if group is None:
            return None
        member_id = req.member_id
        member = group.members.get(member_id)
        if member is None:
            return None
        epoch = req.member_epoch
        if (epoch != member.member_epoch or epoch <= 0 or member.classic_member_metadata is not None
                or group.subscribed_regular_expressions):
            return None
        rt = self.rt
        context = rt.request
        if member.client_id != context.client_id or member.client_host != context.client_host:
            return None
        group_id = group.group_id
        now = rt.now_ms
        # updateSubscriptionMetadata is due when the refresh deadline passed (or was set for an unreached epoch)
        deadline = self._refresh_deadlines.get(group_id)
        if deadline is None or now >= deadline[0] or group.group_epoch < deadline[1]:
            return None
        # the target this heartbeat uses: the last one, unless a new one is due now
        target_epoch = group.assignment_epoch
        if target_epoch < group.group_epoch and self.can_compute_next_target_assignment(
                group.assignment_timestamp_ms, self.assignment_interval_ms(group_id), now):
            return None
        if group.preferred_server_assignor_changed_by(member, self.config.default_consumer_group_assignor):
            return None
        if member.member_epoch == target_epoch and member.state == MemberState.STABLE:  # isReconciledTo
            self.timers.schedule(session_timeout_timer(group_id, member_id), now + self.session_timeout_ms(group_id))
            return ConsumerGroupHeartbeatResponse(member_id=member_id, member_epoch=epoch,
                                                  heartbeat_interval_ms=self.heartbeat_interval_ms(group_id))
        records: list[R.Record] = []
        updated = self._maybe_reconcile(group, member, target_epoch, group.target_assignment_of(member_id), False,
                                        _owned_partitions(req.topic_partitions), records)
        self.timers.schedule(session_timeout_timer(group_id, member_id), now + self.session_timeout_ms(group_id))
        resp = ConsumerGroupHeartbeatResponse(member_id=member_id, member_epoch=updated.member_epoch,
                                              heartbeat_interval_ms=self.heartbeat_interval_ms(group_id))
        if has_assigned_partitions_changed(member, updated):
            resp.assignment = heartbeat_assignment(updated.assigned_partitions)
        for rec in records:
            rt.append(rec)
        return resp

    def _regular_heartbeat(self, req: Any) -> Any:
        resp = self._incremental_heartbeat(req)
        if resp is not None:
            return resp
        rt = self.rt
        context = rt.request
        now = rt.now_ms
        records: list[R.Record] = []
        group_id = req.group_id
        member_epoch = req.member_epoch
        instance_id = req.instance_id
        owned = _owned_partitions(req.topic_partitions)
        regex = getattr(req, "subscribed_topic_regex", None)

        create = member_epoch == JOIN_GROUP_MEMBER_EPOCH
        group = self._get_or_maybe_create_group(group_id, create, records)
        self._throw_if_full(group, req.member_id, instance_id)

        member_id = req.member_id or rt.new_kafka_uuid()
        if instance_id is None:
            member = group.get_or_create_member(member_id, create)
            self._throw_if_member_epoch_invalid(member, member_epoch, owned)
        else:
            member = self._get_or_maybe_subscribe_static_member(group, member_id, member_epoch, instance_id, owned,
                                                                create, records)

        # 1. The member, updated with the request's fields.
        changes: dict[str, Any] = {"client_id": context.client_id, "client_host": context.client_host,
                                   "classic_member_metadata": None}
        if instance_id is not None:
            changes["instance_id"] = instance_id
        if req.rack_id is not None:
            changes["rack_id"] = req.rack_id
        if req.rebalance_timeout_ms != -1:
            changes["rebalance_timeout_ms"] = req.rebalance_timeout_ms
        if req.server_assignor is not None:
            changes["server_assignor_name"] = req.server_assignor
        if req.subscribed_topic_names is not None:
            changes["subscribed_topic_names"] = frozenset(req.subscribed_topic_names)
        if regex is not None:
            changes["subscribed_topic_regex"] = regex
        updated = member.replace(**changes)

        names_changed = self._has_member_subscription_changed(group_id, member, updated, records)
        regex_status = self._maybe_update_regular_expressions(group, member, updated, records)
        assignor_changed = self._has_preferred_server_assignor_changed(group, member, updated)
        has_subscription_changed = names_changed or regex_status != NO_CHANGE
        group_epoch = group.group_epoch
        sub_type = group.subscription_type

        bump = names_changed or regex_status == REGEX_UPDATED_AND_RESOLVED or assignor_changed
        if bump or self._has_metadata_expired(group, now):
            group_epoch, sub_type = self._update_subscription_metadata(group, bump, member, updated, records)

        # 2. The target assignment.
        target_epoch, target = self._maybe_update_target_assignment(group, group_epoch, member, updated, sub_type,
                                                                    records)
        # 3. Reconciliation.
        updated = self._maybe_reconcile(group, updated, target_epoch, target, has_subscription_changed, owned,
                                        records)
        self._schedule_session_timeout(group_id, member_id, self.session_timeout_ms(group_id))

        resp = ConsumerGroupHeartbeatResponse(member_id=updated.member_id, member_epoch=updated.member_epoch,
                                              heartbeat_interval_ms=self.heartbeat_interval_ms(group_id))
        full_request = (req.rebalance_timeout_ms != -1
                        and (req.subscribed_topic_names is not None or regex is not None)
                        and req.topic_partitions is not None)
        if member_epoch == 0 or full_request or has_assigned_partitions_changed(member, updated):
            resp.assignment = heartbeat_assignment(updated.assigned_partitions)
        for rec in records:
            rt.append(rec)
        return resp

    # --- 1. group and member lookup ---------------------------------------------------------------------------

    def _get_or_maybe_create_group(self, group_id: str, create: bool, records: list) -> ConsumerGroup:
        """``getOrMaybeCreateConsumerGroup``: a new group is not stored (the records create it)."""
        group = self.groups.get(group_id)
        classic = self.classic_groups.get(group_id)
        if group is None and classic is None:
            if not create:
                raise ApiError(E.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
            return ConsumerGroup(group_id)
        if classic is not None and create and classic.state == GroupState.EMPTY:
            # maybeDeleteEmptyClassicGroup: "Converted the empty classic group to a consumer group."
            records.append(R.GroupTombstone(group_id, reason="converted the empty classic group to a consumer group"))
            self.timers.cancel_group(group_id)
            return ConsumerGroup(group_id)
        if group is not None:
            return group
        if create:
            self._validate_online_upgrade(classic)
            return self._convert_to_consumer_group(classic, records)
        raise ApiError(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")

    def _validate_online_upgrade(self, classic: Any) -> None:
        """``validateOnlineUpgrade``."""
        gid = classic.group_id
        if not self.config.upgrade_enabled:
            raise ApiError(E.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {gid} to consumer group because "
                                                 "online upgrade is disabled.")
        if classic.protocol_type != "consumer":  # ClassicGroup.usesConsumerGroupProtocol
            raise ApiError(E.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {gid} to consumer group because the "
                                                 "group does not use the consumer embedded protocol.")
        if classic.size > self.config.group_consumer_max_size:
            raise ApiError(E.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {gid} to consumer group because the "
                                                 "group size exceeds the consumer group maximum size.")

    def _convert_to_consumer_group(self, classic: Any, records: list) -> ConsumerGroup:
        from coordinator.migration import convert_to_consumer_group
        return convert_to_consumer_group(self, classic, records)

    def _throw_if_full(self, group: ConsumerGroup, member_id: str, instance_id: str | None) -> None:
        """``throwIfConsumerGroupIsFull`` (4.4, KAFKA-20601: an existing static member is never refused)."""
        if group.has_static_member(instance_id):
            return
        max_size = self.config.group_consumer_max_size
        if len(group.members) >= max_size and (member_id == "" or not group.has_member(member_id)):
            raise ApiError(E.GROUP_MAX_SIZE_REACHED,
                           f"The consumer group has reached its maximum capacity of {max_size} members.")

    @staticmethod
    def _throw_if_member_epoch_invalid(member: ConsumerGroupMember, received: int, owned) -> None:
        """``throwIfConsumerGroupMemberEpochIsInvalid``."""
        if received == JOIN_GROUP_MEMBER_EPOCH:
            return
        if received > member.member_epoch:
            raise ApiError(E.FENCED_MEMBER_EPOCH,
                           f"The consumer group member has a greater member epoch ({received}) than the one known "
                           f"by the group coordinator ({member.member_epoch}). The member must abandon all its "
                           "partitions and rejoin.")
        if received < member.member_epoch:
            # The previous epoch is accepted if the owned partitions are a subset of the current assignment (the
            # response with the bumped epoch may have been lost).
            if received != member.previous_member_epoch or not _is_subset(owned, member.assigned_partitions):
                raise ApiError(E.FENCED_MEMBER_EPOCH,
                               f"The consumer group member has a smaller member epoch ({received}) than the one "
                               f"known by the group coordinator ({member.member_epoch}). The member must abandon "
                               "all its partitions and rejoin.")

    def _get_or_maybe_subscribe_static_member(self, group: ConsumerGroup, member_id: str, member_epoch: int,
                                              instance_id: str, owned, create: bool, records: list,
                                              use_classic_protocol: bool = False) -> ConsumerGroupMember:
        """``getOrMaybeSubscribeStaticConsumerGroupMember``."""
        existing = group.static_member(instance_id)
        if create:
            if existing is None:
                return group.get_or_create_member(member_id, True)
            if not use_classic_protocol and not existing.use_classic_protocol:
                # Both use the consumer protocol: replace the old instance only if it left with epoch -2.
                self._throw_if_instance_id_unreleased(existing, member_id, instance_id)
            new = existing.with_new_member_id(member_id).replace(member_epoch=0, previous_member_epoch=0)
            self._replace_member(records, group, existing, new)
            return new
        self._throw_if_static_member_unknown(existing, instance_id)
        self._throw_if_instance_id_fenced(existing, member_id, instance_id)
        if not use_classic_protocol:
            self._throw_if_member_epoch_invalid(existing, member_epoch, owned)
        return existing

    @staticmethod
    def _throw_if_instance_id_unreleased(member: ConsumerGroupMember, received_member_id: str,
                                         instance_id: str) -> None:
        if member.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise ApiError(E.UNRELEASED_INSTANCE_ID,
                           f"Static member {received_member_id} with instance id {instance_id} cannot join the group "
                           f"because the instance id is owned by {member.member_id} member.")

    @staticmethod
    def _throw_if_instance_id_fenced(member: ConsumerGroupMember, received_member_id: str, instance_id: str) -> None:
        if member.member_id != received_member_id:
            raise ApiError(E.FENCED_INSTANCE_ID,
                           f"Static member {received_member_id} with instance id {instance_id} was fenced by member "
                           f"{member.member_id}.")

    @staticmethod
    def _throw_if_static_member_unknown(member: ConsumerGroupMember | None, instance_id: str) -> None:
        if member is None:
            raise ApiError(E.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")

    @staticmethod
    def _replace_member(records: list, group: ConsumerGroup, old: ConsumerGroupMember,
                        new: ConsumerGroupMember) -> None:
        """``replaceMember``: the old member's tombstones (its timers are left: they find no member and do nothing),
        then the new member with the old one's target assignment."""
        gid = group.group_id
        records += member_removal_records(gid, old.member_id)
        records.append(member_metadata_record(gid, new))
        records.append(target_assignment_record(gid, new.member_id,
                                                group.target_assignment.get(old.member_id, EMPTY_ASSIGNMENT)))
        records.append(current_assignment_record(gid, new))

    # --- 1. member update, regexes, assignor -------------------------------------------------------------------

    @staticmethod
    def _has_member_subscription_changed(group_id: str, member: ConsumerGroupMember,
                                         updated: ConsumerGroupMember, records: list) -> bool:
        """``hasMemberSubscriptionChanged``: a metadata record if anything changed; True if the names did."""
        if updated != member:
            records.append(member_metadata_record(group_id, updated))
            return updated.subscribed_topic_names != member.subscribed_topic_names
        return False

    def _has_preferred_server_assignor_changed(self, group: ConsumerGroup, member: ConsumerGroupMember,
                                               updated: ConsumerGroupMember) -> bool:
        default = self.config.default_consumer_group_assignor
        current = group.preferred_server_assignor() or default
        new = group.compute_preferred_server_assignor(member, updated) or default
        return current != new

    def _maybe_update_regular_expressions(self, group: ConsumerGroup, member: ConsumerGroupMember,
                                          updated: ConsumerGroupMember, records: list) -> str:
        """``maybeUpdateRegularExpressions``: tombstone a regex nobody uses any more, compile a new one, and
        schedule a resolution of the group's regexes when one is due."""
        now = self.rt.now_ms
        gid = group.group_id
        old_regex, new_regex = member.subscribed_topic_regex, updated.subscribed_topic_regex
        require_refresh = False
        status = NO_CHANGE
        if old_regex != new_regex:
            status = REGEX_UPDATED
            if _not_empty(old_regex) and group.num_subscribed_members(old_regex) == 1:
                records.append(R.ConsumerGroupRegularExpressionTombstone(gid, regular_expression=old_regex))
            if _not_empty(new_regex):
                if group.num_subscribed_members(new_regex) == 0:
                    throw_if_regex_invalid(new_regex)
                    require_refresh = True
                elif new_regex in group.resolved_regular_expressions:
                    status = REGEX_UPDATED_AND_RESOLVED
            elif _not_empty(old_regex):
                status = REGEX_UPDATED_AND_RESOLVED

        # Refresh when: the group uses regexes (or this member brought one), none is being resolved, the last
        # refresh is more than 10 s old, and (a regex is unresolved, new topics appeared, or the refresh interval
        # passed).
        if not require_refresh and not group.subscribed_regular_expressions:
            return status
        key = regex_resolution_timer(gid)
        if key in self.timers:
            return status
        last_refresh = group.last_resolved_regular_expression_refresh_time_ms()
        last_refresh = _NEVER if last_refresh is None else last_refresh
        if now <= last_refresh + REGEX_BATCH_REFRESH_MIN_INTERVAL_MS:
            return status
        subscribed = dict(group.subscribed_regular_expressions)
        if _not_empty(old_regex):
            v = subscribed.get(old_regex)
            if v is not None:
                if v == 1:
                    del subscribed[old_regex]
                else:
                    subscribed[old_regex] = v - 1
        if _not_empty(new_regex):
            subscribed[new_regex] = subscribed.get(new_regex, 0) + 1
        require_refresh |= len(subscribed) != len(group.resolved_regular_expressions)
        require_refresh |= group.last_resolved_regular_expression_version() < self._last_image_with_new_topics
        require_refresh |= now > last_refresh + self.config.group_consumer_regex_refresh_interval_ms
        if require_refresh and subscribed:
            self.timers.schedule(key, now, (updated.member_id,))
        return status

    def resolve_regular_expressions(self, group_id: str, member_id: str) -> None:
        """The regex resolution job and ``handleRegularExpressionsResult`` (a timer operation): resolve every regex
        the group subscribes to against the current image (whole-name match, ``TopicRegexResolver``), record each
        resolution, bump the group epoch if a regex's topics or the metadata hash changed."""
        self._sync_image()
        group = self.groups.get(group_id)
        if group is None:
            return  # "Received result of regular expression resolution but it no longer exists."
        now = self.rt.now_ms
        image = self.image
        resolved: dict[str, ResolvedRegularExpression] = {}
        for regex in group.subscribed_regular_expressions:
            try:
                pattern = compile_topic_regex(regex)
            except RegexError:
                topics: frozenset[str] = frozenset()  # "Couldn't parse regular expression ... Ignoring it."
            else:
                topics = frozenset(t for t in image.topics if pattern.fullmatch(t))
            resolved[regex] = ResolvedRegularExpression(topics, image.version, now)
        records: list[R.Record] = []
        subscribed_names = dict(group.subscribed_topic_names)
        bump = False
        for regex in sorted(resolved):
            if group.num_subscribed_members(regex) == 0:
                continue
            new = resolved[regex]
            old = group.resolved_regular_expressions.get(regex)
            old_topics = old.topics if old is not None else frozenset()
            if old_topics != new.topics:
                bump = True
                for t in old_topics:
                    _dec_regex(subscribed_names, t)
                for t in new.topics:
                    _inc_regex(subscribed_names, t)
            records.append(R.ConsumerGroupRegularExpression(group_id, regular_expression=regex,
                                                            topics=tuple(sorted(new.topics)), version=new.version,
                                                            timestamp_ms=new.timestamp_ms))
        metadata_hash = self._metadata_hash(subscribed_names)
        if metadata_hash != group.metadata_hash:
            bump = True
        if bump:
            epoch = group.group_epoch + 1
            records.append(R.ConsumerGroupMetadata(group_id, epoch=epoch, metadata_hash=metadata_hash))
            self._refresh_deadlines[group_id] = (now + METADATA_REFRESH_INTERVAL_MS, epoch)
        for rec in records:
            self.rt.append(rec)

    # --- 1b. subscription metadata and the group epoch -------------------------------------------------------

    def _update_subscription_metadata(self, group: ConsumerGroup, bump: bool, member: ConsumerGroupMember,
                                      updated: ConsumerGroupMember, records: list) -> tuple[int, SubscriptionType]:
        """``updateSubscriptionMetadata``: the hash of the topics subscribed as if the member were updated (a
        change bumps the epoch too), the subscription type, the next refresh deadline."""
        now = self.rt.now_ms
        gid = group.group_id
        epoch = group.group_epoch
        regexes = group.compute_subscribed_regular_expressions(member, updated)
        names = group.compute_subscribed_topic_names(member, updated)
        metadata_hash = self._metadata_hash(names)
        num_members = len(group.members)
        if not group.has_member(updated.member_id) and not group.has_static_member(updated.instance_id):
            num_members += 1
        sub_type = subscription_type(regexes, names, num_members)
        if metadata_hash != group.metadata_hash:
            bump = True
        if bump:
            epoch += 1
            records.append(R.ConsumerGroupMetadata(gid, epoch=epoch, metadata_hash=metadata_hash))
        self._refresh_deadlines[gid] = (now + METADATA_REFRESH_INTERVAL_MS, epoch)
        return epoch, sub_type

    # --- 2. target assignment ----------------------------------------------------------------------------------

    @staticmethod
    def can_compute_next_target_assignment(assignment_timestamp_ms: int, interval_ms: int, now_ms: int) -> bool:
        """``canComputeNextTargetAssignment`` (KIP-1263)."""
        if assignment_timestamp_ms == 0 or interval_ms == 0:
            return True
        return now_ms >= assignment_timestamp_ms + interval_ms

    def _maybe_update_target_assignment(self, group: ConsumerGroup, group_epoch: int, member: ConsumerGroupMember,
                                        updated: ConsumerGroupMember, sub_type: SubscriptionType,
                                        records: list) -> tuple[int, Assignment]:
        """``maybeUpdateTargetAssignment``: (target assignment epoch, this member's target)."""
        now = self.rt.now_ms
        if group.assignment_epoch >= group_epoch or not self.can_compute_next_target_assignment(
                group.assignment_timestamp_ms, self.assignment_interval_ms(group.group_id), now):
            return group.assignment_epoch, group.target_assignment_of(updated.member_id, updated.instance_id)
        name = group.compute_preferred_server_assignor(member, updated) or self.config.default_consumer_group_assignor
        try:
            result = compute_target_assignment(
                group, group_epoch, updated, subscription_type=sub_type, topics=self.image.assignor_topics(),
                assignor=functools.partial(self._assignor, name), now_ms=now, topic_name_order=java_hashset_order,
                current_cache=self._current_cache.setdefault(group.group_id, {}))
        except PartitionAssignorError as e:
            # UnknownServerException("Failed to compute a new target assignment for epoch N: ...") -- its message
            # is not sent (ApiError.fromThrowable drops UNKNOWN_SERVER_ERROR messages).
            raise ApiError(E.UNKNOWN_SERVER_ERROR,
                           f"Failed to compute a new target assignment for epoch {group_epoch}: {e}") from None
        records += result.records
        return group_epoch, result.target_assignment.get(updated.member_id, EMPTY_ASSIGNMENT)

    # --- 3. reconciliation -------------------------------------------------------------------------------------

    def _maybe_reconcile(self, group: ConsumerGroup, member: ConsumerGroupMember, target_epoch: int,
                         target: Assignment, has_subscription_changed: bool, owned, records: list
                         ) -> ConsumerGroupMember:
        """``maybeReconcile``: one ``CurrentAssignmentBuilder`` step; the rebalance timer follows the result."""
        if not has_subscription_changed and member.is_reconciled_to(target_epoch):
            return member
        ids = subscribed_topic_ids(member, group.resolved_regular_expressions, self.image.topic_ids_by_name())
        updated = reconcile(member, target_epoch=target_epoch, target=target,
                            current_partition_epoch=group.current_partition_epoch, owned_topic_partitions=owned,
                            subscribed_topic_ids=ids, has_subscription_changed=has_subscription_changed)
        if updated != member:
            records.append(current_assignment_record(group.group_id, updated))
            if not updated.use_classic_protocol:
                if updated.state == MemberState.UNREVOKED_PARTITIONS:
                    self.timers.schedule(rebalance_timeout_timer(group.group_id, updated.member_id),
                                         self.rt.now_ms + updated.rebalance_timeout_ms,
                                         (updated.member_epoch, updated.rebalance_timeout_ms))
                else:
                    self.timers.cancel(rebalance_timeout_timer(group.group_id, updated.member_id))
        return updated

    # ==========================================================================================================
    # Leave and fencing
    # ==========================================================================================================

    def consumer_group(self, group_id: str) -> ConsumerGroup:
        """``consumerGroup(groupId)``: the consumer group or GROUP_ID_NOT_FOUND."""
        group = self.groups.get(group_id)
        if group is not None:
            return group
        if group_id in self.classic_groups:
            raise ApiError(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        raise ApiError(E.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")

    def _leave(self, group_id: str, instance_id: str | None, member_id: str, member_epoch: int) -> Any:
        """``consumerGroupLeave``: no epoch validation; the response echoes the request's member id and epoch."""
        group = self.consumer_group(group_id)
        resp = ConsumerGroupHeartbeatResponse(member_id=member_id, member_epoch=member_epoch)
        if instance_id is None:
            member = group.get_or_create_member(member_id, False)
            self.fence_members(group, [member], "the member left the group")
            return resp
        member = group.static_member(instance_id)
        self._throw_if_static_member_unknown(member, instance_id)
        self._throw_if_instance_id_fenced(member, member_id, instance_id)
        if member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            # consumerGroupStaticMemberGroupLeave: the member stays, at epoch -2, keeping its partitions (their
            # assignment epochs reset to 0); no epoch bump, timers untouched.
            leaving = member.replace(member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, partitions_pending_revocation={}
                                     ).reset_assigned_partitions_epochs_to_zero()
            self.rt.append(current_assignment_record(group_id, leaving))
            return ConsumerGroupHeartbeatResponse(member_id=member.member_id,
                                                  member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH)
        self.fence_members(group, [member], "the static member left the group")
        return resp

    def fence_members(self, group: ConsumerGroup, members: list[ConsumerGroupMember], reason: str) -> None:
        """``consumerGroupFenceMembers``: remove the members (or downgrade the group to a classic one when only
        classic-protocol members would remain and the policy allows), bump the group epoch, cancel their timers."""
        if not members:
            return
        if self._validate_online_downgrade_with_fenced_members(group, members):
            from coordinator.migration import convert_to_classic_group
            convert_to_classic_group(self, group, members, None, rebalance=True,
                                     reason=f"Downgrade group {group.group_id} from consumer to classic for member "
                                            "leaving.")
            return
        gid = group.group_id
        records: list[R.Record] = []
        for m in members:
            records += member_removal_records(gid, m.member_id)
        deleted_regexes = self._maybe_delete_resolved_regexes(records, group, members)
        names = group.compute_subscribed_topic_names_without_deleted_members(members, deleted_regexes)
        metadata_hash = self._metadata_hash(names)
        epoch = group.group_epoch + 1
        records.append(R.ConsumerGroupMetadata(gid, epoch=epoch, metadata_hash=metadata_hash))
        if len(group.members) == len(members):
            # The group becomes empty: the assignment epoch follows (timestamp 0: the next computation is not
            # delayed), so it is not left Assigning (KAFKA-20442).
            records.append(R.ConsumerGroupTargetAssignmentMetadata(gid, assignment_epoch=epoch,
                                                                   assignment_timestamp_ms=0))
        for m in members:
            self.cancel_timers(gid, m.member_id)
        for rec in records:
            self.rt.append(rec)

    @staticmethod
    def _maybe_delete_resolved_regexes(records: list, group: ConsumerGroup,
                                       members: list[ConsumerGroupMember]) -> set[str]:
        counts: dict[str, int] = {}
        for m in members:
            if _not_empty(m.subscribed_topic_regex):
                counts[m.subscribed_topic_regex] = counts.get(m.subscribed_topic_regex, 0) + 1
        deleted = set()
        for regex, n in counts.items():
            if group.num_subscribed_members(regex) == n:
                records.append(R.ConsumerGroupRegularExpressionTombstone(group.group_id, regular_expression=regex))
                deleted.add(regex)
        return deleted

    def _validate_online_downgrade_with_fenced_members(self, group: ConsumerGroup,
                                                       members: list[ConsumerGroupMember]) -> bool:
        """``validateOnlineDowngradeWithFencedMembers``."""
        if not group.all_members_use_classic_protocol_except_all(members):
            return False
        if len(group.members) - len(members) <= 0:
            return False
        if not self.config.downgrade_enabled:
            return False
        if len(group.members) - len(members) > self.config.group_max_size:
            return False
        return True

    def cancel_timers(self, group_id: str, member_id: str) -> None:
        """``cancelTimers``: session, rebalance, join and sync."""
        for key in (session_timeout_timer(group_id, member_id), rebalance_timeout_timer(group_id, member_id),
                    consumer_join_timer(group_id, member_id), consumer_sync_timer(group_id, member_id)):
            self.timers.cancel(key)

    def _schedule_session_timeout(self, group_id: str, member_id: str, timeout_ms: int) -> None:
        self.timers.schedule(session_timeout_timer(group_id, member_id), self.rt.now_ms + timeout_ms)

    # --- timers -----------------------------------------------------------------------------------------------

    def fence_member_operation(self, group_id: str, member_id: str, reason: str) -> None:
        """``consumerGroupFenceMemberOperation`` (session, join and sync timeouts): nothing if the group or the
        member is gone."""
        group = self.groups.get(group_id)
        if group is None:
            return
        member = group.members.get(member_id)
        if member is None:
            return
        self._sync_image()
        self.fence_members(group, [member], reason)

    def rebalance_timeout(self, group_id: str, member_id: str, member_epoch: int, timeout_ms: int) -> None:
        """The rebalance timeout: fence the member if it is still at the epoch the timer was armed at ("failed to
        transition from epoch E within T ms")."""
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if member is None or member.member_epoch != member_epoch:
            return
        self._sync_image()
        self.fence_members(group, [member], f"it failed to transition from epoch {member_epoch} within "
                                            f"{timeout_ms}ms")

    # ==========================================================================================================
    # Classic-protocol members of a consumer group (coordinator.migration)
    # ==========================================================================================================

    def classic_join(self, req: Any) -> Any:
        from coordinator.migration import classic_join
        self._sync_image()
        return classic_join(self, req)

    def classic_sync(self, req: Any) -> Any:
        from coordinator.migration import classic_sync
        self._sync_image()
        return classic_sync(self, req)

    def classic_heartbeat(self, req: Any) -> Any:
        from coordinator.migration import classic_heartbeat
        return classic_heartbeat(self, req)

    def classic_leave(self, req: Any) -> Any:
        from coordinator.migration import classic_leave
        self._sync_image()
        return classic_leave(self, req)

    # ==========================================================================================================
    # Load
    # ==========================================================================================================

    def on_loaded(self) -> None:
        """``GroupMetadataManager.onLoaded`` for consumer groups: every member's session timer; the rebalance timer
        of every member in UNREVOKED_PARTITIONS."""
        now = self.rt.now_ms
        for group in list(self.groups):
            gid = group.group_id
            for mid, m in group.members.items():
                self._schedule_session_timeout(gid, mid, self.session_timeout_ms(gid))
                if m.state == MemberState.UNREVOKED_PARTITIONS:
                    self.timers.schedule(rebalance_timeout_timer(gid, mid), now + m.rebalance_timeout_ms,
                                         (m.member_epoch, m.rebalance_timeout_ms))

    # ==========================================================================================================
    # Reads and deletion
    # ==========================================================================================================

    def describe(self, group_ids: list[str]) -> list[Any]:
        """``GroupMetadataManager.consumerGroupDescribe``."""
        D = ConsumerGroupDescribeResponse.DescribedGroup
        out = []
        names = self.image.topic_names_by_id()
        for gid in group_ids:
            try:
                group = self.consumer_group(gid)
            except ApiError as e:
                out.append(D(group_id=gid, error_code=int(e.error), error_message=e.message))
                continue
            out.append(group.as_described_group(self.config.default_consumer_group_assignor, names))
        return out

    def list_groups(self) -> list[tuple[str, str, str, str]]:
        """(group id, protocol type, state, type) of every consumer group (``ConsumerGroup.asListedGroup``)."""
        return [(g.group_id, "consumer", str(g.state), "consumer") for g in self.groups]

    def delete_group(self, group: ConsumerGroup) -> None:
        """``createGroupTombstoneRecordsAndCancelTimers`` for a consumer group."""
        for rec in group_tombstone_records(group):
            self.rt.append(rec)
        self.timers.cancel_group(group.group_id)
        self._refresh_deadlines.pop(group.group_id, None)


# --- helpers ---------------------------------------------------------------------------------------------------

def throw_if_regex_invalid(regex: str) -> None:
    """``Utils.throwIfRegularExpressionIsInvalid`` with RE2J's syntax (``coordinator.topic_regex``)."""
    try:
        compile_topic_regex(regex)
    except RegexError as e:
        raise ApiError(E.INVALID_REGULAR_EXPRESSION,
                       f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {e.description}.") from None


def _owned_partitions(topic_partitions) -> list[tuple[str, list[int]]] | None:
    if topic_partitions is None:
        return None
    return [(uuid_to_string(tp.topic_id), list(tp.partitions)) for tp in topic_partitions]


def _is_subset(owned, assigned) -> bool:
    """``isSubset``: a null owned list is not a subset."""
    if owned is None:
        return False
    for topic_id, partitions in owned:
        epochs = assigned.get(topic_id)
        if epochs is None:
            return False
        if any(p not in epochs for p in partitions):
            return False
    return True


def heartbeat_assignment(assigned) -> Any:
    """``ConsumerGroupHeartbeatResponse.createAssignment``: the assigned partitions (never those pending
    revocation); topics by id, partitions ascending."""
    A = ConsumerGroupHeartbeatResponse.Assignment
    return A(topic_partitions=[A.TopicPartitions(topic_id=uuid_from_string(t), partitions=sorted(assigned[t]))
                               for t in sorted(assigned)])


def _inc_regex(counts: dict, topic: str) -> None:
    from coordinator.consumer_group import SubscriptionCount
    counts[topic] = SubscriptionCount.inc_regex(counts.get(topic))


def _dec_regex(counts: dict, topic: str) -> None:
    from coordinator.consumer_group import SubscriptionCount
    v = SubscriptionCount.dec_regex(counts.get(topic))
    if v is None:
        counts.pop(topic, None)
    else:
        counts[topic] = v


__all__ = ["ConsumerGroupManager", "heartbeat_assignment", "java_hashset_order", "throw_if_regex_invalid",
           "ConsumerGroupState"]
