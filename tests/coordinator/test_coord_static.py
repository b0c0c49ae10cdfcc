"""Static membership (KIP-345) and skip_assignment for a returning static leader (KIP-814); cases after
GroupMetadataManagerTest's testStaticMember* tests."""

import re

import pytest

from coord_harness import E, Env


@pytest.fixture
def stable():
    """Static members i0 (leader) and i1, Stable at generation 1 with assignments A/B."""
    env = Env()
    r = [env.join(instance=f"i{k}", session=60_000, protocols=[("range", b"r"), ("roundrobin", b"rr")])
         for k in range(2)]
    env.complete_join()
    a, b = env.resp(r[0]).member_id, env.resp(r[1]).member_id
    env.sync("g", 1, a, {a: b"A", b: b"B"}, instance="i0")
    env.sync("g", 1, b, instance="i1")
    assert env.state() == "Stable" and env.group().leader_id == a
    return env, a, b


def rejoin(env, inst, version=9, member_id="", protocols=None, **kw):
    return env.join(member_id=member_id, instance=inst, session=kw.pop("session", 60_000), version=version,
                    protocols=protocols or [("range", b"r"), ("roundrobin", b"rr")], **kw)


def test_static_join_never_needs_member_id(env):
    rid = env.join(instance="inst-1")
    assert env.resp(rid) is None  # parked, not MEMBER_ID_REQUIRED
    (mid,) = env.group().members
    assert re.fullmatch(r"inst-1-[0-9a-f-]{36}", mid)
    assert env.group().static_members == {"inst-1": mid}


def test_follower_replacement_in_stable_does_not_rebalance(stable):
    env, a, b = stable
    r = env.resp(rejoin(env, "i1"))
    new_b = r.member_id
    assert new_b != b
    assert (r.error_code, r.generation_id, r.leader, r.members, r.skip_assignment) == (0, 1, a, [], False)
    g = env.group()
    assert str(g.state) == "Stable" and list(g.members) == [a, new_b] and g.static_members["i1"] == new_b
    assert env.resp(env.sync("g", 1, new_b, instance="i1")).assignment == b"B"  # assignment carried over
    last = [e.record for e in env.records if e.record.TYPE == "GroupMetadata"][-1]
    assert [m.member_id for m in last.members] == [a, new_b]
    # the old id is fenced
    assert env.err(env.heartbeat("g", 1, b, instance="i1")) == E.FENCED_INSTANCE_ID
    assert env.err(env.heartbeat("g", 1, b)) == E.UNKNOWN_MEMBER_ID


def test_leader_replacement_v9_gets_skip_assignment(stable):
    env, a, b = stable
    r = env.resp(rejoin(env, "i0", version=9))
    new_a = r.member_id
    assert (r.leader, r.skip_assignment) == (new_a, True)
    assert [(m.member_id, m.group_instance_id) for m in r.members] == [(b, "i1"), (new_a, "i0")]
    assert env.group().leader_id == new_a and env.state() == "Stable"


@pytest.mark.parametrize("version", [5, 8])
def test_leader_replacement_before_v9_is_told_the_old_leader_id(stable, version):
    env, a, b = stable
    r = env.resp(rejoin(env, "i0", version=version))
    # the old id is returned as leader, so the rejoining leader believes it is a follower and does no assignment
    assert (r.leader, r.skip_assignment, r.members) == (a, False, [])
    assert r.member_id != a and env.group().leader_id == r.member_id


def test_replacement_with_protocol_change_rebalances(stable):
    env, a, b = stable
    # i1 now only supports roundrobin: the only candidate, so the selected protocol would change
    # (a 1-1 vote tie would not do: range wins ties, see test_join.test_protocol_vote)
    rid = rejoin(env, "i1", protocols=[("roundrobin", b"rr")])
    assert env.resp(rid) is None and env.state() == "PreparingRebalance"
    rid_a = rejoin(env, "i0", member_id=a)
    assert env.state() == "CompletingRebalance"
    assert env.resp(rid_a).protocol_name == "roundrobin"


def test_replacement_in_completing_rebalance_rebalances_and_fences_parked_sync(stable):
    env, a, b = stable
    env.join(member_id=a, instance="i0", session=60_000, protocols=[("range", b"r"), ("roundrobin", b"rr")])
    env.join(member_id=b, instance="i1", session=60_000, protocols=[("range", b"r"), ("roundrobin", b"rr")])
    assert env.state() == "CompletingRebalance"
    sb = env.sync("g", 2, b, instance="i1")
    sa_rid = None
    rid = rejoin(env, "i1")
    assert env.err(sb) == E.FENCED_INSTANCE_ID  # the replaced id's parked SyncGroup
    assert env.state() == "PreparingRebalance" and env.resp(rid) is None


def test_replacement_in_preparing_rebalance_fences_parked_join(stable):
    env, a, b = stable
    parked = env.join(member_id=b, instance="i1", session=60_000, protocols=[("range", b"r2")])  # changed: rebalance
    assert env.state() == "PreparingRebalance" and env.resp(parked) is None
    rid = rejoin(env, "i1")
    r = env.resp(parked)
    assert (r.error_code, r.member_id) == (E.FENCED_INSTANCE_ID, b)
    assert env.state() == "PreparingRebalance" and env.resp(rid) is None  # a has not rejoined yet
    ra = rejoin(env, "i0", member_id=a)
    # a and the new b have joined: the (non-initial) join completes at once
    assert env.state() == "CompletingRebalance" and env.err(rid) == E.NONE and env.err(ra) == E.NONE
    assert env.resp(ra).generation_id == 2


def test_known_static_member_with_wrong_member_id_is_fenced(stable):
    env, a, b = stable
    assert env.err(rejoin(env, "i1", member_id=a)) == E.FENCED_INSTANCE_ID
    assert env.err(rejoin(env, "i7", member_id=a)) == E.UNKNOWN_MEMBER_ID


def test_replacement_updates_timeouts(stable):
    env, a, b = stable
    new_b = env.resp(rejoin(env, "i1", session=45_000, rebalance=90_000)).member_id
    m = env.group().members[new_b]
    assert (m.session_timeout_ms, m.rebalance_timeout_ms) == (45_000, 90_000)
    assert env.timers()[f"heartbeat-g-{new_b}"] == env.now + 45_000


def test_static_member_is_removed_on_session_expiry(stable):
    env, a, b = stable
    for _ in range(7):
        env.advance(9_000)
        env.heartbeat("g", 1, a, instance="i0")
    assert b not in env.group().members and "i1" not in env.group().static_members
    assert env.state() == "PreparingRebalance"


def test_replacement_during_pending_sync_window_rebalances_at_the_sync_timeout():
    # replaceStaticMember bypasses remove(): the old id stays in pendingSyncMembers
    env = Env()
    ra = env.join(instance="i0", session=60_000, rebalance=20_000)
    rb = env.join(instance="i1", session=60_000, rebalance=20_000)
    env.complete_join()
    t0 = env.now
    a, b = env.resp(ra).member_id, env.resp(rb).member_id
    env.sync("g", 1, a, {a: b"A", b: b"B"}, instance="i0")
    assert env.state() == "Stable"
    new_b = env.resp(env.join(instance="i1", session=60_000, rebalance=20_000)).member_id
    assert env.resp(env.sync("g", 1, new_b, instance="i1")).assignment == b"B"
    assert env.group().pending_sync_members == {b: None}
    env.advance_to(t0 + 20_000)
    assert env.state() == "PreparingRebalance" and list(env.group().members) == [a, new_b]
