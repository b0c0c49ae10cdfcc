"""Review against Kafka 4.x's new group coordinator (classic groups).

Each case re-expresses a scenario of Kafka's ``GroupMetadataManagerTest`` / ``OffsetMetadataManagerTest`` /
``ClassicGroupTest`` (named in the docstring) with kgroup's harness. Expected values come from Kafka's test
assertions and from the Java sources they exercise (``GroupMetadataManager``, ``ClassicGroup``,
``ClassicGroupMember``, ``OffsetMetadataManager``, ``GroupCoordinatorService``) -- never from running kgroup.
Times are explicit: group.initial.rebalance.delay.ms = 3000 (default), session 10000, rebalance 30000 unless said.
"""

import pytest

from coord_harness import E, Env, sub

P1 = [("range", sub("foo"))]
P2 = [("range", sub("foo", "bar"))]


def two_member_stable(env: Env, **kw):
    ids, leader, gen = env.stable_group(2, **kw)
    follower = [m for m in ids if m != leader][0]
    return leader, follower, gen


def described(env: Env, group: str = "g", version: int = 5):
    return env.resp(env.describe(group, version=version)).groups[0]


# ------------------------------------------------------------------------------------------------------------------
# JoinGroup
# ------------------------------------------------------------------------------------------------------------------

class TestJoinGroup:
    def test_unknown_member_id_for_unknown_group(self):
        """testJoinGroupUnknownMemberNewGroup: a known-looking member id for a group that does not exist ->
        UNKNOWN_MEMBER_ID echoing the member id; the group is not created."""
        env = Env()
        r = env.resp(env.join(member_id="member-id"))
        assert (E(r.error_code), r.member_id) == (E.UNKNOWN_MEMBER_ID, "member-id")
        assert env.state() == "Dead"

    def test_member_id_required_v4_plus(self):
        """testJoinGroupShouldReceiveErrorIfMemberIdIsRequired (classicGroupJoinNewDynamicMember): v4+ dynamic
        member with an empty id gets MEMBER_ID_REQUIRED and an id 'clientId-uuid'; it is only pending, so the
        group (created and persisted by classicGroupJoinToClassicGroup) stays Empty with no member."""
        env = Env()
        r = env.resp(env.join(client_id="my-client", version=4))
        assert E(r.error_code) == E.MEMBER_ID_REQUIRED
        assert r.member_id.startswith("my-client-") and len(r.member_id) == len("my-client-") + 36
        assert env.state() == "Empty" and env.group().size == 0
        assert env.group().is_pending_member(r.member_id)

    @pytest.mark.parametrize("version", [0, 1, 2, 3])
    def test_before_v4_member_is_added_at_once(self, version):
        """Before v4 (requiresKnownMemberId false) the member is added directly; the initial join completes when
        the initial delay fires (3000 ms), never earlier."""
        env = Env()
        rid = env.join(version=version, rebalance=30_000)
        assert env.resp(rid) is None and env.state() == "PreparingRebalance"
        env.advance_to(2999)
        assert env.resp(rid) is None
        env.advance_to(3000)
        r = env.resp(rid)
        assert (E(r.error_code), r.generation_id, r.leader) == (E.NONE, 1, r.member_id)
        assert [m.member_id for m in r.members] == [r.member_id]

    def test_empty_protocol_type_is_inconsistent(self):
        """testJoinGroupWithEmptyProtocolType: ClassicGroup.supportsProtocols of an Empty group needs a
        non-empty protocol type. The new group is still created and persisted (isNewGroup && EMPTY_RESULT)."""
        env = Env()
        r = env.resp(env.join(protocol_type=""))
        assert (E(r.error_code), r.member_id) == (E.INCONSISTENT_GROUP_PROTOCOL, "")
        assert env.state() == "Empty"

    def test_empty_protocols_is_inconsistent(self):
        """testJoinGroupWithEmptyGroupProtocol."""
        env = Env()
        assert env.err(env.join(protocols=[])) == E.INCONSISTENT_GROUP_PROTOCOL

    def test_second_member_with_other_protocol_type(self):
        """testJoinGroupInconsistentProtocolType: the group's type is fixed by its first member."""
        env = Env()
        env.join_new()
        assert env.err(env.join(protocol_type="connect")) == E.INCONSISTENT_GROUP_PROTOCOL

    def test_second_member_with_no_common_protocol(self):
        """testJoinGroupInconsistentGroupProtocol."""
        env = Env()
        env.join_new(protocols=[("range", b"")])
        assert env.err(env.join(protocols=[("roundrobin", b"")])) == E.INCONSISTENT_GROUP_PROTOCOL

    def test_existing_member_with_inconsistent_protocol_keeps_member_id(self):
        """classicGroupJoinExistingMember: INCONSISTENT_GROUP_PROTOCOL echoes the request's member id."""
        env = Env()
        leader, follower, gen = two_member_stable(env)
        r = env.resp(env.join(member_id=follower, protocols=[("other", b"")]))
        assert (E(r.error_code), r.member_id) == (E.INCONSISTENT_GROUP_PROTOCOL, follower)

    def test_unknown_member_of_existing_group(self):
        """testJoinGroupUnknownConsumerExistingGroup: UNKNOWN_MEMBER_ID echoing the id; no rebalance."""
        env = Env()
        two_member_stable(env)
        r = env.resp(env.join(member_id="not-a-member"))
        assert (E(r.error_code), r.member_id) == (E.UNKNOWN_MEMBER_ID, "not-a-member")
        assert env.state() == "Stable"

    def test_follower_rejoin_in_stable_with_same_metadata_does_not_rebalance(self):
        """testJoinGroupFollowerNoChangeInMetadata-ish (classicGroupJoinExistingMember, Stable, follower,
        matches): current generation, leader id, no member list, no rebalance."""
        env = Env()
        leader, follower, gen = two_member_stable(env)
        r = env.resp(env.join(member_id=follower))
        assert (E(r.error_code), r.generation_id, r.leader, r.member_id) == (E.NONE, gen, leader, follower)
        assert r.members == [] and r.protocol_name == "range" and r.protocol_type == "consumer"
        assert not r.skip_assignment
        assert env.state() == "Stable"

    def test_follower_rejoin_in_stable_with_new_metadata_rebalances(self):
        env = Env()
        leader, follower, gen = two_member_stable(env)
        rid = env.join(member_id=follower, protocols=P2)
        assert env.resp(rid) is None and env.state() == "PreparingRebalance"
        # the leader rejoins: everyone has joined, the (non-initial) join completes at once
        rl = env.join(member_id=leader)
        assert env.state() == "CompletingRebalance"
        assert env.resp(rl).generation_id == gen + 1 and len(env.resp(rl).members) == 2
        assert env.resp(rid).members == []

    def test_leader_rejoin_in_stable_always_rebalances(self):
        """testLeaderRejoinInStable...: the leader's JoinGroup in Stable rebalances even with unchanged
        metadata (lets the leader react to topic metadata changes)."""
        env = Env()
        leader, follower, gen = two_member_stable(env)
        assert env.resp(env.join(member_id=leader)) is None
        assert env.state() == "PreparingRebalance"

    def test_rejoin_in_completing_rebalance_same_metadata_returns_current_generation(self):
        """classicGroupJoinExistingMember, CompletingRebalance, matches: the member probably lost the response;
        the leader gets the member list again, a follower does not; nothing changes."""
        env = Env()
        rids = [env.join_new()[1] for _ in range(2)]
        env.complete_join()
        first = env.resp(rids[0])
        leader, gen = first.leader, first.generation_id
        follower = [env.resp(r).member_id for r in rids if env.resp(r).member_id != leader][0]
        rl = env.resp(env.join(member_id=leader))
        assert (E(rl.error_code), rl.generation_id, rl.leader, len(rl.members)) == (E.NONE, gen, leader, 2)
        rf = env.resp(env.join(member_id=follower))
        assert (E(rf.error_code), rf.generation_id, rf.leader, rf.members) == (E.NONE, gen, leader, [])
        assert env.state() == "CompletingRebalance"

    def test_rejoin_in_completing_rebalance_with_changed_metadata_fails_parked_syncs(self):
        """prepareRebalance from CompletingRebalance: resetAndPropagateAssignmentWithError(REBALANCE_IN_PROGRESS)."""
        env = Env()
        rids = [env.join_new()[1] for _ in range(2)]
        env.complete_join()
        first = env.resp(rids[0])
        leader, gen = first.leader, first.generation_id
        follower = [env.resp(r).member_id for r in rids if env.resp(r).member_id != leader][0]
        srid = env.sync("g", gen, follower)
        assert env.resp(srid) is None
        env.join(member_id=follower, protocols=P2)
        assert env.state() == "PreparingRebalance"
        assert env.err(srid) == E.REBALANCE_IN_PROGRESS

    def test_routing_error_has_empty_member_id(self):
        """GroupCoordinatorService.joinGroup: errors from the runtime (NOT_COORDINATOR...) are answered with a
        fresh JoinGroupResponseData().setErrorCode(..) -- member id "" (its default)."""
        env = Env()
        coord = env.svc.coordinator_of("g")
        other = (coord + 1) % 3
        from protocol.messages import JoinGroupRequest
        req = JoinGroupRequest(group_id="g", session_timeout_ms=10_000, rebalance_timeout_ms=30_000,
                               member_id="some-member", group_instance_id=None, protocol_type="consumer",
                               protocols=[JoinGroupRequest.Protocol(name="range", metadata=b"")], reason=None)
        r = env.resp(env.send(req, 9, broker=other))
        assert (E(r.error_code), r.member_id) == (E.NOT_COORDINATOR, "")

    def test_service_level_errors_echo_member_id(self):
        """GroupCoordinatorService.joinGroup: INVALID_GROUP_ID and INVALID_SESSION_TIMEOUT echo the member id."""
        env = Env()
        r = env.resp(env.join(member_id="m-1", session=5_999))
        assert (E(r.error_code), r.member_id) == (E.INVALID_SESSION_TIMEOUT, "m-1")
        r = env.resp(env.join(member_id="m-1", session=1_800_001))
        assert E(r.error_code) == E.INVALID_SESSION_TIMEOUT
        # the bounds are inclusive
        assert env.err(env.join(session=6_000)) == E.MEMBER_ID_REQUIRED
        assert env.err(env.join(session=1_800_000)) == E.MEMBER_ID_REQUIRED

    def test_max_size_rejects_new_member_of_full_stable_group(self):
        """acceptJoiningMember (Stable): an unknown member is accepted only while numMembers < max;
        the answer has member id ""."""
        env = Env(**{"group.max.size": 2})
        two_member_stable(env)
        r = env.resp(env.join())
        assert (E(r.error_code), r.member_id) == (E.GROUP_MAX_SIZE_REACHED, "")
        assert env.state() == "Stable"


# ------------------------------------------------------------------------------------------------------------------
# Initial rebalance delay (prepareRebalance / tryCompleteInitialRebalanceElseSchedule)
# ------------------------------------------------------------------------------------------------------------------

class TestInitialDelay:
    def test_new_member_extends_by_the_delay(self):
        """testDelayRebalanceUptoRebalanceTimeout-style arithmetic with R=30000, D=3000: a member added at 2000
        makes the timer at 3000 re-arm for min(D, 27000)=3000 -> completes at 6000."""
        env = Env()
        _, r1 = env.join_new(rebalance=30_000)
        env.advance_to(2000)
        _, r2 = env.join_new(rebalance=30_000)
        env.advance_to(5999)
        assert env.resp(r1) is None
        env.advance_to(6000)
        assert env.err(r1) == E.NONE and env.err(r2) == E.NONE

    def test_extension_capped_by_rebalance_timeout(self):
        """R=4000, D=3000: remaining=1000; a member at 1000 -> at 3000 delay'=min(3000,1000)=1000,
        remaining'=0 -> completes at 4000 whatever joins later."""
        env = Env()
        _, r1 = env.join_new(rebalance=4_000)
        env.advance_to(1000)
        env.join_new(rebalance=4_000)
        env.advance_to(3500)
        env.join_new(rebalance=4_000)
        env.advance_to(3999)
        assert env.resp(r1) is None
        env.advance_to(4000)
        assert env.err(r1) == E.NONE and env.group().size == 3

    def test_rebalance_timeout_below_delay_still_waits_the_delay(self):
        """R=2000 <= D: remaining 0, no extension, completion exactly at D (not R)."""
        env = Env()
        _, r1 = env.join_new(rebalance=2_000)
        env.advance_to(1000)
        env.join_new(rebalance=2_000)
        env.advance_to(2999)
        assert env.resp(r1) is None
        env.advance_to(3000)
        assert env.err(r1) == E.NONE

    def test_no_early_completion_while_initial(self):
        """maybeCompleteJoinPhase: 'We do not complete the join group phase if this is the initial rebalance'
        even when every member has joined."""
        env = Env()
        m, r1 = env.join_new()
        env.join(member_id=m)  # same member again: still parked, group still waiting
        assert env.state() == "PreparingRebalance"


# ------------------------------------------------------------------------------------------------------------------
# SyncGroup
# ------------------------------------------------------------------------------------------------------------------

class TestSyncGroup:
    def _completing(self, env):
        rids = [env.join_new()[1] for _ in range(2)]
        env.complete_join()
        first = env.resp(rids[0])
        leader, gen = first.leader, first.generation_id
        follower = [env.resp(r).member_id for r in rids if env.resp(r).member_id != leader][0]
        return leader, follower, gen

    def test_follower_parked_until_leader(self):
        """testSyncGroupFollowerAfterLeader / before leader: the follower's SyncGroup waits for the leader's
        assignment; a member missing from the assignment gets empty bytes."""
        env = Env()
        leader, follower, gen = self._completing(env)
        rf = env.sync("g", gen, follower)
        assert env.resp(rf) is None
        rl = env.sync("g", gen, leader, {leader: b"L"})
        assert env.resp(rl).assignment == b"L"
        assert env.err(rf) == E.NONE and env.resp(rf).assignment == b""
        assert env.resp(rf).protocol_type == "consumer" and env.resp(rf).protocol_name == "range"
        assert env.state() == "Stable"

    def test_sync_in_stable_returns_assignment(self):
        env = Env()
        leader, follower, gen = two_member_stable(env)
        r = env.resp(env.sync("g", gen, follower))
        assert (E(r.error_code), r.assignment) == (E.NONE, follower.encode())

    @pytest.mark.parametrize("kind,expected", [
        ("generation", E.ILLEGAL_GENERATION), ("member", E.UNKNOWN_MEMBER_ID),
        ("type", E.INCONSISTENT_GROUP_PROTOCOL), ("name", E.INCONSISTENT_GROUP_PROTOCOL)])
    def test_validation(self, kind, expected):
        """validateSyncGroup: member, then generation, then protocol type/name (when both sides are set)."""
        env = Env()
        leader, follower, gen = two_member_stable(env)
        kw = {}
        member, g = follower, gen
        if kind == "generation":
            g = gen + 1
        elif kind == "member":
            member, g = "unknown", gen + 5  # member is checked before generation
        elif kind == "type":
            kw["protocol_type"] = "connect"
        else:
            kw["protocol_name"] = "roundrobin"
        assert env.err(env.sync("g", g, member, **kw)) == expected

    def test_v5_requires_protocol_type_and_name(self):
        """KafkaApis.handleSyncGroupRequest: v5+ without protocol type/name -> INCONSISTENT_GROUP_PROTOCOL."""
        env = Env()
        leader, follower, gen = two_member_stable(env)
        assert env.err(env.sync("g", gen, follower, protocol_type=None)) == E.INCONSISTENT_GROUP_PROTOCOL
        # v4 has no such fields: fine
        assert env.err(env.sync("g", gen, follower, version=4, protocol_type=None, protocol_name=None)) == E.NONE

    def test_unknown_group(self):
        env = Env()
        assert env.err(env.sync("nope", 1, "m")) == E.UNKNOWN_MEMBER_ID

    def test_preparing_rebalance(self):
        env = Env()
        leader, follower, gen = two_member_stable(env)
        env.join(member_id=leader)
        assert env.err(env.sync("g", gen, follower)) == E.REBALANCE_IN_PROGRESS


# ------------------------------------------------------------------------------------------------------------------
# Heartbeat
# ------------------------------------------------------------------------------------------------------------------

class TestHeartbeat:
    def test_by_state(self):
        """classicGroupHeartbeatToClassicGroup: PreparingRebalance -> REBALANCE_IN_PROGRESS; CompletingRebalance
        and Stable -> NONE (both reschedule the session timeout)."""
        env = Env()
        leader, follower, gen = two_member_stable(env)
        assert env.err(env.heartbeat("g", gen, follower)) == E.NONE
        env.join(member_id=leader)
        assert env.err(env.heartbeat("g", gen, follower)) == E.REBALANCE_IN_PROGRESS
        env.join(member_id=follower)
        assert env.state() == "CompletingRebalance"
        assert env.err(env.heartbeat("g", gen + 1, follower)) == E.NONE

    def test_member_checked_before_generation(self):
        env = Env()
        leader, follower, gen = two_member_stable(env)
        assert env.err(env.heartbeat("g", gen + 7, "unknown")) == E.UNKNOWN_MEMBER_ID
        assert env.err(env.heartbeat("g", gen + 7, follower)) == E.ILLEGAL_GENERATION

    def test_unknown_group_and_simple_group(self):
        env = Env()
        assert env.err(env.heartbeat("nope", 0, "m")) == E.UNKNOWN_MEMBER_ID
        env.commit("simple", -1, "", {("foo", 0): 1})
        assert env.err(env.heartbeat("simple", 0, "m")) == E.UNKNOWN_MEMBER_ID

    def test_static_member_fenced_and_unknown_instance(self):
        env = Env()
        rl = env.join(instance="i1")
        env.complete_join()
        m, gen = env.resp(rl).member_id, env.resp(rl).generation_id
        assert env.err(env.heartbeat("g", gen, "other-id", instance="i1")) == E.FENCED_INSTANCE_ID
        assert env.err(env.heartbeat("g", gen, m, instance="i2")) == E.UNKNOWN_MEMBER_ID
        assert env.err(env.heartbeat("g", gen, m, instance="i1")) == E.NONE


# ------------------------------------------------------------------------------------------------------------------
# LeaveGroup
# ------------------------------------------------------------------------------------------------------------------

class TestLeaveGroup:
    @pytest.mark.parametrize("version", [0, 1, 2])
    def test_unknown_group_v0_2(self, version):
        """GroupCoordinatorService.leaveGroup maps the unknown group to per-member UNKNOWN_MEMBER_ID; the v0-2
        response carries it as the top-level error (LeaveGroupResponse)."""
        env = Env()
        r = env.resp(env.leave("nope", [("m", None)], version=version))
        assert E(r.error_code) == E.UNKNOWN_MEMBER_ID

    def test_unknown_group_v3(self):
        env = Env()
        r = env.resp(env.leave("nope", [("m", None), ("", "i")], version=3))
        assert E(r.error_code) == E.NONE
        assert [(x.member_id, x.group_instance_id, E(x.error_code)) for x in r.members] == [
            ("m", None, E.UNKNOWN_MEMBER_ID), ("", "i", E.UNKNOWN_MEMBER_ID)]

    def test_unknown_member_v1_top_level(self):
        """testLeaveGroupUnknownConsumerExistingGroup."""
        env = Env()
        two_member_stable(env)
        assert env.err(env.leave("g", [("unknown", None)], version=1)) == E.UNKNOWN_MEMBER_ID
        assert env.state() == "Stable"

    def test_static_batch_leave_mixed(self):
        """testStaticMembersFencedInstanceBatchLeaveGroup / UnknownInstance: per-member errors; the valid
        leaves still take effect."""
        env = Env()
        ra = env.join(instance="a", session=60_000)
        rb = env.join(instance="b", session=60_000)
        env.complete_join()
        a, b = env.resp(ra).member_id, env.resp(rb).member_id
        r = env.resp(env.leave("g", [(a, "a"), ("wrong-id", "b"), ("", "zzz"), ("", "b")], version=4))
        assert E(r.error_code) == E.NONE
        assert [E(x.error_code) for x in r.members] == [E.NONE, E.FENCED_INSTANCE_ID, E.UNKNOWN_MEMBER_ID, E.NONE]
        assert env.group().size == 0

    def test_pending_member_leaves(self):
        """testPendingMemberBatchLeaveGroup: a MEMBER_ID_REQUIRED id can leave (NONE)."""
        env = Env()
        pending = env.resp(env.join()).member_id
        r = env.resp(env.leave("g", [(pending, None)], version=3))
        assert [E(x.error_code) for x in r.members] == [E.NONE]
        assert not env.group().is_pending_member(pending)

    def test_leader_leaves_stable_group(self):
        """Stable -> PreparingRebalance; the remaining member's rejoin completes the (non-initial) join at once
        and it becomes leader."""
        env = Env()
        leader, follower, gen = two_member_stable(env)
        assert env.err(env.leave("g", [(leader, None)], version=1)) == E.NONE
        assert env.state() == "PreparingRebalance"
        r = env.resp(env.join(member_id=follower))
        assert (r.generation_id, r.leader) == (gen + 1, follower)


# ------------------------------------------------------------------------------------------------------------------
# Timers
# ------------------------------------------------------------------------------------------------------------------

class TestTimers:
    def test_rebalance_timeout_removes_members_that_did_not_rejoin(self):
        """completeClassicGroupJoin on the join timer: dynamic members not awaiting join are removed even if
        they kept heartbeating (REBALANCE_IN_PROGRESS keeps their session alive)."""
        env = Env()
        leader, follower, gen = two_member_stable(env, session=10_000, rebalance=30_000)
        t0 = env.now
        rl = env.join(member_id=leader, session=10_000, rebalance=30_000)
        for t in range(5_000, 30_000, 5_000):
            env.advance_to(t0 + t)
            assert env.err(env.heartbeat("g", gen, follower)) == E.REBALANCE_IN_PROGRESS
        env.advance_to(t0 + 30_000)
        r = env.resp(rl)
        assert (E(r.error_code), r.generation_id, [m.member_id for m in r.members]) == (E.NONE, gen + 1, [leader])
        assert not env.group().has_member(follower)

    def test_session_timeout_of_follower_that_never_syncs(self):
        """A follower that neither syncs nor heartbeats after the join phase is removed at its session timeout
        (hasSatisfiedHeartbeat false: not awaiting join/sync; session 10000 < pending-sync 30000) ->
        Stable -> PreparingRebalance."""
        env = Env()
        rids = [env.join_new(session=10_000)[1] for _ in range(2)]
        env.complete_join()
        t0 = env.now
        first = env.resp(rids[0])
        leader, gen = first.leader, first.generation_id
        follower = [env.resp(r).member_id for r in rids if env.resp(r).member_id != leader][0]
        srid = env.sync("g", gen, leader)  # the leader's sync completes the rebalance at once
        assert env.state() == "Stable"
        env.advance_to(t0 + 5_000)
        assert env.err(env.heartbeat("g", gen, leader)) == E.NONE
        env.advance_to(t0 + 9_999)
        assert env.group().has_member(follower)
        env.advance_to(t0 + 10_000)
        assert not env.group().has_member(follower)
        assert env.state() == "PreparingRebalance"
        assert env.err(srid) == E.NONE

    def test_session_timeout_in_completing_rebalance_before_leader_sync(self):
        env = Env()
        rids = [env.join_new(session=10_000)[1] for _ in range(2)]
        env.complete_join()
        t0 = env.now
        first = env.resp(rids[0])
        leader, gen = first.leader, first.generation_id
        follower = [env.resp(r).member_id for r in rids if env.resp(r).member_id != leader][0]
        frid = env.sync("g", gen, follower)  # parked: satisfied heartbeat while awaiting sync
        env.advance_to(t0 + 10_000)
        # the leader neither syncs nor heartbeats -> removed; parked follower sync -> REBALANCE_IN_PROGRESS
        assert not env.group().has_member(leader)
        assert env.err(frid) == E.REBALANCE_IN_PROGRESS
        assert env.state() == "PreparingRebalance"

    def test_pending_member_expires_after_its_session_timeout(self):
        """The MEMBER_ID_REQUIRED id is timed out by the heartbeat key with the request's session timeout."""
        env = Env()
        pending = env.resp(env.join(session=7_000)).member_id
        env.advance_to(6_999)
        assert env.group().is_pending_member(pending)
        env.advance_to(7_000)
        assert not env.group().is_pending_member(pending)


# ------------------------------------------------------------------------------------------------------------------
# Static membership
# ------------------------------------------------------------------------------------------------------------------

class TestStatic:
    def _pair(self, env, protocols=P1):
        rl = env.join(instance="L", protocols=protocols)
        rf = env.join(instance="F", protocols=protocols)
        env.complete_join()
        leader, follower = env.resp(rl).member_id, env.resp(rf).member_id
        gen = env.resp(rl).generation_id
        assert env.resp(rl).leader == leader
        env.sync("g", gen, leader, {leader: b"LA", follower: b"FA"}, instance="L")
        env.sync("g", gen, follower, instance="F")
        assert env.state() == "Stable"
        return leader, follower, gen

    def test_follower_replacement_without_rebalance(self):
        """testStaticMemberRejoinWithKnownMemberId/UnknownMemberId (Stable, protocol unchanged): new id, same
        generation, no member list, old id fenced, assignment kept."""
        env = Env()
        leader, follower, gen = self._pair(env)
        r = env.resp(env.join(instance="F"))
        assert E(r.error_code) == E.NONE and r.member_id != follower and r.member_id.startswith("F-")
        assert (r.generation_id, r.leader, r.members, r.skip_assignment) == (gen, leader, [], False)
        assert env.state() == "Stable"
        assert env.err(env.heartbeat("g", gen, follower, instance="F")) == E.FENCED_INSTANCE_ID
        assert env.resp(env.sync("g", gen, r.member_id, instance="F")).assignment == b"FA"

    def test_leader_replacement_v9_skip_assignment(self):
        """testStaticMemberRejoinAsLeaderWithSkipAssignment...: v9 -> the new leader id, skip_assignment and the
        member list."""
        env = Env()
        leader, follower, gen = self._pair(env)
        r = env.resp(env.join(instance="L", version=9))
        assert r.member_id != leader
        assert (r.leader, r.skip_assignment, r.generation_id) == (r.member_id, True, gen)
        assert {m.member_id for m in r.members} == {r.member_id, follower}
        assert env.state() == "Stable"

    def test_leader_replacement_v8_acts_as_follower(self):
        """Before v9 the response names the OLD leader id so the rejoining leader acts as a follower."""
        env = Env()
        leader, follower, gen = self._pair(env)
        r = env.resp(env.join(instance="L", version=8))
        assert (r.leader, r.skip_assignment, r.members) == (leader, False, [])
        assert env.group().leader_id == r.member_id

    def test_replacement_with_protocol_change_rebalances(self):
        """updateStaticMemberThenRebalanceOrCompleteJoin: selectProtocol for the next generation differs ->
        rebalance."""
        env = Env()
        both = [("range", b""), ("roundrobin", b"")]
        leader, follower, gen = self._pair(env, protocols=both)
        # F now supports only roundrobin: the only candidate left -> the selected protocol would change
        rid = env.join(instance="F", protocols=[("roundrobin", b"")])
        assert env.state() == "PreparingRebalance" and env.resp(rid) is None

    def test_replacement_in_completing_rebalance_rebalances(self):
        env = Env()
        rl = env.join(instance="L")
        rf = env.join(instance="F")
        env.complete_join()
        assert env.state() == "CompletingRebalance"
        old = env.resp(rf).member_id
        rid = env.join(instance="F")
        assert env.state() == "PreparingRebalance" and env.resp(rid) is None
        assert env.err(env.heartbeat("g", env.resp(rf).generation_id, old, instance="F")) == E.FENCED_INSTANCE_ID


# ------------------------------------------------------------------------------------------------------------------
# Offsets (OffsetMetadataManagerTest)
# ------------------------------------------------------------------------------------------------------------------

class TestOffsetCommit:
    def test_simple_group_commit_creates_empty_group(self):
        """testSimpleGroupOffsetCommit: generation -1, no member -> accepted; an Empty group without protocol
        type exists afterwards."""
        env = Env()
        rid = env.commit("simple", -1, "", {("foo", 0): 100})
        assert env.commit_errors(rid) == {("foo", 0): E.NONE}
        d = described(env, "simple")
        assert (d.group_state, d.protocol_type) == ("Empty", "")

    def test_generation_minus_one_into_active_group(self):
        """testGenericGroupOffsetCommitWithoutMemberIdAndGeneration: UNKNOWN_MEMBER_ID unless Empty."""
        env = Env()
        two_member_stable(env)
        assert env.commit_errors(env.commit("g", -1, "", {("foo", 0): 1})) == {("foo", 0): E.UNKNOWN_MEMBER_ID}

    def test_unknown_member_and_illegal_generation(self):
        """testGenericGroupOffsetCommitWithUnknownMemberId / WithIllegalGeneration."""
        env = Env()
        leader, follower, gen = two_member_stable(env)
        assert env.commit_errors(env.commit("g", gen, "unknown", {("foo", 0): 1})) == {
            ("foo", 0): E.UNKNOWN_MEMBER_ID}
        assert env.commit_errors(env.commit("g", gen + 1, follower, {("foo", 0): 1})) == {
            ("foo", 0): E.ILLEGAL_GENERATION}
        assert env.commit_errors(env.commit("g", gen, follower, {("foo", 0): 1})) == {("foo", 0): E.NONE}

    def test_unknown_and_fenced_instance(self):
        """testGenericGroupOffsetCommitWithUnknownInstanceId / WithFencedInstanceId."""
        env = Env()
        rl = env.join(instance="i")
        env.complete_join()
        m, gen = env.resp(rl).member_id, env.resp(rl).generation_id
        env.sync("g", gen, m, {m: b""}, instance="i")
        assert env.commit_errors(env.commit("g", gen, m, {("foo", 0): 1}, instance="x")) == {
            ("foo", 0): E.UNKNOWN_MEMBER_ID}
        assert env.commit_errors(env.commit("g", gen, "other", {("foo", 0): 1}, instance="i")) == {
            ("foo", 0): E.FENCED_INSTANCE_ID}

    def test_completing_rebalance(self):
        """testGenericGroupOffsetCommitWhileInCompletingRebalanceState."""
        env = Env()
        rid = env.join_new()[1]
        env.complete_join()
        r = env.resp(rid)
        assert env.commit_errors(env.commit("g", r.generation_id, r.member_id, {("foo", 0): 1})) == {
            ("foo", 0): E.REBALANCE_IN_PROGRESS}

    def test_preparing_rebalance_accepted(self):
        env = Env()
        leader, follower, gen = two_member_stable(env)
        env.join(member_id=leader)
        assert env.commit_errors(env.commit("g", gen, follower, {("foo", 0): 1})) == {("foo", 0): E.NONE}

    @pytest.mark.parametrize("version,expected", [(8, E.ILLEGAL_GENERATION), (9, E.GROUP_ID_NOT_FOUND)])
    def test_unknown_group_with_generation(self, version, expected):
        """validateOffsetCommit: unknown group and generation >= 0 -> GROUP_ID_NOT_FOUND from v9 on."""
        env = Env()
        assert env.commit_errors(env.commit("nope", 1, "m", {("foo", 0): 1}, version=version)) == {
            ("foo", 0): expected}

    def test_metadata_too_large(self):
        """testOffsetCommitWithOffsetMetadataTooLarge: per partition; length in UTF-16 code units."""
        env = Env(**{"offset.metadata.max.bytes": 4})
        rid = env.commit("s", -1, "", {("foo", 0): 1}, metadata="abcde")
        assert env.commit_errors(rid) == {("foo", 0): E.OFFSET_METADATA_TOO_LARGE}
        rid = env.commit("s", -1, "", {("foo", 0): 1}, metadata="abcd")
        assert env.commit_errors(rid) == {("foo", 0): E.NONE}

    def test_dead_group_after_delete_then_commit(self):
        """Deleted group: a later gen -1 commit recreates a simple group."""
        env = Env()
        env.commit("s", -1, "", {("foo", 0): 1})
        assert E(env.resp(env.delete_groups("s")).results[0].error_code) == E.NONE
        assert env.commit_errors(env.commit("s", -1, "", {("foo", 0): 2})) == {("foo", 0): E.NONE}


class TestOffsetFetch:
    @pytest.mark.parametrize("version", [1, 5, 7, 8])
    def test_unknown_group_listed_partitions(self, version):
        """testFetchOffsetsWithUnknownGroup: every requested partition -1 / epoch -1 / "" with NONE."""
        env = Env()
        rows = env.fetched(env.fetch("nope", {"foo": [0, 1]}, version=version))
        assert rows == {("foo", 0): (-1, -1, "", E.NONE), ("foo", 1): (-1, -1, "", E.NONE)}

    def test_unknown_group_all_partitions(self):
        env = Env()
        r = env.resp(env.fetch("nope", None, version=7))
        assert E(r.error_code) == E.NONE and r.topics == []

    def test_committed_values(self):
        env = Env()
        env.commit("s", -1, "", {("foo", 0): 10}, metadata="md", leader_epoch=3)
        rows = env.fetched(env.fetch("s", {"foo": [0, 1]}, version=7))
        assert rows == {("foo", 0): (10, 3, "md", E.NONE), ("foo", 1): (-1, -1, "", E.NONE)}


# ------------------------------------------------------------------------------------------------------------------
# DescribeGroups / ListGroups / DeleteGroups / OffsetDelete
# ------------------------------------------------------------------------------------------------------------------

class TestAdmin:
    def test_describe_unknown_group(self):
        """testDescribeGroupsBeforeV6GroupIdNotFoundException: NONE, state Dead, empty fields."""
        env = Env()
        d = described(env, "nope")
        assert (E(d.error_code), d.group_state, d.protocol_type, d.protocol_data, d.members) == (
            E.NONE, "Dead", "", "", [])

    def test_describe_stable(self):
        """testDescribeGroupStable: protocol data = protocol name; members with metadata and assignment."""
        env = Env()
        leader, follower, gen = two_member_stable(env)
        d = described(env)
        assert (d.group_state, d.protocol_type, d.protocol_data) == ("Stable", "consumer", "range")
        assert {m.member_id: (m.member_metadata, m.member_assignment) for m in d.members} == {
            leader: (sub("foo"), leader.encode()), follower: (sub("foo"), follower.encode())}

    def test_describe_rebalancing_keeps_assignment(self):
        """testDescribeGroupRebalancing: PreparingRebalance -> protocol data "", members without metadata but
        WITH their current assignment (ClassicGroupMember.describeNoMetadata sets memberAssignment)."""
        env = Env()
        leader, follower, gen = two_member_stable(env)
        env.join(member_id=leader)
        d = described(env)
        assert (d.group_state, d.protocol_type, d.protocol_data) == ("PreparingRebalance", "consumer", "")
        assert {m.member_id: (m.member_metadata, m.member_assignment) for m in d.members} == {
            leader: (b"", leader.encode()), follower: (b"", follower.encode())}

    def test_describe_completing_rebalance_after_stable(self):
        """The assignment is only reset when a rebalance starts FROM CompletingRebalance
        (resetAndPropagateAssignmentWithError); a Stable -> Preparing -> Completing group still shows it."""
        env = Env()
        leader, follower, gen = two_member_stable(env)
        env.join(member_id=leader)
        env.join(member_id=follower)
        d = described(env)
        assert d.group_state == "CompletingRebalance" and d.protocol_data == ""
        assert {m.member_id: m.member_assignment for m in d.members} == {
            leader: leader.encode(), follower: follower.encode()}

    def test_list_groups_filters_case_insensitive(self):
        """GroupMetadataManager.listGroups lower-cases (and trims) the state filters; types via GroupType.parse."""
        env = Env()
        two_member_stable(env)
        b = env.svc.coordinator_of("g")

        def ids(**kw):
            return [g.group_id for g in env.resp(env.list_groups(b, **kw)).groups]

        assert ids(states=["stable"]) == ["g"]
        assert ids(states=["STABLE"]) == ["g"]
        assert ids(states=[" Stable "]) == ["g"]
        assert ids(states=["Empty"]) == []
        assert ids(types=["Classic"]) == ["g"]
        assert ids(types=["consumer"]) == []
        r = env.resp(env.list_groups(b))
        assert [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in r.groups] == [
            ("g", "consumer", "Stable", "classic")]

    def test_delete_groups(self):
        """testDeleteNonEmptyGroup / testDeleteGroupNonExisting / empty group deleted."""
        env = Env()
        two_member_stable(env)
        env.commit("s", -1, "", {("foo", 0): 1})
        r = env.resp(env.delete_groups("g"))
        assert E(r.results[0].error_code) == E.NON_EMPTY_GROUP
        assert E(env.resp(env.delete_groups("nope")).results[0].error_code) == E.GROUP_ID_NOT_FOUND
        assert E(env.resp(env.delete_groups("s")).results[0].error_code) == E.NONE
        assert described(env, "s").group_state == "Dead"
        assert env.fetched(env.fetch("s", {"foo": [0]})) == {("foo", 0): (-1, -1, "", E.NONE)}

    def test_offset_delete_unknown_group(self):
        env = Env()
        assert E(env.resp(env.offset_delete("nope", {"foo": [0]})).error_code) == E.GROUP_ID_NOT_FOUND

    def test_offset_delete_non_consumer_group_not_empty(self):
        """ClassicGroup.validateOffsetDelete: an active group not using the consumer protocol -> NON_EMPTY_GROUP."""
        env = Env()
        two_member_stable(env, protocol_type="connect")
        assert E(env.resp(env.offset_delete("g", {"foo": [0]})).error_code) == E.NON_EMPTY_GROUP

    def test_offset_delete_consumer_group_with_unknown_subscriptions(self):
        """ClassicGroup.isSubscribedToTopic: while the subscribed topics are unknown (first rebalance of a
        consumer group: computed only at the end of the join phase), a consumer-protocol group counts as
        subscribed to every topic -> GROUP_SUBSCRIBED_TO_TOPIC, nothing deleted."""
        env = Env()
        env.commit("g", -1, "", {("bar", 0): 5})
        env.join_new()  # consumer group, PreparingRebalance (initial), subscriptions not computed yet
        assert env.state() == "PreparingRebalance"
        r = env.resp(env.offset_delete("g", {"bar": [0]}))
        assert E(r.error_code) == E.NONE
        assert [E(p.error_code) for t in r.topics for p in t.partitions] == [E.GROUP_SUBSCRIBED_TO_TOPIC]
        assert env.fetched(env.fetch("g", {"bar": [0]}))[("bar", 0)][0] == 5

    def test_offset_delete_stable_consumer_group(self):
        """Known subscriptions: subscribed topic refused, other topics deleted."""
        env = Env()
        env.commit("g", -1, "", {("foo", 0): 1, ("bar", 0): 2})
        two_member_stable(env)  # subscribed to foo
        r = env.resp(env.offset_delete("g", {"foo": [0], "bar": [0]}))
        assert {t.name: [E(p.error_code) for p in t.partitions] for t in r.topics} == {
            "foo": [E.GROUP_SUBSCRIBED_TO_TOPIC], "bar": [E.NONE]}


# ------------------------------------------------------------------------------------------------------------------
# More offsets / timers / protocol selection
# ------------------------------------------------------------------------------------------------------------------

class TestSessionKeepAlive:
    def test_offset_commit_maintains_session_in_stable(self):
        """testGenericGroupOffsetCommitMaintainsSession: an accepted commit in Stable reschedules the member's
        session timeout (OffsetMetadataManager.commitOffset -> rescheduleClassicGroupMemberHeartbeat)."""
        env = Env()
        leader, follower, gen = two_member_stable(env, session=10_000)
        t0 = env.now
        env.advance_to(t0 + 5_000)
        env.heartbeat("g", gen, leader)
        env.commit("g", gen, follower, {("foo", 0): 1})
        env.advance_to(t0 + 10_000)
        env.heartbeat("g", gen, leader)
        env.advance_to(t0 + 14_999)
        assert env.group().has_member(follower)
        env.advance_to(t0 + 15_000)
        assert not env.group().has_member(follower)

    def test_rejected_commit_does_not_maintain_session(self):
        """A commit answered ILLEGAL_GENERATION (validation fails first) does not touch the session."""
        env = Env()
        leader, follower, gen = two_member_stable(env, session=10_000)
        t0 = env.now
        env.advance_to(t0 + 5_000)
        env.heartbeat("g", gen, leader)
        assert env.commit_errors(env.commit("g", gen + 3, follower, {("foo", 0): 1})) == {
            ("foo", 0): E.ILLEGAL_GENERATION}
        env.advance_to(t0 + 10_000)
        assert not env.group().has_member(follower)

    def test_new_member_join_timeout_is_five_minutes(self):
        """addMemberThenRebalanceOrCompleteJoin: a new member awaiting its first join is expired after
        classicGroupNewMemberJoinTimeoutMs (300000) and answered UNKNOWN_MEMBER_ID with member id ""."""
        env = Env()
        leader, follower, gen = two_member_stable(env, session=600_000, rebalance=600_000)
        t0 = env.now
        rid = env.join(version=3, session=600_000, rebalance=600_000)  # new member -> rebalance (10 min)
        assert env.state() == "PreparingRebalance" and env.resp(rid) is None
        env.advance_to(t0 + 299_999)
        assert env.resp(rid) is None
        env.advance_to(t0 + 300_000)
        r = env.resp(rid)
        assert (E(r.error_code), r.member_id) == (E.UNKNOWN_MEMBER_ID, "")


class TestOffsetRetention:
    def test_v2_to_v4_retention_time_sets_expire_timestamp(self):
        """OffsetMetadataManager.expireTimestampMs: retention_time_ms (v2-v4) -> expire = commit time + retention,
        which wins over offsets.retention.minutes (OffsetExpirationConditionImpl)."""
        env = Env(**{"offsets.retention.check.interval.ms": 1_000})
        env.commit("s", -1, "", {("foo", 0): 7}, version=2, retention_ms=5_000)
        env.advance_to(4_000)
        assert env.fetched(env.fetch("s", {"foo": [0]}))[("foo", 0)][0] == 7
        env.advance_to(6_000)
        assert env.fetched(env.fetch("s", {"foo": [0]}))[("foo", 0)][0] == -1
        assert env.state("s") == "Dead"  # empty and offset-less -> deleted by the sweep

    def test_v5_ignores_retention(self):
        env = Env(**{"offsets.retention.check.interval.ms": 1_000})
        env.commit("s", -1, "", {("foo", 0): 7}, version=5, retention_ms=5_000)
        env.advance_to(6_000)
        assert env.fetched(env.fetch("s", {"foo": [0]}))[("foo", 0)][0] == 7


class TestProtocolVote:
    def test_select_protocol(self):
        """ClassicGroupTest.testSelectProtocol: [range, roundrobin] alone -> range; with two
        [roundrobin, range] members -> roundrobin (majority of first choices)."""
        env = Env()
        env.join(version=3, protocols=[("range", b""), ("roundrobin", b"")])
        env.join(version=3, protocols=[("roundrobin", b""), ("range", b"")])
        r3 = env.join(version=3, protocols=[("roundrobin", b""), ("range", b"")])
        env.complete_join()
        assert env.resp(r3).protocol_name == "roundrobin"

    def test_candidates_must_be_supported_by_all(self):
        """testSelectProtocolChoosesCompatibleProtocol: a protocol not supported by everyone cannot win even with
        more first-choice votes."""
        env = Env()
        r1 = env.join(version=3, protocols=[("range", b""), ("roundrobin", b"")])
        env.join(version=3, protocols=[("roundrobin", b""), ("range", b"")])
        env.join(version=3, protocols=[("sticky", b""), ("range", b"")])
        env.complete_join()
        assert env.resp(r1).protocol_name == "range"


class TestStaticLeave:
    def test_static_member_leave_by_instance_during_initial_join(self):
        """classicGroupLeave with member id "" + instance id removes the static member; during the initial join
        the phase does not complete early (maybeCompleteJoinPhase: previous state Empty)."""
        env = Env()
        ra = env.join(instance="a")
        rb = env.join(instance="b")
        r = env.resp(env.leave("g", [("", "b")], version=3))
        assert [E(x.error_code) for x in r.members] == [E.NONE]
        assert env.resp(rb) is not None and env.err(rb) == E.UNKNOWN_MEMBER_ID
        assert env.state() == "PreparingRebalance" and env.resp(ra) is None
        env.advance_to(3_000 if env.now < 3_000 else env.now)
        env.complete_join()
        assert env.err(ra) == E.NONE and env.group().size == 1


def test_delete_groups_deduplicates_names():
    """KafkaApis.handleDeleteGroupsRequest deletes `groupsNames.distinct`: one result per distinct name."""
    env = Env()
    env.commit("s", -1, "", {("foo", 0): 1})
    r = env.resp(env.delete_groups("s", "s"))
    assert [(x.group_id, E(x.error_code)) for x in r.results] == [("s", E.NONE)]


def test_find_coordinator_error_message():
    """KafkaApis.handleFindCoordinatorRequestLessThanV4: error_message = Errors.message(), i.e. "NONE" on
    success; V4AndAbove: no error message per coordinator."""
    from protocol.messages import FindCoordinatorRequest
    env = Env()
    r = env.resp(env.send(FindCoordinatorRequest(key="g", key_type=0), 3, group_id="", broker=0))
    assert (r.error_code, r.error_message) == (0, "NONE")
    r = env.resp(env.send(FindCoordinatorRequest(key_type=0, coordinator_keys=["g"]), 4, group_id="", broker=0))
    assert (r.coordinators[0].error_code, r.coordinators[0].error_message) == (0, None)
    env2 = Env(brokers=2)  # offsets topic cannot be created: COORDINATOR_NOT_AVAILABLE
    r = env2.resp(env2.send(FindCoordinatorRequest(key="g", key_type=0), 3, group_id="", broker=0))
    assert (E(r.error_code), r.error_message) == (E.COORDINATOR_NOT_AVAILABLE, "The coordinator is not available.")
    r = env2.resp(env2.send(FindCoordinatorRequest(key_type=0, coordinator_keys=["g"]), 4, group_id="", broker=0))
    assert (E(r.coordinators[0].error_code), r.coordinators[0].error_message) == (E.COORDINATOR_NOT_AVAILABLE, None)


# ------------------------------------------------------------------------------------------------------------------
# Ports of longer GroupMetadataManagerClassicGroupTest scenarios. Kafka's MockCoordinatorTimer arms follow-up timers
# from the time of the poll; kgroup from the firing deadline (docs/coordinator.md "Time"), so these ports poll at the
# deadlines where Kafka's tests sleep across them.
# ------------------------------------------------------------------------------------------------------------------

class TestKafkaScenarios:
    def test_rebalance_completes_before_member_joins(self):
        """testRebalanceCompletesBeforeMemberJoins."""
        env = Env(**{"group.min.session.timeout.ms": 1_000})  # Kafka test context bounds
        rl = env.join(instance="leader-instance-id", rebalance=10_000, session=5_000)
        env.complete_join()
        first, gen1 = env.resp(rl).member_id, env.resp(rl).generation_id
        assert gen1 == 1 and env.state() == "CompletingRebalance"
        assert env.err(env.sync("g", gen1, first)) == E.NONE and env.state() == "Stable"
        t0 = env.now
        second, rs = env.join_new(rebalance=10_000, session=2_500)
        assert env.resp(rs) is None and env.state() == "PreparingRebalance"
        for i in (1, 2):
            env.advance_to(t0 + 2_500 * i)
            assert env.err(env.heartbeat("g", gen1, first)) == E.REBALANCE_IN_PROGRESS
        env.advance_to(t0 + 10_000)  # join timer: the static member stays; the dynamic member leads
        r = env.resp(rs)
        assert (E(r.error_code), r.generation_id, r.leader) == (E.NONE, 2, second)
        assert env.group().size == 2 and env.state() == "CompletingRebalance"
        assert env.err(env.sync("g", 2, second)) == E.NONE and env.state() == "Stable"
        assert env.err(env.heartbeat("g", gen1, first)) == E.ILLEGAL_GENERATION
        # the static member's session (reset at completion, t0+10000) expires at t0+15000
        expected = [E.NONE, E.NONE, E.REBALANCE_IN_PROGRESS]
        for i, e in enumerate(expected, 1):
            env.advance_to(t0 + 10_000 + 2_000 * i)
            assert env.err(env.heartbeat("g", 2, second)) == e
        assert env.group().size == 1 and env.state() == "PreparingRebalance"
        r = env.resp(env.join(member_id=second, rebalance=10_000, session=2_500))
        assert (E(r.error_code), r.generation_id) == (E.NONE, 3) and env.state() == "CompletingRebalance"

    def test_group_stuck_in_rebalance_due_to_nonjoined_static_member(self):
        """testGroupStuckInRebalanceTimeoutDueToNonjoinedStaticMember."""
        env = Env(**{"group.min.session.timeout.ms": 1_000})  # Kafka test context bounds
        protocols = [("range", b"r"), ("roundrobin", b"rr")]
        rl = env.join(instance="leader-instance-id", rebalance=5_000, session=10_000, protocols=protocols)
        rf = env.join(instance="follower-instance-id", rebalance=5_000, session=10_000, protocols=protocols)
        env.complete_join()
        leader, follower = env.resp(rl).member_id, env.resp(rf).member_id
        env.sync("g", 1, leader, {leader: b"", follower: b""})
        env.sync("g", 1, follower)
        assert env.state() == "Stable"
        t0 = env.now
        _, rn = env.join_new(rebalance=5_000, session=10_000, protocols=protocols)
        env.advance_to(t0 + 5_000)
        r = env.resp(rn)
        assert (E(r.error_code), r.leader, len(r.members), r.generation_id) == (E.NONE, r.member_id, 3, 2)
        lr = env.resp(env.leave("g", [(follower, "follower-instance-id")], version=3))
        assert [(x.member_id, x.group_instance_id, E(x.error_code)) for x in lr.members] == [
            (follower, "follower-instance-id", E.NONE)]
        assert env.state() == "PreparingRebalance"
        env.advance_to(t0 + 10_000)
        assert set(env.group().members) == {leader}
        assert env.group().generation_id == 2 and env.state() == "PreparingRebalance"

    def test_static_follower_rejoin_with_changed_protocol_is_elected_leader(self):
        """testStaticMemberRejoinWithFollowerIdAndChangeOfProtocol."""
        env = Env(**{"group.min.session.timeout.ms": 1_000})  # Kafka test context bounds
        protocols = [("range", b"r"), ("roundrobin", b"rr")]
        rl = env.join(instance="leader-instance-id", rebalance=10_000, session=15_000, protocols=protocols)
        rf = env.join(instance="follower-instance-id", rebalance=10_000, session=15_000, protocols=protocols)
        env.complete_join()
        leader, follower = env.resp(rl).member_id, env.resp(rf).member_id
        env.sync("g", 1, leader, {leader: b"L", follower: b"F"})
        env.sync("g", 1, follower)
        t0 = env.now
        rid = env.join(member_id=follower, instance="follower-instance-id", rebalance=10_000, session=15_000,
                       protocols=[("roundrobin", b"rr")])
        assert env.resp(rid) is None
        env.advance_to(t0 + 10_000)
        r = env.resp(rid)
        assert (E(r.error_code), r.generation_id, r.member_id, r.leader, r.protocol_name) == (
            E.NONE, 2, follower, follower, "roundrobin")
        assert {m.group_instance_id for m in r.members} == {"leader-instance-id", "follower-instance-id"}
        assert env.group().static_member_id("leader-instance-id") == leader and env.state() == "CompletingRebalance"

    def test_pending_sync_expiry_kicks_the_leader(self):
        """testRebalanceTimesOutWhenSyncRequestIsNotReceivedFromLeaders."""
        env = Env(**{"group.min.session.timeout.ms": 1_000})  # Kafka test context bounds
        rids = [env.join_new(rebalance=5_000, session=5_000)[1] for _ in range(3)]
        env.complete_join()
        t0 = env.now
        resps = [env.resp(r) for r in rids]
        leader = resps[0].leader
        followers = [r.member_id for r in resps if r.member_id != leader]
        env.advance_to(t0 + 2_500)
        for r in resps:
            assert env.err(env.heartbeat("g", 1, r.member_id)) == E.NONE
        srids = [env.sync("g", 1, f) for f in followers]
        assert all(env.resp(s) is None for s in srids)
        env.advance_to(t0 + 5_000)
        assert [env.err(s) for s in srids] == [E.REBALANCE_IN_PROGRESS] * 2
        assert env.err(env.heartbeat("g", 1, leader)) == E.UNKNOWN_MEMBER_ID
        assert [env.err(env.heartbeat("g", 1, f)) for f in followers] == [E.REBALANCE_IN_PROGRESS] * 2
        assert env.state() == "PreparingRebalance"

    def test_pending_sync_expiry_with_nobody_synced_empties_the_group(self):
        """testRebalanceTimesOutWhenSyncRequestIsNotReceived: all members removed -> Empty (generation 2)."""
        env = Env(**{"group.min.session.timeout.ms": 1_000})  # Kafka test context bounds
        rids = [env.join_new(rebalance=5_000, session=5_000)[1] for _ in range(3)]
        env.complete_join()
        t0 = env.now
        env.advance_to(t0 + 2_500)
        for r in rids:
            env.heartbeat("g", 1, env.resp(r).member_id)
        env.advance_to(t0 + 5_000)
        assert [env.err(env.heartbeat("g", 1, env.resp(r).member_id)) for r in rids] == [E.UNKNOWN_MEMBER_ID] * 3
        assert env.state() == "Empty" and env.group().generation_id == 2

    def test_join_completion_when_pending_member_times_out(self):
        """testJoinGroupCompletionWhenPendingMemberTimesOut: a non-initial join waits for the pending member
        until its session timeout (2500) removes it, then completes."""
        env = Env(**{"group.min.session.timeout.ms": 1_000})  # Kafka test context bounds
        leader, follower, gen = two_member_stable(env, session=5_000, rebalance=10_000)
        t0 = env.now
        pending = env.resp(env.join(session=2_500, rebalance=10_000)).member_id
        env.join(member_id=leader, session=5_000, rebalance=10_000)
        env.join(member_id=follower, session=5_000, rebalance=10_000)
        assert env.state() == "PreparingRebalance"  # blocked by the pending member
        env.advance_to(t0 + 3_000)
        assert env.state() == "CompletingRebalance" and env.group().size == 2
        assert not env.group().pending_members

    def test_pending_member_rejoin_completes_the_join(self):
        """testJoinGroupCompletionWhenPendingMemberJoins."""
        env = Env(**{"group.min.session.timeout.ms": 1_000})  # Kafka test context bounds
        leader, follower, gen = two_member_stable(env, session=5_000, rebalance=10_000)
        pending = env.resp(env.join(session=2_500, rebalance=10_000)).member_id
        env.join(member_id=leader, session=5_000, rebalance=10_000)
        env.join(member_id=follower, session=5_000, rebalance=10_000)
        r = env.resp(env.join(member_id=pending, session=2_500, rebalance=10_000))
        assert E(r.error_code) == E.NONE and env.state() == "CompletingRebalance" and env.group().size == 3

    def test_unload_answers_parked_requests_not_coordinator(self):
        """testClassicGroupOnUnloadedEmptyAndPreparingRebalance: parked joins -> NOT_COORDINATOR with their own
        member id and no members."""
        env = Env(**{"group.min.session.timeout.ms": 1_000})  # Kafka test context bounds
        r1 = env.join(version=3)
        r2 = env.join(version=3)
        assert env.resp(r1) is None
        # unload the shard the way a leadership move with the old leader alive does (onUnloaded)
        result = env.shard().unload(env.now, answer=True)
        answers = dict(result.released)
        for rid in (r1, r2):
            assert E(answers[rid].error_code) == E.NOT_COORDINATOR and answers[rid].member_id != ""
            assert answers[rid].members == []


def test_pending_member_rejoining_with_instance_id_fails():
    """testJoinGroupExistingPendingMemberWithGroupInstanceIdThrowsException: classicGroupJoinExistingMember throws
    IllegalStateException -> the operation fails with UNKNOWN_SERVER_ERROR; the id stays pending."""
    env = Env()
    pending = env.resp(env.join()).member_id
    r = env.resp(env.join(member_id=pending, instance="group-instance-id"))
    assert (E(r.error_code), r.member_id) == (E.UNKNOWN_SERVER_ERROR, "")
    assert env.group().is_pending_member(pending) and env.group().size == 0


def test_loaded_member_with_rebalance_timeout_minus_one_uses_session_timeout():
    """testReplayGroupMetadataRecords(useDefaultRebalanceTimeout=true)."""
    from coordinator import records as R
    from coordinator.group import group_from_metadata
    rec = R.GroupMetadata(group_id="g", protocol_type="consumer", generation_id=1, protocol_name="range",
                          leader="member-0", current_state_timestamp_ms=0, members=(
                              R.MemberMetadata(member_id="member-0", group_instance_id="i-0", client_id="c",
                                               client_host="h", rebalance_timeout_ms=-1, session_timeout_ms=4000,
                                               subscription=b"", assignment=b"\x02"),))
    g = group_from_metadata(rec, 0)
    assert g.members["member-0"].rebalance_timeout_ms == 4000 and str(g.state) == "Stable"


def test_pending_sync_expiry_kicks_followers():
    """testRebalanceTimesOutWhenSyncRequestIsNotReceivedFromFollowers: the leader synced (Stable), the followers
    never did -> removed at the pending-sync deadline; the group rebalances."""
    env = Env(**{"group.min.session.timeout.ms": 1_000})
    rids = [env.join_new(rebalance=5_000, session=5_000)[1] for _ in range(3)]
    env.complete_join()
    t0 = env.now
    resps = [env.resp(r) for r in rids]
    leader = resps[0].leader
    followers = [r.member_id for r in resps if r.member_id != leader]
    env.advance_to(t0 + 2_500)
    for r in resps:
        assert env.err(env.heartbeat("g", 1, r.member_id)) == E.NONE
    assert env.err(env.sync("g", 1, leader)) == E.NONE and env.state() == "Stable"
    assert env.err(env.heartbeat("g", 1, leader)) == E.NONE
    env.advance_to(t0 + 5_000)
    assert env.err(env.heartbeat("g", 1, leader)) == E.REBALANCE_IN_PROGRESS
    assert [env.err(env.heartbeat("g", 1, f)) for f in followers] == [E.UNKNOWN_MEMBER_ID] * 2
    assert env.state() == "PreparingRebalance"


def test_last_member_leaving_empties_the_group():
    """testValidLeaveGroup: CompletingRebalance (generation 1), the only member leaves -> Empty, generation 2,
    an empty GroupMetadata record."""
    env = Env()
    m, rid = env.join_new()
    env.complete_join()
    assert env.state() == "CompletingRebalance" and env.resp(rid).generation_id == 1
    n = len(env.records)
    r = env.resp(env.leave("g", [(m, None)], version=3))
    assert [(x.member_id, x.group_instance_id, E(x.error_code)) for x in r.members] == [(m, None, E.NONE)]
    assert env.state() == "Empty" and env.group().generation_id == 2
    gm = [e.record for e in env.records[n:] if e.record.TYPE == "GroupMetadata"]
    assert len(gm) == 1 and gm[0].members == () and gm[0].generation_id == 2 and gm[0].protocol_name is None


class TestOffsetDeleteMerge:
    """KafkaApis.handleOffsetDeleteRequest + OffsetDeleteResponse.Builder.merge."""

    def test_only_unknown_topics_still_validate_the_group(self):
        env = Env()
        r = env.resp(env.offset_delete("nope", {"nosuch": [0]}))
        assert E(r.error_code) == E.GROUP_ID_NOT_FOUND and r.topics == []
        env.commit("s", -1, "", {("foo", 0): 1})
        r = env.resp(env.offset_delete("s", {"nosuch": [0]}))
        assert E(r.error_code) == E.NONE
        assert [(t.name, [(p.partition_index, E(p.error_code)) for p in t.partitions]) for t in r.topics] == [
            ("nosuch", [(0, E.UNKNOWN_TOPIC_OR_PARTITION)])]

    def test_not_coordinator_has_no_partitions(self):
        env = Env()
        from protocol.messages import OffsetDeleteRequest
        wrong = (env.svc.coordinator_of("g") + 1) % 3
        req = OffsetDeleteRequest(group_id="g", topics=[OffsetDeleteRequest.Topic(
            name="nosuch", partitions=[OffsetDeleteRequest.Topic.Partition(partition_index=0)])])
        r = env.resp(env.send(req, 0, broker=wrong))
        assert E(r.error_code) == E.NOT_COORDINATOR and r.topics == []

    def test_api_layer_partitions_come_first(self):
        env = Env()
        env.commit("s", -1, "", {("foo", 0): 1})
        r = env.resp(env.offset_delete("s", {"foo": [0, 9], "nosuch": [1]}))
        assert [(t.name, [(p.partition_index, E(p.error_code)) for p in t.partitions]) for t in r.topics] == [
            ("foo", [(9, E.UNKNOWN_TOPIC_OR_PARTITION), (0, E.NONE)]), ("nosuch", [(1, E.UNKNOWN_TOPIC_OR_PARTITION)])]


class TestOffsetCommitMerge:
    """KafkaApis.handleOffsetCommitRequest + OffsetCommitResponse.Builder.merge."""

    def test_api_layer_partitions_come_first(self):
        env = Env()
        rid = env.commit("s", -1, "", {("foo", 0): 1, ("foo", 9): 1, ("nosuch", 0): 1, ("bar", 0): 1})
        r = env.resp(rid)
        assert [(t.name, [(p.partition_index, E(p.error_code)) for p in t.partitions]) for t in r.topics] == [
            ("foo", [(9, E.UNKNOWN_TOPIC_OR_PARTITION), (0, E.NONE)]), ("nosuch", [(0, E.UNKNOWN_TOPIC_OR_PARTITION)]),
            ("bar", [(0, E.NONE)])]

    def test_group_error_only_on_forwarded_partitions(self):
        env = Env()
        two_member_stable(env)
        rid = env.commit("g", 99, "unknown", {("foo", 0): 1, ("nosuch", 0): 1})
        assert env.commit_errors(rid) == {("foo", 0): E.UNKNOWN_MEMBER_ID,
                                          ("nosuch", 0): E.UNKNOWN_TOPIC_OR_PARTITION}

    def test_all_partitions_unknown_skips_the_coordinator(self):
        env = Env()
        rid = env.commit("nope", 5, "m", {("nosuch", 0): 1})
        assert env.commit_errors(rid) == {("nosuch", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
        assert env.state("nope") == "Dead"


def test_describe_unknown_group_v6_is_group_id_not_found():
    """testDescribeGroupsGroupIdNotFoundException (v6+, KIP-1043) vs ...BeforeV6... (NONE). kgroup advertises
    DescribeGroups up to v5; the coordinator already answers v6 the Kafka way."""
    env = Env()
    d = described(env, "nope", version=6)
    assert (E(d.error_code), d.group_state) == (E.GROUP_ID_NOT_FOUND, "Dead")
    assert E(described(env, "nope", version=5).error_code) == E.NONE
