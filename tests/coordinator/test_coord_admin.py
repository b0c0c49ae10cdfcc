"""DescribeGroups, ListGroups, DeleteGroups (``GroupMetadataManager.describeGroups / listGroups``,
``GroupCoordinatorShard.deleteGroups``)."""

import pytest

from coord_harness import E, Env, described, sub, two_member_stable


class TestDescribe:
    def test_stable_group_shows_protocol_metadata_and_assignments(self, env):
        ids, leader, gen = env.stable_group(2, protocols=[("range", sub("foo"))])
        d = env.resp(env.describe("g")).groups[0]
        assert (d.error_code, d.group_id, d.group_state, d.protocol_type, d.protocol_data) == \
            (0, "g", "Stable", "consumer", "range")
        assert [(m.member_id, m.client_id, m.client_host, m.member_metadata, m.member_assignment)
                for m in d.members] == [(m, "client", "/127.0.0.1", sub("foo"), m.encode()) for m in ids]

    def test_rebalancing_group_hides_metadata_but_not_assignments(self, env):
        # Kafka 4.x GroupMetadataManagerTest.testDescribeGroupRebalancing: ClassicGroupMember.describeNoMetadata
        # keeps the member's current assignment (the old Scala coordinator blanked it too).
        ids, leader, gen = env.stable_group(2)
        env.join(member_id=leader)
        d = env.resp(env.describe("g")).groups[0]
        assert (d.group_state, d.protocol_data) == ("PreparingRebalance", "")
        assert all(m.member_metadata == b"" and m.member_assignment == m.member_id.encode() for m in d.members)

    def test_unknown_group_is_dead_without_error(self, env):
        d = env.resp(env.describe("nope")).groups[0]
        assert (d.error_code, d.group_state, d.protocol_type, d.members) == (0, "Dead", "", [])

    def test_simple_group(self, env):
        env.commit("simple", -1, "", {("foo", 0): 1})
        d = env.resp(env.describe("simple")).groups[0]
        assert (d.group_state, d.protocol_type) == ("Empty", "")

    def test_wrong_coordinator(self, env):
        from protocol.messages import DescribeGroupsRequest
        wrong = (env.svc.coordinator_of("g") + 1) % 3
        d = env.resp(env.send(DescribeGroupsRequest(groups=["g"]), 5, broker=wrong, group_id="g")).groups[0]
        assert (d.error_code, d.group_state) == (E.NOT_COORDINATOR, "")

    def test_describe_unknown_group(self):
        """testDescribeGroupsBeforeV6GroupIdNotFoundException: NONE, state Dead, empty fields."""
        env = Env()
        d = described(env, "nope")
        assert (E(d.error_code), d.group_state, d.protocol_type, d.protocol_data, d.members) == (
            E.NONE, "Dead", "", "", [])

    def test_describe_stable(self):
        """testDescribeGroupStable: protocol data = protocol name; members with metadata and assignment."""
        env = Env()
        leader, follower, gen = two_member_stable(env)
        d = described(env)
        assert (d.group_state, d.protocol_type, d.protocol_data) == ("Stable", "consumer", "range")
        assert {m.member_id: (m.member_metadata, m.member_assignment) for m in d.members} == {
            leader: (sub("foo"), leader.encode()), follower: (sub("foo"), follower.encode())}

    def test_describe_rebalancing_keeps_assignment(self):
        """testDescribeGroupRebalancing: PreparingRebalance -> protocol data "", members without metadata but
        WITH their current assignment (ClassicGroupMember.describeNoMetadata sets memberAssignment)."""
        env = Env()
        leader, follower, gen = two_member_stable(env)
        env.join(member_id=leader)
        d = described(env)
        assert (d.group_state, d.protocol_type, d.protocol_data) == ("PreparingRebalance", "consumer", "")
        assert {m.member_id: (m.member_metadata, m.member_assignment) for m in d.members} == {
            leader: (b"", leader.encode()), follower: (b"", follower.encode())}

    def test_describe_completing_rebalance_after_stable(self):
        """The assignment is only reset when a rebalance starts FROM CompletingRebalance
        (resetAndPropagateAssignmentWithError); a Stable -> Preparing -> Completing group still shows it."""
        env = Env()
        leader, follower, gen = two_member_stable(env)
        env.join(member_id=leader)
        env.join(member_id=follower)
        d = described(env)
        assert d.group_state == "CompletingRebalance" and d.protocol_data == ""
        assert {m.member_id: m.member_assignment for m in d.members} == {
            leader: leader.encode(), follower: follower.encode()}


def test_describe_unknown_group_v6_is_group_id_not_found():
    """testDescribeGroupsGroupIdNotFoundException (v6+, KIP-1043) vs ...BeforeV6... (NONE). kgroup advertises
    DescribeGroups up to v5; the coordinator already answers v6 the Kafka way."""
    env = Env()
    d = described(env, "nope", version=6)
    assert (E(d.error_code), d.group_state) == (E.GROUP_ID_NOT_FOUND, "Dead")
    assert E(described(env, "nope", version=5).error_code) == E.NONE


class TestList:
    def setup_groups(self, env):
        env.stable_group(1, group_id="a")
        env.join_new(group_id="b")  # PreparingRebalance (initial delay)
        env.commit("c", -1, "", {("foo", 0): 1})  # simple, Empty

    def all_listed(self, env, **kw):
        out = []
        for b in range(3):
            r = env.resp(env.list_groups(b, **kw))
            assert r.error_code == 0
            out += [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in r.groups]
        return sorted(out)

    def test_lists_every_group_once_across_brokers(self, env):
        self.setup_groups(env)
        assert self.all_listed(env) == [("a", "consumer", "Stable", "classic"),
                                        ("b", "consumer", "PreparingRebalance", "classic"),
                                        ("c", "", "Empty", "classic")]

    def test_state_filter_is_case_insensitive(self, env):
        self.setup_groups(env)
        assert [g[0] for g in self.all_listed(env, states=["stable", "EMPTY"])] == ["a", "c"]

    @pytest.mark.parametrize("types,expected", [(["Classic"], ["a", "b", "c"]), (["consumer"], []), ([], ["a", "b", "c"])])
    def test_type_filter(self, env, types, expected):
        self.setup_groups(env)
        assert [g[0] for g in self.all_listed(env, types=types)] == expected

    def test_filters_ignored_before_their_version(self, env):
        self.setup_groups(env)
        assert [g[0] for g in self.all_listed(env, states=["Stable"], version=3)] == ["a", "b", "c"]

    def test_list_groups_filters_case_insensitive(self):
        """GroupMetadataManager.listGroups lower-cases (and trims) the state filters; types via GroupType.parse."""
        env = Env()
        two_member_stable(env)
        b = env.svc.coordinator_of("g")

        def ids(**kw):
            return [g.group_id for g in env.resp(env.list_groups(b, **kw)).groups]

        assert ids(states=["stable"]) == ["g"]
        assert ids(states=["STABLE"]) == ["g"]
        assert ids(states=[" Stable "]) == ["g"]
        assert ids(states=["Empty"]) == []
        assert ids(types=["Classic"]) == ["g"]
        assert ids(types=["consumer"]) == []
        r = env.resp(env.list_groups(b))
        assert [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in r.groups] == [
            ("g", "consumer", "Stable", "classic")]


class TestDeleteGroups:
    def test_empty_group_is_deleted_with_its_offsets(self, env):
        env.commit("g", -1, "", {("foo", 0): 1, ("foo", 1): 2})
        r = env.resp(env.delete_groups("g"))
        assert [(x.group_id, x.error_code) for x in r.results] == [("g", 0)]
        assert env.group("g") is None and env.svc.committed_offsets("g") == {}
        assert env.types()[-3:] == ["OffsetTombstone", "OffsetTombstone", "GroupTombstone"]
        assert env.resp(env.describe("g")).groups[0].group_state == "Dead"

    def test_non_empty_and_unknown(self, env):
        env.stable_group(1)
        r = env.resp(env.delete_groups("g"))
        assert r.results[0].error_code == E.NON_EMPTY_GROUP
        r = env.resp(env.delete_groups("zzz"))
        assert r.results[0].error_code == E.GROUP_ID_NOT_FOUND

    def test_delete_groups(self):
        """testDeleteNonEmptyGroup / testDeleteGroupNonExisting / empty group deleted."""
        env = Env()
        two_member_stable(env)
        env.commit("s", -1, "", {("foo", 0): 1})
        r = env.resp(env.delete_groups("g"))
        assert E(r.results[0].error_code) == E.NON_EMPTY_GROUP
        assert E(env.resp(env.delete_groups("nope")).results[0].error_code) == E.GROUP_ID_NOT_FOUND
        assert E(env.resp(env.delete_groups("s")).results[0].error_code) == E.NONE
        assert described(env, "s").group_state == "Dead"
        assert env.fetched(env.fetch("s", {"foo": [0]})) == {("foo", 0): (-1, -1, "", E.NONE)}


def test_delete_groups_deduplicates_names():
    """KafkaApis.handleDeleteGroupsRequest deletes `groupsNames.distinct`: one result per distinct name."""
    env = Env()
    env.commit("s", -1, "", {("foo", 0): 1})
    r = env.resp(env.delete_groups("s", "s"))
    assert [(x.group_id, E(x.error_code)) for x in r.results] == [("s", E.NONE)]
