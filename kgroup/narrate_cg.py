"""Narration of KIP-848 consumer groups (``group.protocol=consumer``) from the coordinator's ``ConsumerGroup*``
records, in the catalogue's languages (``narr.cg.*``).

Theory of operation
-------------------
:class:`ConsumerGroupNarration` keeps its own replay of the records it is shown -- the coordinator's own
``ConsumerGroups`` model (``coordinator.consumer_group``), which is what a broker taking over the partition would
rebuild -- and compares each record with the state *before* it to say what the coordinator decided:

* ``ConsumerGroupMemberMetadata`` for an unknown member: a ConsumerGroupHeartbeat with member epoch 0 joined; for a
  known one, its subscription (or regex, or preferred server assignor) changed;
* ``ConsumerGroupMetadata``: the group epoch is bumped (``GroupMetadataManager.consumerGroupHeartbeat``: a member
  joined or left, a subscription or the preferred assignor changed, or the subscribed topics' metadata hash
  changed -- KIP-1101); a new group starts at epoch 1 with an empty target at epoch 1 (KAFKA-20268), so its first
  member brings it to epoch 2;
* ``ConsumerGroupTargetAssignmentMember`` ... ``ConsumerGroupTargetAssignmentMetadata``: the coordinator computed a
  new target assignment for that epoch with a *server-side* assignor (``group.consumer.assignors``; the members'
  most preferred ``group.remote.assignor``, else the first configured) -- no leader consumer is involved;
* ``ConsumerGroupCurrentMemberAssignment``: one reconciliation step (``CurrentAssignmentBuilder``): a member that
  must give partitions up stays at its epoch in ``UNREVOKED_PARTITIONS`` until a heartbeat shows them released
  (revocation before assignment); a member waiting for partitions another still owns is in
  ``UNRELEASED_PARTITIONS``; ``STABLE`` at the target epoch once it owns its whole target;
* the current-assignment tombstone: the member left (heartbeat with member epoch -1) or was fenced (session or
  rebalance timeout); ``ConsumerGroupMetadataTombstone``: the group was deleted.

Live (``kgroup serve --narrate``) the caller passes :meth:`hint_leaving` what the responses of the same operation
show (a heartbeat answered with member epoch -1 / -2, a classic LeaveGroup), so that a removal without such an
answer is told as a fencing by a timer. Topic ids are named through the context's topic names.
"""

from __future__ import annotations

from typing import Callable, Iterable, Optional

from coordinator import records as R
from coordinator.cluster import topic_id
from coordinator.consumer_group import ConsumerGroup, ConsumerGroupMember, ConsumerGroups, MemberState
from protocol.uuids import uuid_to_string

from kgroup.catalogue import Catalogue
from kgroup.runlog import partitions_text

#: record types this module narrates (the rest of the narrator leaves them alone)
TYPES = frozenset(cls.TYPE for cls in R.CONSUMER_GROUP_RECORD_TYPES)

LEAVE_EPOCH = -1          # ConsumerGroupHeartbeatRequest.LEAVE_GROUP_MEMBER_EPOCH
LEAVE_STATIC_EPOCH = -2   # LEAVE_GROUP_STATIC_MEMBER_EPOCH


def member_label(member_id: str, client_id: str = "") -> str:
    """``a/N+hW8N5j…``: the client id and the first 8 characters of the (random, base64) member id."""
    short = member_id[:8] + "…" if len(member_id) > 8 else member_id
    return f"{client_id}/{short}" if client_id else short


class ConsumerGroupNarration:
    def __init__(self, T: Catalogue, line: Callable[[str, str], None], more: Callable[[str], None],
                 who: Callable[[str], str], default_assignor: str = "uniform",
                 topic_names: Optional[Callable[[], Iterable[str]]] = None, live: bool = False) -> None:
        self.T = T
        self.line = line            # (who, text): a step
        self.more = more            # a continuation line
        self.who = who              # group id -> the coordinator's column
        self.default_assignor = default_assignor
        self.topic_names = topic_names or (lambda: ())
        self.live = live
        self.groups = ConsumerGroups()
        self._names: dict[str, str] = {}
        self._why: dict[str, list[str]] = {}            # group -> causes of the next epoch bump
        self._target_changed: dict[str, list[str]] = {}  # group -> members whose target record came
        self._leaving: dict[str, str] = {}              # member id -> catalogue key of how it leaves
        self._clients: dict[str, str] = {}              # member id -> client id (kept after removal)
        # online conversions (KIP-848 migration), found by :meth:`prepare` in the records of one operation, keyed
        # (group, time): an upgrade (the classic group's tombstone, then consumer group records) and a downgrade
        # (the consumer group's tombstone, then a classic GroupMetadata with the members carried back)
        self._upgrades: set[tuple[str, int]] = set()
        self._downgrades: dict[tuple[str, int], set[str]] = {}

    # --- names ----------------------------------------------------------------------------------------------------

    def topic(self, tid: str) -> str:
        if tid not in self._names:
            for name in self.topic_names():
                self._names.setdefault(uuid_to_string(topic_id(name)), name)
        return self._names.get(tid, tid)

    def parts(self, by_topic) -> str:
        pairs = [(self.topic(t), p) for t, ps in by_topic.items() for p in ps]
        return partitions_text(pairs)

    @property
    def downgrades(self) -> dict[tuple[str, int], set[str]]:
        """(group, time) of each online downgrade -> the members carried back into the classic group."""
        return self._downgrades

    def knows(self, member_id: str) -> bool:
        """``member_id`` is (or was) a member of a consumer group narrated here."""
        return member_id in self._clients

    def label(self, member_id: str) -> str:
        return member_label(member_id, self._clients.get(member_id, ""))

    def topics_text(self, names: Iterable[str], regex: Optional[str]) -> str:
        shown = sorted(names)
        if regex:
            shown.append(f"/{regex}/")
        return ", ".join(shown)

    def seed(self, records: Iterable[R.Record]) -> None:
        """Replay, without a word, what happened before the narration started (a ``kgroup serve --data-dir``
        restarted with its groups): the records that follow are then told against the groups as they are."""
        for rec in records:
            if rec.TYPE in TYPES:
                if isinstance(rec, R.ConsumerGroupMemberMetadata):
                    self._clients[rec.member_id] = rec.client_id
                self.groups.replay(rec)

    def prepare(self, events: Iterable[dict]) -> None:
        """Look ahead over the records of one operation (live) or of a whole run for online conversions between
        the classic and the consumer protocol (``GroupMetadataManager.convertToConsumerGroup`` /
        ``convertToClassicGroup``): both write the old group's tombstone and the new group's records at once."""
        tombstoned: set[tuple[str, int]] = set()
        cg_tombstoned: set[tuple[str, int]] = set()
        for ev in events:
            if "log_partition" not in ev:
                continue
            key = (ev["data"].get("group_id", ""), ev["timestamp_ms"])
            kind = ev["type"]
            if kind == "GroupTombstone":
                tombstoned.add(key)
            elif kind == "ConsumerGroupMemberMetadata" and key in tombstoned:
                self._upgrades.add(key)
            elif kind == "ConsumerGroupMetadataTombstone":
                cg_tombstoned.add(key)
            elif kind == "GroupMetadata" and key in cg_tombstoned:
                self._downgrades[key] = {m["member_id"] for m in ev["data"].get("members") or ()}

    # --- live hints -------------------------------------------------------------------------------------------------

    def hint_leaving(self, member_id: str, epoch: Optional[int] = None, classic: bool = False) -> None:
        """The operation whose records follow answered ``member_id``'s leave (its heartbeat's epoch, or a classic
        LeaveGroup)."""
        if classic:
            self._leaving[member_id] = "narr.cg.how.left_classic"
        elif epoch == LEAVE_STATIC_EPOCH:
            self._leaving[member_id] = "narr.cg.how.left_static"
        else:
            self._leaving[member_id] = "narr.cg.how.left"

    def end_of_operation(self) -> None:
        self._leaving.clear()

    # --- records ----------------------------------------------------------------------------------------------------

    def record(self, ev: dict) -> None:
        rec = R.LogEntry.from_dict(ev).record
        gid = rec.group_id
        before = self.groups.get(gid)
        handler = getattr(self, "_" + rec.TYPE, None)
        say = handler(rec, before, ev) if handler is not None else None
        self.groups.replay(rec)
        if say is not None:
            say()

    def _ConsumerGroupMemberMetadata(self, rec: R.ConsumerGroupMemberMetadata, g: Optional[ConsumerGroup], ev):
        T = self.T
        old = g.members.get(rec.member_id) if g is not None else None
        self._clients[rec.member_id] = rec.client_id
        for name in rec.subscribed_topic_names:  # the records name subscribed topics, and use ids elsewhere
            self._names.setdefault(uuid_to_string(topic_id(name)), name)
        who = self.who(rec.group_id)
        topics = self.topics_text(rec.subscribed_topic_names, rec.subscribed_topic_regex)
        upgrade = (rec.group_id, ev["timestamp_ms"]) in self._upgrades
        if old is None and upgrade and rec.classic_member_metadata is not None:
            def say_converted() -> None:
                if g is None:
                    self.line(who, T("narr.cg.upgraded", group=rec.group_id))
                self.line(who, T("narr.cg.converted_member", member=self.label(rec.member_id), topics=topics))
            return say_converted
        if old is None:
            self._why.setdefault(rec.group_id, []).append(T("narr.cg.why.joined", member=self.label(rec.member_id)))

            def say() -> None:
                if g is None:
                    self.line(who, T("narr.cg.group_created", group=rec.group_id, partition=ev["log_partition"]))
                assignor = rec.server_assignor or T("narr.cg.assignor_default", default=self.default_assignor)
                self.line(who, T("narr.cg.member_joined", client=rec.client_id, member=self.label(rec.member_id),
                                 topics=topics, rebalance=rec.rebalance_timeout_ms, assignor=assignor))
                if rec.instance_id:
                    self.more(T("narr.cg.static_member", instance=rec.instance_id))
                if rec.classic_member_metadata is not None:
                    self.more(T("narr.cg.classic_member"))
            return say
        if (set(old.subscribed_topic_names) != set(rec.subscribed_topic_names)
                or (old.subscribed_topic_regex or "") != (rec.subscribed_topic_regex or "")):
            self._why.setdefault(rec.group_id, []).append(T("narr.cg.why.subscription",
                                                            member=self.label(rec.member_id)))
            return lambda: self.line(who, T("narr.cg.subscription_changed", member=self.label(rec.member_id),
                                            topics=topics))
        if old.server_assignor_name != rec.server_assignor:
            self._why.setdefault(rec.group_id, []).append(T("narr.cg.why.assignor"))
        return None

    def _ConsumerGroupMetadata(self, rec: R.ConsumerGroupMetadata, g: Optional[ConsumerGroup], ev):
        old_epoch = g.group_epoch if g is not None else 1
        why = self._why.pop(rec.group_id, [])
        if g is not None and rec.metadata_hash != g.metadata_hash and not why and rec.metadata_hash:
            why = [self.T("narr.cg.why.metadata")]
        if rec.epoch == old_epoch:
            return None
        text = "; ".join(why) if why else self.T("narr.cg.why.other")
        return lambda: self.line(self.who(rec.group_id), self.T("narr.cg.epoch_bump", old=old_epoch, new=rec.epoch,
                                                                why=text))

    def _ConsumerGroupTargetAssignmentMember(self, rec, g, ev):
        self._target_changed.setdefault(rec.group_id, []).append(rec.member_id)
        return None

    def _ConsumerGroupTargetAssignmentMetadata(self, rec: R.ConsumerGroupTargetAssignmentMetadata, g, ev):
        changed = self._target_changed.pop(rec.group_id, [])

        def say() -> None:
            T = self.T
            group = self.groups.get(rec.group_id)
            who = self.who(rec.group_id)
            if group is None or not len(group.members):
                self.line(who, T("narr.cg.target_empty", epoch=rec.assignment_epoch))
                return
            assignor = group.preferred_server_assignor() or self.default_assignor
            self.line(who, T("narr.cg.target", epoch=rec.assignment_epoch, assignor=assignor,
                             changed=len(changed), n=len(group.members)))
            for mid in list(group.members):
                target = group.target_assignment.get(mid)
                self.more(T("narr.cg.target_member", member=self.label(mid),
                            partitions=self.parts(target.partitions) if target is not None else "[]"))
        return say

    def _ConsumerGroupCurrentMemberAssignment(self, rec: R.ConsumerGroupCurrentMemberAssignment,
                                              g: Optional[ConsumerGroup], ev):
        T = self.T
        old: Optional[ConsumerGroupMember] = g.members.get(rec.member_id) if g is not None else None
        old_epoch = old.member_epoch if old is not None else 0
        old_owned = {t: set(ps) for t, ps in (old.assigned_partitions if old else {}).items()}
        owned = {tp.topic_id: tp.partitions for tp in rec.assigned_partitions}
        pending = {tp.topic_id: tp.partitions for tp in rec.partitions_pending_revocation}
        who = self.who(rec.group_id)
        member = self.label(rec.member_id)
        state = MemberState.from_value(rec.state)
        if rec.member_epoch == LEAVE_STATIC_EPOCH:
            return lambda: self.line(who, T("narr.cg.static_left", member=member,
                                            partitions=self.parts(old_owned)))
        if state == MemberState.UNREVOKED_PARTITIONS:
            rebalance = old.rebalance_timeout_ms if old is not None else "?"

            def say_unrevoked() -> None:
                group = self.groups.get(rec.group_id)
                self.line(who, T("narr.cg.unrevoked", member=member, epoch=rec.member_epoch,
                                 revoke=self.parts(pending), keep=self.parts(owned),
                                 target=group.assignment_epoch if group else "?", rebalance=rebalance))
            return say_unrevoked
        if state == MemberState.UNRELEASED_PARTITIONS:
            def say_unreleased() -> None:
                group = self.groups.get(rec.group_id)
                target = group.target_assignment.get(rec.member_id) if group else None
                waiting = {t: [p for p in ps if p not in owned.get(t, ())]
                           for t, ps in (target.partitions if target else {}).items()}
                self.line(who, T("narr.cg.unreleased", member=member, old=old_epoch, new=rec.member_epoch,
                                 owned=self.parts(owned), waiting=self.parts(waiting)))
            if old is None or old_epoch != rec.member_epoch or old.state != state:
                return say_unreleased
            return None
        if state != MemberState.STABLE:
            return None
        if old is not None and old.state == MemberState.UNREVOKED_PARTITIONS:
            revoked = {t: [p for p in ps] for t, ps in old.partitions_pending_revocation.items()}
            return lambda: self.line(who, T("narr.cg.revocation_done", member=member, revoked=self.parts(revoked),
                                            old=old_epoch, new=rec.member_epoch, owned=self.parts(owned)))
        if old_epoch != rec.member_epoch:
            if g is not None and rec.member_epoch < g.group_epoch:
                # the member reconciled to a target older than the group epoch: its computation waits for
                # group.consumer.assignment.interval.ms to pass since the last one (KIP-1263)
                return lambda: self.line(who, T("narr.cg.stable_lagging", member=member, old=old_epoch,
                                                new=rec.member_epoch, owned=self.parts(owned),
                                                group_epoch=g.group_epoch))
            return lambda: self.line(who, T("narr.cg.stable", member=member, old=old_epoch, new=rec.member_epoch,
                                            owned=self.parts(owned)))
        added = {t: [p for p in ps if p not in old_owned.get(t, set())] for t, ps in owned.items()}
        if any(added.values()):
            return lambda: self.line(who, T("narr.cg.received", member=member, added=self.parts(added),
                                            owned=self.parts(owned)))
        return None

    def _ConsumerGroupCurrentMemberAssignmentTombstone(self, rec, g: Optional[ConsumerGroup], ev):
        T = self.T
        old = g.members.get(rec.member_id) if g is not None else None
        if old is None:
            return None
        member = self.label(rec.member_id)
        how = self._leaving.get(rec.member_id)
        carried_back = self._downgrades.get((rec.group_id, ev["timestamp_ms"]))
        if how is None and carried_back is not None and rec.member_id in carried_back:
            return lambda: self.line(self.who(rec.group_id), T("narr.cg.downgraded_member", member=member))
        if how is None:
            if not self.live:
                how = "narr.cg.how.removed"
            elif old.partitions_pending_revocation:
                how = "narr.cg.how.fenced_rebalance"
            else:
                how = "narr.cg.how.fenced_session"
        owned = {t: set(ps) for t, ps in old.assigned_partitions.items()}
        self._why.setdefault(rec.group_id, []).append(T("narr.cg.why.left", member=member))
        return lambda: self.line(self.who(rec.group_id), T("narr.cg.member_removed", member=member,
                                                           how=T(how, rebalance=old.rebalance_timeout_ms),
                                                           partitions=self.parts(owned)))

    def _ConsumerGroupMetadataTombstone(self, rec, g, ev):
        if g is None:
            return None
        if (rec.group_id, ev["timestamp_ms"]) in self._downgrades:
            return lambda: self.line(self.who(rec.group_id), self.T("narr.cg.downgraded", group=rec.group_id))
        return lambda: self.line(self.who(rec.group_id), self.T("narr.cg.group_deleted", group=rec.group_id))

    def _ConsumerGroupRegularExpression(self, rec: R.ConsumerGroupRegularExpression, g, ev):
        return lambda: self.line(self.who(rec.group_id), self.T("narr.cg.regex", regex=rec.regular_expression,
                                                                topics=", ".join(rec.topics)))
