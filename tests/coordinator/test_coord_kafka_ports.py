"""Cases ported from Kafka's GroupCoordinatorTest / GroupMetadataManagerTest (classic groups), re-expressed with
kgroup's harness and explicit times. The scenario and the expected outcome are Kafka's; where Kafka's test relies
on its constants (session/rebalance timeouts, max size) the numbers are chosen here and the expectation derived
with Kafka's rules."""

import pytest

from coord_harness import E, Env

PROTOCOLS = [("range", b"m")]
SUPERSET = [("range", b"m"), ("roundrobin", b"m")]


def static_pair(env, session=10_000, rebalance=30_000, protocols=SUPERSET):
    """staticMembersJoinAndRebalance: leader 'L' and follower 'F' join, complete, sync. -> (leader, follower, gen)"""
    rl = env.join(instance="L", protocols=protocols, session=session, rebalance=rebalance)
    rf = env.join(instance="F", protocols=protocols, session=session, rebalance=rebalance)
    env.complete_join()
    leader, follower = env.resp(rl).member_id, env.resp(rf).member_id
    gen = env.resp(rl).generation_id
    assert env.resp(rl).leader == leader
    env.sync("g", gen, leader, {leader: b"LA", follower: b"FA"}, instance="L")
    assert env.err(env.sync("g", gen, follower, instance="F")) == E.NONE
    return leader, follower, gen


def instance_ids(resp):
    return {m.group_instance_id for m in resp.members}


class TestMaxSize:
    MAX = 4

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


class TestNewMembers:
    NEW_MEMBER_TIMEOUT = 300_000

    def test_new_member_timeout_does_not_apply_after_the_join_completes(self, env):
        session = self.NEW_MEMBER_TIMEOUT + 5000
        mid, rid = env.join_new(session=session)
        env.complete_join()
        t = env.now
        assert env.err(rid) == E.NONE and not any(m.is_new for m in env.group().members.values())
        env.sync("g", 1, mid, {mid: b""})
        env.advance_to(t + self.NEW_MEMBER_TIMEOUT + 100)
        assert len(env.group().members) == 1
        env.advance_to(t + session)
        assert len(env.group().members) == 0

    def test_new_member_join_expiration_during_a_protracted_rebalance(self, env):
        session, rebalance = self.NEW_MEMBER_TIMEOUT + 5000, self.NEW_MEMBER_TIMEOUT * 2
        first, r1 = env.join_new(session=session, rebalance=rebalance)
        env.complete_join()
        assert env.resp(r1).leader == first
        env.sync("g", 1, first, {first: b""})
        _, r2 = env.join_new(session=session, rebalance=rebalance)
        assert sum(m.is_new for m in env.group().members.values()) == 1
        env.advance(self.NEW_MEMBER_TIMEOUT - 1)
        assert env.resp(r2) is None
        env.advance(1)
        assert env.err(r2) == E.UNKNOWN_MEMBER_ID
        assert list(env.group().members) == [first]

    @pytest.mark.parametrize("after", ["join", "sync"])
    def test_new_member_failure_after_completion_follows_session_expiry(self, env, after):
        first, _ = env.join_new()
        env.complete_join()
        env.sync("g", 1, first, {first: b""})
        other_pending = env.resp(env.join()).member_id
        other = env.join(member_id=other_pending)
        mine = env.join(member_id=first)
        assert env.err(mine) == E.NONE and env.err(other) == E.NONE
        if after == "sync":
            env.sync("g", 2, other_pending)
            env.sync("g", 2, first, {first: b"", other_pending: b""})
        env.advance(10_000)  # default session timeout in the harness
        assert (env.state(), len(env.group().members)) == ("Empty", 0)


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
