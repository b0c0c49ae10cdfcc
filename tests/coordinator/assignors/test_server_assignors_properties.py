"""Properties of the server-side assignors over random groups (hypothesis).

* every partition of every subscribed topic is assigned exactly once, only to a subscriber of its topic;
* uniform, homogeneous: sizes differ by at most one; a member keeps its previous partitions up to the smaller
  quota; a previous assignment that is already valid and balanced does not move at all (KAFKA-18688);
* uniform, heterogeneous: members with identical subscriptions over disjoint topic sets are balanced to one
  partition; members keep every previous partition of a topic they still subscribe to unless it moved for balance
  (stability: a balanced valid assignment fed back is unchanged);
* range: each topic is cut into consecutive ranges, sizes differing by at most one, in sorted member order.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.assignors import assign_target
from protocol.java import java_sorted, uuid_string

TOPIC_POOL = [uuid_string(i * 7919 - 2**40, -i * 104729) for i in range(1, 9)]


@st.composite
def groups(draw, homogeneous: bool | None = None):
    n_topics = draw(st.integers(1, 5))
    topics = {t: draw(st.integers(0, 30)) for t in TOPIC_POOL[:n_topics]}
    ids = draw(st.lists(st.text("abAB01\u00e9\U0001F600", min_size=1, max_size=4), min_size=1, max_size=8,
                        unique=True))
    if homogeneous is None:
        homogeneous = draw(st.booleans())
    shared = draw(st.lists(st.sampled_from(list(topics)), unique=True))
    subs = {m: shared if homogeneous else draw(st.lists(st.sampled_from(list(topics)), unique=True)) for m in ids}
    # a previous assignment: each partition owned by at most one member (any member, any topic)
    current: dict[str, dict[str, list[int]]] = {m: {} for m in ids}
    for t, n in topics.items():
        for p in range(n):
            owner = draw(st.sampled_from(ids + [None]))
            if owner is not None:
                current[owner].setdefault(t, []).append(p)
    members = {m: {"subscribed_topic_ids": subs[m], "current": current[m]} for m in ids}
    return {t: {"name": t, "partitions": n} for t, n in topics.items()}, members


def _check_complete_and_valid(topics, members, result):
    assert list(result) and set(result) == set(members)
    seen = {}
    for m, a in result.items():
        for t, ps in a.items():
            assert t in members[m]["subscribed_topic_ids"], "only subscribed topics"
            for p in ps:
                assert (t, p) not in seen, "assigned once"
                seen[(t, p)] = m
    wanted = {(t, p) for m in members.values() for t in m["subscribed_topic_ids"]
              for p in range(topics[t]["partitions"])}
    assert set(seen) == wanted, "every partition of every subscribed topic"


def _size(a) -> int:
    return sum(map(len, a.values()))


@settings(max_examples=300)
@given(groups(homogeneous=True))
def test_uniform_homogeneous_properties(group):
    topics, members = group
    result = assign_target("uniform", members, topics)
    _check_complete_and_valid(topics, members, result)
    sizes = [_size(a) for a in result.values()]
    assert max(sizes) - min(sizes) <= 1
    total = sum(sizes)
    floor_quota = total // len(members)
    subscribed = set(next(iter(members.values()))["subscribed_topic_ids"])
    for m, spec in members.items():
        before = {(t, p) for t, ps in spec["current"].items() if t in subscribed for p in ps}
        after = {(t, p) for t, ps in result[m].items() for p in ps}
        assert len(before & after) >= min(len(before), floor_quota), "stickiness"
    # a valid, balanced assignment is stable (KAFKA-18688), however the members are ordered
    again = assign_target("uniform", {m: dict(members[m], current=result[m]) for m in reversed(members)}, topics)
    assert {m: {t: set(ps) for t, ps in a.items()} for m, a in again.items()} == \
           {m: {t: set(ps) for t, ps in a.items()} for m, a in result.items()}


@st.composite
def bucketed(draw):
    """Kafka's benchmark shape for heterogeneous groups: buckets of members with one subscription each, buckets
    subscribing to disjoint topics."""
    n_buckets = draw(st.integers(2, 3))
    topics, members = {}, {}
    pool = iter(TOPIC_POOL)
    for b in range(n_buckets):
        mine = [next(pool) for _ in range(draw(st.integers(1, 2)))]
        for t in mine:
            topics[t] = {"name": t, "partitions": draw(st.integers(0, 25))}
        for i in range(draw(st.integers(1, 4))):
            members[f"b{b}-m{i}"] = {"subscribed_topic_ids": mine, "current": {}}
    return topics, members


@settings(max_examples=200)
@given(groups(homogeneous=False))
def test_uniform_heterogeneous_properties(group):
    topics, members = group
    result = assign_target("uniform", members, topics, subscription_type="heterogeneous")
    _check_complete_and_valid(topics, members, result)
    for m, spec in members.items():
        subscribed = set(spec["subscribed_topic_ids"])
        kept = {(t, p) for t, ps in spec["current"].items() if t in subscribed for p in ps}
        after = {(t, p) for t, ps in result[m].items() for p in ps}
        lost = kept - after
        # a partition is only taken from a member that ended up with more than some other subscriber of its topic
        for t, _p in lost:
            others = [_size(result[o]) for o, s in members.items() if o != m and t in s["subscribed_topic_ids"]]
            assert others and _size(result[m]) + 1 >= min(others)


@settings(max_examples=200)
@given(bucketed())
def test_uniform_heterogeneous_bucketed_is_balanced_and_stable(group):
    topics, members = group
    result = assign_target("uniform", members, topics)
    _check_complete_and_valid(topics, members, result)
    by_bucket: dict[str, list[int]] = {}
    for m, a in result.items():
        by_bucket.setdefault(m.split("-")[0], []).append(_size(a))
    for sizes in by_bucket.values():
        assert max(sizes) - min(sizes) <= 1
    again = assign_target("uniform", {m: dict(members[m], current=result[m]) for m in members}, topics)
    assert {m: {t: set(ps) for t, ps in a.items()} for m, a in again.items()} == \
           {m: {t: set(ps) for t, ps in a.items()} for m, a in result.items()}


@settings(max_examples=300)
@given(groups(), st.lists(st.sampled_from(["i1", "i2", "i3"]), unique=True))
def test_range_properties(group, instance_ids):
    topics, members = group
    for m, inst in zip(members, instance_ids):
        members[m]["instance_id"] = inst
    result = assign_target("range", members, topics)
    _check_complete_and_valid(topics, members, result)
    statics = java_sorted(members[m]["instance_id"] for m in members if members[m].get("instance_id"))
    by_instance = {members[m]["instance_id"]: m for m in members if members[m].get("instance_id")}
    order = [by_instance[i] for i in statics] + java_sorted(m for m in members if not members[m].get("instance_id"))
    for t, meta in topics.items():
        subscribers = [m for m in order if t in members[m]["subscribed_topic_ids"]]
        ranges = [sorted(result[m].get(t, [])) for m in subscribers]
        flat = [p for r in ranges for p in r]
        assert flat == list(range(meta["partitions"])) if subscribers else True, "consecutive ranges in order"
        sizes = [len(r) for r in ranges]
        assert not sizes or max(sizes) - min(sizes) <= 1
