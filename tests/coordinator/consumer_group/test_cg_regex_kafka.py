"""Regex subscriptions: Kafka 4.4's ``GroupMetadataManagerTest`` regex cases on the coordinator (each names its Kafka
test; Kafka's executor job is kgroup's ``<group>-regex`` operation, due at once), and the RE2J subset kgroup matches
with Python's ``re`` (``coordinator.topic_regex``): RE2J's errors with RE2J's descriptions, constructs whose
meaning differs in Python translated or refused."""

from __future__ import annotations

import pytest

from protocol.errors import ErrorCode

from coordinator import records as R
from coordinator.consumer_group import MemberState, current_assignment_record, member_metadata_record, \
    target_assignment_record
from coordinator.topic_regex import RegexError, compile_topic_regex

from cg_env import CgEnv, assert_records, assignment_of
from test_cg_heartbeat_kafka import G, M, asg, ep

E = ErrorCode
S = MemberState.STABLE
FOO, BAR = CgEnv.tid("foo"), CgEnv.tid("bar")


def test_consumer_group_member_picks_up_existing_resolved_regular_expression():
    """testConsumerGroupMemberPicksUpExistingResolvedRegularExpression: an already resolved regex bumps the epoch at
    once and the assignor sees the regex's topics."""
    env = CgEnv(topics={"foo": 2})
    m1 = M("m1", state=S, member_epoch=10, previous_member_epoch=10, subscribed_topic_regex="foo*",
           server_assignor_name="range", assigned_partitions=ep(10, foo=[0, 1]))
    env.build_group(G, 10, members=[m1], assignments={"m1": asg(foo=[0, 1])}, assignment_epoch=10,
                    regexes={"foo*": (["foo"], 100, 12345)})
    env.assignor.prepare({"m1": asg(foo=[0]), "m2": asg(foo=[1])})
    r = env.heartbeat(G, "m2", 0, rebalance_timeout_ms=10000, regex="foo*", owned={})
    assert (r.member_epoch, r.heartbeat_interval_ms, assignment_of(r)) == (11, 5000, {})
    _, members, _ = env.assignor.calls[-1]
    assert {m: spec["subscribed_topic_ids"] for m, spec in members.items()} == \
        {"m1": [CgEnv.tid("foo")], "m2": [CgEnv.tid("foo")]}


def test_consumer_group_member_joins_with_new_regex():
    """testConsumerGroupMemberJoinsWithNewRegex: no epoch bump at join; the resolution (the executor job) records the
    regex and bumps the epoch."""
    env = CgEnv(topics={"foo": 6})
    m1 = M("m1", state=S, member_epoch=10, previous_member_epoch=10, rebalance_timeout_ms=5000,
           subscribed_topic_names=["foo"], server_assignor_name="range", assigned_partitions=ep(10, foo=range(6)))
    h = env.metadata_hash("foo")
    env.build_group(G, 10, members=[m1], assignments={"m1": asg(foo=range(6))}, assignment_epoch=10,
                    metadata_hash=h)
    r = env.heartbeat(G, "m2", 0, rebalance_timeout_ms=5000, regex="foo*", assignor="range", owned={})
    assert (r.member_epoch, assignment_of(r)) == (10, {})
    m2 = M("m2", state=S, member_epoch=10, previous_member_epoch=0, rebalance_timeout_ms=5000,
           subscribed_topic_regex="foo*", server_assignor_name="range")
    assert_records([member_metadata_record(G, m2), current_assignment_record(G, m2)], env.last_records)
    assert f"{G}-regex" in env.timers()
    got = env.advance(0)  # "Execute pending tasks."
    assert got == [R.ConsumerGroupRegularExpression(G, regular_expression="foo*", topics=("foo",),
                                                    version=env.manager.image.version, timestamp_ms=env.now),
                   R.ConsumerGroupMetadata(G, epoch=11, metadata_hash=h)]


def test_consumer_group_member_clears_regex():
    """testConsumerGroupMemberClearsRegex: "" clears the regex: its tombstone, an epoch bump, a new target."""
    env = CgEnv(topics={"foo": 6})
    env.assignor.prepare({})
    m1 = M("m1", state=S, member_epoch=10, previous_member_epoch=10, rebalance_timeout_ms=5000,
           subscribed_topic_regex="foo*", server_assignor_name="range", assigned_partitions=ep(10, foo=range(6)))
    env.build_group(G, 10, members=[m1], assignments={"m1": asg(foo=range(6))}, assignment_epoch=10)
    env.advance(0)
    r = env.heartbeat(G, "m1", 10, rebalance_timeout_ms=5000, regex="", assignor="range", owned={})
    assert (r.member_epoch, assignment_of(r)) == (11, {})
    expected = M("m1", state=S, member_epoch=11, previous_member_epoch=10, rebalance_timeout_ms=5000,
                 subscribed_topic_regex="", server_assignor_name="range")
    assert_records([member_metadata_record(G, expected),
                    R.ConsumerGroupRegularExpressionTombstone(G, regular_expression="foo*"),
                    R.ConsumerGroupMetadata(G, epoch=11, metadata_hash=0),
                    target_assignment_record(G, "m1", {}),
                    R.ConsumerGroupTargetAssignmentMetadata(G, assignment_epoch=11, assignment_timestamp_ms=1000),
                    current_assignment_record(G, expected)], env.last_records)


def test_replay_consumer_group_regular_expression():
    """testReplayConsumerGroupRegularExpression: the record creates the group and its resolution; the group is then
    subscribed to the regex's topics."""
    env = CgEnv()
    env.replay(R.ConsumerGroupRegularExpression("foo", regular_expression="abc*", topics=("abc", "abcd"), version=10,
                                                timestamp_ms=12345))
    rr = env.group("foo").resolved_regular_expressions["abc*"]
    assert (rr.topics, rr.version, rr.timestamp_ms) == ({"abc", "abcd"}, 10, 12345)
    assert env.group("foo").is_subscribed_to_topic("abc")


def test_replay_consumer_group_regular_expression_tombstone():
    """testReplayConsumerGroupRegularExpressionTombstone: a no-op without the group; otherwise the resolution goes."""
    env = CgEnv()
    env.replay(R.ConsumerGroupRegularExpressionTombstone("foo", regular_expression="abc*"))
    assert env.group("foo") is None
    env.replay(R.ConsumerGroupRegularExpression("foo", regular_expression="abc*", topics=("abc", "abcd"), version=10,
                                                timestamp_ms=12345))
    assert env.group("foo").is_subscribed_to_topic("abc")
    env.replay(R.ConsumerGroupRegularExpressionTombstone("foo", regular_expression="abc*"))
    assert "abc*" not in env.group("foo").resolved_regular_expressions
    assert not env.group("foo").is_subscribed_to_topic("abc")


def test_consumer_group_member_joins_with_updated_regex():
    """testConsumerGroupMemberJoinsWithUpdatedRegex: the old regex's tombstone, the member's partitions revoked
    (its new regex is not resolved yet: no subscribed topic); the resolution bumps the epoch; the next heartbeat
    computes the new target and gets both topics."""
    env = CgEnv(topics={"foo": 6, "bar": 3})
    m1 = M("m1", state=S, member_epoch=10, previous_member_epoch=10, rebalance_timeout_ms=5000,
           subscribed_topic_regex="foo*", server_assignor_name="range", assigned_partitions=ep(10, foo=range(6)))
    env.build_group(G, 10, members=[m1], assignments={"m1": asg(foo=range(6))}, assignment_epoch=10)
    r = env.heartbeat(G, "m1", 10, rebalance_timeout_ms=5000, regex="foo*|bar*", assignor="range", owned={})
    assert (r.member_epoch, r.heartbeat_interval_ms, assignment_of(r)) == (10, 5000, {})
    e1 = M("m1", state=S, member_epoch=10, previous_member_epoch=10, rebalance_timeout_ms=5000,
           subscribed_topic_regex="foo*|bar*", server_assignor_name="range")
    assert_records([member_metadata_record(G, e1),
                    R.ConsumerGroupRegularExpressionTombstone(G, regular_expression="foo*"),
                    current_assignment_record(G, e1)], env.last_records)
    assert f"{G}-regex" in env.timers()
    got = env.advance(0)
    assert got == [R.ConsumerGroupRegularExpression(G, regular_expression="foo*|bar*", topics=("bar", "foo"),
                                                    version=env.manager.image.version, timestamp_ms=env.now),
                   R.ConsumerGroupMetadata(G, epoch=11, metadata_hash=env.metadata_hash("foo", "bar"))]
    env.assignor.prepare({"m1": asg(foo=range(6), bar=range(3))})
    r = env.heartbeat(G, "m1", 10, rebalance_timeout_ms=5000, regex="foo*|bar*", assignor="range", owned={})
    assert (r.member_epoch, assignment_of(r)) == (11, {FOO: [0, 1, 2, 3, 4, 5], BAR: [0, 1, 2]})
    e2 = M("m1", state=S, member_epoch=11, previous_member_epoch=10, rebalance_timeout_ms=5000,
           subscribed_topic_regex="foo*|bar*", server_assignor_name="range",
           assigned_partitions=ep(11, foo=range(6), bar=range(3)))
    assert_records([target_assignment_record(G, "m1", {FOO: [0, 1, 2, 3, 4, 5], BAR: [0, 1, 2]}),
                    R.ConsumerGroupTargetAssignmentMetadata(G, assignment_epoch=11, assignment_timestamp_ms=env.now),
                    current_assignment_record(G, e2)], env.last_records)


def _two_regex_group(env: CgEnv) -> None:
    m1 = M("m1", state=S, member_epoch=10, previous_member_epoch=10, rebalance_timeout_ms=5000,
           subscribed_topic_regex="foo*", server_assignor_name="range", assigned_partitions=ep(10, foo=range(6)))
    m2 = M("m2", state=S, member_epoch=10, previous_member_epoch=10, rebalance_timeout_ms=5000,
           subscribed_topic_regex="bar*", server_assignor_name="range", assigned_partitions=ep(10, bar=range(3)))
    env.build_group(G, 10, members=[m1, m2], assignments={"m1": asg(foo=range(6)), "m2": asg(bar=range(3))},
                    assignment_epoch=10, regexes={"foo*": (["foo"], 0, 0), "bar*": (["bar"], 0, 0)},
                    metadata_hash=env.metadata_hash("foo", "bar"))


def test_consumer_group_member_join_refreshes_expired_regexes():
    """testConsumerGroupMemberJoinRefreshesExpiredRegexes: a new topic matching a regex; no refresh within 10 s of
    the last one (the resolutions are stamped 0, the clock is at 1 s); after 11 s the next heartbeat schedules the
    resolution of every regex and the epoch is bumped with the new topic in the hash."""
    env = CgEnv(topics={"foo": 6, "bar": 3})
    env.assignor.prepare({})
    _two_regex_group(env)
    env.svc.cluster.create_topic("fooo", 1, 1)
    env.pin_image()
    env.heartbeat(G, "m1", 10)
    assert f"{G}-regex" not in env.timers()
    env.now += 11000  # "Advance past the batching interval" (the timers due by then fire first)
    env.heartbeat(G, "m1", 10)
    assert f"{G}-regex" in env.timers()
    got = env.advance(0)
    v = env.manager.image.version
    assert sorted(got[:2], key=lambda r: r.regular_expression) == [
        R.ConsumerGroupRegularExpression(G, regular_expression="bar*", topics=("bar",), version=v,
                                         timestamp_ms=env.now),
        R.ConsumerGroupRegularExpression(G, regular_expression="foo*", topics=("foo", "fooo"), version=v,
                                         timestamp_ms=env.now)]
    assert got[2:] == [R.ConsumerGroupMetadata(G, epoch=11, metadata_hash=env.metadata_hash("foo", "bar", "fooo"))]


def test_resolved_regular_expressions_removed_when_members_leave_or_fenced():
    """testResolvedRegularExpressionsRemovedWhenMembersLeaveOrFenced: the last member of a regex leaving or fenced
    deletes the regex's resolution, before the epoch record."""
    env = CgEnv(topics={"foo": 6, "bar": 3}, brokers=2)
    env.assignor.prepare({})
    _two_regex_group(env)
    env.failover()  # "Setup the timers." (onLoaded)
    r = env.heartbeat(G, "m1", -1)
    assert (r.member_id, r.member_epoch) == ("m1", -1)
    assert env.last_records == [R.ConsumerGroupCurrentMemberAssignmentTombstone(G, member_id="m1"),
                                R.ConsumerGroupTargetAssignmentMemberTombstone(G, member_id="m1"),
                                R.ConsumerGroupMemberMetadataTombstone(G, member_id="m1"),
                                R.ConsumerGroupRegularExpressionTombstone(G, regular_expression="foo*"),
                                R.ConsumerGroupMetadata(G, epoch=11, metadata_hash=env.metadata_hash("bar"))]
    assert env.timers()[f"session-timeout-{G}-m2"] == env.now + 45000
    got = env.advance(45000 + 1)
    assert got == [R.ConsumerGroupCurrentMemberAssignmentTombstone(G, member_id="m2"),
                   R.ConsumerGroupTargetAssignmentMemberTombstone(G, member_id="m2"),
                   R.ConsumerGroupMemberMetadataTombstone(G, member_id="m2"),
                   R.ConsumerGroupRegularExpressionTombstone(G, regular_expression="bar*"),
                   R.ConsumerGroupMetadata(G, epoch=12, metadata_hash=0),
                   R.ConsumerGroupTargetAssignmentMetadata(G, assignment_epoch=12, assignment_timestamp_ms=0)]


def test_regex_resolution_follows_new_topics_after_the_batch_interval():
    """maybeUpdateRegularExpressions: a topic created later is picked up by the first heartbeat more than 10 s
    (REGEX_BATCH_REFRESH_MIN_INTERVAL_MS) after the last resolution -- the image has new topics."""
    env = CgEnv(topics={"orders-a": 2}, **{"group.consumer.assignment.interval.ms": 0})
    env.assignor.prepare({"m": asg(**{"orders-a": [0, 1]})})
    env.heartbeat(G, "m", 0, rebalance_timeout_ms=5000, regex="orders-.*", owned={})
    env.advance(0)
    assert env.group(G).resolved_regular_expressions["orders-.*"].topics == {"orders-a"}
    assert env.heartbeat(G, "m", 1).member_epoch == 2  # the resolution bumped the group to epoch 2
    env.svc.cluster.create_topic("orders-b", 1, 1)
    env.pin_image()
    env.advance(5000)
    assert env.heartbeat(G, "m", 2).error_code == 0
    assert env.advance(0) == []  # within 10 s of the last resolution: no refresh yet
    env.advance(6000)
    assert env.heartbeat(G, "m", 2).error_code == 0
    recs = env.advance(0)
    assert recs[0].topics == ("orders-a", "orders-b") and recs[1].epoch == 3


# --- the RE2J subset --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("regex,matches,misses", [
    ("orders-.*", ["orders-a", "orders-"], ["xorders-a"]),
    ("foo*", ["fo", "foo", "fooo"], ["foobar"]),
    ("(orders|payments)\\..*", ["orders.x", "payments.y"], ["ordersx"]),
    ("^orders$", ["orders"], ["orders\n"]),                # RE2J's $ is the end of the text
    ("[a-c]+[0-9]{2,3}", ["abc12", "c999"], ["abc1", "abcd12"]),
    ("\\d+", ["123"], ["\u0661"]),                          # RE2's \d is ASCII
    ("[^.]+", ["abc"], ["a.b"]),
    ("(?i)ORDERS", ["orders", "OrDeRs"], ["order"]),
    ("a{,3}", ["a{,3}"], ["aaa"]),                         # not a repetition in RE2J (Python 3.11 disagrees)
    ("a{01}", ["a{01}"], ["a"]),
    ("\\Qa.b\\E", ["a.b"], ["axb"]),
    ("[[:digit:]]x", ["1x"], ["ax"]),
    ("a\\z", ["a"], ["a\n"]),
])
def test_topic_regex_matches_as_re2j(regex, matches, misses):
    p = compile_topic_regex(regex)
    assert all(p.fullmatch(t) for t in matches) and not any(p.fullmatch(t) for t in misses)


@pytest.mark.parametrize("regex,description", [
    ("[", "missing closing ]"),
    ("(a", "missing closing )"),
    ("a)", "regexp/syntax: internal error"),
    ("a**", "invalid nested repetition operator"),
    ("a*+", "invalid nested repetition operator"),         # possessive: refused by RE2J itself
    ("*a", "missing argument to repetition operator"),
    ("a{1001}", "invalid repeat count"),
    ("a{3,2}", "invalid repeat count"),
    ("\\1", "invalid escape sequence"),                   # backreference
    ("\\Z", "invalid escape sequence"),                   # Java's \Z is not RE2's
    ("\\C", "invalid escape sequence"),
    ("(?=a)", "invalid or unsupported Perl syntax"),      # lookaround
    ("(?<!a)b", "invalid or unsupported Perl syntax"),
    ("(?P<n>a)(?P<n>b)", "duplicate capture group name"),
    ("(?P<>a)", "invalid named capture"),
    ("[b-a]", "invalid character class range"),
    ("[[:nope:]]", "invalid character class range"),
    ("a\\", "trailing backslash at end of expression"),
])
def test_topic_regex_errors_are_re2js(regex, description):
    with pytest.raises(RegexError) as e:
        compile_topic_regex(regex)
    assert e.value.description == description


@pytest.mark.parametrize("regex", [
    "\\pL", "é", "(?m)^a$", "x(?i)y", "(a|b)*", "(ab+)+", ".*a.*b.*c.*d", "(?<1a>x)", "(?U)a*",
])
def test_topic_regex_outside_the_subset_is_refused(regex):
    """RE2J accepts these; kgroup cannot match them exactly (or safely) with Python's re and refuses them."""
    with pytest.raises(RegexError) as e:
        compile_topic_regex(regex)
    assert e.value.description.startswith("kgroup cannot match this exactly as Kafka's RE2J does")


def test_refused_regex_is_invalid_regular_expression_on_the_wire():
    env = CgEnv()
    code, msg = env.heartbeat_error(G, "m", 0, rebalance_timeout_ms=5000, regex="(a|b)*", owned={})
    assert code == E.INVALID_REGULAR_EXPRESSION
    assert msg.startswith("SubscribedTopicRegex `(a|b)*` is not a valid regular expression: kgroup cannot match")


def test_resolved_regular_expressions_removed_when_consumer_members_removed_by_admin_api():
    """testResolvedRegularExpressionsRemovedWhenConsumerMembersRemovedByAdminApi: an admin LeaveGroup removes three
    of four regex members (by member id, by member and instance id, by instance id alone): each member's three
    tombstones, the tombstone of ``foo*`` that nobody uses any more (``bar*`` stays, member 4 uses it), and the epoch
    bump with the metadata hash over bar only."""
    from cg_env import assert_unordered_records, classic_leave
    env = CgEnv(topics={"foo": 6, "bar": 3})
    env.assignor.prepare({})
    common = dict(state=S, member_epoch=10, previous_member_epoch=10, rebalance_timeout_ms=5000,
                  server_assignor_name="range")
    members = [M("m1", instance_id="m1", subscribed_topic_regex="foo*", assigned_partitions=ep(10, foo=[0, 1, 2]),
                 **common),
               M("m2", instance_id="m2", subscribed_topic_regex="foo*", assigned_partitions=ep(10, foo=[3, 4, 5]),
                 **common),
               M("m3", instance_id="m3", subscribed_topic_regex="bar*", assigned_partitions=ep(10, bar=[0, 1]),
                 **common),
               M("m4", instance_id="m4", subscribed_topic_regex="bar*", assigned_partitions=ep(10, bar=[2]),
                 **common)]
    env.build_group(G, 10, members=members, assignments={"m1": asg(foo=range(6)), "m2": asg(bar=[0, 1, 2])},
                    assignment_epoch=10, metadata_hash=env.metadata_hash("foo", "bar"),
                    regexes={"foo*": (["foo"], 0, 0), "bar*": (["bar"], 0, 0)})
    r = classic_leave(env, G, [("m1", None), ("m2", "m2"), ("", "m3")])
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in r.members] == \
        [("m1", None, 0), ("m2", "m2", 0), ("", "m3", 0)]
    gone = ["m1", "m2", "m3"]
    assert_unordered_records([
        [rec for m in gone for rec in (R.ConsumerGroupCurrentMemberAssignmentTombstone(G, member_id=m),
                                       R.ConsumerGroupTargetAssignmentMemberTombstone(G, member_id=m),
                                       R.ConsumerGroupMemberMetadataTombstone(G, member_id=m))],
        [R.ConsumerGroupRegularExpressionTombstone(G, regular_expression="foo*")],
        [R.ConsumerGroupMetadata(G, epoch=11, metadata_hash=env.metadata_hash("bar"))]],
        [x for x in env.last_records if x.DURABLE])
