"""Every kgroup schema against Apache Kafka's own JSON message specs.

kafka-python 3.x ships copies of Kafka's ``clients/src/main/resources/common/message/*.json``; they are an
independent statement of the wire format. The specs kafka-python does not ship (KIP-848's ConsumerGroupHeartbeat
and ConsumerGroupDescribe) are kept unmodified, with their Apache license headers, in ``kafka_specs/`` (taken from
Apache Kafka 4.4's source tree). For every API kgroup registers and every version it supports, this
test walks both field trees and checks, field by field: presence in the version, type, nullability, tag and
default, and that the request/response flexible versions agree. A mistake in a version range or a field order
in ``protocol/messages`` fails here even where no client happens to send that version.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from protocol.api import APIS
from protocol.schema import Field, Message, Versions

kafka = pytest.importorskip("kafka")
SPEC_DIR = Path(kafka.__file__).parent / "protocol" / "schemas" / "resources"
OWN_SPEC_DIR = Path(__file__).parent / "kafka_specs"


def _load(name: str) -> dict:
    path = SPEC_DIR / f"{name}.json"
    if not path.exists():
        path = OWN_SPEC_DIR / f"{name}.json"
    text = path.read_text()
    # Kafka's spec files carry full-line // comments, which JSON does not allow.
    return json.loads("\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//")))


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _spec_default(raw, type_: str):
    if raw is None:
        return None
    if raw == "null":
        return None
    if type_ in ("int8", "int16", "int32", "int64", "uint16"):
        return int(raw, 0) if isinstance(raw, str) else raw
    if type_ == "bool":
        return raw in (True, "true")
    return raw


def _resolve_struct(spec_field: dict, common: dict) -> list[dict] | None:
    if "fields" in spec_field:
        return spec_field["fields"]
    elem = spec_field["type"][2:] if spec_field["type"].startswith("[]") else spec_field["type"]
    return common.get(elem)


def _compare(ours: list[Field], spec: list[dict], common: dict, version: int, path: str) -> list[str]:
    errors: list[str] = []
    spec_present = []
    for sf in spec:
        tagged = "tag" in sf
        vs = Versions.parse(sf.get("taggedVersions", sf["versions"]) if tagged else sf["versions"])
        if version in vs:
            spec_present.append(sf)
    our_present = [f for f in ours if f.present(version)]
    names_spec = [_snake(sf["name"]) for sf in spec_present]
    names_ours = [f.name for f in our_present]
    if names_spec != names_ours:
        return [f"{path} v{version}: fields {names_ours} != spec {names_spec}"]
    for f, sf in zip(our_present, spec_present):
        where = f"{path}.{f.name} v{version}"
        st = sf["type"]
        struct_fields = _resolve_struct(sf, common)
        is_struct = struct_fields is not None and st.lstrip("[]") not in (
            "int8", "int16", "int32", "int64", "uint16", "float64", "bool", "uuid", "string", "bytes", "records")
        if f.is_array != st.startswith("[]"):
            errors.append(f"{where}: array mismatch ({f.type} vs {st})")
            continue
        if is_struct != f.is_struct:
            errors.append(f"{where}: struct mismatch ({f.type} vs {st})")
            continue
        if not f.is_struct and f.elem_type != st.removeprefix("[]"):
            errors.append(f"{where}: type {f.type} != spec {st}")
        spec_nullable = version in Versions.parse(sf.get("nullableVersions", "none"))
        if (version in f.nullable) != spec_nullable:
            errors.append(f"{where}: nullable {version in f.nullable} != spec {spec_nullable}")
        if ("tag" in sf) != (f.tag is not None) or ("tag" in sf and sf["tag"] != f.tag):
            errors.append(f"{where}: tag {f.tag} != spec {sf.get('tag')}")
        if "default" in sf and not f.is_struct and not f.is_array:
            want = _spec_default(sf["default"], st)
            if f.default_value() != want:
                errors.append(f"{where}: default {f.default_value()!r} != spec {want!r}")
        if f.is_struct:
            errors += _compare(f.fields, struct_fields, common, version, f"{path}.{f.name}")
    return errors


# Versions Kafka 4.x dropped (KIP-896) that kgroup still speaks because a real client needs them: the spec files
# still describe their fields, so they are compared all the same.
REMOVED_IN_KAFKA_4 = {("ListOffsetsRequest", 0): "aiokafka sends ListOffsets v0-3",
                      ("ListOffsetsResponse", 0): "aiokafka sends ListOffsets v0-3"}


def _cases():
    for api in sorted(APIS.values(), key=lambda a: a.key):
        for msg in (api.request, api.response):
            for v in range(msg.valid.low, msg.valid.high + 1):
                yield pytest.param(msg, v, id=f"{msg.name}-v{v}")


@pytest.mark.parametrize("msg,version", list(_cases()))
def test_schema_matches_kafka_json_spec(msg: Message, version: int) -> None:
    spec = _load(msg.name)
    assert spec["apiKey"] == msg.api_key
    spec_valid = Versions.parse(spec["validVersions"])
    if version not in spec_valid:
        assert (msg.name, version) in REMOVED_IN_KAFKA_4, \
            f"Kafka's spec has no {msg.name} v{version} (valid {spec_valid})"
    assert (version in msg.flexible) == (version in Versions.parse(spec["flexibleVersions"]))
    common = {c["name"]: c["fields"] for c in spec.get("commonStructs", [])}
    errors = _compare(msg.fields, spec["fields"], common, version, msg.name)
    assert not errors, "\n".join(errors)


def test_every_api_of_the_issue_is_registered() -> None:
    """The issue's list of APIs and version ranges (the floor of what kgroup must speak)."""
    required = {18: (0, 4), 3: (0, 12), 10: (0, 4), 11: (0, 9), 14: (0, 5), 12: (0, 4), 13: (0, 5), 8: (2, 9),
                9: (1, 9), 2: (0, 7), 1: (4, 12), 0: (3, 9), 22: (0, 4), 15: (0, 5), 16: (0, 5), 42: (0, 2),
                47: (0, 0)}
    for key, (lo, hi) in required.items():
        assert key in APIS, f"API key {key} is not registered"
        api = APIS[key]
        assert api.min_version <= lo and api.max_version >= hi, (api.name, api.min_version, api.max_version)
