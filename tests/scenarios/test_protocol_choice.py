"""``protocol = "classic" | "consumer"`` in scenario files (group or member), ``remote_assignor``, and the
one-line errors for what Kafka's ``ConsumerConfig`` refuses (``checkUnsupportedConfigsPostProcess``)."""

from __future__ import annotations

import pytest

from scenarios import model as M
from scenarios.model import ScenarioError, parse_scenario, resolve_members

from scenario_helpers import small_scenario


@pytest.fixture
def with_consumer_core():
    """The consumer-protocol membership core is there (consumer/consumer_membership.py)."""
    assert M.consumer_protocol_supported()


def errors(sc: dict) -> list[str]:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(sc, "s.toml")
    return str(info.value).splitlines()


def consumer_group(**g) -> dict:
    sc = small_scenario()
    grp = sc["groups"][0]
    grp.pop("strategy")
    grp["config"] = {"max.poll.interval.ms": 5000}
    grp.update(protocol="consumer", **g)
    return sc


def test_classic_members_are_unchanged_by_protocol_support():
    """A classic member's settings are exactly what they were (no group.protocol): its runs stay byte-identical."""
    sc = parse_scenario(small_scenario())
    for m in resolve_members(sc):
        assert m.protocol == "classic" and "group.protocol" not in m.config
        assert m.configs["consumer"]["group.protocol"] == "consumer"


def test_unknown_protocol_is_one_line():
    sc = small_scenario()
    sc["groups"][0]["protocol"] = "kip848"
    assert errors(sc) == ["s.toml: groups[0].protocol: invalid value 'kip848' (accepted values: classic, consumer)"]


def test_consumer_protocol_without_the_core_is_one_line_per_member(monkeypatch):
    monkeypatch.setattr(M, "consumer_protocol_supported", lambda: False)
    assert errors(consumer_group()) == [
        f's.toml: groups[0].protocol: consumer g-{i}: protocol "consumer" needs the consumer-protocol membership '
        f'core, which this build does not have' for i in (0, 1)]


def test_consumer_protocol_settings(with_consumer_core):
    sc = parse_scenario(consumer_group(remote_assignor="range"))
    for m in resolve_members(sc):
        assert m.protocol == "consumer"
        assert m.config["group.protocol"] == "consumer" and m.config["group.remote.assignor"] == "range"
        assert "group.remote.assignor" not in m.configs["classic"]


def test_kafka_refuses_classic_settings_under_the_consumer_protocol(with_consumer_core):
    """Kafka: "partition.assignment.strategy, session.timeout.ms cannot be set when group.protocol=CONSUMER"."""
    sc = consumer_group(strategy="range")
    sc["groups"][0]["config"]["session.timeout.ms"] = 3000
    assert errors(sc)[0] == ("s.toml: groups[0].config: consumer g-0: partition.assignment.strategy, "
                             "session.timeout.ms cannot be set when group.protocol=CONSUMER (the broker decides; use "
                             "remote_assignor)")


def test_remote_assignor_must_be_a_broker_assignor(with_consumer_core):
    assert errors(consumer_group(remote_assignor="sticky"))[0] == (
        "s.toml: groups[0].remote_assignor: consumer g-0: unknown server assignor 'sticky' (accepted values: "
        "uniform, range)")


def test_remote_assignor_under_the_classic_protocol_is_refused():
    sc = small_scenario()
    sc["groups"][0]["remote_assignor"] = "uniform"
    assert errors(sc)[0] == ("s.toml: groups[0].remote_assignor: consumer g-0: group.remote.assignor cannot be set "
                             "when group.protocol=CLASSIC (use strategy)")


def test_mixed_group_member_override(with_consumer_core):
    """A classic group with one consumer-protocol member (a mixed group, as during a migration): the group's
    classic settings stay with its classic members."""
    sc = small_scenario()
    sc["groups"][0]["members"] = [{"name": "g-1", "protocol": "consumer"}]
    ms = {m.name: m for m in resolve_members(parse_scenario(sc))}
    assert ms["g-0"].protocol == "classic" and ms["g-0"].config["partition.assignment.strategy"] == "range"
    assert ms["g-1"].protocol == "consumer"
    assert not {"partition.assignment.strategy", "session.timeout.ms", "heartbeat.interval.ms"} & set(ms["g-1"].config)


def test_rolling_migration_validates_the_target_protocol(monkeypatch):
    """A rolling restart into the consumer protocol is checked like a member declared with it."""
    monkeypatch.setattr(M, "consumer_protocol_supported", lambda: False)
    sc = small_scenario()
    sc["timeline"].append({"at": "5s", "action": "rolling_restart", "group": "g", "protocol": "consumer"})
    assert errors(sc)[0].startswith('s.toml: groups[0].protocol: consumer g-0: protocol "consumer" needs')
