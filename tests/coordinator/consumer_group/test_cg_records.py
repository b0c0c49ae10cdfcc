"""The KIP-848 records (coordinator/records.py) against Kafka 4.4's own record specs, and their JSON round trip.

``kafka_record_specs/`` holds Kafka 4.4's ``group-coordinator/src/main/resources/common/message/ConsumerGroup*``
key and value specs, unmodified (Apache license headers kept). Each kgroup record must carry exactly the key's
fields (``GroupId`` is the envelope's ``group_id``) plus, for a value record, the value's fields -- snake_cased,
with the unit in the name where Kafka's name lacks it -- and Kafka's defaults; a tombstone carries the key only.
"""

from __future__ import annotations

import dataclasses
import json
import re
import typing
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator import records as R

SPECS = Path(__file__).parent / "kafka_record_specs"
RENAMED = {"AssignmentTimestamp": "assignment_timestamp_ms", "Timestamp": "timestamp_ms"}

#: kgroup record -> (Kafka spec name, value record?)
RECORDS = {
    R.ConsumerGroupMetadata: ("ConsumerGroupMetadata", True),
    R.ConsumerGroupMetadataTombstone: ("ConsumerGroupMetadata", False),
    R.ConsumerGroupPartitionMetadataTombstone: ("ConsumerGroupPartitionMetadata", False),
    R.ConsumerGroupMemberMetadata: ("ConsumerGroupMemberMetadata", True),
    R.ConsumerGroupMemberMetadataTombstone: ("ConsumerGroupMemberMetadata", False),
    R.ConsumerGroupTargetAssignmentMetadata: ("ConsumerGroupTargetAssignmentMetadata", True),
    R.ConsumerGroupTargetAssignmentMetadataTombstone: ("ConsumerGroupTargetAssignmentMetadata", False),
    R.ConsumerGroupTargetAssignmentMember: ("ConsumerGroupTargetAssignmentMember", True),
    R.ConsumerGroupTargetAssignmentMemberTombstone: ("ConsumerGroupTargetAssignmentMember", False),
    R.ConsumerGroupCurrentMemberAssignment: ("ConsumerGroupCurrentMemberAssignment", True),
    R.ConsumerGroupCurrentMemberAssignmentTombstone: ("ConsumerGroupCurrentMemberAssignment", False),
    R.ConsumerGroupRegularExpression: ("ConsumerGroupRegularExpression", True),
    R.ConsumerGroupRegularExpressionTombstone: ("ConsumerGroupRegularExpression", False),
}
#: Kafka's nested struct -> kgroup's class (ClassicProtocol is a (name, metadata) pair)
STRUCTS = {"TopicPartition": R.TopicPartitions, "TopicPartitions": R.TopicPartitionEpochs,
           "ClassicMemberMetadata": R.ClassicMemberMetadata}


def _spec(name: str) -> dict:
    text = (SPECS / f"{name}.json").read_text()
    return json.loads("\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//")))


def _snake(name: str) -> str:
    return RENAMED.get(name) or re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _python_type(field: dict, structs: dict) -> object:
    t = field["type"]
    nullable = "nullableVersions" in field
    if t.startswith("[]"):
        inner = t[2:]
        if inner in ("int32", "int64"):
            py: object = tuple[int, ...]
        elif inner == "string":
            py = tuple[str, ...]
        elif inner == "ClassicProtocol":
            py = tuple[tuple[str, bytes], ...]
        else:
            py = tuple[STRUCTS[inner], ...]
    else:
        py = {"int8": int, "int32": int, "int64": int, "string": str, "uuid": str}.get(t) or STRUCTS[t]
    return py | None if nullable else py


def _expected_fields(fields: list[dict], structs: dict) -> dict[str, tuple[object, object]]:
    out = {}
    for f in fields:
        default = f.get("default", dataclasses.MISSING)
        out[_snake(f["name"])] = (_python_type(f, structs), default)
    return out


def _check_struct(cls, fields: list[dict], structs: dict) -> None:
    hints = typing.get_type_hints(cls)
    ours = {f.name: f for f in dataclasses.fields(cls) if f.name != "group_id"}
    expected = _expected_fields(fields, structs)
    assert list(ours) == list(expected), cls
    for name, (typ, default) in expected.items():
        assert hints[name] == typ, (cls.__name__, name)
        if default is not dataclasses.MISSING:
            assert ours[name].default == default, (cls.__name__, name)
    for f in fields:  # nested structs declared inline
        if "fields" in f and f["type"].lstrip("[]") in STRUCTS:
            _check_struct(STRUCTS[f["type"].lstrip("[]")], f["fields"], structs)


@pytest.mark.parametrize("cls", list(RECORDS), ids=lambda c: c.TYPE)
def test_record_matches_kafkas_spec(cls):
    name, is_value = RECORDS[cls]
    key = _spec(f"{name}Key")
    assert key["fields"][0]["name"] == "GroupId"
    fields = key["fields"][1:]
    structs: dict = {}
    if is_value:
        value = _spec(f"{name}Value")
        assert value["validVersions"] == "0" and value["apiKey"] == key["apiKey"]
        for s in value.get("commonStructs", []):
            _check_struct(STRUCTS[s["name"]], s["fields"], structs)
        fields = fields + value["fields"]
    _check_struct(cls, fields, structs)
    assert cls.DURABLE and cls.TYPE in R.RECORD_TYPES and cls in R.CONSUMER_GROUP_RECORD_TYPES


def test_every_consumer_group_record_type_is_checked():
    assert set(R.CONSUMER_GROUP_RECORD_TYPES) == set(RECORDS)


# --- JSON round trip --------------------------------------------------------------------------------------------

ints = st.integers(-(2 ** 31), 2 ** 31 - 1)
longs = st.integers(-(2 ** 63), 2 ** 63 - 1)
text = st.text(max_size=8)
ids = st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", min_size=22, max_size=22)
parts = st.lists(st.integers(0, 1000), max_size=5).map(tuple)


@st.composite
def epochs_tp(draw):
    ps = draw(parts)
    eps = draw(st.none() | st.lists(ints, min_size=len(ps), max_size=len(ps)).map(tuple))
    return R.TopicPartitionEpochs(draw(ids), ps, eps)


classic = st.none() | st.builds(R.ClassicMemberMetadata, ints,
                                st.lists(st.tuples(text, st.binary(max_size=6)), max_size=3).map(tuple))
record = st.one_of(
    st.builds(R.ConsumerGroupMetadata, text, epoch=ints, metadata_hash=longs),
    st.builds(R.ConsumerGroupMetadataTombstone, text),
    st.builds(R.ConsumerGroupPartitionMetadataTombstone, text),
    st.builds(R.ConsumerGroupMemberMetadata, text, member_id=text, instance_id=st.none() | text,
              rack_id=st.none() | text, client_id=text, client_host=text,
              subscribed_topic_names=st.lists(text, max_size=4).map(tuple),
              subscribed_topic_regex=st.none() | text, rebalance_timeout_ms=ints, server_assignor=st.none() | text,
              classic_member_metadata=classic),
    st.builds(R.ConsumerGroupMemberMetadataTombstone, text, member_id=text),
    st.builds(R.ConsumerGroupTargetAssignmentMetadata, text, assignment_epoch=ints, assignment_timestamp_ms=longs),
    st.builds(R.ConsumerGroupTargetAssignmentMetadataTombstone, text),
    st.builds(R.ConsumerGroupTargetAssignmentMember, text, member_id=text,
              topic_partitions=st.lists(st.builds(R.TopicPartitions, ids, parts), max_size=3).map(tuple)),
    st.builds(R.ConsumerGroupTargetAssignmentMemberTombstone, text, member_id=text),
    st.builds(R.ConsumerGroupCurrentMemberAssignment, text, member_id=text, member_epoch=ints,
              previous_member_epoch=ints, state=st.integers(-128, 127),
              assigned_partitions=st.lists(epochs_tp(), max_size=3).map(tuple),
              partitions_pending_revocation=st.lists(epochs_tp(), max_size=3).map(tuple)),
    st.builds(R.ConsumerGroupCurrentMemberAssignmentTombstone, text, member_id=text),
    st.builds(R.ConsumerGroupRegularExpression, text, regular_expression=text,
              topics=st.lists(text, max_size=4).map(tuple), version=longs, timestamp_ms=longs),
    st.builds(R.ConsumerGroupRegularExpressionTombstone, text, regular_expression=text),
)


@settings(max_examples=300, deadline=None)
@given(record, st.integers(0, 49), st.integers(0, 10 ** 6), st.integers(0, 2 ** 40))
def test_json_round_trip(rec, partition, offset, ts):
    entry = R.LogEntry(partition, offset, ts, rec)
    d = json.loads(json.dumps(entry.to_dict()))
    assert d["durable"] is True and d["type"] == rec.TYPE and d["data"]["group_id"] == rec.group_id
    assert R.LogEntry.from_dict(d) == entry


def test_json_form_of_a_current_assignment():
    rec = R.ConsumerGroupCurrentMemberAssignment(
        "g", member_id="m", member_epoch=5, previous_member_epoch=4, state=1,
        assigned_partitions=(R.TopicPartitionEpochs("AAAAAAAAAAAAAAAAAAAAAQ", (0, 2), (4, 5)),),
        partitions_pending_revocation=(R.TopicPartitionEpochs("AAAAAAAAAAAAAAAAAAAAAQ", (1,), None),))
    assert R.LogEntry(3, 7, 9, rec).to_dict()["data"] == {
        "group_id": "g", "member_id": "m", "member_epoch": 5, "previous_member_epoch": 4, "state": 1,
        "assigned_partitions": [{"topic_id": "AAAAAAAAAAAAAAAAAAAAAQ", "partitions": [0, 2],
                                 "assignment_epochs": [4, 5]}],
        "partitions_pending_revocation": [{"topic_id": "AAAAAAAAAAAAAAAAAAAAAQ", "partitions": [1],
                                           "assignment_epochs": None}]}


def test_docs_events_md_lists_every_consumer_group_record_and_field():
    doc = (Path(__file__).resolve().parents[3] / "docs" / "events.md").read_text()
    section = doc.split("## Durable records of KIP-848 consumer groups")[1].split("\n## ")[0]
    rows = {line.split("|")[1].strip().strip("`"): line for line in section.splitlines() if line.startswith("| `")}
    assert set(rows) == {cls.TYPE for cls in R.CONSUMER_GROUP_RECORD_TYPES}
    for cls in R.CONSUMER_GROUP_RECORD_TYPES:
        for f in dataclasses.fields(cls):
            if f.name != "group_id":
                assert f"`{f.name}`" in rows[cls.TYPE], (cls.TYPE, f.name)
