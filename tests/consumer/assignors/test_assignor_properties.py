"""Property tests: validity, Kafka's balance criterion, stickiness, cooperative safety and convergence."""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from consumer.assignors import Subscription, encode_sticky_user_data, get_assignor
from _assignor_helpers import verify_validity_and_balance

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def groups(draw, uniform=None):
    n_topics = draw(st.integers(1, 5))
    topics = [f"t{i}" for i in range(n_topics)]
    counts = {t: draw(st.integers(0, 8)) for t in topics}
    n_members = draw(st.integers(1, 7))
    members = [f"m{i}" for i in range(n_members)]
    same = draw(st.booleans()) if uniform is None else uniform
    if same:
        subs = {m: list(topics) for m in members}
    else:
        subs = {m: draw(st.lists(st.sampled_from(topics), min_size=0, max_size=n_topics, unique=True))
                for m in members}
    static = draw(st.booleans())
    instances = {m: (f"i{(i * 7) % n_members}" if static and i % 2 == 0 else None) for i, m in enumerate(members)}
    return counts, subs, instances


def subscriptions(subs, instances, owned=None, generation=-1, strategy="range"):
    out = {}
    for m, topics in subs.items():
        parts = (owned or {}).get(m, ())
        ud = encode_sticky_user_data(parts, generation) if strategy == "sticky" and owned is not None else None
        out[m] = Subscription(topics, ud, parts if strategy != "sticky" else (), generation,
                              group_instance_id=instances[m])
    return out


def check_valid(counts, subs, result, exactly_once=True):
    assert set(result) == set(subs)
    seen = set()
    for m, a in result.items():
        for p in a.partitions:
            assert p.topic in subs[m], f"{p} given to non-subscriber {m}"
            assert 0 <= p.partition < counts[p.topic]
            assert p not in seen, f"{p} assigned twice"
            seen.add(p)
    wanted = {(t, p) for m in subs for t in subs[m] for p in range(counts.get(t, 0))}
    if exactly_once:
        assert {(p.topic, p.partition) for p in seen} == wanted
    else:
        assert {(p.topic, p.partition) for p in seen} <= wanted


@SETTINGS
@given(groups(), st.sampled_from(["range", "roundrobin", "sticky", "cooperative-sticky"]))
def test_valid(group, strategy):
    counts, subs, instances = group
    if "sticky" in strategy:
        assume(all(subs.values()))  # see test_kafka_quirk_empty_subscription_listed_first
    result = get_assignor(strategy).assign(counts, subscriptions(subs, instances))
    check_valid(counts, subs, result)


@SETTINGS
@given(groups(), st.sampled_from(["sticky", "cooperative-sticky"]), st.data())
def test_sticky_balanced_and_sticky_after_members_leave(group, strategy, data):
    counts, subs, instances = group
    assume(all(subs.values()))
    assignor = get_assignor(strategy)
    first = assignor.assign(counts, subscriptions(subs, instances, strategy=strategy))
    verify_validity_and_balance({m: Subscription(t) for m, t in subs.items()},
                                {m: list(a.partitions) for m, a in first.items()})
    leaving = set(data.draw(st.lists(st.sampled_from(sorted(subs)), unique=True, max_size=len(subs) - 1)))
    survivors = {m: t for m, t in subs.items() if m not in leaving}
    owned = {m: first[m].partitions for m in survivors}
    second = assignor.assign(counts, subscriptions(survivors, instances, owned, 1, strategy))
    check_valid(counts, survivors, second, exactly_once=(strategy == "sticky"))
    if strategy == "sticky":
        verify_validity_and_balance({m: Subscription(t) for m, t in survivors.items()},
                                    {m: list(a.partitions) for m, a in second.items()})
    # stickiness: nothing moves between two survivors unless balance needs it (Kafka's isSticky), and with
    # identical subscriptions every survivor keeps min(owned, minQuota) of what it had
    assert assignor.is_sticky()
    if all(set(t) == set(counts) for t in survivors.values()):
        total = sum(counts.values())
        min_quota = total // len(survivors)
        for m in survivors:
            kept = set(second[m].partitions) & set(owned[m])
            assert len(kept) >= min(len(owned[m]), min_quota)


@SETTINGS
@given(groups(), st.data())
def test_cooperative_never_hands_out_an_owned_partition_and_converges(group, data):
    counts, subs, instances = group
    assume(all(subs.values()))
    assignor = get_assignor("cooperative-sticky")
    # start from an arbitrary previous ownership among subscribers (KafkaConsumer revokes partitions of topics it
    # no longer subscribes to before rejoining); conflicting claims are covered by Kafka's own cases
    all_parts = [(t, p) for t in counts for p in range(counts[t])]
    owned = {m: [] for m in subs}
    for part in all_parts:
        candidates = sorted(m for m in subs if part[0] in subs[m])
        if not candidates:
            continue
        holders = data.draw(st.lists(st.sampled_from(candidates), unique=True, max_size=1))
        for h in holders:
            owned[h].append(part)
    owned = {m: tuple(__import__("consumer.assignors", fromlist=["TopicPartition"]).TopicPartition(*p)
                      for p in v) for m, v in owned.items()}
    gens = {m: data.draw(st.integers(1, 3)) for m in subs}
    current = owned
    for round_no in range(6):
        subs_now = {m: Subscription(subs[m], None, current[m], gens[m] if round_no == 0 else 10 + round_no,
                                    group_instance_id=instances[m]) for m in subs}
        result = assignor.assign(counts, subs_now)
        check_valid(counts, subs, result, exactly_once=False)
        owners = {}
        for m, parts in current.items():
            for p in parts:
                owners.setdefault(p, set()).add(m)
        for m, a in result.items():
            for p in a.partitions:
                others = owners.get(p, set()) - {m}
                assert not others, f"{p} assigned to {m} while still owned by {others}"
        # members revoke what they lost; a follow-up rebalance happens if anything was revoked
        revoked = any(set(current[m]) - set(result[m].partitions) for m in subs)
        current = {m: result[m].partitions for m in subs}
        if not revoked:
            break
    else:
        raise AssertionError("cooperative rebalancing did not converge")
    assert round_no <= 3
    check_valid(counts, subs, {m: type(result[m])(current[m]) for m in subs})
    verify_validity_and_balance({m: Subscription(t) for m, t in subs.items()},
                                {m: list(v) for m, v in current.items()})


@SETTINGS
@given(groups())
def test_independent_of_dict_order(group):
    counts, subs, instances = group
    for strategy in ("range", "roundrobin", "sticky", "cooperative-sticky"):
        a = get_assignor(strategy).assign(counts, subscriptions(subs, instances))
        rev = subscriptions(dict(reversed(list(subs.items()))), instances)
        b = get_assignor(strategy).assign(dict(reversed(list(counts.items()))), rev)
        assert a == b


def test_kafka_quirk_empty_subscription_listed_first():
    """AbstractStickyAssignor.allSubscriptionsEqual starts its reference set from the first member (in HashMap
    order) with a non-empty subscription, so a member subscribed to nothing that comes first does not make the
    group "non-uniform": the constrained algorithm then deals partitions to it. Kafka does this; so do we."""
    counts = {"t0": 1}
    subs = {"m0": Subscription([]), "m1": Subscription(["t0"])}  # HashMap order: m0, m1
    result = get_assignor("sticky").assign(counts, subs)
    assert result["m0"].partitions and not result["m1"].partitions
