"""SyncGroup (``GroupMetadataManager.classicGroupSync``): validation order, followers parked until the leader's
assignment is persisted (members left out get empty bytes), answers in Stable and PreparingRebalance, the KIP-559
protocol type/name checks."""

import pytest

from coord_harness import E, Env, two_member_stable


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

    def test_leader_assignment_is_propagated_and_missing_members_get_empty_bytes(self, env):
        (a, _), (b, _), (c, _) = env.join_new(), env.join_new(), env.join_new()
        env.complete_join()
        sb, sc = env.sync("g", 1, b), env.sync("g", 1, c)
        sa = env.sync("g", 1, a, {a: b"AA", b: b"BB", "stranger": b"SS"})
        assert [(env.resp(x).error_code, env.resp(x).assignment) for x in (sa, sb, sc)] == \
            [(0, b"AA"), (0, b"BB"), (0, b"")]
        r = env.resp(sa)
        assert (r.protocol_type, r.protocol_name) == ("consumer", "range")
        assert env.state() == "Stable"
        assert env.resp(env.sync("g", 1, b)).assignment == b"BB"  # Stable: the stored assignment

    @pytest.mark.parametrize("ptype,pname,version,expected", [
        ("connect", "range", 5, E.INCONSISTENT_GROUP_PROTOCOL), ("consumer", "roundrobin", 5,
                                                                  E.INCONSISTENT_GROUP_PROTOCOL),
        (None, "range", 5, E.INCONSISTENT_GROUP_PROTOCOL),  # v5+: both are mandatory (KafkaApis)
        (None, None, 4, E.NONE), ("consumer", "range", 5, E.NONE)])
    def test_protocol_checks(self, env, ptype, pname, version, expected):
        ids, leader, gen = env.stable_group(1)
        assert env.err(env.sync("g", gen, leader, protocol_type=ptype, protocol_name=pname,
                                version=version)) == expected

    def test_member_leaving_during_completing_rebalance_fails_parked_syncs(self, env):
        (a, _), (b, _), (c, _) = env.join_new(), env.join_new(), env.join_new()
        env.complete_join()
        sb = env.sync("g", 1, b)
        env.leave("g", [(c, None)])
        assert env.err(sb) == E.REBALANCE_IN_PROGRESS
        assert all(m.assignment == b"" for m in env.group().members.values())
