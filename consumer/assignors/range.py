"""RangeAssignor: per-topic contiguous ranges, with KIP-881 rack awareness.

Mirrors ``org.apache.kafka.clients.consumer.RangeAssignor`` (Kafka 3.5+). For every subscribed topic the
partitions are laid out in numeric order and the topic's subscribers in ``MemberInfo`` order (static members
by ``group.instance.id`` first, then dynamic members by ``member.id``); each gets ``n // c`` partitions and the
first ``n % c`` one more.

Rack-aware mode (``useRackAwareAssignment``: some consumer has a rack, it intersects the replica racks, and not
every partition lives on every rack) runs first and keeps each topic's per-consumer quotas:

* topics with the same subscribers and the same partition count are *co-partitioned*: partition ``i`` of all of
  them goes to the first remaining consumer whose rack hosts partition ``i`` of every one of them and that still
  has quota in every one of them;
* any other topic that needs rack-awareness gets ranges restricted to rack-matching partitions;
* a plain range pass then places whatever is left, and each member's list is sorted by (topic, partition).

Without rack awareness a member's list follows the topics in Java ``HashMap`` order (``protocol.java``), each
topic's range in partition order, exactly as Kafka builds it.
"""

from __future__ import annotations

from typing import Mapping, Optional

from protocol.java import java_sort_key

from ._common import (BaseAssignor, check_subscriptions, consumer_rack, member_order, normalize_partition_racks,
                      partitions_per_topic_order, subscribed_topic_counts, tp_list)
from ._types import Assignment, PartitionRacks, Subscription, TopicPartition


class _TopicState:
    """``RangeAssignor.TopicAssignmentState`` for one topic (partitions as ints)."""

    __slots__ = ("topic", "n", "consumers", "racks_of", "partition_racks", "needs_rack_aware", "unassigned",
                 "num_assigned", "per_consumer", "remaining_extra")

    def __init__(self, topic: str, n: int, consumers: list[str], consumer_racks: dict[str, str],
                 racks: Optional[list[frozenset]], assignor: BaseAssignor):
        self.topic = topic
        self.n = n
        self.consumers = consumers  # MemberInfo order
        self.racks_of = {c: consumer_racks.get(c) for c in consumers}
        self.unassigned = dict.fromkeys(range(n))  # insertion-ordered set
        self.num_assigned = dict.fromkeys(consumers, 0)
        self.per_consumer = n // len(consumers) if consumers else 0
        self.remaining_extra = n % len(consumers) if consumers else 0
        all_consumer_racks = {r for r in self.racks_of.values() if r is not None}
        if all_consumer_racks:
            self.partition_racks = racks if racks is not None else [frozenset()] * n
            all_partition_racks = set().union(*self.partition_racks) if n else set()
        else:
            self.partition_racks = []
            all_partition_racks = set()
        self.needs_rack_aware = assignor.use_rack_aware_assignment(
            all_consumer_racks, all_partition_racks, self.partition_racks)

    def racks_match(self, consumer: str, p: int) -> bool:
        rack = self.racks_of[consumer]
        return rack is None or (bool(self.partition_racks) and rack in self.partition_racks[p])

    def max_assignable(self, consumer: str) -> int:
        m = self.per_consumer + (1 if self.remaining_extra > 0 else 0) - self.num_assigned[consumer]
        return m if m > 0 else 0

    def on_assigned(self, consumer: str, partitions: list[int]) -> None:
        n = self.num_assigned[consumer] + len(partitions)
        self.num_assigned[consumer] = n
        if n > self.per_consumer:
            self.remaining_extra -= 1
        for p in partitions:
            del self.unassigned[p]


class RangeAssignor(BaseAssignor):
    name = "range"
    rebalance_protocols = ("EAGER",)

    def assign(self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription],
               partition_racks: Optional[PartitionRacks] = None) -> dict[str, Assignment]:
        check_subscriptions(subscriptions)
        counts = subscribed_topic_counts(partitions_per_topic, subscriptions)
        racks = normalize_partition_racks(partition_racks, counts)
        consumer_racks = {m: r for m, s in subscriptions.items() if (r := consumer_rack(s)) is not None}

        consumers_per_topic: dict[str, list[str]] = {t: [] for t in counts}
        for m in member_order(subscriptions):
            for t in subscriptions[m].topics:
                lst = consumers_per_topic.get(t)
                if lst is not None:
                    lst.append(m)

        # Topic order of Kafka's partitionsPerTopic HashMap (matters for list order only).
        topic_order = partitions_per_topic_order(counts, subscriptions)
        result: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}

        if not consumer_racks:  # fast path: plain ranges, slices of cached TopicPartition lists
            for t in topic_order:
                consumers = consumers_per_topic[t]
                if not consumers:
                    continue
                n = counts[t]
                tps = tp_list(t, n)
                per, extra = divmod(n, len(consumers))
                start = 0
                for i, c in enumerate(consumers):
                    length = per + (1 if i < extra else 0)
                    if length:
                        result[c].extend(tps[start:start + length])
                    start += length
            return {m: Assignment(tuple(v)) for m, v in result.items()}

        states = [_TopicState(t, counts[t], consumers_per_topic[t], consumer_racks, racks.get(t), self)
                  for t in topic_order]
        assigned: dict[str, list[tuple[str, int]]] = {m: [] for m in subscriptions}

        def do_assign(consumer: str, parts: list[int], st: _TopicState) -> None:
            assigned[consumer].extend((st.topic, p) for p in parts)
            st.on_assigned(consumer, parts)

        def assign_ranges(st: _TopicState, may_assign) -> None:
            for c in st.consumers:
                if not st.unassigned:
                    break
                limit = st.max_assignable(c)
                parts: list[int] = []
                if limit > 0:
                    for p in st.unassigned:
                        if may_assign(c, p):
                            parts.append(p)
                            if len(parts) == limit:
                                break
                if parts:
                    do_assign(c, parts, st)

        use_rack_aware = any(st.needs_rack_aware for st in states)
        if use_rack_aware:
            # group by identical (ordered) consumers, then by partition count (Kafka groups by
            # partitionRacks.size(), which is 0 when none of the topic's consumers has a rack)
            groups: dict[tuple, dict[int, list[_TopicState]]] = {}
            for st in states:
                key = tuple((c, st.racks_of[c]) for c in st.consumers)
                groups.setdefault(key, {}).setdefault(len(st.partition_racks), []).append(st)
            for key, by_count in groups.items():
                consumers = [c for c, _ in key]
                for num_partitions, co_states in by_count.items():
                    if len(co_states) > 1:
                        self._assign_co_partitioned(consumers, num_partitions, co_states, do_assign)
                    elif co_states[0].needs_rack_aware:
                        st = co_states[0]
                        assign_ranges(st, st.racks_match)

        for st in states:
            assign_ranges(st, lambda c, p: True)

        out: dict[str, Assignment] = {}
        if use_rack_aware:
            key = java_sort_key(counts)
            for m, lst in assigned.items():
                lst.sort(key=lambda tp: (key(tp[0]), tp[1]))
        for m, lst in assigned.items():
            out[m] = Assignment(tuple(tp_list(t, counts[t])[p] for t, p in lst))
        return out

    @staticmethod
    def _assign_co_partitioned(consumers: list[str], num_partitions: int, states: list[_TopicState],
                               do_assign) -> None:
        remaining = list(consumers)
        for p in range(num_partitions):
            match = None
            for c in remaining:
                if all(st.racks_match(c, p) and st.max_assignable(c) > 0 for st in states):
                    match = c
                    break
            if match is None:
                continue
            for st in states:
                do_assign(match, [p], st)
            if not any(st.max_assignable(match) > 0 for st in states):
                remaining.remove(match)
                if not remaining:
                    break
