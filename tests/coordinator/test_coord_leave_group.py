"""LeaveGroup (``GroupMetadataManager.classicGroupLeave``): v0-2 one member and one error, v3+ batches
(KIP-345), pending members, leadership handed over, the last member leaving empties the group."""

import pytest

from coord_harness import E, Env, two_member_stable


def test_leader_leaving_hands_leadership_to_a_remaining_member(env):
    ids, leader, gen = env.stable_group(3)
    env.leave("g", [(leader, None)])
    g = env.group()
    assert g.leader_id in ids and g.leader_id != leader


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

    def test_v0_to_v2_single_member_and_error(self, env):
        ids, leader, gen = env.stable_group(1)
        assert env.err(env.leave("g", [("zzz", None)], version=1)) == E.UNKNOWN_MEMBER_ID
        assert env.err(env.leave("g", [(leader, None)], version=2)) == E.NONE

    def test_last_member_leaving_empties_the_group_and_bumps_generation(self, env):
        ids, leader, gen = env.stable_group(1)
        env.leave("g", [(leader, None)])
        g = env.group()
        assert (str(g.state), g.generation_id, g.protocol_name, g.leader_id) == ("Empty", gen + 1, None, None)
        last = env.records[-1].record
        assert (last.TYPE, last.generation_id, last.members) == ("GroupMetadata", gen + 1, ())

    def test_leaving_pending_member(self, env):
        pending = env.resp(env.join()).member_id
        r = env.resp(env.leave("g", [(pending, None)]))
        assert r.members[0].error_code == 0 and not env.group().pending_members

    def test_leave_of_new_member_answers_its_parked_join(self, env):
        mid, rid = env.join_new()
        env.leave("g", [(mid, None)])
        r = env.resp(rid)
        assert (r.error_code, r.member_id) == (E.UNKNOWN_MEMBER_ID, "")

    def test_unknown_group(self, env):
        r = env.resp(env.leave("nope", [("m", None)]))
        assert r.error_code == 0 and r.members[0].error_code == E.UNKNOWN_MEMBER_ID

    def test_empty_group_id(self, env):
        assert env.err(env.leave("", [("m", None)])) == E.INVALID_GROUP_ID
