"""Heartbeat and session timeouts: heartbeat answers (``classicGroupHeartbeat``), session expiry
(``expireClassicGroupMemberHeartbeat``, ``hasSatisfiedHeartbeat``), what keeps a session alive (heartbeats, offset
commits in Stable/PreparingRebalance) and the 5-minute join timeout of a new member (KAFKA-9232)."""

import pytest

from coord_harness import E, Env, two_member_stable


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

    def test_session_timeout_of_follower_that_never_syncs(self):
        """A follower that neither syncs nor heartbeats after the join phase is removed at its session timeout
        (hasSatisfiedHeartbeat false: not awaiting join/sync; session 10000 < pending-sync 30000) ->
        Stable -> PreparingRebalance."""
        env = Env()
        ids, leader, gen = env.join_together(2, session=10_000)
        follower = next(m for m in ids if m != leader)
        t0 = env.now
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
        ids, leader, gen = env.join_together(2, session=10_000)
        follower = next(m for m in ids if m != leader)
        t0 = env.now
        frid = env.sync("g", gen, follower)  # parked: satisfied heartbeat while awaiting sync
        env.advance_to(t0 + 10_000)
        # the leader neither syncs nor heartbeats -> removed; parked follower sync -> REBALANCE_IN_PROGRESS
        assert not env.group().has_member(leader)
        assert env.err(frid) == E.REBALANCE_IN_PROGRESS
        assert env.state() == "PreparingRebalance"


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


class TestNewMembers:
    NEW_MEMBER_TIMEOUT = 300_000  # Kafka's CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS

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


class TestExpireSessions:
    """``GroupCoordinatorService.expire_sessions``: fault control's "this member stopped heartbeating", as Kafka's
    ``onExpireHeartbeat`` -- the member's session timer fires now, with the session-expiry rules."""

    def test_expiring_a_follower_in_stable_removes_it_and_rebalances(self, env):
        leader, follower, gen = two_member_stable(env)
        env._collect(env.svc.expire_sessions("g", [follower], env.now))
        assert list(env.group().members) == [leader] and env.state() == "PreparingRebalance"
        assert env.types()[-2:] == ["MemberRemoved", "RebalanceStarted"]
        assert env.err(env.heartbeat("g", gen, follower)) == E.UNKNOWN_MEMBER_ID

    def test_a_member_awaiting_its_join_answer_is_spared(self, env):
        # hasSatisfiedHeartbeat: not new and awaiting join -> the expiry has no effect
        leader, follower, gen = two_member_stable(env)
        env.join(member_id=leader)
        env._collect(env.svc.expire_sessions("g", [leader], env.now))
        assert set(env.group().members) == {leader, follower}

    def test_a_group_whose_coordinator_is_still_loading_is_refused(self):
        env = Env(**{"kgroup.coordinator.load.time.ms": 5_000})
        leader, follower, gen = two_member_stable(env)
        env.stop_broker(env.svc.coordinator_of("g"))  # the new leader loads the partition for 5 s
        with pytest.raises(ValueError, match="not loaded"):
            env.svc.expire_sessions("g", [follower], env.now)
