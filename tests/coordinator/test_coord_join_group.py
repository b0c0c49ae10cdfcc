"""JoinGroup (``GroupMetadataManager.classicGroupJoin``): validation and its order, MEMBER_ID_REQUIRED (KIP-394),
the protocol checks and the protocol vote, rejoin rules by group state, join-phase completion and leader election,
``group.max.size``. Expected values come from Kafka's rules and tests (a case that re-expresses one of Kafka's
GroupMetadataManagerTest / GroupCoordinatorTest cases names it in its docstring)."""

import re

import pytest

from coord_harness import E, Env, sub, two_member_stable
from protocol.java import hashmap_order

UUID_RE = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
P2 = [("range", sub("foo", "bar"))]


@pytest.mark.parametrize("session,ok", [(5999, False), (6000, True), (1_800_000, True), (1_800_001, False)])
def test_session_timeout_bounds_are_inclusive(env, session, ok):
    r = env.resp(env.join(member_id="", session=session))
    if ok:
        assert r.error_code == E.MEMBER_ID_REQUIRED
    else:
        assert r.error_code == E.INVALID_SESSION_TIMEOUT
        assert env.group("g") is None  # checked before the group is looked up or created


def test_invalid_session_timeout_echoes_member_id(env):
    r = env.resp(env.join(member_id="someone", session=1))
    assert (r.error_code, r.member_id, r.generation_id, r.leader) == (E.INVALID_SESSION_TIMEOUT, "someone", -1, "")


def test_empty_group_id_is_invalid(env):
    assert env.err(env.join(group_id="")) == E.INVALID_GROUP_ID


def test_unknown_group_with_known_member_id(env):
    r = env.resp(env.join(member_id="member"))
    assert (r.error_code, r.member_id) == (E.UNKNOWN_MEMBER_ID, "member")
    assert env.group("g") is None


def test_member_id_required_for_v4_plus(env):
    r = env.resp(env.join(client_id="my-client"))
    assert r.error_code == E.MEMBER_ID_REQUIRED
    assert re.fullmatch("my-client-" + UUID_RE, r.member_id)
    assert (r.generation_id, r.leader, r.members) == (-1, "", [])
    g = env.group()
    assert str(g.state) == "Empty" and list(g.pending_members) == [r.member_id] and not g.members
    # the new coordinator persists the new (empty) group
    assert env.types() == ["GroupMetadata", "PendingMemberAdded"]
    assert env.timers() == {f"pending-g-{r.member_id}": 10_000}


def test_v3_dynamic_member_is_added_at_once(env):
    rid = env.join(version=3)
    assert env.resp(rid) is None  # parked
    g = env.group()
    assert str(g.state) == "PreparingRebalance" and len(g.members) == 1


def test_pending_member_that_sends_empty_id_again_gets_another_id(env):
    a = env.resp(env.join()).member_id
    b = env.resp(env.join()).member_id
    assert a != b and list(env.group().pending_members) == [a, b]


def test_v0_uses_session_timeout_as_rebalance_timeout(env):
    env.join(version=0, session=7000, rebalance=99_999)
    m = next(iter(env.group().members.values()))
    assert m.rebalance_timeout_ms == 7000


@pytest.mark.parametrize("protocol_type,protocols", [("", [("range", b"")]), ("consumer", [])])
def test_first_member_needs_protocol_type_and_protocols(env, protocol_type, protocols):
    assert env.err(env.join(protocol_type=protocol_type, protocols=protocols)) == E.INCONSISTENT_GROUP_PROTOCOL


def test_joining_with_other_protocol_type_or_no_common_protocol(env):
    mid, _ = env.join_new()
    assert env.err(env.join(protocol_type="connect")) == E.INCONSISTENT_GROUP_PROTOCOL
    assert env.err(env.join(protocols=[("roundrobin", b"")])) == E.INCONSISTENT_GROUP_PROTOCOL
    # the known member itself switching to a brand-new protocol set is inconsistent too (its old set counts)
    assert env.err(env.join(member_id=mid, protocols=[("sticky", b"")])) == E.INCONSISTENT_GROUP_PROTOCOL
    assert env.join(protocols=[("sticky", b""), ("range", b"")]) and env.resp(env._rid).error_code == \
        E.MEMBER_ID_REQUIRED


def test_hashmap_bucket_order_of_assignor_names():
    # Java HashMap(16) buckets: sticky 8, range 9, roundrobin 10, cooperative-sticky 15
    assert hashmap_order(["cooperative-sticky", "roundrobin", "range", "sticky"]) == \
        ["sticky", "range", "roundrobin", "cooperative-sticky"]


@pytest.mark.parametrize("prefs,winner", [
    # every member votes for its first candidate; the most votes wins
    ([["range", "roundrobin"], ["range", "roundrobin"], ["roundrobin", "range"]], "range"),
    ([["range", "roundrobin"], ["roundrobin", "range"], ["roundrobin"]], "roundrobin"),  # range not a candidate
    ([["sticky", "range"], ["range", "sticky"], ["range", "sticky"]], "range"),
    # 1-1 ties: first maximum in java.util.HashMap order (sticky < range < roundrobin < cooperative-sticky)
    ([["range", "roundrobin"], ["roundrobin", "range"]], "range"),
    ([["cooperative-sticky", "sticky"], ["sticky", "cooperative-sticky"]], "sticky"),
])
def test_protocol_vote(prefs, winner):
    env = Env(**{"group.initial.rebalance.delay.ms": 100})
    rids = [env.join_new(protocols=[(p, b"") for p in pr])[1] for pr in prefs]
    env.complete_join()
    assert {env.resp(r).protocol_name for r in rids} == {winner}


def test_first_member_is_leader_and_gets_member_list(env):
    (a, ra), (b, rb) = env.join_new(protocols=[("range", sub("foo"))]), env.join_new(protocols=[("range", sub("bar"))])
    env.complete_join()
    la, lb = env.resp(ra), env.resp(rb)
    assert la.leader == lb.leader == a
    assert [(m.member_id, m.metadata) for m in la.members] == [(a, sub("foo")), (b, sub("bar"))]
    assert lb.members == []
    assert (la.generation_id, la.protocol_type, la.protocol_name) == (1, "consumer", "range")
    assert str(env.group().state) == "CompletingRebalance"


def test_stable_follower_rejoin_with_same_metadata_gets_current_generation(env):
    ids, leader, gen = env.stable_group(2)
    follower = [m for m in ids if m != leader][0]
    r = env.resp(env.join(member_id=follower))
    assert (r.error_code, r.generation_id, r.leader, r.members, r.protocol_name) == (0, gen, leader, [], "range")
    assert env.state() == "Stable"


def test_stable_leader_rejoin_always_rebalances(env):
    ids, leader, gen = env.stable_group(2)
    assert env.resp(env.join(member_id=leader)) is None
    assert env.state() == "PreparingRebalance"
    assert env.timers()["join-g"] == env.now + 30_000


def test_stable_follower_with_new_metadata_rebalances(env):
    ids, leader, gen = env.stable_group(2)
    follower = [m for m in ids if m != leader][0]
    assert env.resp(env.join(member_id=follower, protocols=[("range", sub("foo", "bar"))])) is None
    assert env.state() == "PreparingRebalance"


def test_completing_rebalance_rejoin_same_metadata_is_answered_at_once(env):
    (a, _), (b, _) = env.join_new(), env.join_new()
    env.complete_join()
    r = env.resp(env.join(member_id=a))  # a is the leader
    assert (r.error_code, r.generation_id, r.leader, [m.member_id for m in r.members]) == (0, 1, a, [a, b])
    r = env.resp(env.join(member_id=b))
    assert (r.error_code, r.members) == (0, [])
    assert env.state() == "CompletingRebalance"


def test_completing_rebalance_rejoin_with_new_metadata_fails_parked_syncs(env):
    (a, _), (b, _) = env.join_new(), env.join_new()
    env.complete_join()
    s = env.sync("g", 1, b)  # follower parks
    assert env.resp(s) is None
    env.join(member_id=a, protocols=[("range", sub("bar"))])
    assert env.err(s) == E.REBALANCE_IN_PROGRESS
    assert env.state() == "PreparingRebalance"


def test_new_member_in_stable_group_rebalances_and_completes_when_all_rejoined(env):
    ids, leader, gen = env.stable_group(2)
    c, rc = env.join_new()
    assert env.state() == "PreparingRebalance"
    rids = [env.join(member_id=m) for m in ids]
    # non-initial rebalance: completes as soon as everyone has joined, no timer needed
    assert env.state() == "CompletingRebalance"
    assert {env.resp(r).generation_id for r in rids + [rc]} == {gen + 1}


def test_leader_reelected_when_leader_does_not_rejoin(env):
    ids, leader, gen = env.stable_group(2)
    follower = [m for m in ids if m != leader][0]
    rid = env.join(member_id=follower, protocols=[("range", sub("bar"))])
    env.complete_join()
    r = env.resp(rid)
    assert r.leader == follower and [m.member_id for m in r.members] == [follower]
    assert list(env.group().members) == [follower]


def test_duplicate_join_replaces_the_parked_request(env):
    mid = env.resp(env.join()).member_id
    first = env.join(member_id=mid)
    second = env.join(member_id=mid)
    assert first in env.abandoned
    env.complete_join()
    assert env.resp(first) is None and env.err(second) == E.NONE


def test_pending_member_rejoining_with_instance_id_fails():
    """testJoinGroupExistingPendingMemberWithGroupInstanceIdThrowsException: classicGroupJoinExistingMember throws
    IllegalStateException -> the operation fails with UNKNOWN_SERVER_ERROR; the id stays pending."""
    env = Env()
    pending = env.resp(env.join()).member_id
    r = env.resp(env.join(member_id=pending, instance="group-instance-id"))
    assert (E(r.error_code), r.member_id) == (E.UNKNOWN_SERVER_ERROR, "")
    assert env.group().is_pending_member(pending) and env.group().size == 0


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
        ids, leader, gen = env.join_together(2)
        follower = next(m for m in ids if m != leader)
        rl = env.resp(env.join(member_id=leader))
        assert (E(rl.error_code), rl.generation_id, rl.leader, len(rl.members)) == (E.NONE, gen, leader, 2)
        rf = env.resp(env.join(member_id=follower))
        assert (E(rf.error_code), rf.generation_id, rf.leader, rf.members) == (E.NONE, gen, leader, [])
        assert env.state() == "CompletingRebalance"

    def test_rejoin_in_completing_rebalance_with_changed_metadata_fails_parked_syncs(self):
        """prepareRebalance from CompletingRebalance: resetAndPropagateAssignmentWithError(REBALANCE_IN_PROGRESS)."""
        env = Env()
        ids, leader, gen = env.join_together(2)
        follower = next(m for m in ids if m != leader)
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

    def test_pending_member_rejoin_completes_the_join(self):
        """testJoinGroupCompletionWhenPendingMemberJoins."""
        env = Env(**{"group.min.session.timeout.ms": 1_000})  # Kafka test context bounds
        leader, follower, gen = two_member_stable(env, session=5_000, rebalance=10_000)
        pending = env.resp(env.join(session=2_500, rebalance=10_000)).member_id
        env.join(member_id=leader, session=5_000, rebalance=10_000)
        env.join(member_id=follower, session=5_000, rebalance=10_000)
        r = env.resp(env.join(member_id=pending, session=2_500, rebalance=10_000))
        assert E(r.error_code) == E.NONE and env.state() == "CompletingRebalance" and env.group().size == 3


class TestJoinValidation:
    def test_inconsistent_group_protocol(self, env):
        _, r1 = env.join_new(protocols=[("range", b"")])
        assert env.err(env.join(protocols=[("roundrobin", b"")])) == E.INCONSISTENT_GROUP_PROTOCOL
        env.complete_join()
        assert env.err(r1) == E.NONE

    def test_unknown_member_of_existing_group(self, env):
        env.join_new()
        assert env.err(env.join(member_id="memberId")) == E.UNKNOWN_MEMBER_ID

    def test_second_join_with_inconsistent_protocol(self, env):
        mid = env.resp(env.join()).member_id
        assert env.err(env.join(member_id=mid, protocols=[])) == E.INCONSISTENT_GROUP_PROTOCOL
        rid = env.join(member_id=mid)
        env.complete_join()
        assert env.err(rid) == E.NONE


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


class TestMaxSize:
    MAX = 4  # group.max.size of the cases ported from Kafka's tests below

    def test_over_capacity_join_is_rejected(self):
        env = Env(**{"group.max.size": 3})
        ids = [env.join_new()[0] for _ in range(3)]
        r = env.resp(env.join())
        assert (r.error_code, r.member_id) == (E.GROUP_MAX_SIZE_REACHED, "")
        env.complete_join()
        assert list(env.group().members) == ids
        r = env.resp(env.join())  # Stable/CompletingRebalance: by group size
        assert r.error_code == E.GROUP_MAX_SIZE_REACHED

    def test_pending_members_are_not_counted_but_are_rejected_on_rejoin(self):
        env = Env(**{"group.max.size": 2})
        a, _ = env.join_new()
        b = env.resp(env.join()).member_id
        c = env.resp(env.join()).member_id  # 1 awaiting < 2: accepted (pending)
        assert env.resp(env.join(member_id=b)) is None  # added: 2 awaiting
        r = env.resp(env.join(member_id=c))
        assert (r.error_code, r.member_id) == (E.GROUP_MAX_SIZE_REACHED, "")
        g = env.group()
        assert list(g.members) == [a, b] and not g.pending_members

    def test_existing_member_awaiting_join_is_accepted(self):
        env = Env(**{"group.max.size": 1})
        a, first = env.join_new()
        second = env.join(member_id=a)  # already awaiting: accepted, replaces the parked join
        assert env.resp(second) is None and first in env.abandoned

    def test_dynamic_members_with_required_known_member_id(self):
        env = Env(**{"group.max.size": self.MAX})
        ids = [env.resp(env.join()).member_id for _ in range(self.MAX + 1)]
        rids = [env.join(member_id=m) for m in ids]
        env.complete_join()
        errors = [env.err(r) for r in rids]
        assert errors.count(E.NONE) == self.MAX and errors.count(E.GROUP_MAX_SIZE_REACHED) == 1
        # accepted members can rejoin (same metadata in CompletingRebalance), the others are rejected
        assert [env.err(env.join(member_id=m)) for m in ids] == errors

    def test_dynamic_members_before_v4(self):
        env = Env(**{"group.max.size": self.MAX})
        rids = [env.join(version=3) for _ in range(self.MAX + 1)]
        env.complete_join()
        results = [env.resp(r) for r in rids]
        errors = [E(r.error_code) for r in results]
        assert errors.count(E.NONE) == self.MAX and errors.count(E.GROUP_MAX_SIZE_REACHED) == 1
        assert [env.err(env.join(member_id=r.member_id, version=3)) for r in results] == errors

    def test_static_members(self):
        env = Env(**{"group.max.size": self.MAX})
        rids = [env.join(instance=f"instance-id-{i}") for i in range(self.MAX + 1)]
        env.complete_join()
        results = [env.resp(r) for r in rids]
        errors = [E(r.error_code) for r in results]
        assert errors.count(E.NONE) == self.MAX and errors.count(E.GROUP_MAX_SIZE_REACHED) == 1
        again = [env.err(env.join(member_id=r.member_id, instance=f"instance-id-{i}"))
                 for i, r in enumerate(results)]
        assert again == errors

    def test_dynamic_members_can_rejoin_while_rebalancing(self):
        env = Env(**{"group.max.size": self.MAX})
        ids = [env.resp(env.join()).member_id for _ in range(self.MAX + 1)]
        for m in ids:
            env.join(member_id=m)
        rids = [env.join(member_id=m) for m in ids]
        env.complete_join()
        errors = [env.err(r) for r in rids]
        assert errors.count(E.NONE) == self.MAX and errors.count(E.GROUP_MAX_SIZE_REACHED) == 1

    def test_last_joining_members_are_kicked_out_when_a_loaded_group_is_over_capacity(self):
        # testLastJoiningMembersAreKickedOutWhenReJoiningGroupWithMaxSize: a group larger than group.max.size
        # (here: reloaded under a lower limit) rebalances on load; the first max rejoiners are accepted.
        from coordinator import GroupCoordinatorService
        from coord_harness import MemoryStorage
        storage = MemoryStorage()
        big = Env()
        big.svc = GroupCoordinatorService(num_brokers=3, config=big.config, seed=3, storage=storage)
        ids, leader, gen = big.stable_group(self.MAX + 2, session=60_000)
        small = Env(**{"group.max.size": self.MAX})
        small.svc = GroupCoordinatorService(num_brokers=3, config=small.config, seed=4, storage=storage)
        assert small.state() == "PreparingRebalance"  # "Freshly-loaded group ... is over capacity"
        rids = [small.join(member_id=m, session=60_000) for m in ids]
        small.complete_join()
        errors = [small.err(r) for r in rids]
        assert errors == [E.NONE] * self.MAX + [E.GROUP_MAX_SIZE_REACHED] * 2
        assert list(small.group().members) == ids[:self.MAX]
