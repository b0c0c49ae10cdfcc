"""RoundRobinAssignor: all partitions of all subscribed topics dealt out one by one.

Mirrors ``org.apache.kafka.clients.consumer.RoundRobinAssignor``. Partitions are listed topic by topic in Java
string order (a ``TreeSet`` of the subscribed topics), each topic's partitions ascending; members sit on a
circular iterator in ``MemberInfo`` order. Each partition goes to the next member on the circle that subscribes
to its topic (members that do not are skipped, and the circle keeps its position across topics). With identical
subscriptions this is simply partition ``i`` -> member ``i mod n``.
"""

from __future__ import annotations

from typing import Mapping, Optional

from ._common import BaseAssignor, check_subscriptions, member_order, subscribed_topic_counts, tp_list
from protocol.java import java_sorted
from ._types import Assignment, Subscription, TopicPartition


class RoundRobinAssignor(BaseAssignor):
    name = "roundrobin"
    rebalance_protocols = ("EAGER",)

    def assign(self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription],
               partition_racks: Optional[object] = None) -> dict[str, Assignment]:
        check_subscriptions(subscriptions)
        counts = subscribed_topic_counts(partitions_per_topic, subscriptions)
        members = member_order(subscriptions)
        topics = java_sorted(counts)
        result: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
        if not members or not topics:
            return {m: Assignment(()) for m in subscriptions}

        topic_sets = [set(subscriptions[m].topics) for m in members]
        if all(len(s) >= len(topics) and s.issuperset(topics) for s in topic_sets):
            flat: list[TopicPartition] = []
            for t in topics:
                flat.extend(tp_list(t, counts[t])[:counts[t]])
            n = len(members)
            return {m: Assignment(tuple(flat[i::n])) for i, m in enumerate(members)}

        n = len(members)
        pos = 0
        for t in topics:
            subscribed = [t in s for s in topic_sets]
            lists = [result[m] for m in members]
            for tp in tp_list(t, counts[t])[:counts[t]]:
                while not subscribed[pos]:
                    pos = pos + 1 if pos + 1 < n else 0
                lists[pos].append(tp)
                pos = pos + 1 if pos + 1 < n else 0
        return {m: Assignment(tuple(v)) for m, v in result.items()}
