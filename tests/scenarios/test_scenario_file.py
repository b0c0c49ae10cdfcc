"""Scenario files: validation errors name the file, the field path and the accepted values; nothing runs."""

from __future__ import annotations

import pytest

from scenarios.model import ScenarioError, load_scenario, parse_duration, parse_scenario, resolve_members
from scenarios.runner import library_paths

from scenario_helpers import small_scenario


def write(tmp_path, text: str):
    p = tmp_path / "bad.toml"
    p.write_text(text, encoding="utf-8")
    return p


BASE = """
[cluster]
topics = [{ name = "t", partitions = 3 }]
[[groups]]
id = "g"
topics = ["t"]
consumers = 2
"""


def error_of(tmp_path, text: str) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        load_scenario(write(tmp_path, text))
    return info.value


def test_durations():
    assert parse_duration("10s") == 10_000
    assert parse_duration("250ms") == 250
    assert parse_duration("1.5m") == 90_000
    assert parse_duration("1h") == 3_600_000
    assert parse_duration(42) == 42
    with pytest.raises(ValueError):
        parse_duration("ten seconds")


def test_minimal_file_loads(tmp_path):
    sc = load_scenario(write(tmp_path, BASE))
    names = [m.name for m in resolve_members(sc)]
    assert names == ["g-0", "g-1"]


def test_bad_action_value_names_file_path_and_accepted_values(tmp_path):
    err = error_of(tmp_path, BASE + """
[[timeline]]
at = "5s"
action = "network_partition"
consumer = "g-0"
duration_ms = "5s"
mode = "explode"
""")
    msg = str(err)
    assert "bad.toml" in msg
    assert "timeline[0].mode" in msg
    assert "invalid value 'explode' (accepted values: drop, delay)" in msg


def test_unknown_action_lists_actions(tmp_path):
    msg = str(error_of(tmp_path, BASE + '[[timeline]]\nat = 1\naction = "meteor"\n'))
    assert "timeline[0]: unknown action 'meteor' (accepted values: start, stop, crash" in msg
    assert "rolling_restart" in msg


def test_unknown_field(tmp_path):
    msg = str(error_of(tmp_path, BASE.replace("consumers = 2", "consumers = 2\ncolour = 'red'")))
    assert "groups[0].colour: unknown field" in msg


def test_unknown_consumer_and_topic(tmp_path):
    msg = str(error_of(tmp_path, BASE + """
[[timeline]]
at = 1
action = "crash"
consumer = "nobody"
[[timeline]]
at = 1
action = "produce"
topic = "nope"
count = 1
"""))
    assert "timeline[0].consumer: unknown consumer 'nobody' (accepted values: g-0, g-1)" in msg
    assert "timeline[1].topic: unknown topic 'nope' (accepted values: t)" in msg


def test_bad_consumer_setting_names_it(tmp_path):
    msg = str(error_of(tmp_path, BASE + 'config = { "heartbeat.interval.ms" = 50000 }\n'))
    assert "groups[0].config" in msg and "heartbeat.interval.ms" in msg


def test_bad_strategy_and_broker_setting(tmp_path):
    text = BASE.replace("consumers = 2", 'consumers = 2\nstrategy = "fastest"')
    text = text.replace("[cluster]", '[cluster]\nbroker = { "group.max.size" = -4 }')
    msg = str(error_of(tmp_path, text))
    assert "groups[0].strategy: unknown assignor 'fastest'" in msg and "cooperative-sticky" in msg
    assert "cluster.broker" in msg and "group.max.size" in msg


def test_bad_duration_and_toml(tmp_path):
    msg = str(error_of(tmp_path, BASE.replace("[cluster]", '[scenario]\nduration_ms = "soon"\n[cluster]')))
    assert "scenario.duration_ms" in msg and "ms, s, m, h" in msg
    msg = str(error_of(tmp_path, "this is = = not toml"))
    assert "not valid TOML" in msg


def test_cross_checks_from_dict():
    bad = small_scenario()
    bad["timeline"] = [{"at": 0, "action": "add_partitions", "topic": "t", "partitions": 2}]
    with pytest.raises(ScenarioError, match=r"timeline\[0\]\.partitions: must be more than"):
        parse_scenario(bad, "dict")




def test_every_library_file_validates():
    paths = library_paths()
    assert len(paths) >= 9
    for p in paths:
        sc = load_scenario(p)
        assert sc.scenario.name == p.stem
        assert sc.scenario.description


def test_member_start_accepts_duration_or_never(tmp_path):
    msg = str(error_of(tmp_path, BASE + 'members = [{ name = "x", start = "later" }]\n'))
    assert "groups[0].members[0].start: invalid value 'later' (accepted values: a duration such as '10s', " \
           "or 'never')" in msg
    sc = load_scenario(write(tmp_path, BASE + 'members = [{ name = "x", start = "never" }, { name = "y", start = "2s" }]\n'))
    starts = {m.name: m.start for m in resolve_members(sc)}
    assert starts == {"g-0": 0, "g-1": 0, "x": None, "y": 2000}
