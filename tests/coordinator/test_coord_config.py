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
        # GroupCoordinatorConfig's consumer-group defaults (Kafka 4.4)
        "group.consumer.session.timeout.ms": 45000,
        "group.consumer.min.session.timeout.ms": 45000,
        "group.consumer.max.session.timeout.ms": 60000,
        "group.consumer.heartbeat.interval.ms": 5000,
        "group.consumer.min.heartbeat.interval.ms": 5000,
        "group.consumer.max.heartbeat.interval.ms": 15000,
        "group.consumer.max.size": 2147483647,
        "group.consumer.assignors": ("uniform", "range"),
        "group.consumer.migration.policy": "bidirectional",
        "group.consumer.assignment.interval.ms": 1000,
        "group.consumer.min.assignment.interval.ms": 0,
        "group.consumer.max.assignment.interval.ms": 15000,
        "group.consumer.regex.refresh.interval.ms": 600000,
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
    # GroupCoordinatorConfig.verifyConsumerGroupConfigs and the definitions' validators
    ({"group.consumer.session.timeout.ms": 30000}, "group.consumer.session.timeout.ms"),
    ({"group.consumer.session.timeout.ms": 61000}, "group.consumer.session.timeout.ms"),
    ({"group.consumer.heartbeat.interval.ms": 4000}, "group.consumer.heartbeat.interval.ms"),
    ({"group.consumer.min.session.timeout.ms": 1000, "group.consumer.session.timeout.ms": 10000,
      "group.consumer.heartbeat.interval.ms": 10000, "group.consumer.max.heartbeat.interval.ms": 10000},
     "group.consumer.heartbeat.interval.ms (10000) must be less than group.consumer.session.timeout.ms"),
    ({"group.consumer.max.session.timeout.ms": 40000}, "group.consumer.max.session.timeout.ms"),
    ({"group.consumer.assignment.interval.ms": 16000}, "group.consumer.assignment.interval.ms"),
    ({"group.consumer.assignment.interval.ms": -1}, "group.consumer.assignment.interval.ms"),
    ({"group.consumer.max.size": 0}, "group.consumer.max.size"),
    ({"group.consumer.assignors": "sticky"}, "group.consumer.assignors"),
    ({"group.consumer.assignors": []}, "group.consumer.assignors"),
    ({"group.consumer.assignors": "range,range"}, "group.consumer.assignors"),
    ({"group.consumer.migration.policy": "sideways"}, "group.consumer.migration.policy"),
    ({"group.consumer.regex.refresh.interval.ms": 9999}, "group.consumer.regex.refresh.interval.ms"),
])
def test_invalid_values_name_the_setting(settings, name):
    with pytest.raises(ConfigError) as exc:
        CoordinatorConfig.create(settings)
    assert name in str(exc.value)


def test_consumer_group_settings_parse_as_kafka_does():
    """``group.consumer.assignors`` is a LIST (names or the built-in class names, first = default);
    ``group.consumer.migration.policy`` is case-insensitive (``ConsumerGroupMigrationPolicy.parse``)."""
    c = CoordinatorConfig.create({
        "group.consumer.assignors": "range, org.apache.kafka.coordinator.group.assignor.UniformAssignor",
        "group.consumer.migration.policy": "UPGRADE"})
    assert c.group_consumer_assignors == ("range", "uniform") and c.default_consumer_group_assignor == "range"
    assert c.group_consumer_migration_policy == "upgrade" and c.upgrade_enabled and not c.downgrade_enabled
    d = CoordinatorConfig.create({"group.consumer.migration.policy": "disabled"})
    assert not d.upgrade_enabled and not d.downgrade_enabled
