"""Consumer settings (ConsumerConfig.java / CommonClientConfigs.java): Kafka's names and defaults, invalid
values named in one line, and what the settings decide when a member is built: the rebalance protocol (the most
advanced one every configured assignor supports, ConsumerCoordinator's constructor) and the assignors."""

from __future__ import annotations

import pytest

from consumer.config import ConfigError, ConsumerConfig
from consumer.coordinator import ConsumerCoordinator, RebalanceProtocol


# ConsumerConfig.java / CommonClientConfigs.java defaults
DEFAULTS = [
    ("session.timeout.ms", "session_timeout_ms", 45_000),
    ("heartbeat.interval.ms", "heartbeat_interval_ms", 3_000),
    ("max.poll.interval.ms", "max_poll_interval_ms", 300_000),
    ("partition.assignment.strategy", "partition_assignment_strategy", ("range", "cooperative-sticky")),
    ("group.instance.id", "group_instance_id", None),
    ("enable.auto.commit", "enable_auto_commit", True),
    ("auto.commit.interval.ms", "auto_commit_interval_ms", 5_000),
    ("auto.offset.reset", "auto_offset_reset", "latest"),
    ("retry.backoff.ms", "retry_backoff_ms", 100),
    ("retry.backoff.max.ms", "retry_backoff_max_ms", 1_000),
    ("request.timeout.ms", "request_timeout_ms", 30_000),
    ("internal.leave.group.on.close", "internal_leave_group_on_close", True),
]


@pytest.mark.parametrize("kafka_name,py_name,default", DEFAULTS)
def test_defaults_are_kafkas(kafka_name, py_name, default):
    cfg = ConsumerConfig.create({"group.id": "g"})
    assert getattr(cfg, py_name) == default
    assert cfg.kafka_settings()[kafka_name] == default


def test_rebalance_timeout_is_max_poll_interval():
    assert ConsumerConfig.create({"group.id": "g", "max.poll.interval.ms": 1234}).rebalance_timeout_ms == 1234


def test_dotted_and_snake_case_names_are_equivalent():
    a = ConsumerConfig.create({"group.id": "g", "session.timeout.ms": 10_000, "heartbeat.interval.ms": 1_000})
    b = ConsumerConfig.create(group_id="g", session_timeout_ms=10_000, heartbeat_interval_ms=1_000)
    assert a == b


def test_strategy_accepts_kafka_comma_separated_string():
    cfg = ConsumerConfig.create({"group.id": "g", "partition.assignment.strategy": "roundrobin, sticky"})
    assert cfg.partition_assignment_strategy == ("roundrobin", "sticky")


@pytest.mark.parametrize("settings,fragment", [
    ({}, "group.id"),
    ({"group.id": ""}, "group.id"),
    ({"group.id": "g", "session.timeout.ms": 0}, "session.timeout.ms"),
    ({"group.id": "g", "heartbeat.interval.ms": 45_000}, "heartbeat.interval.ms (45000) must be lower than "
                                                          "session.timeout.ms"),
    ({"group.id": "g", "max.poll.interval.ms": 0}, "max.poll.interval.ms"),
    ({"group.id": "g", "auto.offset.reset": "smallest"}, "auto.offset.reset"),
    ({"group.id": "g", "auto.commit.interval.ms": -1}, "auto.commit.interval.ms"),
    ({"group.id": "g", "retry.backoff.ms": -5}, "retry.backoff.ms"),
    ({"group.id": "g", "partition.assignment.strategy": []}, "partition.assignment.strategy"),
    ({"group.id": "g", "group.instance.id": ""}, "group.instance.id"),
    ({"group.id": "g", "group.instance.id": "has space"}, "group.instance.id"),
    ({"group.id": "g", "enable.auto.commit": "perhaps"}, "enable.auto.commit"),
    ({"group.id": "g", "fetch.magic": 1}, "fetch.magic: unknown setting"),
])
def test_invalid_values_name_the_setting(settings, fragment):
    with pytest.raises(ConfigError) as info:
        ConsumerConfig.create(settings)
    assert fragment in str(info.value)


@pytest.mark.parametrize("strategy,protocol", [
    (["range", "cooperative-sticky"], RebalanceProtocol.EAGER),   # Kafka 3.x default: EAGER until range is removed
    (["cooperative-sticky"], RebalanceProtocol.COOPERATIVE),
    (["cooperative-sticky", "range"], RebalanceProtocol.EAGER),
    (["roundrobin", "sticky"], RebalanceProtocol.EAGER),
])
def test_rebalance_protocol_is_the_highest_supported_by_all(strategy, protocol):
    c = ConsumerCoordinator({"group.id": "g", "partition.assignment.strategy": strategy})
    assert c.protocol == protocol


def test_unknown_assignor_is_a_config_error():
    with pytest.raises(ConfigError, match="partition.assignment.strategy"):
        ConsumerCoordinator({"group.id": "g", "partition.assignment.strategy": ["no-such-assignor"]})
