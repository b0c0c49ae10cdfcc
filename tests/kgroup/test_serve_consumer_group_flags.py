"""`kgroup serve`'s KIP-848 flags: named after Kafka's group.consumer.* settings, with Kafka's defaults and bounds
(GroupCoordinatorConfig.verifyConsumerGroupConfigs); a bad value exits 2 naming the flag."""

from __future__ import annotations


import pytest

from kgroup.cli import main
from serve_flags import parse_serve as _parse


def test_defaults_are_kafkas():
    c = _parse().config
    assert (c.group_consumer_session_timeout_ms, c.group_consumer_heartbeat_interval_ms,
            c.group_consumer_assignors, c.group_consumer_migration_policy, c.group_consumer_assignment_interval_ms,
            c.group_consumer_max_size) == (45000, 5000, ("uniform", "range"), "bidirectional", 1000, 2**31 - 1)


def test_flags_set_the_settings():
    c = _parse("--group-consumer-min-session-timeout-ms", "3000", "--group-consumer-session-timeout-ms", "6000",
               "--group-consumer-min-heartbeat-interval-ms", "100", "--group-consumer-heartbeat-interval-ms", "500",
               "--group-consumer-assignors", "range,uniform", "--group-consumer-migration-policy", "UPGRADE",
               "--group-consumer-assignment-interval-ms", "0", "--group-consumer-max-size", "7").config
    assert (c.group_consumer_session_timeout_ms, c.group_consumer_heartbeat_interval_ms, c.group_consumer_assignors,
            c.group_consumer_migration_policy, c.group_consumer_assignment_interval_ms, c.group_consumer_max_size) == \
        (6000, 500, ("range", "uniform"), "upgrade", 0, 7)


@pytest.mark.parametrize("argv, flag", [
    (["--group-consumer-session-timeout-ms", "30000"], "--group-consumer-session-timeout-ms"),
    (["--group-consumer-heartbeat-interval-ms", "16000"], "--group-consumer-heartbeat-interval-ms"),
    (["--group-consumer-min-session-timeout-ms", "1000", "--group-consumer-session-timeout-ms", "5000"],
     "--group-consumer-heartbeat-interval-ms (5000) must be less than --group-consumer-session-timeout-ms"),
    (["--group-consumer-assignors", "sticky"], "--group-consumer-assignors"),
    (["--group-consumer-assignment-interval-ms", "20000"], "--group-consumer-assignment-interval-ms"),
    (["--group-consumer-max-size", "0"], "--group-consumer-max-size"),
])
def test_invalid_values_exit_2_naming_the_flag(argv, flag, capsys):
    assert main(["serve", *argv]) == 2
    err = capsys.readouterr().err
    assert flag in err, err
