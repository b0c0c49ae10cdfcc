"""The coordinator's log, as Kafka's group coordinator writes it at INFO: a server listener that turns the records
of every call (``Output.records``, ``Output.leadership``) into the lines of Kafka 4.4's ``GroupMetadataManager``,
``GroupCoordinatorShard`` and ``CoordinatorRuntime``.

Theory of operation. The coordinator core already says *why* in its records (the reasons are Kafka's own
strings), so nothing in ``coordinator/`` logs. :class:`GroupLog` is attached with ``server.add_listener``; for each
record it looks at the group *before* the record (a shadow of the partition's groups, kept by replaying the same
records through :class:`coordinator.group.Groups` -- the state machine has one home) and emits the line Kafka logs
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
from coordinator.group import Groups
from coordinator.replay import load_durable, replay_live

log = logging.getLogger("kgroup.coordinator")

GMM = "org.apache.kafka.coordinator.group.GroupMetadataManager"
SHARD = "org.apache.kafka.coordinator.group.GroupCoordinatorShard"
RUNTIME = "org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime"
KGROUP = "kgroup"


def _ids(ids: Any) -> str:
    """A Java collection's ``toString``: ``[a, b]``."""
    return "[" + ", ".join(ids) + "]"


class GroupLog:
    """A server listener that logs the coordinator's work at INFO (``server.add_listener(GroupLog(server))``)."""

    def __init__(self, server: Any, logger: logging.Logger = log) -> None:
        self.server = server
        self.log = logger
        self.shadows: dict[int, Groups] = {}
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
                self.shadows[e.partition] = load_durable(self.server.svc.log(e.partition).entries[:e.offset]).groups
                self._loaded(e, self.server.svc.log(e.partition))
                continue
            shadow = self._shadow(e)
            g = shadow.get(rec.group_id)
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

    def _shadow(self, e: R.LogEntry) -> Groups:
        shadow = self.shadows.get(e.partition)
        if shadow is None:
            entries = self.server.svc.log(e.partition).entries[:e.offset]
            shadow = self.shadows[e.partition] = replay_live(entries).groups
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
        groups = load_durable(before).groups
        for grp in sorted(groups, key=lambda x: x.group_id):
            self.emit(p, e.timestamp_ms, GMM, "group_loaded",
                      f"Loaded classic group {grp.group_id} with {len(grp.members)} members.", group_id=grp.group_id,
                      members=len(grp.members), generation_id=grp.generation_id)

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
                shadow = replay_live(entries).groups
            self.emit(p, None, RUNTIME, "coordinator_unloading",
                      f"Scheduling unloading of metadata for {OFFSETS_TOPIC}-{p} with epoch {ch.leader_epoch - 1}",
                      new_leader=ch.new_leader)
            for grp in sorted(shadow or (), key=lambda x: x.group_id):
                self.emit(p, None, GMM, "group_unloaded",
                          f"[GroupId={grp.group_id}] Unloading group metadata for generation {grp.generation_id}.",
                          group_id=grp.group_id, generation_id=grp.generation_id)
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
