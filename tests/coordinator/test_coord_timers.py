"""The join-phase timers: the initial delayed join and its extensions, the rebalance (join) timeout, the
pending-member timeout (KIP-394) and the pending-sync timeout (KAFKA-12890). Expected times are derived from
Kafka's rules (``prepareRebalance``, ``tryCompleteInitialRebalanceElseSchedule``, ``completeClassicGroupJoin``,
``expirePendingSync``). Session timeouts: test_coord_heartbeat_session.py; the timer queue: test_coord_timer_queue.py."""

from coord_harness import E, Env, two_member_stable


def completed_at(env: Env, rid: int, limit: int = 1_000_000) -> int:
    """Advance 1 ms at a time near deadlines until ``rid`` is answered; return the time."""
    while env.resp(rid) is None:
        d = env.svc.next_deadline()
        assert d is not None and d <= limit, "no progress"
        env.advance_to(max(d, env.now))
    return env.now


def three_members_heartbeating_halfway() -> tuple[Env, int, list[str], str, list[str]]:
    """Kafka's pending-sync cases: three members (rebalance and session 5000) complete a join phase at t0 and all
    heartbeat at t0 + 2500; nobody has synced. -> (env, t0, member ids, leader, followers)."""
    env = Env(**{"group.min.session.timeout.ms": 1_000})  # Kafka test context bounds
    ids, leader, gen = env.join_together(3, rebalance=5_000, session=5_000)
    assert gen == 1
    t0 = env.now
    env.advance_to(t0 + 2_500)
    for m in ids:
        assert env.err(env.heartbeat("g", 1, m)) == E.NONE
    return env, t0, ids, leader, [m for m in ids if m != leader]


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

    def test_members_that_do_not_rejoin_are_removed_at_the_rebalance_timeout(self, env):
        ids, leader, gen = env.stable_group(3, session=25_000, rebalance=20_000)
        t0 = env.now
        env.join(member_id=leader, session=25_000, rebalance=20_000)
        env.advance(19_999)
        assert env.state() == "PreparingRebalance"
        env.advance(1)
        g = env.group()
        assert list(g.members) == [leader] and g.generation_id == gen + 1 and env.now == t0 + 20_000

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

    def test_pending_member_expires_after_its_session_timeout(self):
        """The MEMBER_ID_REQUIRED id is timed out by the heartbeat key with the request's session timeout."""
        env = Env()
        pending = env.resp(env.join(session=7_000)).member_id
        env.advance_to(6_999)
        assert env.group().is_pending_member(pending)
        env.advance_to(7_000)
        assert not env.group().is_pending_member(pending)

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

    def test_pending_sync_expiry_kicks_the_leader(self):
        """testRebalanceTimesOutWhenSyncRequestIsNotReceivedFromLeaders."""
        env, t0, ids, leader, followers = three_members_heartbeating_halfway()
        srids = [env.sync("g", 1, f) for f in followers]
        assert all(env.resp(s) is None for s in srids)
        env.advance_to(t0 + 5_000)
        assert [env.err(s) for s in srids] == [E.REBALANCE_IN_PROGRESS] * 2
        assert env.err(env.heartbeat("g", 1, leader)) == E.UNKNOWN_MEMBER_ID
        assert [env.err(env.heartbeat("g", 1, f)) for f in followers] == [E.REBALANCE_IN_PROGRESS] * 2
        assert env.state() == "PreparingRebalance"

    def test_pending_sync_expiry_with_nobody_synced_empties_the_group(self):
        """testRebalanceTimesOutWhenSyncRequestIsNotReceived: all members removed -> Empty (generation 2)."""
        env, t0, ids, leader, followers = three_members_heartbeating_halfway()
        env.advance_to(t0 + 5_000)
        assert [env.err(env.heartbeat("g", 1, m)) for m in ids] == [E.UNKNOWN_MEMBER_ID] * 3
        assert env.state() == "Empty" and env.group().generation_id == 2


def test_pending_sync_expiry_kicks_followers():
    """testRebalanceTimesOutWhenSyncRequestIsNotReceivedFromFollowers: the leader synced (Stable), the followers
    never did -> removed at the pending-sync deadline; the group rebalances."""
    env, t0, ids, leader, followers = three_members_heartbeating_halfway()
    assert env.err(env.sync("g", 1, leader)) == E.NONE and env.state() == "Stable"
    assert env.err(env.heartbeat("g", 1, leader)) == E.NONE
    env.advance_to(t0 + 5_000)
    assert env.err(env.heartbeat("g", 1, leader)) == E.REBALANCE_IN_PROGRESS
    assert [env.err(env.heartbeat("g", 1, f)) for f in followers] == [E.UNKNOWN_MEMBER_ID] * 2
    assert env.state() == "PreparingRebalance"
