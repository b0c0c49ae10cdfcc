"""Ports of the helpers in Kafka's assignor tests (AbstractPartitionAssignorTest, AbstractStickyAssignorTest).

Expectations in the tests come from Kafka's test sources, the assignors' Javadoc and the seeds; these helpers
only rebuild the same inputs (replica placement, rack ids, subscriptions) the Java tests build.
"""

from __future__ import annotations

from consumer.assignors import (CooperativeStickyAssignor, StickyAssignor, Subscription, TopicPartition,
                                encode_sticky_user_data)

ALL_RACKS = ["a", "b", "c", "d", "e", "f"]
RACK_CONFIGS = ["NO_BROKER_RACK", "NO_CONSUMER_RACK", "BROKER_AND_CONSUMER_RACK"]
DEFAULT_GENERATION = -1


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def racks(n: int) -> list:
    return [ALL_RACKS[i % len(ALL_RACKS)] for i in range(n)]


def null_racks(n: int) -> list:
    return [None] * n


def partition_racks_for(topic: str, n: int, rf: int, broker_racks: list, next_index: int) -> list[list[str]]:
    """AbstractPartitionAssignorTest.partitionInfos(topic, n, rf, brokerRacks, nextNodeIndex): replica racks."""
    nb = len(broker_racks)
    out = []
    for i in range(n):
        out.append([broker_racks[(i + j + next_index) % nb] for j in range(rf)
                    if broker_racks[(i + j + next_index) % nb] is not None])
    return out


def partition_racks_num(topic: str, n: int, rf: int, num_broker_racks: int, next_index: int):
    nbrokers = rf if num_broker_racks <= 0 else num_broker_racks * rf
    broker_racks = [None if num_broker_racks <= 0 else ALL_RACKS[i % num_broker_racks] for i in range(nbrokers)]
    return partition_racks_for(topic, n, rf, broker_racks, next_index)


def parse_partitions(s: str) -> list[TopicPartition]:
    out = []
    for part in s.split(", "):
        topic, _, p = part.rpartition("-")
        out.append(TopicPartition(topic, int(p)))
    return out


def sorted_string(partitions) -> str:
    return ", ".join(sorted(str(p) for p in partitions))


def verify_rack_assignment(assignor, num_partitions_per_topic: dict, rf: int, broker_racks: list,
                           consumer_racks: list, consumer_topics: list, consumer_owned, expected: list,
                           num_mismatch: int) -> None:
    """AbstractPartitionAssignorTest.verifyRackAssignment."""
    consumers = [f"consumer{i}" for i in range(len(consumer_racks))]
    prack = {}
    next_index = 0
    for topic, n in num_partitions_per_topic.items():  # mkMap is a LinkedHashMap: insertion order
        prack[topic] = partition_racks_for(topic, n, rf, broker_racks, next_index)
        next_index += n
    subs = {}
    for i, c in enumerate(consumers):
        owned = parse_partitions(consumer_owned[i]) if consumer_owned and i < len(consumer_owned) else []
        subs[c] = Subscription(consumer_topics[i], None, owned, DEFAULT_GENERATION, rack_id=consumer_racks[i])
    result = assignor.assign(dict(num_partitions_per_topic), subs, partition_racks=prack)
    actual = {c: sorted_string(result[c].partitions) for c in consumers}
    assert actual == dict(zip(consumers, expected))
    if num_mismatch >= 0:
        mismatched = []
        for i, c in enumerate(consumers):
            r = consumer_racks[i]
            if r is None:
                continue
            for p in result[c].partitions:
                if r not in prack[p.topic][p.partition]:
                    mismatched.append(p)
        assert len(mismatched) == num_mismatch, mismatched


class StickyHarness:
    """State of AbstractStickyAssignorTest for one assignor and one RackConfig."""

    generation_id = 1

    def __init__(self, kind: str, rack_config: str = "NO_CONSUMER_RACK"):
        self.kind = kind
        self.assignor = StickyAssignor() if kind == "sticky" else CooperativeStickyAssignor()
        self.replication_factor = 3
        self.num_broker_racks = 3 if rack_config != "NO_BROKER_RACK" else 0
        self.has_consumer_rack = rack_config != "NO_CONSUMER_RACK"
        self.assignor.prefer_rack_aware_logic = True
        self.next_partition_index = 0
        self.partition_racks: dict[str, list] = {}
        self.counts: dict[str, int] = {}

    @property
    def cooperative(self) -> bool:
        return self.kind == "cooperative-sticky"

    def add_topic(self, topic: str, n: int) -> None:
        idx = self.next_partition_index
        self.next_partition_index += 1
        self.counts[topic] = n
        self.partition_racks[topic] = partition_racks_num(topic, n, self.replication_factor,
                                                          self.num_broker_racks, idx)

    def rack_id(self, idx: int):
        nr = self.num_broker_racks if self.num_broker_racks > 0 else len(ALL_RACKS)
        return ALL_RACKS[idx % nr] if self.has_consumer_rack else None

    def subscription(self, topics, idx: int) -> Subscription:
        return Subscription(list(topics), None, [], DEFAULT_GENERATION, rack_id=self.rack_id(idx))

    def sub_v2(self, topics, partitions, generation: int, idx: int) -> Subscription:
        if self.kind == "sticky":
            return Subscription(list(topics), encode_sticky_user_data(partitions, generation), list(partitions),
                                generation, rack_id=None)
        return Subscription(list(topics), self.assignor.subscription_user_data(set(topics)), list(partitions),
                            generation, rack_id=self.rack_id(idx))

    def assign(self, subscriptions: dict) -> dict[str, list[TopicPartition]]:
        racks = {t: r for t, r in self.partition_racks.items() if t in self.counts}
        result = self.assignor.assign(dict(self.counts), subscriptions, partition_racks=racks)
        return {m: list(a.partitions) for m, a in result.items()}

    @property
    def transferring(self):
        return self.assignor.partitions_transferring_ownership

    def verify(self, subscriptions: dict, assignment: dict) -> None:
        """verifyValidityAndBalance (cooperative: first run follow-up rebalances until nothing is revoked)."""
        if self.cooperative:
            rebalances = 0
            while self._cooperative_revoking(subscriptions, assignment):
                for c in list(assignment):
                    old = subscriptions[c]
                    idx = ALL_RACKS.index(old.rack_id) if old.rack_id else -1
                    subscriptions[c] = self.sub_v2(old.topics, assignment[c], self.generation_id, idx)
                new = self.assign(subscriptions)
                assignment.clear()
                assignment.update(new)
                rebalances += 1
                assert rebalances <= 4
        verify_validity_and_balance(subscriptions, assignment)

    @staticmethod
    def _cooperative_revoking(subscriptions, assignment) -> bool:
        added, revoked = set(), set()
        for c, parts in assignment.items():
            owned = set(subscriptions[c].owned_partitions)
            added.update(p for p in parts if p not in owned)
            revoked.update(p for p in owned if p not in set(parts))
        assert not (added & revoked), "a partition was revoked and assigned in the same rebalance"
        return bool(revoked)


def verify_validity_and_balance(subscriptions: dict, assignments: dict) -> None:
    """AbstractStickyAssignorTest.verifyValidityAndBalance."""
    assert len(subscriptions) == len(assignments)
    consumers = sorted(assignments)
    for i, c in enumerate(consumers):
        parts = assignments[c]
        topics = set(subscriptions[c].topics)
        for p in parts:
            assert p.topic in topics, f"{p} assigned to {c} which is not subscribed"
        for other in consumers[i + 1:]:
            oparts = assignments[other]
            assert not (set(parts) & set(oparts)), f"{c} and {other} share partitions"
            if abs(len(parts) - len(oparts)) <= 1:
                continue
            mine = {p.topic for p in parts}
            theirs = {p.topic for p in oparts}
            assert not (mine & theirs), f"partitions could move between {c} and {other} for a better balance"


def is_fully_balanced(assignment: dict) -> bool:
    sizes = [len(v) for v in assignment.values()]
    return max(sizes) - min(sizes) <= 1
