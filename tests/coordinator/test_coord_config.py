"""Configuration: Kafka's names and defaults; invalid values are rejected naming the setting."""

import pytest

from coordinator import ConfigError, CoordinatorConfig


def test_kafka_defaults():
    c = CoordinatorConfig()
    assert c.kafka_settings() | {} == {
        "group.min.session.timeout.ms": 6000,
        "group.max.session.timeout.ms": 1800000,
        "group.initial.rebalance.delay.ms": 3000,
        "group.max.size": 2147483647,
        "offsets.topic.num.partitions": 50,
        "offsets.topic.replication.factor": 3,
        "offsets.retention.minutes": 10080,
        "offsets.retention.check.interval.ms": 600000,
        "offset.metadata.max.bytes": 4096,
        "log.cleaner.min.cleanable.ratio": 0.5,       # CleanerConfig / TopicConfig defaults
        "log.cleaner.delete.retention.ms": 86400000,
        "kgroup.offsets.compaction.min.records": 10000,
        "kgroup.coordinator.load.time.ms": 0,
        "kgroup.replica.placement": "round-robin",
    }


def test_kafka_and_python_names_are_both_accepted():
    c = CoordinatorConfig.create({"group.max.size": 5}, offsets_topic_num_partitions=3)
    assert c.group_max_size == 5 and c.offsets_topic_num_partitions == 3


@pytest.mark.parametrize("settings,name", [
    ({"group.min.session.timeout.ms": -1}, "group.min.session.timeout.ms"),
    ({"group.max.size": 0}, "group.max.size"),
    ({"offsets.topic.num.partitions": 0}, "offsets.topic.num.partitions"),
    ({"offsets.topic.replication.factor": 0}, "offsets.topic.replication.factor"),
    ({"offsets.retention.minutes": 0}, "offsets.retention.minutes"),
    ({"offset.metadata.max.bytes": "lots"}, "offset.metadata.max.bytes"),
    ({"group.initial.rebalance.delay.ms": -5}, "group.initial.rebalance.delay.ms"),
    ({"group.min.session.timeout.ms": 10000, "group.max.session.timeout.ms": 6000}, "group.max.session.timeout.ms"),
    ({"group.max.sessoin.timeout.ms": 1}, "group.max.sessoin.timeout.ms"),
    ({"kgroup.replica.placement": "random"}, "kgroup.replica.placement"),
])
def test_invalid_values_name_the_setting(settings, name):
    with pytest.raises(ConfigError) as exc:
        CoordinatorConfig.create(settings)
    assert name in str(exc.value)
