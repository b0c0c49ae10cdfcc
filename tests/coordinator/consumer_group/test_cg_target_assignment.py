"""Kafka 4.4's ``TargetAssignmentBuilderTest`` (all 5), ``UpdatedMembersAndTargetAssignmentViewTest`` (all 9) and
``OverlayMapTest`` (14 of 15; ``testClear``: no ``clear`` here), ported with Kafka's expected values; plus how
``compute_target_assignment`` hands a group to the assignor.

Kafka's tests mock the ``PartitionAssignor``: it returns prepared member assignments and the test verifies the
``GroupSpec`` it was called with. ``FakeAssignor`` does both.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from coordinator import records as R
from coordinator.consumer_group import (Assignment, ConsumerGroup, ConsumerGroupMember, ResolvedRegularExpression,
                                        SubscriptionType, target_assignment_record)
from coordinator.target_assignment import (OverlayMap, UpdatedMembersView, build_target_assignment,
                                           compute_target_assignment)

from cg_helpers import member, mk_assignment, tid, update_member, update_target_assignment


class FakeAssignor:
    """A mocked ``PartitionAssignor``: answers ``prepared`` and remembers what it was given."""

    def __init__(self, prepared: dict[str, dict[str, set[int]]]) -> None:
        self.prepared = prepared
        self.calls: list[tuple[dict, dict, str]] = []

    def __call__(self, members, topics, *, subscription_type):
        self.calls.append((members, topics, subscription_type))
        return {m: {t: sorted(ps) for t, ps in a.items()} for m, a in self.prepared.items()}


class Context:
    """``TargetAssignmentBuilderTestContext``."""

    def __init__(self, group_id: str, group_epoch: int, assignment_timestamp_ms: int) -> None:
        self.group_id, self.group_epoch, self.now_ms = group_id, group_epoch, assignment_timestamp_ms
        self.members: dict[str, ConsumerGroupMember] = {}
        self.target: dict[str, Assignment] = {}
        self.prepared: dict[str, dict[str, set[int]]] = {}
        self.resolved: dict[str, ResolvedRegularExpression] = {}
        self.topics: dict[str, dict] = {}

    def add_group_member(self, member_id, subscriptions, target, regex=""):
        self.members[member_id] = member(member_id, subscribed_topic_names=subscriptions,
                                         subscribed_topic_regex=regex)
        self.target[member_id] = Assignment.of(target)

    def add_topic_metadata(self, name: str, partitions: int) -> str:
        self.topics[tid(name)] = {"name": name, "partitions": partitions}
        return tid(name)

    def build(self):
        assignor = FakeAssignor(self.prepared)
        result = build_target_assignment(self.group_id, self.group_epoch, members=self.members,
                                         target_assignment=self.target,
                                         subscription_type=SubscriptionType.HOMOGENEOUS, topics=self.topics,
                                         resolved_regular_expressions=self.resolved, assignor=assignor,
                                         now_ms=self.now_ms)
        # verify(assignor).assign(groupSpec, subscribedTopicDescriber): once, with each member's subscribed topic
        # ids (names in the image; regex topics added), its current target, and the image's topics.
        [(specs, topics, subscription_type)] = assignor.calls
        assert topics == self.topics and subscription_type == "homogeneous"
        ids_by_name = {meta["name"]: t for t, meta in self.topics.items()}
        for mid, m in self.members.items():
            names = set(m.subscribed_topic_names)
            if m.subscribed_topic_regex and m.subscribed_topic_regex in self.resolved:
                names |= self.resolved[m.subscribed_topic_regex].topics
            spec = specs[mid]
            assert set(spec["subscribed_topic_ids"]) == {ids_by_name[n] for n in names if n in ids_by_name}
            assert spec["subscription_size"] == len(names)
            assert {t: set(ps) for t, ps in spec["current"].items()} == self.target[mid].as_sets()
            assert (spec["instance_id"], spec["rack_id"]) == (m.instance_id, m.rack_id)
        assert list(specs) == list(self.members)
        return result


def _target_record(member_id, assignment):
    return target_assignment_record("my-group", member_id, {t: sorted(ps) for t, ps in assignment.items()})


def _assert_unordered_then_metadata(records, expected_members, epoch=20, ts=12345):
    *member_records, metadata = records
    assert sorted(map(repr, member_records)) == sorted(map(repr, expected_members))
    assert metadata == R.ConsumerGroupTargetAssignmentMetadata("my-group", assignment_epoch=epoch,
                                                               assignment_timestamp_ms=ts)


def _as_sets(target):
    return {m: a.as_sets() for m, a in target.items()}


def test_testEmpty():
    result = Context("my-group", 20, 12345).build()
    assert result.records == [R.ConsumerGroupTargetAssignmentMetadata("my-group", assignment_epoch=20,
                                                                      assignment_timestamp_ms=12345)]
    assert result.target_assignment == {}


def _two_members_of_foo_and_bar():
    c = Context("my-group", 20, 12345)
    foo, bar = c.add_topic_metadata("foo", 6), c.add_topic_metadata("bar", 6)
    c.add_group_member("member-1", ["foo", "bar", "zar"], mk_assignment((foo, 1, 2, 3), (bar, 1, 2, 3)))
    c.add_group_member("member-2", ["foo", "bar", "zar"], mk_assignment((foo, 4, 5, 6), (bar, 4, 5, 6)))
    return c, foo, bar


def test_testAssignmentHasNotChanged():
    c, foo, bar = _two_members_of_foo_and_bar()
    c.prepared = {"member-1": mk_assignment((foo, 1, 2, 3), (bar, 1, 2, 3)),
                  "member-2": mk_assignment((foo, 4, 5, 6), (bar, 4, 5, 6))}
    result = c.build()
    _assert_unordered_then_metadata(result.records, [])
    assert _as_sets(result.target_assignment) == {
        "member-1": {foo: {1, 2, 3}, bar: {1, 2, 3}}, "member-2": {foo: {4, 5, 6}, bar: {4, 5, 6}}}


def test_testAssignmentSwapped():
    c, foo, bar = _two_members_of_foo_and_bar()
    c.prepared = {"member-2": mk_assignment((foo, 1, 2, 3), (bar, 1, 2, 3)),
                  "member-1": mk_assignment((foo, 4, 5, 6), (bar, 4, 5, 6))}
    result = c.build()
    _assert_unordered_then_metadata(result.records, [
        _target_record("member-1", mk_assignment((foo, 4, 5, 6), (bar, 4, 5, 6))),
        _target_record("member-2", mk_assignment((foo, 1, 2, 3), (bar, 1, 2, 3)))])
    assert _as_sets(result.target_assignment) == {
        "member-2": {foo: {1, 2, 3}, bar: {1, 2, 3}}, "member-1": {foo: {4, 5, 6}, bar: {4, 5, 6}}}


def test_testPartialAssignmentUpdate():
    c = Context("my-group", 20, 12345)
    foo, bar = c.add_topic_metadata("foo", 6), c.add_topic_metadata("bar", 6)
    c.add_group_member("member-1", ["foo", "bar", "zar"], mk_assignment((foo, 1, 2), (bar, 1, 2)))
    c.add_group_member("member-2", ["foo", "bar", "zar"], mk_assignment((foo, 3, 4), (bar, 3, 4)))
    c.add_group_member("member-3", ["bar", "zar"], mk_assignment((foo, 5, 6), (bar, 5, 6)))
    c.prepared = {"member-1": mk_assignment((foo, 1, 2), (bar, 1, 2)),
                  "member-2": mk_assignment((foo, 3, 4, 5), (bar, 3, 4, 5)),
                  "member-3": mk_assignment((foo, 6), (bar, 6))}
    result = c.build()
    _assert_unordered_then_metadata(result.records, [  # member-1 has no record: its assignment did not change
        _target_record("member-2", mk_assignment((foo, 3, 4, 5), (bar, 3, 4, 5))),
        _target_record("member-3", mk_assignment((foo, 6), (bar, 6)))])
    assert _as_sets(result.target_assignment) == {
        "member-1": {foo: {1, 2}, bar: {1, 2}}, "member-2": {foo: {3, 4, 5}, bar: {3, 4, 5}},
        "member-3": {foo: {6}, bar: {6}}}


def test_testRegularExpressions():
    c = Context("my-group", 20, 12345)
    foo, bar = c.add_topic_metadata("foo", 6), c.add_topic_metadata("bar", 6)
    c.add_group_member("member-1", ["bar", "zar"], mk_assignment(), regex="foo*")
    c.add_group_member("member-2", ["foo", "bar", "zar"], mk_assignment())
    c.add_group_member("member-3", [], mk_assignment(), regex="foo*")
    c.resolved["foo*"] = ResolvedRegularExpression(frozenset({"foo"}), 10, 12345)
    c.prepared = {"member-1": mk_assignment((foo, 1, 2), (bar, 1, 2, 3)),
                  "member-2": mk_assignment((foo, 3, 4), (bar, 4, 5, 6)),
                  "member-3": mk_assignment((foo, 5, 6))}
    result = c.build()
    _assert_unordered_then_metadata(result.records, [
        _target_record("member-1", mk_assignment((foo, 1, 2), (bar, 1, 2, 3))),
        _target_record("member-2", mk_assignment((foo, 3, 4), (bar, 4, 5, 6))),
        _target_record("member-3", mk_assignment((foo, 5, 6)))])
    assert _as_sets(result.target_assignment) == {
        "member-1": {foo: {1, 2}, bar: {1, 2, 3}}, "member-2": {foo: {3, 4}, bar: {4, 5, 6}},
        "member-3": {foo: {5, 6}}}


# --- UpdatedMembersAndTargetAssignmentViewTest -------------------------------------------------------------------

@dataclass(frozen=True)
class M:
    name: str
    instance_id: str | None


def _view() -> UpdatedMembersView:
    return UpdatedMembersView({"member-1": M("Member1", None), "member-2": M("Member2", "instance-id")},
                              {"instance-id": "member-2"},
                              {"member-1": "Assignment-member-1", "member-2": "Assignment-member-2"})


def _state(view):
    return dict(view.members), dict(view.static_members), dict(view.target_assignment)


BASE_TARGET = {"member-1": "Assignment-member-1", "member-2": "Assignment-member-2"}
VIEW_CASES = {
    "testAddMember": (("add", "member-3", M("Member3", None)), (
        {"member-1": M("Member1", None), "member-2": M("Member2", "instance-id"), "member-3": M("Member3", None)},
        {"instance-id": "member-2"}, BASE_TARGET)),
    "testAddStaticMember": (("add", "member-3", M("Member3", "instance-id-2")), (
        {"member-1": M("Member1", None), "member-2": M("Member2", "instance-id"),
         "member-3": M("Member3", "instance-id-2")},
        {"instance-id": "member-2", "instance-id-2": "member-3"}, BASE_TARGET)),
    "testReplaceMember": (("add", "member-1", M("Member1-updated", None)), (
        {"member-1": M("Member1-updated", None), "member-2": M("Member2", "instance-id")},
        {"instance-id": "member-2"}, BASE_TARGET)),
    "testReplaceStaticMemberWithSameMemberId": (("add", "member-2", M("Member2-updated", "instance-id")), (
        {"member-1": M("Member1", None), "member-2": M("Member2-updated", "instance-id")},
        {"instance-id": "member-2"}, BASE_TARGET)),
    "testReplaceStaticMemberWithDifferentMemberId": (("add", "member-3", M("Member3", "instance-id")), (
        {"member-1": M("Member1", None), "member-3": M("Member3", "instance-id")},
        {"instance-id": "member-3"}, {"member-1": "Assignment-member-1", "member-3": "Assignment-member-2"})),
    "testReplaceStaticMemberWithNullInstanceId": (("add", "member-2", M("Member2-updated", None)), (
        {"member-1": M("Member1", None), "member-2": M("Member2-updated", None)}, {}, BASE_TARGET)),
    "testReplaceStaticMemberWithDifferentInstanceId": (("add", "member-2", M("Member2-updated", "instance-id-2")), (
        {"member-1": M("Member1", None), "member-2": M("Member2-updated", "instance-id-2")},
        {"instance-id-2": "member-2"}, BASE_TARGET)),
    "testRemoveMember": (("remove", "member-1"), (
        {"member-2": M("Member2", "instance-id")}, {"instance-id": "member-2"},
        {"member-2": "Assignment-member-2"})),
    "testRemoveStaticMember": (("remove", "member-2"), (
        {"member-1": M("Member1", None)}, {}, {"member-1": "Assignment-member-1"})),
}


@pytest.mark.parametrize("name", list(VIEW_CASES))
def test_updated_members_and_target_assignment_view(name):
    op, expected = VIEW_CASES[name]
    view = _view()
    if op[0] == "add":
        view.add_or_update_member(op[1], op[2])
    else:
        view.remove_member(op[1])
    assert _state(view) == expected


# --- OverlayMapTest ----------------------------------------------------------------------------------------------

def _overlay() -> OverlayMap:
    m = OverlayMap({"base": "base-value", "replacement": "replacement-value", "removal": "removal-value"})
    m.put("addition", "addition-value")
    m.put("replacement", "replacement-value-2")
    m.remove("removal")
    return m


def test_overlay_testPutNewKey_testPutExistingKey_testRemoveExistingKey():
    m = OverlayMap({"existing": "v1"})
    assert m.put("new", "x") is None and m.get("new") == "x"
    m = OverlayMap({"existing": "v1"})
    assert m.put("existing", "v2") == "v1" and m.get("existing") == "v2"
    m = OverlayMap({"existing": "v1"})
    assert m.remove("existing") == "v1" and m.get("existing") is None


def test_overlay_testSize_testEntrySetSize():
    m = OverlayMap({"base": "base-value", "replacement": "replacement-value", "removal": "removal-value"})
    assert len(m) == 3 == len(m.items())
    m.put("addition", "addition-value")
    assert len(m) == 4 == len(m.items())
    m.put("replacement", "replacement-value-2")
    assert len(m) == 4
    m.remove("removal")
    assert len(m) == 3 == len(m.items())


def test_overlay_testIsEmpty():
    m = OverlayMap({})
    assert len(m) == 0
    m.put("k", "v")
    assert len(m) == 1
    m = OverlayMap({"k1": "v1", "k2": "v2"})
    m.remove("k1")
    assert len(m) == 1
    m.remove("k2")
    assert len(m) == 0


def test_overlay_testContainsKey_testGet():
    m = _overlay()
    assert ["addition" in m, "replacement" in m, "removal" in m, "base" in m, "unknown" in m] == [
        True, True, False, True, False]
    assert [m.get(k) for k in ("addition", "replacement", "removal", "base", "unknown")] == [
        "addition-value", "replacement-value-2", None, "base-value", None]


def test_overlay_testPut():
    m = _overlay()
    assert m.put("addition", "addition-value-2") == "addition-value" and len(m) == 3
    assert dict(m) == {"addition": "addition-value-2", "replacement": "replacement-value-2", "base": "base-value"}
    assert m.put("replacement", "replacement-value-3") == "replacement-value-2" and len(m) == 3
    assert m.put("removal", "removal-value-2") is None and len(m) == 4
    assert dict(m) == {"addition": "addition-value-2", "replacement": "replacement-value-3",
                       "removal": "removal-value-2", "base": "base-value"}


def test_overlay_testRemove():
    m = _overlay()
    assert m.remove("addition") == "addition-value" and len(m) == 2 and "addition" not in m
    assert dict(m) == {"replacement": "replacement-value-2", "base": "base-value"}
    assert m.remove("replacement") == "replacement-value-2" and len(m) == 1 and m.get("replacement") is None
    assert m.remove("removal") is None and len(m) == 1
    assert m.remove("unknown") is None and dict(m) == {"base": "base-value"}


def test_overlay_testEntrySet_testEntrySetIterator():
    m = _overlay()
    assert dict(m) == {"addition": "addition-value", "replacement": "replacement-value-2", "base": "base-value"}
    # The base in its order (replacements in place, removals skipped), then the additions.
    assert list(m.items()) == [("base", "base-value"), ("replacement", "replacement-value-2"),
                               ("addition", "addition-value")]
    assert list(OverlayMap({}).items()) == []


# --- compute_target_assignment over a replayed group --------------------------------------------------------------

def test_compute_target_assignment_hands_the_updated_group_to_the_assignor():
    foo = tid("foo")
    topics = {foo: {"name": "foo", "partitions": 4}}
    g = ConsumerGroup("g")
    for mid, inst in (("a", None), ("b", "i-b"), ("c", None)):
        update_member(g, member(mid, member_epoch=1, instance_id=inst, subscribed_topic_names=["foo"]))
    update_target_assignment(g, "a", {foo: {0}})
    update_target_assignment(g, "b", {foo: {1, 2}})
    order = list(g.members)  # Kafka's TimelineHashMap order
    # "b" rejoins under a new member id: it replaces "b", inherits its target, and comes last; "d" is not in.
    replacing = member("b2", member_epoch=0, instance_id="i-b", subscribed_topic_names=["foo"])
    assignor = FakeAssignor({"a": {foo: {0}}, "b2": {foo: {1, 2}}, "c": {foo: {3}}})
    result = compute_target_assignment(g, 2, replacing, subscription_type=SubscriptionType.HOMOGENEOUS,
                                       topics=topics, assignor=assignor, now_ms=77)
    [(specs, _, _)] = assignor.calls
    assert list(specs) == [m for m in order if m != "b"] + ["b2"]
    assert specs["b2"]["current"] == {foo: [1, 2]} and specs["c"]["current"] == {}
    # Records: only c's; a is unchanged and b2's inherited target equals its new one (the static replacement
    # itself wrote b2's target record, GroupMetadataManager.replaceMember).
    assert result.records == [
        target_assignment_record("g", "c", {foo: [3]}),
        R.ConsumerGroupTargetAssignmentMetadata("g", assignment_epoch=2, assignment_timestamp_ms=77)]
    assert g.target_assignment["b"].as_sets() == {foo: {1, 2}}  # the group itself is untouched
