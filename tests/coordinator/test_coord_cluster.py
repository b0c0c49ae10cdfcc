"""Cluster model: replica placement (seed 001 and Kafka's rack-unaware algorithm), leadership moves, the offsets
topic and which broker coordinates a group."""

import pytest

from coordinator import OFFSETS_TOPIC, Cluster, ClusterError, CoordinatorConfig
from coordinator.cluster import NO_LEADER


def rr_cluster(n: int, **settings) -> Cluster:
    return Cluster.with_brokers(n, CoordinatorConfig.create(settings))


def test_seed_001_table_four_brokers_four_partitions():
    # seed 001: 4 brokers, 1 topic with 4 partitions and 2 replicas; brokers are 1-based in the seed, 0-based here.
    c = rr_cluster(4)
    assert c.create_topic("t", 4, 2) == [[0, 1], [1, 2], [2, 3], [3, 0]]
    # Broker1..Broker4 columns: first row leaders P0..P3, second row replicas P3, P0, P1, P2
    assert c.placement_table("t") == {0: [0, 3], 1: [1, 0], 2: [2, 1], 3: [3, 2]}
    assert [p.leader for p in c.partitions("t")] == [0, 1, 2, 3]


def test_seed_001_table_after_growing_to_six_brokers_and_six_partitions():
    c = rr_cluster(4)
    c.create_topic("t", 4, 2)
    assert c.add_brokers(2) == [4, 5]
    assert c.add_partitions("t", 6) == [[0, 1], [1, 2], [2, 3], [3, 0], [4, 5], [5, 0]]
    # The seed's second table: Broker1: P0 P3 P5; Broker2: P1 P0; Broker3: P2 P1; Broker4: P3 P2;
    # Broker5: P4; Broker6: P5 P4 -- only the new partitions were placed, on the grown broker list.
    assert c.placement_table("t") == {0: [0, 3, 5], 1: [1, 0], 2: [2, 1], 3: [3, 2], 4: [4], 5: [5, 4]}


@pytest.mark.parametrize("i,j,n", [(0, 0, 4), (5, 1, 6), (7, 2, 5), (12, 3, 4)])
def test_round_robin_rule(i, j, n):
    c = rr_cluster(n)
    reps = c.place(i + 1, min(j + 1, n))[i]
    assert reps[j] == (i + j) % n


def test_kafka_placement_fixed_start_index_matches_adminutils():
    # AdminUtils.assignReplicasToBrokersRackUnaware with fixedStartIndex 0 (shift 0) over brokers 0..4,
    # 10 partitions, RF 3: the examples in AdminUtils' doc comment.
    c = rr_cluster(5, **{"kgroup.replica.placement": "kafka"})
    got = c.place(10, 3, start_partition=0, existing_first_replica=0)
    assert got == [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 0], [4, 0, 1],
                   [0, 2, 3], [1, 3, 4], [2, 4, 0], [3, 0, 1], [4, 1, 2]]


def test_kafka_placement_is_seeded_and_spreads_leaders():
    a = Cluster.with_brokers(5, CoordinatorConfig.create({"kgroup.replica.placement": "kafka"}), seed=3)
    b = Cluster.with_brokers(5, CoordinatorConfig.create({"kgroup.replica.placement": "kafka"}), seed=3)
    assert a.create_topic("t", 10, 3) == b.create_topic("t", 10, 3)
    leaders = [r[0] for r in a.assignment("t")]
    assert sorted(leaders) == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    assert all(len(set(r)) == 3 for r in a.assignment("t"))


def test_replication_factor_larger_than_cluster_is_rejected():
    with pytest.raises(ClusterError, match="replication factor 4"):
        rr_cluster(3).create_topic("t", 1, 4)


def test_stop_moves_leadership_to_next_live_replica_and_start_rejoins_as_follower():
    c = rr_cluster(3)
    c.create_topic("t", 3, 3)  # [[0,1,2],[1,2,0],[2,0,1]]
    changes = c.stop_broker(0)
    assert [(ch.partition, ch.old_leader, ch.new_leader) for ch in changes] == [(0, 0, 1)]
    assert c.partition("t", 0).isr == [1, 2]
    assert c.partition("t", 1).isr == [1, 2] and c.partition("t", 2).isr == [2, 1]
    changes = c.stop_broker(1)
    assert [(ch.partition, ch.old_leader, ch.new_leader) for ch in changes] == [(0, 1, 2), (1, 1, 2)]
    # broker 0 returns: follower everywhere, back in the ISR
    assert c.start_broker(0) == []
    assert [p.leader for p in c.partitions("t")] == [2, 2, 2]
    assert c.partition("t", 0).isr == [0, 2]
    # preferred leader election moves partition 0 back to broker 0
    moved = c.elect_preferred_leaders()
    assert [(ch.partition, ch.new_leader) for ch in moved] == [(0, 0)]


def test_last_isr_member_keeps_partition_until_it_returns():
    c = rr_cluster(2)
    c.create_topic("t", 1, 2)  # [0, 1]
    c.stop_broker(1)
    c.stop_broker(0)
    ps = c.partition("t", 0)
    assert ps.leader == NO_LEADER and ps.isr == [0]  # Kafka keeps the last in-sync replica in the ISR
    c.start_broker(1)
    assert ps.leader == NO_LEADER  # broker 1 is not in the ISR: no unclean election
    c.start_broker(0)
    assert ps.leader == 0


def test_leader_epoch_bumps_on_every_move():
    c = rr_cluster(3)
    c.create_topic("t", 1, 3)
    e0 = c.partition("t", 0).leader_epoch
    c.stop_broker(0)
    c.start_broker(0)
    c.elect_preferred_leaders()
    assert c.partition("t", 0).leader_epoch == e0 + 2


def test_offsets_topic_needs_replication_factor_brokers():
    c = Cluster.with_brokers(2)  # default offsets.topic.replication.factor = 3
    assert not c.ensure_offsets_topic()
    assert c.coordinator_for("g") == NO_LEADER
    c.add_brokers(1)
    assert c.ensure_offsets_topic()
    assert len(c.partitions(OFFSETS_TOPIC)) == 50
    assert all(len(p.replicas) == 3 for p in c.partitions(OFFSETS_TOPIC))


@pytest.mark.parametrize("group_id,partition", [("groupId", 18), ("otherGroup", 13), ("my-group", 12), ("", 0),
                                                ("polygenelubricants", 0), ("a", 47)])
def test_coordinator_is_leader_of_the_groups_offsets_partition(group_id, partition):
    c = rr_cluster(3)
    c.ensure_offsets_topic()
    assert c.offsets_partition_for(group_id) == partition
    assert c.coordinator_for(group_id) == partition % 3  # round-robin placement: leader = partition mod n


def test_coordinator_moves_when_its_broker_stops():
    c = rr_cluster(3)
    c.ensure_offsets_topic()
    assert c.coordinator_for("groupId") == 0  # partition 18
    c.stop_broker(0)
    assert c.coordinator_for("groupId") == 1  # replicas [0, 1, 2]
    c.start_broker(0)
    assert c.coordinator_for("groupId") == 1


def test_topic_ids_follow_kafka_uuid_rules():
    """Uuid.randomUuid in Kafka 4.4 (KAFKA-20072): an id is never Uuid.RESERVED (ZERO_UUID, METADATA_TOPIC_ID) and
    its string form never holds a hyphen; kgroup's name-derived ids obey the same rules, stay stable per name and
    distinct. ``t19`` is a name whose first derivation (uuid5) would have had one."""
    import base64
    import uuid

    from coordinator.cluster import CLUSTER_UUID, topic_id
    from protocol.uuids import uuid_to_string

    assert "-" in base64.urlsafe_b64encode(uuid.uuid5(CLUSTER_UUID, "t19").bytes).decode()
    names = [f"t{i}" for i in range(3000)] + ["__consumer_offsets", "orders", "é", "\U0001F600"]
    ids = [topic_id(n) for n in names]
    assert all("-" not in uuid_to_string(i) for i in ids)
    assert not {uuid.UUID(int=0), uuid.UUID(int=1)} & set(ids)
    assert len(set(ids)) == len(ids) and [topic_id(n) for n in names] == ids
