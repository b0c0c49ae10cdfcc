"""assign_target's contract: names, errors, input checks, deleted topics, member and topic order of the result."""

from __future__ import annotations

import pytest

from _server_assignor_helpers import T1, T3, member, topics_of
from coordinator.assignors import (ASSIGNORS, RANGE, UNIFORM, PartitionAssignorError, UnknownAssignorError,
                                   assign_target, get_server_assignor)
from protocol.java import hashmap_order, uuid_string


def test_registry_has_kafkas_names_in_kafkas_default_order():
    # group.consumer.assignors defaults to "uniform, range"; the first is the default.
    assert list(ASSIGNORS) == ["uniform", "range"]
    assert UNIFORM.kafka_class == "org.apache.kafka.coordinator.group.assignor.UniformAssignor"
    assert RANGE.kafka_class == "org.apache.kafka.coordinator.group.assignor.RangeAssignor"
    assert get_server_assignor(RANGE.kafka_class) is RANGE
    with pytest.raises(UnknownAssignorError, match="^unknown server assignor 'sticky': supported are uniform, range$"):
        assign_target("sticky", {}, {})


def test_empty_group():
    assert assign_target("uniform", {}, topics_of({"T1": 3})) == {}
    assert assign_target("range", {}, topics_of({"T1": 3})) == {}


@pytest.mark.parametrize("name", ["uniform", "range"])
def test_missing_subscribed_topic_raises_like_kafka(name):
    with pytest.raises(PartitionAssignorError):
        assign_target(name, {"a": member(["T1", "T2"])}, topics_of({"T1": 3}))


@pytest.mark.parametrize("members,topics,message", [
    ({"a": {"subscribed_topic_ids": ["nope"]}}, {}, "topic id 'nope' is not a Kafka Uuid"),
    ({"a": member(["T1"], {"T1": [3]})}, topics_of({"T1": 3}), "partition 3 of topic .* out of range \\(topic has 3"),
    ({"a": member(["T1"], {"T1": [-1]})}, topics_of({"T1": 3}), "partition -1 of topic"),
    ({"a": member(["T1"], {"T1": ["0"]})}, topics_of({"T1": 3}), "partition '0' of topic"),
    ({"a": {"subscribed_topic_ids": [T1, T1]}}, topics_of({"T1": 3}), "has duplicates"),
    ({1: member(["T1"])}, topics_of({"T1": 3}), "member ids must be str"),
    ({"a": member(["T1"])}, {T1: {"partitions": -2}}, "'partitions' must be an int >= 0"),
    ({"a": {"subscribed_topic_ids": T1}}, topics_of({"T1": 3}), "must be a list of topic ids"),
    ({"a": {"subscribed_topic_ids": [T1], "instance_id": 5}}, topics_of({"T1": 3}), "instance_id must be a str"),
    ({"a": {"subscribed_topic_ids": [T1], "subscription_size": 0}}, topics_of({"T1": 3}), "subscription_size"),
])
def test_bad_input_is_a_one_line_value_error(members, topics, message):
    with pytest.raises(ValueError, match=message) as info:
        assign_target("uniform", members, topics)
    assert "\n" not in str(info.value)


def test_deleted_topics_in_current_are_dropped():
    gone = uuid_string(12345, 678)
    members = {"a": member(["T1"], {"T1": [0]}), "b": member(["T1"])}
    members["a"]["current"][gone] = [0, 1, 7]
    for name in ("uniform", "range"):
        result = assign_target(name, members, topics_of({"T1": 2}))
        assert all(gone not in a for a in result.values())
    result = assign_target("uniform", members, topics_of({"T1": 2}), subscription_type="heterogeneous")
    assert all(gone not in a for a in result.values())


def test_members_come_back_in_kafkas_map_order_and_all_of_them():
    # String.hashCode spread to 16 buckets: zz -> 0, consumer-3 -> 11, consumer-2 -> 12, consumer-1 -> 13.
    ids = ["consumer-3", "consumer-1", "zz", "consumer-2"]
    result = assign_target("uniform", {m: member(["T1"]) for m in ids}, topics_of({"T1": 2}))
    assert list(result) == ["zz", "consumer-3", "consumer-2", "consumer-1"] == hashmap_order(ids)
    # Quota 0 plus 2 extras: zz and consumer-3 give their extra back (4 - 0 and 4 - 1 members left > 2 extras),
    # the last two members in map order must take theirs (KAFKA-18688); everyone is listed.
    assert result == {"zz": {}, "consumer-3": {}, "consumer-2": {T1: [0]}, "consumer-1": {T1: [1]}}


def test_caller_spelling_of_topic_ids_is_kept():
    # T3 as Kafka's test spells it has stray bits in its last base64 character; kgroup answers with the caller's
    # spelling (the id is the same Uuid).
    result = assign_target("range", {"a": member(["T3"])}, topics_of({"T3": 2}))
    assert result == {"a": {T3: [0, 1]}}


def test_partitions_come_back_in_java_set_order():
    # Ten members keep their two partitions each. A's record lists [19, 3]: Kafka rebuilds it as a 16-bucket
    # HashSet where both fall in bucket 3, in record order, and reuses it unchanged -- so 19 comes first; B's
    # record [3, 19] comes back as it is too. (Sorting would lose what Kafka writes in the next record.)
    owners = {"A": [19, 3], "B": [16, 0], "m1": [1, 17], "m2": [2, 4], "m3": [5, 6], "m4": [7, 8], "m5": [9, 10],
              "m6": [11, 12], "m7": [13, 14], "m8": [15, 18]}
    members = {m: member(["T1"], {"T1": ps}) for m, ps in owners.items()}
    assert sorted(p for ps in owners.values() for p in ps) == list(range(20))
    result = assign_target("uniform", members, topics_of({"T1": 20}))
    assert result["A"] == {T1: [19, 3]} and result["B"] == {T1: [16, 0]}
    assert result["m1"] == {T1: [1, 17]}  # buckets 1 and 1: record order


def test_subscription_size_sizes_the_topic_set_like_kafkas_topicids():
    # Kafka sizes `new HashSet<>(TopicIds)` by TopicIds.size(), which counts unresolvable names too. Thirteen topics
    # of one partition each, Uuid (0, h) hashing to h: 13 names -> newHashMap(13) -> 32 buckets, where h = 33
    # (bucket 1) is dealt before h = 2; 25 names -> 64 buckets, where 33 comes last. The first member in map order
    # gets the first topic dealt.
    hashes = [33, 2] + list(range(4, 15))
    ids = [uuid_string(0, h) for h in hashes]
    topics = {t: {"name": t, "partitions": 1} for t in ids}
    names = [f"m{i}" for i in range(13)]
    first = hashmap_order(names)[0]
    plain = assign_target("uniform", {m: {"subscribed_topic_ids": ids} for m in names}, topics)
    sized = assign_target("uniform", {m: {"subscribed_topic_ids": ids, "subscription_size": 25} for m in names},
                          topics)
    assert plain[first] == {uuid_string(0, 33): [0]}
    assert sized[first] == {uuid_string(0, 2): [0]}


def test_docs_example_says_what_the_code_does():
    import re
    from pathlib import Path
    text = (Path(__file__).resolve().parents[3] / "docs" / "assignors.md").read_text()
    block = text.split("## Server-side assignors (KIP-848)")[1].split("```python")[1].split("```")[0]
    code, _, expected = block.rpartition("\n# ")
    scope: dict = {}
    exec(code.replace('assign_target("uniform", members, topics)', 'result = assign_target("uniform", members, '
                                                                    'topics)'), scope)
    assert repr(scope["result"]) == expected.strip()
    assert re.search(r"commit `8d3916cfe15f13a2d878c79d302ba2d63172f0af`", text)
