"""The six timers: initial delayed join (+ extension), rebalance (join) timeout, session timeout, new-member join
timeout, pending-member timeout, pending-sync timeout (KAFKA-12890). Expected times are derived from Kafka's
rules (GroupMetadataManager.prepareRebalance / tryCompleteInitialRebalanceElseSchedule / completeClassicGroupJoin /
expireClassicGroupMemberHeartbeat / expirePendingSync)."""

from coord_harness import E, Env


def completed_at(env: Env, rid: int, limit: int = 1_000_000) -> int:
    """Advance 1 ms at a time near deadlines until ``rid`` is answered; return the time."""
    while env.resp(rid) is None:
        d = env.svc.next_deadline()
        assert d is not None and d <= limit, "no progress"
        env.advance_to(max(d, env.now))
    return env.now


class TestInitialDelay:
    def test_single_member_waits_exactly_the_delay(self, env):
        _, rid = env.join_new(rebalance=300_000)
        assert env.timers()[f"initial-g"] == 3000
        env.advance(2999)
        assert env.resp(rid) is None and env.state() == "PreparingRebalance"  # never completes early
        env.advance(1)
        assert env.err(rid) == E.NONE and env.state() == "CompletingRebalance"

    def test_rebalance_timeout_shorter_than_delay_still_waits_the_delay(self, env):
        _, r1 = env.join_new(rebalance=2000)
        env.advance(1000)
        env.join_new(rebalance=2000)  # a new member: but remaining = max(2000 - 3000, 0) = 0, no extension
        assert completed_at(env, r1) == 3000

    def test_each_window_with_a_new_member_adds_another_delay(self, env):
        _, r1 = env.join_new(rebalance=300_000)
        env.advance_to(1000)
        env.join_new(rebalance=300_000)
        env.advance_to(5000)
        env.join_new(rebalance=300_000)
        # 3000: m2 arrived -> extend to 6000; 6000: m3 arrived -> extend to 9000; 9000: nobody new -> complete
        assert completed_at(env, r1) == 9000
        assert len(env.group().members) == 3
        assert env.types().count("InitialRebalanceExtended") == 2

    def test_extension_is_capped_by_the_first_joiners_rebalance_timeout(self, env):
        _, r1 = env.join_new(rebalance=7000)  # delay 3000, remaining 4000
        env.advance_to(1000)
        env.join_new(rebalance=7000)
        env.advance_to(5000)
        env.join_new(rebalance=7000)  # at 6000: delay min(3000, 1000) = 1000, remaining 0
        env.advance_to(6500)
        env.join_new(rebalance=7000)
        assert completed_at(env, r1) == 7000  # first join + rebalance timeout
        assert len(env.group().members) == 4

    def test_pending_member_expiry_completes_the_initial_join_early(self):
        # New coordinator: removing a pending member when everyone else joined completes the join at once,
        # even while the initial delay runs (removePendingMemberAndUpdateClassicGroup).
        env = Env(**{"group.initial.rebalance.delay.ms": 60_000})
        _, r1 = env.join_new(rebalance=300_000)
        env.join(session=10_000)  # gets MEMBER_ID_REQUIRED, never rejoins
        assert completed_at(env, r1) == 10_000

    def test_pending_member_leave_does_not_complete_the_initial_join(self):
        env = Env(**{"group.initial.rebalance.delay.ms": 60_000})
        _, r1 = env.join_new(rebalance=300_000)
        pending = env.resp(env.join()).member_id
        env.leave("g", [(pending, None)])
        assert env.state() == "PreparingRebalance"
        assert completed_at(env, r1) == 60_000


class TestRebalanceTimeout:
    def test_join_timer_uses_the_largest_rebalance_timeout(self, env):
        ids, leader, gen = env.stable_group(2, session=60_000, rebalance=20_000)
        t0 = env.now
        env.join(member_id=leader, session=60_000, rebalance=40_000)
        assert env.timers()["join-g"] == t0 + 40_000

    def test_non_rejoined_static_members_stay_and_timer_is_rearmed_when_nobody_rejoined(self):
        env = Env()
        r = [env.join(instance=f"i{k}", session=60_000, rebalance=20_000) for k in range(2)]
        env.complete_join()
        a, b = env.resp(r[0]).member_id, env.resp(r[1]).member_id
        env.sync("g", 1, a, {a: b"A", b: b"B"}, instance="i0")
        env.sync("g", 1, b, instance="i1")
        # a third static member joins: rebalance; nobody else rejoins before the rebalance timeout
        t0 = env.now
        c_rid = env.join(instance="i2", session=60_000, rebalance=20_000)
        env.advance_to(t0 + 20_000)
        # c joined, a and b (static) did not rejoin but stay; c is elected leader since the leader did not rejoin
        rc = env.resp(c_rid)
        assert rc.error_code == 0 and rc.leader == rc.member_id
        assert [m.member_id for m in rc.members] == [a, b, rc.member_id]
        assert env.group().generation_id == 2

    def test_static_only_group_with_nobody_rejoined_waits_another_timeout(self):
        env = Env()
        r = env.join(instance="i0", session=60_000, rebalance=20_000)
        env.complete_join()
        a = env.resp(r).member_id
        env.sync("g", 1, a, {a: b"A"}, instance="i0")
        # a LeaveGroup-free way to force a rebalance with nobody awaiting join: a pending-sync-free group whose
        # static leader's metadata changes via a second static member that then leaves before completion
        rid = env.join(instance="i1", session=60_000, rebalance=20_000)
        b = next(m for m in env.group().members if m != a)
        env.leave("g", [("", "i1")])  # b leaves by instance id (admin removal); a never rejoined
        assert env.resp(rid).error_code == E.UNKNOWN_MEMBER_ID
        t0 = env.now
        env.advance(20_000)
        # join timer fired: no member awaiting join, static a remains -> stays PreparingRebalance, re-armed
        assert env.state() == "PreparingRebalance" and env.timers()["join-g"] == t0 + 40_000
        assert b not in env.group().members


class TestSessionTimeout:
    def test_member_without_heartbeats_is_removed_after_its_session_timeout(self, env):
        ids, leader, gen = env.stable_group(2, session=10_000)
        follower = [m for m in ids if m != leader][0]
        t_sync = env.now  # SyncGroup propagation/join completion armed the timers
        env.advance(5000)
        env.heartbeat("g", gen, leader)
        env.advance_to(t_sync + 9_999)
        assert env.state() == "Stable"
        env.advance_to(t_sync + 10_000)
        assert follower not in env.group().members and env.state() == "PreparingRebalance"
        assert any(e.record.TYPE == "MemberRemoved" and "heartbeat expiration" in e.record.reason
                   for e in env.records)

    def test_heartbeat_moves_the_deadline(self, env):
        ids, leader, gen = env.stable_group(1, session=10_000)
        for _ in range(5):
            env.advance(9_000)
            assert env.err(env.heartbeat("g", gen, leader)) == E.NONE
        assert env.timers()[f"heartbeat-g-{leader}"] == env.now + 10_000

    def test_offset_commit_keeps_the_session_alive_in_stable(self, env):
        ids, leader, gen = env.stable_group(1, session=10_000)
        env.advance(9_000)
        env.commit("g", gen, leader, {("foo", 0): 1})
        env.advance(9_000)
        assert env.state() == "Stable"

    def test_member_awaiting_join_is_not_expired(self, env):
        ids, leader, gen = env.stable_group(2, session=10_000, rebalance=60_000)
        follower = [m for m in ids if m != leader][0]
        env.join(member_id=leader, session=10_000, rebalance=60_000)  # leader parked (awaiting join)
        for _ in range(4):  # follower keeps heartbeating (REBALANCE_IN_PROGRESS resets the session)
            env.advance(8_000)
            assert env.err(env.heartbeat("g", gen, follower)) == E.REBALANCE_IN_PROGRESS
        assert leader in env.group().members  # its session (10 s) passed long ago, but it awaits the join

    def test_new_member_join_times_out_after_five_minutes(self):
        env = Env()
        ids, leader, gen = env.stable_group(1, session=10_000, rebalance=600_000)
        _, rid = env.join_new(session=10_000, rebalance=600_000)
        t0 = env.now
        while env.now < t0 + 300_000:
            env.advance(min(8_000, t0 + 300_000 - env.now))
            if env.now < t0 + 300_000:
                assert env.resp(rid) is None
                env.heartbeat("g", gen, leader)
        r = env.resp(rid)
        assert (r.error_code, r.member_id) == (E.UNKNOWN_MEMBER_ID, "")
        assert len(env.group().members) == 1


class TestPendingMember:
    def test_pending_member_blocks_completion_until_it_expires(self, env):
        ids, leader, gen = env.stable_group(2, session=30_000)
        t0 = env.now
        env.join(session=12_000)  # MEMBER_ID_REQUIRED: pending, no rebalance by itself
        assert env.state() == "Stable"
        rids = [env.join(member_id=m, session=30_000) for m in ids]
        assert env.state() == "PreparingRebalance"  # all members joined but one id is pending
        env.advance_to(t0 + 11_999)
        assert env.state() == "PreparingRebalance"
        env.advance_to(t0 + 12_000)
        assert env.state() == "CompletingRebalance" and env.err(rids[0]) == E.NONE

    def test_pending_member_rejoining_cancels_its_timer(self, env):
        mid = env.resp(env.join()).member_id
        assert f"pending-g-{mid}" in env.timers()
        env.join(member_id=mid)
        assert f"pending-g-{mid}" not in env.timers()
        assert env.timers()[f"heartbeat-g-{mid}"] == 300_000  # new-member join timeout


class TestPendingSync:
    def test_follower_that_never_syncs_is_removed_even_after_stable(self, env):
        (a, ra), (b, rb) = env.join_new(rebalance=20_000, session=60_000), env.join_new(rebalance=20_000,
                                                                                      session=60_000)
        env.complete_join()
        t0 = env.now
        assert env.timers()["sync-g"] == t0 + 20_000
        env.sync("g", 1, a, {a: b"x", b: b"y"})
        assert env.state() == "Stable"
        env.advance_to(t0 + 20_000)
        assert list(env.group().members) == [a] and env.state() == "PreparingRebalance"

    def test_all_synced_cancels_the_timer(self, env):
        ids, leader, gen = env.stable_group(2)
        assert "sync-g" not in env.timers()

    def test_leader_that_never_syncs_fails_parked_follower_syncs(self, env):
        (a, _), (b, _) = env.join_new(rebalance=20_000, session=60_000), env.join_new(rebalance=20_000,
                                                                                     session=60_000)
        env.complete_join()
        s = env.sync("g", 1, b)
        env.advance(20_000)
        assert env.err(s) == E.REBALANCE_IN_PROGRESS
        assert list(env.group().members) == [b] and env.state() == "PreparingRebalance"

    def test_old_generation_timer_is_ignored(self, env):
        ids, leader, gen = env.stable_group(2, rebalance=20_000, session=60_000)
        # a new rebalance cancels the pending-sync timer of the previous generation
        env.join(member_id=leader, rebalance=20_000, session=60_000)
        assert "sync-g" not in env.timers()
