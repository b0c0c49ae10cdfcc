"""Static membership (KIP-345) and skip_assignment for a returning static leader (KIP-814): replacement of a
known instance, fencing, protocol changes, timeouts, removal; cases after GroupMetadataManagerTest's
testStaticMember* tests and GroupCoordinatorTest's static-member cases."""

import re

import pytest

from coord_harness import E, Env, sub

PROTOCOLS = [("range", b"m")]
SUPERSET = [("range", b"m"), ("roundrobin", b"m")]
P1 = [("range", sub("foo"))]


def static_pair(env, session=10_000, rebalance=30_000, protocols=SUPERSET, instances=("L", "F")):
    """staticMembersJoinAndRebalance: leader and follower (instance ids ``instances``) join, complete, sync.
    -> (leader, follower, gen)"""
    rl = env.join(instance=instances[0], protocols=protocols, session=session, rebalance=rebalance)
    rf = env.join(instance=instances[1], protocols=protocols, session=session, rebalance=rebalance)
    env.complete_join()
    leader, follower = env.resp(rl).member_id, env.resp(rf).member_id
    gen = env.resp(rl).generation_id
    assert env.resp(rl).leader == leader
    env.sync("g", gen, leader, {leader: b"LA", follower: b"FA"}, instance=instances[0])
    assert env.err(env.sync("g", gen, follower, instance=instances[1])) == E.NONE
    assert env.state() == "Stable"
    return leader, follower, gen


def instance_ids(resp):
    return {m.group_instance_id for m in resp.members}


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

    def test_group_stuck_in_rebalance_due_to_nonjoined_static_member(self):
        """testGroupStuckInRebalanceTimeoutDueToNonjoinedStaticMember."""
        env = Env(**{"group.min.session.timeout.ms": 1_000})  # Kafka test context bounds
        protocols = [("range", b"r"), ("roundrobin", b"rr")]
        leader, follower, gen = static_pair(env, session=10_000, rebalance=5_000, protocols=protocols,
                                            instances=("leader-instance-id", "follower-instance-id"))
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
        leader, follower, gen = static_pair(env, session=15_000, rebalance=10_000,
                                            protocols=[("range", b"r"), ("roundrobin", b"rr")],
                                            instances=("leader-instance-id", "follower-instance-id"))
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


class TestStaticMembers:
    def test_rejoin_with_explicit_unknown_member_id_is_fenced(self, env):
        env.join(instance="i")
        assert env.err(env.join(member_id="unknown_member", instance="i")) == E.FENCED_INSTANCE_ID

    def test_fence_duplicate_rejoined_follower(self, env):
        leader, follower, gen = static_pair(env)
        env.join_new()  # a third member triggers a rebalance
        assert env.state() == "PreparingRebalance"
        old = env.join(member_id=follower, instance="F", protocols=SUPERSET)
        dup = env.join(instance="F", protocols=SUPERSET)
        r = env.resp(old)
        assert (r.error_code, r.generation_id, r.members) == (E.FENCED_INSTANCE_ID, -1, [])
        assert env.resp(dup) is None and env.state() == "PreparingRebalance"

    def test_fence_duplicate_syncing_follower_after_member_id_changed(self, env):
        leader, follower, gen = static_pair(env, session=10_000, rebalance=30_000)
        rl = env.join(member_id=leader, instance="L", protocols=SUPERSET)
        assert env.state() == "PreparingRebalance"
        rf = env.join(member_id=follower, instance="F", protocols=SUPERSET)
        l, f = env.resp(rl), env.resp(rf)
        assert (l.error_code, l.generation_id, instance_ids(l), l.leader, l.member_id) == \
            (0, gen + 1, {"L", "F"}, leader, leader)
        assert (f.error_code, f.generation_id, f.members, f.leader, f.member_id) == (0, gen + 1, [], leader, follower)
        assert env.state() == "CompletingRebalance"
        old_sync = env.sync("g", gen + 1, follower, instance="F")
        t = env.now
        dup = env.join(instance="F", protocols=SUPERSET)
        assert env.err(old_sync) == E.FENCED_INSTANCE_ID and env.state() == "PreparingRebalance"
        # the leader never rejoins: its session (armed at the last join completion, t) expires first, and the
        # rebalance completes with the duplicate follower alone, as leader
        env.advance_to(t + 10_000)
        d = env.resp(dup)
        assert (d.error_code, d.generation_id, instance_ids(d), d.leader) == (0, gen + 2, {"F"}, d.member_id)
        assert env.state() == "CompletingRebalance"

    def test_fence_duplicate_rejoining_follower_after_member_id_changed(self, env):
        leader, follower, gen = static_pair(env)
        rl = env.join(member_id=leader, instance="L", protocols=SUPERSET)
        dup = env.join(instance="F", protocols=SUPERSET)
        old = env.join(member_id=follower, instance="F", protocols=SUPERSET)
        l, d, o = env.resp(rl), env.resp(dup), env.resp(old)
        assert (l.error_code, l.generation_id, instance_ids(l)) == (0, gen + 1, {"L", "F"})
        assert (d.error_code, d.generation_id, d.members) == (0, gen + 1, [])
        assert d.member_id != follower
        assert (o.error_code, o.generation_id) == (E.FENCED_INSTANCE_ID, -1)
        assert env.state() == "CompletingRebalance"

    def test_rejoin_with_known_member_id(self, env):
        rid = env.join(instance="i")
        env.complete_join()
        mid = env.resp(rid).member_id
        again = env.resp(env.join(member_id=mid, instance="i"))  # same metadata in CompletingRebalance
        assert again.error_code == 0 and env.state() == "CompletingRebalance"
        assert env.err(env.sync("g", again.generation_id, mid, {mid: b""}, instance="i")) == E.NONE
        assert env.state() == "Stable"

    @pytest.mark.parametrize("version", [8, 9])
    def test_rejoin_with_leader_id_and_unknown_member_id(self, env, version):
        leader, follower, gen = static_pair(env)
        r = env.resp(env.join(instance="L", protocols=SUPERSET, version=version))
        skip = version >= 9
        assert (r.error_code, r.generation_id, r.skip_assignment) == (0, gen, skip)
        assert instance_ids(r) == ({"L", "F"} if skip else set())
        assert r.leader == (r.member_id if skip else leader)
        assert env.state() == "Stable"
        assert env.err(env.join(member_id=leader, instance="L", protocols=SUPERSET)) == E.FENCED_INSTANCE_ID
        assert env.err(env.sync("g", gen, leader, instance="L")) == E.FENCED_INSTANCE_ID
        assert env.err(env.sync("g", gen, leader)) == E.UNKNOWN_MEMBER_ID

    def test_rejoin_with_leader_id_and_known_member_id_while_follower_times_out(self, env):
        leader, follower, gen = static_pair(env, session=15_000, rebalance=30_000)
        t = env.now
        rid = env.join(member_id=leader, instance="L", protocols=SUPERSET, session=15_000)
        env.advance_to(t + 15_000)  # the follower's session expires: it is removed, the join completes
        assert "F" not in env.group().static_members
        r = env.resp(rid)
        assert (r.error_code, r.generation_id, instance_ids(r), r.leader, r.member_id) == \
            (0, gen + 1, {"L"}, leader, leader)

    def test_rejoin_with_follower_id_and_change_of_protocol(self, env):
        leader, follower, gen = static_pair(env, session=40_000, rebalance=30_000)
        t = env.now
        rid = env.join(member_id=follower, instance="F", protocols=[("roundrobin", b"m")], session=40_000)
        env.advance_to(t + 30_000)  # rebalance timeout: the static leader did not rejoin but stays
        r = env.resp(rid)
        assert env.group().static_members.get("L") == leader and env.group().leader_id == follower
        assert (r.error_code, r.generation_id, instance_ids(r), r.leader, r.member_id) == \
            (0, gen + 1, {"L", "F"}, follower, follower)

    def test_unknown_member_id_and_protocol_change_that_changes_the_selected_protocol(self, env):
        leader, follower, gen = static_pair(env, session=40_000, rebalance=30_000)
        t = env.now
        rid = env.join(instance="F", protocols=[("roundrobin", b"m")], session=40_000)
        env.advance_to(t + 30_000)
        r = env.resp(rid)
        assert (r.error_code, r.generation_id, instance_ids(r), r.protocol_name) == \
            (0, gen + 1, {"L", "F"}, "roundrobin")
        assert env.group().is_leader(r.member_id) and r.member_id != follower

    def test_unknown_member_id_and_protocol_change_keeping_the_selected_protocol(self, env):
        leader, follower, gen = static_pair(env)
        r = env.resp(env.join(instance="F", protocols=[("range", b"m")]))
        assert (r.error_code, r.generation_id, r.members, r.leader) == (0, gen, [], leader)
        assert env.state() == "Stable" and r.member_id != follower
        assert env.err(env.join(member_id=follower, instance="F", protocols=[("range", b"m")])) == \
            E.FENCED_INSTANCE_ID
        assert env.err(env.sync("g", gen, follower, instance="F", protocol_type=None, protocol_name=None,
                                version=4)) == E.FENCED_INSTANCE_ID
        s = env.resp(env.sync("g", gen, r.member_id, instance="F", protocol_type=None, protocol_name=None, version=4))
        assert (s.error_code, s.assignment) == (0, b"FA")

    def test_updated_timeouts_are_persisted(self, env):
        leader, follower, gen = static_pair(env)
        f = env.resp(env.join(instance="F", protocols=SUPERSET, session=20_000, rebalance=60_000))
        l = env.resp(env.join(instance="L", protocols=SUPERSET, session=20_000, rebalance=60_000))
        assert (f.error_code, f.generation_id, f.members) == (0, gen, [])
        assert (l.error_code, l.generation_id, instance_ids(l), l.leader, l.skip_assignment) == \
            (0, gen, {"L", "F"}, l.member_id, True)
        assert all((m.session_timeout_ms, m.rebalance_timeout_ms) == (20_000, 60_000)
                   for m in env.group().members.values())
        last = [e.record for e in env.records if e.record.TYPE == "GroupMetadata"][-1]
        assert {(m.session_timeout_ms, m.rebalance_timeout_ms) for m in last.members} == {(20_000, 60_000)}

    def test_known_leader_rejoin_then_follower_protocol_change(self, env):
        leader, follower, gen = static_pair(env, protocols=PROTOCOLS)
        rl = env.join(member_id=leader, instance="L", protocols=SUPERSET)
        rf = env.join(member_id=follower, instance="F", protocols=SUPERSET)
        l, f = env.resp(rl), env.resp(rf)
        assert (l.generation_id, instance_ids(l), l.leader) == (gen + 1, {"L", "F"}, leader)
        assert (f.generation_id, f.members, f.leader) == (gen + 1, [], leader)
        t = env.now
        rf2 = env.join(member_id=follower, instance="F", protocols=PROTOCOLS)
        assert env.state() == "PreparingRebalance"
        env.advance_to(t + 10_000)  # the leader (not rejoined) times out first: session 10 s < rebalance 30 s
        r = env.resp(rf2)
        assert (r.generation_id, instance_ids(r), r.leader, r.member_id) == (gen + 2, {"F"}, follower, follower)

    def test_follower_rejoin_with_known_member_id_and_no_protocol_change(self, env):
        leader, follower, gen = static_pair(env)
        r = env.resp(env.join(member_id=follower, instance="F", protocols=SUPERSET))
        assert (r.error_code, r.generation_id, r.members, r.leader, r.member_id) == (0, gen, [], leader, follower)
        assert env.state() == "Stable"

    def test_mismatched_member_ids_are_fenced(self, env):
        leader, follower, gen = static_pair(env)
        assert env.err(env.join(member_id=follower, instance="L", protocols=SUPERSET)) == E.FENCED_INSTANCE_ID
        assert env.err(env.join(member_id=leader, instance="F", protocols=SUPERSET)) == E.FENCED_INSTANCE_ID
        assert env.err(env.sync("g", gen, "invalid", instance="L")) == E.FENCED_INSTANCE_ID
        assert env.err(env.heartbeat("g", gen, leader)) == E.NONE
        assert env.err(env.heartbeat("g", gen, "invalid", instance="L")) == E.FENCED_INSTANCE_ID

    def test_new_static_member_id_after_each_rejoin(self, env):
        leader, follower, gen = static_pair(env)
        last = leader
        for _ in range(5):
            env.advance(1)
            r = env.resp(env.join(instance="L", protocols=SUPERSET))
            assert r.member_id.startswith("L-") and r.member_id != last
            last = r.member_id


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
