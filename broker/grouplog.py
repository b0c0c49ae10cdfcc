"""The coordinator's log, as Kafka's group coordinator writes it at INFO: a server listener that turns the records
of every call (``Output.records``, ``Output.leadership``) into the lines of Kafka 4.4's ``GroupMetadataManager``,
``GroupCoordinatorShard`` and ``CoordinatorRuntime``.

Theory of operation. The coordinator core already says *why* in its records (the reasons are Kafka's own
strings), so nothing in ``coordinator/`` logs. :class:`GroupLog` is attached with ``server.add_listener``; for each
record it looks at the group *before* the record (a shadow of the partition's groups, kept by replaying the same
records through :class:`coordinator.replay.ShardState` -- the state machines have one home) and emits the line Kafka logs
at that point, then applies the record. The shadow of a partition starts as the replay of its log up to the first
record seen (the invariant "state = replay of the log" makes it exact).

Line by line (Kafka's text; ``kgroup`` marks the few lines Kafka does not have, which the issue asks for):

=========================================  ============================================================================
record                                     line
=========================================  ============================================================================
PendingMemberAdded                         Dynamic member with unknown member id joins group G in S state. Created a
                                           new member id M and requesting the member to rejoin with this id.
MemberJoined (pending id / static / v<4)   Pending dynamic member with id M joins group G in S state. Adding to the
                                           group now. | Static member with groupInstanceId=I and unknown member id
                                           joins group G in S state. Created a new member id M ... | Dynamic member
                                           with unknown member id joins group G in state S. ...
StaticMemberReplaced                       Static member with groupInstanceId=I and unknown member id joins group G in
                                           S state. Replacing previously mapped member M with this groupInstanceId.
RebalanceStarted                           Preparing to rebalance group G in state PreparingRebalance with old
                                           generation N (reason: R).
MemberRemoved, LeaveGroup                  [Group G] Member M has left group through explicit `LeaveGroup` request;
                                           client reason: R (static: [GroupId G] Static member M with instance id I
                                           has left group ...)
MemberRemoved, heartbeat expiration        Member M in group G has failed, removing it from the group.
MemberRemoved, did not rejoin              Group G removed dynamic members who haven't joined: [M, ...]
MemberRemoved, other reasons               kgroup: Member M removed from group G: R
PendingMemberRemoved                       Pending member M in group G has been removed after session timeout
                                           expiration. | [Group G] Pending member M has left group through explicit
                                           `LeaveGroup` request; client reason: R
JoinCompleted with members                 Stabilized group G generation N with K members. + kgroup: Group G
                                           generation N: protocol P, leader L, members [...]
JoinCompleted without members              Group G with generation N is now empty.
GroupMetadata after the leader's sync      Assignment received from leader L for group G for generation N. The group
                                           has K members, S of which are static. + kgroup: Group G is Stable at
                                           generation N
GroupMetadata of a static replacement      Static member which joins during Stable stage and doesn't affect the
                                           selected protocol will not trigger a rebalance.
GroupTombstone (DeleteGroups)              The following groups were deleted: G. A total of K offsets were removed.
OffsetTombstone/GroupTombstone (expiry)    Generated K tombstone records while cleaning up group metadata in 0
                                           milliseconds. + kgroup: Group G is Dead (group is empty and all its
                                           offsets expired) / kgroup: Expired K offset(s) of group G: t-p, ...
CoordinatorLoaded                          Finished loading of metadata from __consumer_offsets-P with epoch E in 0ms
                                           where 0ms was spent in the scheduler. Loaded K records which total to B
                                           bytes. + Loaded classic group G with K members.
leadership of __consumer_offsets-P moves   Scheduling unloading of metadata for __consumer_offsets-P with epoch E
                                           + [GroupId=G] Unloading group metadata for generation N. + Finished
                                           unloading metadata for __consumer_offsets-P with epoch E.
=========================================  ============================================================================

KIP-848 consumer groups (Kafka 4.4 logs reconciliation steps at DEBUG only):

=========================================  ============================================================================
ConsumerGroupMemberMetadata, new member    [GroupId G] Member M joins the consumer group using the consumer|classic
                                           protocol. | [GroupId G] Static member M with instance id I joins the
                                           consumer group using the P protocol. | [GroupId G] Static member with
                                           instance id I re-joins the consumer group using the P protocol. Created a
                                           new member M to replace the existing member OLD.
ConsumerGroupMetadata, epoch up            [GroupId G] Bumped group epoch to N with metadata hash H.
ConsumerGroupTargetAssignmentMetadata      [GroupId G] Computed a new target assignment for epoch N with 'A' assignor
                                           in 0ms. (not when the group became empty: its epoch only follows)
a member's tombstones                      [GroupId G] Member M left the consumer group. (static: Static member M
                                           with instance id I left ...) when the call was its heartbeat with epoch -1;
                                           a classic member's LeaveGroup: [GroupId G] Dynamic member M has left group
                                           through explicit `LeaveGroup` request; client reason: R;
                                           else [GroupId G] Member M fenced from the group because it failed to
                                           transition from epoch E within Tms. (revoking for its rebalance timeout) |
                                           ... because the member session expired.
CurrentMemberAssignment at epoch -2        [GroupId G] Static member M with instance id I temporarily left the
                                           consumer group.
GroupTombstone of an upgrade               [GroupId G] Converted the (empty) classic group to a consumer group.
ConsumerGroupMetadataTombstone             [GroupId G] Converted the (empty) consumer group to a classic group. | The
                                           following groups were deleted: G. ... (DeleteGroups)
load / unload                              Loaded consumer group G with K members. | [GroupId=G] Unloaded group
                                           metadata for group epoch N.
=========================================  ============================================================================

The records say nothing of why a member was removed; the line is chosen from the call that wrote them (its answer)
and from the member's state, so a classic member of a consumer group that missed its join or sync deadline is
logged as a session expiry (Kafka names those timers).

Every line carries the coordinator's context as Kafka's ``LogContext`` does: ``[GroupCoordinator id=B
topic=__consumer_offsets partition=P]``. :func:`configure_logging` installs the ``text`` format (Kafka's log4j
pattern ``[%d] %p %m (%c)``, the logger being the Kafka class) or ``json`` (one object per line with the
structured fields: ``event``, ``group_id``, ``member_id``, ``generation_id``, ``reason``, ...).
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import sys
from typing import Any

from coordinator import records as R
from coordinator.cluster import OFFSETS_TOPIC
from coordinator.replay import ShardState, load_durable, replay_live

log = logging.getLogger("kgroup.coordinator")

GMM = "org.apache.kafka.coordinator.group.GroupMetadataManager"
SHARD = "org.apache.kafka.coordinator.group.GroupCoordinatorShard"
RUNTIME = "org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime"
KGROUP = "kgroup"


_CONVERTED = {"upgraded the classic group to a consumer group": "Converted the classic group to a consumer group.",
              "converted the empty classic group to a consumer group":
                  "Converted the empty classic group to a consumer group."}
_MEMBER_TOMBSTONES = (R.ConsumerGroupCurrentMemberAssignmentTombstone, R.ConsumerGroupTargetAssignmentMemberTombstone,
                      R.ConsumerGroupMemberMetadataTombstone)
_CLASSIC_TYPES = (R.GroupMetadata, R.MemberJoined, R.PendingMemberAdded, R.RebalanceStarted, R.JoinCompleted)


def _ids(ids: Any) -> str:
    """A Java collection's ``toString``: ``[a, b]``."""
    return "[" + ", ".join(ids) + "]"


class GroupLog:
    """A server listener that logs the coordinator's work at INFO (``server.add_listener(GroupLog(server))``)."""

    def __init__(self, server: Any, logger: logging.Logger = log) -> None:
        self.server = server
        self.log = logger
        self.shadows: dict[int, ShardState] = {}
        #: (group, member) -> when its last UNREVOKED_PARTITIONS assignment was written (the rebalance timer's start)
        self._revoking_since: dict[tuple[str, str], int] = {}
        #: (group, instance id) -> the static member a joining one replaces in the call being logged
        self._replacing: dict[tuple[str, str], str] = {}
        self._batch_of: Any = None
        self._batches: dict[int, list[R.LogEntry]] = {}
        self._pos: dict[int, int] = {}
        self.leader_of: dict[int, int] = {}
        for p, slot in sorted(server.svc.slots.items()):
            self.leader_of[p] = slot.broker_id
        self._startup()

    # --- emitting --------------------------------------------------------------------------------------------

    def emit(self, partition: int | None, ts_ms: int | None, kafka_class: str, event: str, message: str,
             **fields: Any) -> None:
        if not self.log.isEnabledFor(logging.INFO):
            return
        broker = self._broker(partition) if partition is not None else None
        context = (f"[GroupCoordinator id={broker} topic={OFFSETS_TOPIC} partition={partition}] "
                   if partition is not None else "")
        if ts_ms is None:
            ts_ms = self.server.now_ms()
        extra = {"kafka_class": kafka_class, "coordinator_ms": ts_ms, "event": event, "fields": {
            "broker": broker, "partition": partition, **{k: v for k, v in fields.items() if v is not None}}}
        self.log.info(context + message, extra=extra)

    def _broker(self, partition: int) -> int | None:
        b = self.leader_of.get(partition)
        if b is None:
            slot = self.server.svc.slots.get(partition)
            b = slot.broker_id if slot is not None else None
        return b

    # --- start-up: what the server loaded before the listener was attached -----------------------------------

    def _startup(self) -> None:
        """The partitions the brokers loaded before the listener was attached (a restart with ``--data-dir``): the
        load lines of those that held records; the others in one kgroup line (Kafka logs one per partition)."""
        svc = self.server.svc
        quiet: dict[int, int] = {}
        for p, slot in sorted(svc.slots.items()):
            lg = svc.logs.get(p)
            if lg is None or slot.loaded_at_ms is not None:
                continue
            marker = next((e for e in reversed(lg.entries) if isinstance(e.record, R.CoordinatorLoaded)), None)
            if marker is None:
                continue
            if any(e.record.DURABLE for e in lg.entries[:marker.offset]):
                self._loaded(marker, lg)
            else:
                quiet[slot.broker_id] = quiet.get(slot.broker_id, 0) + 1
        if quiet:
            self.emit(None, None, KGROUP, "coordinators_active", "Group coordinator active: " + ", ".join(
                f"broker {b} leads {n} {OFFSETS_TOPIC} partitions" for b, n in sorted(quiet.items()))
                + " (nothing to load)")

    # --- the listener ----------------------------------------------------------------------------------------

    def __call__(self, out: Any) -> None:
        if not out.records and not out.leadership:
            return
        first: dict[int, int] = {}
        for e in out.records:
            first.setdefault(e.partition, e.offset)
        for ch in out.leadership:
            if ch.topic == OFFSETS_TOPIC:
                self._leadership(ch, first.get(ch.partition))
        expired: dict[tuple[int, str], list[str]] = {}
        tombstones: dict[int, tuple[int, int]] = {}  # partition -> (count, last ts) of an expiry sweep
        not_rejoined: dict[tuple[int, str], list[str]] = {}
        for e in out.records:
            rec = e.record
            if isinstance(rec, R.CoordinatorLoaded):
                self.leader_of[e.partition] = rec.broker_id
                self.shadows[e.partition] = load_durable(self.server.svc.log(e.partition).entries[:e.offset])
                self._loaded(e, self.server.svc.log(e.partition))
                continue
            shadow = self._shadow(e)
            if type(rec).__name__.startswith("ConsumerGroup"):
                try:
                    self._consumer_line(e, shadow, out)
                except Exception:  # noqa: BLE001 - a log line must never break the server
                    logging.getLogger("kgroup.server").exception("coordinator log line failed")
                try:
                    shadow.apply(rec, e.timestamp_ms)
                except Exception:  # noqa: BLE001 - the shadow refuses what the core refused: rebuild it next time
                    self.shadows.pop(e.partition, None)
                continue
            g = shadow.groups.get(rec.group_id)
            if isinstance(rec, R.MemberRemoved) and rec.reason == "did not rejoin before the join phase completed":
                not_rejoined.setdefault((e.partition, rec.group_id), []).append(rec.member_id)
            elif not_rejoined.get((e.partition, rec.group_id)):
                self._not_rejoined(e, not_rejoined.pop((e.partition, rec.group_id)))
            if isinstance(rec, R.OffsetTombstone) and rec.reason == "offset expired":
                expired.setdefault((e.partition, rec.group_id), []).append(f"{rec.topic}-{rec.partition}")
                n, _ = tombstones.get(e.partition, (0, 0))
                tombstones[e.partition] = (n + 1, e.timestamp_ms)
            elif isinstance(rec, R.GroupTombstone) and rec.reason != "DeleteGroups":
                n, _ = tombstones.get(e.partition, (0, 0))
                tombstones[e.partition] = (n + 1, e.timestamp_ms)
            try:
                self._line(e, g, out.records)
            except Exception:  # noqa: BLE001 - a log line must never break the server
                logging.getLogger("kgroup.server").exception("coordinator log line failed")
            try:
                shadow.apply(rec, e.timestamp_ms)
            except Exception:  # noqa: BLE001 - the shadow refuses what the core refused: rebuild it next time
                self.shadows.pop(e.partition, None)
        for (p, gid), ids in not_rejoined.items():
            self._not_rejoined_at(p, gid, ids)
        for (p, gid), parts in expired.items():
            self.emit(p, None, KGROUP, "offsets_expired",
                      f"Expired {len(parts)} offset(s) of group {gid}: {', '.join(parts)}", group_id=gid,
                      partitions=parts)
        for p, (n, ts) in sorted(tombstones.items()):
            self.emit(p, ts, SHARD, "cleanup", f"Generated {n} tombstone records while cleaning up group metadata "
                                               "in 0 milliseconds.", records=n)

    def _shadow(self, e: R.LogEntry) -> ShardState:
        shadow = self.shadows.get(e.partition)
        if shadow is None:
            entries = self.server.svc.log(e.partition).entries[:e.offset]
            shadow = self.shadows[e.partition] = replay_live(entries)
        return shadow

    def _not_rejoined(self, e: R.LogEntry, ids: list[str]) -> None:
        self._not_rejoined_at(e.partition, e.record.group_id, ids, e.timestamp_ms)

    def _not_rejoined_at(self, p: int, gid: str, ids: list[str], ts: int | None = None) -> None:
        self.emit(p, ts, GMM, "members_removed", f"Group {gid} removed dynamic members who haven't joined: "
                                                 f"{_ids(ids)}", group_id=gid, member_ids=ids,
                  reason="did not rejoin before the join phase completed")

    # --- one record -> its line --------------------------------------------------------------------------------

    def _line(self, e: R.LogEntry, g: Any, batch: list[R.LogEntry]) -> None:
        rec, p, ts = e.record, e.partition, e.timestamp_ms
        gid = rec.group_id
        state = str(g.state) if g is not None else "Empty"
        if isinstance(rec, R.PendingMemberAdded):
            self.emit(p, ts, GMM, "member_id_required",
                      f"Dynamic member with unknown member id joins group {gid} in {state} state. Created a new "
                      f"member id {rec.member_id} and requesting the member to rejoin with this id.",
                      group_id=gid, member_id=rec.member_id, state=state)
        elif isinstance(rec, R.MemberJoined):
            common = dict(group_id=gid, member_id=rec.member_id, group_instance_id=rec.group_instance_id,
                          client_id=rec.client_id, client_host=rec.client_host, state=state, reason=rec.reason,
                          protocols=[n for n, _ in rec.protocols])
            if g is not None and rec.member_id in g.pending_members:
                msg = (f"Pending dynamic member with id {rec.member_id} joins group {gid} in {state} state. Adding to "
                       "the group now.")
            elif rec.group_instance_id is not None:
                msg = (f"Static member with groupInstanceId={rec.group_instance_id} and unknown member id joins "
                       f"group {gid} in {state} state. Created a new member id {rec.member_id} for this member and "
                       "add to the group.")
            else:
                msg = (f"Dynamic member with unknown member id joins group {gid} in state {state}. Created a new "
                       f"member id {rec.member_id} and added the member to the group.")
            self.emit(p, ts, GMM, "member_joined", msg, **common)
        elif isinstance(rec, R.StaticMemberReplaced):
            self.emit(p, ts, GMM, "static_member_replaced",
                      f"Static member with groupInstanceId={rec.group_instance_id} and unknown member id joins group "
                      f"{gid} in {state} state. Replacing previously mapped member {rec.old_member_id} with this "
                      "groupInstanceId.", group_id=gid, member_id=rec.new_member_id,
                      old_member_id=rec.old_member_id, group_instance_id=rec.group_instance_id, state=state)
        elif isinstance(rec, R.RebalanceStarted):
            # Kafka logs after transitionTo(PREPARING_REBALANCE): "in state" always reads PreparingRebalance
            self.emit(p, ts, GMM, "rebalance_started",
                      f"Preparing to rebalance group {gid} in state PreparingRebalance with old generation "
                      f"{rec.generation_id} (reason: {rec.reason}).", group_id=gid, generation_id=rec.generation_id,
                      reason=rec.reason, from_state=state, initial=rec.initial)
        elif isinstance(rec, R.MemberRemoved):
            self._removed(e, g)
        elif isinstance(rec, R.PendingMemberRemoved):
            if rec.reason == "pending member session timeout":
                msg = f"Pending member {rec.member_id} in group {gid} has been removed after session timeout expiration."
            elif rec.reason.startswith("LeaveGroup"):
                client = rec.reason.partition("client reason: ")[2] or "not provided"
                msg = (f"[Group {gid}] Pending member {rec.member_id} has left group through explicit `LeaveGroup` "
                       f"request; client reason: {client}")
            else:
                return  # the pending member rejoined (it is added: MemberJoined says so)
            self.emit(p, ts, GMM, "pending_member_removed", msg, group_id=gid, member_id=rec.member_id,
                      reason=rec.reason)
        elif isinstance(rec, R.JoinCompleted):
            if rec.members:
                self.emit(p, ts, GMM, "generation_completed",
                          f"Stabilized group {gid} generation {rec.generation_id} with {len(rec.members)} members.",
                          group_id=gid, generation_id=rec.generation_id, protocol=rec.protocol_name, leader=rec.leader,
                          members=list(rec.members))
                self.emit(p, ts, KGROUP, "generation_detail",
                          f"Group {gid} generation {rec.generation_id}: protocol {rec.protocol_name}, leader "
                          f"{rec.leader}, members {_ids(rec.members)}", group_id=gid, generation_id=rec.generation_id,
                          protocol=rec.protocol_name, leader=rec.leader, members=list(rec.members))
            else:
                self.emit(p, ts, GMM, "group_empty",
                          f"Group {gid} with generation {rec.generation_id} is now empty.", group_id=gid,
                          generation_id=rec.generation_id)
        elif isinstance(rec, R.GroupMetadata):
            if not rec.members or g is None:
                return  # a new group's empty record, or the empty value of a join into Empty (logged above)
            static = sum(1 for m in rec.members if m.group_instance_id)
            if str(g.state) == "Stable" and g.generation_id == rec.generation_id:
                self.emit(p, ts, GMM, "static_member_no_rebalance",
                          "Static member which joins during Stable stage and doesn't affect the selected protocol "
                          "will not trigger a rebalance.", group_id=gid, generation_id=rec.generation_id)
                return
            self.emit(p, ts, GMM, "assignment_received",
                      f"Assignment received from leader {rec.leader} for group {gid} for generation "
                      f"{rec.generation_id}. The group has {len(rec.members)} members, {static} of which are static.",
                      group_id=gid, generation_id=rec.generation_id, leader=rec.leader)
            self.emit(p, ts, KGROUP, "group_stable",
                      f"Group {gid} is Stable at generation {rec.generation_id}", group_id=gid,
                      generation_id=rec.generation_id, protocol=rec.protocol_name, leader=rec.leader,
                      members=[m.member_id for m in rec.members])
        elif isinstance(rec, R.GroupTombstone):
            if rec.reason in _CONVERTED:
                self.emit(p, ts, GMM, "group_converted", f"[GroupId {gid}] {_CONVERTED[rec.reason]}", group_id=gid,
                          to_type="consumer")
                return
            if rec.reason == "DeleteGroups":
                n = sum(1 for x in batch if isinstance(x.record, R.OffsetTombstone) and x.record.group_id == gid
                        and x.record.reason == "DeleteGroups" and x.partition == p)
                self.emit(p, ts, SHARD, "groups_deleted",
                          f"The following groups were deleted: {gid}. A total of {n} offsets were removed.",
                          group_id=gid, offsets=n)
            self.emit(p, ts, KGROUP, "group_dead", f"Group {gid} is Dead ({rec.reason})", group_id=gid,
                      reason=rec.reason)

    def _removed(self, e: R.LogEntry, g: Any) -> None:
        rec, p, ts = e.record, e.partition, e.timestamp_ms
        gid, mid, reason = rec.group_id, rec.member_id, rec.reason
        fields = dict(group_id=gid, member_id=mid, group_instance_id=rec.group_instance_id, reason=reason,
                      new_leader=rec.new_leader)
        if reason.startswith("LeaveGroup"):
            client = reason.partition("client reason: ")[2] or "not provided"
            if rec.group_instance_id:
                msg = (f"[GroupId {gid}] Static member {mid} with instance id {rec.group_instance_id} has left group "
                       f"through explicit `LeaveGroup` request; client reason: {client}")
            else:
                msg = (f"[Group {gid}] Member {mid} has left group through explicit `LeaveGroup` request; client "
                       f"reason: {client}")
            self.emit(p, ts, GMM, "member_left", msg, **fields)
        elif reason.endswith("on heartbeat expiration."):
            self.emit(p, ts, GMM, "member_expired", f"Member {mid} in group {gid} has failed, removing it from the "
                                                    "group.", **fields)
        elif reason == "did not rejoin before the join phase completed":
            return  # gathered into "removed dynamic members who haven't joined"
        else:
            self.emit(p, ts, KGROUP, "member_removed", f"Member {mid} removed from group {gid}: {reason}", **fields)

    # --- KIP-848 consumer groups -------------------------------------------------------------------------------

    def _consumer_line(self, e: R.LogEntry, shadow: ShardState, out: Any) -> None:
        """The INFO lines of Kafka 4.4's ``GroupMetadataManager`` for one consumer-group record, seen against the
        group before it. The records carry no reasons, so who removed a member is read from the call: a
        ConsumerGroupHeartbeat answered with epoch -1/-2 for that member is its leave, anything else a fence --
        by the rebalance timer when the member has been revoking for its rebalance timeout, else by the session
        timer."""
        rec, p, ts = e.record, e.partition, e.timestamp_ms
        gid = rec.group_id
        g = shadow.consumer_groups.get(gid)
        if self._batch_of is not out:  # this call's records per partition, computed once per call
            self._batch_of, self._batches, self._pos = out, {}, {}
            for x in out.records:
                part = self._batches.setdefault(x.partition, [])
                self._pos[id(x)] = len(part)
                part.append(x)
        batch = self._batches.get(p, [])
        here = self._pos.get(id(e), len(batch))
        later = batch[here + 1:]
        if self._converting(gid, batch, here, e):
            return
        if isinstance(rec, R.ConsumerGroupMemberMetadata):
            if g is not None and rec.member_id in g.members:
                return  # an update of a known member: Kafka logs it at DEBUG
            protocol = "classic" if rec.classic_member_metadata is not None else "consumer"
            fields = dict(group_id=gid, member_id=rec.member_id, group_instance_id=rec.instance_id,
                          client_id=rec.client_id, client_host=rec.client_host, protocol=protocol,
                          subscribed_topics=sorted(rec.subscribed_topic_names))
            replaced = self._replacing.pop((gid, rec.instance_id), None) if rec.instance_id is not None else None
            if replaced is not None:
                self.emit(p, ts, GMM, "static_member_replaced",
                          f"[GroupId {gid}] Static member with instance id {rec.instance_id} re-joins the consumer "
                          f"group using the {protocol} protocol. Created a new member {rec.member_id} to replace the "
                          f"existing member {replaced}.", old_member_id=replaced, **fields)
            elif rec.instance_id is not None:
                self.emit(p, ts, GMM, "member_joined",
                          f"[GroupId {gid}] Static member {rec.member_id} with instance id {rec.instance_id} joins "
                          f"the consumer group using the {protocol} protocol.", **fields)
            else:
                self.emit(p, ts, GMM, "member_joined",
                          f"[GroupId {gid}] Member {rec.member_id} joins the consumer group using the {protocol} "
                          "protocol.", **fields)
        elif isinstance(rec, R.ConsumerGroupMetadata):
            old = g.group_epoch if g is not None else 0
            if rec.epoch > old:
                self.emit(p, ts, GMM, "group_epoch_bumped",
                          f"[GroupId {gid}] Bumped group epoch to {rec.epoch} with metadata hash "
                          f"{rec.metadata_hash}.", group_id=gid, group_epoch=rec.epoch,
                          metadata_hash=rec.metadata_hash)
        elif isinstance(rec, R.ConsumerGroupTargetAssignmentMetadata):
            if g is None or not g.members or rec.assignment_epoch <= g.assignment_epoch:
                return  # the epoch of a group that became empty follows its group epoch: nothing was computed
            assignor = g.preferred_server_assignor() or self.server.svc.config.default_consumer_group_assignor
            self.emit(p, ts, GMM, "target_assignment_computed",
                      f"[GroupId {gid}] Computed a new target assignment for epoch {rec.assignment_epoch} with "
                      f"'{assignor}' assignor in 0ms.", group_id=gid, assignment_epoch=rec.assignment_epoch,
                      assignor=assignor, members=len(g.members))
        elif isinstance(rec, R.ConsumerGroupCurrentMemberAssignment):
            m = g.members.get(rec.member_id) if g is not None else None
            key = (gid, rec.member_id)
            if rec.state == 1:  # UNREVOKED_PARTITIONS: Kafka (re)arms the member's rebalance timer
                self._revoking_since[key] = ts
            else:
                self._revoking_since.pop(key, None)
            if rec.member_epoch == -2 and m is not None and m.member_epoch != -2:
                self.emit(p, ts, GMM, "member_left",
                          f"[GroupId {gid}] Static member {rec.member_id} with instance id {m.instance_id} "
                          "temporarily left the consumer group.", group_id=gid, member_id=rec.member_id,
                          group_instance_id=m.instance_id, reason="static member left temporarily (epoch -2)")
        elif isinstance(rec, (R.ConsumerGroupCurrentMemberAssignmentTombstone,
                              R.ConsumerGroupTargetAssignmentMemberTombstone, R.ConsumerGroupMemberMetadataTombstone)):
            m = g.members.get(rec.member_id) if g is not None else None
            if m is None or any(type(x.record) in _MEMBER_TOMBSTONES and x.record.group_id == gid
                                and x.record.member_id == rec.member_id for x in batch[:here]):
                return  # logged at the member's first tombstone
            if self._replacement_of(gid, m, later):
                self._replacing[(gid, m.instance_id)] = m.member_id
            elif not self._group_going(gid, later, m.member_id):
                self._member_removed(e, g, m, out)
            self._revoking_since.pop((gid, rec.member_id), None)
        elif isinstance(rec, R.ConsumerGroupMetadataTombstone):
            self._group_tombstone(e, g, later, out)

    def _member_removed(self, e: R.LogEntry, g: Any, m: Any, out: Any) -> None:
        p, ts, gid, mid = e.partition, e.timestamp_ms, e.record.group_id, m.member_id
        fields = dict(group_id=gid, member_id=mid, group_instance_id=m.instance_id, member_epoch=m.member_epoch)
        answer = getattr(out, "answer", None)
        if type(answer).__name__ == "ConsumerGroupHeartbeatResponse" and answer.member_id == mid \
                and answer.member_epoch in (-1, -2):
            if m.instance_id is not None:
                msg = f"[GroupId {gid}] Static member {mid} with instance id {m.instance_id} left the consumer group."
            else:
                msg = f"[GroupId {gid}] Member {mid} left the consumer group."
            self.emit(p, ts, GMM, "member_left", msg, reason="the member left the group", **fields)
            return
        if type(answer).__name__ == "LeaveGroupResponse":  # classicGroupLeaveToConsumerGroup
            req = getattr(self.server, "handling", None)
            ident = next((x for x in (getattr(req, "members", None) or []) if x.member_id == mid), None)
            client = (getattr(ident, "reason", None) if ident is not None else None) or "not provided"
            if m.instance_id is not None:
                msg = (f"[GroupId {gid}] Static member {mid} with instance id {m.instance_id} has left group through "
                       f"explicit `LeaveGroup` request; client reason: {client}")
            else:
                msg = (f"[GroupId {gid}] Dynamic member {mid} has left group through explicit `LeaveGroup` request; "
                       f"client reason: {client}")
            self.emit(p, ts, GMM, "member_left", msg, reason=f"LeaveGroup; client reason: {client}", **fields)
            return
        since = self._revoking_since.get((gid, mid))
        if int(m.state) == 1 and m.rebalance_timeout_ms >= 0 and since is not None \
                and ts - since >= m.rebalance_timeout_ms:
            reason = f"it failed to transition from epoch {m.member_epoch} within {m.rebalance_timeout_ms}ms"
            self.emit(p, ts, GMM, "member_fenced", f"[GroupId {gid}] Member {mid} fenced from the group because "
                                                   f"{reason}.", reason=reason, **fields)
            return
        reason = "the member session expired"
        self.emit(p, ts, GMM, "member_fenced", f"[GroupId {gid}] Member {mid} fenced from the group because "
                                               f"{reason}.", reason=reason, **fields)

    def _group_tombstone(self, e: R.LogEntry, g: Any, later: list, out: Any) -> None:
        p, ts, gid = e.partition, e.timestamp_ms, e.record.group_id
        classic = [x.record for x in later if x.record.group_id == gid and type(x.record) in _CLASSIC_TYPES]
        if any(isinstance(r, R.GroupMetadata) and r.members for r in classic):
            self.emit(p, ts, GMM, "group_converted",
                      f"[GroupId {gid}] Converted the consumer group to a classic group.", group_id=gid,
                      to_type="classic")
        elif classic:
            self.emit(p, ts, GMM, "group_converted",
                      f"[GroupId {gid}] Converted the empty consumer group to a classic group.", group_id=gid,
                      to_type="classic")
        elif type(getattr(out, "answer", None)).__name__ == "DeleteGroupsResponse":
            n = sum(1 for x in later if isinstance(x.record, R.OffsetTombstone) and x.record.group_id == gid)
            self.emit(p, ts, SHARD, "groups_deleted",
                      f"The following groups were deleted: {gid}. A total of {n} offsets were removed.",
                      group_id=gid, offsets=n)
            self.emit(p, ts, KGROUP, "group_dead", f"Group {gid} is Dead (DeleteGroups)", group_id=gid,
                      reason="DeleteGroups")
        else:
            self.emit(p, ts, KGROUP, "group_dead", f"Group {gid} is Dead (its records were deleted)", group_id=gid)

    def _group_going(self, gid: str, later: list, member_id: str) -> bool:
        """The member's tombstones are part of the group's deletion or conversion (``createGroupTombstoneRecords``):
        only a member the converted classic group does not keep was removed by this call."""
        tomb = next((i for i, x in enumerate(later) if isinstance(x.record, R.ConsumerGroupMetadataTombstone)
                     and x.record.group_id == gid), None)
        if tomb is None:
            return False
        kept = next((x.record for x in later[tomb:] if isinstance(x.record, R.GroupMetadata)
                     and x.record.group_id == gid), None)
        return kept is None or any(mm.member_id == member_id for mm in kept.members)

    @staticmethod
    def _replacement_of(gid: str, m: Any, later: list) -> bool:
        """A static member's tombstones followed by a new member with its instance id: ``replaceMember``."""
        return m.instance_id is not None and any(
            isinstance(x.record, R.ConsumerGroupMemberMetadata) and x.record.group_id == gid
            and x.record.instance_id == m.instance_id and x.record.member_id != m.member_id for x in later)

    def _converting(self, gid: str, batch: list, i: int, e: R.LogEntry) -> bool:
        """Records written by an online upgrade (after its ``GroupTombstone``, up to the converted group's current
        assignments): Kafka logs the conversion only."""
        start = next((k for k in range(i - 1, -1, -1) if isinstance(batch[k].record, R.GroupTombstone)
                      and batch[k].record.group_id == gid
                      and batch[k].record.reason == "upgraded the classic group to a consumer group"), None)
        if start is None:
            return False
        # the conversion's records end before the first record of a member the classic group did not have
        members = {r.record.member_id for r in batch[start:i] if isinstance(r.record, R.ConsumerGroupMemberMetadata)}
        meta = [k for k in range(start, len(batch))
                if isinstance(batch[k].record, R.ConsumerGroupTargetAssignmentMetadata) and batch[k].record.group_id == gid]
        end = meta[0] if meta else len(batch) - 1
        if i <= end:
            return True
        rec = e.record
        return isinstance(rec, R.ConsumerGroupCurrentMemberAssignment) and rec.member_id in members

    # --- loading and unloading ---------------------------------------------------------------------------------

    def _loaded(self, e: R.LogEntry, lg: Any) -> None:
        before = lg.entries[:e.offset]
        durable = [x for x in before if x.record.DURABLE]
        size = sum(len(json.dumps(x.to_dict(), separators=(",", ":"))) for x in durable)
        p = e.partition
        self.emit(p, e.timestamp_ms, RUNTIME, "coordinator_loaded",
                  f"Finished loading of metadata from {OFFSETS_TOPIC}-{p} with epoch {e.record.leader_epoch} in 0ms "
                  f"where 0ms was spent in the scheduler. Loaded {len(durable)} records which total to {size} bytes.",
                  leader_epoch=e.record.leader_epoch, records=len(durable))
        state = load_durable(before)
        loaded = [("classic", g) for g in state.groups] + [("consumer", g) for g in state.consumer_groups]
        for kind, grp in sorted(loaded, key=lambda x: x[1].group_id):
            epoch = dict(generation_id=grp.generation_id) if kind == "classic" else dict(group_epoch=grp.group_epoch)
            self.emit(p, e.timestamp_ms, GMM, "group_loaded",
                      f"Loaded {kind} group {grp.group_id} with {len(grp.members)} members.", group_id=grp.group_id,
                      members=len(grp.members), group_type=kind, **epoch)

    def _leadership(self, ch: Any, first_offset: int | None) -> None:
        """A moved ``__consumer_offsets`` partition: the old leader unloads it (a stopped broker logs nothing), the
        new one schedules its load (the ``CoordinatorLoaded`` record says when it finished)."""
        p = ch.partition
        if ch.old_leader >= 0 and self.server.cluster.is_alive(ch.old_leader):
            self.leader_of[p] = ch.old_leader
            shadow = self.shadows.pop(p, None)
            if shadow is None:
                lg = self.server.svc.logs.get(p)
                entries = [] if lg is None else lg.entries[:first_offset] if first_offset is not None else lg.entries
                shadow = replay_live(entries)
            self.emit(p, None, RUNTIME, "coordinator_unloading",
                      f"Scheduling unloading of metadata for {OFFSETS_TOPIC}-{p} with epoch {ch.leader_epoch - 1}",
                      new_leader=ch.new_leader)
            unloaded = [("classic", g) for g in shadow.groups] + [("consumer", g) for g in shadow.consumer_groups]
            for kind, grp in sorted(unloaded, key=lambda x: x[1].group_id):
                if kind == "classic":
                    self.emit(p, None, GMM, "group_unloaded",
                              f"[GroupId={grp.group_id}] Unloading group metadata for generation "
                              f"{grp.generation_id}.", group_id=grp.group_id, generation_id=grp.generation_id)
                else:
                    self.emit(p, None, GMM, "group_unloaded",
                              f"[GroupId={grp.group_id}] Unloaded group metadata for group epoch {grp.group_epoch}.",
                              group_id=grp.group_id, group_epoch=grp.group_epoch, group_type="consumer")
            self.emit(p, None, RUNTIME, "coordinator_unloaded",
                      f"Finished unloading metadata for {OFFSETS_TOPIC}-{p} with epoch {ch.leader_epoch - 1}.")
        else:
            self.shadows.pop(p, None)
        if ch.new_leader >= 0:
            self.leader_of[p] = ch.new_leader
            self.emit(p, None, RUNTIME, "coordinator_loading",
                      f"Scheduling loading of metadata from {OFFSETS_TOPIC}-{p} with epoch {ch.leader_epoch}")


# --- formatting ------------------------------------------------------------------------------------------------------

class KafkaTextFormatter(logging.Formatter):
    """Kafka's log4j pattern ``[%d] %p %m (%c)``: ``[2025-01-31 12:00:00,123] INFO <message> (<logger>)``; the
    coordinator's lines carry the coordinator's time and the Kafka class they mirror."""

    def format(self, record: logging.LogRecord) -> str:
        ms = getattr(record, "coordinator_ms", None)
        t = (ms / 1000.0) if ms is not None else record.created
        stamp = _dt.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M:%S,") + f"{int(t * 1000) % 1000:03d}"
        who = getattr(record, "kafka_class", None) or record.name
        text = f"[{stamp}] {record.levelname} {record.getMessage()} ({who})"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ``time``, ``level``, ``logger``, ``message`` and the line's fields (``event``,
    ``group_id``, ``member_id``, ``generation_id``, ``reason``, ...)."""

    def format(self, record: logging.LogRecord) -> str:
        ms = getattr(record, "coordinator_ms", None)
        t = (ms / 1000.0) if ms is not None else record.created
        d: dict[str, Any] = {
            "time": _dt.datetime.fromtimestamp(t, _dt.timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname, "logger": getattr(record, "kafka_class", None) or record.name,
            "message": record.getMessage()}
        event = getattr(record, "event", None)
        if event is not None:
            d["event"] = event
            d.update(getattr(record, "fields", {}))
        if record.exc_info:
            d["exception"] = self.formatException(record.exc_info)
        return json.dumps(d, default=str)


def configure_logging(level: str = "INFO", fmt: str = "text", stream: Any = None) -> logging.Handler:
    """The server's stderr log: one handler on the root logger with the chosen format (``text`` or ``json``)."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else KafkaTextFormatter())
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(getattr(logging, level))
    return handler
