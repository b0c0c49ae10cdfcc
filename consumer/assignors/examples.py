"""Example custom assignor: partitions in proportion to per-consumer weights carried in user data.

The idea is the one in seed 004: ``Subscription.userData`` can carry anything the leader needs, e.g. a weight
per consumer ("消费者的权重"). Each member puts its weight (INT32, big-endian) in its subscription user data;
the leader gives every partition, topic by topic in Java string order, to the subscribed member with the lowest
``(assigned + 1) / weight`` (ties: ``MemberInfo`` order), so a weight-2 member ends up with about twice the
partitions of a weight-1 member. Missing or unreadable weights count as 1.

Load it like any plugin::

    get_assignor("consumer.assignors.examples:WeightedAssignor")
    kgroup assign --strategy consumer.assignors.examples:WeightedAssignor ...
"""

from __future__ import annotations

import struct
from typing import Mapping, Optional

from ._common import BaseAssignor, check_subscriptions, member_order, subscribed_topic_counts, tp_list
from protocol.java import java_sorted
from ._types import Assignment, Subscription

_WEIGHT = struct.Struct(">i")


def encode_weight(weight: int) -> bytes:
    return _WEIGHT.pack(weight)


def decode_weight(user_data: Optional[bytes]) -> int:
    if not user_data or len(user_data) < 4:
        return 1
    (w,) = _WEIGHT.unpack_from(user_data)
    return w if w > 0 else 1


class WeightedAssignor(BaseAssignor):
    name = "weighted"
    rebalance_protocols = ("EAGER",)

    def __init__(self, weight: int = 1) -> None:
        super().__init__()
        self.weight = weight

    def subscription_user_data(self, topics, owned_partitions=None, generation_id=None) -> bytes:
        return encode_weight(self.weight)

    def assign(self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription],
               partition_racks=None) -> dict[str, Assignment]:
        check_subscriptions(subscriptions)
        counts = subscribed_topic_counts(partitions_per_topic, subscriptions)
        order = member_order(subscriptions)
        rank = {m: i for i, m in enumerate(order)}
        weight = {m: decode_weight(subscriptions[m].user_data) for m in order}
        assigned: dict[str, list] = {m: [] for m in subscriptions}
        for topic in java_sorted(counts):
            members = [m for m in order if topic in subscriptions[m].topics]
            for tp in tp_list(topic, counts[topic])[:counts[topic]]:
                best = min(members, key=lambda m: ((len(assigned[m]) + 1) / weight[m], rank[m]))
                assigned[best].append(tp)
        return {m: Assignment(tuple(v)) for m, v in assigned.items()}
