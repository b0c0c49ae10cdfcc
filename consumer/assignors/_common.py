"""Plumbing shared by the assignors: input normalisation, member order, rack data and TopicPartition caching.

Mirrors ``org.apache.kafka.clients.consumer.internals.AbstractPartitionAssignor``: the metadata is reduced to
the subscribed topics that exist with at least one partition (``assign(Cluster, GroupSubscription)`` does this
before calling the algorithm), members are ordered by ``MemberInfo.compareTo`` (static members first by
``group.instance.id``, then dynamic ones by ``member.id``, Java string order) and rack-aware assignment is used
only when ``useRackAwareAssignment`` says so.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Optional

from protocol.java import hashmap_order, java_sort_key
from ._types import Assignment, PartitionRacks, Subscription, TopicPartition

# ---------------------------------------------------------------------------------------------------------------
# TopicPartition objects are only created at the API boundary; internally partitions are ints. One cached list
# per topic keeps repeated assignments of a million partitions from allocating a million tuples each time.
_TP_CACHE: dict[str, list[TopicPartition]] = {}
_TP_CACHE_LIMIT = 4_000_000
_tp_cached = 0


def tp_list(topic: str, n: int) -> list[TopicPartition]:
    """``[TopicPartition(topic, 0), ..., TopicPartition(topic, n - 1)]`` (shared; do not mutate)."""
    global _tp_cached
    lst = _TP_CACHE.get(topic)
    if lst is None or len(lst) < n:
        if _tp_cached > _TP_CACHE_LIMIT:
            _TP_CACHE.clear()
            _tp_cached = 0
        start = 0 if lst is None else len(lst)
        new = [TopicPartition(topic, p) for p in range(start, n)]
        lst = new if lst is None else lst + new
        _TP_CACHE[topic] = lst
        _tp_cached += len(new)
    return lst


def subscribed_topic_counts(partitions_per_topic: Mapping[str, int],
                            subscriptions: Mapping[str, Subscription]) -> dict[str, int]:
    """Subscribed topics present in the metadata with > 0 partitions (AbstractPartitionAssignor.assign)."""
    wanted: set[str] = set()
    for sub in subscriptions.values():
        wanted.update(sub.topics)
    out: dict[str, int] = {}
    for topic in wanted:
        n = partitions_per_topic.get(topic)
        if n is not None and n > 0:
            out[topic] = int(n)
    return out


def subscription_order(subscriptions: Mapping[str, Subscription]) -> list[str]:
    """Iteration order of the leader's ``subscriptions`` ``HashMap`` (``ConsumerCoordinator.onLeaderElected`` puts
    the members in JoinGroup-response order: the order of ``subscriptions`` here)."""
    return hashmap_order(list(subscriptions))


def partitions_per_topic_order(counts: Mapping[str, int], subscriptions: Mapping[str, Subscription]) -> list[str]:
    """Iteration order of ``AbstractPartitionAssignor.assign``'s ``partitionsPerTopic`` ``HashMap``: the topics of
    ``counts``, put in the order of ``allSubscribedTopics``, a ``HashSet`` to which every member's topic list was
    added, members in ``subscriptions`` map order."""
    first_added: dict[str, None] = {}
    previous = None
    for m in subscription_order(subscriptions):
        topics = subscriptions[m].topics
        if topics is previous or topics == previous:  # members mostly share one subscription: add it once
            continue
        previous = topics
        first_added.update(dict.fromkeys(topics))  # a topic already present keeps its place, as in the HashSet
    return hashmap_order([t for t in hashmap_order(list(first_added)) if t in counts])


def member_order(subscriptions: Mapping[str, Subscription]) -> list[str]:
    """Members sorted by ``MemberInfo.compareTo`` (static by instance id first, then dynamic by member id)."""
    base = subscription_order(subscriptions)  # Java's input order for equal instance ids (a stable sort)
    strings = list(subscriptions) + [s.group_instance_id for s in subscriptions.values()
                                     if s.group_instance_id is not None]
    key = java_sort_key(strings)

    def member_key(m: str):
        gid = subscriptions[m].group_instance_id
        return (0, key(gid)) if gid is not None else (1, key(m))

    return sorted(base, key=member_key)


def check_subscriptions(subscriptions: Mapping[str, Subscription]) -> None:
    for member, sub in subscriptions.items():
        if not isinstance(member, str):
            raise TypeError(f"member ids must be str, got {member!r}")
        if not isinstance(sub, Subscription):
            raise TypeError(f"subscription of {member!r} must be a Subscription, got {type(sub).__name__}")


def consumer_rack(sub: Subscription) -> Optional[str]:
    return sub.rack_id if sub.rack_id else None


def normalize_partition_racks(partition_racks: Optional[PartitionRacks],
                              counts: Mapping[str, int]) -> dict[str, list[frozenset]]:
    """Per topic (only topics in ``counts``) a list indexed by partition of the replica rack sets."""
    if not partition_racks:
        return {}
    out: dict[str, list[frozenset]] = {t: [frozenset()] * n for t, n in counts.items()}
    for key, value in partition_racks.items():
        if isinstance(key, tuple):  # TopicPartition -> racks
            topic, p = key
            if topic in out and 0 <= p < counts[topic]:
                out[topic][p] = frozenset(r for r in (value or ()) if r is not None)
        elif isinstance(key, str):
            if key not in out:
                continue
            lst = out[key]
            for p, racks in enumerate(value):
                if p >= len(lst):
                    break
                lst[p] = frozenset(r for r in (racks or ()) if r is not None)
        else:
            raise TypeError(f"partition_racks keys must be topic names or TopicPartition, got {key!r}")
    return out


class BaseAssignor:
    """Defaults shared by the built-in assignors (eager protocol, no user data)."""

    name: str = ""
    rebalance_protocols: tuple[str, ...] = ("EAGER",)

    def __init__(self) -> None:
        # Kafka's package-private test hook AbstractPartitionAssignor.preferRackAwareLogic: use the rack-aware
        # algorithm even when every partition has replicas on every rack.
        self.prefer_rack_aware_logic = False

    def subscription_user_data(self, topics, owned_partitions, generation_id) -> bytes | None:
        return None

    def on_assignment(self, assignment: Assignment, generation_id: int) -> None:
        return None

    def use_rack_aware_assignment(self, consumer_racks: set, partition_racks: set,
                                  racks_per_partition: Iterable[frozenset]) -> bool:
        """``AbstractPartitionAssignor.useRackAwareAssignment``."""
        if not consumer_racks or consumer_racks.isdisjoint(partition_racks):
            return False
        if self.prefer_rack_aware_logic:
            return True
        return not all(r == partition_racks for r in racks_per_partition)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"
