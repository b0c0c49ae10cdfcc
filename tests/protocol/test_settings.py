"""protocol/settings.py: the one settings base of the broker's and the consumer's configuration -- Kafka's dotted
names and Python names both accepted, one ``ConfigError`` (Kafka's ``ConfigException``) whose message names each
bad setting by its Kafka name."""

import pytest

from consumer.config import ConfigError as ConsumerConfigError
from consumer.config import ConsumerConfig
from coordinator.config import ConfigError as CoordinatorConfigError
from coordinator.config import CoordinatorConfig
from protocol.settings import ConfigError, KafkaSettings, setting


class Example(KafkaSettings):
    session_timeout_ms: int = setting(45_000, "session.timeout.ms", "doc", gt=0)
    group_id: str = setting(..., "group.id", "doc")


def test_one_config_error_for_both_cores():
    assert CoordinatorConfigError is ConfigError and ConsumerConfigError is ConfigError
    assert issubclass(ConfigError, ValueError)
    with pytest.raises(ConfigError):
        CoordinatorConfig.create({"group.max.size": 0})
    with pytest.raises(ConfigError):
        ConsumerConfig.create({"group.id": "g", "session.timeout.ms": 0})


def test_both_names_and_kafka_settings():
    a = Example.create({"session.timeout.ms": 10, "group.id": "g"})
    b = Example.create(session_timeout_ms=10, group_id="g")
    assert a == b and a.kafka_settings() == {"session.timeout.ms": 10, "group.id": "g"}
    assert Example.kafka_name("session_timeout_ms") == "session.timeout.ms"
    assert Example.kafka_name("no_such") == "no_such"


@pytest.mark.parametrize("settings,message", [
    ({"group.id": "g", "session.timeout.ms": 0}, "session.timeout.ms: Input should be greater than 0 (got 0)"),
    ({}, "group.id: required setting is missing"),
    ({"group.id": "g", "sesion.timeout.ms": 1}, "sesion.timeout.ms: unknown setting"),
])
def test_errors_name_the_setting_by_its_kafka_name(settings, message):
    with pytest.raises(ConfigError) as exc:
        Example.create(settings)
    assert str(exc.value) == message


def test_frozen():
    with pytest.raises(ValueError):  # pydantic's ValidationError: a configuration is a value
        Example.create({"group.id": "g"}).group_id = "h"
