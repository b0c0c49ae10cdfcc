"""DescribeGroups, ListGroups, DeleteGroups, OffsetDelete."""

import pytest

from coord_harness import E, sub


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


class TestOffsetDelete:
    def test_unknown_group(self, env):
        assert env.err(env.offset_delete("nope", {"foo": [0]})) == E.GROUP_ID_NOT_FOUND

    def test_empty_group_group_id(self, env):
        assert env.err(env.offset_delete("", {"foo": [0]})) == E.INVALID_GROUP_ID

    def test_empty_group_deletes(self, env):
        env.commit("g", -1, "", {("foo", 0): 1, ("bar", 0): 2})
        r = env.resp(env.offset_delete("g", {"foo": [0, 1]}))
        assert r.error_code == 0
        assert [(p.partition_index, p.error_code) for p in r.topics[0].partitions] == [(0, 0), (1, 0)]
        assert set(env.svc.committed_offsets("g")) == {("bar", 0)}

    def test_consumer_group_cannot_delete_subscribed_topics(self, env):
        ids, leader, gen = env.stable_group(1, protocols=[("range", sub("foo"))])
        env.commit("g", gen, leader, {("foo", 0): 1, ("bar", 0): 2})
        r = env.resp(env.offset_delete("g", {"foo": [0], "bar": [0]}))
        assert r.error_code == 0
        assert {t.name: [p.error_code for p in t.partitions] for t in r.topics} == \
            {"foo": [E.GROUP_SUBSCRIBED_TO_TOPIC], "bar": [0]}
        assert set(env.svc.committed_offsets("g")) == {("foo", 0)}

    def test_unknown_topics_are_answered_by_the_broker(self, env):
        env.commit("g", -1, "", {("foo", 0): 1})
        r = env.resp(env.offset_delete("g", {"foo": [0, 9], "nosuch": [0]}))
        assert r.error_code == 0
        assert {(t.name, p.partition_index): p.error_code for t in r.topics for p in t.partitions} == {
            ("foo", 0): 0, ("foo", 9): E.UNKNOWN_TOPIC_OR_PARTITION, ("nosuch", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
        # A top-level error from the coordinator replaces the API layer's partial answer
        # (OffsetDeleteResponse.Builder.merge: "If the top-level error exists, we can discard it").
        r = env.resp(env.offset_delete("nope", {"foo": [0], "nosuch": [0]}))
        assert r.error_code == E.GROUP_ID_NOT_FOUND and r.topics == []

    def test_non_consumer_group_with_members(self, env):
        ids, leader, gen = env.stable_group(1, protocol_type="connect", protocols=[("default", b"x")])
        assert env.err(env.offset_delete("g", {"foo": [0]})) == E.NON_EMPTY_GROUP
