"""JoinGroup: validation order, MEMBER_ID_REQUIRED (KIP-394), protocol checks and vote, group.max.size, rejoin rules
by state, leader election. Expected values from Kafka's GroupMetadataManager classic-group rules/tests."""

import re

import pytest

from coord_harness import E, Env, sub
from coordinator.group import _java_hashmap_order

UUID_RE = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"


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
    assert _java_hashmap_order(["cooperative-sticky", "roundrobin", "range", "sticky"]) == \
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


def test_members_that_do_not_rejoin_are_removed_at_the_rebalance_timeout(env):
    ids, leader, gen = env.stable_group(3, session=25_000, rebalance=20_000)
    t0 = env.now
    env.join(member_id=leader, session=25_000, rebalance=20_000)
    env.advance(19_999)
    assert env.state() == "PreparingRebalance"
    env.advance(1)
    g = env.group()
    assert list(g.members) == [leader] and g.generation_id == gen + 1 and env.now == t0 + 20_000


def test_leader_reelected_when_leader_does_not_rejoin(env):
    ids, leader, gen = env.stable_group(2)
    follower = [m for m in ids if m != leader][0]
    rid = env.join(member_id=follower, protocols=[("range", sub("bar"))])
    env.complete_join()
    r = env.resp(rid)
    assert r.leader == follower and [m.member_id for m in r.members] == [follower]
    assert list(env.group().members) == [follower]


def test_leader_leaving_hands_leadership_to_a_remaining_member(env):
    ids, leader, gen = env.stable_group(3)
    env.leave("g", [(leader, None)])
    g = env.group()
    assert g.leader_id in ids and g.leader_id != leader


def test_duplicate_join_replaces_the_parked_request(env):
    mid = env.resp(env.join()).member_id
    first = env.join(member_id=mid)
    second = env.join(member_id=mid)
    assert first in env.abandoned
    env.complete_join()
    assert env.resp(first) is None and env.err(second) == E.NONE


class TestMaxSize:
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
