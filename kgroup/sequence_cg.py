"""KIP-848 consumer groups in ``kgroup diagram``: the ConsumerGroupHeartbeat exchanges and the coordinator's
decisions, derived from the group's ``ConsumerGroup*`` records (a ``kgroup serve --data-dir``, whose logs hold
Kafka's durable records).

Each record of an operation proves one step (KIP-848; Kafka 4.4 ``GroupMetadataManager.consumerGroupHeartbeat``):

=============================================  ==================================================================
drawn                                          from
=============================================  ==================================================================
ConsumerGroupHeartbeat epoch 0 + subscription  ``ConsumerGroupMemberMetadata`` of a new member (its client id
                                               names the lifeline); of a known one: the subscription it changed
note group epoch                               ``ConsumerGroupMetadata``
note target assignment (server assignor)       ``ConsumerGroupTargetAssignmentMetadata`` after the members' targets
ConsumerGroupHeartbeat + its answer            ``ConsumerGroupCurrentMemberAssignment``: the member's new epoch,
                                               state and partitions (and those it must revoke) are in the answer
note member removed                            the current-assignment tombstone (a leave and a fencing write the
                                               same records, so the log cannot tell them apart)
note group deleted                             ``ConsumerGroupMetadataTombstone``
=============================================  ==================================================================

Heartbeats that change nothing write no record and are not drawn. The replay is the coordinator's own model
(``coordinator.consumer_group.ConsumerGroups``), as in :mod:`kgroup.narrate_cg`.
"""

from __future__ import annotations

from typing import Callable, Iterable

from coordinator import records as R
from coordinator.cluster import topic_id
from coordinator.consumer_group import ConsumerGroups, MemberState
from protocol.uuids import uuid_to_string

from kgroup.catalogue import Catalogue
from kgroup.diagram import Message, Note
from kgroup.narrate_cg import LEAVE_STATIC_EPOCH
from kgroup.runlog import partitions_text

STATE_NAMES = {MemberState.STABLE: "STABLE", MemberState.UNREVOKED_PARTITIONS: "UNREVOKED_PARTITIONS",
               MemberState.UNRELEASED_PARTITIONS: "UNRELEASED_PARTITIONS", MemberState.UNKNOWN: "UNKNOWN"}


class ConsumerGroupDrawing:
    def __init__(self, T: Catalogue, add: Callable, consumer: Callable[[str], str], coordinator: Callable[[str], str],
                 note_text: Callable[[str, str], str], topic_names: Iterable[str] = ()) -> None:
        self.T = T
        self.add = add                      # a Message or Note
        self.consumer = consumer            # client name -> participant id
        self.coordinator = coordinator      # group id -> participant id
        self.note_text = note_text
        self.groups = ConsumerGroups()
        self.clients: dict[str, str] = {}   # member id -> client id
        self.names = {uuid_to_string(topic_id(n)): n for n in topic_names}

    def parts(self, by_topic) -> str:
        return partitions_text([(self.names.get(t, t), p) for t, ps in by_topic.items() for p in ps])

    def client(self, member_id: str) -> str:
        return self.clients.get(member_id) or member_id[:8]

    def record(self, ev: dict, t: int) -> None:
        T = self.T
        rec = R.LogEntry.from_dict(ev).record
        gid = rec.group_id
        g = self.groups.get(gid)
        k = self.coordinator(gid)
        if isinstance(rec, R.ConsumerGroupMemberMetadata):
            old = g.members.get(rec.member_id) if g is not None else None
            self.clients[rec.member_id] = rec.client_id or rec.member_id[:8]
            for name in rec.subscribed_topic_names:  # the records name subscribed topics, and use ids elsewhere
                self.names.setdefault(uuid_to_string(topic_id(name)), name)
            topics = ", ".join(sorted(rec.subscribed_topic_names)
                               + ([f"/{rec.subscribed_topic_regex}/"] if rec.subscribed_topic_regex else []))
            c = self.consumer(self.client(rec.member_id))
            if old is None:
                self.add(Message(t, c, k, T("diagram.cg_join", topics=topics)))
            elif set(old.subscribed_topic_names) != set(rec.subscribed_topic_names):
                self.add(Message(t, c, k, T("diagram.cg_subscribe", epoch=old.member_epoch, topics=topics)))
        elif isinstance(rec, R.ConsumerGroupMetadata):
            if g is None or rec.epoch != g.group_epoch:
                self.add(Note(t, (k,), self.note_text(gid, T("diagram.cg_note_epoch", epoch=rec.epoch))))
        elif isinstance(rec, R.ConsumerGroupCurrentMemberAssignment):
            old = g.members.get(rec.member_id) if g is not None else None
            c = self.consumer(self.client(rec.member_id))
            if old is not None and rec.member_epoch == LEAVE_STATIC_EPOCH:
                self.add(Message(t, c, k, T("diagram.cg_heartbeat", epoch=LEAVE_STATIC_EPOCH)))
            else:
                if old is not None and old.member_epoch > 0:   # a new member's request is its join, drawn above
                    self.add(Message(t, c, k, T("diagram.cg_heartbeat", epoch=old.member_epoch)))
                owned = {tp.topic_id: tp.partitions for tp in rec.assigned_partitions}
                pending = {tp.topic_id: tp.partitions for tp in rec.partitions_pending_revocation}
                state = STATE_NAMES[MemberState.from_value(rec.state)]
                if pending:
                    label = T("diagram.cg_resp_revoke", epoch=rec.member_epoch, state=state,
                              partitions=self.parts(owned), revoke=self.parts(pending))
                else:
                    label = T("diagram.cg_resp", epoch=rec.member_epoch, state=state, partitions=self.parts(owned))
                self.add(Message(t, k, c, label, reply=True))
        elif isinstance(rec, R.ConsumerGroupCurrentMemberAssignmentTombstone):
            if g is not None and rec.member_id in g.members:
                self.add(Note(t, (k,), self.note_text(gid, T("diagram.cg_note_removed",
                                                             member=self.client(rec.member_id)))))
        elif isinstance(rec, R.ConsumerGroupMetadataTombstone):
            if g is not None:
                self.add(Note(t, (k,), self.note_text(gid, T("diagram.cg_note_deleted"))))
        self.groups.replay(rec)
        if isinstance(rec, R.ConsumerGroupTargetAssignmentMetadata):
            group = self.groups.get(gid)
            if group is not None and len(group.members):
                targets = ", ".join(f"{self.client(m)} {self.parts(group.target_assignment[m].partitions)}"
                                    for m in group.members if m in group.target_assignment)
                assignor = group.preferred_server_assignor() or T("diagram.cg_default_assignor")
                self.add(Note(t, (k,), self.note_text(gid, T("diagram.cg_note_target", epoch=rec.assignment_epoch,
                                                             assignor=assignor, targets=targets))))
