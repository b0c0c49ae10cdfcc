"""The classic consumer-group state machine (Kafka 4.x ``classic/ClassicGroup.java``).

Rules this file lives by
------------------------
* Everything that *is* group state lives here: the five states, the tables of allowed transitions and of the
  records that cause them, the group and member data, the derived predicates and validations Kafka's coordinator
  decides with (``has_all_members_joined``, ``supports_protocols``, ``select_protocol``, ``validate_member``...)
  and the one method that changes state, :meth:`Groups.apply`.
* State changes only by applying records (``coordinator.records``). Nothing here reads a clock, schedules a timer,
  answers a request or knows which broker it runs on: the request handlers and timers live in
  ``coordinator.classic_manager`` (Kafka's ``GroupMetadataManager``) and append records through the shard's
  runtime, which applies them here (``coordinator.replay.ShardState.apply``).
* Replaying the same records gives the same state. Where Kafka iterates a Java ``HashMap`` (member order, the
  leader picked when the leader leaves, ties in the protocol vote) we use a fixed order and say which.

Theory of operation
-------------------
A group starts ``Empty`` (created by a JoinGroup with an unknown member id, or by an OffsetCommit with
generation -1: a "simple" group). A member joining an Empty group starts a rebalance: ``PreparingRebalance``.
Members join (their JoinGroup is parked) until the join phase completes -- because everyone known has rejoined,
or the rebalance/initial-delay timer fired. Completing the join bumps the generation and moves to
``CompletingRebalance`` (or back to ``Empty`` if nobody is left); the leader gets the member list, computes an
assignment and sends it in SyncGroup; persisting it (the ``GroupMetadata`` record) makes the group ``Stable``.
Any membership change in ``Stable``/``CompletingRebalance`` starts a new rebalance. ``Dead`` is terminal: the
group was deleted, expired or unloaded.

Transitions (``VALID_PREVIOUS_STATES``, Kafka's ``ClassicGroupState.validPreviousStates``)::

    PreparingRebalance  <- Stable, CompletingRebalance, Empty
    CompletingRebalance <- PreparingRebalance
    Stable              <- CompletingRebalance
    Empty               <- PreparingRebalance
    Dead                <- Stable, PreparingRebalance, CompletingRebalance, Empty, Dead

Which record moves the machine is a second table, ``RECORD_TRANSITIONS`` -- and it *is* the mechanism: applying
one of these records looks its (type, current state) up there and takes that transition; a state the table does
not list for the record is a handler bug (``IllegalStateTransition``)::

    RebalanceStarted             Empty | Stable | CompletingRebalance -> PreparingRebalance
    JoinCompleted                PreparingRebalance -> CompletingRebalance (with members) | Empty (without)
    GroupMetadata                CompletingRebalance -> Stable (with members: the leader's assignment was
                                 persisted); Empty, PreparingRebalance, Stable: no transition (a join completed
                                 into Empty, a static member replaced in Stable)
    GroupTombstone               any -> Dead                           (deleted / expired; removed from the map)

All other records change data inside a state (members, pending ids, pending syncs, assignments).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from enum import Enum
from typing import Iterable

from protocol.errors import ErrorCode
from protocol.java import hashmap_order

from coordinator import records as R


class GroupState(str, Enum):
    """Kafka's ``ClassicGroupState``; the value is the name DescribeGroups/ListGroups report."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


S = GroupState

VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    S.PREPARING_REBALANCE: frozenset({S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY}),
    S.COMPLETING_REBALANCE: frozenset({S.PREPARING_REBALANCE}),
    S.STABLE: frozenset({S.COMPLETING_REBALANCE}),
    S.EMPTY: frozenset({S.PREPARING_REBALANCE}),
    S.DEAD: frozenset({S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.EMPTY, S.DEAD}),
}

_Transition = GroupState | None | tuple[GroupState | None, GroupState | None]

#: (record type, from state) -> to state, for the records that move the state machine (see the docstring); a pair
#: is (with members, without members), None is "no transition". Consulted by ``ClassicGroup._follow`` when a
#: record is applied: a (type, state) that is not listed is an illegal transition.
RECORD_TRANSITIONS: dict[tuple[str, GroupState], _Transition] = {
    ("RebalanceStarted", S.EMPTY): S.PREPARING_REBALANCE,
    ("RebalanceStarted", S.STABLE): S.PREPARING_REBALANCE,
    ("RebalanceStarted", S.COMPLETING_REBALANCE): S.PREPARING_REBALANCE,
    ("JoinCompleted", S.PREPARING_REBALANCE): (S.COMPLETING_REBALANCE, S.EMPTY),
    ("GroupMetadata", S.COMPLETING_REBALANCE): (S.STABLE, None),
    ("GroupMetadata", S.EMPTY): None,
    ("GroupMetadata", S.PREPARING_REBALANCE): None,
    ("GroupMetadata", S.STABLE): None,
    ("GroupTombstone", S.EMPTY): S.DEAD,
    ("GroupTombstone", S.PREPARING_REBALANCE): S.DEAD,
    ("GroupTombstone", S.COMPLETING_REBALANCE): S.DEAD,
    ("GroupTombstone", S.STABLE): S.DEAD,
}
_NOT_LISTED = object()


class IllegalStateTransition(RuntimeError):
    """A record asked for a transition Kafka forbids -- a bug in the handler that emitted it."""


@dataclass(slots=True)
class Member:
    """Kafka's ``ClassicGroupMember`` (minus the response futures: parked requests live in the manager)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    assignment: bytes = b""
    awaiting_join: bool = False
    is_new: bool = False
    # the session timer's key (coordinator.timers.heartbeat_timer), made once per member: a heartbeat re-arms it
    # (a cache, not state: not compared)
    timer: tuple | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol_name: str | None) -> bytes:
        for name, meta in self.protocols:
            if name == protocol_name:
                return meta
        return b""

    def matches(self, protocols: Iterable[tuple[str, bytes]]) -> bool:
        """Same protocols, same order, same bytes (``ClassicGroupMember.matches``)."""
        return tuple((n, bytes(m)) for n, m in protocols) == tuple((n, bytes(m)) for n, m in self.protocols)

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise IllegalStateTransition(f"member {self.member_id} does not support any of the candidate protocols")


@dataclass(slots=True)
class ClassicGroup:
    """A classic group's state (``ClassicGroup``)."""

    group_id: str
    state: GroupState = S.EMPTY
    previous_state: GroupState = S.EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    current_state_timestamp_ms: int = -1
    members: dict[str, Member] = field(default_factory=dict)  # insertion order = kgroup's member order
    static_members: dict[str, str] = field(default_factory=dict)  # group_instance_id -> member_id
    pending_members: dict[str, None] = field(default_factory=dict)  # ordered set of MEMBER_ID_REQUIRED ids
    pending_sync_members: dict[str, None] = field(default_factory=dict)
    new_member_added: bool = False
    subscribed_topics: frozenset[str] | None = None  # None = unknown (Kafka's Optional.empty())
    # Kept by the member-changing record handlers below (Kafka's ClassicGroup keeps ``supportedProtocols`` and
    # ``numMembersAwaitingJoin`` the same way), so the per-JoinGroup checks are O(1), not a walk of all members:
    # protocol name -> number of members that support it; number of members with ``awaiting_join``.
    protocol_counts: dict[str, int] = field(default_factory=dict, repr=False)
    awaiting_join_count: int = field(default=0, repr=False)

    # --- predicates (read-only) ------------------------------------------------------------------------------

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def is_simple_group(self) -> bool:
        """``ClassicGroup.isSimpleGroup``: no protocol type, Empty, no pending members -- a group that only holds
        offsets (created by a manual commit) and has no records of its own."""
        return self.protocol_type is None and self.state == S.EMPTY and not self.pending_members

    def static_member_id(self, group_instance_id: str | None) -> str | None:
        return None if group_instance_id is None else self.static_members.get(group_instance_id)

    @property
    def size(self) -> int:
        return len(self.members)

    @property
    def num_awaiting_join(self) -> int:
        return self.awaiting_join_count

    def validate_member(self, member_id: str, instance_id: str | None) -> "ErrorCode | None":
        """``ClassicGroup.validateMember``: a static member's instance must map to this member id
        (FENCED_INSTANCE_ID), and the member must exist (UNKNOWN_MEMBER_ID)."""
        if instance_id is not None:
            existing = self.static_members.get(instance_id)
            if existing is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if existing != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in self.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return None

    def validate_offset_commit(self, member_id: str, instance_id: str | None, generation: int
                               ) -> "ErrorCode | None":
        """``ClassicGroup.validateOffsetCommit``: generation < 0 commits (admin / manual assignment) only into an
        Empty group; otherwise a valid member of this generation, and not while CompletingRebalance."""
        if self.state == S.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation < 0 and self.state == S.EMPTY:
            return None
        if generation >= 0 or member_id != "" or instance_id is not None:
            e = self.validate_member(member_id, instance_id)
            if e is not None:
                return e
            if generation != self.generation_id:
                return ErrorCode.ILLEGAL_GENERATION
        elif self.state != S.EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if self.state == S.COMPLETING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return None

    def validate_offset_delete(self) -> "ErrorCode | None":
        """``ClassicGroup.validateOffsetDelete``: a group with members may delete offsets only if it uses the
        consumer protocol (then per topic: not subscribed)."""
        if self.state == S.DEAD:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if self.state in (S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE) and \
                self.protocol_type != "consumer":
            return ErrorCode.NON_EMPTY_GROUP
        return None

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join and not self.pending_members

    def has_received_sync_from_all_members(self) -> bool:
        return not self.pending_sync_members

    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS_STATES[S.PREPARING_REBALANCE]

    def rebalance_timeout_ms(self) -> int:
        """Max rebalance timeout over the current members (``ClassicGroup.rebalanceTimeoutMs``)."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def not_yet_rejoined_members(self) -> list[Member]:
        return [m for m in self.members.values() if not m.awaiting_join]

    def supported_protocol_counts(self) -> dict[str, int]:
        """Protocol name -> how many members support it (a copy of the incrementally kept counts)."""
        return dict(self.protocol_counts)

    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {name for name, c in self.protocol_counts.items() if c == n}

    def supports_protocols(self, protocol_type: str, protocols: Iterable[tuple[str, bytes]]) -> bool:
        """``ClassicGroup.supportsProtocols``: an Empty group accepts any non-empty type and protocol list;
        otherwise the type must match and one offered name must be supported by every current member (the
        joining member's *current* protocols included in the count)."""
        names = [n for n, _ in protocols]
        if self.state == S.EMPTY:
            return bool(protocol_type) and bool(names)
        counts = self.protocol_counts
        n = len(self.members)
        return self.protocol_type == protocol_type and any(counts.get(name, 0) == n for name in names)

    def select_protocol(self) -> str:
        """``ClassicGroup.selectProtocol``: every member votes for its first candidate protocol; most votes wins.
        Ties: Kafka takes the first maximum in ``java.util.HashMap`` iteration order, which we reproduce (bucket
        of the spread Java hash, then first-vote order), so ties are deterministic and match the new coordinator."""
        candidates = self.candidate_protocols()
        if not candidates:
            raise IllegalStateTransition(f"no protocol supported by all members of group {self.group_id}")
        votes: dict[str, int] = {}
        for m in self.members.values():
            name = m.vote(candidates)
            votes[name] = votes.get(name, 0) + 1
        order = hashmap_order(list(votes))
        best, best_votes = None, -1
        for name in order:
            if votes[name] > best_votes:
                best, best_votes = name, votes[name]
        return best  # type: ignore[return-value]

    def select_protocol_with(self, member_id: str, protocols: Iterable[tuple[str, bytes]]) -> str:
        """The protocol :meth:`select_protocol` would pick if ``member_id`` offered ``protocols`` instead."""
        probe = copy.copy(self)
        probe.members = dict(self.members)
        probe.protocol_counts = dict(self.protocol_counts)
        m = copy.copy(self.members[member_id])
        probe._count_protocols(m.protocols, -1)
        m.protocols = tuple(protocols)
        probe._count_protocols(m.protocols, 1)
        probe.members[member_id] = m
        return probe.select_protocol()

    def current_member_list(self) -> list[tuple[str, str | None, bytes]]:
        """(member_id, group_instance_id, metadata of the selected protocol) for the leader's JoinGroup response
        (``currentClassicGroupMembers``)."""
        return [(m.member_id, m.group_instance_id, m.metadata(self.protocol_name)) for m in self.members.values()]

    def compute_subscribed_topics(self) -> frozenset[str] | None:
        """``ClassicGroup.computeSubscribedTopics``: known only for consumer-protocol groups whose members'
        subscriptions all decode."""
        if self.protocol_type != "consumer":
            return None
        if not self.members:
            return frozenset()
        if self.protocol_name is None:
            return None
        from protocol.consumer_protocol import decode_subscription  # local: keep group.py light to import
        topics: set[str] = set()
        try:
            for m in self.members.values():
                _, sub = decode_subscription(m.metadata(self.protocol_name))
                topics.update(sub.topics)
        except Exception:  # Kafka logs SchemaException and leaves the topics unknown
            return None
        return frozenset(topics)

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """``ClassicGroup.isSubscribedToTopic``: while the subscribed topics are unknown (not computed yet, or
        undecodable), a group using the consumer protocol counts as subscribed to every topic."""
        if self.subscribed_topics is None:
            return self.protocol_type == "consumer"
        return topic in self.subscribed_topics

    def next_leader_after_removing(self, member_id: str) -> str | None:
        """The leader once ``member_id`` is gone: unchanged unless it was the leader; then the first remaining
        member in kgroup's member order (Kafka: the first key of a Java HashMap, i.e. arbitrary)."""
        if self.leader_id != member_id:
            return self.leader_id
        for mid in self.members:
            if mid != member_id:
                return mid
        return None

    def elect_joined_leader(self) -> str | None:
        """``maybeElectNewJoinedLeader``: the current leader if it rejoined, else the first member awaiting join,
        else None (no one rejoined)."""
        if self.leader_id is None:
            return None
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.awaiting_join:
            return self.leader_id
        for m in self.members.values():
            if m.awaiting_join:
                return m.member_id
        return None

    def to_group_metadata(self, assignment: dict[str, bytes] | None = None) -> R.GroupMetadata:
        """The GroupMetadata value Kafka would write for this group now (``newGroupMetadataRecord``)."""
        members = tuple(
            R.MemberMetadata(
                member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                client_host=m.client_host, rebalance_timeout_ms=m.rebalance_timeout_ms,
                session_timeout_ms=m.session_timeout_ms,
                subscription=m.metadata(self.protocol_name) if self.protocol_name is not None else b"",
                assignment=(assignment.get(m.member_id, b"") if assignment is not None else m.assignment))
            for m in self.members.values())
        return R.GroupMetadata(group_id=self.group_id, protocol_type=self.protocol_type,
                               generation_id=self.generation_id, protocol_name=self.protocol_name,
                               leader=self.leader_id, current_state_timestamp_ms=self.current_state_timestamp_ms,
                               members=members)

    # --- the only mutation path: transitions and member bookkeeping, called by apply() ---------------------

    def _count_protocols(self, protocols: tuple[tuple[str, bytes], ...], delta: int) -> None:
        counts = self.protocol_counts
        if len(protocols) == 1:
            names: Iterable[str] = (protocols[0][0],)
        else:
            names = dict.fromkeys(name for name, _ in protocols)  # a name offered twice counts once
        for name in names:
            c = counts.get(name, 0) + delta
            if c:
                counts[name] = c
            else:
                del counts[name]

    def _add_member(self, m: Member) -> None:
        self.members[m.member_id] = m
        self._count_protocols(m.protocols, 1)
        if m.awaiting_join:
            self.awaiting_join_count += 1

    def _pop_member(self, member_id: str) -> Member | None:
        m = self.members.pop(member_id, None)
        if m is not None:
            self._count_protocols(m.protocols, -1)
            if m.awaiting_join:
                self.awaiting_join_count -= 1
        return m

    def _follow(self, rec: R.Record, ts_ms: int, with_members: bool = True) -> None:
        """Take the transition ``RECORD_TRANSITIONS`` gives for ``rec`` in the current state."""
        to = RECORD_TRANSITIONS.get((rec.TYPE, self.state), _NOT_LISTED)
        if to is _NOT_LISTED:
            raise IllegalStateTransition(f"group {self.group_id}: {rec.TYPE} in state {self.state}")
        if isinstance(to, tuple):
            to = to[0] if with_members else to[1]
        if to is not None:
            self._transition(to, ts_ms)

    def _transition(self, to: GroupState, ts_ms: int) -> None:
        if self.state not in VALID_PREVIOUS_STATES[to]:
            raise IllegalStateTransition(f"group {self.group_id}: {self.state} -> {to} is not a valid transition")
        self.previous_state = self.state
        self.state = to
        self.current_state_timestamp_ms = ts_ms


# --- apply: records -> state --------------------------------------------------------------------------------------

class Groups:
    """All classic groups of one ``__consumer_offsets`` partition, changed only by :meth:`apply`."""

    def __init__(self) -> None:
        self.groups: dict[str, ClassicGroup] = {}

    def get(self, group_id: str) -> ClassicGroup | None:
        return self.groups.get(group_id)

    def __contains__(self, group_id: str) -> bool:
        return group_id in self.groups

    def __iter__(self):
        return iter(self.groups.values())

    def ensure_simple_group(self, group_id: str, ts_ms: int) -> None:
        """An offset commit (record) for an unknown group creates an Empty group without protocol type (a
        "simple" group), as Kafka's ``getOrMaybeCreateClassicGroup(groupId, true)`` / offset replay do."""
        if group_id not in self.groups:
            self.groups[group_id] = ClassicGroup(group_id, current_state_timestamp_ms=ts_ms)

    def apply(self, rec: R.Record, ts_ms: int) -> None:
        handler = _APPLY.get(type(rec))
        if handler is not None:
            handler(self, rec, ts_ms)

    # one method per record type ---------------------------------------------------------------------------------

    def _group(self, group_id: str) -> ClassicGroup:
        g = self.groups.get(group_id)
        if g is None:
            raise IllegalStateTransition(f"record for unknown group {group_id!r}")
        return g

    def _member_joined(self, r: R.MemberJoined, ts: int) -> None:
        g = self._group(r.group_id)
        if r.member_id in g.members:
            raise IllegalStateTransition(f"member {r.member_id} already in group {g.group_id}")
        if g.state == S.PREPARING_REBALANCE and g.previous_state == S.EMPTY:
            g.new_member_added = True
        if not g.members:
            g.protocol_type = r.protocol_type
        g._add_member(Member(r.member_id, r.group_instance_id, r.client_id, r.client_host,
                             r.rebalance_timeout_ms, r.session_timeout_ms, r.protocol_type,
                             tuple(r.protocols), awaiting_join=True, is_new=True))
        g.pending_members.pop(r.member_id, None)
        if r.group_instance_id is not None:
            g.static_members[r.group_instance_id] = r.member_id
        if g.leader_id is None:
            g.leader_id = r.member_id

    def _member_rejoined(self, r: R.MemberRejoined, ts: int) -> None:
        g = self._group(r.group_id)
        m = g.members[r.member_id]
        protocols = tuple(r.protocols)
        if protocols != m.protocols:
            g._count_protocols(m.protocols, -1)
            m.protocols = protocols
            g._count_protocols(protocols, 1)
        m.rebalance_timeout_ms = r.rebalance_timeout_ms
        m.session_timeout_ms = r.session_timeout_ms
        if not m.awaiting_join:
            m.awaiting_join = True
            g.awaiting_join_count += 1

    def _static_replaced(self, r: R.StaticMemberReplaced, ts: int) -> None:
        g = self._group(r.group_id)
        old = g._pop_member(r.old_member_id)
        if old is None:
            raise KeyError(r.old_member_id)
        new = Member(r.new_member_id, old.group_instance_id, old.client_id, old.client_host,
                     r.rebalance_timeout_ms, r.session_timeout_ms, old.protocol_type, tuple(r.protocols),
                     assignment=old.assignment, awaiting_join=r.awaiting_join, is_new=False)
        g._add_member(new)
        g.static_members[r.group_instance_id] = r.new_member_id
        if g.leader_id == r.old_member_id:
            g.leader_id = r.new_member_id
        # Kafka's replaceStaticMember leaves the old id in pendingSyncMembers (it bypasses remove()).

    def _member_removed(self, r: R.MemberRemoved, ts: int) -> None:
        g = self._group(r.group_id)
        m = g._pop_member(r.member_id)
        if m is not None and m.group_instance_id is not None:
            if g.static_members.get(m.group_instance_id) == r.member_id:
                del g.static_members[m.group_instance_id]
        g.pending_members.pop(r.member_id, None)
        g.pending_sync_members.pop(r.member_id, None)
        g.leader_id = r.new_leader

    def _pending_added(self, r: R.PendingMemberAdded, ts: int) -> None:
        self._group(r.group_id).pending_members[r.member_id] = None

    def _pending_removed(self, r: R.PendingMemberRemoved, ts: int) -> None:
        self._group(r.group_id).pending_members.pop(r.member_id, None)

    def _rebalance_started(self, r: R.RebalanceStarted, ts: int) -> None:
        g = self._group(r.group_id)
        if g.state == S.COMPLETING_REBALANCE:
            for m in g.members.values():
                m.assignment = b""
        g.pending_sync_members.clear()
        g._follow(r, ts)

    def _initial_extended(self, r: R.InitialRebalanceExtended, ts: int) -> None:
        self._group(r.group_id).new_member_added = False

    def _join_completed(self, r: R.JoinCompleted, ts: int) -> None:
        g = self._group(r.group_id)
        if set(r.members) != set(g.members):
            raise IllegalStateTransition(f"JoinCompleted members {sorted(r.members)} != group members "
                                         f"{sorted(g.members)} in group {g.group_id}")
        g.generation_id = r.generation_id
        g.new_member_added = False
        if r.members:
            g.protocol_name = r.protocol_name
            g.leader_id = r.leader
            g.subscribed_topics = g.compute_subscribed_topics()
            g._follow(r, ts, with_members=True)
            for m in g.members.values():
                m.awaiting_join = False
                m.is_new = False
            g.awaiting_join_count = 0
            g.pending_sync_members = dict.fromkeys(g.members)
        else:
            g.protocol_name = None
            g.leader_id = None
            g.subscribed_topics = g.compute_subscribed_topics()
            g._follow(r, ts, with_members=False)

    def _sync_received(self, r: R.SyncReceived, ts: int) -> None:
        self._group(r.group_id).pending_sync_members.pop(r.member_id, None)

    def _group_metadata(self, r: R.GroupMetadata, ts: int) -> None:
        g = self.groups.get(r.group_id)
        if g is None:
            self.groups[r.group_id] = group_from_metadata(r, ts)
            return
        g.protocol_type = r.protocol_type
        g.generation_id = r.generation_id
        g.protocol_name = r.protocol_name
        g.leader_id = r.leader
        listed = {mm.member_id: mm for mm in r.members}
        for mid in [mid for mid in g.members if mid not in listed]:
            raise IllegalStateTransition(f"GroupMetadata for {g.group_id} omits live member {mid}")
        for mm in r.members:
            m = g.members.get(mm.member_id)
            if m is None:
                raise IllegalStateTransition(f"GroupMetadata for {g.group_id} names unknown member {mm.member_id}")
            m.assignment = mm.assignment
        g._follow(r, ts, with_members=bool(r.members))

    def _group_tombstone(self, r: R.GroupTombstone, ts: int) -> None:
        g = self.groups.pop(r.group_id, None)
        if g is not None:
            g._follow(r, ts)

    def _offset_commit(self, r: R.OffsetCommit, ts: int) -> None:
        self.ensure_simple_group(r.group_id, ts)


_APPLY = {
    R.MemberJoined: Groups._member_joined,
    R.MemberRejoined: Groups._member_rejoined,
    R.StaticMemberReplaced: Groups._static_replaced,
    R.MemberRemoved: Groups._member_removed,
    R.PendingMemberAdded: Groups._pending_added,
    R.PendingMemberRemoved: Groups._pending_removed,
    R.RebalanceStarted: Groups._rebalance_started,
    R.InitialRebalanceExtended: Groups._initial_extended,
    R.JoinCompleted: Groups._join_completed,
    R.SyncReceived: Groups._sync_received,
    R.GroupMetadata: Groups._group_metadata,
    R.GroupTombstone: Groups._group_tombstone,
    R.OffsetCommit: Groups._offset_commit,
}


def group_from_metadata(r: R.GroupMetadata, ts_ms: int) -> ClassicGroup:
    """A group as Kafka loads it from its metadata value: Stable with members, else Empty
    (``ClassicGroup.fromRecord``); each member supports exactly the selected protocol."""
    g = ClassicGroup(r.group_id, generation_id=r.generation_id, protocol_type=r.protocol_type,
                     protocol_name=r.protocol_name, leader_id=r.leader,
                     current_state_timestamp_ms=(r.current_state_timestamp_ms if r.current_state_timestamp_ms >= 0
                                                 else ts_ms))
    for mm in r.members:
        # GroupMetadataManager.replay: a rebalance timeout of -1 (old record versions) means the session timeout.
        rebalance_timeout = mm.session_timeout_ms if mm.rebalance_timeout_ms == -1 else mm.rebalance_timeout_ms
        g._add_member(Member(
            mm.member_id, mm.group_instance_id, mm.client_id, mm.client_host, rebalance_timeout,
            mm.session_timeout_ms, r.protocol_type or "",
            ((r.protocol_name or "", mm.subscription),), assignment=mm.assignment))
        if mm.group_instance_id is not None:
            g.static_members[mm.group_instance_id] = mm.member_id
    g.state = S.STABLE if r.members else S.EMPTY
    g.previous_state = g.state
    g.subscribed_topics = g.compute_subscribed_topics()
    return g
